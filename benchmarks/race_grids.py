"""Race several families' grid parts one after the other within a time budget, and keep each table.

    python benchmarks/race_grids.py --out DIR --budget 560 \
        --part rmsnorm:main:bf16 --part add_rmsnorm:main:bf16:triton_tuned,torch_compile,...

Each ``--part FAMILY:PART:DTYPE[:PROVIDERS]`` is one ``kprof profile FAMILY --grid PART --dtype DTYPE
--profiler none`` (every provider available, or the comma-separated list), in its own process and its own
store ``DIR/FAMILY.db``; a PART written ``shapes=AxB+CxD`` races those shapes instead (a re-race of some
points of a grid after a change), followed by ``kprof grid latest --markdown DIR/grid-FAMILY-PART-DTYPE.md``. A part
starts only while ``--min-left`` seconds of the budget remain, and is stopped at the budget's end, so what
finished comes back even when the GPU machine's call limit cuts the rest: a part cut there still gets its table,
``grid-TAG-partial.md``, from the cases it stored (points that lost their cases say ``not measured``). The profile log of every part is
kept gzipped beside its table, the stores are gzipped at the end.

The budget holds the tables too: each profile stops early enough to leave ``--tail`` seconds for its own table and
for each repeated part's, and each ``kprof grid`` is given what is left. A SIGTERM (an outer ``timeout`` firing) stops the part
running, and the script still gzips the stores and prints what it has, so a call cut short returns what finished.

A ``--part`` given more than once is raced that many times, each in a process of its own, and ``kprof grid`` then
tabulates every run of it together, ``DIR/judged-TAG.md``: a point raced in several runs counts their disagreement, and
where its spread is the run-to-run floor of small calls, more runs narrow it (``kprof grid``'s "race the part again").
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def _run(cmd: list[str], log: Path, timeout: float) -> tuple[int, float]:
    t0 = time.monotonic()
    with gzip.open(log, "wt") as fh:
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
            fh.write(proc.stdout)
            rc = proc.returncode
        except subprocess.TimeoutExpired as exc:
            fh.write((exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or ""))
            fh.write(f"\n[race_grids: stopped after {timeout:.0f} s, the budget's end]\n")
            rc = 124
    return rc, time.monotonic() - t0


def _run_ids(store: str) -> set[str]:
    """The ids of the runs in ``store`` (none where it does not exist yet)."""
    from kprof.store import RunStore

    if not Path(store).exists():
        return set()
    st = RunStore(store, create=False)
    try:
        return set(st.runs()["id"].astype(str))
    finally:
        st.close()


def _table_timeout(left: float) -> float:
    """A ``kprof grid``'s limit: what is left of the budget, but never under 10 s (a table takes a few seconds) nor
    over 120 s."""
    return min(max(left, 10.0), 120.0)


def _judge_repeated(
    raced: dict[str, tuple[str, str, list[str]]], out: Path, left: Callable[[], float]
) -> list[tuple[str, str, float, str]]:
    """``kprof grid`` over every run of each ``--part`` raced more than once (``raced``: spec -> (tag, store, run
    ids)), each given what ``left()`` says is left of the budget: rows for the summary, one a repeated part,
    ``judged-TAG.md`` its table."""
    rows = []
    for tag, store, ids in raced.values():
        if len(ids) < 2:
            continue
        md = out / f"judged-{tag}.md"
        grc, _ = _run(
            ["kprof", "grid", *ids, "--store", store, "--markdown", str(md)],
            out / f"judged-{tag}.log.gz",
            _table_timeout(left()),
        )
        rows.append(
            (f"{tag} x{len(ids)}", "judged" if grc == 0 else f"grid exit {grc}", 0.0, md.name if md.exists() else "")
        )
    return rows


class _Terminated(Exception):
    """A SIGTERM arrived: stop the part running, keep what finished."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated


def _gzip_stores(out: Path) -> None:
    for db in out.glob("*.db"):
        with db.open("rb") as src, gzip.open(f"{db}.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        db.unlink()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--part", action="append", required=True, help="FAMILY:PART:DTYPE[:PROVIDER,...]")
    ap.add_argument("--budget", type=float, default=560.0, help="seconds for all parts together")
    ap.add_argument("--min-left", type=float, default=150.0, help="start a part only with this much left")
    ap.add_argument("--tail", type=float, default=15.0, help="seconds kept back for each table still to write")
    ap.add_argument(
        "--no-graph", action="store_true", help="no CUDA-graph timing in any part (verdicts and targets need none)"
    )
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _on_sigterm)
    start = time.monotonic()
    rows: list[tuple[str, str, float, str]] = []
    try:
        _race(args, start, rows)
    except _Terminated:
        rows.append(("(SIGTERM)", "stopped", time.monotonic() - start, "the parts after this were not raced"))
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the stores' gzip short
        _gzip_stores(args.out)
    print(f"\n{'part':<36} {'status':<16} {'seconds':>8}  table")
    for tag, status, took, what in rows:
        print(f"{tag:<36} {status:<16} {took:8.0f}  {what}")
    return 0


def _race(args: argparse.Namespace, start: float, rows: list[tuple[str, str, float, str]]) -> None:
    """Race every ``--part`` in order within the budget, appending each one's summary row to ``rows``."""
    # a profile leaves time for its own table and for the judged table of every repeated part
    reserve = args.tail * (1 + len({spec for spec in args.part if args.part.count(spec) > 1}))

    def left() -> float:
        return args.budget - (time.monotonic() - start)

    seen: dict[str, int] = {}
    raced: dict[str, tuple[str, str, list[str]]] = {}  # spec -> (its first tag, store, run ids): a repeated part judged
    for spec in args.part:
        family, part, dtype, *rest = spec.split(":")
        shapes = part.removeprefix("shapes=").split("+") if part.startswith("shapes=") else []
        tag = f"{family}-{'points' if shapes else part}-{dtype}"
        seen[tag] = seen.get(tag, 0) + 1
        tag += f"-{seen[tag]}" if seen[tag] > 1 else ""  # two parts of one family, dtype and kind keep a table each
        if left() < args.min_left:
            rows.append((tag, "not started", 0.0, f"{left():.0f} s of the budget left"))
            continue
        store = str(args.out / f"{family}.db")
        where = [a for sh in shapes for a in ("--shape", sh)] if shapes else ["--grid", part]
        cmd = ["kprof", "profile", family, *where, "--dtype", dtype, "--profiler", "none"]
        cmd += ["--allow-failures", "--store", store] + (["--provider", rest[0]] if rest else [])
        cmd += ["--no-graph"] if args.no_graph else []
        before = _run_ids(store)
        rc, took = _run(cmd, args.out / f"profile-{tag}.log.gz", max(left() - reserve, 1.0))
        if rc not in (0, 124):  # 124: cut at the budget's end; what it stored is still a table, marked partial
            rows.append((tag, f"profile exit {rc}", took, ""))
            continue
        # the run this profile made (none where it was cut before its run began)
        raced.setdefault(spec, (tag, store, []))[2].extend(sorted(_run_ids(store) - before))
        md = args.out / f"grid-{tag}{'-partial' if rc else ''}.md"
        grc, _ = _run(
            ["kprof", "grid", "latest", "--store", store, "--markdown", str(md)],
            args.out / f"grid-{tag}.log.gz",
            _table_timeout(left()),
        )
        status = ("cut" if rc else "ok") if grc == 0 else f"grid exit {grc}"
        rows.append((tag, status, took, md.name if md.exists() else ""))
    rows += _judge_repeated(raced, args.out, left)


if __name__ == "__main__":
    sys.exit(main())

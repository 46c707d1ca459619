"""Does ``kprof diff`` keep quiet on unchanged code measured in separate runs, and still catch a 5% regression?

Two steps, each well under 9 minutes on an H100 (run them as two commands; ``all`` runs both):

``--step aa``
    ``kprof profile rmsnorm -d bf16 --profiler none`` four times, each in its own process, into one store;
    all six pairwise ``kprof diff`` of the four with the default floor (out of sample; skipped when the store
    already holds a calibration); ``kprof noise`` calibrates the run-to-run floor from the four; the six diffs
    again with it (in sample). Success: no SLOWER or FASTER verdict in any diff.
``--step planted``
    A 5% regression is planted in ``triton_tuned`` (each call also runs ``torch.cuda._sleep`` for 5% of the
    call's own GPU time, measured once per shape; tiny shapes pay a second launch, so they regress by more)
    and committed in a clone of the repository. Measured (1) interleaved, ``--rev BASE --rev PLANTED`` in
    one invocation, and (2) as two separate runs (base, then planted). Success: every triton_tuned case
    SLOWER interleaved; separate runs: SLOWER where the measured change exceeds the floor, nothing else
    called.

The machine may have no ``.git``: ``--bundle FILE`` (made with ``git bundle create FILE --all`` in the
repository) is cloned into a temporary folder and everything runs there, with ``kprof`` imported from that
clone. Without ``--bundle`` the repository this script sits in must be a git checkout.

Writes under ``--out DIR``: ``store/kprof.db`` (all runs) or, with ``--store`` elsewhere, a gzipped copy
``kprof.db.gz``; ``diff_*.md`` / ``diff_*.json``, ``noise.json``, ``summary.json``, ``summary.md``,
``log.txt``; prints the summary table at the end. The planted step's separate-run diff uses the calibration
of the aa step when both use one ``--store``, else the default floor (each diff row says which).

    git bundle create kprof.bundle --all
    python benchmarks/diff_noise.py --out DIR --bundle kprof.bundle --store kprof-runs/diff-noise/kprof.db --step aa
    python benchmarks/diff_noise.py --out DIR --bundle kprof.bundle --store kprof-runs/diff-noise/kprof.db --step planted
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
PROFILE = ["profile", "rmsnorm", "-d", "bf16", "--profiler", "none"]

# Runs kprof from the checkout given as argv[1] (its toolkit/, kernels/, profilers/ folders mapped to
# kprof, kprof.kernels, kprof.profilers), whatever kprof the environment has installed.
PRELUDE = r"""
import importlib.util, sys
root = sys.argv.pop(1)
for name, folder in (("kprof", "toolkit"), ("kprof.kernels", "kernels"), ("kprof.profilers", "profilers")):
    spec = importlib.util.spec_from_file_location(name, f"{root}/{folder}/__init__.py",
                                                  submodule_search_locations=[f"{root}/{folder}"])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
sys.argv[0] = "kprof"
from kprof.cli import main
main()
"""

PLANT = """

# --- planted regression (benchmarks/diff_noise.py): each call also spins for 5% of its own GPU time ---
def _planted(fn):
    import torch

    cycles_for = {}

    def measure(x, weight, args, kwargs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(3):
            fn(x, weight, *args, **kwargs)
        start.record()
        for _ in range(50):
            fn(x, weight, *args, **kwargs)
        end.record()
        end.synchronize()
        call_ms = start.elapsed_time(end) / 50
        start.record()
        torch.cuda._sleep(1_000_000)
        end.record()
        end.synchronize()
        cycles_per_ms = 1_000_000 / start.elapsed_time(end)
        return max(1, int(0.05 * call_ms * cycles_per_ms))

    def slower(x, weight, *args, **kwargs):
        out = fn(x, weight, *args, **kwargs)
        if x.is_cuda:
            key = (tuple(x.shape), x.dtype)
            if key not in cycles_for and not torch.cuda.is_current_stream_capturing():
                cycles_for[key] = measure(x, weight, args, kwargs)
            if key in cycles_for:
                torch.cuda._sleep(cycles_for[key])
        return out

    return slower


import dataclasses as _dc

FAMILY.providers["triton_tuned"] = _dc.replace(FAMILY.providers["triton_tuned"],
                                               fn=_planted(FAMILY.providers["triton_tuned"].fn))
"""


class Ctx:
    def __init__(self, args: argparse.Namespace) -> None:
        self.out = Path(args.out).resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.store = str(Path(args.store).resolve() if args.store else self.out / "store" / "kprof.db")
        self.extra = [x for s in (args.shape or []) for x in ("--shape", s)] + ["--rep-ms", str(args.rep_ms)]
        self.log = open(self.out / "log.txt", "a")
        self.root = self._checkout(args.bundle)

    def _checkout(self, bundle: str | None) -> Path:
        if bundle is None:
            git = subprocess.run(
                ["git", "-C", str(HERE), "rev-parse", "--show-toplevel"], capture_output=True, text=True
            )
            if git.returncode != 0:
                sys.exit("diff_noise: no git checkout here; pass --bundle FILE (git bundle create FILE --all)")
            return HERE
        dest = Path(tempfile.mkdtemp(prefix="kprof-diff-noise-")) / "repo"
        self.sh(["git", "clone", "--quiet", str(Path(bundle).resolve()), str(dest)])
        return dest

    def sh(self, cmd: list[str], cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
        t0 = time.time()
        cp = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        self.log.write(
            f"$ {' '.join(cmd)}  # {time.time() - t0:.0f}s rc={cp.returncode}\n{cp.stdout[-3000:]}\n"
            f"{cp.stderr[-3000:]}\n"
        )
        self.log.flush()
        if check and cp.returncode != 0:
            sys.exit(f"diff_noise: {' '.join(cmd[:6])} ... failed (rc {cp.returncode}):\n{cp.stderr[-2000:]}")
        return cp

    def kprof(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        env_cmd = [sys.executable, "-c", PRELUDE, str(self.root), *args, "--store", self.store]
        print(f"kprof {' '.join(args)}", flush=True)
        return self.sh(env_cmd, cwd=self.root, check=check)

    def git(self, *args: str) -> str:
        return self.sh(["git", "-C", str(self.root), *args]).stdout.strip()

    def run_ids(self) -> list[str]:
        import sqlite3

        con = sqlite3.connect(self.store)
        ids = [r[0] for r in con.execute("SELECT id FROM runs ORDER BY created_at, rowid")]
        con.close()
        return ids

    def profile(self, *rev: str) -> list[str]:
        before = set(self.run_ids()) if Path(self.store).exists() else set()
        t0 = time.time()
        # exit 1 means a case failed its correctness check (named in log.txt); the timings still count
        cp = self.kprof(*PROFILE, *self.extra, *[x for r in rev for x in ("--rev", r)], check=False)
        new = [i for i in self.run_ids() if i not in before]
        print(f"  -> runs {', '.join(new)} in {time.time() - t0:.0f}s (exit {cp.returncode})", flush=True)
        if len(new) != max(1, len(rev)) or cp.returncode not in (0, 1):
            sys.exit(f"diff_noise: kprof profile failed (exit {cp.returncode}):\n{cp.stderr[-2000:]}")
        return new

    def diff(self, a: str, b: str, label: str) -> dict:
        md, js = self.out / f"diff_{label}.md", self.out / f"diff_{label}.json"
        self.kprof("diff", a, b, "--markdown", str(md), "--json", str(js))
        return json.loads(js.read_text())


def _pairs(ctx: Ctx, ids: list[str], label: str) -> list[dict]:
    pairs = []
    for a, b in itertools.combinations(ids, 2):
        d = ctx.diff(a, b, f"{label}_{a[-4:]}_{b[-4:]}")
        ratios = [c["ratio"] for c in d["cases"] if c["ratio"] is not None]
        pairs.append(
            {
                "a": a,
                "b": b,
                "floor": label,
                "counts": d["counts"],
                "comparison": d["comparison"],
                "called": [(c["case"], c["ratio"]) for c in d["cases"] if c["verdict"] in ("SLOWER", "FASTER")],
                "largest_change": max((abs(r - 1) for r in ratios), default=0.0),
                "floors": sorted({c["variance"] for c in d["cases"]}),
            }
        )
    return pairs


def step_aa(ctx: Ctx, runs: int) -> dict:
    ids = [ctx.profile()[0] for _ in range(runs)]
    # first with the default floor (out of sample: derived from other H100 runs), then calibrated on these runs
    # (in sample: the floor is learnt from the very runs it is applied to)
    pairs = _pairs(ctx, ids, "aa_default") if not _has_calibration(ctx) else []
    ctx.kprof("noise", *ids, "--json", str(ctx.out / "noise.json"))
    pairs += _pairs(ctx, ids, "aa_calibrated")
    return {"runs": ids, "pairs": pairs, "noise": json.loads((ctx.out / "noise.json").read_text())}


def _has_calibration(ctx: Ctx) -> bool:
    import sqlite3

    con = sqlite3.connect(ctx.store)
    try:
        return bool(con.execute("SELECT COUNT(*) FROM noise").fetchone()[0])
    except sqlite3.OperationalError:  # no noise table yet
        return False
    finally:
        con.close()


def step_planted(ctx: Ctx) -> dict:
    base = ctx.git("rev-parse", "HEAD")
    tuned = ctx.root / "kernels" / "rmsnorm" / "tuned.py"
    original = tuned.read_text()
    ctx.git("checkout", "--quiet", "-b", "diff-noise-planted")
    tuned.write_text(original + PLANT)
    ctx.git(
        "-c",
        "user.name=diff_noise",
        "-c",
        "user.email=diff_noise@localhost",
        "commit",
        "--quiet",
        "-am",
        "planted: triton_tuned 5% slower (benchmarks/diff_noise.py)",
    )
    planted = ctx.git("rev-parse", "HEAD")
    ctx.git("checkout", "--quiet", base)
    il_a, il_b = ctx.profile(base, planted)
    inter = ctx.diff(il_a, il_b, "planted_interleaved")
    sep_a = ctx.profile()[0]
    ctx.git("checkout", "--quiet", planted)
    sep_b = ctx.profile()[0]
    ctx.git("checkout", "--quiet", base)
    sep = ctx.diff(sep_a, sep_b, "planted_separate")

    def rows(d: dict) -> list[dict]:
        return [
            {
                k: c.get(k)
                for k in ("case", "provider", "ratio", "ci_lo", "ci_hi", "verdict", "why", "variance", "floor_pct")
            }
            for c in d["cases"]
        ]

    return {
        "base": base,
        "planted": planted,
        "interleaved": {
            "runs": [il_a, il_b],
            "counts": inter["counts"],
            "comparison": inter["comparison"],
            "cases": rows(inter),
        },
        "separate": {
            "runs": [sep_a, sep_b],
            "counts": sep["counts"],
            "comparison": sep["comparison"],
            "cases": rows(sep),
        },
    }


def summary_md(s: dict) -> str:
    out = ["| comparison | SLOWER | FASTER | SAME | UNCERTAIN | note |", "| :--- | ---: | ---: | ---: | ---: | :--- |"]
    for p in s.get("aa", {}).get("pairs", []):
        c = p["counts"]
        out.append(
            f"| A/A separate {p['a'][-4:]} vs {p['b'][-4:]}, {p.get('floor', 'aa')[3:]} floor | {c['SLOWER']} | "
            f"{c['FASTER']} | {c['SAME']} | "
            f"{c['UNCERTAIN']} | largest change {100 * p['largest_change']:.1f}% |"
        )
    pl = s.get("planted")
    if pl:
        for kind in ("interleaved", "separate"):
            c = pl[kind]["counts"]
            tuned = [r for r in pl[kind]["cases"] if r["provider"] == "triton_tuned"]
            hit = sum(r["verdict"] == "SLOWER" for r in tuned)
            others = sum(
                r["verdict"] in ("SLOWER", "FASTER") for r in pl[kind]["cases"] if r["provider"] != "triton_tuned"
            )
            out.append(
                f"| planted 5% {kind} | {c['SLOWER']} | {c['FASTER']} | {c['SAME']} | {c['UNCERTAIN']} | "
                f"triton_tuned SLOWER {hit}/{len(tuned)}, other cases called {others} |"
            )
    lines = ["# kprof diff: separate-run noise and a planted 5% regression", "", *out, ""]
    noise = s.get("aa", {}).get("noise")
    if noise:
        lines += ["Calibrated run-to-run floor (`kprof noise`, per size class; floor = pairwise 95% half-width):", ""]
        for c in noise["classes"]:
            lines.append(
                f"- {c['size_class']}: {int(c['cases'])} cases, sigma_run {100 * c['sigma']:.2f}% "
                f"(95% upper {100 * c['sigma_upper']:.2f}%), floor {100 * ((2.718281828 ** (1.96 * 1.41421356 * c['sigma_upper'])) - 1):.1f}%"
            )
    if pl:
        lines += [
            "",
            "Planted cases (triton_tuned):",
            "",
            "| shape | interleaved B/A | verdict | separate B/A | verdict | floor |",
            "| :--- | ---: | :--- | ---: | :--- | ---: |",
        ]
        sep = {r["case"]: r for r in pl["separate"]["cases"]}
        for r in pl["interleaved"]["cases"]:
            if r["provider"] != "triton_tuned":
                continue
            q = sep.get(r["case"], {})
            lines.append(
                f"| {r['case']} | {r['ratio'] or float('nan'):.3f} | {r['verdict']} | "
                f"{q.get('ratio') or float('nan'):.3f} | "
                f"{q.get('verdict')} | {q.get('floor_pct') or 0:.1f}% |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--bundle", help="git bundle of the repository (git bundle create FILE --all)")
    ap.add_argument(
        "--store",
        help="run store (default OUT/store/kprof.db); a path that outlives OUT lets the "
        "planted step reuse the aa step's calibration (a gzipped copy is written to OUT)",
    )
    ap.add_argument("--step", choices=("aa", "planted", "all"), default="all")
    ap.add_argument("--runs", type=int, default=4, help="separate runs of unchanged code in the aa step")
    ap.add_argument("--shape", action="append", help="shape subset (repeat), e.g. --shape 1x4096; default: the sweep")
    ap.add_argument("--rep-ms", type=int, default=100)
    args = ap.parse_args()
    ctx = Ctx(args)
    path = ctx.out / "summary.json"
    s = json.loads(path.read_text()) if path.exists() else {}
    s["shapes"] = args.shape or "rmsnorm default sweep (bf16)"
    if args.step in ("aa", "all"):
        s["aa"] = step_aa(ctx, args.runs)
        path.write_text(json.dumps(s, indent=1))
    if args.step in ("planted", "all"):
        s["planted"] = step_planted(ctx)
        path.write_text(json.dumps(s, indent=1))
    md = summary_md(s)
    (ctx.out / "summary.md").write_text(md)
    if Path(ctx.store).resolve().parent != (ctx.out / "store").resolve():  # bring the store back with the results
        import gzip

        (ctx.out / "kprof.db.gz").write_bytes(gzip.compress(Path(ctx.store).read_bytes()))
    print(md)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()

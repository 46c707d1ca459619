"""Capture small real outputs of nsys, ncu and Proton for kprof's parser tests (tests/data/).

Runs a few rmsnorm cases through ``python -m kprof.replay`` under each tool, the same way
``kprof profile --profiler X`` does, and writes every artefact plus a log into OUT (a folder). Run on a
GPU machine:

    python benchmarks/capture_profiler_fixtures.py OUT

nsys needs its importer's libraries on LD_LIBRARY_PATH on machines that lack them (see tests/data/README.md).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kprof.replay import ReplayCase, ReplaySpec, child_argv, write_spec
from kprof.tools import find_tool, run_tool, tool_version

CASES = [
    ("triton_tuned", (64, 4096), "bf16"),
    ("torch_F", (64, 4096), "bf16"),
    ("triton_looped", (16, 8192), "fp32"),
    ("torch_eager", (8, 2048), "fp16"),
]


def spec(out: Path, marker: str, **kw) -> Path:
    cases = tuple(
        ReplayCase(id=f"rmsnorm/{p}/{'x'.join(map(str, s))}/{d}", provider=p, shape=s, dtype=d, seed=1234)
        for p, s, d in CASES
    )
    sp = ReplaySpec(
        family="rmsnorm",
        cases=cases,
        repeats=3,
        marker=marker,
        progress_file=str(out / f"progress_{marker}_{kw.get('proton_data', '')}.jsonl"),
        **kw,
    )
    return write_spec(sp, out / f"spec_{marker}_{kw.get('proton_data', '')}.json")


def show(run, log) -> None:
    print(run.describe() if not run.ok else f"ok ({run.seconds:.1f} s): {run.command}", file=log, flush=True)


TRANSFERS = """
import torch
x = torch.randn(1024, 1024)
torch.cuda.synchronize()
for i in range(3):
    torch.cuda.nvtx.range_push(f"kprof::demo/transfers/1024x1024/fp32")
    y = x.to("cuda", non_blocking=False)          # host -> device copy
    z = (y * 2).sum()
    v = z.item()                                   # device -> host copy + sync
    y.zero_()
    h = y[:8].cpu()                                # device -> host copy
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
"""


def capture_transfers(out: Path, log) -> None:
    """A small program with host<->device copies and syncs in kprof ranges, under nsys (SQLite)."""
    from kprof.profilers import nsys as nsys_mod

    nsys = find_tool("nsys")
    prog = out / "transfers.py"
    prog.write_text(TRANSFERS)
    base = out / "nsys_transfers"
    show(
        run_tool(
            nsys_mod.profile_command(nsys.path, [sys.executable, str(prog)], base),
            timeout=300,
            cwd=out,
            log_prefix="nsys_transfers",
        ),
        log,
    )
    show(
        run_tool(
            nsys_mod.export_command(nsys.path, base.with_suffix(".nsys-rep"), base.with_suffix(".sqlite")),
            timeout=300,
            cwd=out,
            log_prefix="nsys_transfers_export",
        ),
        log,
    )


def main(out: Path) -> None:
    from kprof.profilers import ncu as ncu_mod
    from kprof.profilers import nsys as nsys_mod

    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "capture_log.txt", "w")
    # nsys: report, SQLite export, the three stats CSVs
    try:
        nsys = find_tool("nsys")
        print("nsys:", nsys, tool_version(nsys), file=log)
        base = out / "nsys_rmsnorm"
        rep = base.with_suffix(".nsys-rep")
        show(
            run_tool(
                nsys_mod.profile_command(nsys.path, child_argv(spec(out, "nvtx")), base),
                timeout=300,
                cwd=out,
                log_prefix="nsys_profile",
            ),
            log,
        )
        show(
            run_tool(
                nsys_mod.export_command(nsys.path, rep, base.with_suffix(".sqlite")),
                timeout=300,
                cwd=out,
                log_prefix="nsys_export",
            ),
            log,
        )
        show(run_tool(nsys_mod.stats_command(nsys.path, rep, base), timeout=300, cwd=out, log_prefix="nsys_stats"), log)
    except Exception as exc:
        print("nsys failed:", repr(exc), file=log)
    try:
        capture_transfers(out, log)
    except Exception as exc:
        print("nsys transfers failed:", repr(exc), file=log)
    # ncu: the CSV exactly as kprof captures it (banner lines, base units), and once in ncu's default units
    try:
        ncu = find_tool("ncu")
        print("ncu:", ncu, tool_version(ncu), file=log)
        argv = ncu_mod.profile_command(ncu.path, child_argv(spec(out, "nvtx")), out / "ncu_rmsnorm_raw.csv")
        show(run_tool(argv, timeout=300, cwd=out, log_prefix="ncu_profile"), log)
        i = argv.index("--print-units")
        argv = argv[:i] + argv[i + 2 :]
        argv[argv.index("--log-file") + 1] = str(out / "ncu_rmsnorm_raw_default_units.csv")
        show(run_tool(argv, timeout=300, cwd=out, log_prefix="ncu_profile_default_units"), log)
    except Exception as exc:
        print("ncu failed:", repr(exc), file=log)
    # proton, both outputs
    for data in ("tree", "trace"):
        try:
            p = out / f"proton_rmsnorm_{data}"
            show(
                run_tool(
                    child_argv(spec(out, "proton", proton_path=str(p), proton_data=data)),
                    timeout=300,
                    cwd=out,
                    log_prefix=f"proton_{data}",
                ),
                log,
            )
        except Exception as exc:
            print("proton failed:", repr(exc), file=log)
    log.close()
    subprocess.run(["ls", "-la", str(out)], check=False)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "--transfers-only":
        Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
        with open(Path(sys.argv[1]) / "capture_log.txt", "w") as fh:
            capture_transfers(Path(sys.argv[1]), fh)
    else:
        main(Path(sys.argv[1]))

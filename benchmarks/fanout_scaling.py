"""Fan-out scaling on a 2-GPU host: one sweep run on one GPU, then the same sweep with ``--workers 2``.

    python benchmarks/fanout_scaling.py --out DIR

Checks two things and prints them in a short table:

* **wall time**: the ``--workers 2`` run against the one-GPU run, end to end (process start, ceilings,
  every case); the target is a ratio <= 0.55;
* **agreement**: each case's median GPU time in the two runs, compared with ``kprof diff``'s rule (SLOWER /
  FASTER only beyond +-3% with a significant Mann-Whitney test; an A/A comparison of the rmsnorm sweep on an
  H100 gave 0 SLOWER / 0 FASTER). Cases the fan-out measured on the baseline's GPU (no interference beyond
  the noise) and on the other GPU (the same model, a different board) are counted separately.

Both runs share a Triton cache warmed by a one-shape run first, so neither pays for compiling the 18
configurations and the ratio measures the fan-out. The sweep: rmsnorm ``triton_one_row`` BLOCK_N in {4096,
8192, 16384} x num_warps in {1..32} (+ its own choice) over 16 shapes = 304 cases per dtype (``--dtypes``,
bf16 by default; ``--dtypes bf16,fp16`` gives 608 cases).
Writes DIR/kprof.db (both runs), DIR/cases.csv, DIR/summary.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

# 16 (shape, dtype) groups: the fan-out keeps each on one GPU, and an even count splits 8 / 8
ROWS = (1, 512, 4096, 16384)
COLS = (1024, 2048, 3072, 4096)
PARAMS = ("BLOCK_N=4096,8192,16384", "num_warps=1,2,4,8,16,32")
TARGET_RATIO = 0.55
NOISE_FLOOR = 0.03  # kprof diff's default threshold: the documented floor of an A/A comparison


def sweep_cmd(store: Path, shapes: list[str], dtypes: str, seed: int, extra: list[str]) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "kprof.cli",
        "sweep",
        "rmsnorm",
        "--version",
        "triton_one_row",
        "--shapes",
        ",".join(shapes),
        "--dtypes",
        dtypes,
        "--seed",
        str(seed),
        "--store",
        str(store),
    ]
    for p in PARAMS:
        cmd += ["--param", p]
    return cmd + extra


def timed(cmd: list[str], env: dict, log: Path, timeout: float) -> float:
    t0 = time.perf_counter()
    with log.open("w") as fh:
        rc = subprocess.run(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout).returncode
    wall = time.perf_counter() - t0
    if rc != 0:
        print(f"{' '.join(cmd)} exited {rc}; see {log}", flush=True)
        sys.exit(1)
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=20261123)
    ap.add_argument("--dtypes", default="bf16")
    args = ap.parse_args()
    import torch

    if torch.cuda.device_count() < 2:
        print(f"needs 2 GPUs, this host has {torch.cuda.device_count()}")
        sys.exit(1)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TRITON_CACHE_DIR": os.environ.get("KPROF_BENCH_TRITON_CACHE", str(out / "triton-cache"))}
    shapes = [f"{r}x{c}" for c in COLS for r in ROWS]
    store = out / "kprof.db"

    print("warming the Triton cache (one shape, every configuration)...", flush=True)
    warm = timed(sweep_cmd(out / "warm.db", shapes[:1], args.dtypes, args.seed, []), env, out / "warm.log", 300)
    print(f"  {warm:.0f} s", flush=True)
    n_dt = len(args.dtypes.split(","))
    print(
        f"one GPU: {len(shapes)} shapes x {n_dt} dtype(s) x 19 providers = {19 * len(shapes) * n_dt} cases...",
        flush=True,
    )
    # the one-GPU run on nvidia-smi's GPU 0, so its cases can be matched with the fan-out's per-case GPU index
    one_env = {**env, "CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    one = timed(sweep_cmd(store, shapes, args.dtypes, args.seed, []), one_env, out / "one_gpu.log", 480)
    print(f"  {one:.0f} s", flush=True)
    print("--workers 2...", flush=True)
    two = timed(sweep_cmd(store, shapes, args.dtypes, args.seed, ["--workers", "2"]), env, out / "two_gpus.log", 480)
    print(f"  {two:.0f} s", flush=True)

    from kprof.diff import diff_runs
    from kprof.store import RunStore

    st = RunStore(store)
    runs = st.runs()
    id_two, id_one = runs["id"].iloc[0], runs["id"].iloc[1]
    res = diff_runs(st, id_one, id_two)
    dev = st.case_devices(id_two)[["case_id", "worker", "gpu_index", "gpu_uuid", "gpu_name"]].rename(
        columns={"case_id": "case"}
    )
    cases = res.cases.merge(dev, on="case", how="left")
    cases["same_gpu_as_baseline"] = cases["gpu_index"].astype(str) == "0"
    cases.to_csv(out / "cases.csv", index=False)
    n_one, n_two = len(st.metrics(id_one)), len(st.metrics(id_two))
    ratio = two / one
    lines = [
        "# Fan-out scaling: one GPU vs --workers 2",
        "",
        f"- device: {st.run(id_two)['device_name']} x2; runs `{id_one}` (one GPU) and `{id_two}` (--workers 2)",
        f"- cases: {n_one} / {n_two}; status: {st.run(id_one)['status']} / {st.run(id_two)['status']}",
        f"- Triton cache warmed first ({warm:.0f} s, not counted)",
        "",
        "| measure | value | target |",
        "|---|---:|---|",
        f"| wall, one GPU | {one:.1f} s | |",
        f"| wall, --workers 2 | {two:.1f} s | |",
        f"| ratio | {ratio:.3f} | <= {TARGET_RATIO} {'met' if ratio <= TARGET_RATIO else 'NOT met'} |",
    ]
    for label, part in (
        ("all cases", cases),
        ("on the baseline's GPU", cases[cases["same_gpu_as_baseline"]]),
        ("on the other GPU", cases[~cases["same_gpu_as_baseline"]]),
    ):
        if part.empty:
            continue
        dev_abs = (part["ratio"] - 1).abs()
        vc = part["verdict"].value_counts()
        lines.append(
            f"| {label}: {len(part)} cases, median abs(B/A - 1) | {100 * dev_abs.median():.2f}% | "
            f"within ±{100 * NOISE_FLOOR:g}% |"
        )
        lines.append(
            f"| {label}: within ±{100 * NOISE_FLOOR:g}% / p95 abs(B/A - 1) | "
            f"{100 * (dev_abs <= NOISE_FLOOR).mean():.1f}% / {100 * dev_abs.quantile(0.95):.2f}% | |"
        )
        lines.append(
            f"| {label}: SLOWER / FASTER / SAME / UNCERTAIN | {vc.get('SLOWER', 0)} / {vc.get('FASTER', 0)} / "
            f"{vc.get('SAME', 0)} / {vc.get('UNCERTAIN', 0)} | 0 SLOWER, 0 FASTER |"
        )
    lines += ["", "Warnings kprof diff prints for this pair:", ""] + [f"- {w}" for w in res.warnings]
    text = "\n".join(lines) + "\n"
    (out / "summary.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()

"""Record the Kineto (CUPTI) traces the CPU tests of kprof.timing replay, and smoke-test the modes on a GPU.

    python benchmarks/capture_timing_trace.py --out DIR

For three calls - a one-kernel Triton rmsnorm, eager PyTorch rmsnorm (several kernels) and the two-kernel
rmsnorm_linear - one profiler session of kprof.timing (4 cold calls, then the warm block) is exported as a
Chrome trace ``timing_<name>.json.gz``; ``timing_expected.json`` holds what the direct Kineto-results path
computed from the same session (the tests check the Chrome-trace path gives the same). Then a few cases are
timed in every mode (cold, warm, graph, host, events) and printed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import time
from pathlib import Path

CALLS = [
    ("rmsnorm_triton", "rmsnorm", "triton_tuned", (37, 4096), "bf16"),
    ("rmsnorm_eager", "rmsnorm", "torch_eager", (37, 4096), "bf16"),
    ("rmsnorm_linear_two", "rmsnorm_linear", "triton_two_kernels", (64, 1024, 1024), "bf16"),
]
SMOKE = [
    ("rmsnorm", "triton_tuned", (1, 4096)),
    ("rmsnorm", "torch_compile", (1, 4096)),
    ("rmsnorm", "triton_tuned", (64, 4096)),
    ("rmsnorm", "torch_compile", (64, 4096)),
    ("rmsnorm", "triton_one_row", (64, 4096)),
    ("rmsnorm", "torch_eager", (64, 4096)),
    ("rmsnorm", "triton_tuned", (4096, 4096)),
    ("rmsnorm", "triton_tuned", (4099, 5120)),
    ("rmsnorm_linear", "triton_two_kernels", (2048, 4096, 4096)),
]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    import torch

    from kprof import harness, timing
    from kprof.registry import get_family

    expected = {}
    for name, fam, prov, shape, dtype in CALLS:
        f = get_family(fam)
        inputs = f.make_inputs(shape, dtype, "cuda", 1234)
        fn = f.get_provider(prov).fn

        def call(fn=fn, inputs=inputs):
            return fn(**inputs)

        path = args.out / f"timing_{name}.json"
        recs: list = []

        def collect(run, path=path, recs=recs):
            recs.extend(timing.collect_device_records(run, trace_path=path))
            return list(recs)

        res = timing.measure_cupti(
            call, host_us=60.0, gpu_us=5.0, rep_ms=1, collect=collect, calls=(4, 4 + timing.WARM_SKIP)
        )
        with open(path, "rb") as src, gzip.open(f"{path}.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        path.unlink()
        expected[name] = {
            "n_cold": 4,
            "warm_skip": timing.WARM_SKIP,
            "source": res.source,
            "note": res.note,
            "kernels_per_call": res.cold.kernels_per_call if res.cold else None,
            "kernel_names": list(res.cold.kernel_names) if res.cold else None,
            "cold_busy_us": list(res.cold.busy_us) if res.cold else None,
            "cold_span_us": list(res.cold.span_us) if res.cold else None,
            "cold_sum_us": list(res.cold.sum_us) if res.cold else None,
            "warm_span_us": list(res.warm.span_us) if res.warm else None,
            "warm_sum_us": list(res.warm.sum_us) if res.warm else None,
            "records": len(recs),
            "device": torch.cuda.get_device_name(),
            "torch": torch.__version__,
        }
        print(name, json.dumps(expected[name])[:600], flush=True)
    (args.out / "timing_expected.json").write_text(json.dumps(expected, indent=1))

    settings = harness.BenchSettings(events=True)
    rows = []
    for fam, prov, shape in SMOKE:
        f = get_family(fam)
        inputs = f.make_inputs(shape, "bf16", "cuda", 99)
        fn = f.get_provider(prov).fn

        def call(fn=fn, inputs=inputs):
            return fn(**inputs)

        call()
        t0 = time.perf_counter()
        rough = harness.rough_gpu_ms(call)
        host = harness.time_host(call, settings, gpu_ms=rough)
        samples, timer, notes = harness.measure_modes([harness.Placement(call)], settings, host, rough)
        graph, _, _ = harness.time_graph(call, settings)
        secs = time.perf_counter() - t0
        med = {k: timing.median(v) for k, v in samples.items()}
        med["graph"] = timing.median(graph) * 1e3 if graph else float("nan")
        n = {k: len(v) for k, v in samples.items()}
        rows.append((fam, prov, shape, timer, med, n, secs, notes))
    print("\ncase | timer | cold span/sum | warm span/sum | graph | events | host | n cold/warm | s")
    for fam, prov, shape, timer, med, n, secs, notes in rows:
        print(
            f"{fam}/{prov}/{'x'.join(map(str, shape))} | {timer} | {med.get('cold', 0):.2f}/"
            f"{med.get('cold_sum', 0):.2f} | {med.get('warm', 0):.2f}/{med.get('warm_sum', 0):.2f} | "
            f"{med['graph']:.2f} | {med.get('events', 0):.2f} | {med.get('host', 0):.1f} | "
            f"{n.get('cold', 0)}/{n.get('warm', 0)} | {secs:.2f} {notes or ''}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

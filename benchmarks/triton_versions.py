"""Compile every Triton specialisation that kprof's kernel families launch under two or more Triton installs
(for sm_90, on the CPU: no GPU needed) and compare what each compiler made of the same specialisation: async
copies, TMA, vector and 16-bit global loads and stores, tensor-core instructions, registers and spills.

Why: CI installs the newest Triton and the GPU machine has 3.6. A kernel can compile well under one and badly
under the other with nothing failing: an alignment promise that Triton 3.9 used was dropped by 3.6, and every
ragged-8 product on the H100 loaded its tiles one element at a time (``results/alignment-promises/``).

    python benchmarks/triton_versions.py --out DIR --python /venv-a/bin/python --python /venv-b/bin/python

1. The launches are recorded under Triton's interpreter (in a child of the first ``--python``): every Triton
   provider of every family, in fp32, bf16 and fp16, at the family's interpreter shapes and the shapes below
   (ragged-8 and 16-aligned matrix shapes, wide and many rows for the row-wise families). Under the
   interpreter some dispatch rules differ from a GPU's (IEEE products, the interleaved kernel at any row
   count), so these are the specialisations the interpreter runs; the comparison is of two compilers on the
   same ones.
   The kernels only a GPU runs, which the interpreter never reaches, are added as their GPU dispatch launches
   them: rmsnorm's and add_rmsnorm's cooperative and pipelined wide-row kernels (``offline_wide_row_call`` in
   each family's ``tuned.py``) at every default-sweep and grid shape where the dispatch takes them, on 132 SMs;
   with ``--caps`` each layout that names its programs an SM once more, capped (``maxnreg``) at the registers
   a thread that let them fit.
2. Each ``--python`` compiles them all (``python -m kprof.specialization`` with ``"instructions": true``;
   kprof must be importable there, e.g. ``pip install --no-deps -e .`` in that environment).
3. ``DIR/compiled.csv``: one row per specialisation and install, with the memory order of its atomics and loads
   and, for a wide-row kernel, the programs an SM its registers let run at once against the programs an SM its
   dispatch launches; ``DIR/differences.md``: every specialisation whose instruction kinds, memory order,
   spills or fit differ between installs, flagged where one install has 16-bit scalar global loads or no async
   copies where another has vector loads or copies, or fits fewer programs an SM than its dispatch launches.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

from kprof.occupancy import theoretical_occupancy
from kprof.specialization import compiler_env

# (rows..., columns...) shapes per family besides its interpreter sweep: the matrix families at a ragged-8
# shape (the alignment promise) and a 16-aligned one; the row-wise families at row widths of 1000 (a
# multiple of 8) and 4096, and at wide and many rows, where their dispatch takes other kernels
EXTRA_SHAPES: dict[str, list[tuple[int, ...]]] = {
    "swiglu": [(5, 40, 24), (4, 64, 48), (17, 40, 24)],
    "rmsnorm_linear": [(5, 40, 24), (4, 64, 48), (17, 40, 24)],
    "rmsnorm": [(3, 1000), (4, 4096), (2, 65536), (64, 8192)],
    "add_rmsnorm": [(3, 1000), (4, 4096), (2, 65536), (64, 8192)],
    "silu_mul": [(3, 1000), (4, 4096), (64, 8192)],
    "gelu_mul": [(3, 1000), (4, 4096), (64, 8192)],
}
DTYPES = ("fp32", "bf16", "fp16")
KINDS = ("cp.async", "tma", "ld.global vector", "ld.global 16-bit", "st.global vector", "st.global 16-bit")
KINDS += ("mma.sync", "wgmma")
ORDERS = ("relaxed atomic", "release atomic", "acquire atomic", "acq_rel atomic", "atomic, no order", "acquire load")
ORDERS += ("fence", "ld.global.cg")
WIDE_ROW_FAMILIES = ("rmsnorm", "add_rmsnorm")


def record(path: Path, families: list[str] | None = None) -> None:
    """Run every Triton provider (of ``families``, default all) under the interpreter and write the distinct
    launches (JSON) to ``path``."""
    from kprof.kernels import discover
    from kprof.specialization import recording

    calls: dict[str, dict] = {}
    notes = []
    for fam_name, fam in discover().items():
        if families and fam_name not in families:
            continue
        shapes = list(fam.sweep("interpreter").shapes) + EXTRA_SHAPES.get(fam_name, [])
        for prov in fam.triton_providers():
            for dtype in DTYPES:
                for shape in shapes:
                    try:
                        inputs = fam.make_inputs(shape, dtype, "cpu", seed=len(calls))
                        with recording() as rec:
                            prov.fn(**inputs)
                    except Exception as exc:  # noqa: BLE001 - a provider that refuses a shape is noted, not fatal
                        notes.append(f"{fam_name}/{prov.name} {shape} {dtype}: {type(exc).__name__}: {str(exc)[:120]}")
                        continue
                    for call in rec.calls:
                        if call is not None:
                            key = json.dumps(call, sort_keys=True)
                            calls.setdefault(key, {**call, "where": f"{fam_name}/{prov.name} {shape} {dtype}"})
    path.write_text(json.dumps({"calls": list(calls.values()), "notes": notes}))
    print(f"recorded {len(calls)} distinct launches ({len(notes)} provider/shape pairs refused)", flush=True)


def wide_row_calls(families: list[str] | None = None, sm_count: int = 132) -> list[dict]:
    """The GPU launches of the wide-row kernels (cooperative and pipelined) at every default-sweep and grid shape
    of rmsnorm and add_rmsnorm where a GPU with ``sm_count`` SMs takes them, described as the recording's calls
    (with the layout's warps and programs an SM). Run where the interpreter is off: the launch options then are
    a GPU's (rmsnorm's fp16 second conversion in inline PTX)."""
    import importlib

    from kprof.dtypes import torch_dtype
    from kprof.kernels import discover
    from kprof.specialization import describe_call

    calls: dict[str, dict] = {}
    for fam_name in WIDE_ROW_FAMILIES:
        if families and fam_name not in families:
            continue
        fam = discover()[fam_name]
        tuned = importlib.import_module(f"kprof.kernels.{fam_name}.tuned")
        for sweep in (fam.sweep("gpu"), *fam.grid_parts().values()):
            for dtype in sweep.dtypes:
                for shape in sweep.shapes:
                    rows = math.prod(shape[:-1])
                    found = tuned.offline_wide_row_call(rows, shape[-1], torch_dtype(dtype), sm_count)
                    if found is None:
                        continue
                    cfg, (kernel, args, options) = found
                    call = describe_call(kernel, args, options)
                    layout = {"num_warps": cfg.num_warps, "programs_per_sm": cfg.programs_per_sm}
                    at = f"{fam_name}/triton_tuned {dtype} (GPU: {cfg.kernel}) at"
                    same = calls.setdefault(specialisation_key(call), {**call, "where": at, "layout": layout})
                    same["where"] += f" {'x'.join(map(str, shape))}"
    return list(calls.values())


def capped(calls: list[dict]) -> list[dict]:
    """Each wide-row call whose layout names its programs an SM again, compiled with Triton's ``maxnreg`` at the
    most registers a thread that let that many programs fit an H100 SM (a register cap: the compiler spills
    rather than exceed it)."""
    out = []
    for call in calls:
        layout = call.get("layout") or {}
        if layout.get("programs_per_sm"):
            threads, wanted = 32 * layout["num_warps"], layout["programs_per_sm"]
            cap = max(r for r in range(8, 256, 8) if theoretical_occupancy(threads, r, 0).blocks_by_registers >= wanted)
            kwargs = {**call["kwargs"], "maxnreg": {"value": cap}}
            out.append({**call, "kwargs": kwargs, "where": call["where"] + f" (capped at {cap} registers)"})
    return out


def specialisation_key(call: dict) -> str:
    """What Triton compiles a described call by: the kernel, its options and constexprs, the tensors' dtypes and
    alignment, and for each integer whether it is 1 or a multiple of 16 (its value does not matter)."""

    def spec(d: dict) -> object:
        v = d.get("value")
        return (v == 1, v % 16 == 0) if isinstance(v, int) and not isinstance(v, bool) and "tensor" not in d else d

    args = [spec(a) for a in call["args"]]
    return json.dumps([call["module"], call["name"], args, call["kwargs"]], sort_keys=True)


def fit_per_sm(answer: dict, num_warps: int) -> int | str:
    """Programs of ``num_warps`` warps that one H100 SM holds at once with the registers and shared memory of
    ``answer`` (one install's compile); "" where it did not compile."""
    if "registers" not in answer:
        return ""
    occ = theoretical_occupancy(32 * num_warps, answer["registers"], answer.get("shared_mem_bytes") or 0)
    return occ.blocks_per_sm


def compile_all(python: str, calls: list[dict]) -> tuple[str, list[dict]]:
    """(Triton version, one answer per call) from ``python``'s Triton."""
    env = compiler_env()
    version = subprocess.run(
        [python, "-c", "import triton; print(triton.__version__)"], capture_output=True, text=True, env=env
    ).stdout.strip()
    payload = json.dumps(
        {
            "arch": 90,
            "instructions": True,
            "calls": [{k: c[k] for k in c if k not in ("where", "layout")} for c in calls],
        }
    )
    res = subprocess.run(
        [python, "-m", "kprof.specialization"], input=payload, capture_output=True, text=True, env=env, timeout=7200
    )
    if res.returncode != 0:
        raise SystemExit(f"{python} -m kprof.specialization exited {res.returncode}: {res.stderr.strip()[-600:]}")
    return version, json.loads(res.stdout.strip().splitlines()[-1])


def describe(call: dict) -> str:
    """The kernel and its constexprs (the meta-parameters that name a specialisation), short."""
    meta = {k: v["value"] for k, v in call["kwargs"].items() if "value" in v}
    return f"{call['name']} " + " ".join(f"{k}={v}" for k, v in sorted(meta.items()))


def flags(rows: list[dict]) -> list[str]:
    """What one install lost against another for one specialisation."""
    out = []
    for a in rows:
        for b in rows:
            if a is b or "instructions" not in a or "instructions" not in b:
                continue
            ia, ib = a["instructions"], b["instructions"]
            if ia["ld.global 16-bit"] > ib["ld.global 16-bit"] and ia["cp.async"] + ia["ld.global vector"] < (
                ib["cp.async"] + ib["ld.global vector"]
            ):
                out.append(f"Triton {a['triton']}: more 16-bit scalar loads and fewer copies or vector loads")
            if ia["cp.async"] == 0 and ib["cp.async"] > 0:
                out.append(f"Triton {a['triton']}: no cp.async where {b['triton']} has {ib['cp.async']}")
            if ia["tma"] == 0 and ib["tma"] > 0:
                out.append(f"Triton {a['triton']}: no TMA where {b['triton']} has it")
            if (a.get("spill_bytes") or 0) > 0 and not (b.get("spill_bytes") or 0):
                out.append(f"Triton {a['triton']}: spills {a['spill_bytes']} B, {b['triton']} none")
    for a in rows:
        wanted = a.get("programs_per_sm") or 0
        if wanted and a.get("fit_per_sm") != "" and a["fit_per_sm"] < wanted:
            out.append(
                f"Triton {a['triton']}: {a['fit_per_sm']} programs an SM fit at {a['registers']} registers, "
                f"the dispatch launches {wanted} an SM"
            )
    return sorted(set(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument(
        "--python", action="append", help="an interpreter whose Triton compiles (repeat; default: this one)"
    )
    ap.add_argument("--families", help="comma-separated families (default: all)")
    ap.add_argument(
        "--caps", action="store_true", help="also compile each wide-row layout capped at the registers it assumes"
    )
    ap.add_argument("--record-only", action="store_true", help=argparse.SUPPRESS)  # the interpreter child
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    launches = args.out / "launches.json"
    families = args.families.split(",") if args.families else None
    if args.record_only:
        record(launches, families)
        return
    pythons = args.python or [sys.executable]
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    child = [pythons[0], __file__, "--out", str(args.out), "--record-only"]
    subprocess.run(child + (["--families", args.families] if args.families else []), check=True, env=env)
    wide = wide_row_calls(families)
    calls = json.loads(launches.read_text())["calls"] + wide + (capped(wide) if args.caps else [])
    answers = {}
    for python in pythons:
        version, result = compile_all(python, calls)
        answers[version] = result
        failed = sum(1 for r in result if "registers" not in r)
        print(f"Triton {version} ({python}): {len(result)} compiled, {failed} failed", flush=True)
    rows, diffs = [], []
    for i, call in enumerate(calls):
        layout = call.get("layout", {})
        per = [{"triton": v, **answers[v][i]} for v in answers]
        for r in per:
            r["programs_per_sm"] = layout.get("programs_per_sm", "")
            r["fit_per_sm"] = fit_per_sm(r, layout["num_warps"]) if layout else ""
            ins, order = r.get("instructions", {}), r.get("memory_order", {})
            rows.append(
                {
                    "kernel": describe(call),
                    "where": call["where"],
                    "triton": r["triton"],
                    **{k: ins.get(k, "") for k in KINDS},
                    **{k: order.get(k, "") for k in ORDERS},
                    "registers": r.get("registers", ""),
                    "spill_bytes": r.get("spill_bytes", ""),
                    "shared_mem_bytes": r.get("shared_mem_bytes", ""),
                    "programs_per_sm": r["programs_per_sm"],
                    "fit_per_sm": r["fit_per_sm"],
                    "note": "" if "registers" in r else r.get("resources_from", ""),
                }
            )
        kinds = {json.dumps({k: r.get("instructions", {}).get(k, 0) > 0 for k in KINDS}) for r in per}
        orders = {json.dumps(r.get("memory_order", {}), sort_keys=True) for r in per}
        spills = {bool(r.get("spill_bytes")) for r in per}
        fits = {r["fit_per_sm"] for r in per}
        if (
            len(kinds) > 1
            or len(orders) > 1
            or len(spills) > 1
            or len(fits) > 1
            or any("registers" not in r for r in per)
        ):
            diffs.append((call, per, flags(per)))
    with open(args.out / "compiled.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = [
        f"# The same specialisations compiled by Triton {', '.join(answers)} (sm_90, offline)",
        "",
        f"{len(calls)} distinct launches recorded; {len(diffs)} differ in the kinds of instruction they use, their "
        f"memory order, spilling or programs an SM, or compile under one install only; "
        f"{sum(1 for d in diffs if d[2])} flagged.",
        "",
        "| kernel | recorded at | flag | "
        + " | ".join(f"{k} ({v})" for v in answers for k in ("loads", "regs", "fit an SM"))
        + " |",
        "|---|---|---|" + "---|" * (3 * len(answers)),
    ]
    for call, per, why in sorted(diffs, key=lambda d: (not d[2], d[0]["name"])):
        cells = []
        for r in per:
            ins = r.get("instructions")
            kinds = ", ".join(f"{k} {ins[k]}" for k in KINDS if ins and ins[k]) if ins else r.get("resources_from", "")
            cells += [kinds, str(r.get("registers", "—")), str(r["fit_per_sm"]) if r["fit_per_sm"] != "" else "—"]
        lines.append(f"| `{describe(call)}` | {call['where']} | {'; '.join(why) or '—'} | " + " | ".join(cells) + " |")
    (args.out / "differences.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:4]))
    print(f"wrote {args.out / 'compiled.csv'} and {args.out / 'differences.md'}")


if __name__ == "__main__":
    main()

"""``benchmarks/wide_row_fit.py``, on which add_rmsnorm's widest-rows rule on an H200 rests: compiled for sm_90 on the
CPU, the layout the rule sends 131072-column bf16 rows to fits the 3 programs an SM it launches, and the script reads
a ragged width's registers from its own compile, not from a whole width's of the same number of chunks."""

from __future__ import annotations

from pathlib import Path

from tests.compile_child import child_json

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"

PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import wide_row_fit
rows = wide_row_fit.fit_rows([131072, 73728, 70001], [1024], ["bf16"], True)
print(json.dumps([r for r in rows if r["family"] == "add_rmsnorm"]))
"""


def test_the_widest_rows_layout_fits_its_programs_and_a_ragged_width_compiles_apart():
    rows = {r["shape"]: r for r in child_json(["-c", PROBE, str(BENCHMARKS)])}
    widest = rows["1024x131072"]
    assert (widest["kernel"], widest["chunk"], widest["warps"]) == ("slotted", 8192, 16), widest
    assert widest["fit_per_sm"] == widest["asked_per_sm"] == 3, widest
    whole, ragged = rows["1024x73728"], rows["1024x70001"]  # 18 chunks of 4096 each, the last one ragged at 70001
    assert (whole["chunk"], whole["chunks_a_row"]) == (ragged["chunk"], ragged["chunks_a_row"]) == (4096, 18)
    assert ragged["registers"] > whole["registers"], (whole, ragged)  # masked, unaligned loads: its own compile
    assert ragged["fit_per_sm"] < whole["fit_per_sm"] <= whole["asked_per_sm"], (whole, ragged)


FALLBACK_PROBE = """
import json, sys
from dataclasses import astuple
sys.path.insert(0, sys.argv[1])
import wide_row_fit
from kprof.kernels.add_rmsnorm import tuned as add_tuned
from kprof.kernels.rmsnorm import tuned as rms_tuned
widths, dtypes = [65536, 81920, 131072], ["bf16", "fp16"]
table = {("rmsnorm", d): rms_tuned._FAST_MEMORY_16BIT_LAYOUTS for d in dtypes}
table[("add_rmsnorm", "fp16")] = add_tuned._FAST_MEMORY_LAYOUTS["fp16"]
chosen = [r for r in wide_row_fit.fit_rows(widths, [1024], dtypes, True) if (r["family"], r["dtype"]) in table]
primary = wide_row_fit.layout_rows(widths, dtypes, sorted({(v[0].chunk, v[0].warps) for v in table.values()}))
table = {"|".join(k): [astuple(lay) for lay in v] for k, v in table.items()}
print(json.dumps({"chosen": chosen, "primary": primary, "table": table}))
"""


def test_a_raced_layout_that_no_longer_fits_its_programs_gives_way_to_one_holding_as_much_in_flight():
    """Under whichever Triton runs the tests (the GPU machine's 3.6 and CI's newer one compile these kernels to
    different registers), an H200's 16-bit wide rows keep the raced layout where its compiled kernel fits the programs
    an SM it fitted where raced, and otherwise take a layout of the family's table that holds at least as many row
    elements in flight an SM as the raced one would (``split_rows.fitting_layout``)."""
    got = child_json(["-c", FALLBACK_PROBE, str(BENCHMARKS)])
    assert got["chosen"], got
    for row in got["chosen"]:
        key = f"{row['family']}|{row['dtype']}"
        chunk, warps, per_sm, raced_fit = got["table"][key][0]  # the raced layout, then its fallbacks
        primary = next(
            p for p in got["primary"]
            if (p["family"], p["dtype"], p["shape"].split("x")[1], p["chunk"], p["warps"])
            == (row["family"], row["dtype"], row["shape"].split("x")[1], chunk, warps)
        )  # fmt: skip
        layout = [row["chunk"], row["warps"], row["asked_per_sm"]]
        assert layout in [entry[:3] for entry in got["table"][key]], row
        if min(primary["fit_per_sm"], per_sm) >= raced_fit:
            assert layout == [chunk, warps, per_sm], (row, primary)
        else:
            assert layout != [chunk, warps, per_sm], (row, primary)
            assert row["in_flight_per_sm"] >= min(primary["fit_per_sm"], per_sm) * chunk, (row, primary)

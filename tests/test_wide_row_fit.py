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

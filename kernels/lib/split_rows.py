"""How few rows wider than one block are split over programs: the rule rmsnorm's and add_rmsnorm's split
paths share (``kernels/rmsnorm/split.py``, ``kernels/add_rmsnorm/split.py``). Plain Python: the split
count, each program's chunk and the loop step and warps of both launches."""

from __future__ import annotations

import triton

# The choice below, raced on an H100 (benchmarks/results/rmsnorm-split-rows/: 20 shapes of 1-64 rows x
# 16384-131072 columns, bf16 and fp32, 3 interleaved rounds of cold times, every candidate of splits x
# loop step x warps): it lands within 4.4% of the fastest candidate at every shape (1.0075x on average)
# and 14-27% under torch.compile. Two waves of programs beat one (32x131072 bf16: 8 splits, 8.48 us,
# against 4 splits, 11.55 us); at 64 rows one program per row with 16 warps is faster than any split
# (64x131072: 14.38 against 16.54 us), so rows split only while four programs per row still fit one wave.
MIN_CHUNK = 1024  # elements: smaller chunks did not pay for their program
MAX_SPLITS = 128
WAVES = 2  # programs per SM the split count may reach


def choose_splits(n_rows: int, n: int, sm_count: int) -> int:
    """Programs per row: 1 (do not split) when four programs per row would not fit one wave of the SMs;
    else the largest power of two that keeps rows x splits within ``WAVES`` waves and every chunk at
    least ``MIN_CHUNK`` elements."""
    if n_rows * 4 > sm_count:
        return 1
    splits = 1
    while (
        splits * 2 <= MAX_SPLITS and n_rows * splits * 2 <= WAVES * sm_count and triton.cdiv(n, splits * 2) >= MIN_CHUNK
    ):
        splits *= 2
    return splits


def chunk_of(n: int, splits: int) -> int:
    """Elements per program: an equal share of the row, rounded up to 256 so every chunk starts aligned."""
    return triton.cdiv(triton.cdiv(n, splits), 256) * 256


def loop_config(n: int, splits: int) -> tuple[int, int]:
    """(elements per loop step, warps): the whole chunk in one step up to 4096 elements, else 2048 a step
    (8192-element chunks ran faster in 2048 steps: 16x131072 bf16 5.76 against 5.98 us); 4 warps for
    1024-element steps, 8 above."""
    chunk = chunk_of(n, splits)
    block = triton.next_power_of_2(chunk) if chunk <= 4096 else 2048
    return block, 4 if block <= 1024 else 8

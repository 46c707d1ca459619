"""What the gated families (``silu_mul``, ``gelu_mul``: ``act(gate) * up`` over ``x = [..., 2H]``, gate |
up halves) share, used the same way by both:

* the family record's parts that do not depend on the activation (inputs, output, bytes model, tolerances),
  the input checks, the eager baselines' registration;
* the ``@triton.jit`` building blocks of the three kernel designs: where a program's gate, up and outputs
  are (:func:`one_row_block`, :func:`tile_block`, :func:`flat_block`) and the load of gate and up
  (:func:`load_gate_up`). Each family's ``kernels.py`` writes its three kernels from them with its own
  activation, so a profile's kernel leads to the family folder that launched it;
* the launch choice of ``triton_tuned`` (:func:`choose_config`, measured on an H100, and on H200s at 16-bit few and
  mid row counts: ``FAST_MEMORY_ROWS``), the launch of a config (:func:`launch_tile`), the ops' launch plan
  (:func:`launch_as_op`) and the three versions' wrappers (:func:`register_versions`), all taking a family's
  :class:`GatedKernels`.

Versions registered into each family by :func:`register_versions`:

* ``triton_one_row`` - one program per row, the row's H outputs in one block (the classic pattern).
* ``triton_tiled`` - a 2-D grid of (row, column block) programs of a fixed 1024-column block: wide rows
  and few rows still give every SM work (at 64 x (2*11008) one-row launches only 64 programs).
* ``triton_tuned`` - the block chosen by measurement on an H100 (a whole row per program when rows are
  many, 4 KB column blocks when they are few; see ``choose_config``), 32-bit offsets when they suffice,
  launches through compiled kernels (no JIT argument binding per call).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import triton
import triton.language as tl

from kprof.dtypes import element_size, torch_dtype
from kprof.kernels.lib import checks, launching
from kprof.kernels.lib.launching import known_multiple
from kprof.kernels.lib.plans import Launch, Plans, row_stride, sig
from kprof.launch import CompiledLauncher, spec_key
from kprof.registry import Family, Shape


# ------------------------------------------------------------------------------------ family record
def make_inputs(shape: Shape, dtype: str, device: str | torch.device, seed: int) -> dict:
    """``x [..., 2H]``: gate values spread over the activation's curved region and tails, up around 1."""
    if shape[-1] % 2:
        raise ValueError(f"gated activations need an even last dimension (gate | up), got {shape[-1]}")
    gen = torch.Generator(device=device).manual_seed(seed)
    h = shape[-1] // 2
    x = torch.empty(tuple(shape), dtype=torch_dtype(dtype), device=device)
    rows = x.view(-1, shape[-1])
    # drawn in float32 a block of rows at a time: whole, the float32 halves and their concatenation took
    # 64 GiB at 32768 x 262144, and that grid point ran out of memory on an 80 GB H100 before any provider
    step = max(1, (1 << 26) // max(shape[-1], 1))
    for a in range(0, rows.shape[0], step):
        b = min(a + step, rows.shape[0])
        rows[a:b, :h] = 3.0 * torch.randn((b - a, h), generator=gen, device=device)
        rows[a:b, h:] = 1.0 + torch.randn((b - a, h), generator=gen, device=device)
    return {"x": x}


def make_outputs(x: torch.Tensor) -> torch.Tensor:
    return torch.empty(x.shape[:-1] + (x.shape[-1] // 2,), dtype=x.dtype, device=x.device)


def bytes_model(shape: Shape, dtype: str) -> int:
    """Read gate and up (2H per row), write H per row."""
    return 3 * checks.numel_rows(shape) * (shape[-1] // 2) * element_size(dtype)


def validate(op: str, x: torch.Tensor, *, triton: bool = True) -> None:
    """Raise ``ValueError`` saying what is wrong (``triton``: x must suit a Triton kernel)."""
    checks.check_float(op, "x", x)
    if x.shape[-1] % 2:
        raise ValueError(f"{op}: x's last dimension must be even (gate | up halves), got {x.shape[-1]}")
    if triton:
        checks.check_triton_device(op, x)


def check_inputs(
    op: str, x: torch.Tensor, out: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Validate for a kernel; return ``(x2d, y2d, y)`` with ``y`` of shape ``[..., H]``."""
    validate(op, x)
    y = checks.output(op, out, x.shape[:-1] + (x.shape[-1] // 2,), x)
    return checks.rows(x), y.view(-1, y.shape[-1]), y


def make_family(
    name: str, description: str, package_dir: str, oracle: Callable[[torch.Tensor], torch.Tensor], flops_per_output: int
) -> Family:
    """The :class:`Family` of one gated activation: ``oracle`` (float64) and ``flops_per_output`` are the
    family's own, everything else is the same for both."""
    from pathlib import Path

    def flops(shape: Shape, dtype: str) -> int:
        return flops_per_output * checks.numel_rows(shape) * (shape[-1] // 2)

    return Family(
        name,
        description=description,
        package_dir=Path(package_dir),
        make_inputs=make_inputs,
        make_outputs=make_outputs,
        oracle=oracle,
        bytes_model=bytes_model,
        flops_model=flops,
        # one rounding of the product to the storage dtype (the eager code rounds after the activation too)
        tolerances={"fp32": 1e-5, "bf16": 8e-3, "fp16": 1e-3},
        baseline="torch_eager",
        row_inputs=("x",),
    )


def register_baselines(family: Family, eager: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """``torch_eager`` (the eager code) and ``torch_compile`` (of it) for a gated family, and its yardstick
    ``copy_bytes`` (:func:`kprof.providers.register_copy_bytes`)."""
    from kprof.providers import compiled, register_copy_bytes

    family.provider("torch_eager", kind="eager", description="eager PyTorch, as users write it")(eager)
    register_copy_bytes(family)
    family.provider(
        "torch_compile", kind="compile", description="torch.compile of the eager code (default mode)", gpu_only=True
    )(compiled(eager))


# -------------------------------------------------------------------------------- kernel building blocks
@triton.jit
def load_gate_up(g_ptrs, H, mask, EVICT_FIRST: tl.constexpr):
    """Gate at ``g_ptrs`` and up ``H`` columns on, as fp32 (``EVICT_FIRST``: each byte is read once)."""
    if EVICT_FIRST:
        g = tl.load(g_ptrs, mask=mask, other=0.0, eviction_policy="evict_first")
        u = tl.load(g_ptrs + H, mask=mask, other=0.0, eviction_policy="evict_first")
    else:
        g = tl.load(g_ptrs, mask=mask, other=0.0)
        u = tl.load(g_ptrs + H, mask=mask, other=0.0)
    return g.to(tl.float32), u.to(tl.float32)


@triton.jit
def known_row(H, x_row_stride, ALIGN: tl.constexpr):
    """``H`` and x's row stride, which must be multiples of ``ALIGN``, in a form the compiler knows to be ones
    (``launching.vector_align``: at H = 5512 the up half starts 11024 bytes into a row, 16-byte aligned)."""
    return known_multiple(H, ALIGN), known_multiple(x_row_stride, ALIGN)


@triton.jit
def one_row_block(x_ptr, x_row_stride, H, BLOCK_H: tl.constexpr):
    """Program ``i`` takes row ``i`` whole (``BLOCK_H``: a power of two >= H): its gate pointers, output
    offsets (y contiguous, ``[rows, H]``) and mask."""
    row = tl.program_id(0).to(tl.int64)  # int64: rows * stride can pass 2**31
    cols = tl.arange(0, BLOCK_H)
    return x_ptr + row * x_row_stride + cols, row * H + cols, cols < H


@triton.jit
def tile_block(x_ptr, x_row_stride, n_rows, H, BLOCK_H: tl.constexpr, ROWS: tl.constexpr, I64: tl.constexpr):
    """Program (i, j) of a 2-D grid takes rows ``[i*ROWS, (i+1)*ROWS)`` x columns ``[j*BLOCK_H, (j+1)*BLOCK_H)``:
    its gate pointers, output offsets and mask (``I64``: 64-bit offsets)."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    mask = (rows < n_rows)[:, None] & (cols < H)[None, :]
    if I64:
        r = rows.to(tl.int64)[:, None]
    else:
        r = rows[:, None]
    return x_ptr + r * x_row_stride + cols[None, :], r * H + cols[None, :], mask


@triton.jit
def tile_gate_up(
    x_ptr,
    x_row_stride,
    n_rows,
    H,
    BLOCK_H: tl.constexpr,
    ROWS: tl.constexpr,
    HINTS: tl.constexpr,
    I64: tl.constexpr,
    ALIGN: tl.constexpr,
    COLS: tl.constexpr,
):
    """A tile kernel's program: its gate and up in fp32, output offsets and mask (``COLS``: 0, or H compiled in;
    ``ALIGN``: what H and the row stride are multiples of; the rest as :func:`tile_block` and :func:`load_gate_up`)."""
    if COLS:
        H = COLS
    H, x_row_stride = known_row(H, x_row_stride, ALIGN)
    g_ptrs, y_offs, mask = tile_block(x_ptr, x_row_stride, n_rows, H, BLOCK_H, ROWS, I64)
    g, u = load_gate_up(g_ptrs, H, mask, HINTS)
    return g, u, y_offs, mask


@triton.jit
def flat_block(x_ptr, x_row_stride, total, H, BLOCK: tl.constexpr, I64: tl.constexpr):
    """Program ``i`` takes outputs ``[i*BLOCK, (i+1)*BLOCK)`` of all ``total`` = rows * H, across row ends (no
    masked lanes but the last block's): their gate pointers, output offsets and mask."""
    if I64:
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    else:
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    row = offs // H
    return x_ptr + row * x_row_stride + (offs - row * H), offs, offs < total


@dataclass(frozen=True, eq=False)
class GatedKernels:
    """One gated family's three ``@triton.jit`` kernels, with the arguments :func:`register_versions` and
    :func:`launch_tile` launch them with:

    * ``one_row(x_ptr, y_ptr, x_row_stride, H, BLOCK_H)``
    * ``tile(x_ptr, y_ptr, x_row_stride, n_rows, H, BLOCK_H, ROWS, HINTS, I64, ALIGN, COLS)``
    * ``flat(x_ptr, y_ptr, x_row_stride, total, H, BLOCK, I64, ALIGN)``

    (``ALIGN``: what H and the row stride are multiples of, ``launching.vector_align``; ``COLS``: 0, or H compiled in.)
    """

    one_row: Any
    tile: Any
    flat: Any
    one_row_launcher: CompiledLauncher = field(init=False)
    tile_launcher: CompiledLauncher = field(init=False)
    flat_launcher: CompiledLauncher = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "one_row_launcher", CompiledLauncher(self.one_row))
        object.__setattr__(self, "tile_launcher", CompiledLauncher(self.tile))
        object.__setattr__(self, "flat_launcher", CompiledLauncher(self.flat))


# ------------------------------------------------------------------------------------- launch configs
MAX_ONE_ROW_BYTES = 32 * 1024  # one_row: widest H (bytes of one half-row) kept in one block
TILED_BLOCK_H = 1024


@dataclass(frozen=True)
class Config:
    block_h: int  # columns per program; with ``flat``, consecutive outputs per program
    rows: int
    num_warps: int
    hints: bool
    flat: bool = False  # the 1-D kernel over all outputs instead of row x column tiles
    cols_const: bool = False  # the tile kernel with H compiled in (its COLS): one binary per width
    one_row: bool = False  # the one-row kernel (``triton_one_row``'s): a program a row, ``block_h`` >= H

    def cols(self, h: int) -> int:
        """The tile kernel's ``COLS`` for rows of ``h`` outputs: ``h`` where compiled in, else 0."""
        return h if self.cols_const else 0


# Measured on an H100 in bf16, two interleaved rounds (benchmarks/results/catalog/
# tune_memory_bound.csv). With many rows a whole row per program wins: 16384x(2*11008) silu_mul ran
# 367.9 us one row per program against 385.0 us for the best 2-D tile (2 rows x 2048 columns) and 392.9 us
# with evict_first hints. With few rows, column blocks give the SMs work: 64x(2*11008) ran 6.7 us in
# 2048-column blocks against 9.3 us one row per program. 4096x(2*4096): 39.4 us either way.
TUNED_MAX_BLOCK_BYTES = 32 * 1024  # widest column block (a whole row up to H = 16384 in bf16)
TUNED_SMALL_BLOCK_BYTES = 4 * 1024  # column block when rows alone give fewer than 4 programs per SM
# With many rows, one flat block of 2048 outputs (8 warps) per program, Inductor's layout, ties
# torch.compile where the whole-row blocks did not: 16384x(2*11008) silu 358.7 us (compile 358.7, whole rows
# 360.2), gelu 358.7 (compile 358.8, whole rows 362.6); at 4096x(2*4096) all within 0.3%. Five interleaved
# rounds on an H100, benchmarks/results/gated-flat/. A 16384-wide block for H = 11008 leaves
# a third of its lanes masked; the flat block none.
FLAT_BLOCK = 2048
FLAT_WARPS = 8


@dataclass(frozen=True)
class RowsRule:
    """One measured class of :data:`FAST_MEMORY_ROWS`: rows and H from, to (inclusive), and its launch."""

    rows: tuple[int, int]
    h: tuple[int, int]
    block_h: int  # columns a program; 0: the whole row (the next power of two of H)
    num_warps: int
    cols_const: bool  # H compiled in (the tile kernel's COLS)
    one_row: bool = False  # the whole row through the one-row kernel instead of the tile kernel

    def covers(self, h: int, n_rows: int) -> bool:
        """Whether the class takes ``n_rows`` rows of ``h`` outputs."""
        # A whole row of 16-byte vectors only: at H = 2049 or 7169 ptxas gave its launch 59-64 registers a thread
        # (offline, sm_90) against 32 at H = 4096 or 8192, half the programs an SM that the class counts on. Column
        # tiles only where H fills them: at 896x(2*5632), the last of each row's six 1024-column tiles half masked, they
        # ran 8.33 / 8.38 µs (silu_mul bf16 / gelu_mul fp16) against the H100's flat blocks' 8.06 / 8.14.
        fits = h % self.block_h == 0 if self.block_h else h % 8 == 0
        return fits and self.rows[0] <= n_rows <= self.rows[1] and self.h[0] <= h <= self.h[1]

    def config(self, h: int) -> Config:
        """The class's launch for rows of ``h`` outputs."""
        block_h = self.block_h or triton.next_power_of_2(h)
        return Config(block_h, 1, self.num_warps, False, cols_const=self.cols_const, one_row=self.one_row)


# On an H200 (``launching.fast_memory``), 16-bit rows of 256-1056 rows and H 1025-8192 take the first class below that
# covers them: where the H100's choice (2048-column tiles of 8 warps under 528 rows, flat blocks above) ran 3-10% behind
# kprof's own best launch. Every tile and flat config was raced at 2 places in memory on two H200s
# (benchmarks/results/grid/h200-gated-whole-row/, ``gated_placed_race.py``), µs, the class's launch / the H100's choice:
# * One whole row a program, all of them resident at once (4 programs of 16 warps an SM: 528 on 132 SMs; at 1024-1056
#   rows two full waves): silu_mul 512x(2*8192) 6.59 / 7.12 bf16, 6.62 / 7.11 fp16; gelu_mul 512x(2*2048) 2.89 / 3.12
#   bf16; silu_mul 384x(2*8192) 5.40 / 5.73. H = 6144-7168 first raced on three H200s with H compiled in: silu_mul
#   512x(2*6144) 5.46-5.49 / 5.69-5.71 bf16, 1024x(2*6144) 9.42-9.50 / 9.61. At H = 8192 compiled in was slower
#   (silu_mul 512 rows 6.84 against 6.59 bf16). At 640-768 rows, a part-filled second wave, the whole row was 2-10%
#   slower than 1024-column tiles (silu_mul 640x(2*6144) 7.14 against 6.54 bf16; 1% at 896 rows), where the rule for
#   512-1024 rows shipped before ran it.
# * H = 2049-4096 at 769-1056 rows, one whole row of 8 warps (8 an SM): silu_mul 1024x(2*4096) 6.72 / 7.03 bf16. At
#   1024x(2*3072) (a quarter of the block masked; a third H200) it tied the H100's choice: 5.60 / 5.68 silu_mul bf16,
#   5.80 / 5.78 gelu_mul fp16, both 2-5% behind flat blocks of 2048 outputs and 4 warps (5.50).
# * Elsewhere in the band, H a multiple of 1024: 1024-column tiles of 8 warps, H compiled in: silu_mul 768x(2*6144)
#   7.54 / 7.73 bf16, 1024x(2*2048) 4.21 / 4.47; gelu_mul 256x(2*4096) 2.88 / 3.05 fp16, 768x(2*4096) 5.64 / 5.78.
# In ``kprof grid`` on a third H200 (``shipped/grid/``), at 9 points of the classes a family and dtype: no loss;
# silu_mul's best version 0.947-1.018x Liger-Kernel (which rounds silu to the input's dtype before the product, up to 3%
# faster for it: benchmarks/results/grid/h200-mid-sizes/bodies/); the dispatch within 1.02x of kprof's best version at
# 32 of 36, gelu_mul at 384-512 rows of H = 8192 1.024-1.053x triton_one_row (the same launch through the one-row
# kernel; 1.019-1.048x in a fifth H200's race, ``one-row/``). That class now runs the one-row kernel: raced again on a
# sixth H200 (benchmarks/results/grid/h200-one-row-dispatch/race/), µs, the one-row kernel / the tile kernel, gelu_mul
# 384x(2*8192) 5.42 / 5.68 bf16, 5.44 / 5.62 fp16, 512x(2*8192) 6.69 / 6.92, 6.72 / 6.86; silu_mul 5.37 / 5.41,
# 5.57 / 5.50, 6.55 / 6.70, 6.66 / 6.60 (0.97-1.03x over both machines, 1.00x on average). The classes were raced at
# H = 2048, 4096, 6144, 7168 and 8192 on two H200s and at H = 1536, 3072, 5120, 5632 and 6656 on a third
# (benchmarks/results/grid/h200-gated-whole-row/shipped/other-h/); an H100 and fp32 were not.
FAST_MEMORY_MID_ROWS = (
    RowsRule((384, 528), (1025, 2048), 0, 16, False),
    RowsRule((384, 528), (6144, 7168), 0, 16, True),
    RowsRule((384, 528), (7169, 8192), 0, 16, False, one_row=True),
    RowsRule((769, 1056), (2049, 4096), 0, 8, False),
    RowsRule((1024, 1056), (6144, 7168), 0, 16, True),
    RowsRule((256, 1024), (1025, 7168), 1024, 8, True),
    RowsRule((256, 383), (7169, 8192), 1024, 8, True),
)


# On an H200, 1-64 16-bit rows of H 2048-8192 (1-8 rows to 131072), a multiple of 1024: 1024-column tiles of 8 warps,
# H compiled in, where the H100's choice (2048-column tiles of 8 warps, H at run time) ran 1-12% behind. Raced at 2
# places in memory, 3 rounds (benchmarks/results/grid/h200-one-row-dispatch/race/), µs, this / the H100's choice,
# gelu_mul and silu_mul, bf16 and fp16: 1x(2*4096) 1.296-1.352 / 1.377-1.448, 8x(2*8192) 1.456-1.480 / 1.536-1.584,
# 1x(2*2048) 1.256-1.328 / 1.344-1.384, 64x(2*6144) 1.856-1.888 / 1.888-2.016, 64x(2*2048) 1.536-1.568 / 1.552-1.600
# (2048-column tiles of 16 warps, H compiled in, 1.504-1.536 there). At 32 rows of H 4096 (a second H200,
# ``shipped/``): 1.520 / 1.568 gelu_mul, 1.535 / 1.536 silu_mul, bf16. 1-8 rows of H 8193-131072 take it too: there
# (bf16, both families) 1x(2*16384) 1.416-1.424 / 1.496-1.504, 8x(2*16384) 1.520-1.544 / 1.552-1.600, 1x(2*65536)
# 1.456 / 1.520 gelu_mul; on two more H200s, both dtypes (``wide-fp16/``, ``wide-rows/``), 8x(2*65536) 2.080-2.128 /
# 2.112-2.224, 2x(2*65536) 1.504-1.536 / 1.536-1.560, 1x(2*131072) 1.503-1.535 / 1.528-1.552, 8x(2*131072)
# 2.880-2.928 / 2.976-3.088; the fastest config there 0-3% ahead (2048- or 4096-column tiles of 16 warps).
# 9-64 rows of H 8193-16384, a multiple of 2048: 2048-column tiles of 16 warps, H compiled in (``wide-rows/``, both
# families): 64x(2*16384) 2.880-2.912 / 3.008-3.088; then on a fifth H200 (``rows-64/``, bf16) 16x(2*16384)
# 1.648-1.664 / 1.679-1.712, 32x(2*16384) 2.080-2.128 / 2.112-2.176 (4096-column tiles of 16 warps 2.001-2.032 there,
# which :data:`FAST_MEMORY_ONE_WAVE` below now takes).
FAST_MEMORY_FEW_ROWS = (
    RowsRule((1, 64), (2048, 8192), 1024, 8, True),
    RowsRule((1, 8), (8193, 131072), 1024, 8, True),
    RowsRule((9, 64), (8193, 16384), 2048, 16, True),
)
FAST_MEMORY_ROWS = FAST_MEMORY_FEW_ROWS + FAST_MEMORY_MID_ROWS  # an H200's classes, 16-bit, in the order they apply

# On an H200, 16-bit rows of H 12288-16384 (a multiple of 4096) where 4096-column tiles of 16 warps, H compiled in, make
# at most one program an SM and the few-rows class's 2048-column tiles would make more (at H 16384: 17-33 rows on 132
# SMs; at 12288: 23-44). Raced at 2 places in memory, 3 rounds, both families and both 16-bit dtypes on an H200
# (benchmarks/results/grid/h200-few-rows/band/), µs, 4096-column tiles / the class: 16384 at 20-32 rows 1.688-2.024 /
# 1.744-2.208, 0.92-0.99x at all 16 points; 12288 at 32 rows 1.800-1.872 / 1.824-1.904. Past one wave they lose (40-48
# rows: 1.01-1.06x the class), and at 16 rows, where the class's tiles fill one wave, the class led: 1.648-1.664 against
# 1.672-1.728 (``h200-one-row-dispatch/rows-64/``, a second H200, which had 32 rows at 2.001-2.032 / 2.080-2.128).
FAST_MEMORY_ONE_WAVE = RowsRule((17, 64), (12288, 16384), 4096, 16, True)


def one_wave(h: int, n_rows: int, sm_count: int) -> bool:
    """Whether :data:`FAST_MEMORY_ONE_WAVE` takes ``n_rows`` rows of ``h`` outputs on ``sm_count`` SMs: its tiles make
    at most one program an SM, and the 2048-column tiles of the class after it would make more."""
    rule = FAST_MEMORY_ONE_WAVE
    return rule.covers(h, n_rows) and n_rows * h // rule.block_h <= sm_count < n_rows * h // (rule.block_h // 2)


def choose_config(h: int, element_size: int, n_rows: int, sm_count: int = 132, fast_memory: bool = False) -> Config:
    """The launch for ``n_rows`` rows of H outputs (see the measurements above): flat blocks of outputs when
    whole rows would give at least 4 programs per SM, else column blocks of at most 4 KB; on an H200 (``fast_memory``)
    :data:`FAST_MEMORY_ONE_WAVE` where :func:`one_wave`, then the classes of ``FAST_MEMORY_ROWS``, at 16-bit few and
    mid sizes."""
    if fast_memory and element_size == 2:
        if one_wave(h, n_rows, sm_count):
            return FAST_MEMORY_ONE_WAVE.config(h)
        rule = next((r for r in FAST_MEMORY_ROWS if r.covers(h, n_rows)), None)
        if rule is not None:
            return rule.config(h)
    block_h = min(triton.next_power_of_2(h), TUNED_MAX_BLOCK_BYTES // element_size)
    if n_rows * triton.cdiv(h, block_h) >= 4 * sm_count:
        return Config(FLAT_BLOCK, 1, FLAT_WARPS, False, flat=True)
    block_h = min(block_h, TUNED_SMALL_BLOCK_BYTES // element_size)
    warps = 16 if block_h >= 8192 else (8 if block_h >= 2048 else 4)
    while warps > 1 and warps * 32 * 4 > block_h:  # at least 4 elements per thread
        warps //= 2
    return Config(block_h, 1, warps, False)


def launch_tile(kernels: GatedKernels, cfg: Config, x2d: torch.Tensor, y2d: torch.Tensor, align: bool = True) -> None:
    """Launch ``cfg`` through the compiled kernels of ``kernels``: the tile kernel, a ``flat`` config's flat one, or a
    ``one_row`` config's one-row kernel (``align`` False: the tile and flat kernels not told what H and the row stride
    are multiples of; races that show what it gains)."""
    n_rows, h = y2d.shape
    if cfg.one_row:
        args = (x2d, y2d, x2d.stride(0), h)
        kernels.one_row_launcher((cfg, spec_key(args)), (n_rows,), args + (cfg.block_h,), num_warps=cfg.num_warps)
        return
    i64 = n_rows * max(x2d.stride(0), 1) >= 2**31
    aligned = launching.vector_align(x2d.element_size(), h, x2d.stride(0)) if align else 1
    if cfg.flat:
        args = (x2d, y2d, x2d.stride(0), n_rows * h, h)
        kernels.flat_launcher(
            (cfg, i64, aligned, spec_key(args)),
            (triton.cdiv(n_rows * h, cfg.block_h),),
            args + (cfg.block_h, i64, aligned),
            num_warps=cfg.num_warps,
        )
        return
    args = (x2d, y2d, x2d.stride(0), n_rows, h)
    grid = (triton.cdiv(n_rows, cfg.rows), triton.cdiv(h, cfg.block_h))
    constexprs = (cfg.block_h, cfg.rows, cfg.hints, i64, aligned, cfg.cols(h))
    kernels.tile_launcher((cfg, constexprs, spec_key(args)), grid, args + constexprs, num_warps=cfg.num_warps)


# --------------------------------------------------------------------------------- the op's launch plan
PLANS = Plans()  # the gated ops' plans, both families' (keyed by op)


def launch_as_op(kernels: GatedKernels, op: str, x: torch.Tensor) -> torch.Tensor:
    """``op`` on ``x`` as :mod:`kprof.kernels.ops` launches it (and, on a GPU, the family's ``triton_tuned``): the
    checked launch on a signature's first call, then the same configuration's compiled launch from a plan
    (:mod:`kprof.kernels.lib.plans`)."""
    key = (sig(x), op)
    plan = PLANS.get(key)
    if plan is None:
        plan = PLANS.put(key, _plan(kernels, op, x))
    if plan is False:
        return launch_checked(kernels, op, x)
    launch, out_shape = plan
    y = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    launch(x, y)
    return y


def launch_checked(kernels: GatedKernels, op: str, x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``triton_tuned``'s launch through the checks on every call (what the op's plan repeats, and its path where a
    plan cannot describe the inputs)."""
    x2d, y2d, y = check_inputs(op, x, out)
    n_rows, h = y2d.shape
    cfg = choose_config(h, x2d.element_size(), n_rows, launching.sm_count(x2d), launching.fast_memory(x2d))
    launch_tile(kernels, cfg, x2d, y2d)
    return y


def _plan(kernels: GatedKernels, op: str, x: torch.Tensor) -> tuple[Launch, tuple[int, ...]] | bool:
    """The checked path's choice as (Launch, output shape), or False where a plan cannot describe ``x``."""
    validate(op, x)
    xs = row_stride(x)
    if xs is None:
        return False
    h = x.shape[-1] // 2
    n_rows = x.numel() // x.shape[-1]
    cfg = choose_config(h, x.element_size(), n_rows, launching.sm_count(x), launching.fast_memory(x))
    i64 = n_rows * max(xs, 1) >= 2**31
    align = launching.vector_align(x.element_size(), h, xs)
    if cfg.one_row:
        tail = (xs, h, cfg.block_h)
        launch = Launch(
            kernels.one_row_launcher, ("ops", cfg, tail, sig(x)), (n_rows,), tail, {"num_warps": cfg.num_warps}
        )
    elif cfg.flat:
        tail = (xs, n_rows * h, h, cfg.block_h, i64, align)
        launch = Launch(
            kernels.flat_launcher,
            ("ops", cfg, tail, sig(x)),
            (triton.cdiv(n_rows * h, cfg.block_h),),
            tail,
            {"num_warps": cfg.num_warps},
        )
    else:
        tail = (xs, n_rows, h, cfg.block_h, cfg.rows, cfg.hints, i64, align, cfg.cols(h))
        launch = Launch(
            kernels.tile_launcher,
            ("ops", cfg, tail, sig(x)),
            (triton.cdiv(n_rows, cfg.rows), triton.cdiv(h, cfg.block_h)),
            tail,
            {"num_warps": cfg.num_warps},
        )
    return launch, tuple(x.shape[:-1]) + (h,)


# ---------------------------------------------------------------------------------------- registration
def register_versions(family: Family, op: str, kernels: GatedKernels) -> dict[str, Callable[..., torch.Tensor]]:
    """Register the three Triton versions of ``kernels`` with ``family``; returns them by provider name."""

    def one_row_supports(shape: Shape, dtype: str) -> str | None:
        limit = MAX_ONE_ROW_BYTES // element_size(dtype)
        if triton.next_power_of_2(shape[-1] // 2) > limit:
            return f"H = {shape[-1] // 2} {dtype} elements exceeds the one-block limit of {limit}"
        return None

    @family.provider(
        "triton_one_row",
        kind="triton",
        accepts_out=True,
        supports=one_row_supports,
        description="one program per row, whole row in one block (classic pattern)",
        params={
            "BLOCK_H": "columns per block: a power of two >= H (the whole half-row)",
            "num_warps": "warps per program",
        },
    )
    def one_row(x: torch.Tensor, out: torch.Tensor | None = None, config: dict[str, int] | None = None) -> torch.Tensor:
        x2d, y2d, y = check_inputs(op, x, out)
        h = y2d.shape[1]
        meta = launching.whole_row_meta(
            f"{op}_one_row",
            config,
            h,
            x2d.element_size(),
            MAX_ONE_ROW_BYTES,
            block="BLOCK_H",
            row="half-row",
            instead="the tiled or tuned version",
        )
        kernels.one_row[(x2d.shape[0],)](x2d, y2d, x2d.stride(0), h, **meta)
        return y

    @family.provider(
        "triton_tiled",
        kind="triton",
        accepts_out=True,
        description="2-D grid of (row, 1024-column block) programs",
        params={"BLOCK_H": "columns per program (power of two)", "num_warps": "warps per program"},
    )
    def tiled(x: torch.Tensor, out: torch.Tensor | None = None, config: dict[str, int] | None = None) -> torch.Tensor:
        x2d, y2d, y = check_inputs(op, x, out)
        n_rows, h = y2d.shape
        meta = launching.meta_params(
            f"{op}_tiled",
            config,
            {"BLOCK_H": min(TILED_BLOCK_H, triton.next_power_of_2(h)), "num_warps": 4},
            powers_of_two=("BLOCK_H",),
        )
        kernels.tile[(n_rows, triton.cdiv(h, meta["BLOCK_H"]))](
            x2d,
            y2d,
            x2d.stride(0),
            n_rows,
            h,
            ROWS=1,
            HINTS=False,
            I64=n_rows * x2d.stride(0) >= 2**31,
            **meta,
        )
        return y

    @family.provider(
        "triton_tuned",
        kind="triton",
        accepts_out=True,
        description="measured layout per row count (flat blocks of outputs for many rows, column "
        "blocks for few), compiled-kernel launches; on a GPU (no out given) launched as the op launches it",
    )
    def tuned(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        if out is None and getattr(x, "is_cuda", False):
            # the op's launch, so the host time a profile measures for this version is the op's: silu_mul fp16 at
            # 1-512 x 8192 on H200s 35.2-64.4 us a call through the checks, 12.7-14.1 through the op's plan
            # (benchmarks/results/grid/rmsnorm_linear-op-launch-c165dc9/others-46e95e2/)
            return launch_as_op(kernels, op, x)
        return launch_checked(kernels, op, x, out)

    one_row.__name__, tiled.__name__, tuned.__name__ = f"{op}_one_row", f"{op}_tiled", f"{op}_tuned"
    return {"triton_one_row": one_row, "triton_tiled": tiled, "triton_tuned": tuned}

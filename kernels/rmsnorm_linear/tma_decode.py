"""A few rows times a folded weight (``diag(g) W``), one kernel, x's and W's tiles loaded by TMA descriptors: the
split-K kernel's folded loop (``split_k.py``, ``FOLDED``) unsplit, each tile one bulk copy issued by one thread where
``cp.async`` has every thread copy 16 bytes, x's rows past M zero-filled by the TMA unit.

Why: at 1-16 rows x K 3584-5120 x N 4608-5120 on an H200 the prepared object ran the split-K kernel on the fold
(64 x 256 tiles, 4 stages, unsplit: 72-80 programs) at up to 1.09x cuBLAS's product (16x3584x4608), and at K 2048 and
8192 the plain op, at 1.05-1.25x. Raced cold in the same tiles on two H200s (``benchmarks/results/tma-decode/``,
``tma-3/`` and ``tma-w-4/``), this kernel took 0.954-1.029x the prepared object's time at the 52 points of K 3584-5120
(faster at 50), and 0.848-0.884x at the 16 of K 2048 and 8192. What loads x is the difference: W alone by descriptor
and x by ``cp.async`` ran at 0.944-1.000x the split-K kernel. At 5504-6144 columns and 1-4 rows the kernel took up to
1.17x the split-K kernel's time, so it serves only the range raced (:func:`serves`). Sharing the K steps evenly over
all SMs (stream-K, ``race-1/``: 1.12-1.48x the split-K kernel) and narrower column slabs for more programs
(``slabs-2/``) both ran slower than 72 programs of 64 columns: the SMs left idle are not what the product waits on.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.errors import UnsupportedConfig
from kprof.kernels.lib import launching
from kprof.kernels.lib.checks import dense_vector
from kprof.kernels.rmsnorm_linear.family import DEFAULT_EPS, FAMILY, dims
from kprof.kernels.rmsnorm_linear.fused import prepared_version
from kprof.registry import Shape

ROWS = 16  # the one row tile: M <= ROWS
# (BLOCK_N, BLOCK_K, stages), 4 warps: of 28 tiles x stages the fastest at 22 of 28 points (1 and 16 rows x 7 points
# of the range and around it, both dtypes; ``tma-decode/tma-3/``); in ``tma-w-4/`` the fastest of 10 candidates at 52
# of the 56 points of the range, within 3.6% at the others
TILES = (64, 256, 4)
# where the prepared objects take it (``serves``): K (from, to), N (from, to); 16-bit, 1-16 rows, an H200
SERVES = ((2048, 8192), (4608, 5120))


@triton.jit(do_not_specialize=["M"])
def _rmsnorm_linear_tma_decode_kernel(
    # TMA descriptors (block shapes set by the launcher)
    x_desc,  # x [M, K], blocks [BLOCK_M, BLOCK_K]: rows past M and columns past K zero-filled
    w_desc,  # W with g folded in [K, N] (``fused.folded_weight``), blocks [BLOCK_K, BLOCK_N]
    # pointers
    b_ptr,  # [N] bias (unused unless HAS_BIAS)
    y_ptr,  # [M, N] output, contiguous
    # sizes
    M,
    N,
    K,
    # parameters
    eps,
    # meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    IEEE: tl.constexpr,  # fp32 tiles and IEEE products: the interpreter, whose bf16 dot is wrong
):
    n0 = tl.program_id(0) * BLOCK_N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    gram = tl.zeros([BLOCK_M, BLOCK_M], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        xr = x_desc.load([0, k])
        w = w_desc.load([k, n0])
        if IEEE:
            xf = xr.to(tl.float32)
            gram = tl.dot(xf, tl.trans(xf), gram, input_precision="ieee")
            acc = tl.dot(xf, w.to(tl.float32), acc, input_precision="ieee")
        else:  # the squares as the diagonal of x @ x^T on the tensor cores, as the split-K kernel sums them
            gram = tl.dot(xr, tl.trans(xr), gram)
            acc = tl.dot(xr, w, acc)
    diagonal = tl.arange(0, BLOCK_M)[:, None] == tl.arange(0, BLOCK_M)[None, :]
    ss = tl.sum(tl.where(diagonal, gram, 0.0), axis=1)
    rows = tl.arange(0, BLOCK_M)
    cols = n0 + tl.arange(0, BLOCK_N)
    out = acc * tl.rsqrt(ss / K + eps)[:, None]
    if HAS_BIAS:
        out += tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    tl.store(y_ptr + rows[:, None].to(tl.int64) * N + cols[None, :], out.to(y_ptr.dtype.element_ty), mask=mask)


def serves(x2d: torch.Tensor, wf: torch.Tensor) -> bool:
    """Whether the prepared objects take this kernel for ``x2d`` [M, K] times the fold ``wf`` [K, N]: on an H200
    (``launching.fast_memory``), 16-bit, 1-16 rows, K and N in the raced range (``SERVES``), operands a TMA descriptor
    can address (``launching.tma_ready``)."""
    m, k = x2d.shape
    n = wf.shape[1]
    (k_lo, k_hi), (n_lo, n_hi) = SERVES
    return (
        launching.fast_memory(x2d)
        and 1 <= m <= ROWS
        and k_lo <= k <= k_hi
        and n_lo <= n <= n_hi
        and launching.tma_ready(x2d, wf)
    )


def descriptors(x2d: torch.Tensor, wf: torch.Tensor) -> tuple:
    """The kernel's two descriptors in ``TILES``' blocks: x's [ROWS, BLOCK_K], the fold's [BLOCK_K, BLOCK_N]."""
    bn, bk, _ = TILES
    desc = launching.TensorDescriptor.from_tensor
    return desc(x2d, [ROWS, bk]), desc(wf, [bk, bn])


def meta(has_bias: bool) -> dict:
    """The kernel's constexprs and launch options."""
    bn, bk, stages = TILES
    ieee = launching.interpreting()
    options = {} if ieee else {"num_warps": 4, "num_stages": stages}
    return {"BLOCK_M": ROWS, "BLOCK_N": bn, "BLOCK_K": bk, "HAS_BIAS": has_bias, "IEEE": ieee, **options}


def grid(n: int) -> tuple[int]:
    """One program per BLOCK_N columns."""
    return (triton.cdiv(n, TILES[0]),)


def launch_tma_decode(x2d: torch.Tensor, wf: torch.Tensor, b: torch.Tensor | None, y: torch.Tensor, eps: float) -> dict:
    """``rmsnorm(x2d) * g @ W (+ b)`` into ``y`` [M, N] (contiguous) from the fold ``wf = diag(g) W``, for ``x2d``
    [M, K] with M <= ROWS and operands ``launching.tma_ready`` takes. Returns the constexprs and options it ran."""
    m, k = x2d.shape
    n = wf.shape[1]
    if m > ROWS:
        raise ValueError(f"the TMA decode kernel takes at most {ROWS} rows, got {m}: use the split-K kernel")
    if not launching.tma_ready(x2d, wf):
        raise UnsupportedConfig(
            "the TMA decode kernel needs 16-bit x and weight with unit last stride and 16-byte rows, on a GPU with TMA"
            " (Hopper or later) or under the interpreter"
        )
    run = meta(b is not None)
    bias = y if b is None else dense_vector(b)  # the kernel reads the bias at unit stride
    _rmsnorm_linear_tma_decode_kernel[grid(n)](*descriptors(x2d, wf), bias, y, m, n, k, float(eps), **run)
    return run


def _supports(shape: Shape, dtype: str) -> str | None:
    m, k, n = dims(shape)
    if dtype not in ("bf16", "fp16"):
        return f"{dtype}: the kernel's TMA descriptors take 16-bit operands"
    if m > ROWS:
        return f"{m} rows: the kernel takes at most {ROWS} (decode rows)"
    if k % 8 or n % 8:
        return f"K {k}, N {n}: TMA needs 16-byte rows, K and N multiples of 8"
    return None


@FAMILY.provider(
    "triton_tma_decode_prepared",
    kind="triton",
    description="one kernel for a few rows on prepared weights (g folded into W once per input set, before the "
    "timed calls): x and W tiles loaded by TMA descriptors, the squares from the same x tiles, one program per 64 "
    "columns; launched as ops.PreparedRMSNormLinear launches it (a plan per signature after its first call), which "
    "takes it on an H200 at 1-16 rows of K 2048-8192 x N 4608-5120",
    supports=_supports,
)
def rmsnorm_linear_tma_decode_prepared(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = DEFAULT_EPS
) -> torch.Tensor:
    def off_gpu(x2d: torch.Tensor, wf: torch.Tensor) -> torch.Tensor:
        y = torch.empty((x2d.shape[0], wf.shape[1]), dtype=x.dtype, device=x.device)
        launch_tma_decode(x2d, wf, b, y, eps)
        return y

    return prepared_version(x, g, w, b, eps, "tma_decode", off_gpu)


# Public handle for op_plan (the ops API's launch plans).
tma_decode_kernel = _rmsnorm_linear_tma_decode_kernel

"""The tiled kernel, autotuned per (M, N, K) over tile shapes, warps and pipeline stages, programs in
grouped order (GROUP_M row tiles per column tile: a wave of programs shares weight tiles in L2), and the
weight layout chosen by measurement.

Seed 004 asks which weight layout wins. ``"kn"`` reads the weights as given ([d, ff], ff contiguous);
``"nk"`` a transposed copy ([ff, d] stored, d contiguous, as nn.Linear keeps them) made once per weight
and cached. Measured on an H100 in bf16, each autotuned, three interleaved rounds
(benchmarks/results/2026-11-22-h100-catalog/matrix_races.csv): "kn" wins at every shape - 158.9 us
against 171.6 us at 2048x2048x5504, 2442.7 against 2461.8 us at 8192x4096x11008, 73.0 against 76.7 us
at 16x4096x11008 - so the tuned version reads the weights as given.

Where the sizes are multiples of 8 but not all of 16 (``_common.aligned8``: 1000x1000x3000) and there
are 1000+ rows, the tiles move through TMA descriptors instead: the pointer-based kernel took 124.1 us
there on an H100 (cuBLAS's ``x @ [Wg Wu]``: 24.9), the descriptor kernel 42.4 us. Where everything
divides by 16 the pointer kernel stays: it beat the descriptor kernel at 2048x2048x5504 (157.9 against
170.1 us at best) and 8192x4096x11008 (2380 against 2468), plain or persistent
(``benchmarks/results/2026-11-22-h100-rmsnorm-linear-tma/``).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.kernels import _common as common
from kprof.kernels._common import grouped_tile
from kprof.kernels.swiglu.family import FAMILY, check_inputs
from kprof.kernels.swiglu.tiled import _swiglu_tiled_kernel, ieee



@triton.jit
def _swiglu_tma_kernel(
    # TMA descriptors (block shapes set by the launcher)
    x_desc,  # x [M, K], blocks [BLOCK_M, BLOCK_K]
    wg_desc,  # Wg [K, N], blocks [BLOCK_K, BLOCK_N]
    wu_desc,  # Wu [K, N], blocks [BLOCK_K, BLOCK_N]
    y_desc,  # y [M, N], blocks [BLOCK_M, BLOCK_N]
    # sizes
    M,
    N,
    K,
    # meta-parameters
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,  # row tiles per column tile in program order (weight tiles reused from L2)
    IEEE: tl.constexpr,  # the interpreter, whose bf16 dot is wrong: fp32 products there
):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    acc_g = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    acc_u = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for ks in range(tl.cdiv(K, BLOCK_K)):  # out-of-range rows/columns of the edge tiles load as zeros
        a = x_desc.load([off_m, ks * BLOCK_K])
        bg = wg_desc.load([ks * BLOCK_K, off_n])
        bu = wu_desc.load([ks * BLOCK_K, off_n])
        if IEEE:
            acc_g += tl.dot(a.to(tl.float32), bg.to(tl.float32), input_precision="ieee")
            acc_u += tl.dot(a.to(tl.float32), bu.to(tl.float32), input_precision="ieee")
        else:
            acc_g = tl.dot(a, bg, acc_g)
            acc_u = tl.dot(a, bu, acc_u)
    y_desc.store([off_m, off_n], (acc_g * tl.sigmoid(acc_g) * acc_u).to(y_desc.dtype))  # clipped at the edges


# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, warps, stages): the fastest of 8 tile shapes at 1000x1000x3000 (H100)
TMA_CONFIG = (128, 128, 64, 8, 8, 4)
TMA_INTERPRETER_CONFIG = (16, 32, 32, 2, 4, 2)
TMA_MIN_ROWS = 1000


def use_tma(x2d: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, y: torch.Tensor) -> bool:
    """Descriptors where the pointer kernel is slowest: sizes multiples of 8 but not all of 16."""
    m, k = x2d.shape
    return ((m >= TMA_MIN_ROWS or common.interpreting())
            and common.aligned8(k, wg.shape[1], x2d.stride(0), wg.stride(0)) and common.tma_ready(x2d, wg, wu, y))


def launch_tma(x2d: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, y: torch.Tensor) -> None:
    m, k = x2d.shape
    n = wg.shape[1]
    bm, bn, bk, gm, warps, stages = TMA_INTERPRETER_CONFIG if common.interpreting() else TMA_CONFIG
    _swiglu_tma_kernel[(triton.cdiv(m, bm) * triton.cdiv(n, bn),)](
        common.TensorDescriptor.from_tensor(x2d, [bm, bk]), common.TensorDescriptor.from_tensor(wg, [bk, bn]),
        common.TensorDescriptor.from_tensor(wu, [bk, bn]), common.TensorDescriptor.from_tensor(y, [bm, bn]), m, n, k,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm, IEEE=common.interpreting(),
        num_warps=warps, num_stages=stages,
    )


_config = common.tile_config
CONFIGS = [
    _config(128, 128, 64, 8, 3),
    _config(128, 128, 64, 8, 4),
    _config(128, 64, 64, 4, 4),
    _config(128, 64, 64, 8, 4),
    _config(64, 128, 64, 4, 4),
    _config(256, 64, 64, 8, 3),
    _config(128, 128, 32, 8, 4),
    # the sweep's winner at 2048x2048x5504 (H100): 5 stages fit once BLOCK_K is 32, 1.7% ahead of 4 stages
    # (benchmarks/results/2026-11-22-h100-sweeps/swiglu_tiled_guide.md)
    _config(128, 128, 32, 8, 5),
    _config(64, 64, 64, 4, 4),
    _config(16, 128, 128, 4, 4),  # decode: few tokens, the weights are what moves
    _config(32, 64, 128, 4, 5),
]
INTERPRETER_CONFIG = {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 8}

_swiglu_autotuned = triton.autotune(configs=CONFIGS, key=["M", "N", "K", "stride_wk"])(_swiglu_tiled_kernel)

WEIGHT_LAYOUT = "kn"
_transposed: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}


def weights_in_layout(w_gate: torch.Tensor, w_up: torch.Tensor, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(Wg, Wu)`` as [K, N] views whose storage is ``layout``: "kn" as given (made contiguous), "nk" a
    cached transposed copy (stored [N, K]), rebuilt when either weight changes."""
    if layout == "kn":
        return w_gate.contiguous(), w_up.contiguous()
    key = common.weight_cache_key(w_gate, w_up)
    pair = _transposed.get(key)
    if pair is None:
        if len(_transposed) >= 8:
            _transposed.clear()
        pair = _transposed[key] = (w_gate.t().contiguous().t(), w_up.t().contiguous().t())
    return pair


def launch_tuned(x2d: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, y: torch.Tensor) -> None:
    m, k = x2d.shape
    n = wg.shape[1]
    common.launch_autotuned(
        _swiglu_autotuned,
        lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),),
        x2d, wg, wu, y, m, n, k, x2d.stride(0), x2d.stride(1), wg.stride(0), wg.stride(1),
        IEEE=ieee(x2d), ALIGNED=common.aligned8(k, n, x2d.stride(0), wg.stride(0)) and x2d.stride(1) == 1
        and wg.stride(1) == 1, interpreter_config=INTERPRETER_CONFIG,
    )


def best_config() -> triton.Config | None:
    """The config the autotuner chose for the last shape it tuned (None before the first call)."""
    return getattr(_swiglu_autotuned, "best_config", None)


@FAMILY.provider(
    "triton_tuned",
    kind="triton",
    description="tiled product autotuned per shape, grouped program order, measured weight layout; TMA tiles "
                "where sizes are multiples of 8 but not of 16",
)
def swiglu_tuned(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    x2d, ff = check_inputs(x, w_gate, w_up)
    wg, wu = weights_in_layout(w_gate, w_up, WEIGHT_LAYOUT)
    y = torch.empty((x2d.shape[0], ff), dtype=x.dtype, device=x.device)
    if use_tma(x2d, wg, wu, y):
        launch_tma(x2d, wg, wu, y)
    else:
        launch_tuned(x2d, wg, wu, y)
    return y.view(*x.shape[:-1], ff)

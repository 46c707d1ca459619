"""The tiled kernel, autotuned per (M, N, K) over tile shapes, warps and pipeline stages, programs in
grouped order (GROUP_M row tiles per column tile: a wave of programs shares weight tiles in L2), and the
weight layout chosen by measurement.

Seed 004 asks which weight layout wins. ``"kn"`` reads the weights as given ([d, ff], ff contiguous);
``"nk"`` a transposed copy ([ff, d] stored, d contiguous, as nn.Linear keeps them) made once per weight
and cached. Measured on an H100 in bf16, each autotuned, three interleaved rounds
(benchmarks/results/2026-11-22-h100-catalog/matrix_races.csv): "kn" wins at every shape - 158.9 us
against 171.6 us at 2048x2048x5504, 2442.7 against 2461.8 us at 8192x4096x11008, 73.0 against 76.7 us
at 16x4096x11008 - so the tuned version reads the weights as given.
"""

from __future__ import annotations

import torch
import triton

from kprof.kernels import _common as common
from kprof.kernels.swiglu.family import FAMILY, check_inputs
from kprof.kernels.swiglu.tiled import _swiglu_tiled_kernel, ieee


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
    description="tiled product autotuned per shape, grouped program order, measured weight layout",
)
def swiglu_tuned(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    x2d, ff = check_inputs(x, w_gate, w_up)
    wg, wu = weights_in_layout(w_gate, w_up, WEIGHT_LAYOUT)
    y = torch.empty((x2d.shape[0], ff), dtype=x.dtype, device=x.device)
    launch_tuned(x2d, wg, wu, y)
    return y.view(*x.shape[:-1], ff)

"""The swiglu family: inputs, oracle, bytes and FLOPs models, tolerances, shared input checks."""

from __future__ import annotations

from pathlib import Path

import torch

from kprof.dtypes import element_size, torch_dtype
from kprof.kernels.lib import checks
from kprof.kernels.swiglu.reference import swiglu_oracle
from kprof.registry import Family, Shape

OP = "swiglu"


def dims(shape: Shape) -> tuple[int, int, int]:
    """``(*batch, K, N)`` -> ``(M, K, N)``."""
    return checks.matrix_dims(OP, shape, "2048x2048x5504")


def make_inputs(shape: Shape, dtype: str, device: str | torch.device, seed: int) -> dict:
    """x ~ N(0, 1) and weights ~ N(0, 1/d), so both projections are O(1) whatever d is."""
    gen = torch.Generator(device=device).manual_seed(seed)
    d, ff = shape[-2], shape[-1]
    dt = torch_dtype(dtype)
    scale = d**-0.5
    return {
        "x": torch.randn((*shape[:-2], d), generator=gen, device=device).to(dt),
        "w_gate": (scale * torch.randn((d, ff), generator=gen, device=device)).to(dt),
        "w_up": (scale * torch.randn((d, ff), generator=gen, device=device)).to(dt),
    }


def bytes_model(shape: Shape, dtype: str) -> int:
    """x, both weights and y, each moved once."""
    m, d, ff = dims(shape)
    return (m * d + 2 * d * ff + m * ff) * element_size(dtype)


def flops_model(shape: Shape, dtype: str) -> int:
    """Two products of 2*M*d*ff (the SiLU*mul epilogue is noise)."""
    m, d, ff = dims(shape)
    return 4 * m * d * ff


def validate(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, *, triton: bool = True) -> None:
    """Raise ``ValueError`` saying what is wrong (``triton``: the inputs must suit a Triton kernel)."""
    checks.check_float(OP, "x", x)
    checks.check_float(OP, "w_gate", w_gate, like=x)
    checks.check_float(OP, "w_up", w_up, like=x)
    if w_gate.dim() != 2 or w_gate.shape[0] != x.shape[-1]:
        raise ValueError(f"{OP}: w_gate has shape {tuple(w_gate.shape)}; expected [d, ff] with d = {x.shape[-1]}")
    checks.check_shape(OP, "w_up", w_up, w_gate.shape)
    if triton:
        checks.check_triton_device(OP, x)


def check_inputs(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Validate for a kernel; return ``(x2d, ff)``."""
    validate(x, w_gate, w_up)
    return checks.rows(x), w_gate.shape[1]


FAMILY = Family(
    "swiglu",
    description="silu(x @ Wg) * (x @ Wu), weights [d, ff]",
    package_dir=Path(__file__).parent,
    make_inputs=make_inputs,
    oracle=swiglu_oracle,
    bytes_model=bytes_model,
    flops_model=flops_model,
    # fp32 accumulation over d, one rounding of y; eager PyTorch rounds x@Wg, silu and x@Wu each
    # (bf16 allows 1.6e-2: Triton's CPU interpreter truncates fp32 -> bf16 instead of rounding, which
    # doubles the rounding error of tiny shapes; on a GPU bf16 errors stay near 3e-3)
    tolerances={"fp32": 1e-5, "bf16": 1.6e-2, "fp16": 2e-3},
    baseline="torch_eager",
    row_inputs=("x",),
)

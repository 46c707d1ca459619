"""The add_rmsnorm family: inputs, oracle, bytes and FLOPs models, tolerances, and the input checks
every version (and ``kprof.kernels.ops.fused_add_rms_norm``) shares."""

from __future__ import annotations

from pathlib import Path

import torch

from kprof.dtypes import element_size, torch_dtype
from kprof.kernels.add_rmsnorm.reference import add_rmsnorm_oracle
from kprof.kernels.lib import checks
from kprof.registry import Family, Shape

DEFAULT_EPS = 1e-6
OP = "add_rmsnorm"


def make_inputs(shape: Shape, dtype: str, device: str | torch.device, seed: int) -> dict:
    """x and residual with different scales per row (so a row mix-up fails), weight around 1."""
    gen = torch.Generator(device=device).manual_seed(seed)
    n = shape[-1]
    rows = tuple(shape[:-1]) + (1,)
    scale = torch.exp(torch.empty(rows, device=device).uniform_(-3.0, 3.0, generator=gen))
    x = torch.randn(shape, generator=gen, device=device) * scale
    residual = torch.randn(shape, generator=gen, device=device) * scale * 2.0
    weight = 1.0 + 0.5 * torch.randn(n, generator=gen, device=device)
    dt = torch_dtype(dtype)
    return {"x": x.to(dt), "residual": residual.to(dt), "weight": weight.to(dt), "eps": DEFAULT_EPS}


def make_outputs(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple:
    return torch.empty_like(x), torch.empty_like(x)


def bytes_model(shape: Shape, dtype: str) -> int:
    """Read x and residual, write y and h: four row passes, plus the weight once."""
    n = shape[-1]
    return (4 * checks.numel_rows(shape) * n + n) * element_size(dtype)


def flops_model(shape: Shape, dtype: str) -> int:
    """Per element: add, square, accumulate, scale by 1/RMS, scale by weight."""
    return 5 * checks.numel_rows(shape) * shape[-1]


def validate(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, *, triton: bool = True) -> None:
    """Raise ``ValueError`` saying what is wrong (``triton``: the inputs must suit a Triton kernel)."""
    checks.check_float(OP, "x", x)
    checks.check_float(OP, "residual", residual, like=x)
    checks.check_float(OP, "weight", weight, like=x)
    checks.check_shape(OP, "residual", residual, x.shape)
    checks.check_shape(OP, "weight", weight, (x.shape[-1],))
    if triton:
        checks.check_triton_device(OP, x)


def check_inputs(
    x: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    out: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Validate for a kernel; return ``(x2d, r2d, weight, y, h)``.

    ``y`` and ``h`` are new contiguous outputs in x's shape, or the two tensors of ``out`` checked."""
    validate(x, residual, weight)
    if out is not None and (not isinstance(out, (tuple, list)) or len(out) != 2):
        raise ValueError(f"{OP}: out must be a pair (y, h) of tensors shaped like x")
    y = checks.output(OP, None if out is None else out[0], x.shape, x, "out[0] (y)")
    h = checks.output(OP, None if out is None else out[1], x.shape, x, "out[1] (h)")
    return checks.rows(x), checks.rows(residual), weight.contiguous(), y, h


FAMILY = Family(
    "add_rmsnorm",
    description="h = x + residual; y = RMSNorm(h) * weight, returning (y, h)",
    package_dir=Path(__file__).parent,
    make_inputs=make_inputs,
    make_outputs=make_outputs,
    oracle=add_rmsnorm_oracle,
    bytes_model=bytes_model,
    flops_model=flops_model,
    # ||out - ref|| / ||ref|| over (y, h): the sum rounded to the input dtype before the norm (as every
    # version and the eager code do) adds one rounding to y's error: ~2e-3 in bf16, ~3e-4 in fp16.
    tolerances={"fp32": 1e-5, "bf16": 8e-3, "fp16": 1e-3},
    baseline="torch_eager",
    row_inputs=("x", "residual"),
)

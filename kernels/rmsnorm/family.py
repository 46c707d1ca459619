"""The rmsnorm family: inputs, oracle, bytes and FLOPs models, tolerances, and shared input checks."""

from __future__ import annotations

from pathlib import Path

import torch

from kprof.dtypes import element_size, torch_dtype
from kprof.kernels.lib import checks
from kprof.kernels.rmsnorm.reference import rmsnorm_oracle
from kprof.registry import Family, Shape

DEFAULT_EPS = 1e-6
OP = "rmsnorm"


def make_inputs(shape: Shape, dtype: str, device: str | torch.device, seed: int) -> dict:
    """Seeded random rows with a different scale per row, and a weight around 1 (never zeros).

    Why the per-row scale: with plain ``randn`` every row of 4096 has an RMS within ~2% of 1, so a
    kernel that applied the wrong row's 1/RMS would still pass a bf16 tolerance. Scales spread over
    [0.05, 20] make such mix-ups fail loudly.
    """
    gen = torch.Generator(device=device).manual_seed(seed)
    n = shape[-1]
    x = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
    rows = x.shape[:-1] + (1,)
    scale = torch.exp(torch.empty(rows, device=device).uniform_(-3.0, 3.0, generator=gen))
    weight = 1.0 + 0.5 * torch.randn(n, generator=gen, device=device, dtype=torch.float32)
    dt = torch_dtype(dtype)
    return {"x": (x * scale).to(dt), "weight": weight.to(dt), "eps": DEFAULT_EPS}


def make_outputs(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return torch.empty_like(x)


def bytes_model(shape: Shape, dtype: str) -> int:
    """Read x once, write y once, read the weight once."""
    n = shape[-1]
    rows = 1
    for d in shape[:-1]:
        rows *= d
    return (2 * rows * n + n) * element_size(dtype)


def flops_model(shape: Shape, dtype: str) -> int:
    """Per element: square, accumulate, scale by 1/RMS, scale by weight (the per-row rsqrt is noise)."""
    total = 1
    for d in shape:
        total *= d
    return 4 * total


def validate(x: torch.Tensor, weight: torch.Tensor, *, triton: bool = True) -> None:
    """Raise ``ValueError`` saying what is wrong (``triton``: the inputs must suit a Triton kernel)."""
    if not isinstance(x, torch.Tensor) or not isinstance(weight, torch.Tensor):
        raise ValueError(f"{OP}: x and weight must be torch tensors")
    checks.check_float(OP, "x", x)
    if weight.dtype != x.dtype:  # before the shape: a wrong dtype is the likelier mistake
        raise ValueError(f"{OP}: weight dtype {weight.dtype} differs from x dtype {x.dtype}; cast one of them")
    n = x.shape[-1]
    if weight.dim() != 1 or weight.shape[0] != n:
        raise ValueError(f"{OP}: weight has shape {tuple(weight.shape)}; expected ({n},) to match x's last dim")
    if triton:
        checks.check_triton_device(OP, x)
    checks.check_float(OP, "weight", weight, like=x)


def check_inputs(
    x: torch.Tensor, weight: torch.Tensor, out: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Validate for a kernel; return ``(x2d, weight, y2d, y)``.

    ``x2d`` is ``x`` seen as ``[rows, N]`` with a row stride (no copy when the leading dimensions
    collapse, as for a slice ``buf[..., :N]`` of a wider buffer); ``y`` is the output in ``x``'s shape.
    """
    validate(x, weight)
    y = checks.output(OP, out, x.shape, x)
    return checks.rows(x), weight.contiguous(), y.view(-1, x.shape[-1]), y


FAMILY = Family(
    "rmsnorm",
    description="RMSNorm over the last dimension: x / sqrt(mean(x^2) + eps) * weight",
    package_dir=Path(__file__).parent,
    make_inputs=make_inputs,
    make_outputs=make_outputs,
    oracle=rmsnorm_oracle,
    bytes_model=bytes_model,
    flops_model=flops_model,
    # ||out - ref|| / ||ref||: fp32 arithmetic lands near 1e-7; one rounding to bf16 (8 mantissa bits)
    # gives ~2e-3, to fp16 (11 bits) ~3e-4.
    tolerances={"fp32": 1e-5, "bf16": 8e-3, "fp16": 1e-3},
    baseline="torch_eager",
    row_inputs=("x",),
)

"""Input checks and row flattening shared by the rmsnorm Triton versions."""

from __future__ import annotations

import os

import torch

_FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def validate(x: torch.Tensor, weight: torch.Tensor, *, triton: bool = True) -> None:
    """Raise ``ValueError`` saying what is wrong (``triton``: the inputs must suit a Triton kernel)."""
    if not isinstance(x, torch.Tensor) or not isinstance(weight, torch.Tensor):
        raise ValueError("rmsnorm: x and weight must be torch tensors")
    if x.dtype not in _FLOAT_DTYPES:
        raise ValueError(f"rmsnorm: x has dtype {x.dtype}; supported dtypes are float32, bfloat16, float16")
    if weight.dtype != x.dtype:
        raise ValueError(f"rmsnorm: weight dtype {weight.dtype} differs from x dtype {x.dtype}; cast one of them")
    if x.dim() == 0 or x.numel() == 0:
        raise ValueError(f"rmsnorm: x is empty (shape {tuple(x.shape)}); give at least one row of one element")
    n = x.shape[-1]
    if weight.dim() != 1 or weight.shape[0] != n:
        raise ValueError(f"rmsnorm: weight has shape {tuple(weight.shape)}; expected ({n},) to match x's last dim")
    if triton and not x.is_cuda and not interpreting():
        raise ValueError(
            f"rmsnorm: x is on {x.device}; Triton kernels need a CUDA tensor "
            "(or set TRITON_INTERPRET=1 to run them on the CPU in Triton's interpreter)"
        )
    if weight.device != x.device:
        raise ValueError(f"rmsnorm: weight is on {weight.device} but x is on {x.device}; move them to one device")


def check_and_flatten(
    x: torch.Tensor, weight: torch.Tensor, out: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Validate inputs for a kernel and return ``(x2d, weight, y2d, y)``.

    ``x2d`` is ``x`` seen as ``[rows, N]`` with a row stride (no copy when the leading dimensions
    collapse, as for a slice ``buf[..., :N]`` of a wider buffer); ``y`` is the output in ``x``'s shape.
    """
    validate(x, weight)
    n = x.shape[-1]
    if x.stride(-1) != 1:
        x = x.contiguous()  # the kernels read rows with unit stride; a strided last dim needs a copy
    if weight.stride(0) != 1:
        weight = weight.contiguous()
    try:
        x2d = x.view(-1, n)
    except RuntimeError:  # leading dimensions do not collapse into one row stride
        x2d = x.reshape(-1, n)
    if out is None:
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    else:
        if out.shape != x.shape or out.dtype != x.dtype or out.device != x.device:
            raise ValueError(
                f"rmsnorm: out is {tuple(out.shape)} {out.dtype} on {out.device}; "
                f"expected {tuple(x.shape)} {x.dtype} on {x.device}"
            )
        if not out.is_contiguous():
            raise ValueError("rmsnorm: out must be contiguous")
        y = out
    return x2d, weight, y.view(-1, n), y

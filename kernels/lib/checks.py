"""The input-checking API every kernel family uses (not a family itself).

One contract for every family, in its ``family.py``:

* ``validate(<inputs>, *, triton=True) -> None`` raises ``ValueError`` (``<op>: <what is wrong>; <what to
  do>``) for inputs the op cannot take; ``triton=True`` also asks that they suit a Triton kernel (a CUDA
  tensor, or Triton's interpreter for CPU tensors). The eager paths of :mod:`kprof.kernels.ops` call it
  with ``triton=False``, so both paths reject the same inputs with the same messages.
* ``check_inputs(<inputs>[, out]) -> tuple`` validates for a Triton kernel and returns what the kernel
  launches on (row views, checked or new outputs, sizes). Every Triton version calls it first.

Both are built from the checks here, which keep the wording of the errors in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import torch

from kprof.runtime import interpreting

FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
T = TypeVar("T")


def check_float(op: str, name: str, t: object, *, like: torch.Tensor | None = None) -> torch.Tensor:
    """``t`` must be a non-empty float32/bf16/fp16 tensor (of ``like``'s dtype and device when given)."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{op}: {name} must be a torch tensor, got {type(t).__name__}")
    if t.dtype not in FLOAT_DTYPES:
        raise ValueError(f"{op}: {name} has dtype {t.dtype}; supported dtypes are float32, bfloat16, float16")
    if t.dim() == 0 or t.numel() == 0:
        raise ValueError(f"{op}: {name} is empty (shape {tuple(t.shape)}); give at least one element per dim")
    if like is not None:
        if t.dtype != like.dtype:
            raise ValueError(f"{op}: {name} dtype {t.dtype} differs from the input's {like.dtype}; cast one of them")
        if t.device != like.device:
            raise ValueError(
                f"{op}: {name} is on {t.device} but the input is on {like.device}; move them to one device"
            )
    return t


def check_shape(op: str, name: str, t: torch.Tensor, expected: Sequence[int]) -> None:
    if tuple(t.shape) != tuple(expected):
        raise ValueError(f"{op}: {name} has shape {tuple(t.shape)}; expected {tuple(expected)}")


def check_triton_device(op: str, t: torch.Tensor) -> None:
    """Triton kernels need CUDA tensors, or the interpreter for CPU tensors."""
    if not t.is_cuda and not interpreting():
        raise ValueError(
            f"{op}: the input is on {t.device}; Triton kernels need a CUDA tensor "
            "(or set TRITON_INTERPRET=1 to run them on the CPU in Triton's interpreter)"
        )


def rows(t: torch.Tensor) -> torch.Tensor:
    """``t`` seen as ``[rows, last]`` with unit column stride: a view when the leading dims collapse
    into one row stride (a slice of a wider buffer does), a copy otherwise."""
    if t.stride(-1) != 1:
        t = t.contiguous()
    try:
        return t.view(-1, t.shape[-1])
    except RuntimeError:  # leading dimensions do not collapse into one row stride
        return t.reshape(-1, t.shape[-1])


def output(
    op: str, out: torch.Tensor | None, shape: Sequence[int], like: torch.Tensor, name: str = "out"
) -> torch.Tensor:
    """A new contiguous output of ``shape`` (``like``'s dtype and device), or ``out`` checked against it."""
    if out is None:
        return torch.empty(tuple(shape), dtype=like.dtype, device=like.device)
    if not isinstance(out, torch.Tensor):
        raise ValueError(f"{op}: {name} must be a torch tensor, got {type(out).__name__}")
    if tuple(out.shape) != tuple(shape) or out.dtype != like.dtype or out.device != like.device:
        raise ValueError(
            f"{op}: {name} is {tuple(out.shape)} {out.dtype} on {out.device}; "
            f"expected {tuple(shape)} {like.dtype} on {like.device}"
        )
    if not out.is_contiguous():
        raise ValueError(f"{op}: {name} must be contiguous")
    return out


def matrix_dims(op: str, shape: Sequence[int], example: str) -> tuple[int, int, int]:
    """``(*batch, K, N)`` -> ``(M, K, N)`` with M the product of the batch dimensions."""
    if len(shape) < 3:
        raise ValueError(f"{op} shapes are (*batch, K, N), e.g. {example}; got {tuple(shape)}")
    m = 1
    for s in shape[:-2]:
        m *= s
    return m, shape[-2], shape[-1]


def numel_rows(shape: Sequence[int]) -> int:
    """Product of all but the last dimension (the number of rows of a row-wise op)."""
    n = 1
    for d in shape[:-1]:
        n *= d
    return n


def dense_vector(v: T) -> T:
    """A vector input as the Triton kernels read it: they load element i at ``ptr + i`` (unit stride), so a strided one
    (a bias ``b_all[::2]``, a column ``state[:, 0]`` of a table) is copied, else they would read other elements; any
    other value (None, a contiguous tensor) as it is. ``is_contiguous``: 0.09 us a call (CPU)."""
    if isinstance(v, torch.Tensor) and not v.is_contiguous():
        return v.contiguous()
    return v

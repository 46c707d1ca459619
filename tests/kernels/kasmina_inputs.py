"""kasmina inputs for the kernel tests, and their error measure: x shifted to a mean far from zero (where a sum of
squares loses the variance unless it is shifted, and a variance taken carelessly cancels), every lifecycle state
present, and the relative error of an output against the float64 oracle."""

from __future__ import annotations

import torch

from kprof.kernels import discover

F = discover()


def rel(a: torch.Tensor, ref: torch.Tensor) -> float:
    """``a``'s relative error (norm of the difference over the reference's norm) against the oracle's ``ref``."""
    return ((a.double() - ref).norm() / ref.norm()).item()


def inputs(shape: tuple[int, ...], dtype: str, device: str, offset: float = 3.0, seed: int | None = None) -> dict:
    """The family's inputs at ``shape`` (seed ``sum(shape)`` unless given), x shifted by ``offset``, the seeds'
    states dormant, active, grafting in turn."""
    inp = F["kasmina"].make_inputs(shape, dtype, device, seed=sum(shape) if seed is None else seed)
    inp["x"] = inp["x"] + offset
    inp["lifecycle"] = torch.arange(shape[-2], dtype=torch.int8, device=device) % 3
    return inp

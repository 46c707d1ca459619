"""The kasmina family: inputs (activations, per-seed state, blueprint registry), oracle, models,
tolerances, and the input checks shared by every version and ``kprof.kernels.ops.kasmina_forward``.

Shapes are ``(*batch, S, C)``: ``x`` is ``[*batch, S*C]``."""

from __future__ import annotations

from pathlib import Path

import torch

from kprof.dtypes import element_size, torch_dtype
from kprof.kernels.kasmina.reference import kasmina_oracle
from kprof.kernels.lib import checks
from kprof.registry import Family, Shape

NUM_BLUEPRINTS = 8
OP = "kasmina"


def lifecycle_counts(n_seeds: int) -> tuple[int, int, int]:
    """(dormant, active, grafting) seeds in the factory's inputs: a third each, rounding to active."""
    dormant = grafting = n_seeds // 3
    return dormant, n_seeds - dormant - grafting, grafting


def make_inputs(shape: Shape, dtype: str, device: str | torch.device, seed: int) -> dict:
    if len(shape) < 3:
        raise ValueError(f"kasmina shapes are (*batch, S, C), e.g. 64x1000x64; got {shape}")
    *batch, n_seeds, c = shape
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = torch_dtype(dtype)
    x = torch.randn((*batch, n_seeds * c), generator=gen, device=device)
    dormant, active, grafting = lifecycle_counts(n_seeds)
    states = torch.tensor([0] * dormant + [1] * active + [2] * grafting, dtype=torch.int8)
    order = torch.randperm(n_seeds, generator=torch.Generator().manual_seed(seed))
    return {
        "x": x.to(dt),
        "lifecycle": states[order].to(device),
        "blueprint_id": torch.randint(0, NUM_BLUEPRINTS, (n_seeds,), generator=gen, device=device, dtype=torch.int32),
        "alpha": torch.empty(n_seeds, device=device).uniform_(0.05, 0.95, generator=gen),
        # blueprints near identity-scale (1/sqrt(C)), biases well away from zero
        "weights": (torch.randn((NUM_BLUEPRINTS, c, c), generator=gen, device=device) / c**0.5).to(dt),
        "bias": (0.5 + torch.randn((NUM_BLUEPRINTS, c), generator=gen, device=device)).to(dt),
    }


def bytes_model(shape: Shape, dtype: str) -> int:
    """x read and y written once, the blueprint registry once, the state and telemetry once."""
    *batch, n_seeds, c = shape
    rows = 1
    for d in batch:
        rows *= d
    es = element_size(dtype)
    return (2 * rows * n_seeds * c + NUM_BLUEPRINTS * (c * c + c)) * es + n_seeds * (1 + 4 + 4 + 8)


def flops_model(shape: Shape, dtype: str) -> int:
    """The blueprint products of the seeds that need one (active and grafting) plus the blend."""
    *batch, n_seeds, c = shape
    rows = 1
    for d in batch:
        rows *= d
    dormant, active, grafting = lifecycle_counts(n_seeds)
    return 2 * rows * c * c * (active + grafting) + 3 * rows * c * grafting


def validate(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
    *,
    triton: bool = True,
) -> None:
    """Raise ``ValueError`` saying what is wrong with any tensor (``triton``: they must suit a Triton kernel).

    Blueprint ids are not range-checked here: that needs their values on the host, a device-to-host
    copy the layer must not make (``kprof.kernels.ops.kasmina_forward(check_ids=True)`` does it). The
    Triton kernels clamp an out-of-range id for their loads and flag the seed (its outputs NaN), as the
    eager path of ``kprof.kernels.ops`` does; the torch baselines index with the ids as given."""
    checks.check_float(OP, "x", x)
    checks.check_float(OP, "weights", weights, like=x)
    checks.check_float(OP, "bias", bias, like=x)
    if weights.dim() != 3 or weights.shape[1] != weights.shape[2]:
        raise ValueError(f"{OP}: weights has shape {tuple(weights.shape)}; expected [NB, C, C]")
    nb, c = weights.shape[0], weights.shape[2]
    checks.check_shape(OP, "bias", bias, (nb, c))
    for name, t, dtype in (
        ("lifecycle", lifecycle, torch.int8),
        ("blueprint_id", blueprint_id, torch.int32),
        ("alpha", alpha, torch.float32),
    ):
        if not isinstance(t, torch.Tensor) or t.dtype != dtype or t.dim() != 1:
            got = f"{t.dtype} {tuple(t.shape)}" if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{OP}: {name} must be a 1-D {dtype} tensor with one entry per seed, got {got}")
        if t.device != x.device:
            raise ValueError(f"{OP}: {name} is on {t.device} but x is on {x.device}; keep the state on x's device")
    n_seeds = lifecycle.shape[0]
    if blueprint_id.shape[0] != n_seeds or alpha.shape[0] != n_seeds:
        raise ValueError(
            f"{OP}: lifecycle, blueprint_id and alpha must have one entry per seed "
            f"(got {n_seeds}, {blueprint_id.shape[0]}, {alpha.shape[0]})"
        )
    if x.shape[-1] != n_seeds * c:
        raise ValueError(f"{OP}: x's last dimension is {x.shape[-1]}; expected S*C = {n_seeds}*{c} = {n_seeds * c}")
    if triton:
        checks.check_triton_device(OP, x)


def check_inputs(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
) -> tuple[int, int]:
    """Validate for a kernel; return ``(S, C)``."""
    validate(x, lifecycle, blueprint_id, alpha, weights, bias)
    return lifecycle.shape[0], weights.shape[2]


FAMILY = Family(
    "kasmina",
    description="seed-lifecycle layer: per-chunk identity / blueprint / graft, with per-seed telemetry",
    package_dir=Path(__file__).parent,
    make_inputs=make_inputs,
    oracle=kasmina_oracle,
    bytes_model=bytes_model,
    flops_model=flops_model,
    # per output (y, telemetry): y rounds once to the storage dtype; bf16/fp16 products accumulate in fp32
    tolerances={"fp32": 1e-5, "bf16": 1e-2, "fp16": 2e-3},
    baseline="torch_loop",
)

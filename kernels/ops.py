"""Drop-in ops for model code (the integration pattern of vLLM-style layers): one function per kernel family.

Each op runs the best Triton version of its family when ``KPROF_USE_TRITON=1`` (opt-in) and the input
is on a CUDA GPU (or Triton's CPU interpreter is on), else the eager PyTorch code. Both paths validate
inputs with the same family check, so a bad input raises the same ``ValueError`` either way, and
compute the same function (fp32 inside, output in the input dtype).

The Triton version each op uses (``BEST``) is the fastest one measured on an H100
(benchmarks/results/catalog/).
"""

from __future__ import annotations

import os

import torch

from kprof.kernels.lib import launching

BEST: dict[str, str] = {
    "rms_norm": "rmsnorm/triton_tuned",
    "fused_add_rms_norm": "add_rmsnorm/triton_tuned",
    "silu_and_mul": "silu_mul/triton_tuned",
    "gelu_tanh_and_mul": "gelu_mul/triton_tuned",
    "swiglu": "swiglu/triton_tuned",
    # rstd first, then one product that applies it: 118.1 us at 2048x4096x4096 and 433.9 at 8192 rows on an
    # H100 (bf16), ahead of norm-then-product (120.6, 448.1) and the one-kernel fused version (178.0, 652.4);
    # at 8 rows norm-then-product is 2 us faster (26.7 against 28.7): kernels/rmsnorm_linear/
    "rms_norm_linear": "rmsnorm_linear/triton_rstd_epilogue",
    "kasmina_forward": "kasmina/triton_telemetry",
}


def triton_enabled(x: object) -> bool:
    """Whether an op on ``x`` takes its Triton path: ``KPROF_USE_TRITON=1`` and x on a GPU (or interpreter)."""
    if os.environ.get("KPROF_USE_TRITON", "0") != "1" or not isinstance(x, torch.Tensor):
        return False
    return x.is_cuda or launching.interpreting()


def _triton(op: str):
    from kprof.registry import get_family

    family, provider = BEST[op].split("/")
    return get_family(family).get_provider(provider).fn


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """``x / sqrt(mean(x**2, -1) + eps) * weight``."""
    if triton_enabled(x):
        return _triton("rms_norm")(x, weight, eps)
    from kprof.kernels.rmsnorm.family import validate
    from kprof.kernels.rmsnorm.reference import rmsnorm_eager

    validate(x, weight, triton=False)
    return rmsnorm_eager(x, weight, eps)


def fused_add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """``h = x + residual; (rms_norm(h, weight), h)``."""
    if triton_enabled(x):
        return _triton("fused_add_rms_norm")(x, residual, weight, eps)
    from kprof.kernels.add_rmsnorm.family import validate
    from kprof.kernels.add_rmsnorm.reference import add_rmsnorm_eager

    validate(x, residual, weight, triton=False)
    return add_rmsnorm_eager(x, residual, weight, eps)


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    """``x = [..., 2H]`` (gate | up) -> ``silu(gate) * up``."""
    if triton_enabled(x):
        return _triton("silu_and_mul")(x)
    from kprof.kernels.silu_mul.family import silu_mul_eager, validate

    validate(x, triton=False)
    return silu_mul_eager(x)


def gelu_tanh_and_mul(x: torch.Tensor) -> torch.Tensor:
    """``x = [..., 2H]`` (gate | up) -> ``gelu_tanh(gate) * up``."""
    if triton_enabled(x):
        return _triton("gelu_tanh_and_mul")(x)
    from kprof.kernels.gelu_mul.family import gelu_mul_eager, validate

    validate(x, triton=False)
    return gelu_mul_eager(x)


def swiglu(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """``silu(x @ w_gate) * (x @ w_up)`` for weights ``[d, ff]``."""
    if triton_enabled(x):
        return _triton("swiglu")(x, w_gate, w_up)
    from kprof.kernels.swiglu.family import validate
    from kprof.kernels.swiglu.reference import swiglu_eager

    validate(x, w_gate, w_up, triton=False)
    return swiglu_eager(x, w_gate, w_up)


def rms_norm_linear(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = 1e-6
) -> torch.Tensor:
    """``(rms_norm(x, g) @ w) + b`` for ``w [K, N]``."""
    if triton_enabled(x):
        return _triton("rms_norm_linear")(x, g, w, b, eps)
    from kprof.kernels.rmsnorm_linear.family import validate
    from kprof.kernels.rmsnorm_linear.reference import rmsnorm_linear_eager

    validate(x, g, w, b, triton=False)
    return rmsnorm_linear_eager(x, g, w, b, eps)


def kasmina_forward(
    x: torch.Tensor, lifecycle: torch.Tensor, blueprint_id: torch.Tensor, alpha: torch.Tensor,
    weights: torch.Tensor, bias: torch.Tensor, *, check_ids: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The seed-lifecycle layer: ``(y, telemetry[S, 2])`` (see :mod:`kprof.kernels.kasmina`).

    ``check_ids=True`` also checks every blueprint id is in range; that reads the ids on the host (a
    device-to-host copy and a sync), so it is off by default."""
    from kprof.kernels.kasmina.family import validate

    validate(x, lifecycle, blueprint_id, alpha, weights, bias, triton=False)
    if check_ids:
        ids = blueprint_id.cpu()
        bad = ids[(ids < 0) | (ids >= weights.shape[0])]
        if bad.numel():
            raise ValueError(f"kasmina: blueprint ids {bad[:5].tolist()} are outside [0, {weights.shape[0]}) "
                             "(the registry holds that many blueprints)")
    if triton_enabled(x):
        return _triton("kasmina_forward")(x, lifecycle, blueprint_id, alpha, weights, bias)
    from kprof.kernels.kasmina.reference import kasmina_vectorised

    return kasmina_vectorised(x, lifecycle, blueprint_id, alpha, weights, bias)


__all__ = ["BEST", "fused_add_rms_norm", "gelu_tanh_and_mul", "kasmina_forward", "rms_norm", "rms_norm_linear",
           "silu_and_mul", "swiglu", "triton_enabled"]

"""The PyTorch versions a user writes (the seed's loop, then a vectorised one) and the float64 oracle."""

from __future__ import annotations

import torch


def _blend_coefficient(lifecycle: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """0 for dormant seeds, 1 for active ones, alpha for grafting ones: y = x + coef * (blueprint(x) - x)."""
    one = torch.ones_like(alpha)
    return torch.where(lifecycle == 1, one, torch.where(lifecycle == 2, alpha, torch.zeros_like(alpha)))


def kasmina_loop(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The seed's "current state": split into chunks, branch on each seed's state in Python, concatenate.

    Reading ``lifecycle[i]`` and ``blueprint_id[i]`` as Python ints copies them to the host: two
    device-to-host transfers (and synchronisations) per seed, which profiler traces of this version show."""
    n_seeds, c = lifecycle.shape[0], weights.shape[-1]
    outputs, stats = [], []
    for i in range(n_seeds):
        chunk = x[..., i * c : (i + 1) * c]
        state = int(lifecycle[i])
        if state == 0:
            out = chunk
        else:
            k = int(blueprint_id[i])
            blueprint = chunk @ weights[k] + bias[k]
            out = blueprint if state == 1 else ((1 - alpha[i]) * chunk + alpha[i] * blueprint).to(x.dtype)
        outputs.append(out)
        of = out.float()
        stats.append(torch.stack([of.mean(), of.var(unbiased=False)]))
    return torch.cat(outputs, dim=-1), torch.stack(stats)


def kasmina_vectorised(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """All seeds at once: gather each seed's blueprint, one batched product, blend, reduce telemetry."""
    n_seeds, c = lifecycle.shape[0], weights.shape[-1]
    xs = x.reshape(-1, n_seeds, c).transpose(0, 1)  # [S, rows, C]
    blueprint = torch.baddbmm(bias[blueprint_id].unsqueeze(1), xs, weights[blueprint_id])
    coef = _blend_coefficient(lifecycle, alpha)[:, None, None]
    ys = xs.float() + coef * (blueprint.float() - xs.float())
    var, mean = torch.var_mean(ys, dim=(1, 2), correction=0)
    y = ys.to(x.dtype).transpose(0, 1).reshape(x.shape)
    return y, torch.stack([mean, var], dim=1)


def kasmina_oracle(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The truth in float64: same algebra, no rounding."""
    n_seeds, c = lifecycle.shape[0], weights.shape[-1]
    xs = x.double().reshape(-1, n_seeds, c).transpose(0, 1)
    blueprint = xs @ weights.double()[blueprint_id.long()] + bias.double()[blueprint_id.long()].unsqueeze(1)
    coef = _blend_coefficient(lifecycle, alpha.double())[:, None, None]
    ys = xs + coef * (blueprint - xs)
    var, mean = torch.var_mean(ys, dim=(1, 2), correction=0)
    return ys.transpose(0, 1).reshape(x.shape), torch.stack([mean, var], dim=1)

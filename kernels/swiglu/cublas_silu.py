"""cuBLAS's two products, then kprof's silu_mul kernel: the op as torch.compile builds it. The products
are not Triton kernels; this version exists for the row counts where no Triton product of kprof's matches
cuBLAS: at 512 rows the tiled kernel lost to torch.compile at the 5504-column grid points, by 7-18% in bf16
(``benchmarks/results/grid/catalog-bf16/``) and 18% in fp16 at 512x4096x5504
(``benchmarks/results/decode-tiles/``), and the interleaved TMA kernel serves only 1000 rows and more.

Both products write into the halves of one [M, 2N] buffer (gate | up, the layout silu_mul reads: cuBLAS
takes the half-width views with a row stride of 2N, no copy), then the tuned silu_mul kernel reads it once
and writes y. Nothing derived from the weights is kept."""

from __future__ import annotations

import torch

from kprof.kernels.silu_mul.kernels import VERSIONS as SILU_MUL
from kprof.kernels.swiglu.family import FAMILY, check_inputs


def products_then_silu_mul(x2d: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """``silu(x2d @ w_gate) * (x2d @ w_up)`` for checked 2-D rows: [M, N]."""
    m, n = x2d.shape[0], w_gate.shape[1]
    gate_up = torch.empty((m, 2 * n), dtype=x2d.dtype, device=x2d.device)
    torch.mm(x2d, w_gate, out=gate_up[:, :n])
    torch.mm(x2d, w_up, out=gate_up[:, n:])
    return SILU_MUL["triton_tuned"](gate_up)


@FAMILY.provider(
    "triton_cublas_silu",
    kind="triton",
    description="cuBLAS's two products (x @ Wg, x @ Wu into the halves of one buffer), then kprof's tuned "
    "silu_mul kernel: the products are not Triton kernels",
)
def swiglu_cublas_silu(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    x2d, ff = check_inputs(x, w_gate, w_up)
    return products_then_silu_mul(x2d, w_gate, w_up).view(*x.shape[:-1], ff)

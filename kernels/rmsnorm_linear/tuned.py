"""What the plain op runs (``kprof.kernels.ops.rms_norm_linear``, nothing derived from the weights kept):
the tuned rmsnorm kernel writes the normalised rows, then either kprof's autotuned Triton product
(``triton_two_kernels``) or one cuBLAS product (``triton_norm_cublas``), chosen by shape.

The rule, from one H100 race of both at the 72 bf16 points of the model-sized grid (decode and prefill
parts, ``benchmarks/results/grid/norm-cublas/``; times in µs, two_kernels against norm_cublas):

* 512 rows or more: cuBLAS. At 512 rows the Triton product lost at every point, by 5-27% (512x2048x11008:
  50.0 against 39.4; 512x4096x5504: 48.4 against 38.5), and at 2048 and 8192 rows at 21 of 24 by 2-19%;
  the other three were within 2% (2048x8192x5504, 8192x4096x11008, 8192x8192x11008). Smaller TMA tiles
  did not close the gap at 512 rows: 56.9 µs at best with 64x256 tiles against 49.0 for the pointer
  product alone and 44.5 for cuBLAS's ``x @ W`` (``benchmarks/results/grid/norm-cublas/tma_small.log``).
* 128 rows: cuBLAS up to 11008 columns (the Triton product 7-31% slower: 128x8192x5504 52.4 against 40.2),
  Triton beyond (cuBLAS 2-29% slower: 128x2048x28672 57.9 against 44.9, where cuBLAS's own ``x @ W`` took
  59.9).
* 1 and 16 rows, the decode sizes: cuBLAS at K = 2048 (16x2048x11008: 19.8 against 25.0), Triton at
  K = 4096 and 8192 (16x8192x14336: 81.1 against 92.0). Here the two are within 5% at most points and the
  ranking moved between runs, so this is the better side of a noisy race; at 4 of these 24 points the pick
  was 2.6-5.3% slower in this race (1x8192x28672: 166.7 against 158.3).

Measured in bf16 only; fp16 and fp32 follow the same rule unmeasured.
"""

from __future__ import annotations

import torch

from kprof.kernels.rmsnorm_linear.family import DEFAULT_EPS, FAMILY, check_inputs
from kprof.kernels.rmsnorm_linear.norm_cublas import norm_then_cublas
from kprof.kernels.rmsnorm_linear.two_kernels import norm_then_triton

CUBLAS_MIN_ROWS = 512  # from here on cuBLAS's product at every shape
NARROW_MIN_ROWS = 128  # from here on cuBLAS's product where the weight has at most NARROW_MAX_COLS columns
NARROW_MAX_COLS = 11008
DECODE_MAX_K = 2048  # fewer rows: cuBLAS's product at K up to this


def cublas_product(m: int, k: int, n: int) -> bool:
    """Whether the plain op multiplies by cuBLAS (else by kprof's Triton product) at M x K x N."""
    if m >= CUBLAS_MIN_ROWS:
        return True
    if m >= NARROW_MIN_ROWS:
        return n <= NARROW_MAX_COLS
    return k <= DECODE_MAX_K


@FAMILY.provider(
    "triton_tuned",
    kind="triton",
    description="what kprof.kernels.ops runs: the tuned rmsnorm kernel, then cuBLAS's product or kprof's "
    "autotuned Triton product, chosen by shape (measured rule in rmsnorm_linear/tuned.py)",
)
def rmsnorm_linear_tuned(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = DEFAULT_EPS
) -> torch.Tensor:
    x2d, n = check_inputs(x, g, w, b)
    m, k = x2d.shape
    y = norm_then_cublas(x2d, g, w, b, eps) if cublas_product(m, k, n) else norm_then_triton(x2d, g, w, b, eps)
    return y.view(*x.shape[:-1], n)

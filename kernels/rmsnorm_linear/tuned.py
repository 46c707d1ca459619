"""What the plain op runs (``kprof.kernels.ops.rms_norm_linear``, nothing derived from the weights kept):
the tuned rmsnorm kernel writes the normalised rows, then either kprof's autotuned Triton product
(``triton_two_kernels``) or one cuBLAS product (``triton_norm_cublas``), chosen by shape.

The rule, from H100 races of both at the 72 points of the model-sized grid (decode and prefill parts), one
in bf16 and one in fp16 (``benchmarks/results/grid/norm-cublas/``; times in µs, two_kernels against
norm_cublas):

* 512 rows or more: cuBLAS. At 512 rows the Triton product lost at every point, by 5-27% in bf16
  (512x2048x11008: 50.0 against 39.4) and 4-30% in fp16; at 2048 and 8192 rows at 21 of 24 points in each
  dtype, by 2-19% and 2-23%. Smaller TMA tiles did not close the gap at 512 rows: 56.9 at best with 64x256
  tiles against 49.0 for the pointer product alone and 44.5 for cuBLAS's ``x @ W``
  (``tma_small.log`` there).
* Fewer rows, weights of up to 11008 columns: cuBLAS, for a pick that does not depend on the autotuner.
  The Triton product's autotuned tiles were not stable there: in the first fp16 race the autotuner chose
  64x128x64 tiles at 1x4096x11008 (58.9; 33.7-37.1 with 16-row tiles in the other three races) and
  128x128x32 at 16x4096x5504 (32.4 against 19.9-20.0), and a model would keep such a pick for the life of
  its process. When it picks well the Triton product is ahead at some of these points: the 8 of them with
  K >= 4096 raced again on another H100 (``points-aeeb4ad/``), it was 3.7-8.2% faster than the cuBLAS
  route at 6 in bf16 and 5 in fp16 (16x8192x11008: 62.8 against 67.6) and slower at the others, by up to
  32% at 1x4096x5504 in bf16, where the autotuner chose 16x32x256 tiles (25.5; 21.6 with 16x64x256 in the
  other three races). Those 3.7-8.2% are near the noise of these calls: the same cuBLAS route, timed as two
  providers, differed by up to 9% there. Tiles pinned per shape class instead of autotuned would let
  the Triton product take them back.
* Fewer rows, wider weights (14336 and 28672 columns): Triton from 128 rows (128x2048x28672: 44.9 against
  57.9 in bf16, where cuBLAS's own ``x @ W`` took 59.9), and below 128 rows where K > 2048
  (16x8192x14336: 81.1 against 92.0); below 128 rows at K = 2048, cuBLAS (16x2048x28672 in fp16: 42.6
  against 54.7).

In the two full races the pick was within 2% of the faster of the two at 64 of 72 bf16 points (worst
1.065x, 16x8192x5504) and 68 of 72 fp16 points (worst 1.122x, 128x4096x14336, where the autotuner again
chose 128x128x32 tiles). A first rule that took Triton at every decode size with K > 2048 scored 68 of 72 in
bf16, but 62 of 72 in fp16, 1.22-1.77x at four points (``benchmarks/rmsnorm_linear_rule.py`` scores a rule
against the stores). The rule is the same for every dtype; fp32 was not raced.
"""

from __future__ import annotations

import torch

from kprof.kernels.rmsnorm_linear.family import DEFAULT_EPS, FAMILY, check_inputs
from kprof.kernels.rmsnorm_linear.norm_cublas import norm_then_cublas
from kprof.kernels.rmsnorm_linear.two_kernels import norm_then_triton

CUBLAS_MIN_ROWS = 512  # from here on cuBLAS's product at every shape
NARROW_MAX_COLS = 11008  # fewer rows: cuBLAS's product for weights of up to this many columns
DECODE_ROWS = 128  # fewer rows than this, wider weights: cuBLAS's product at K up to DECODE_MAX_K
DECODE_MAX_K = 2048


def cublas_product(m: int, k: int, n: int) -> bool:
    """Whether the plain op multiplies by cuBLAS (else by kprof's Triton product) at M x K x N."""
    if m >= CUBLAS_MIN_ROWS or n <= NARROW_MAX_COLS:
        return True
    return m < DECODE_ROWS and k <= DECODE_MAX_K


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

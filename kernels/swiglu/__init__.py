"""SwiGLU projections (a Llama MLP's first half): ``silu(x @ Wg) * (x @ Wu)`` for ``x [..., d]`` and
weights ``[d, ff]``. Shapes are ``(*batch, d, ff)``.

Versions: ``triton_per_token`` (the seed's teaching kernel: per-token dot products on CUDA cores, no
tensor cores; only where it finishes in reasonable time), ``triton_tiled`` (a tiled matrix product with
both accumulators and the SiLU*mul in its epilogue), ``triton_tuned`` (the same kernel autotuned, tiles
in grouped order, weight layout chosen by measurement; pinned tiles at decode sizes; from 1000 rows an
interleaved-weight TMA kernel), ``triton_tuned_prepared`` and ``triton_tuned_pointer`` (its two launch paths
alone), ``triton_prepared_op`` (``ops.PreparedSwiGLU``'s own choice at the shape, which ``kprof grid`` holds to the
best version), ``triton_cublas_silu`` (cuBLAS's two products, then kprof's silu_mul kernel). Baselines: eager
PyTorch, ``torch.compile``, and ``cublas_gate_up``, the single cuBLAS product ``x @ [Wg Wu]`` as the roofline yardstick.
"""

from kprof.kernels.swiglu.family import FAMILY
from kprof.registry import load_family_modules

load_family_modules(__name__, __path__)

__all__ = ["FAMILY"]

"""RMSNorm then a linear layer: ``y = (rmsnorm(x) * g) @ W + b`` for ``x [..., K]``, ``g [K]``, ``W [K, N]``,
``b [N]`` or None. Shapes are ``(*batch, K, N)``.

The algebra a fused version uses: ``rmsnorm(x) * g @ W = diag(rstd) · x · diag(g) · W``, so ``g`` folds
into the weight once (``W' = diag(g) W``), the per-row ``rstd`` scales the product's rows in the
epilogue, and the sum of squares behind ``rstd`` accumulates from the very x tiles the K loop already
loads. The fused version costs about one matrix product.

Versions: ``triton_two_kernels`` (the tuned rmsnorm kernel, then a tiled product with the bias in its
epilogue), ``triton_norm_cublas`` (the same norm, then cuBLAS's product), ``triton_fused``, ``triton_one_kernel`` (the
same kernel applying g to the x tiles instead of a folded W),
``triton_rstd_epilogue`` (row statistics first, g folded into W) and its ``_prepared`` form, ``triton_split_k``
(one kernel for a few rows: g on the x tiles, the squares from the same tiles, K split over programs) and its
``_prepared`` form (the same kernel on g folded into W, what ``ops.PreparedRMSNormLinear`` runs at decode rows),
``triton_tma_decode_prepared`` (the fold's and x's tiles by TMA descriptors, which the prepared objects take on an H200
at 1-16 rows x K 2048-8192 x N 4608-5120), and
``triton_tuned``, the ops API's choice among the split-K kernel and the first two by shape (``tuned.py``), and
``triton_prepared_op``, ``ops.PreparedRMSNormLinear``'s own choice at the shape (``op_plan.prepared_op``), which
``kprof grid`` holds to the best version.
Baselines: eager PyTorch, ``torch.compile``, and ``cublas_xw``, the product ``x @ W`` alone as the roofline
yardstick.
"""

from kprof.kernels.rmsnorm_linear.family import FAMILY
from kprof.registry import load_family_modules

load_family_modules(__name__, __path__)

__all__ = ["FAMILY"]

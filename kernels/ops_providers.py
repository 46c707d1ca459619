"""Which provider each op of :mod:`kprof.kernels.ops` runs on its Triton path, as the harness names it.

A table without imports, so that tools reading it (``kprof grid`` compares this choice with the best
version at every point) do not import torch and every family for it.
"""

from __future__ import annotations

# What each op runs on its Triton path, as the harness names it (measured on an H100:
# benchmarks/results/catalog/). The prepared objects run PREPARED where it applies.
BEST: dict[str, str] = {
    "rms_norm": "rmsnorm/triton_tuned",
    "fused_add_rms_norm": "add_rmsnorm/triton_tuned",
    "silu_and_mul": "silu_mul/triton_tuned",
    "gelu_tanh_and_mul": "gelu_mul/triton_tuned",
    # the autotuned tiled product on the weights as given (no interleaved copy to keep current)
    "swiglu": "swiglu/triton_tuned_pointer",
    # norm, then cuBLAS's product or the Triton one by shape (rmsnorm_linear/tuned.py): no folded weight to
    # keep current
    "rms_norm_linear": "rmsnorm_linear/triton_tuned",
    "kasmina_forward": "kasmina/triton_telemetry",
}
PREPARED: dict[str, tuple[str, ...]] = {
    # 1000+ rows (any under the interpreter); fewer rows take the plain op
    "swiglu": ("swiglu/triton_tuned_prepared",),
    # on an H200 at the decode shapes rmsnorm_linear/tma_decode.py serves, its TMA kernel on the folded weight; the
    # split-K kernel on the fold where the plain op runs split-K (decode rows), the statistics-first kernels from 1000
    # rows (any under the interpreter) and at 33-999 rows where their race on a shape's first call timed them faster,
    # the plain op elsewhere
    "rms_norm_linear": (
        "rmsnorm_linear/triton_tma_decode_prepared",
        "rmsnorm_linear/triton_split_k_prepared",
        "rmsnorm_linear/triton_rstd_epilogue_prepared",
    ),
}
# The prepared objects themselves, as the harness names them: each times the object's own choice at a point (one of
# PREPARED, or the plain op), which kprof grid compares with the best version there
PREPARED_OP: dict[str, str] = {
    "swiglu": "swiglu/triton_prepared_op",
    "rms_norm_linear": "rmsnorm_linear/triton_prepared_op",
}

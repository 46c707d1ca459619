"""Rows of 256 KB, each held in the registers of a thread-block cluster: ``CLUSTER`` programs a row, each holding
``CHUNK`` elements of it in x's dtype, meeting once at the cluster's barrier (``kernels/lib/clusters.py``).

A GPU only: the meeting needs the cluster's programs running at once. Triton's interpreter runs the kernel with the
barrier left out, which is right only where every partial sum is already in the workspace (a second launch on it).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kprof.kernels.lib import split_rows
from kprof.kernels.lib.clusters import cluster_sum, launch_clustered
from kprof.launch import spec_key
from kprof.runtime import interpreting


@triton.jit
def _rmsnorm_cluster_kernel(
    # pointers
    x_ptr,  # [rows, N] input
    w_ptr,  # [N] weight
    y_ptr,  # [rows, N] output
    ws_ptr,  # [rows * CLUSTER] float32: each program's partial sum of squares
    # sizes and strides
    x_row_stride,
    y_row_stride,
    N,
    # parameters
    eps,
    # meta-parameters
    CHUNK: tl.constexpr,  # elements a program holds: N / CLUSTER, a power of two
    CLUSTER: tl.constexpr,  # programs a row, consecutive program ids, launched as one cluster
    I64: tl.constexpr,  # 64-bit row offsets
    BARRIER: tl.constexpr,  # meet at barrier.cluster (False only in the interpreter)
):
    pid = tl.program_id(0)
    if I64:
        pid = pid.to(tl.int64)
    row = pid // CLUSTER
    part = pid % CLUSTER
    cols = part * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(x_ptr + row * x_row_stride + cols)
    xf = x.to(tl.float32)
    total = cluster_sum(ws_ptr, row * CLUSTER, part, tl.sum(xf * xf, axis=0), CLUSTER, BARRIER)
    w = tl.load(w_ptr + cols, eviction_policy="evict_last").to(tl.float32)
    y = split_rows.float32_again(x, total) * tl.rsqrt(total / N + eps) * w
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty))


def launch_cluster(
    x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor, eps: float, cluster: int, num_warps: int,
    ws: torch.Tensor | None = None,
) -> object:  # fmt: skip
    """Normalise the rows of ``x`` (2-D, unit column stride, width ``cluster`` x a power of two) into ``y`` with
    ``cluster`` programs of ``num_warps`` warps a row; ``ws``: the partial sums' workspace (rows x cluster float32;
    fresh where None). Returns the compiled kernel (None in the interpreter)."""
    n_rows, n = x.shape
    chunk = n // cluster
    if chunk * cluster != n or chunk & (chunk - 1):
        raise ValueError(f"rows of {n} do not split into {cluster} chunks of a power of two")
    if ws is None:
        ws = torch.empty(n_rows * cluster, dtype=torch.float32, device=x.device)
    i64 = max(x.stride(0), y.stride(0)) * n_rows >= 2**31 or n_rows * cluster >= 2**31
    interp = interpreting() or x.device.type == "cpu"
    args = (x, weight, y, ws, x.stride(0), y.stride(0), n, eps, chunk, cluster, i64, not interp)
    if interp:
        _rmsnorm_cluster_kernel[(n_rows * cluster,)](*args, num_warps=num_warps)
        return None
    key = (spec_key(args), num_warps)
    return launch_clustered(_rmsnorm_cluster_kernel, n_rows * cluster, cluster, key, args, {"num_warps": num_warps})

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
    n_rows,
    N,
    # parameters
    eps,
    # meta-parameters
    CHUNK: tl.constexpr,  # elements a program holds: N / CLUSTER, a power of two
    CLUSTER: tl.constexpr,  # programs a row, consecutive program ids, launched as one cluster
    I64: tl.constexpr,  # 64-bit row offsets
    BARRIER: tl.constexpr,  # meet at barrier.cluster (False only in the interpreter)
    PERSISTENT: tl.constexpr,  # each cluster takes every step-th row (step: the clusters launched)
):
    pid = tl.program_id(0)
    part = pid % CLUSTER
    cols = part * CHUNK + tl.arange(0, CHUNK)
    if PERSISTENT:
        for r in range(pid // CLUSTER, n_rows, tl.num_programs(0) // CLUSTER):
            _cluster_row(x_ptr, w_ptr, y_ptr, ws_ptr, r, part, cols, x_row_stride, y_row_stride, N, eps, CLUSTER, I64,
                         BARRIER)  # fmt: skip
    else:
        _cluster_row(x_ptr, w_ptr, y_ptr, ws_ptr, pid // CLUSTER, part, cols, x_row_stride, y_row_stride, N, eps,
                     CLUSTER, I64, BARRIER)  # fmt: skip


@triton.jit
def _cluster_row(x_ptr, w_ptr, y_ptr, ws_ptr, r, part, cols, x_row_stride, y_row_stride, N, eps,
                 CLUSTER: tl.constexpr, I64: tl.constexpr, BARRIER: tl.constexpr):  # fmt: skip
    row = r.to(tl.int64) if I64 else r
    x = tl.load(x_ptr + row * x_row_stride + cols)
    xf = x.to(tl.float32)
    total = cluster_sum(ws_ptr, row * CLUSTER, part, tl.sum(xf * xf, axis=0), CLUSTER, BARRIER)
    w = tl.load(w_ptr + cols, eviction_policy="evict_last").to(tl.float32)
    y = split_rows.float32_again(x, total) * tl.rsqrt(total / N + eps) * w
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty))


def launch_cluster(
    x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor, eps: float, cluster: int, num_warps: int,
    ws: torch.Tensor | None = None, clusters: int = 0, hardware: bool = True, barrier: bool = True, maxnreg: int = 0,
) -> object:  # fmt: skip
    """Normalise the rows of ``x`` (2-D, unit column stride, width ``cluster`` x a power of two) into ``y`` with
    ``cluster`` programs of ``num_warps`` warps a row; ``ws``: the partial sums' workspace (rows x cluster float32;
    fresh where None); ``clusters``: clusters launched (0: one a row), each taking every ``clusters``-th row.
    ``hardware`` False: launched without a cluster dimension, ``barrier`` False: no barrier (both wrong results, on
    purpose: what the meeting costs). Returns the compiled kernel (None in the interpreter)."""
    n_rows, n = x.shape
    chunk = n // cluster
    if chunk * cluster != n or chunk & (chunk - 1):
        raise ValueError(f"rows of {n} do not split into {cluster} chunks of a power of two")
    if ws is None:
        ws = torch.empty(n_rows * cluster, dtype=torch.float32, device=x.device)
    i64 = max(x.stride(0), y.stride(0)) * n_rows >= 2**31 or n_rows * cluster >= 2**31
    interp = interpreting() or x.device.type == "cpu"
    programs = (clusters or n_rows) * cluster
    args = (x, weight, y, ws, x.stride(0), y.stride(0), n_rows, n, eps, chunk, cluster, i64, barrier and not interp,
            bool(clusters))  # fmt: skip
    options = {"num_warps": num_warps, "num_stages": 1, **({"maxnreg": maxnreg} if maxnreg else {})}
    if interp:
        _rmsnorm_cluster_kernel[(programs,)](*args, **options)
        return None
    key = (spec_key(args), args[-5:], tuple(options.items()))  # the constexprs by value: spec_key classes integers
    return launch_clustered(_rmsnorm_cluster_kernel, programs, cluster if hardware else 1, key, args, options)

"""Programs launched as thread-block clusters (sm_90 and later): the programs of a cluster are started together on
SMs of one GPC, so one may wait for the others at a hardware barrier without tickets or a deadlock to rule out.

Triton 3.6 cannot compile a row reduction split over the CTAs of a cluster (``num_ctas=2``: its CTA-planning pass
fails at sm_90, where Triton 3.9 compiles it through distributed shared memory). Here a kernel compiled for one CTA is
launched with a cluster dimension instead (:func:`launch_clustered`): each program is a CTA of its own, program ids
count CTAs, and :func:`cluster_sum` meets the cluster's other programs at ``barrier.cluster``, passing partial sums
through global memory. Both Triton versions launch a kernel of ``num_ctas`` n as clusters of n, so only the packed
metadata's CTA count changes.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from kprof.launch import direct_launch


@triton.jit
def cluster_barrier(v, BARRIER: tl.constexpr):
    """Wait until every thread of the cluster has reached this call; ``v`` is returned unchanged, so what uses the
    result comes after the barrier. Release / acquire at cluster scope: what a program wrote before it is visible to
    the cluster's other programs after it. ``BARRIER`` False (Triton's interpreter, which runs no PTX and runs
    programs one after another): no barrier."""
    if BARRIER:
        v = tl.inline_asm_elementwise(
            "barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;\n\tmov.b32 $0, $1;",
            "=r,r",
            [v],
            dtype=tl.float32,
            is_pure=False,
            pack=1,
        )
    return v


@triton.jit
def cluster_sum(ws_ptr, first, part, partial, CLUSTER: tl.constexpr, BARRIER: tl.constexpr):
    """The sum of the ``CLUSTER`` programs' ``partial`` (float32 scalars), the same in each: program ``part`` of the
    cluster writes its own at ``ws_ptr + first + part``, waits at the cluster barrier, and adds all of them in the
    order of their parts. The loads skip L1 (``.cg``): the slots' cache lines are shared with other clusters'."""
    if CLUSTER == 1:
        return partial
    tl.store(ws_ptr + first + part, partial)
    partial = cluster_barrier(partial, BARRIER)
    parts = tl.load(ws_ptr + first + tl.arange(0, CLUSTER), cache_modifier=".cg")
    return tl.sum(parts, axis=0)


_CLUSTER_LAUNCHES: dict[tuple, tuple[Any, tuple]] = {}


def launch_clustered(kernel: Any, programs: int, cluster: int, key: tuple, args: tuple, options: dict[str, Any]) -> Any:
    """Launch ``kernel`` (compiled for one CTA) over ``programs`` programs, in clusters of ``cluster`` consecutive
    program ids; ``args`` are all its arguments in signature order, constexprs included, ``key`` what fixes its
    specialisation (:func:`kprof.launch.spec_key` of ``args`` and the options). Returns the compiled kernel."""
    if programs % cluster:
        raise ValueError(f"{programs} programs do not split into clusters of {cluster}")
    found = _CLUSTER_LAUNCHES.get((kernel, key, cluster))
    if found is None:
        names = kernel.arg_names
        compiled = kernel.warmup(**dict(zip(names, args, strict=True)), grid=(programs,), **options)
        packed = compiled.packed_metadata
        if len(packed) != 3 or compiled.metadata.num_ctas != 1:
            raise RuntimeError(
                f"launch_clustered knows Triton's packed metadata (num_warps, num_ctas, shared); this Triton "
                f"{triton.__version__} packs {packed!r}"
            )
        run = compiled.run  # loads the module
        launch, prefix = direct_launch(run, compiled.function, (packed[0], cluster, packed[2]))
        found = _CLUSTER_LAUNCHES[(kernel, key, cluster)] = (compiled, (launch, prefix))
    compiled, (launch, prefix) = found
    stream = torch.cuda.current_stream().cuda_stream
    launch(programs // cluster, 1, 1, stream, *prefix, *args)
    return compiled

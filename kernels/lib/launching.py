"""How kernels are launched: meta-parameters a sweep may override, device capabilities (SM count, TMA,
programmatic dependent launch), the shared-memory carveout hint, autotuned launches under the interpreter,
and the identity of weights for caches of derived weights."""

from __future__ import annotations

import ctypes
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import triton
import triton.language as tl

from kprof.errors import UnsupportedConfig
from kprof.runtime import interpreting, pdl_allowed


def _properties(t: torch.Tensor) -> Any:
    """``t``'s GPU's properties, looked up once per device (the wrappers ask on every call)."""
    return _device_properties(t.get_device())


def _device_properties(index: int) -> Any:
    if index not in _PROPERTIES:
        _PROPERTIES[index] = torch.cuda.get_device_properties(index)
    return _PROPERTIES[index]


_PROPERTIES: dict[int, Any] = {}


def sm_count(t: torch.Tensor) -> int:
    """Streaming multiprocessors of ``t``'s GPU (132, an H100's, for CPU tensors in the interpreter)."""
    return sm_count_at(t.get_device() if t.is_cuda else -1)


def sm_count_at(device_index: int) -> int:
    """:func:`sm_count` for the GPU of index ``device_index`` (132 for a negative index: the CPU)."""
    return _device_properties(device_index).multi_processor_count if device_index >= 0 else 132


def fast_memory(t: torch.Tensor) -> bool:
    """``t`` is on an H200 (HBM3e: a device copy moved 4.3-4.4 TB/s there against an H100's 3.1-3.3), where some
    memory-bound layouts measured differently from the H100's (``kernels/add_rmsnorm/tuned.py``,
    ``kernels/rmsnorm/tuned.py``)."""
    return t.is_cuda and fast_memory_at(t.get_device())


def fast_memory_at(device_index: int) -> bool:
    """:func:`fast_memory` for the GPU of index ``device_index`` (False for a negative index: the CPU)."""
    return device_index >= 0 and "H200" in _device_properties(device_index).name


def ticket_counters(t: torch.Tensor, count: int) -> torch.Tensor:
    """``count`` int32 counters on ``t``'s device for the current stream, zero between calls: a kernel that
    hands out tickets at them puts each back to zero when its last ticket is drawn. Kept per (device,
    stream), grown as needed, so no call pays for a memset and two streams never share a counter; a call
    captured into a CUDA graph gets counters of its own."""
    index = t.get_device()
    if index >= 0 and torch.cuda.is_current_stream_capturing():
        # a CUDA graph: counters of its own, zeroed by the graph on every replay. Cached ones would be shared by
        # every graph captured on PyTorch's one default capture stream, and two graphs replayed at once on two
        # streams would draw tickets at the same counters.
        return torch.zeros(count, dtype=torch.int32, device=t.device)
    key = (index, _raw_stream(index) if index >= 0 else 0)
    have = _COUNTERS.get(key)
    if have is None or have.numel() < count:
        have = torch.zeros(max(count, 1024), dtype=torch.int32, device=t.device)
        _COUNTERS[key] = have
    return have


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # absent from CPU-only builds
_COUNTERS: dict[tuple[int, int], torch.Tensor] = {}


def meeting_counters(t: torch.Tensor, count: int) -> tuple[torch.Tensor, int]:
    """The wide-row kernels' meeting counters (``split_rows``) on ``t``'s device for the current stream: ``count``
    int32 counters (the ticket counter, then one per row, each a multiple of ``split_rows.GENERATION`` between
    calls), and the ticket counter's value between calls, from which a launch counts its tickets: that counter is
    never put back to zero, so pass the tickets a launch draws to :func:`meeting_tickets_drawn` once it is
    launched. Kept per (device, stream) as :func:`ticket_counters`, apart from them; a call captured into a CUDA
    graph gets zeroed counters of its own (zeroed by the graph on every replay) and 0."""
    counters, base, _ = meeting_buffers(t, count, 0)
    return counters, base


def meeting_buffers(t: torch.Tensor, count: int, partials: int) -> tuple[torch.Tensor, int, torch.Tensor]:
    """:func:`meeting_counters`, and a float32 workspace of at least ``partials`` elements for the rows' partial sums,
    kept with the counters (a CUDA graph's capture gets one of its own, as its counters). Nothing carries from one
    launch to the next through it: a program stores its partial before it counts itself in at its row, and a row's
    partials are read only once the whole row is in; launches on one stream run one after another. Kept instead of
    allocated per call: on an H200, bf16, planned calls of ``ops.rms_norm`` and ``ops.fused_add_rms_norm`` at 64-2048
    rows of 65536-131072 took 0.78-0.87x the host time (12.1-23.3 us against 15.0-28.3), interleaved
    (benchmarks/results/grid/meeting-plans-3d38a5c/workspace-1d51103/)."""
    index = t.get_device()
    if index >= 0 and torch.cuda.is_current_stream_capturing():
        fresh = torch.zeros(count, dtype=torch.int32, device=t.device)
        return fresh, 0, torch.empty(partials, dtype=torch.float32, device=t.device)
    return _kept(t, index, count, partials)


def _kept(t: torch.Tensor, index: int, count: int, partials: int) -> tuple[torch.Tensor, int, torch.Tensor]:
    """:func:`meeting_buffers` outside a capture: the current stream's record, grown as needed."""
    have = _kept_meeting(t, index, count)
    if have.partials is None or have.partials.numel() < partials:
        # freed stream-ordered: the allocator hands a replaced buffer only to later work on this stream
        have.partials = torch.empty(max(partials, 4096), dtype=torch.float32, device=t.device)
    base = have.drawn - (1 << 32) if have.drawn >= 1 << 31 else have.drawn
    return have.counters, base, have.partials


def meeting_slots(t: torch.Tensor, count: int) -> tuple[torch.Tensor, int]:
    """The slotted meeting's buffer (``split_rows.slot_arrive``) on ``t``'s GPU for the current stream: at least
    ``count`` int64 slots, each a chunk's partial sum and the generation of the launch that wrote it, and this launch's
    generation (from 1, one more each call). Kept with :func:`meeting_buffers`' and never zeroed by a launch: a slot
    counts for a launch only once it holds that launch's generation, and launches on one stream run one after another.
    A new buffer starts at zero and generation 1, as the kept one does again after 2**31 - 1 generations, so no slot
    can hold an old launch's generation as a new one's. A CUDA graph's capture gets a zeroed buffer of its own (zeroed
    by the graph on every replay) and generation 1. Take it under :data:`MEETING_LOCK`, as the counters."""
    index = t.get_device()
    if index >= 0 and torch.cuda.is_current_stream_capturing():
        return torch.zeros(count, dtype=torch.int64, device=t.device), 1
    have = _kept_meeting(t, index, 1)
    if have.slots is None or have.slots.numel() < count or have.generation >= _MAX_GENERATION:
        have.slots, have.generation = torch.zeros(max(count, 4096), dtype=torch.int64, device=t.device), 0
    have.generation += 1
    return have.slots, have.generation


_MAX_GENERATION = (1 << 31) - 1  # the slots' generation is an int32 kernel argument


def _kept_meeting(t: torch.Tensor, index: int, count: int) -> _Meeting:
    """The current stream's record, its counters grown to at least ``count``."""
    key = (index, _raw_stream(index) if index >= 0 else 0)
    have = _MEETINGS.get(key)
    if have is None or have.counters.numel() < count:
        have = _MEETINGS[key] = _Meeting(torch.zeros(max(count, 1024), dtype=torch.int32, device=t.device))
    return have


def partials_workspace(t: torch.Tensor, partials: int) -> torch.Tensor:
    """A float32 workspace of at least ``partials`` elements on ``t``'s GPU for the current stream, for the partial
    sums that the split path's first launch writes and its second reads: the one :func:`meeting_buffers` keeps. Hold
    :data:`MEETING_LOCK` from taking it until both launches are made (another thread's first launch on the stream
    between them would overwrite the partials the second reads). A CPU tensor gets a new one: the interpreter runs
    launches on the calling thread, so threads share no stream order there. A CUDA graph's capture gets one of its
    own and no counters: :func:`meeting_buffers` would zero some in the graph, a kernel more a replay (about 1 us
    of GPU time a call in a graph of split calls on an H200,
    benchmarks/results/grid/meeting-plans-3d38a5c/split-85a8be4/)."""
    index = t.get_device()
    if index < 0 or torch.cuda.is_current_stream_capturing():
        return torch.empty(partials, dtype=torch.float32, device=t.device)
    return _kept(t, index, 1, partials)[2]


def meeting_tickets_drawn(counters: torch.Tensor, tickets: int) -> None:
    """Count ``tickets`` more drawn at ``counters``' ticket counter (a launch that took them from
    :func:`meeting_counters`); nothing for a CUDA graph's own counters."""
    for have in _MEETINGS.values():
        if have.counters is counters:
            have.drawn = (have.drawn + tickets) % (1 << 32)  # the counter is int32 and wraps; so does its base


def meeting_forget(counters: torch.Tensor) -> None:
    """Drop ``counters`` from the cache, so that the next call on its device and stream starts on fresh zeroed
    counters: for a launch that failed or was interrupted, which may or may not have drawn its tickets (a count
    the host then got wrong would hand the next launch's programs tickets of no row, silently)."""
    for key, have in list(_MEETINGS.items()):
        if have.counters is counters:
            del _MEETINGS[key]


class _Meeting:
    """One (device, stream)'s meeting counters, the tickets drawn at them so far (modulo 2**32), the workspace of
    partial sums kept with them and the slotted meeting's slots and last generation (each made on first use)."""

    def __init__(self, counters: torch.Tensor) -> None:
        self.counters, self.drawn = counters, 0
        self.partials: torch.Tensor | None = None
        self.slots: torch.Tensor | None = None
        self.generation = 0


_MEETINGS: dict[tuple[int, int], _Meeting] = {}

MEETING_LOCK = threading.Lock()
"""Held by a meeting launch from :func:`meeting_counters` until its tickets are counted (:func:`meeting_tickets_drawn`)
or its counters dropped: two threads launching on one stream in between would start from the same ticket base, and
the second launch's programs would draw the tickets after the first's: the pipelined kernel's past its last (rows left
unwritten), the cooperative kernel's rows past the end of its tensors (one ticket a program, no bound on the row).
Held too by the split path from taking its kept workspace (:func:`partials_workspace`) until its second launch."""


def hopper_or_later(t: torch.Tensor) -> bool:
    """``t`` is on a CUDA GPU of compute capability 9.0 or later (TMA, griddepcontrol)."""
    return t.is_cuda and _properties(t).major >= 9


try:  # host-side TMA descriptors: Triton 3.4 and later (3.6 on the GPU machine, 3.9 in CI)
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover - older Triton: the pointer-based kernels serve every shape
    TensorDescriptor = None


def tma_ready(*tensors: torch.Tensor) -> bool:
    """All 2-D 16-bit tensors a TMA descriptor can address: unit last stride, 16-byte aligned base and
    row stride, on a GPU with the Tensor Memory Accelerator (compute capability 9.0+) or under the
    interpreter (which emulates descriptors); never with a Triton that has no host descriptors."""
    if TensorDescriptor is None:
        return False
    for t in tensors:
        if t.dim() != 2 or t.dtype not in (torch.bfloat16, torch.float16) or t.stride(1) != 1:
            return False
        if t.data_ptr() % 16 or (t.stride(0) * t.element_size()) % 16:
            return False
        if t.is_cuda and not hopper_or_later(t):
            return False
    return True


def pdl_ready(t: torch.Tensor) -> bool:
    """Programmatic dependent launch can be used for kernels on ``t``'s device: a CUDA GPU of compute
    capability 9.0+ (Hopper: ``griddepcontrol``), not the interpreter (which has no launch attributes).
    ``KPROF_PDL=0`` turns it off (to compare, or to rule it out)."""
    if interpreting() or not pdl_allowed():
        return False
    return hopper_or_later(t)


def pdl_launch(pdl: bool) -> dict[str, bool]:
    """Launch keywords of a kernel launched as a dependent (none otherwise: the interpreter takes none)."""
    return {"launch_pdl": True} if pdl else {}


_CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9  # CUfunction_attribute in cuda.h
_CARVED: set[tuple[int, int]] = set()  # (kernel function, carveout %) set


def set_carveout(compiled: Any, percent: int) -> int | str:
    """Ask the driver for ``percent`` of SMs' L1/shared memory as shared memory when they run this compiled kernel
    (its preferred carveout; 0: all of it L1). A hint, asked once per kernel function and percent: the CUresult of
    that first asking (0: set), else 0; a string where it could not be asked (no kernel function, the interpreter's;
    no libcuda.so.1 by that name)."""
    handle = getattr(compiled, "function", None)
    if not handle:
        return "not called (no kernel function)"
    if (handle, percent) in _CARVED:
        return 0
    _CARVED.add((handle, percent))
    try:
        return ctypes.CDLL("libcuda.so.1").cuFuncSetAttribute(
            ctypes.c_void_p(handle), _CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, percent
        )
    except OSError as exc:  # not Linux: run without the hint
        return f"not called ({exc})"


def prefer_shared_memory(compiled: Any) -> None:
    """Ask the driver to give SMs running this compiled kernel all of their L1/shared memory as shared
    memory (carveout 100%, :func:`set_carveout`): a kernel with little shared memory otherwise leaves its SMs
    configured for a large L1, and a kernel that overlaps it (PDL) and needs much shared memory cannot start on them
    until they drain. A hint, set once per kernel function; a driver that refuses it is reported, not fatal."""
    if not getattr(compiled, "function", None):
        return  # the interpreter's kernels have none
    rc = set_carveout(compiled, 100)
    if rc != 0:
        warnings.warn(
            f"kprof: setting the shared-memory carveout of {getattr(compiled, 'name', 'a kernel')} "
            f"failed (CUresult {rc}); PDL overlap may not happen",
            RuntimeWarning,
            stacklevel=2,
        )


@triton.jit
def wait_for_primary(PDL: tl.constexpr):
    """In a kernel launched with ``launch_pdl=True``: block until the kernel before it in the stream has
    finished and its writes are visible. Everything before this call may overlap that kernel, so it must
    read nothing the earlier kernel writes. A no-op when not PDL."""
    if PDL:
        tl.extra.cuda.gdc_wait()


@triton.jit
def launch_dependents(PDL: tl.constexpr):
    """Let the next kernel of the stream (launched with ``launch_pdl=True``) start on SMs this one leaves
    free, once every program of this one has made this call; it must then wait (``wait_for_primary``)
    before it reads what this kernel writes."""
    if PDL:
        tl.extra.cuda.gdc_launch_dependents()


# Triton tells the compiler that an integer argument is a multiple of 16 when it is, and nothing otherwise. A row of
# 2056 16-bit elements (a multiple of 8, not of 16) then loads and stores 2 bytes at a time: the sm_90 PTX of
# rmsnorm's row kernel holds ld.global.b16 there, and ld.global.v4.b32 once the width and the row strides are known to
# be multiples of 8 (``known_multiple``; ``tl.multiple_of`` on a kernel argument changes nothing in Triton 3.9).
def vector_align(element_size: int, *ints: int) -> int:
    """The ``ALIGN`` of kernels that take one: the most elements, up to 16 bytes of them, that every one of ``ints``
    (a row width, row strides) is a multiple of; 1 where all are multiples of 16, which Triton's own specialization
    already tells the compiler (so those launches keep the binary they had)."""
    if all(v % 16 == 0 for v in ints):
        return 1
    align = max(1, 16 // element_size)
    while align > 1 and any(v % align for v in ints):
        align //= 2
    return align


@triton.jit
def known_multiple(value, ALIGN: tl.constexpr):
    """``value``, which must be a multiple of ``ALIGN``, in a form the compiler knows to be one (``vector_align``)."""
    if ALIGN > 1:
        value = value // ALIGN * ALIGN
    return value


@triton.jit
def known_row_sizes(N, stride_a, stride_b, ALIGN: tl.constexpr, COLS: tl.constexpr):
    """A row kernel's width (``COLS`` where not 0: compiled in) and two row strides, each in the form
    :func:`known_multiple` gives for ``ALIGN``."""
    if COLS:
        N = COLS
    return known_multiple(N, ALIGN), known_multiple(stride_a, ALIGN), known_multiple(stride_b, ALIGN)


def config_options(config: Any) -> dict[str, Any]:
    """The launch options (warps, stages, and CTAs / register cap where set) of a ``triton.Config``."""
    options = {"num_warps": config.num_warps, "num_stages": config.num_stages}
    if getattr(config, "num_ctas", 1) != 1:
        options["num_ctas"] = config.num_ctas
    if getattr(config, "maxnreg", None) is not None:
        options["maxnreg"] = config.maxnreg
    return options


def launch_autotuned(
    kernel: Any,
    grid: Callable[[dict], tuple[int, ...]],
    *args: Any,
    interpreter_config: dict,
    config: Any = None,
    **kwargs: Any,
) -> tuple[dict[str, int], dict[str, Any]]:
    """Launch a ``@triton.autotune`` kernel with the config its autotuner picks for these arguments, or with
    ``config`` (a ``triton.Config`` pinned by the caller: nothing is timed, the plain kernel is launched
    with it, under the interpreter too). Without one, the interpreter launches the plain kernel with
    ``interpreter_config`` (the autotuner times configs with CUDA events, which need a GPU).

    Returns the (meta-parameters, launch options) the launch used, for launch plans that repeat it."""
    if config is not None:
        meta = dict(config.kwargs)
        options = {} if interpreting() else config_options(config)
        kernel.fn[grid(meta)](*args, **meta, **options, **kwargs)
        return meta, options
    if interpreting():
        kernel.fn[grid(interpreter_config)](*args, **interpreter_config, **kwargs)
        return dict(interpreter_config), {}
    kernel[grid](*args, **kwargs)
    return dict(kernel.best_config.kwargs), config_options(kernel.best_config)


class SameTensorsMemo:
    """One derived tensor (folded, interleaved, concatenated weights) remembered for the exact tensor
    objects it was made from, for a harness provider that measures a kernel on prepared weights.

    It holds the source tensors themselves (so no other tensor can take their address while it
    remembers them) and compares them by identity and version counter. An update that bypasses the
    version counter (``w.data.copy_``, a fused optimizer step) is NOT seen: this is for measuring one
    fixed input set, never for model code, which builds :mod:`kprof.kernels.ops`'s prepared weights and
    refreshes them explicitly."""

    def __init__(self) -> None:
        self._sources: tuple[torch.Tensor, ...] = ()
        self._versions: tuple[int, ...] = ()
        self._derived: Any = None

    def get(self, build: Callable[..., Any], *sources: torch.Tensor) -> Any:
        """``build(*sources)``, reused while the same tensor objects at the same versions come back."""
        same = len(sources) == len(self._sources) and all(a is b for a, b in zip(sources, self._sources))
        versions = tuple(t._version for t in sources)
        if not same or versions != self._versions:
            self._sources, self._versions, self._derived = sources, versions, build(*sources)
        return self._derived


def meta_params(
    op: str, config: Mapping[str, int] | None, chosen: dict[str, int], powers_of_two: Sequence[str] = ()
) -> dict[str, int]:
    """The launch's meta-parameters: what the version chose (``chosen``), overridden by a sweep's
    ``config``. Values the kernel cannot take raise :class:`~kprof.errors.UnsupportedConfig` (a sweep
    records the configuration as skipped with this reason)."""
    if not config:
        return dict(chosen)
    out = {**chosen, **config}
    for name, value in out.items():
        if name not in chosen:
            raise UnsupportedConfig(f"{op}: no meta-parameter {name!r}; it takes {', '.join(chosen)}")
        if value < 1:
            raise UnsupportedConfig(f"{op}: {name}={value} must be at least 1")
    for name in (*powers_of_two, "num_warps"):
        value = out.get(name)
        if value is not None and value & (value - 1):
            raise UnsupportedConfig(f"{op}: {name}={value} is not a power of two (tl.arange and warps need one)")
    if out.get("num_warps", 1) > 32:
        raise UnsupportedConfig(f"{op}: num_warps={out['num_warps']} exceeds 32 (1024 threads per block)")
    return out


def classic_num_warps(block: int) -> int:
    """The widely copied rule of thumb for one-block-per-row kernels: more warps for wider blocks."""
    if block >= 32768:
        return 32
    if block >= 8192:
        return 16
    if block >= 2048:
        return 8
    return 4


def whole_row_meta(
    op: str,
    config: Mapping[str, int] | None,
    width: int,
    element_size: int,
    max_bytes: int,
    *,
    block: str = "BLOCK_N",
    row: str = "row",
    instead: str = "the looped or tuned version",
) -> dict[str, int]:
    """Meta-parameters of a one-block-per-row kernel: the whole ``row`` of ``width`` elements in one power-of-two
    block with the classic warp count, or a sweep's ``config``. Its own choice refuses rows over
    ``max_bytes`` (``ValueError``: use ``instead``); a pinned block narrower than the row is an
    :class:`~kprof.errors.UnsupportedConfig`."""
    size = triton.next_power_of_2(width)
    if config is None and size * element_size > max_bytes:
        raise ValueError(
            f"{op}: {row}s of {width} elements do not fit one block (limit {max_bytes // element_size}); use {instead}"
        )
    meta = meta_params(op, config, {block: size, "num_warps": classic_num_warps(size)}, powers_of_two=(block,))
    if meta[block] < width:
        raise UnsupportedConfig(
            f"{op}: {block}={meta[block]} is smaller than the {row} ({width} elements); this "
            f"version keeps the whole {row} in one block"
        )
    return meta

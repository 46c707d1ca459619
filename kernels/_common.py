"""Input checks, row views and small launch helpers shared by the kernel families (not a family itself).

Every public kernel wrapper validates its inputs with these before launching, and the eager paths of
:mod:`kprof.kernels.ops` validate with the same functions, so both paths reject the same inputs with the
same ``ValueError`` messages.
"""

from __future__ import annotations

import ctypes
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import triton
import triton.language as tl

from kprof.errors import UnsupportedConfig

FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def interpreting() -> bool:
    """True when Triton kernels run in Triton's CPU interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def check_float(op: str, name: str, t: object, *, like: torch.Tensor | None = None) -> torch.Tensor:
    """``t`` must be a non-empty float32/bf16/fp16 tensor (of ``like``'s dtype and device when given)."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{op}: {name} must be a torch tensor, got {type(t).__name__}")
    if t.dtype not in FLOAT_DTYPES:
        raise ValueError(f"{op}: {name} has dtype {t.dtype}; supported dtypes are float32, bfloat16, float16")
    if t.dim() == 0 or t.numel() == 0:
        raise ValueError(f"{op}: {name} is empty (shape {tuple(t.shape)}); give at least one element per dim")
    if like is not None:
        if t.dtype != like.dtype:
            raise ValueError(f"{op}: {name} dtype {t.dtype} differs from the input's {like.dtype}; cast one of them")
        if t.device != like.device:
            raise ValueError(f"{op}: {name} is on {t.device} but the input is on {like.device}; move them to one device")
    return t


def check_shape(op: str, name: str, t: torch.Tensor, expected: Sequence[int]) -> None:
    if tuple(t.shape) != tuple(expected):
        raise ValueError(f"{op}: {name} has shape {tuple(t.shape)}; expected {tuple(expected)}")


def check_triton_device(op: str, t: torch.Tensor) -> None:
    """Triton kernels need CUDA tensors, or the interpreter for CPU tensors."""
    if not t.is_cuda and not interpreting():
        raise ValueError(
            f"{op}: the input is on {t.device}; Triton kernels need a CUDA tensor "
            "(or set TRITON_INTERPRET=1 to run them on the CPU in Triton's interpreter)"
        )


def rows(t: torch.Tensor) -> torch.Tensor:
    """``t`` seen as ``[rows, last]`` with unit column stride: a view when the leading dims collapse
    into one row stride (a slice of a wider buffer does), a copy otherwise."""
    if t.stride(-1) != 1:
        t = t.contiguous()
    try:
        return t.view(-1, t.shape[-1])
    except RuntimeError:  # leading dimensions do not collapse into one row stride
        return t.reshape(-1, t.shape[-1])


def output(op: str, out: torch.Tensor | None, shape: Sequence[int], like: torch.Tensor,
           name: str = "out") -> torch.Tensor:
    """A new contiguous output of ``shape`` (``like``'s dtype and device), or ``out`` checked against it."""
    if out is None:
        return torch.empty(tuple(shape), dtype=like.dtype, device=like.device)
    if not isinstance(out, torch.Tensor):
        raise ValueError(f"{op}: {name} must be a torch tensor, got {type(out).__name__}")
    if tuple(out.shape) != tuple(shape) or out.dtype != like.dtype or out.device != like.device:
        raise ValueError(
            f"{op}: {name} is {tuple(out.shape)} {out.dtype} on {out.device}; "
            f"expected {tuple(shape)} {like.dtype} on {like.device}"
        )
    if not out.is_contiguous():
        raise ValueError(f"{op}: {name} must be contiguous")
    return out


def _properties(t: torch.Tensor) -> Any:
    """``t``'s GPU's properties, looked up once per device (the wrappers ask on every call)."""
    index = t.get_device()
    if index not in _PROPERTIES:
        _PROPERTIES[index] = torch.cuda.get_device_properties(index)
    return _PROPERTIES[index]


_PROPERTIES: dict[int, Any] = {}


def sm_count(t: torch.Tensor) -> int:
    """Streaming multiprocessors of ``t``'s GPU (132, an H100's, for CPU tensors in the interpreter)."""
    return _properties(t).multi_processor_count if t.is_cuda else 132


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
    if interpreting() or os.environ.get("KPROF_PDL", "1") == "0":
        return False
    return hopper_or_later(t)


def pdl_launch(pdl: bool) -> dict[str, bool]:
    """Launch keywords of a kernel launched as a dependent (none otherwise: the interpreter takes none)."""
    return {"launch_pdl": True} if pdl else {}


_CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9  # CUfunction_attribute in cuda.h
_CARVED: set[int] = set()


def prefer_shared_memory(compiled: Any) -> None:
    """Ask the driver to give SMs running this compiled kernel all of their L1/shared memory as shared
    memory (carveout 100%): a kernel with little shared memory otherwise leaves its SMs configured for a
    large L1, and a kernel that overlaps it (PDL) and needs much shared memory cannot start on them until
    they drain. A hint, set once per kernel function; a driver that refuses it is reported, not fatal."""
    handle = getattr(compiled, "function", None)
    if not handle or handle in _CARVED:
        return
    _CARVED.add(handle)
    try:
        rc = ctypes.CDLL("libcuda.so.1").cuFuncSetAttribute(
            ctypes.c_void_p(handle), _CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100)
    except OSError as exc:  # no libcuda.so.1 by that name (not Linux): run without the hint
        rc = f"not called ({exc})"
    if rc != 0:
        warnings.warn(f"kprof: setting the shared-memory carveout of {getattr(compiled, 'name', 'a kernel')} "
                      f"failed (CUresult {rc}); PDL overlap may not happen", RuntimeWarning, stacklevel=2)


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


def launch_autotuned(kernel: Any, grid: Callable[[dict], tuple[int, ...]], *args: Any,
                     interpreter_config: dict, **kwargs: Any) -> None:
    """Launch a ``@triton.autotune`` kernel; under the interpreter launch its plain kernel with
    ``interpreter_config`` instead (the autotuner times configs with CUDA events, which need a GPU)."""
    if interpreting():
        kernel.fn[grid(interpreter_config)](*args, **interpreter_config, **kwargs)
    else:
        kernel[grid](*args, **kwargs)


def tile_config(bm: int, bn: int, bk: int, warps: int, stages: int, group_m: int = 8) -> Any:
    """A ``triton.Config`` of a tiled matrix-product kernel (BLOCK_M/N/K, GROUP_M, warps, stages)."""
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": group_m},
                         num_warps=warps, num_stages=stages)


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


def matrix_dims(op: str, shape: Sequence[int], example: str) -> tuple[int, int, int]:
    """``(*batch, K, N)`` -> ``(M, K, N)`` with M the product of the batch dimensions."""
    if len(shape) < 3:
        raise ValueError(f"{op} shapes are (*batch, K, N), e.g. {example}; got {tuple(shape)}")
    m = 1
    for s in shape[:-2]:
        m *= s
    return m, shape[-2], shape[-1]


@triton.jit
def grouped_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(row tile, column tile) of program ``pid`` in grouped order: GROUP_M row tiles per column tile,
    so programs running together share weight tiles in L2 (Triton's matmul tutorial ordering)."""
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * grid_n
    first_m = (pid // group) * GROUP_M
    group_m = min(grid_m - first_m, GROUP_M)
    return first_m + (pid % group) % group_m, (pid % group) // group_m


@triton.jit
def dot_acc(a, b, acc, IEEE: tl.constexpr):
    """``acc + a @ b``: the tensor-core product of the inputs' dtype, or (IEEE) a full-fp32 product (fp32
    inputs must not silently become TF32, and the interpreter's bf16 dot is wrong)."""
    if IEEE:
        return acc + tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    return tl.dot(a, b, acc)


@triton.jit
def store_tile(y_desc, out, off_m, off_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SUBTILE: tl.constexpr):
    """Store an output tile through its TMA descriptor, whole or (SUBTILE) as two column halves: the
    staging buffer in shared memory is then half as big, which leaves room for a 4th pipeline stage of
    swiglu's 128x128 output tiles (256-wide weight tiles) on an H100. The descriptor's block is then
    [BLOCK_M, BLOCK_N // 2]."""
    if SUBTILE:
        left, right = tl.split(tl.permute(tl.reshape(out, [BLOCK_M, 2, BLOCK_N // 2]), (0, 2, 1)))
        y_desc.store([off_m, off_n], left.to(y_desc.dtype))
        y_desc.store([off_m, off_n + BLOCK_N // 2], right.to(y_desc.dtype))
    else:
        y_desc.store([off_m, off_n], out.to(y_desc.dtype))


def numel_rows(shape: Sequence[int]) -> int:
    """Product of all but the last dimension (the number of rows of a row-wise op)."""
    n = 1
    for d in shape[:-1]:
        n *= d
    return n


def meta_params(op: str, config: Mapping[str, int] | None, chosen: dict[str, int],
                powers_of_two: Sequence[str] = ()) -> dict[str, int]:
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


def whole_row_meta(op: str, config: Mapping[str, int] | None, width: int, element_size: int, max_bytes: int,
                   *, block: str = "BLOCK_N", row: str = "row", instead: str = "the looped or tuned version"
                   ) -> dict[str, int]:
    """Meta-parameters of a one-block-per-row kernel: the whole ``row`` of ``width`` elements in one power-of-two
    block with the classic warp count, or a sweep's ``config``. Its own choice refuses rows over
    ``max_bytes`` (``ValueError``: use ``instead``); a pinned block narrower than the row is an
    :class:`~kprof.errors.UnsupportedConfig`."""
    size = triton.next_power_of_2(width)
    if config is None and size * element_size > max_bytes:
        raise ValueError(f"{op}: {row}s of {width} elements do not fit one block "
                         f"(limit {max_bytes // element_size}); use {instead}")
    meta = meta_params(op, config, {block: size, "num_warps": classic_num_warps(size)}, powers_of_two=(block,))
    if meta[block] < width:
        raise UnsupportedConfig(f"{op}: {block}={meta[block]} is smaller than the {row} ({width} elements); this "
                                f"version keeps the whole {row} in one block")
    return meta


def aligned8(*values: int) -> bool:
    """All multiples of 8 (elements) but not all of 16: a tiled product should then promise the compiler
    16-byte aligned rows, which it cannot infer by itself.

    Triton only specialises integer arguments on divisibility by 16, and the wrap-around ``% N`` of a
    tile's column offsets hides their contiguity: at 1000x1000x3000 every tile of the swiglu and
    rmsnorm_linear products was loaded one element at a time (``ld.global.b16`` in the sm_90 PTX, 5-10x
    slower than cuBLAS on the H100). With ``tl.multiple_of`` / ``tl.max_contiguous`` / ``tl.max_constancy``
    written in the kernel body (the same calls inside a ``@triton.jit`` helper were lost) the tiles move
    with ``cp.async`` 16-byte copies, as for sizes divisible by 16 (checked by compiling both for sm_90).
    Where everything is a multiple of 16 the promise must not be made: it replaces what the compiler
    knows (divisible by 16, contiguous over the whole tile) by weaker facts, and on the H100 that made
    2048x2048x5504 and 8192x4096x11008 3.6-3.8x slower (run 20261122-162348-ec8a)."""
    return all(v % 8 == 0 for v in values) and not all(v % 16 == 0 for v in values)


def promise_aligned(x2d: torch.Tensor, w: torch.Tensor) -> bool:
    """The ``ALIGNED`` argument of a tiled product of ``x2d`` [M, K] by ``w`` [K, N]: :func:`aligned8` of K,
    N and both row strides, with unit column strides (the promise is about contiguous rows)."""
    return (aligned8(x2d.shape[1], w.shape[1], x2d.stride(0), w.stride(0))
            and x2d.stride(1) == 1 and w.stride(1) == 1)


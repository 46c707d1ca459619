"""Which specialisation of each Triton kernel a call ran, and what the compiler gave it.

A Triton kernel is compiled once per *specialisation*: its constexpr values (``BLOCK_N``...), the launch
options ``num_warps`` / ``num_stages``, and for an autotuned kernel the config the autotuner picked for the
shape. Profilers only see the compiled kernel's name, so a time in their tables cannot say which of these
produced it. :func:`recording` watches Triton's own launch path for the length of a block and returns one
:class:`Specialization` per launch, with the compiler's resources for it:

* on a GPU, from the compiled kernel that launched (``CompiledKernel``: registers and local memory as the
  driver reports them for the loaded cubin, shared memory from the compiler's metadata);
* under Triton's CPU interpreter, nothing is compiled, so the launch's constexprs and options are recorded;
  :func:`offline_resources` then compiles the same specialisations for an NVIDIA target without a GPU
  (Triton's compiler and its bundled ``ptxas`` run on the CPU) and ``ptxas -v`` reports registers, spills
  and stack. That compile runs in a child process: with the interpreter on, ``@triton.jit`` (Triton's own
  ``tl.sum`` included) yields interpreted functions the compiler cannot lower.

Triton has no public per-launch hook that carries the compiled kernel, so the GPU path wraps
``CompiledKernel.launch_metadata`` (called for every launch in Triton 3.x) and the interpreter path wraps
``InterpretedFunction.run``; both exist with the same signatures in Triton 3.6 and 3.9 (tested in CI and on
the H100). Where they do not, :func:`recording` records nothing and says why in ``Recording.note``.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kprof.fmt import config_label
from kprof.runtime import Patch, in_route_race, launch_recording, patched

OPTION_NAMES = ("num_warps", "num_stages")


@dataclass(frozen=True)
class Specialization:
    """One Triton launch: which compiled variant ran and the compiler's resources for it."""

    kernel: str
    constexprs: tuple[tuple[str, Any], ...] = ()
    num_warps: int | None = None
    num_stages: int | None = None
    grid: tuple[int, ...] | None = None
    autotuned: bool = False
    """Launched by ``@triton.autotune``: the constexprs and options are the config it picked."""
    registers: int | None = None
    """Registers per thread."""
    local_bytes: int | None = None
    """Local memory per thread (bytes); above 0 the compiler spilled registers (or kept an array there)."""
    spill_bytes: int | None = None
    """Bytes of spill stores per thread as ptxas reports them (offline compiles only)."""
    shared_mem_bytes: int | None = None
    """Shared memory per block the compiled kernel asks for (Triton allocates it dynamically)."""
    resources_from: str | None = None
    """``driver`` (the loaded cubin, on the GPU), ``ptxas sm_XX (offline)``, or None (not compiled)."""

    @property
    def config(self) -> dict[str, Any]:
        out = dict(self.constexprs)
        if self.num_warps is not None:
            out["num_warps"] = self.num_warps
        if self.num_stages is not None:
            out["num_stages"] = self.num_stages
        return out

    def label(self) -> str:
        """``BLOCK_N=4096 num_warps=8 num_stages=3`` (``(autotuned)`` appended for the autotuner's pick)."""
        return config_label(self.config, self.autotuned)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["constexprs"] = dict(self.constexprs)
        d["grid"] = list(self.grid) if self.grid else None
        return d


@dataclass
class Recording:
    """What :func:`recording` saw: the launches in order, and why some could not be seen."""

    launches: list[Specialization] = field(default_factory=list)
    note: str | None = None
    calls: list[dict[str, Any] | None] = field(default_factory=list)
    """Per launch under the interpreter: the kernel's module and name and its arguments described by
    dtype / alignment / value (what the specialisation depends on), for :func:`offline_resources`."""
    patched: list[str] = field(default_factory=list)
    """What the recording replaced in Triton while it ran, and why (one line each)."""


def _plain(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)


def _is_constexpr_annotation(annotation: Any) -> bool:
    # the kernels' modules may use `from __future__ import annotations`: the annotation is then a string
    return annotation is not inspect.Parameter.empty and "constexpr" in str(annotation)


def from_compiled(kernel: Any, grid: Any = None, autotuned: bool = False) -> Specialization:
    """A :class:`Specialization` from a Triton ``CompiledKernel`` (after it was loaded on the GPU)."""
    src = getattr(kernel, "src", None)
    fn = getattr(src, "fn", None)
    constexprs: list[tuple[str, Any]] = []
    if fn is not None and hasattr(src, "constants"):
        names = list(fn.arg_names)
        params = list(getattr(fn, "params", []))
        for key, value in sorted(src.constants.items(), key=lambda kv: str(kv[0])):
            idx = key[0] if isinstance(key, tuple) and len(key) == 1 else (names.index(key) if key in names else None)
            if idx is None or idx >= len(names):
                continue
            # an int argument equal to 1 is specialised into a constant too; only declared constexprs count
            if params and not params[idx].is_constexpr:
                continue
            constexprs.append((names[idx], _plain(value)))
        order = {n: i for i, n in enumerate(names)}
        constexprs.sort(key=lambda kv: order.get(kv[0], 0))
    md = kernel.metadata
    n_regs = getattr(kernel, "n_regs", None)
    n_spills = getattr(kernel, "n_spills", None)
    loaded = getattr(kernel, "function", None) is not None and n_regs is not None
    return Specialization(
        kernel=str(getattr(md, "name", None) or getattr(kernel, "name", "?")),
        constexprs=tuple(constexprs),
        num_warps=int(md.num_warps),
        num_stages=int(md.num_stages),
        grid=_grid(grid),
        autotuned=autotuned,
        registers=int(n_regs) if loaded else None,
        # Triton's loader divides the driver's CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES by 4 into n_spills
        local_bytes=int(n_spills) * 4 if loaded and n_spills is not None else None,
        shared_mem_bytes=int(md.shared),
        resources_from="driver" if loaded else None,
    )


def _grid(grid: Any) -> tuple[int, ...] | None:
    if isinstance(grid, (tuple, list)) and all(isinstance(g, int) for g in grid):
        return tuple(int(g) for g in grid)
    return None


def _from_interpreted(fn: Any, args: tuple, kwargs: dict, grid: Any, autotuned: bool) -> Specialization:
    sig = inspect.signature(fn)
    plain = {k: v for k, v in kwargs.items() if k in sig.parameters}
    try:
        bound = sig.bind_partial(*args, **plain)
    except TypeError:
        bound = None
    constexprs = []
    if bound is not None:
        for name, p in sig.parameters.items():
            if _is_constexpr_annotation(p.annotation):
                value = bound.arguments.get(name, p.default)
                if value is not inspect.Parameter.empty:
                    constexprs.append((name, _plain(value)))
    return Specialization(
        kernel=fn.__name__,
        constexprs=tuple(constexprs),
        num_warps=int(kwargs.get("num_warps", 4)),
        num_stages=int(kwargs.get("num_stages", 3)),
        grid=_grid(grid),
        autotuned=autotuned,
    )


@contextmanager
def recording() -> Iterator[Recording]:
    """Record every Triton launch made inside the block (a :class:`Recording`, filled as launches happen).

    Inside ``@triton.autotune`` only the launch of the picked config is kept (its benchmarking launches of
    the other configs, on the first call for a shape, are dropped), and a route race's timing calls
    (:func:`kprof.runtime.route_race`) are not recorded: the route it picks runs after it and is.
    """
    rec = Recording()
    patches: list[Patch] = []
    depth = [0]

    try:
        from triton.compiler.compiler import CompiledKernel

        original_lm = CompiledKernel.__dict__["launch_metadata"]

        def launch_metadata(self: Any, grid: Any, stream: Any, *args: Any) -> Any:
            out = original_lm(self, grid, stream, *args)  # loads the cubin first: registers are known after
            if not in_route_race():
                rec.launches.append(from_compiled(self, grid, autotuned=depth[0] > 0))
                rec.calls.append(None)
            return out

        patches.append(
            Patch(
                CompiledKernel,
                "launch_metadata",
                launch_metadata,
                "records each compiled launch's specialisation and resources",
            )
        )
    except (ImportError, KeyError) as exc:
        rec.note = f"GPU launches cannot be attributed with this Triton ({type(exc).__name__}: {exc})"
    try:
        from triton.runtime.interpreter import InterpretedFunction

        original_run = InterpretedFunction.__dict__["run"]

        def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            if not warmup and not in_route_race():
                rec.launches.append(_from_interpreted(self.fn, args, kwargs, grid, depth[0] > 0))
                rec.calls.append(describe_call(self.fn, args, kwargs))
            return original_run(self, *args, grid=grid, warmup=warmup, **kwargs)

        patches.append(
            Patch(InterpretedFunction, "run", run, "records each interpreted launch's specialisation and arguments")
        )
    except (ImportError, KeyError) as exc:
        rec.note = f"interpreter launches cannot be attributed with this Triton ({type(exc).__name__}: {exc})"
    try:
        from triton.runtime.autotuner import Autotuner

        original_tune = Autotuner.__dict__["run"]

        def tune(self: Any, *args: Any, **kwargs: Any) -> Any:
            start = len(rec.launches)
            depth[0] += 1
            try:
                return original_tune(self, *args, **kwargs)
            finally:
                depth[0] -= 1
                if depth[0] == 0 and len(rec.launches) > start + 1:
                    del rec.launches[start:-1]  # benchmarking launches of the configs not picked
                    del rec.calls[start:-1]

        patches.append(Patch(Autotuner, "run", tune, "keeps only the launch of the config the autotuner picked"))
    except (ImportError, KeyError):
        pass
    with patched(patches) as rec.patched, launch_recording():
        yield rec


# ------------------------------------------------------------------------------------- offline compile
_OFFLINE_CACHE: dict[str, dict[str, Any]] = {}


def describe_call(fn: Any, args: tuple, kwargs: dict) -> dict[str, Any] | None:
    """A launch as JSON: kernel module and name, arguments by what specialisation depends on. None when
    an argument cannot be described (the offline compile is then skipped for that launch)."""
    try:
        return {
            "module": fn.__module__,
            "name": fn.__name__,
            "args": [_describe(a) for a in args],
            "kwargs": {k: _describe(v) for k, v in kwargs.items()},
        }
    except TypeError:
        return None


def _describe(value: Any) -> Any:
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        return {"tensor": str(value.dtype).replace("torch.", ""), "offset": int(value.data_ptr() % 16)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    raise TypeError(f"cannot describe a {type(value).__name__} argument")


def _rebuild(desc: Any) -> Any:
    import torch

    if "tensor" in desc:
        # what Triton's binder looks at is the dtype and the address modulo 16; torch's CPU allocations
        # are 64-byte aligned, so a slice puts the pointer at the launch's offset
        base = torch.empty(64, dtype=getattr(torch, desc["tensor"]))
        return base[desc["offset"] // base.element_size() :]
    return desc["value"]


def compiler_env() -> dict[str, str]:
    """The environment of a child process that compiles kernels for the GPU: this process's, without
    ``TRITON_INTERPRET`` (under the interpreter ``@triton.jit`` makes no compilable kernel)."""
    return {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}


def offline_resources(rec: Recording, arch: int = 90, timeout_s: float = 900.0) -> Recording:
    """``rec`` with each interpreter launch's registers, spills and shared memory, compiled for ``sm_{arch}``
    on the CPU in one child process (Triton's compiler and ptxas; ~1 s per new specialisation, cached).

    A launch that cannot be compiled keeps empty resources and says why in ``resources_from``."""
    import json
    import sys

    todo = {}
    for call in rec.calls:
        if call is not None:
            key = json.dumps(call, sort_keys=True) + f"@{arch}"
            if key not in _OFFLINE_CACHE:
                todo[key] = call
    if todo:
        payload = json.dumps({"arch": arch, "calls": list(todo.values())})
        cmd = [sys.executable, "-m", "kprof.specialization"]
        try:
            res = subprocess.run(
                cmd, input=payload, capture_output=True, text=True, timeout=timeout_s, env=compiler_env()
            )
            failure = None if res.returncode == 0 else f"exit {res.returncode}: {res.stderr.strip()[-300:]}"
        except subprocess.TimeoutExpired:
            failure = f"no answer within {timeout_s:.0f} s"
        if failure:  # said in every affected launch, and so in the run's metrics
            answers = [{"resources_from": f"offline compile failed ({' '.join(cmd)}: {failure})"}] * len(todo)
        else:
            answers = json.loads(res.stdout.strip().splitlines()[-1])
        _OFFLINE_CACHE.update(zip(todo, answers, strict=True))  # one answer per call, or the child lied
    launches = []
    for spec, call in zip(rec.launches, rec.calls, strict=True):  # appended in pairs
        found = _OFFLINE_CACHE.get(json.dumps(call, sort_keys=True) + f"@{arch}") if call is not None else None
        if found:
            spec = Specialization(**{**{f: getattr(spec, f) for f in spec.__dataclass_fields__}, **found})
        launches.append(spec)
    return Recording(launches=launches, note=rec.note, calls=list(rec.calls))


def _compile_described(call: dict[str, Any], arch: int, instructions: bool = False) -> dict[str, Any]:
    import importlib

    obj = getattr(importlib.import_module(call["module"]), call["name"])
    obj = getattr(obj, "fn", obj) if type(obj).__name__ == "Autotuner" else obj
    args = tuple(_rebuild(a) for a in call["args"])
    kwargs = {k: _rebuild(v) for k, v in call["kwargs"].items()}
    return compile_resources(obj, args, kwargs, arch, instructions)


def compile_for(fn: Any, args: tuple, kwargs: dict, arch: int = 90) -> Any:
    """Compile a ``@triton.jit`` kernel for ``sm_{arch}`` with a launch's arguments and options, without a
    GPU; returns Triton's ``CompiledKernel`` (``.asm["ptx"]``, ``.metadata``).

    The specialisation is built the way Triton's launcher builds it (its own binder: dtypes, 16-byte
    alignment of pointers and divisibility of integers), so the PTX is the one a launch would compile.
    Needs a real ``JITFunction``: call it in a process where the interpreter is off."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile, make_backend
    from triton.runtime.jit import JITFunction, create_function_from_signature

    if not isinstance(fn, JITFunction):
        raise TypeError(f"{fn!r} is not a JITFunction (is TRITON_INTERPRET=1 set in this process?)")
    target = GPUTarget("cuda", arch, 32)
    backend = make_backend(target)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    bound_args, specialization, options = binder(*args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound_args, specialization, options)
    return compile(ASTSource(fn, signature, constexprs, attrs), target=target, options=options.__dict__)


def compile_resources(fn: Any, args: tuple, kwargs: dict, arch: int = 90, instructions: bool = False) -> dict[str, Any]:
    """:func:`compile_for`, then its resources: registers, stack frame and spill stores from ``ptxas -v``,
    shared memory from the compiler's metadata; with ``instructions``, also :func:`memory_instructions` of
    the PTX under the key ``instructions``."""
    compiled = compile_for(fn, args, kwargs, arch)
    res: dict[str, Any] = dict(ptxas_resources(compiled.asm["ptx"], arch))
    res["shared_mem_bytes"] = int(compiled.metadata.shared)
    res["resources_from"] = f"ptxas sm_{arch} (offline)"
    if instructions:
        res["instructions"] = memory_instructions(compiled.asm["ptx"])
        res["memory_order"] = memory_order(compiled.asm["ptx"])
    return res


# How a kernel moves its data and feeds its tensor cores, by PTX instruction: what two Triton versions can
# compile differently for the same specialisation (benchmarks/triton_versions.py compares them).
_PTX_KINDS = {
    "cp.async": re.compile(r"\bcp\.async\.c[ag]\.shared\.global\b"),
    "tma": re.compile(r"\bcp\.async\.bulk\."),
    # qualifiers may carry "::" (cache hints: ld.global.L1::evict_last.L2::cache_hint.v4.b32)
    "ld.global vector": re.compile(r"\bld\.global(?:\.[\w:]+)*?\.v[248]\."),
    "ld.global 16-bit": re.compile(r"\bld\.global(?:\.[\w:]+)*?\.[bu]16\b"),
    "st.global vector": re.compile(r"\bst\.global(?:\.[\w:]+)*?\.v[248]\."),
    "st.global 16-bit": re.compile(r"\bst\.global(?:\.[\w:]+)*?\.[bu]16\b"),
    "mma.sync": re.compile(r"\bmma\.sync\."),
    "wgmma": re.compile(r"\bwgmma\.mma_async\."),
}


def memory_instructions(ptx: str) -> dict[str, int]:
    """Counts of the PTX instructions that say how a kernel moves data: ``cp.async`` copies to shared memory,
    TMA (``cp.async.bulk``), vector and 16-bit scalar global loads and stores, ``mma.sync`` and ``wgmma``
    (static counts in the code, not executions)."""
    return {kind: len(pattern.findall(ptx)) for kind, pattern in _PTX_KINDS.items()}


# How a kernel orders its memory accesses for other programs (a cross-program meeting: kernels/lib/split_rows.py,
# kernels/lib/split_k.py): atomics and reductions (red) by the order their PTX gives them, acquire loads, fences,
# and loads from L2 that bypass L1 (.cg), where a value another program wrote must not come from a stale L1 line.
_RMW = r"(?<![.\w])(?:atom|red)(?:\.[\w:]+)*?"  # not bar.red, a barrier's reduction
_PTX_ORDER = {
    "relaxed atomic": re.compile(_RMW + r"\.relaxed\b"),
    "release atomic": re.compile(_RMW + r"\.release\b"),
    "acquire atomic": re.compile(_RMW + r"\.acquire\b"),
    "acq_rel atomic": re.compile(_RMW + r"\.acq_rel\b"),
    "atomic, no order": re.compile(
        r"(?<![.\w])(?:atom|red)\.(?![\w.:]*\b(?:relaxed|release|acquire|acq_rel)\b)[\w.:]+"
    ),
    "acquire load": re.compile(r"\bld(?:\.[\w:]+)*?\.acquire\b"),
    "fence": re.compile(r"\b(?:fence\.(?:sc|acq_rel)|membar)\b"),
    "ld.global.cg": re.compile(r"\bld\.global\.cg\b"),
}


def memory_order(ptx: str) -> dict[str, int]:
    """Counts of the PTX instructions by the memory order they give (static counts in the code): atomics and
    reductions relaxed, release, acquire, acq_rel or with none given (PTX then takes them as relaxed), acquire
    loads, fences, and ``ld.global.cg`` loads (from L2, past L1)."""
    return {kind: len(pattern.findall(ptx)) for kind, pattern in _PTX_ORDER.items()}


_PTXAS_PATTERNS = {
    "registers": re.compile(r"Used (\d+) registers"),
    "local_bytes": re.compile(r"(\d+) bytes stack frame"),
    "spill_bytes": re.compile(r"(\d+) bytes spill stores"),
}


def ptxas_resources(ptx: str, arch: int = 90) -> dict[str, int]:
    """Registers, stack frame and spill stores per thread from ``ptxas -v`` on ``ptx`` (Triton's ptxas)."""
    from triton.backends.nvidia.compiler import get_ptxas

    tool = get_ptxas(arch).path
    gpu = f"sm_{arch}a" if arch >= 90 else f"sm_{arch}"
    with tempfile.TemporaryDirectory(prefix="kprof-ptxas-") as tmp:
        src = Path(tmp) / "kernel.ptx"
        src.write_text(ptx)
        cmd = [tool, "-v", f"--gpu-name={gpu}", str(src), "-o", str(Path(tmp) / "kernel.cubin")]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {res.returncode}: {res.stderr.strip()[-400:]}")
    return parse_ptxas_log(res.stderr + res.stdout)


def parse_ptxas_log(log: str) -> dict[str, int]:
    """The figures of ``ptxas -v`` output for its (last) function: registers, stack frame, spill stores."""
    out: dict[str, int] = {}
    for key, pattern in _PTXAS_PATTERNS.items():
        found = pattern.findall(log)
        if found:
            out[key] = int(found[-1])
    if "registers" not in out:
        raise ValueError(f"no 'Used N registers' line in the ptxas output: {log.strip()[-300:]!r}")
    return out


def _main() -> None:
    """``python -m kprof.specialization`` < {"arch": 90, "calls": [...]}: one JSON line of resources per
    call, in order (a call that fails to compile gets ``resources_from`` saying why). ``"instructions":
    true`` in the request adds each call's :func:`memory_instructions`."""
    import json
    import sys

    req = json.loads(sys.stdin.read())
    out = []
    for call in req["calls"]:
        try:
            out.append(_compile_described(call, int(req["arch"]), bool(req.get("instructions"))))
        except Exception as exc:  # noqa: BLE001 - one config that does not compile must not hide the rest
            first = next((ln for ln in str(exc).strip().splitlines() if ln.strip()), "")
            out.append({"resources_from": f"offline compile failed: {type(exc).__name__}: {first[:200]}"})
    print(json.dumps(out))


if __name__ == "__main__":
    _main()

"""Kernel names as one key across profilers.

Profilers print the same kernel differently: nsys and Kineto demangle with NVIDIA's demangler
(``elementwise_kernel<(int)128, ...>(int, T3)::[lambda(int) (instance 1)]``), Proton keeps the mangled
symbol (``_ZN2at6native18elementwise_kernel...``), ROCm's Kineto appends ``[clone .kd]``, legacy rocprof
``.kd``, GNU's demangler writes ``{lambda(int)#1}`` and ``T const&``. :func:`normalize` maps all of
these to one key (the ``kernel_norm`` column of the launch table) that diff and cross-profiler matching
use; the profiler's own spelling stays in ``kernel``.

The key is the qualified name with its template arguments, without return type, parameter lists and
spacing, which are where the demanglers disagree: two instantiations with different template arguments
stay apart, while ``f<(int)4>(int, T1)`` and ``void f<4>(int, float*)`` meet.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re

_CLONE = re.compile(r"\s*\[clone [^\]]*\]\s*$")
_KD = re.compile(r"\.kd$")
_CAST = re.compile(r"\((?:unsigned |signed )?(?:int|long|long long|short|char|unsigned|bool|size_t)\)\s*(-?\d+)")
_LAMBDA_NV = re.compile(r"\[lambda\((?:[^()]|\([^()]*\))*\) \(instance (\d+)\)\]")
_LAMBDA_GNU = re.compile(r"\{lambda\((?:[^()]|\([^()]*\))*\)#(\d+)\}")
_SUFFIX = re.compile(r"\b(\d+)(?:ull|ul|ll|u|l)\b")
_PARENS = re.compile(r"\([^()]*\)")
_SPACES = re.compile(r"\s*([<>,&*:])\s*")


@functools.lru_cache(maxsize=1)
def _demangler():  # libstdc++'s __cxa_demangle (no extra dependency); None where there is none
    for name in (ctypes.util.find_library("stdc++"), "libstdc++.so.6", "libc++abi.dylib"):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
            fn = lib.__cxa_demangle
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_int)]
        free = ctypes.CDLL(None).free
        free.argtypes = [ctypes.c_void_p]
        return fn, free
    return None


@functools.lru_cache(maxsize=65536)
def demangle(symbol: str) -> str:
    """An Itanium-mangled symbol (``_Z...``) demangled; anything else, or a symbol that does not demangle,
    unchanged."""
    if not symbol.startswith("_Z") or len(symbol) > 65536:
        return symbol
    dm = _demangler()
    if dm is None:
        return symbol
    fn, free = dm
    status = ctypes.c_int()
    ptr = fn(symbol.encode("utf-8", "replace"), None, None, ctypes.byref(status))
    if not ptr or status.value != 0:
        return symbol
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        free(ptr)


@functools.lru_cache(maxsize=65536)
def normalize(name: str) -> str:
    """The profiler-independent key of a kernel name (see the module docstring)."""
    s = _CLONE.sub("", str(name).strip())
    s = _KD.sub("", s)
    s = demangle(s)
    if "(" not in s and "<" not in s:
        return s  # Triton kernels and plain C names: nothing to canonicalise
    s = s.replace("(anonymous namespace)", "<unnamed>")
    s = re.sub(r"\(bool\)\s*1\b", "true", s)
    s = re.sub(r"\(bool\)\s*0\b", "false", s)
    s = _CAST.sub(r"\1", s)
    s = _SUFFIX.sub(r"\1", s)  # GNU's 2ul is NVIDIA's (unsigned long)2
    s = _LAMBDA_NV.sub(r"lambda#\1", s)
    s = _LAMBDA_GNU.sub(r"lambda#\1", s)
    for _ in range(64):  # parameter lists, innermost first
        s, n = _PARENS.subn("", s)
        if not n:
            break
    s = re.sub(r"\bvoid\s+", "", s)
    s = _SPACES.sub(r"\1", s)
    s = re.sub(r"\s+", " ", s).strip()
    return s or str(name)

"""The dtype names kprof uses on the command line, in YAML sweeps and in the store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kprof.errors import KprofError

if TYPE_CHECKING:
    import torch

DTYPE_NAMES: tuple[str, ...] = ("fp32", "bf16", "fp16")
_ALIASES = {
    "fp32": "fp32",
    "float32": "fp32",
    "float": "fp32",
    "f32": "fp32",
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "f16": "fp16",
}


def canonical_dtype(name: str) -> str:
    """``"bfloat16"`` -> ``"bf16"``; raises KprofError naming the accepted spellings."""
    key = str(name).strip().lower().removeprefix("torch.")
    if key not in _ALIASES:
        raise KprofError(f"unknown dtype {name!r}: use one of {', '.join(DTYPE_NAMES)}")
    return _ALIASES[key]


def torch_dtype(name: str) -> torch.dtype:
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[canonical_dtype(name)]


def dtype_name(dtype: torch.dtype) -> str:
    return canonical_dtype(str(dtype))


def element_size(name: str) -> int:
    return {"fp32": 4, "bf16": 2, "fp16": 2}[canonical_dtype(name)]

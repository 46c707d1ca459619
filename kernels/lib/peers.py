"""What peer libraries (Liger-Kernel) refuse, for the ``supports`` of the families that compare against them."""

from __future__ import annotations

LIGER_MAX_FUSED_SIZE = 65536  # Liger's widest block (``liger_kernel.ops.utils.calculate_settings`` raises past it)


def liger_row_limit(shape: tuple[int, ...], dtype: str) -> str | None:
    """Liger's norms refuse rows whose power-of-two block exceeds 65536 elements (its MAX_FUSED_SIZE)."""
    return f"Liger's rms_norm refuses rows over 65536 elements (N={shape[-1]})" if _over_block(shape[-1]) else None


def liger_gated_limit(shape: tuple[int, ...], dtype: str) -> str | None:
    """Liger's gated kernels take the whole half-row ``H`` of ``x = [..., 2H]`` in one block: they refuse an H whose
    power-of-two block exceeds 65536 (at 1x(2*131072) both raised ``RuntimeError`` on an H200)."""
    h = shape[-1] // 2
    return f"Liger's gated kernels refuse H over 65536 (H={h})" if _over_block(h) else None


def _over_block(width: int) -> bool:
    """Whether ``width`` elements' power-of-two block exceeds Liger's widest, as ``calculate_settings`` rounds it."""
    return 1 << max(0, width - 1).bit_length() > LIGER_MAX_FUSED_SIZE

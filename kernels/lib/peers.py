"""What peer libraries (Liger-Kernel) refuse, for the ``supports`` of the families that compare against them."""

from __future__ import annotations


def liger_row_limit(shape: tuple[int, ...], dtype: str) -> str | None:
    """Liger's norms refuse rows whose power-of-two block exceeds 65536 elements (its MAX_FUSED_SIZE)."""
    block = 1 << max(0, shape[-1] - 1).bit_length()
    return f"Liger's rms_norm refuses rows over 65536 elements (N={shape[-1]})" if block > 65536 else None

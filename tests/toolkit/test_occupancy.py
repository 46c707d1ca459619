"""Theoretical occupancy: hand-worked cases on H100 limits, then the driver's own answer on a GPU."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from kprof.occupancy import (
    BlockShape,
    DeviceLimits,
    blocks_beside,
    driver_max_active_blocks,
    limits_for,
    theoretical_occupancy,
)

H100 = DeviceLimits()


@pytest.mark.parametrize(
    "threads, regs, smem, blocks, pct, limiter",
    [
        # 8 warps/block; 32 regs -> 1024 regs/warp -> 16 warps per quarter -> 64 warps: 8 blocks, 100%
        (256, 32, 0, 8, 100.0, "warps"),
        # 4 warps/block; 128 regs -> 4096 regs/warp -> 4 warps per quarter -> 16 warps: 4 blocks, 25%
        (128, 128, 0, 4, 25.0, "registers"),
        # 40 regs -> 1280/warp -> 12 per quarter -> 48 warps -> 12 blocks; smem 48 KiB + 1 KiB reserved
        # -> 233472 // 50176 = 4 blocks (shared memory limits): 16 warps, 25%
        (128, 40, 48 * 1024, 4, 25.0, "shared_memory"),
        # 32 warps/block: 2 blocks by warps; 64 regs -> 2048/warp -> 8 per quarter -> 32 warps -> 1 block, 50%
        (1024, 64, 0, 1, 50.0, "registers"),
        # 1 warp/block: at most 32 resident blocks -> 32 warps, 50%
        (32, 16, 0, 32, 50.0, "blocks"),
        # 255 regs x 1024 threads needs 262144 registers > 65536 per block: cannot launch
        (1024, 255, 0, 0, 0.0, "cannot launch"),
        # too much shared memory for one block
        (128, 32, 300 * 1024, 0, 0.0, "cannot launch"),
        # 72 regs -> 2304/warp -> 7 per quarter -> 28 warps; 4 warps/block -> 7 blocks: 43.75%
        (128, 72, 0, 7, 43.75, "registers"),
    ],
)
def test_hand_worked(threads, regs, smem, blocks, pct, limiter):
    occ = theoretical_occupancy(threads, regs, smem, H100)
    assert occ.blocks_per_sm == blocks
    assert occ.occupancy_pct == pytest.approx(pct)
    assert occ.limiter == limiter


def test_limits_per_compute_capability():
    assert limits_for(8, 6).max_threads_per_sm == 1536
    assert limits_for(8, 9).max_blocks_per_sm == 24
    assert limits_for(9, 0) == DeviceLimits(name="sm_90")
    # measured values override the table
    assert limits_for(9, 0, smem_per_sm=1000).smem_per_sm == 1000
    # an unknown minor falls back to its major's nearest older entry
    assert limits_for(8, 8).max_threads_per_sm == 2048 - 512


def test_bad_arguments():
    with pytest.raises(ValueError):
        theoretical_occupancy(0, 32, 0)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "n, dtype",
    [
        (1024, torch.bfloat16),
        (4096, torch.bfloat16),
        (4096, torch.float32),
        (8192, torch.bfloat16),
        (333, torch.float16),
    ],
)
def test_matches_driver_for_compiled_triton_kernels(n, dtype):
    from kprof.device import current_device
    from kprof.kernels.rmsnorm import tuned

    x = torch.randn(64, n, device="cuda", dtype=dtype)
    w = torch.randn(n, device="cuda", dtype=dtype)
    tuned.rmsnorm_tuned(x, w)
    torch.cuda.synchronize()
    limits = current_device().limits()
    checked = 0
    for launcher in (tuned._rows_launcher, tuned._looped_launcher):
        for kernel in launcher.compiled.values():
            threads = kernel.metadata.num_warps * 32
            ours = theoretical_occupancy(threads, kernel.n_regs, kernel.metadata.shared, limits)
            assert ours.blocks_per_sm == driver_max_active_blocks(kernel.function, threads, kernel.metadata.shared)
            checked += 1
    assert checked


# one 8-warp program of a product with a 224 KiB pipeline, beside 8-warp programs of 32 registers a thread: a program
# of R registers a thread takes 8 warps x 32 x R (R rounded up to a multiple of 8) of the SM's 65536: 176 -> 45056 and
# 185-192 -> 49152 leave room for two programs of 8192, 193 -> 51200 and 208 -> 53248 for one
PRODUCT_SHARED = 229920


@pytest.mark.parametrize("regs, beside", [(176, 2), (185, 2), (192, 2), (193, 1), (208, 1), (255, 0)])
def test_blocks_beside_a_resident_product(regs, beside):
    product = BlockShape(256, regs, PRODUCT_SHARED)
    assert blocks_beside((product,), BlockShape(256, 32, 32), H100) == beside


def test_blocks_beside_counts_shared_memory_and_threads():
    product = BlockShape(256, 64, PRODUCT_SHARED)
    # 233472 - (229920 + 1024 rounded to 128) = 2432 bytes: two programs of 32 B + 1 KiB, not three
    assert blocks_beside((product,), BlockShape(128, 16, 32), H100) == 2
    # threads: 2048 - 1024 resident -> one more 1024-thread block at most
    assert blocks_beside((BlockShape(1024, 16, 0),), BlockShape(1024, 16, 0), H100) == 1
    with pytest.raises(ValueError, match="do not fit"):
        blocks_beside((BlockShape(1024, 64, 0), BlockShape(1024, 64, 0)), BlockShape(32, 16, 0), H100)


@settings(max_examples=300, deadline=None)
@given(
    threads=st.integers(1, 1024),
    regs=st.integers(0, 255),
    smem=st.integers(0, 240 * 1024),
)
def test_blocks_beside_nothing_is_the_occupancy(threads, regs, smem):
    occ = theoretical_occupancy(threads, regs, smem, H100)
    assert blocks_beside((), BlockShape(threads, regs, smem), H100) == occ.blocks_per_sm

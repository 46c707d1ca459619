"""Theoretical occupancy from registers, shared memory and block size, against the device's limits.

The arithmetic of CUDA's occupancy calculator (``cuda_occupancy.h``): registers are allocated per warp
in units of 256 and the register file is split into 4 sub-partitions (compute capability 7.0 and up);
shared memory is allocated per block in units of 128 bytes plus 1 KB reserved by the system (8.0 and
up); warps and resident blocks per SM are capped. On the GPU it is checked against the driver's
``cuOccupancyMaxActiveBlocksPerMultiprocessor`` (tests/toolkit/test_occupancy.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class DeviceLimits:
    """Per-SM resources that bound occupancy. Defaults are an H100 (compute capability 9.0)."""

    name: str = "sm_90"
    warp_size: int = 32
    max_threads_per_sm: int = 2048
    max_threads_per_block: int = 1024
    max_blocks_per_sm: int = 32
    regs_per_sm: int = 65536
    max_regs_per_block: int = 65536
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256
    reg_sub_partitions: int = 4
    smem_per_sm: int = 233472  # 228 KiB
    max_smem_per_block: int = 232448  # 227 KiB (opt-in)
    smem_alloc_unit: int = 128
    reserved_smem_per_block: int = 1024

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size


# Compute capability -> limits that differ from the H100 defaults (CUDA programming guide, table of
# technical specifications per compute capability).
_BY_CC: dict[tuple[int, int], dict] = {
    (7, 0): dict(
        max_threads_per_sm=2048,
        max_blocks_per_sm=32,
        smem_per_sm=98304,
        max_smem_per_block=98304,
        reserved_smem_per_block=0,
        smem_alloc_unit=256,
    ),
    (7, 5): dict(
        max_threads_per_sm=1024,
        max_blocks_per_sm=16,
        smem_per_sm=65536,
        max_smem_per_block=65536,
        reserved_smem_per_block=0,
        smem_alloc_unit=256,
    ),
    (8, 0): dict(max_threads_per_sm=2048, max_blocks_per_sm=32, smem_per_sm=167936, max_smem_per_block=166912),
    (8, 6): dict(max_threads_per_sm=1536, max_blocks_per_sm=16, smem_per_sm=102400, max_smem_per_block=101376),
    (8, 7): dict(max_threads_per_sm=1536, max_blocks_per_sm=16, smem_per_sm=167936, max_smem_per_block=166912),
    (8, 9): dict(max_threads_per_sm=1536, max_blocks_per_sm=24, smem_per_sm=102400, max_smem_per_block=101376),
    (9, 0): dict(),
    (10, 0): dict(),
    (12, 0): dict(max_threads_per_sm=1536, max_blocks_per_sm=32, smem_per_sm=102400, max_smem_per_block=101376),
}


def limits_for(major: int, minor: int, **measured: int) -> DeviceLimits:
    """Limits of a compute capability; ``measured`` (read off the device) override the table."""
    base = _BY_CC.get((major, minor))
    if base is None:  # unknown: nearest older architecture of the same major, else the defaults
        older = [cc for cc in _BY_CC if cc[0] == major and cc <= (major, minor)]
        base = _BY_CC[max(older)] if older else {}
    known = {k: v for k, v in measured.items() if v is not None and v > 0}
    return replace(DeviceLimits(name=f"sm_{major}{minor}", **base), **known)


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    warps_per_sm: int
    occupancy_pct: float
    limiter: str
    """What bounds resident blocks: "warps", "registers", "shared_memory", "blocks", or "cannot launch"."""
    blocks_by_warps: int
    blocks_by_registers: int
    blocks_by_shared_memory: int


def _round_up(value: int, unit: int) -> int:
    return int(math.ceil(value / unit) * unit) if unit > 0 else value


def _registers_per_warp(registers_per_thread: int, limits: DeviceLimits) -> int:
    """A warp's registers as the SM allocates them (whole allocation units)."""
    return _round_up(registers_per_thread * limits.warp_size, limits.reg_alloc_unit)


def _shared_per_block(shared_mem_bytes: int, limits: DeviceLimits) -> int:
    """A block's shared memory as the SM allocates it: with its reserved part, in whole allocation units."""
    return _round_up(shared_mem_bytes + limits.reserved_smem_per_block, limits.smem_alloc_unit)


def theoretical_occupancy(
    threads_per_block: int,
    registers_per_thread: int,
    shared_mem_bytes: int,
    limits: DeviceLimits = DeviceLimits(),
) -> Occupancy:
    """Resident blocks and warps per SM for one kernel configuration, and what limits them."""
    if threads_per_block <= 0:
        raise ValueError(f"threads_per_block must be positive, got {threads_per_block}")
    if registers_per_thread < 0 or shared_mem_bytes < 0:
        raise ValueError("registers_per_thread and shared_mem_bytes must be non-negative")
    warps_per_block = math.ceil(threads_per_block / limits.warp_size)

    def cannot_launch() -> Occupancy:
        return Occupancy(0, 0, 0.0, "cannot launch", 0, 0, 0)

    if threads_per_block > limits.max_threads_per_block or registers_per_thread > limits.max_regs_per_thread:
        return cannot_launch()
    if shared_mem_bytes > limits.max_smem_per_block:
        return cannot_launch()

    by_warps = limits.max_warps_per_sm // warps_per_block

    if registers_per_thread == 0:
        by_regs = limits.max_blocks_per_sm
    else:
        regs_per_warp = _registers_per_warp(registers_per_thread, limits)
        if regs_per_warp * warps_per_block > limits.max_regs_per_block:
            return cannot_launch()
        regs_per_partition = limits.regs_per_sm // limits.reg_sub_partitions
        warps_by_regs = (regs_per_partition // regs_per_warp) * limits.reg_sub_partitions
        by_regs = warps_by_regs // warps_per_block

    smem_per_block = _shared_per_block(shared_mem_bytes, limits)
    by_smem = limits.smem_per_sm // smem_per_block if smem_per_block > 0 else limits.max_blocks_per_sm

    candidates = [
        ("warps", by_warps),
        ("registers", by_regs),
        ("shared_memory", by_smem),
        ("blocks", limits.max_blocks_per_sm),
    ]
    limiter, blocks = min(candidates, key=lambda kv: kv[1])  # first listed wins a tie
    if blocks == 0:
        return Occupancy(0, 0, 0.0, limiter, by_warps, by_regs, by_smem)
    warps = blocks * warps_per_block
    return Occupancy(
        blocks_per_sm=blocks,
        warps_per_sm=warps,
        occupancy_pct=100.0 * warps / limits.max_warps_per_sm,
        limiter=limiter,
        blocks_by_warps=by_warps,
        blocks_by_registers=by_regs,
        blocks_by_shared_memory=by_smem,
    )


def waves_per_sm(blocks: int, occupancy: Occupancy, sm_count: int) -> float:
    """A launch of ``blocks`` blocks over those ``sm_count`` SMs hold at once at ``occupancy`` (ncu's "Waves Per
    SM", ``launch__waves_per_multiprocessor``: checked against it on real captures in tests/toolkit/test_metrics.py);
    NaN where no block fits or the SM count is unknown."""
    if not occupancy.blocks_per_sm or not sm_count:
        return math.nan
    return blocks / (occupancy.blocks_per_sm * sm_count)


@dataclass(frozen=True)
class BlockShape:
    """What one block of a kernel takes on an SM: its threads, registers a thread and shared memory (bytes)."""

    threads: int
    registers: int
    shared_bytes: int


def blocks_beside(resident: tuple[BlockShape, ...], block: BlockShape, limits: DeviceLimits = DeviceLimits()) -> int:
    """How many blocks of shape ``block`` fit on one SM that already holds the ``resident`` blocks (of other kernels):
    two kernels run side by side (PDL, two streams) only as far as this allows. The arithmetic of
    :func:`theoretical_occupancy`, block after block: each warp's registers (rounded to the allocation unit) go to the
    register sub-partition with the most left, shared memory per block with its reserved part, warps and blocks per
    SM capped. Raises ValueError where the resident blocks themselves do not fit."""
    free = [limits.regs_per_sm // limits.reg_sub_partitions] * limits.reg_sub_partitions
    left = {"warps": limits.max_warps_per_sm, "blocks": limits.max_blocks_per_sm, "smem": limits.smem_per_sm}

    def place(shape: BlockShape) -> bool:
        warps = math.ceil(shape.threads / limits.warp_size)
        if shape.threads > limits.max_threads_per_block or warps > left["warps"] or left["blocks"] < 1:
            return False
        smem = _shared_per_block(shape.shared_bytes, limits)
        if shape.shared_bytes > limits.max_smem_per_block or smem > left["smem"]:
            return False
        per_warp = _registers_per_warp(shape.registers, limits)
        trial = list(free)
        for _ in range(warps):
            best = max(range(len(trial)), key=trial.__getitem__)
            if trial[best] < per_warp:
                return False
            trial[best] -= per_warp
        free[:] = trial
        left["warps"] -= warps
        left["blocks"] -= 1
        left["smem"] -= smem
        return True

    for shape in resident:
        if not place(shape):
            raise ValueError(f"the resident blocks do not fit on one SM of {limits.name}: {resident}")
    count = 0
    while place(block):
        count += 1
    return count


# ------------------------------------------------------------------------------------------------- AMD
@dataclass(frozen=True)
class AmdLimits:
    """Per-CU resources of an AMD Instinct GPU (CDNA ISA guides; AMD's occupancy documentation).

    CDNA2/CDNA3 have one 512-entry VGPR file per SIMD lane shared by architectural VGPRs and AGPRs
    (the AGPRs start at the next multiple of 4 after the arch VGPRs), allocated in granules of 8;
    800 SGPRs per SIMD in granules of 16; 64 KiB of LDS per CU; at most 8 waves per SIMD, 4 SIMDs per CU.
    """

    name: str
    simds_per_cu: int = 4
    max_waves_per_simd: int = 8
    vgprs_per_lane: int = 512
    vgpr_granule: int = 8
    sgprs_per_simd: int = 800
    sgpr_granule: int = 16
    lds_per_cu: int = 65536
    wave_size: int = 64


AMD_LIMITS: dict[str, AmdLimits] = {
    "gfx90a": AmdLimits("gfx90a (MI200)"),
    "gfx940": AmdLimits("gfx940 (MI300)"),
    "gfx941": AmdLimits("gfx941 (MI300)"),
    "gfx942": AmdLimits("gfx942 (MI300)"),
}


def amd_limits(arch: str) -> AmdLimits:
    key = arch.split(":")[0].strip().lower()
    if key not in AMD_LIMITS:
        raise ValueError(f"no AMD occupancy limits for {arch!r}; known: {', '.join(AMD_LIMITS)}")
    return AMD_LIMITS[key]


def amd_occupancy(
    workgroup_size: int,
    arch_vgprs: int,
    accum_vgprs: int,
    sgprs: int,
    lds_bytes: int,
    limits: AmdLimits,
    wave_size: int | None = None,
) -> Occupancy:
    """Waves per CU for one dispatch and what limits them (limiter: waves, vgprs, sgprs, lds).

    Reuses :class:`Occupancy`: ``blocks_per_sm`` = workgroups per CU, ``warps_per_sm`` = waves per CU.
    """
    if workgroup_size <= 0:
        raise ValueError(f"workgroup_size must be positive, got {workgroup_size}")
    wave = wave_size or limits.wave_size
    waves_per_wg = math.ceil(workgroup_size / wave)
    max_waves_cu = limits.max_waves_per_simd * limits.simds_per_cu
    vgprs = (
        _round_up(_round_up(arch_vgprs, 4) + accum_vgprs, limits.vgpr_granule)
        if accum_vgprs
        else _round_up(arch_vgprs, limits.vgpr_granule)
    )
    per_simd_vgpr = (
        min(limits.max_waves_per_simd, limits.vgprs_per_lane // vgprs) if vgprs else limits.max_waves_per_simd
    )
    sg = _round_up(sgprs, limits.sgpr_granule)
    per_simd_sgpr = min(limits.max_waves_per_simd, limits.sgprs_per_simd // sg) if sg else limits.max_waves_per_simd
    candidates = [
        ("waves", max_waves_cu // waves_per_wg),
        ("vgprs", per_simd_vgpr * limits.simds_per_cu // waves_per_wg),
        ("sgprs", per_simd_sgpr * limits.simds_per_cu // waves_per_wg),
        ("lds", limits.lds_per_cu // lds_bytes if lds_bytes > 0 else max_waves_cu),
    ]
    limiter, wgs = min(candidates, key=lambda kv: kv[1])
    waves = wgs * waves_per_wg
    return Occupancy(
        blocks_per_sm=wgs,
        warps_per_sm=waves,
        occupancy_pct=100.0 * waves / max_waves_cu,
        limiter=limiter,
        blocks_by_warps=candidates[0][1],
        blocks_by_registers=candidates[1][1],
        blocks_by_shared_memory=candidates[3][1],
    )


def driver_max_active_blocks(function_handle: int, threads_per_block: int, dynamic_smem_bytes: int = 0) -> int:
    """Ask the CUDA driver (``cuOccupancyMaxActiveBlocksPerMultiprocessor``) for a loaded kernel.

    ``function_handle`` is a ``CUfunction`` (Triton's ``CompiledKernel.function``). GPU only.
    """
    import ctypes

    libcuda = ctypes.CDLL("libcuda.so.1")
    blocks = ctypes.c_int(0)
    err = libcuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(
        ctypes.byref(blocks),
        ctypes.c_void_p(function_handle),
        ctypes.c_int(threads_per_block),
        ctypes.c_size_t(dynamic_smem_bytes),
    )
    if err != 0:
        raise RuntimeError(f"cuOccupancyMaxActiveBlocksPerMultiprocessor failed with CUresult {err}")
    return blocks.value

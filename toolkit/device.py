"""What device a run measured on, and its measured memory-bandwidth ceiling."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import asdict, dataclass

from kprof.occupancy import DeviceLimits, limits_for


@dataclass(frozen=True)
class DeviceInfo:
    kind: str  # "cuda" or "cpu" (Triton interpreter runs)
    name: str
    index: int | None = None
    cc_major: int | None = None
    cc_minor: int | None = None
    sm_count: int | None = None
    total_memory_bytes: int | None = None
    l2_bytes: int | None = None
    regs_per_sm: int | None = None
    max_threads_per_sm: int | None = None
    smem_per_sm: int | None = None
    smem_per_block_optin: int | None = None
    warp_size: int | None = None
    driver_version: str | None = None
    driver_note: str | None = None  # why the driver version is missing, when it is
    cuda_runtime: str | None = None

    @property
    def is_gpu(self) -> bool:
        return self.kind == "cuda"

    def limits(self) -> DeviceLimits:
        if self.cc_major is None or self.cc_minor is None:
            return DeviceLimits()
        return limits_for(
            self.cc_major, self.cc_minor,
            regs_per_sm=self.regs_per_sm, max_threads_per_sm=self.max_threads_per_sm,
            smem_per_sm=self.smem_per_sm, max_smem_per_block=self.smem_per_block_optin,
            warp_size=self.warp_size,
        )

    def to_dict(self) -> dict:
        return asdict(self)


def _nvidia_smi_driver(index: int) -> tuple[str | None, str | None]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None, "nvidia-smi not found on PATH"
    cmd = [exe, f"--id={index}", "--query-gpu=driver_version", "--format=csv,noheader"]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{' '.join(cmd)} failed: {exc}"
    if res.returncode != 0:
        return None, f"{' '.join(cmd)} exited {res.returncode}: {res.stderr.strip()[-300:]}"
    return res.stdout.strip() or None, None


def current_device() -> DeviceInfo:
    """The CUDA device torch would use, or a CPU description when there is none."""
    import torch

    if not torch.cuda.is_available():
        import platform

        return DeviceInfo(kind="cpu", name=f"CPU ({platform.processor() or platform.machine()}), Triton interpreter")
    idx = torch.cuda.current_device()
    p = torch.cuda.get_device_properties(idx)
    driver, note = _nvidia_smi_driver(idx)
    return DeviceInfo(
        kind="cuda",
        name=p.name,
        index=idx,
        cc_major=p.major,
        cc_minor=p.minor,
        sm_count=p.multi_processor_count,
        total_memory_bytes=p.total_memory,
        l2_bytes=getattr(p, "L2_cache_size", None),
        regs_per_sm=getattr(p, "regs_per_multiprocessor", None),
        max_threads_per_sm=getattr(p, "max_threads_per_multi_processor", None),
        smem_per_sm=getattr(p, "shared_memory_per_multiprocessor", None),
        smem_per_block_optin=getattr(p, "shared_memory_per_block_optin", None),
        warp_size=getattr(p, "warp_size", None),
        driver_version=driver,
        driver_note=note,
        cuda_runtime=torch.version.cuda,
    )


@dataclass(frozen=True)
class Ceiling:
    """Device-to-device copy bandwidth: the memory-bound ceiling of this device, measured."""

    gbps: float
    copy_bytes: int
    time_ms: float
    method: str = "device-to-device copy, bytes read + written, triton do_bench median (L2 flushed)"


def measure_copy_ceiling(nbytes: int = 1 << 30, rep_ms: int = 200) -> Ceiling:
    """Time a large device-to-device copy; GB/s counts the bytes read plus the bytes written."""
    import torch
    import triton.testing

    src = torch.randn(nbytes // 4, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    ms = triton.testing.do_bench(lambda: dst.copy_(src), warmup=50, rep=rep_ms, return_mode="median")
    del src, dst
    torch.cuda.empty_cache()
    return Ceiling(gbps=2 * nbytes / (ms * 1e-3) / 1e9, copy_bytes=nbytes, time_ms=ms)

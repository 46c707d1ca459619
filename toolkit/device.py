"""What device a run measured on, and its measured memory-bandwidth ceiling."""

from __future__ import annotations

import functools
import shutil
import subprocess
from dataclasses import asdict, dataclass, field

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
            self.cc_major,
            self.cc_minor,
            regs_per_sm=self.regs_per_sm,
            max_threads_per_sm=self.max_threads_per_sm,
            smem_per_sm=self.smem_per_sm,
            max_smem_per_block=self.smem_per_block_optin,
            warp_size=self.warp_size,
        )

    def to_dict(self) -> dict:
        return asdict(self)


def _nvidia_smi_driver(index: int) -> tuple[str | None, str | None]:
    return _nvidia_smi_query(str(index), "driver_version")


def _nvidia_smi_query(gpu: str, query: str) -> tuple[str | None, str | None]:
    """(the value of one ``nvidia-smi --query-gpu`` field for GPU ``gpu``, why it is missing)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None, "nvidia-smi not found on PATH"
    cmd = [exe, f"--id={gpu}", f"--query-gpu={query}", "--format=csv,noheader,nounits"]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{' '.join(cmd)} failed: {exc}"
    if res.returncode != 0:
        return None, f"{' '.join(cmd)} exited {res.returncode}: {res.stderr.strip()[-300:]}"
    return res.stdout.strip() or None, None


@functools.cache
def max_sm_clock_mhz(index: int) -> float | None:
    """The highest SM clock CUDA device ``index`` runs at (``nvidia-smi``'s ``clocks.max.sm``, the GPU found by
    its PCI address, so ``CUDA_VISIBLE_DEVICES`` does not matter); None where nvidia-smi cannot say. The
    ``cold`` mode keeps the calls that started near it (:func:`kprof.timing.at_full_clock`).
    ``KPROF_SM_CLOCK_MHZ`` overrides it: the clock a GPU is locked at, which it never exceeds, or ``off``."""
    import torch

    from kprof.runtime import sm_clock_override

    given = sm_clock_override()
    if given is not None:
        return None if given == "off" else float(given)

    p = torch.cuda.get_device_properties(index)
    pci = (getattr(p, "pci_domain_id", None), getattr(p, "pci_bus_id", None), getattr(p, "pci_device_id", None))
    gpu = f"{pci[0]:08X}:{pci[1]:02X}:{pci[2]:02X}.0" if None not in pci else str(index)
    value, _ = _nvidia_smi_query(gpu, "clocks.max.sm")
    try:
        return float(value) if value else None
    except ValueError:  # "[N/A]" where the driver does not report it
        return None


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
    """This device's two roofline ceilings, measured: device-to-device copy bandwidth (memory-bound) and
    the rate of one large matrix product per dtype (compute-bound)."""

    gbps: float
    copy_bytes: int
    time_ms: float
    method: str = "device-to-device copy, bytes read + written, triton do_bench median (L2 flushed)"
    tflops: dict[str, float] = field(default_factory=dict)
    """Dense matrix-product TFLOP/s per dtype name (bf16, fp16, fp32 as torch runs it by default)."""
    tflops_method: str = ""

    def peak_tflops(self, dtype: str) -> float | None:
        return self.tflops.get(dtype)


def measure_copy_ceiling(nbytes: int = 1 << 30, rep_ms: int = 200) -> Ceiling:
    """Time a large device-to-device copy; GB/s counts the bytes read plus the bytes written."""
    import torch

    src = torch.randn(nbytes // 4, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    us, timer = cold_time_us(functools.partial(dst.copy_, src), rep_ms=rep_ms)
    ms = us / 1e3
    del src, dst
    torch.cuda.empty_cache()
    return Ceiling(
        gbps=2 * nbytes / (ms * 1e-3) / 1e9,
        copy_bytes=nbytes,
        time_ms=ms,
        method=f"device-to-device copy, bytes read + written, {_method(timer)}",
    )


def _method(timer: str) -> str:
    return (
        "median cold time (kprof.timing: CUPTI records after a clean L2 flush), as every case"
        if timer == "cupti"
        else "median of CUDA events after an L2 flush (CUPTI unavailable), as every case"
    )


def cold_time_us(fn, rep_ms: float = 200.0) -> tuple[float, str]:
    """The ceilings are timed exactly like the cases' cold mode, so % of ceiling compares like with like."""
    from kprof.timing import cold_time_us as cold

    return cold(fn, rep_ms=rep_ms)


MATMUL_SIDE = 8192


def measure_compute_ceiling(
    side: int = MATMUL_SIDE, dtypes: tuple[str, ...] = ("bf16", "fp16", "fp32"), rep_ms: int = 200
) -> dict[str, float]:
    """TFLOP/s of one ``side``-cubed matrix product (cuBLAS through torch) per dtype: the compute roof.

    fp32 is measured as torch runs it by default (``torch.backends.cuda.matmul.allow_tf32`` as set), so
    it is the roof of an fp32 kernel that computes in full fp32 unless the caller enabled TF32."""
    import torch

    from kprof.dtypes import torch_dtype

    out = {}
    for name in dtypes:
        a = torch.randn(side, side, device="cuda", dtype=torch_dtype(name))
        b = torch.randn(side, side, device="cuda", dtype=torch_dtype(name))
        us, _ = cold_time_us(lambda a=a, b=b: a @ b, rep_ms=rep_ms)
        out[name] = 2 * side**3 / (us * 1e-6) / 1e12
        del a, b
    torch.cuda.empty_cache()
    return out


def measure_ceilings() -> Ceiling:
    """Both ceilings of this GPU: the copy bandwidth and the matrix-product rate per dtype."""
    from dataclasses import replace

    copy = measure_copy_ceiling()
    return replace(
        copy,
        tflops=measure_compute_ceiling(),
        tflops_method=f"{MATMUL_SIDE}^3 matrix product (torch -> cuBLAS), median cold time as every case, 2*n^3 FLOPs",
    )

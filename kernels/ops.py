"""Drop-in ops for model code: one function per kernel family, eager PyTorch by default, Triton on request.

Paths
    Each op runs the fastest measured Triton kernel when the Triton path is on and the input is on a CUDA
    GPU (or on the CPU under Triton's interpreter, ``TRITON_INTERPRET=1``), else the eager PyTorch code.
    The Triton path is off unless ``KPROF_USE_TRITON=1`` is set when this module is imported (read once,
    never per call); :func:`use_triton` switches it at run time. Both paths check inputs with the same
    family checks (a bad input raises the same ``ValueError`` either way) and compute the same function
    (fp32 inside, output in the input dtype). Meta tensors give correctly shaped meta outputs on both.
    The Triton path computes forwards only (no autograd): a call that autograd records (grad mode on and an input
    that requires grad) takes the eager path, whose gradients are right, instead of returning an output with
    no ``grad_fn`` (the gradients of x and the weights would silently be missing).

No stale answers
    A plain op computes from the tensors it is given, on every call: nothing derived from a weight
    (a folded ``diag(g) W``, interleaved gate/up columns) is kept between calls. Ops that profit from a
    derived weight layout take it explicitly: :class:`PreparedSwiGLU` and :class:`PreparedRMSNormLinear`
    (or the modules :class:`SwiGLU` and :class:`RMSNormLinear`) build it once from the source weights,
    hold those weights, and must be refreshed (``.refresh()``) after the weights change: after loading
    (the modules refresh on ``load_state_dict`` and ``.to()`` themselves) and after every optimizer step
    (:func:`refresh_on_step` registers that). A prepared object never silently computes from other data:
    an in-place update that moves a weight's version counter, or new storage given to a weight
    (``w.data = new``, ``torch.nn.utils.vector_to_parameters``), raises :class:`StaleWeightsError` until
    ``refresh()``, in eager calls and in compiled graphs alike; updates that bypass the counter in the same
    storage (``w.data.copy_``, fused optimizer kernels) are caught by comparing the derived weight with the
    sources on every call while checking is on (:func:`check_prepared`; on by default under the interpreter,
    off on GPUs where it would cost a weight-sized comparison per call). The modules refresh themselves when a
    parameter is replaced (``module.w = nn.Parameter(...)``).

Host cost
    At decode sizes the GPU work of an op is 2-25 us and the host decides. The Triton path resolves its
    kernels at import, queries no device per call, and after the first call with a given signature launches
    through a precomputed plan (each family's ``op_plan`` module, on :mod:`kprof.kernels.lib.plans`). It reads
    no environment per call but in :class:`PreparedRMSNormLinear`, whose plan key holds whether its kernels
    overlap by programmatic dependent launch (``KPROF_PDL`` and ``TRITON_INTERPRET``, read on each call so that
    switching them takes effect at once: about 2 us of its host time, 1.8 us measured on a CPU).

torch.compile and CUDA graphs
    Every op is registered as a ``torch.library`` custom op (``torch.ops.kprof.<name>``) with a fake
    implementation, so ``torch.compile(model, fullgraph=True)`` traces it without a graph break; inside a
    compiled region the public functions call the registered op. Eager callers bypass the dispatcher:
    calling a custom op through ``torch.library`` cost 81 us on this repository's CI CPU against 20 us
    through ``torch.ops`` and 0.15 us for the check ``torch.compiler.is_compiling()`` (per call, 8x64
    fp32; ``benchmarks/ops_host_cost.py`` measures it on a GPU). Launches take the current CUDA stream and
    allocate through PyTorch, so a decode step of these ops can be captured in a CUDA graph once warmed up
    (the first call with a new shape compiles and autotunes, and at 65-999 rows of ``swiglu`` and 33-999 of
    ``rms_norm_linear`` times their two routes, cuBLAS's and kprof's, keeping the faster
    (``kprof.kernels.lib.routes``); do it before capturing: a first call inside a capture takes the static
    rule's route for good).
"""

from __future__ import annotations

import sys
import warnings
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import torch

from kprof import runtime
from kprof.kernels.add_rmsnorm import op_plan as _add_plan
from kprof.kernels.add_rmsnorm.family import validate as _add_validate
from kprof.kernels.add_rmsnorm.reference import add_rmsnorm_eager
from kprof.kernels.gelu_mul.family import gelu_mul_eager
from kprof.kernels.gelu_mul.kernels import KERNELS as _GELU_KERNELS
from kprof.kernels.kasmina import op_plan as _kasmina_plan
from kprof.kernels.kasmina.family import validate as _kasmina_validate
from kprof.kernels.kasmina.reference import kasmina_vectorised
from kprof.kernels.lib import checks, launching
from kprof.kernels.lib import gated as _gated
from kprof.kernels.ops_providers import BEST, PREPARED
from kprof.kernels.rmsnorm.family import validate as _rms_validate
from kprof.kernels.rmsnorm.reference import rmsnorm_eager
from kprof.kernels.rmsnorm.tuned import rmsnorm_tuned
from kprof.kernels.rmsnorm_linear import op_plan as _rl_plan
from kprof.kernels.rmsnorm_linear.family import validate as _rl_validate
from kprof.kernels.rmsnorm_linear.fused import folded_weight, held_fold
from kprof.kernels.rmsnorm_linear.reference import rmsnorm_linear_eager
from kprof.kernels.silu_mul.family import silu_mul_eager
from kprof.kernels.silu_mul.kernels import KERNELS as _SILU_KERNELS
from kprof.kernels.swiglu import op_plan as _swiglu_plan
from kprof.kernels.swiglu import tuned as _swiglu_tuned
from kprof.kernels.swiglu.family import validate as _swiglu_validate
from kprof.kernels.swiglu.reference import swiglu_eager

_USE_TRITON = runtime.env("KPROF_USE_TRITON") == "1"
_CHECK_PREPARED = launching.interpreting()
_compiling = torch.compiler.is_compiling


class StaleWeightsError(ValueError):
    """A prepared object's derived weights no longer match its source weights: call ``refresh()``."""


def use_triton(enabled: bool) -> bool:
    """Turn the Triton path on or off for every op (initially ``KPROF_USE_TRITON=1`` at import); returns
    the previous setting. A compiled model keeps the setting it was traced with only in the sense that the
    registered ops read it when they run."""
    global _USE_TRITON
    previous, _USE_TRITON = _USE_TRITON, bool(enabled)
    return previous


def check_prepared(enabled: bool) -> bool:
    """Compare prepared objects' derived weights with their sources on every call (catches updates that
    bypass the version counter; costs a weight-sized comparison). Returns the previous setting."""
    global _CHECK_PREPARED
    previous, _CHECK_PREPARED = _CHECK_PREPARED, bool(enabled)
    return previous


def triton_enabled(x: object) -> bool:
    """Whether an op on ``x`` takes its Triton path: the path is on and x is on a GPU (or the interpreter
    runs CPU tensors)."""
    return _USE_TRITON and isinstance(x, torch.Tensor) and (x.is_cuda or _cpu_triton(x))


def _cpu_triton(x: torch.Tensor) -> bool:
    """The Triton path for a CPU tensor: only under the interpreter (checked off the hot path)."""
    return _USE_TRITON and x.device.type == "cpu" and launching.interpreting()


def _gpu(x: object) -> bool:
    return _USE_TRITON and isinstance(x, torch.Tensor) and x.is_cuda


def _meta(x: object) -> bool:
    return isinstance(x, torch.Tensor) and x.is_meta


def _records_grad(*tensors: object) -> bool:
    """Whether autograd records this call (grad mode on, an input requires grad): the Triton path records no
    graph, so such a call takes the eager path rather than silently cut the gradients of its inputs."""
    if not torch.is_grad_enabled():
        return False
    for t in tensors:  # a loop, not any() over a generator: 0.2 us less per call
        if isinstance(t, torch.Tensor) and t.requires_grad:
            _warn_from_caller(_GRAD_FALLBACK)
            return True
    return False


def _warn_from_caller(message: str) -> None:
    """A warning attributed to the first caller outside this module (shown once per calling line by Python's
    default filter): the ops reach here through paths of different depths."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename == __file__:
        frame, level = frame.f_back, level + 1
    warnings.warn(message, stacklevel=level)


_GRAD_FALLBACK = (
    "kprof.kernels.ops: autograd records this call (grad mode on and an input that requires grad), so it runs the "
    "eager path (the Triton kernels have no backward); call under torch.no_grad() or torch.inference_mode() for "
    "the Triton path"
)


# --------------------------------------------------------------------------------------------- rms_norm
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """``x / sqrt(mean(x**2, -1) + eps) * weight``."""
    if _compiling():
        return torch.ops.kprof.rms_norm(x, weight, eps)
    if _USE_TRITON and isinstance(x, torch.Tensor) and x.is_cuda:  # _gpu(x), inlined: the hottest op
        if not _records_grad(x, weight):
            return rmsnorm_tuned(x, weight, eps)
    return _rms_norm_other(x, weight, eps)


def _rms_norm_other(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    if isinstance(x, torch.Tensor) and _cpu_triton(x) and not _records_grad(x, weight):
        return rmsnorm_tuned(x, weight, eps)
    _rms_validate(x, weight, triton=False)
    if x.is_meta:
        return _rms_norm_fake(x, weight, eps)
    return rmsnorm_eager(x, weight, eps)


def _rms_norm_fake(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    _rms_validate(x, weight, triton=False)
    return x.new_empty(x.shape)


# ----------------------------------------------------------------------------------- fused_add_rms_norm
def fused_add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """``h = x + residual; (rms_norm(h, weight), h)``."""
    if _compiling():
        return torch.ops.kprof.fused_add_rms_norm(x, residual, weight, eps)
    if triton_enabled(x) and not _records_grad(x, residual, weight):
        return _add_plan.fused_add_rms_norm(x, residual, weight, eps)
    _add_validate(x, residual, weight, triton=False)
    if x.is_meta:
        return _add_fake(x, residual, weight, eps)
    return add_rmsnorm_eager(x, residual, weight, eps)


def _add_fake(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    _add_validate(x, residual, weight, triton=False)
    return x.new_empty(x.shape), x.new_empty(x.shape)


# ------------------------------------------------------------------------------------ gated activations
def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    """``x = [..., 2H]`` (gate | up) -> ``silu(gate) * up``."""
    if _compiling():
        return torch.ops.kprof.silu_and_mul(x)
    if _gpu(x) and not _records_grad(x):
        return _gated.launch_as_op(_SILU_KERNELS, "silu_mul", x)
    return _gated_other(x, _SILU_KERNELS, "silu_mul", silu_mul_eager)


def gelu_tanh_and_mul(x: torch.Tensor) -> torch.Tensor:
    """``x = [..., 2H]`` (gate | up) -> ``gelu_tanh(gate) * up``."""
    if _compiling():
        return torch.ops.kprof.gelu_tanh_and_mul(x)
    if _gpu(x) and not _records_grad(x):
        return _gated.launch_as_op(_GELU_KERNELS, "gelu_mul", x)
    return _gated_other(x, _GELU_KERNELS, "gelu_mul", gelu_mul_eager)


def _gated_other(
    x: torch.Tensor, kernels: _gated.GatedKernels, op: str, eager: Callable[[torch.Tensor], torch.Tensor]
) -> torch.Tensor:
    if isinstance(x, torch.Tensor) and _cpu_triton(x) and not _records_grad(x):
        return _gated.launch_as_op(kernels, op, x)
    _gated.validate(op, x, triton=False)
    if x.is_meta:
        return _gated_fake(x, op)
    return eager(x)


def _gated_fake(x: torch.Tensor, op: str) -> torch.Tensor:
    _gated.validate(op, x, triton=False)
    return x.new_empty(tuple(x.shape[:-1]) + (x.shape[-1] // 2,))


# ---------------------------------------------------------------------------------------------- swiglu
def swiglu(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """``silu(x @ w_gate) * (x @ w_up)`` for weights ``[d, ff]``, from the weights as given.

    For the interleaved-weight kernel (faster from about 1000 rows on Hopper) hold the weights in a
    :class:`PreparedSwiGLU` (or use :class:`SwiGLU`)."""
    if _compiling():
        return torch.ops.kprof.swiglu(x, w_gate, w_up)
    if _gpu(x) and not _records_grad(x, w_gate, w_up):
        return _swiglu_plan.swiglu(x, w_gate, w_up)
    return _swiglu_other(x, w_gate, w_up)


def _swiglu_other(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    if isinstance(x, torch.Tensor) and _cpu_triton(x) and not _records_grad(x, w_gate, w_up):
        return _swiglu_plan.swiglu(x, w_gate, w_up)
    _swiglu_validate(x, w_gate, w_up, triton=False)
    if x.is_meta:
        return _swiglu_fake(x, w_gate, w_up)
    return swiglu_eager(x, w_gate, w_up)


def _swiglu_fake(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_int: Any = None) -> torch.Tensor:
    _swiglu_validate(x, w_gate, w_up, triton=False)
    return x.new_empty(tuple(x.shape[:-1]) + (w_gate.shape[1],))


def _swiglu_prepared(
    x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_int: torch.Tensor | None
) -> torch.Tensor:
    """The interleaved kernel where it serves (1000+ rows, TMA-ready), else the plain op."""
    if triton_enabled(x) and not _records_grad(x, w_gate, w_up):
        return _swiglu_plan.prepared_op(x, w_gate, w_up, w_int)
    return swiglu(x, w_gate, w_up)


# ------------------------------------------------------------------------------------- rms_norm_linear
def rms_norm_linear(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, eps: float = 1e-6
) -> torch.Tensor:
    """``(rms_norm(x, g) @ w) + b`` for ``w [K, N]``, from the weights as given.

    For the statistics-first kernel with g folded into W (faster from about 1000 rows) hold the weights in
    a :class:`PreparedRMSNormLinear` (or use :class:`RMSNormLinear`)."""
    if _compiling():
        return torch.ops.kprof.rms_norm_linear(x, g, w, b, eps)
    if _gpu(x) and not _records_grad(x, g, w, b):
        return _rl_plan.rms_norm_linear(x, g, w, checks.dense_vector(b), eps)
    return _rms_norm_linear_other(x, g, w, b, eps)


def _rms_norm_linear_other(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, eps: float
) -> torch.Tensor:
    if isinstance(x, torch.Tensor) and _cpu_triton(x) and not _records_grad(x, g, w, b):
        return _rl_plan.rms_norm_linear(x, g, w, checks.dense_vector(b), eps)
    _rl_validate(x, g, w, b, triton=False)
    if x.is_meta:
        return _rms_norm_linear_fake(x, g, w, b, eps)
    return rmsnorm_linear_eager(x, g, w, b, eps)


def _rms_norm_linear_fake(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, eps: float
) -> torch.Tensor:
    _rl_validate(x, g, w, b, triton=False)
    return x.new_empty(tuple(x.shape[:-1]) + (w.shape[1],))


def _rms_norm_linear_prepared(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, wf: torch.Tensor | None, b: torch.Tensor | None, eps: float
) -> torch.Tensor:
    """The folded-weight kernels where they serve (decode rows the plain op gives the split-K kernel, 1000+ rows,
    33-999 rows where a race on the shape's first call timed them faster; any under the interpreter), else the plain
    op."""
    if triton_enabled(x) and not _records_grad(x, g, w, b):
        return _rl_plan.prepared_op(x, g, w, wf, checks.dense_vector(b), eps)
    return rms_norm_linear(x, g, w, b, eps)


# --------------------------------------------------------------------------------------------- kasmina
def kasmina_forward(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
    *,
    check_ids: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The seed-lifecycle layer: ``(y, telemetry[S, 2])`` (see :mod:`kprof.kernels.kasmina`).

    A blueprint id outside ``[0, weights.shape[0])`` (negative, or past the registry) is never used to
    read memory: on both paths the seed reads blueprint 0 instead and is flagged, its ``y`` columns and
    telemetry row being NaN. ``check_ids=True`` instead raises ``ValueError`` for such ids; that reads the
    ids on the host (a device-to-host copy and a sync, and no CUDA-graph capture), so it is off by default."""
    if _compiling():
        return torch.ops.kprof.kasmina_forward(x, lifecycle, blueprint_id, alpha, weights, bias, check_ids)
    if not check_ids and _gpu(x) and not _records_grad(x, alpha, weights, bias):
        return _kasmina_plan.kasmina(
            x,
            checks.dense_vector(lifecycle),
            checks.dense_vector(blueprint_id),
            checks.dense_vector(alpha),
            weights,
            bias,
        )
    return _kasmina_other(x, lifecycle, blueprint_id, alpha, weights, bias, check_ids)


def _kasmina_other(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
    check_ids: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    _kasmina_validate(x, lifecycle, blueprint_id, alpha, weights, bias, triton=False)
    if x.is_meta:
        return _kasmina_fake(x, lifecycle, blueprint_id, alpha, weights, bias, check_ids)
    if check_ids:
        ids = blueprint_id.cpu()
        bad = ids[(ids < 0) | (ids >= weights.shape[0])]
        if bad.numel():
            raise ValueError(
                f"kasmina: blueprint ids {bad[:5].tolist()} are outside [0, {weights.shape[0]}) "
                "(the registry holds that many blueprints)"
            )
    if triton_enabled(x) and not _records_grad(x, alpha, weights, bias):
        return _kasmina_plan.kasmina(
            x,
            checks.dense_vector(lifecycle),
            checks.dense_vector(blueprint_id),
            checks.dense_vector(alpha),
            weights,
            bias,
        )
    return _kasmina_eager(x, lifecycle, blueprint_id, alpha, weights, bias)


def _kasmina_eager(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The vectorised PyTorch layer with the kernel's clamp-and-flag of out-of-range ids."""
    n_seeds, c = lifecycle.shape[0], weights.shape[-1]
    valid = (blueprint_id >= 0) & (blueprint_id < weights.shape[0])
    y, tele = kasmina_vectorised(x, lifecycle, torch.where(valid, blueprint_id, 0), alpha, weights, bias)
    nan = torch.tensor(float("nan"), dtype=y.dtype, device=y.device)
    y = torch.where(valid[:, None], y.reshape(-1, n_seeds, c), nan).reshape(x.shape)
    return y, torch.where(valid[:, None], tele, nan.float())


def _kasmina_fake(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
    check_ids: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    _kasmina_validate(x, lifecycle, blueprint_id, alpha, weights, bias, triton=False)
    n_seeds = lifecycle.shape[0]
    return x.new_empty(x.shape), x.new_empty((n_seeds, 2), dtype=torch.float32)


# ------------------------------------------------------------------------------------- prepared weights
def _stale(what: str) -> StaleWeightsError:
    return StaleWeightsError(
        f"kprof: {what} changed since the derived weights were prepared (call .refresh() after loading weights "
        "and after every optimizer step, e.g. ops.refresh_on_step(optimizer, model))"
    )


def _stamp(sources: tuple[torch.Tensor, torch.Tensor]) -> tuple[int, int, int, int]:
    """What the staleness check compares without reading the weights: each source's version counter (in-place
    updates) and address (``w.data = new`` gives a weight new storage without moving its counter)."""
    a, b = sources
    return (a._version, b._version, a.data_ptr(), b.data_ptr())


def _check_derived(
    derived: torch.Tensor | None,
    sources: tuple[torch.Tensor, torch.Tensor],
    stamp: tuple[int, int, int, int],
    build: Any,
    what: str,
) -> None:
    """The prepared objects' staleness check: nothing to check without a derived copy (every path reads the
    sources); a source whose version counter or address moved raises; with :func:`check_prepared` on, so does
    a copy that differs from ``build`` over the sources now (an update that bypassed the version counter)."""
    if derived is None:
        return
    if _stamp(sources) != stamp:
        raise _stale(what)
    if _CHECK_PREPARED and not torch.equal(derived, build(*(t.detach() for t in sources))):
        raise _stale(f"{what} (contents differ; an update bypassed the version counter)")


class PreparedSwiGLU:
    """``silu(x @ w_gate) * (x @ w_up)`` with the gate/up weights interleaved column by column, for the
    one-product TMA kernel (Hopper, 16-bit, 1000+ rows; fewer rows run the plain :func:`swiglu`).

    Build it once from the weights (``[d, ff]``, kept by reference: the object reads them on every call
    that does not use the interleaved copy) and call :meth:`refresh` after they change (loading, every
    optimizer step). The copy (as large as both weights) is made only where the Triton path is on when the
    object is built or refreshed and the kernel can run (Hopper, 16-bit; or the interpreter); otherwise
    every call runs the plain :func:`swiglu` on the sources. Until then an in-place update that moves a weight's
    version counter raises
    :class:`StaleWeightsError`, and with :func:`check_prepared` on any difference does."""

    def __init__(self, w_gate: torch.Tensor, w_up: torch.Tensor) -> None:
        checks.check_float("swiglu", "w_gate", w_gate)
        checks.check_float("swiglu", "w_up", w_up, like=w_gate)
        if w_gate.dim() != 2:
            raise ValueError(f"swiglu: w_gate has shape {tuple(w_gate.shape)}; expected [d, ff]")
        checks.check_shape("swiglu", "w_up", w_up, w_gate.shape)
        self.w_gate, self.w_up = w_gate, w_up
        self.w_int: torch.Tensor | None = None
        self._stamp: tuple[int, int, int, int] = (-1, -1, -1, -1)
        self.refresh()

    def refresh(self) -> PreparedSwiGLU:
        """Rebuild the interleaved weights from the current ``w_gate`` and ``w_up``."""
        wg, wu = self.w_gate.detach(), self.w_up.detach()
        serves = _USE_TRITON and _swiglu_tuned.interleavable(wg)
        self.w_int = _owned(_swiglu_tuned.interleaved_weights(wg, wu), self) if serves else None
        self._stamp = _stamp((self.w_gate, self.w_up))
        return self

    def check(self) -> None:
        """Raise :class:`StaleWeightsError` if the interleaved weights may not match the sources."""
        _check_derived(
            self.w_int,
            (self.w_gate, self.w_up),
            self._stamp,
            _swiglu_tuned.interleaved_weights,
            "w_gate or w_up of a PreparedSwiGLU",
        )

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if _compiling():
            return torch.ops.kprof.swiglu_prepared(x, self.w_gate, self.w_up, self.w_int)
        self.check()
        return _swiglu_prepared(x, self.w_gate, self.w_up, self.w_int)


class PreparedRMSNormLinear:
    """``rms_norm(x, g) @ w + b`` with ``diag(g) w`` folded once, for the kernels that read the fold: the split-K
    kernel at decode rows (where the plain op runs it and its config pipelines x) and the statistics-first kernels
    from 1000 rows (the row statistics, then one product applying them), and at 33-999 rows where a race on the
    shape's first call timed them faster than the plain op; other rows run the plain :func:`rms_norm_linear`
    (``rmsnorm_linear.op_plan.prepared_op`` routes). Same contract as
    :class:`PreparedSwiGLU`: built from ``g [K]`` and
    ``w [K, N]`` (kept by reference), :meth:`refresh` after they change; the folded copy is made only
    where the Triton path is on at build or refresh time, on a GPU or under the interpreter."""

    def __init__(self, g: torch.Tensor, w: torch.Tensor) -> None:
        checks.check_float("rmsnorm_linear", "g", g)
        checks.check_float("rmsnorm_linear", "w", w, like=g)
        if w.dim() != 2 or g.shape != (w.shape[0],):
            raise ValueError(f"rmsnorm_linear: g {tuple(g.shape)} and w {tuple(w.shape)} must be [K] and [K, N]")
        self.g, self.w = g, w
        self.wf: torch.Tensor | None = None
        self._stamp: tuple[int, int, int, int] = (-1, -1, -1, -1)
        self.refresh()

    def refresh(self) -> PreparedRMSNormLinear:
        """Refold ``diag(g) w`` from the current ``g`` and ``w``; where fp16 cannot hold the fold as exactly as the
        plain op's products (``fused.held_fold``: an element past 65504, columns that small), no fold is kept and
        every call runs the plain op (``folded`` says which)."""
        g, w = self.g.detach(), self.w.detach()
        wf = held_fold(g, w) if _USE_TRITON and _triton_capable(w) else None
        self.wf = None if wf is None else _owned(wf, self)
        self._stamp = _stamp((self.g, self.w))
        return self

    @property
    def folded(self) -> bool:
        """Whether calls may run the kernels on the folded weight (else every call runs the plain op)."""
        return self.wf is not None

    def check(self) -> None:
        """Raise :class:`StaleWeightsError` if the folded weight may not match the sources."""
        _check_derived(self.wf, (self.g, self.w), self._stamp, folded_weight, "g or w of a PreparedRMSNormLinear")

    def __call__(self, x: torch.Tensor, b: torch.Tensor | None = None, eps: float = 1e-6) -> torch.Tensor:
        if _compiling():
            return torch.ops.kprof.rms_norm_linear_prepared(x, self.g, self.w, self.wf, b, eps)
        self.check()
        return _rms_norm_linear_prepared(x, self.g, self.w, self.wf, b, eps)


_OWNER = "_kprof_prepared_by"  # a derived weight's attribute: a weak reference to the object that keeps it


def _owned(derived: torch.Tensor, owner: Any) -> torch.Tensor:
    """``derived`` tagged with its prepared object, for the registered ops: a compiled graph calls them with the
    derived weight but not the object (whose ``check()`` eager calls run), so they find the object by the tag."""
    setattr(derived, _OWNER, weakref.ref(owner))
    return derived


def _check_owner(derived: torch.Tensor | None) -> None:
    """The staleness check of the prepared object that keeps ``derived`` (a compiled graph's call): raises
    :class:`StaleWeightsError` as the object's eager call would, and if the object keeps another copy now."""
    ref = getattr(derived, _OWNER, None)
    owner = ref() if ref is not None else None
    if owner is None:
        return
    if derived is not (owner.w_int if isinstance(owner, PreparedSwiGLU) else owner.wf):
        raise _stale(f"the derived weight of a {type(owner).__name__} (the object was refreshed since)")
    owner.check()


def _triton_capable(w: torch.Tensor) -> bool:
    """A device the Triton kernels can run on: a GPU, or the CPU under the interpreter."""
    return w.is_cuda or (w.device.type == "cpu" and launching.interpreting())


class _Refreshing(torch.nn.Module):
    """Refreshes its prepared weights after ``load_state_dict`` and after ``.to()`` / ``.cuda()`` / ``.half()``."""

    def __init__(self) -> None:
        super().__init__()
        self.register_load_state_dict_post_hook(lambda module, keys: module.refresh())

    def refresh(self) -> None:
        raise NotImplementedError

    def _apply(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        out = super()._apply(fn, *args, **kwargs)
        if hasattr(self, "prepared"):
            self.refresh()
        return out


class SwiGLU(_Refreshing):
    """An MLP gate: ``silu(x @ w_gate) * (x @ w_up)`` with parameters ``[d, ff]``, through
    :class:`PreparedSwiGLU`. Call :meth:`refresh` after changing the weights yourself or stepping an
    optimizer (:func:`refresh_on_step`); loading and moving the module refresh it."""

    def __init__(self, d: int, ff: int, *, device: Any = None, dtype: torch.dtype | None = None) -> None:
        super().__init__()
        scale = d**-0.5
        self.w_gate = torch.nn.Parameter(scale * torch.randn(d, ff, device=device, dtype=dtype))
        self.w_up = torch.nn.Parameter(scale * torch.randn(d, ff, device=device, dtype=dtype))
        self.prepared = PreparedSwiGLU(self.w_gate, self.w_up)

    def refresh(self) -> None:
        self.prepared = PreparedSwiGLU(self.w_gate, self.w_up)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self.prepared
        if p.w_gate is not self.w_gate or p.w_up is not self.w_up:  # a parameter replaced: p holds the old one
            self.refresh()
        return self.prepared(x)


class RMSNormLinear(_Refreshing):
    """``rms_norm(x, g) @ w + b`` with parameters ``g [K]``, ``w [K, N]`` and an optional ``b [N]``, through
    :class:`PreparedRMSNormLinear`; refreshed like :class:`SwiGLU`."""

    def __init__(
        self,
        k: int,
        n: int,
        *,
        bias: bool = True,
        eps: float = 1e-6,
        device: Any = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.eps = eps
        self.g = torch.nn.Parameter(torch.ones(k, device=device, dtype=dtype))
        self.w = torch.nn.Parameter(k**-0.5 * torch.randn(k, n, device=device, dtype=dtype))
        self.b = torch.nn.Parameter(torch.zeros(n, device=device, dtype=dtype)) if bias else None
        self.prepared = PreparedRMSNormLinear(self.g, self.w)

    def refresh(self) -> None:
        self.prepared = PreparedRMSNormLinear(self.g, self.w)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self.prepared
        if p.g is not self.g or p.w is not self.w:  # a parameter replaced: p holds the old one
            self.refresh()
        return self.prepared(x, self.b, self.eps)


def refresh_all(module: torch.nn.Module) -> None:
    """Refresh every prepared-weights module inside ``module``."""
    for m in module.modules():
        if isinstance(m, _Refreshing):
            m.refresh()


def refresh_on_step(optimizer: torch.optim.Optimizer, *modules: torch.nn.Module) -> Any:
    """Refresh the prepared weights of ``modules`` after every ``optimizer.step()``; returns the hook handle."""

    def hook(*_: Any) -> None:
        for module in modules:
            refresh_all(module)

    return optimizer.register_step_post_hook(hook)


# --------------------------------------------------------------------------------- torch.library ops
def _register(name: str, fake: Any, schema_fn: Any) -> None:
    """``kprof::<name>`` as a custom op running ``impl``, with ``fake`` for fake and meta tensors."""
    try:
        getattr(torch.ops.kprof, name)
        return  # already registered (this module imported twice under different names)
    except (AttributeError, RuntimeError):
        pass
    op = torch.library.custom_op(f"kprof::{name}", mutates_args=())(schema_fn)
    op.register_fake(fake)


def _contiguous(t: torch.Tensor) -> torch.Tensor:
    """Registered ops return contiguous outputs, as their fake implementations say."""
    return t if t.is_contiguous() else t.contiguous()


def _op_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return _contiguous(rms_norm(x, weight, eps))


def _op_fused_add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    y, h = fused_add_rms_norm(x, residual, weight, eps)
    return _contiguous(y), _contiguous(h)


def _op_silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    return _contiguous(silu_and_mul(x))


def _op_gelu_tanh_and_mul(x: torch.Tensor) -> torch.Tensor:
    return _contiguous(gelu_tanh_and_mul(x))


def _op_swiglu(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    return _contiguous(swiglu(x, w_gate, w_up))


def _op_swiglu_prepared(
    x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor, w_int: torch.Tensor | None
) -> torch.Tensor:
    _check_owner(w_int)  # what PreparedSwiGLU.__call__ checks before an eager call
    return _contiguous(_swiglu_prepared(x, w_gate, w_up, w_int))


def _op_rms_norm_linear(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, eps: float
) -> torch.Tensor:
    return _contiguous(rms_norm_linear(x, g, w, b, eps))


def _op_rms_norm_linear_prepared(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, wf: torch.Tensor | None, b: torch.Tensor | None, eps: float
) -> torch.Tensor:
    _check_owner(wf)  # what PreparedRMSNormLinear.__call__ checks before an eager call
    return _contiguous(_rms_norm_linear_prepared(x, g, w, wf, b, eps))


def _op_kasmina_forward(
    x: torch.Tensor,
    lifecycle: torch.Tensor,
    blueprint_id: torch.Tensor,
    alpha: torch.Tensor,
    weights: torch.Tensor,
    bias: torch.Tensor,
    check_ids: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    y, tele = kasmina_forward(x, lifecycle, blueprint_id, alpha, weights, bias, check_ids=check_ids)
    return _contiguous(y), tele


def _rl_prepared_fake(
    x: torch.Tensor, g: torch.Tensor, w: torch.Tensor, wf: torch.Tensor | None, b: torch.Tensor | None, eps: float
) -> torch.Tensor:
    return _rms_norm_linear_fake(x, g, w, b, eps)


_register("rms_norm", _rms_norm_fake, _op_rms_norm)
_register("fused_add_rms_norm", _add_fake, _op_fused_add_rms_norm)
_register("silu_and_mul", lambda x: _gated_fake(x, "silu_mul"), _op_silu_and_mul)
_register("gelu_tanh_and_mul", lambda x: _gated_fake(x, "gelu_mul"), _op_gelu_tanh_and_mul)
_register("swiglu", _swiglu_fake, _op_swiglu)
_register("swiglu_prepared", _swiglu_fake, _op_swiglu_prepared)
_register("rms_norm_linear", _rms_norm_linear_fake, _op_rms_norm_linear)
_register("rms_norm_linear_prepared", _rl_prepared_fake, _op_rms_norm_linear_prepared)
_register("kasmina_forward", _kasmina_fake, _op_kasmina_forward)


def registered_ops() -> Iterable[str]:
    """Names of the ``torch.ops.kprof`` ops this module registers."""
    return (
        "rms_norm",
        "fused_add_rms_norm",
        "silu_and_mul",
        "gelu_tanh_and_mul",
        "swiglu",
        "swiglu_prepared",
        "rms_norm_linear",
        "rms_norm_linear_prepared",
        "kasmina_forward",
    )


__all__ = [
    "BEST",
    "PREPARED",
    "PreparedRMSNormLinear",
    "PreparedSwiGLU",
    "RMSNormLinear",
    "StaleWeightsError",
    "SwiGLU",
    "check_prepared",
    "fused_add_rms_norm",
    "gelu_tanh_and_mul",
    "kasmina_forward",
    "refresh_all",
    "refresh_on_step",
    "registered_ops",
    "rms_norm",
    "rms_norm_linear",
    "silu_and_mul",
    "swiglu",
    "triton_enabled",
    "use_triton",
]

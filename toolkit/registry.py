"""Kernel families and their providers, registered next to the code that implements them.

A family is one folder under ``kernels/``. Its ``__init__`` builds a :class:`Family` (reference, oracle,
input factory, bytes/FLOPs models, tolerances, default sweep) and imports its modules; each module
registers its providers with the ``@FAMILY.provider(...)`` decorator. ``kprof.kernels.discover()``
imports every family folder, so adding a family or a version touches one folder only.
"""

from __future__ import annotations

import importlib
import itertools
import math
import pkgutil
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from kprof.dtypes import DTYPE_NAMES, canonical_dtype
from kprof.errors import KprofError, UnknownFamilyError, UnsupportedConfig
from kprof.shapes import Shape, parse_shape, shape_str  # noqa: F401 - re-exported: callers import them from here

if TYPE_CHECKING:
    from kprof.grid import GridTargets

ProviderKind = Literal["triton", "eager", "library", "compile", "peer", "roofline", "floor"]
PROVIDER_KINDS: tuple[str, ...] = ("triton", "eager", "library", "compile", "peer", "roofline", "floor")
"""``roofline``: a yardstick, not the family's function (one cuBLAS product of a matrix family's shape, a bare
copy of kasmina's x). ``floor``: less work than any version of the family must do (a copy of kasmina's x through
its chain of dependent loads): where it is already slower than a target allows, no version can meet it. Both are
timed like the others, never checked against the oracle nor ranked as the best provider (``YARDSTICK_KINDS``)."""
YARDSTICK_KINDS: tuple[str, ...] = ("roofline", "floor")

Inputs = dict[str, Any]


# ------------------------------------------------------------------------------------------- providers
@dataclass(frozen=True)
class Provider:
    """One way of computing a family's function: a Triton version or a baseline to compare against."""

    family: str
    name: str
    kind: ProviderKind
    fn: Callable[..., Any]
    description: str
    source: str | None = None
    """File defining this provider; its hash goes into every run so revisions can be told apart."""
    accepts_out: bool = False
    """True when ``fn`` takes ``out=`` (the harness then poisons it to catch unwritten elements)."""
    requires: Callable[[], str | None] | None = None
    """Returns why the provider cannot run here (missing package, no GPU), or None."""
    supports: Callable[[Shape, str], str | None] | None = None
    """Returns why the provider cannot run this (shape, dtype), or None."""
    gpu_only: bool = False
    """Cannot run on the CPU (under the Triton interpreter); skipped with a note in interpreter runs."""
    params: tuple[tuple[str, str], ...] = ()
    """Meta-parameters a sweep may set, ``(name, what it is)``: the kernel's constexprs (``BLOCK_N``...) and
    the launch options ``num_warps`` / ``num_stages``. ``fn`` then accepts ``config={name: value}`` and
    launches exactly that specialisation, raising :class:`~kprof.errors.UnsupportedConfig` when it cannot."""
    config: tuple[tuple[str, int], ...] = ()
    """The fixed meta-parameters of a provider made by :meth:`with_config` (empty: the version chooses)."""

    @property
    def is_triton(self) -> bool:
        return self.kind == "triton"

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.params)

    def with_config(self, config: Mapping[str, int]) -> Provider:
        """This version pinned to ``config``: a provider named ``name[K=V,...]`` (what a sweep measures).

        Compile failures of the pinned specialisation (shared memory beyond the device's, a tile the
        compiler rejects) are raised as ``UnsupportedConfig`` so a sweep records them as skipped."""
        if not self.params:
            raise KprofError(
                f"provider {self.name!r} of {self.family!r} takes no meta-parameters; versions that do: "
                "see `kprof families --params`"
            )
        unknown = [k for k in config if k not in self.param_names]
        if unknown:
            raise KprofError(
                f"{self.family}/{self.name} has no meta-parameter {', '.join(map(repr, unknown))}; "
                f"it takes: {', '.join(self.param_names)}"
            )
        fixed = tuple((k, int(config[k])) for k in self.param_names if k in config)
        base = self.fn
        cfg = dict(fixed)

        def pinned(*args: Any, **kwargs: Any) -> Any:
            try:
                return base(*args, config=cfg, **kwargs)
            except Exception as exc:
                reason = compile_failure(exc)
                if reason is None:
                    raise
                raise UnsupportedConfig(reason) from exc

        return replace(self, name=config_name(self.name, dict(fixed)), fn=pinned, config=fixed)

    def unavailable_reason(self) -> str | None:
        return self.requires() if self.requires is not None else None

    def unsupported_reason(self, shape: Shape, dtype: str) -> str | None:
        return self.supports(shape, dtype) if self.supports is not None else None


@dataclass(frozen=True)
class Sweep:
    """The shapes and dtypes a family runs by default, for GPU runs and for CPU interpreter runs."""

    shapes: tuple[Shape, ...]
    dtypes: tuple[str, ...]


@dataclass(frozen=True)
class Case:
    """One measurement: family x provider x shape x dtype."""

    family: str
    provider: str
    shape: Shape
    dtype: str

    @property
    def id(self) -> str:
        return f"{self.family}/{self.provider}/{shape_str(self.shape)}/{self.dtype}"


# --------------------------------------------------------------------------------------------- families
_FAMILIES: dict[str, Family] = {}


class Family:
    """A kernel family: everything needed to check, time and account for every version of one function.

    ``make_inputs(shape, dtype, device, seed) -> dict`` gives the keyword arguments every provider,
    the eager reference and the oracle are called with. ``oracle(**inputs)`` returns the float64 truth
    (a tensor or a tuple of tensors). ``bytes_model``/``flops_model(shape, dtype)`` give the minimum
    bytes that must move through device memory and the FLOPs that must be computed.

    ``row_inputs`` names the inputs whose first dimension indexes independent rows: row i of every
    output depends only on row i of these (and on the other inputs whole). The correctness check of a
    large case then runs the oracle one block of rows at a time, so a float64 truth several times the
    inputs' size need not fit in device memory at once.
    """

    def __init__(
        self,
        name: str,
        *,
        description: str,
        package_dir: str | Path,
        make_inputs: Callable[..., Inputs],
        oracle: Callable[..., Any],
        bytes_model: Callable[[Shape, str], int],
        flops_model: Callable[[Shape, str], int],
        tolerances: Mapping[str, float],
        make_outputs: Callable[..., Any] | None = None,
        baseline: str = "torch_eager",
        sweep_file: str = "sweep.yaml",
        shared_sources: Iterable[str | Path] = (),
        row_inputs: Iterable[str] = (),
    ) -> None:
        # ``shared_sources`` is accepted and ignored: revisions written before the import closure
        # (:mod:`kprof.closure`) replaced that hand-kept list still pass it, and must load under --rev
        del shared_sources
        if name in _FAMILIES:
            raise KprofError(f"kernel family {name!r} is defined twice; family names must be unique")
        missing = [d for d in DTYPE_NAMES if d not in tolerances]
        if missing:
            raise KprofError(f"family {name!r} has no tolerance for {missing}; give one per dtype")
        self.name = name
        self.description = description
        self.package_dir = Path(package_dir)
        self.make_inputs = make_inputs
        self.make_outputs = make_outputs
        self.oracle = oracle
        self.bytes_model = bytes_model
        self.flops_model = flops_model
        self.tolerances = {canonical_dtype(k): float(v) for k, v in tolerances.items()}
        self.baseline = baseline
        self.row_inputs = tuple(row_inputs)
        self.sweep_path = self.package_dir / sweep_file
        self.providers: dict[str, Provider] = {}
        _FAMILIES[name] = self

    def __repr__(self) -> str:
        return f"Family({self.name!r}, providers={list(self.providers)})"

    def provider(
        self,
        name: str,
        *,
        kind: ProviderKind,
        description: str,
        accepts_out: bool = False,
        requires: Callable[[], str | None] | None = None,
        supports: Callable[[Shape, str], str | None] | None = None,
        gpu_only: bool = False,
        params: Mapping[str, str] | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator registering ``fn`` as provider ``name`` of this family; returns ``fn`` unchanged."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.add_provider(
                Provider(
                    family=self.name,
                    name=name,
                    kind=kind,
                    fn=fn,
                    description=description,
                    source=_source_of(fn),
                    accepts_out=accepts_out,
                    requires=requires,
                    supports=supports,
                    gpu_only=gpu_only,
                    params=tuple((params or {}).items()),
                )
            )
            return fn

        return register

    def add_provider(self, provider: Provider) -> Provider:
        if provider.kind not in PROVIDER_KINDS:
            raise KprofError(f"provider {provider.name!r}: kind must be one of {PROVIDER_KINDS}")
        if provider.name in self.providers:
            raise KprofError(f"family {self.name!r} already has a provider named {provider.name!r}")
        self.providers[provider.name] = provider
        return provider

    def get_provider(self, name: str) -> Provider:
        """A provider by name; ``version[K=V,...]`` is that version pinned to those meta-parameters."""
        if name in self.providers:
            return self.providers[name]
        base, config = split_config_name(name)
        if config is not None and base in self.providers:
            return self.providers[base].with_config(config)
        raise KprofError(f"family {self.name!r} has no provider {name!r}; it has: {', '.join(self.providers)}")

    def triton_providers(self) -> list[Provider]:
        return [p for p in self.providers.values() if p.is_triton]

    def grid(self, part: str = "main") -> Sweep:
        """One part of the family's shape grid (``grid:`` in its YAML file): the model-sized points that
        ``kprof profile FAMILY --grid PART`` races. A part lists ``shapes``, or ``axes`` whose cartesian
        product gives the shapes, and ``dtypes``; parts let a subset run in another dtype, or a long grid
        run as several processes."""
        parts = self.grid_parts()
        if part not in parts:
            raise KprofError(f"{self.sweep_path} has no grid part {part!r}; it has: {', '.join(parts) or 'none'}")
        return parts[part]

    def grid_parts(self) -> dict[str, Sweep]:
        """Every part of the family's shape grid, by name (empty when the YAML file has no ``grid:``)."""
        data = self._sweep_data().get("grid") or {}
        if not isinstance(data, dict):
            raise KprofError(f"{self.sweep_path}: 'grid:' must map part names to {{axes|shapes, dtypes}}")
        return {str(name): self._grid_part(str(name), spec) for name, spec in data.items()}

    def _grid_part(self, name: str, spec: Any) -> Sweep:
        where = f"{self.sweep_path} grid part {name!r}"
        if not isinstance(spec, dict) or "dtypes" not in spec or ("axes" in spec) == ("shapes" in spec):
            raise KprofError(f"{where} needs 'dtypes:' and exactly one of 'axes:' or 'shapes:'")
        if "axes" in spec:
            axes = spec["axes"]
            if not axes or not all(isinstance(a, list) and a for a in axes):
                raise KprofError(f"{where}: 'axes:' must be a list of non-empty lists of sizes")
            shapes = tuple(parse_shape(list(p)) for p in itertools.product(*axes))
        else:
            shapes = tuple(parse_shape(s) for s in spec["shapes"])
        return Sweep(shapes=shapes, dtypes=tuple(canonical_dtype(d) for d in spec["dtypes"]))

    def grid_targets(self) -> GridTargets:
        """What the family's grid points must reach besides the peer verdict (``grid_targets:`` in its YAML
        file; :func:`grid_targets_in`)."""
        return grid_targets_in(self.sweep_path, self.name)

    def _sweep_data(self) -> dict:
        return read_sweep_file(self.sweep_path, self.name)

    def sweep(self, mode: Literal["gpu", "interpreter"] = "gpu") -> Sweep:
        """The default sweep for a GPU run or for a CPU interpreter run, from the family's YAML file."""
        section = self._sweep_data().get(mode)
        if not isinstance(section, dict) or "shapes" not in section or "dtypes" not in section:
            raise KprofError(f"{self.sweep_path} needs a '{mode}:' section with 'shapes:' and 'dtypes:' lists")
        shapes = tuple(parse_shape(s) for s in section["shapes"])
        dtypes = tuple(canonical_dtype(d) for d in section["dtypes"])
        return Sweep(shapes=shapes, dtypes=dtypes)


def read_sweep_file(path: Path, family: str) -> dict:
    """A family's YAML file (its sweeps, grid and grid targets) as a mapping."""
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise KprofError(f"family {family!r} has no sweep file at {path}") from None
    except yaml.YAMLError as exc:
        raise KprofError(f"{path} is not valid YAML: {exc}") from None
    return data if isinstance(data, dict) else {}


BOUNDS = ("max_rows", "min_rows", "untiled", "min_mib")  # the row, tile and size bounds of a ``roofline:`` class


def grid_targets_in(path: Path, family: str = "") -> GridTargets:
    """The ``grid_targets:`` of a family's YAML file: ``copy: {fraction, min_mib}`` for memory-bound points,
    ``roofline:`` a list of ``{ratio, max_rows | min_rows | untiled | min_mib, yardstick}`` classes, the first
    that applies winning (where its yardstick did not run at a point, ``copy:`` judges it if it applies). None
    declared: nothing checked. Reads the file only, so ``kprof grid`` needs no family's code (torch, Triton) for
    it."""
    from kprof.grid import CopyTarget, GridTargets, RooflineTarget  # pandas: not on the ops API's import path

    spec = read_sweep_file(path, family).get("grid_targets") or {}
    where = f"{path} grid_targets"
    if not isinstance(spec, dict) or set(spec) - {"copy", "roofline"}:
        raise KprofError(f"{where}: give 'copy:' and/or 'roofline:'")
    copy = None
    if "copy" in spec:
        c = spec["copy"]
        if (
            not isinstance(c, dict)
            or set(c) != {"fraction", "min_mib"}
            or not 0 < _number(c["fraction"]) <= 1
            or not _number(c["min_mib"]) >= 0
        ):
            raise KprofError(
                f"{where}: 'copy:' needs fraction (0 to 1] and min_mib, e.g. {{fraction: 0.95, min_mib: 64}}"
            )
        copy = CopyTarget(fraction=float(c["fraction"]), min_bytes=float(_number(c["min_mib"])) * 2**20)
    classes = spec.get("roofline") or []
    keys = {"ratio", "yardstick", *BOUNDS}
    if not isinstance(classes, list) or not all(
        isinstance(c, dict)
        and "ratio" in c
        and set(c) <= keys
        and _number(c["ratio"]) >= 1
        and all(isinstance(c[k], int) and not isinstance(c[k], bool) and c[k] > 0 for k in set(c) & set(BOUNDS))
        and isinstance(c.get("yardstick", "cuBLAS"), str)
        and str(c.get("yardstick", "cuBLAS")).strip() != ""
        for c in classes
    ):
        raise KprofError(
            f"{where}: 'roofline:' is a list of {{ratio >= 1 and any of max_rows, min_rows, untiled, min_mib "
            "(positive whole numbers), yardstick (what the `roofline` provider is, in words; default cuBLAS)}}"
        )
    roofline = tuple(
        RooflineTarget(
            ratio=float(c["ratio"]),
            **{k: int(c[k]) for k in BOUNDS if k in c},
            **({"yardstick": c["yardstick"].strip()} if "yardstick" in c else {}),
        )
        for c in classes
    )
    return GridTargets(copy=copy, roofline=roofline)


def config_name(version: str, config: Mapping[str, int]) -> str:
    """``triton_one_row`` + ``{BLOCK_N: 4096, num_warps: 8}`` -> ``triton_one_row[BLOCK_N=4096,num_warps=8]``."""
    return f"{version}[{','.join(f'{k}={v}' for k, v in config.items())}]"


_CONFIG_NAME = re.compile(r"^(?P<base>[A-Za-z_][\w.-]*)\[(?P<body>[^\[\]]*)\]$")


def split_config_name(name: str) -> tuple[str, dict[str, int] | None]:
    """Inverse of :func:`config_name`; ``(name, None)`` for a name without ``[...]``."""
    m = _CONFIG_NAME.match(name.strip())
    if not m:
        return name, None
    config: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in m["body"].split(","))):
        key, sep, value = part.partition("=")
        if not sep or not re.fullmatch(r"-?\d+", value.strip()):
            raise KprofError(f"bad meta-parameter {part!r} in {name!r}: write NAME=INTEGER, e.g. BLOCK_N=4096")
        config[key.strip()] = int(value)
    return m["base"], config


def compile_failure(exc: BaseException) -> str | None:
    """Why a specialisation could not be built, when ``exc`` is a compiler or resource failure, else None."""
    if isinstance(exc, UnsupportedConfig):
        return str(exc)
    kind = type(exc).__name__
    if kind in ("OutOfResources", "CompilationError", "PTXASError", "CompileTimeAssertionFailure"):
        first = next((ln for ln in str(exc).strip().splitlines() if ln.strip()), kind)
        return f"does not compile ({kind}): {first.strip()[:300]}"
    return None


def _source_of(fn: Callable[..., Any]) -> str | None:
    code = getattr(fn, "__code__", None)
    return code.co_filename if code is not None else None


def load_family_modules(package_name: str, package_path: Iterable[str]) -> None:
    """Import every module of a family folder so their ``@FAMILY.provider`` decorators run."""
    for info in sorted(pkgutil.iter_modules(list(package_path)), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package_name}.{info.name}")


def registered_families() -> dict[str, Family]:
    return dict(_FAMILIES)


@contextmanager
def isolated_registry() -> Iterator[dict[str, Family]]:
    """Families defined inside the block go to a fresh registry (yielded), not the global one.

    Used to load a family's sources as they were at another git revision next to today's, under the
    same family name (:mod:`kprof.revisions`)."""
    global _FAMILIES
    saved, fresh = _FAMILIES, {}
    _FAMILIES = fresh
    try:
        yield fresh
    finally:
        _FAMILIES = saved


def get_family(name: str) -> Family:
    from kprof.kernels import discover

    families = discover()
    if name not in families:
        known = ", ".join(sorted(families)) or "none"
        raise UnknownFamilyError(f"unknown kernel family {name!r}; known families: {known}")
    return families[name]


@dataclass(frozen=True)
class Selection:
    """Which providers, shapes and dtypes of a family a run covers."""

    family: str
    providers: tuple[str, ...]
    shapes: tuple[Shape, ...]
    dtypes: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...] = field(default=())
    """(provider, reason) for providers left out of the whole run (not installed, GPU only...)."""

    def cases(self) -> list[Case]:
        return [Case(self.family, p, s, d) for s in self.shapes for d in self.dtypes for p in self.providers]


def _number(v: Any) -> float:
    """A YAML number (not a bool, not text); NaN otherwise, which every bound check refuses."""
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else math.nan

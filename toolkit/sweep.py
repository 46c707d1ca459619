"""``kprof sweep``: one Triton version over the cartesian product of its meta-parameters.

Each configuration becomes a provider named ``version[NAME=V,...]`` (:meth:`kprof.registry.Provider.with_config`),
so a sweep is an ordinary run: every configuration is checked against the oracle, timed, attributed (the
specialisation that ran, its registers, spills and shared memory) and stored, and the report, diff and
dashboard read it like any other run. The version's own choice runs beside them as ``version`` (the
*default* the guide compares against).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence

from kprof.errors import KprofError
from kprof.registry import Family, config_name

MAX_CONFIGS = 512


def parse_params(specs: Sequence[str]) -> dict[str, list[int]]:
    """``["BLOCK_N=1024,2048", "num_warps=4,8"]`` -> ``{"BLOCK_N": [1024, 2048], "num_warps": [4, 8]}``.

    Values may also be written as a range of powers of two, ``BLOCK_N=1024..8192``."""
    out: dict[str, list[int]] = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        name = name.strip()
        if not sep or not name or not values.strip():
            raise KprofError(f"bad --param {spec!r}: write NAME=V1,V2,... e.g. --param BLOCK_N=1024,2048,4096")
        if name in out:
            raise KprofError(f"--param {name} given twice; list all its values in one: {name}=V1,V2,...")
        out[name] = _values(name, values)
    return out


def _values(name: str, text: str) -> list[int]:
    vals: list[int] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        m = re.fullmatch(r"(\d+)\.\.(\d+)", part)
        if m:
            lo, hi = int(m[1]), int(m[2])
            if lo < 1 or hi < lo or lo & (lo - 1):
                raise KprofError(f"--param {name}: range {part!r} must be LOW..HIGH with LOW a power of two <= HIGH")
            v = lo
            while v <= hi:
                vals.append(v)
                v *= 2
        elif re.fullmatch(r"-?\d+", part):
            vals.append(int(part))
        else:
            raise KprofError(f"--param {name}: {part!r} is not an integer (or a LOW..HIGH power-of-two range)")
    return list(dict.fromkeys(vals))


def expand(params: Mapping[str, Sequence[int]]) -> list[dict[str, int]]:
    """The cartesian product of the parameter values, in a stable order (first parameter slowest)."""
    names = list(params)
    combos = [dict(zip(names, values)) for values in itertools.product(*(params[n] for n in names))]
    if len(combos) > MAX_CONFIGS:
        raise KprofError(f"{len(combos)} configurations asked for (at most {MAX_CONFIGS}); sweep fewer values")
    return combos


def sweep_providers(
    family: Family, version: str, params: Mapping[str, Sequence[int]], include_default: bool = True
) -> list[str]:
    """Provider names of a sweep: ``version[...]`` per configuration, then ``version`` itself (its own choice)."""
    provider = family.get_provider(version)
    if not provider.params:
        tunable = [p.name for p in family.providers.values() if p.params]
        raise KprofError(
            f"{family.name}/{version} takes no meta-parameters; versions of {family.name} that do: "
            f"{', '.join(tunable) or 'none'}"
        )
    if not params:
        raise KprofError(
            f"give at least one --param; {family.name}/{version} takes: "
            + "; ".join(f"{n} ({d})" for n, d in provider.params)
        )
    unknown = [n for n in params if n not in provider.param_names]
    if unknown:
        raise KprofError(
            f"{family.name}/{version} has no meta-parameter {', '.join(unknown)}; it takes: "
            + "; ".join(f"{n} ({d})" for n, d in provider.params)
        )
    names = [config_name(version, cfg) for cfg in expand(params)]
    return names + ([version] if include_default else [])

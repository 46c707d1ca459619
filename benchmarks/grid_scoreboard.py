"""One scoreboard from many `kprof grid --markdown` tables: each point's latest verdict and target, per family and dtype.

    python benchmarks/grid_scoreboard.py TABLE.md ... [--device NAME [--include-unrecorded]] [--markdown OUT.md]

The grids of one machine were raced part by part over several rounds, and points were raced again after a
change; their run stores were replaced by metrics CSVs, so the tables are what is left to read. Give the tables
oldest first: a later table's row for a (family, shape, dtype) replaces an earlier one's, so each point counts
once, with its latest measurement. Rows a table left unmeasured (``not measured``) do not replace a measured row.

The tables must be of one machine: a row replaces another as a later measurement of the same point, which it is not
if another GPU measured it. ``kprof grid`` names the device in the title (``· device NAME``); where the tables name
two or more, the scoreboard refuses and names each with its tables: ``--device NAME`` builds it from that device's
tables and lists the others as left out. A table that names no device (written before ``kprof grid`` named it) shows
nothing of its machine: with ``--device`` it is left out (and listed) unless ``--include-unrecorded``; without, it
is kept, and the scoreboard says how many such tables it read and that their rows are assumed to be of one machine,
unchecked. The scoreboard's header names the device.

Only the points of each family's grid (``grid:`` in its sweep.yaml) count, unless ``--all-points``: a table may
also hold points raced beside them. Prints, per family and dtype: points, win / tie / loss / uncertain, the family's
target met / missed / not judged (``grid_targets:``), and which tables the rows came from; the same counts per grid
part (the ``main`` grids against the ``models`` shapes, say); where the latest tables
timed what the ops API runs, the plain op (the family's dispatch, ``triton_tuned / best``) and the prepared objects
(``triton_prepared_op``), at how many points each was within 1.02x of the best version (its ratio as the table prints
it) and the points past that; then every loss and missed target with its ratios, its target and the table's why
column, the same for every target not judged (a point on the target's line, within its cases' spread), and for every
uncertain point leaning to a loss (past the tie band against the fastest peer, within its cases' spread). Where that row
has no ncu reading and an earlier table's row of the point has one of the same best version, the why column quotes it
and names that table, and says whether it is of the row's kernel code (where both titles name theirs: ``kprof
grid``'s "kernel code ..."). Nothing is measured here: the figures are the tables', each from the run its file names.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from kprof.grid import TIE
from kprof.kernels.ops_providers import BEST, PREPARED_OP


@dataclass(frozen=True)
class Point:
    """One row of a grid table."""

    family: str
    shape: str
    dtype: str
    verdict: str
    best: str
    best_us: str
    peer: str
    peer_us: str
    ratio: str
    pct_copy: str
    vs_roofline: str
    met: str  # "yes", "no", "not judged" (within the cases' spread), or "" where no target applies
    why: str
    source: str
    target: str = ""  # the table's target column: which yardstick judged the point
    carried_ncu: str = ""  # an earlier table's ncu reading of the same version at the point, where this row has none
    carried_from: str = ""  # that table
    code: str = ""  # the kernel code the table's title names (``kprof grid``'s "kernel code ..."), "" where none
    carried_code: str = ""  # the carried reading's table's
    prepared_op: str = ""  # the ops API's prepared object's time over the best version's, where the table timed it
    dispatch: str = ""  # the ops API's plain op's (the family's dispatch) time over the best version's, where timed


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


# the columns ``kprof grid`` writes for the providers that run the ops API's prepared objects, and its plain ops
PREPARED_OP_COLUMNS = {f"{ref.split('/', 1)[1]} / best" for ref in PREPARED_OP.values()}
DISPATCH_COLUMNS = {f"{ref.split('/', 1)[1]} / best" for ref in BEST.values()}


def _title(path: Path, text: str) -> re.Match[str]:
    """The table's title line (group 1: the family); a file without one is no grid table, and reading on would
    count nothing from it."""
    title = re.search(r"^# kprof grid · (\w+).*$", text, re.M)
    if title is None:
        raise SystemExit(f"{path}: not a kprof grid table (no '# kprof grid · FAMILY' title)")
    return title


def device_of(title: str) -> str | None:
    """The device a title names (``· device NAME``, up to the next `` · `` or the line's end), None where it names
    none: ``kprof grid`` wrote no device before, and such a table shows nothing of its machine."""
    found = re.search(r" · device (.+?)(?= · |$)", title)
    return found.group(1).strip() if found else None


def table_device(path: Path) -> str | None:
    """:func:`device_of` the title of the table at ``path``."""
    return device_of(_title(path, path.read_text()).group(0))


def read_table(path: Path) -> list[Point]:
    """The rows of one ``kprof grid --markdown`` file (its family from the title line)."""
    text = path.read_text()
    family = _title(path, text).group(1)
    named = re.search(r"^# kprof grid · .* · kernel code (.+)$", text, re.M)
    code = named.group(1).strip() if named else ""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith("| shape |")), None)
    if start is None:
        return []
    head = _cells(lines[start])
    col = {name: head.index(name) for name in ("shape", "dtype", "verdict", "best kprof", "best peer", "ratio")}
    col |= {name: head.index(name) for name in ("% of copy", "vs roofline", "target", "met") if name in head}
    held = next((name for name in head if name in PREPARED_OP_COLUMNS), None)
    col |= {"prepared_op": head.index(held)} if held else {}
    plain = next((name for name in head if name in DISPATCH_COLUMNS), None)
    col |= {"dispatch": head.index(plain)} if plain else {}
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        c = _cells(line)

        def at(name: str, shift: int = 0, cells: list[str] = c) -> str:
            return cells[col[name] + shift].replace("**", "") if name in col else ""

        targeted = at("target") not in ("", "—")
        met = ("not judged" if at("met") in ("", "—") else at("met")) if targeted else ""

        rows.append(
            Point(
                family,
                at("shape"),
                at("dtype"),
                at("verdict"),
                at("best kprof"),
                at("best kprof", 1),
                at("best peer"),
                at("best peer", 1),
                at("ratio"),
                at("% of copy"),
                at("vs roofline"),
                met,
                c[-1],
                str(path.resolve()),
                at("target") if targeted else "",
                code=code,
                prepared_op=at("prepared_op").replace("—", ""),
                dispatch=at("dispatch").replace("—", ""),
            )  # fmt: skip
        )
    return rows


def latest(
    paths: list[Path], on_grid: dict[str, set[tuple[str, str]]] | None = None
) -> dict[tuple[str, str, str], Point]:
    """Each (family, shape, dtype)'s row from the last table that measured it; with ``on_grid`` (family -> its grid's
    (shape, dtype) pairs: :func:`grid_points`) only the rows of grid points (a table may also hold points raced beside
    them)."""
    points: dict[tuple[str, str, str], Point] = {}
    for path in paths:
        for p in read_table(path):
            key = (p.family, p.shape, p.dtype)
            if p.verdict == "not measured" and key in points:
                continue
            points[key] = with_earlier_ncu(p, points.get(key))
    return points if on_grid is None else only_on_grid(points, on_grid)


@dataclass(frozen=True)
class Selection:
    """The tables a scoreboard is built from, of one device, and those left out with why."""

    device: str | None  # the one device the kept tables name, None where none names one
    kept: tuple[Path, ...]  # oldest first, as given
    unrecorded: tuple[Path, ...]  # the kept tables that name no device: assumed to be of the others' machine
    left_out: tuple[tuple[Path, str], ...] = ()  # (table, why)


def by_device(devices: dict[Path, str | None]) -> dict[str | None, list[Path]]:
    """The tables by the device their title names (None: none named), in the order given."""
    out: dict[str | None, list[Path]] = {}
    for path, name in devices.items():
        out.setdefault(name, []).append(path)
    return out


def _listed(paths: list[Path]) -> str:
    return ", ".join(f"`{path}`" for path in paths)


def select_tables(paths: list[Path], device: str | None = None, include_unrecorded: bool = False) -> Selection:
    """The tables of one device: ``device``'s (and, with ``include_unrecorded``, those that name none), or where it
    is None all of them, refused where they name two or more devices: a later table's row replaces an earlier one's
    as a later measurement of the same point, and one of another GPU is not that. A ``device`` no table names is
    refused too: the tables that name none would be taken for its tables on no evidence."""
    devices = {path: table_device(path) for path in paths}
    found = by_device(devices)
    named = [name for name in found if name is not None]
    if device is None:
        if len(named) > 1:
            raise SystemExit(mixed_devices(found))
        return Selection(named[0] if named else None, tuple(paths), tuple(found.get(None, [])))
    if device not in found:
        raise SystemExit(no_such_device(device, found))
    kept = [path for path in paths if devices[path] == device or (include_unrecorded and devices[path] is None)]
    left_out = [(path, left_out_why(devices[path])) for path in paths if path not in kept]
    return Selection(device, tuple(kept), tuple(p for p in kept if devices[p] is None), tuple(left_out))


def left_out_why(name: str | None) -> str:
    """Why ``--device`` left out a table that names device ``name`` (None: none)."""
    if name is None:
        return "names no device, so nothing shows its machine: `--include-unrecorded` keeps such tables"
    return f"device {name}"


def _each_device(found: dict[str | None, list[Path]]) -> list[str]:
    """One line per device with its tables, the tables that name none last."""
    lines = [f"  {name}: {_listed(tables)}" for name, tables in found.items() if name is not None]
    if None in found:
        lines.append(f"  no device named (tables of before `kprof grid` named it): {_listed(found[None])}")
    return lines


def mixed_devices(found: dict[str | None, list[Path]]) -> str:
    """The refusal where the tables name two or more devices, each with its tables, and what to do."""
    named = [name for name in found if name is not None]
    return "\n".join(
        [
            f"the tables name {len(named)} devices; a scoreboard merges the rows of one machine's tables:",
            *_each_device(found),
            "pass --device NAME (one of those names) to build the scoreboard of that device's tables "
            "(add --include-unrecorded to keep the tables that name no device too).",
        ]
    )


def no_such_device(device: str, found: dict[str | None, list[Path]]) -> str:
    """The refusal where ``--device`` names a device no table names."""
    return "\n".join(
        [
            f"no table names device {device!r}; the tables name:",
            *_each_device(found),
            "pass --device with one of those names as written there, or leave --device out where the tables name "
            "one device or none.",
        ]
    )


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def device_lines(selection: Selection, root: Path) -> list[str]:
    """The scoreboard's header: the device its rows are of, how many tables name none (their rows taken to be of
    that machine, unchecked: nothing shows it), and the tables left out with why. A table given twice (two globs
    that both match it) counts once."""
    kept, unrecorded = len(set(selection.kept)), len(set(selection.unrecorded))
    before = "written before `kprof grid` named the device"
    if selection.device is None:
        line = (
            f"Device: not recorded: no title of the {_n(kept, 'table')} names one ({before}); their rows are assumed "
            "to be of one machine, unchecked."
        )
    elif unrecorded:
        line = (
            f"Device: {selection.device}, named by {kept - unrecorded} of the {_n(kept, 'table')}; no device is "
            f"named in {_n(unrecorded, 'table')} ({before}): their rows are assumed to be of the same machine, "
            "unchecked."
        )
    else:
        line = f"Device: {selection.device}, named by " + ("the table." if kept == 1 else f"each of the {kept} tables.")
    out = [line, ""]
    if selection.left_out:
        out += [f"Left out by `--device {selection.device}`: {_n(len(selection.left_out), 'table')}:", ""]
        out += [f"- `{_shown(path, root)}`: {why}" for path, why in selection.left_out]
        out.append("")
    return out


def _shown(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` where it is under it, else as given."""
    resolved = path.resolve()
    return str(resolved.relative_to(root)) if resolved.is_relative_to(root) else str(path)


NO_NCU = "no ncu measurement here"


def ncu_reading(why: str) -> str:
    """The ncu part of a why column (``ncu: VERSION: DRAM ... (...)``, up to the next ``; ``), or ""."""
    found = re.search(r"(?:^|; )(ncu: .*?)(?=; |$)", why)
    return found.group(1) if found else ""


def with_earlier_ncu(new: Point, old: Point | None) -> Point:
    """``new``, and where its why has no ncu reading, ``old``'s (an earlier table's row of the same point) if the
    same kprof version was the best in both: what Nsight Compute measured of that version's kernels there (DRAM
    bytes against the model, occupancy and its limiter) does not depend on the race around it, and the scoreboard
    names the table it comes from."""
    if old is None or new.best != old.best or ncu_reading(new.why) or NO_NCU not in new.why:
        return new
    reading, source, code = (
        (ncu_reading(old.why), old.source, old.code)
        if ncu_reading(old.why)
        else (old.carried_ncu, old.carried_from, old.carried_code)
    )
    return replace(new, carried_ncu=reading, carried_from=source, carried_code=code) if reading else new


def carried_reading(p: Point, root: Path) -> str:
    """A carried ncu reading as the why column quotes it: first (before the column is cut) the table it comes from
    and whether it is of this row's kernel code (nothing added where both tables name the same code, both codes
    where they differ, that it cannot be told where either names none), then the reading."""
    where = f"in `{Path(p.carried_from).relative_to(root)}`"
    if p.code and p.carried_code:
        where += "" if p.code == p.carried_code else f", kernel code {p.carried_code}, this row's {p.code}"
    else:
        where += ", whose kernel code is not named"
    return f"ncu ({where}): {p.carried_ncu.removeprefix('ncu: ')}"


def only_on_grid(
    points: dict[tuple[str, str, str], Point], on_grid: dict[str, set[tuple[str, str]]]
) -> dict[tuple[str, str, str], Point]:
    """The points whose (shape, dtype) is on their family's grid (``on_grid``: :func:`grid_points`)."""
    return {key: p for key, p in points.items() if (key[1], key[2]) in on_grid.get(key[0], set())}


def grid_points(families: set[str]) -> dict[str, set[tuple[str, str]]]:
    """Family -> the (shape, dtype) pairs of every part of its grid (``grid:`` in its sweep.yaml), shapes written as
    the tables write them (``512x65536``): :func:`point_parts` by family."""
    return on_grid_of(point_parts(families), families)


def on_grid_of(parts: dict[tuple[str, str, str], str], families: set[str]) -> dict[str, set[tuple[str, str]]]:
    """:func:`grid_points` from points already mapped to their parts (``parts``: :func:`point_parts`)."""
    out: dict[str, set[tuple[str, str]]] = {name: set() for name in families}
    for family, shape, dtype in parts:
        out[family].add((shape, dtype))
    return out


def point_parts(families: set[str]) -> dict[tuple[str, str, str], str]:
    """(family, shape as the tables write it, dtype) -> the grid part that holds the point (the first, in the order
    of the family's sweep.yaml, where two parts share one)."""
    from kprof.kernels import discover

    found = discover()
    out: dict[tuple[str, str, str], str] = {}
    for name in families:
        for part, sweep in found[name].grid_parts().items():
            for shape in sweep.shapes:
                for dtype in sweep.dtypes:
                    out.setdefault((name, "x".join(map(str, shape)), dtype), part)
    return out


def timed_and_past(points: list[Point], field: str) -> tuple[list[Point], list[Point]]:
    """The points whose ``field`` (a ratio to the best version: ``dispatch``, ``prepared_op``) was timed, and those of
    them past the tie band, by shape."""
    timed = [p for p in points if getattr(p, field)]
    return timed, sorted((p for p in timed if float(getattr(p, field)) > TIE), key=lambda p: p.shape)


def part_lines(points: dict[tuple[str, str, str], Point], parts: dict[tuple[str, str, str], str]) -> list[str]:
    """One row per grid part over every family and dtype: points, verdicts, the plain ops within the tie band of the
    best version where timed, targets met and missed; nothing where ``parts`` names no point."""
    by_part: dict[str, list[Point]] = {}
    for key, p in points.items():
        if key in parts:
            by_part.setdefault(parts[key], []).append(p)
    if not by_part:
        return []
    out = [
        "",
        "By grid part (every family and dtype; `models`: shapes of public models off the other parts' axes):",
        "",
        "| part | points | win | tie | loss | uncertain | plain op within the tie band (of timed) | target met | missed |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for part, ps in sorted(by_part.items()):
        v = Counter(p.verdict for p in ps)
        m = Counter(p.met for p in ps)
        timed, past = timed_and_past(ps, "dispatch")
        out.append(
            f"| {part} | {len(ps)} | {v['win']} | {v['tie']} | {v['loss']} | {v['uncertain']} | "
            f"{len(timed) - len(past)} of {len(timed)} | {m['yes']} | {m['no']} |"
        )
    return out


def scoreboard(
    points: dict[tuple[str, str, str], Point],
    root: Path,
    parts: dict[tuple[str, str, str], str] | None = None,
    selection: Selection | None = None,
) -> str:
    """The markdown: the device the rows are of and the tables left out (where ``selection`` says:
    :func:`device_lines`), a summary row per family and dtype (and per grid part, where ``parts`` maps the points to
    theirs: :func:`point_parts`), then the losses and missed targets, then the targets not judged."""
    groups: dict[tuple[str, str], list[Point]] = {}
    for p in points.values():
        groups.setdefault((p.family, p.dtype), []).append(p)
    out = device_lines(selection, root) if selection else []
    out += [
        "Each point's row from the last of the tables below (given oldest first) that measured it, gathered by",
        "`benchmarks/grid_scoreboard.py`: the figures are the tables' own, each from the run its file names.",
        "Target columns: the family's `grid_targets:` (met, missed, not judged within the cases' spread).",
        "",
        "| family | dtype | points | win | tie | loss | uncertain | not measured | target met | missed | not judged | tables |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for (family, dtype), ps in sorted(groups.items()):
        v = Counter(p.verdict for p in ps)
        m = Counter(p.met for p in ps)
        tables = ", ".join(f"`{Path(s).relative_to(root)}`" for s in dict.fromkeys(p.source for p in ps))
        out.append(
            f"| {family} | {dtype} | {len(ps)} | {v['win']} | {v['tie']} | {v['loss']} | {v['uncertain']} "
            f"| {v['not measured']} | {m['yes']} | {m['no']} | {m['not judged']} | {tables} |"
        )
    out += part_lines(points, parts or {})
    out += dispatch_lines(groups)
    out += prepared_op_lines(groups)
    short = [p for p in points.values() if p.verdict == "loss" or p.met == "no"]
    out += ["", f"Losses and missed targets: {len(short)}.", ""] + point_rows(short, root)
    on_line = [p for p in points.values() if p.met == "not judged" and p.verdict != "loss"]
    out += [
        "",
        f"Targets not judged: {len(on_line)} (the point's ratio to the target's yardstick is within its cases' spread "
        "of the target's line; its table's why column says how far the cases moved).",
        "",
    ] + point_rows(on_line, root)
    leaning = leaning_to_loss(points.values())
    out += [
        "",
        f"Uncertain, leaning to a loss: {len(leaning)} (the best kprof version's time over the fastest peer's is past "
        f"the tie band, {TIE}x, by no more than its cases' spread: within {TIE}x of the fastest peer is not shown there, "
        "nor is a loss; its table's why column says which spread, and whether the point is host-bound).",
        "",
    ] + point_rows(leaning, root)
    return "\n".join(out) + "\n"


def leaning_to_loss(points: Iterable[Point]) -> list[Point]:
    """The uncertain points whose ratio to the fastest peer is past the tie band: neither a loss (the margin is
    within the cases' spread) nor shown within :data:`kprof.grid.TIE` of the peer."""
    return [p for p in points if p.verdict == "uncertain" and _number(p.ratio) > TIE]


def _number(cell: str) -> float:
    """A table's ratio cell as a number; 0 where it holds none (``—``, empty)."""
    try:
        return float(cell)
    except ValueError:
        return 0.0


def point_rows(points: list[Point], root: Path) -> list[str]:
    """A markdown table of ``points``, by family, dtype and shape: verdict, ratios, target and the table's why column
    (an earlier table's ncu reading quoted where the row has none: :func:`carried_reading`)."""
    out = [
        "| family | shape | dtype | verdict | ratio | best kprof | µs | best peer | µs | % of copy | vs roofline | target "
        "| why |",
        "|---|---|---|---|---:|---|---:|---|---:|---:|---:|---|---|",
    ]
    for p in sorted(points, key=lambda p: (p.family, p.dtype, p.shape)):
        why = p.why
        if p.carried_ncu:  # an earlier table's reading of the same version, named, and whether of the same code
            why = why.replace(NO_NCU, carried_reading(p, root), 1)
        why = why if len(why) <= 300 else why[:297] + "..."
        out.append(
            f"| {p.family} | {p.shape} | {p.dtype} | {p.verdict} | {p.ratio} | {p.best} | {p.best_us} | {p.peer} "
            f"| {p.peer_us} | {p.pct_copy} | {p.vs_roofline} | {p.target or '—'} | {why} |"
        )
    return out


def prepared_op_lines(groups: dict[tuple[str, str], list[Point]]) -> list[str]:
    """Where the points' latest tables timed the ops API's prepared object (``triton_prepared_op``): per family and
    dtype, at how many of those points its time was within the tie band of the best version's, and the points past
    it (whether each is beyond the two cases' spread, its table's summary line says)."""
    head = (
        "The ops API's prepared objects (`triton_prepared_op`, the object's own route), where a point's latest table "
        "timed them; whether a point past the band is beyond its cases' spread, that table's summary line says:"
    )
    return _within_band_lines(groups, "prepared_op", head)


def dispatch_lines(groups: dict[tuple[str, str], list[Point]]) -> list[str]:
    """The same as :func:`prepared_op_lines` for the ops API's plain op: the family's dispatch (``triton_tuned``),
    where the points' latest tables timed it beside the other versions (``kprof grid``'s ``triton_tuned / best``)."""
    head = (
        "The ops API's plain ops (each family's dispatch, the provider `kprof.kernels.ops` runs), where a point's "
        "latest table timed them: their time over the best kprof version's (1.000 where the dispatch ran that "
        "version's code); whether a point past the band is beyond its cases' spread, that table's summary line says:"
    )
    return _within_band_lines(groups, "dispatch", head)


def _within_band_lines(groups: dict[tuple[str, str], list[Point]], field: str, head: str) -> list[str]:
    """Per family and dtype, at how many points whose ``field`` (a ratio to the best version) was timed it was within
    the tie band, and the points past it; ``head`` before them, nothing where no point was timed."""
    out = []
    for (family, dtype), ps in sorted(groups.items()):
        timed, past = timed_and_past(ps, field)
        if not timed:
            continue
        where = "; past it: " + ", ".join(f"{p.shape} ({getattr(p, field)}x)" for p in past) if past else ""
        out.append(
            f"- {family} {dtype}: within {TIE}x of the best version at "
            f"{len(timed) - len(past)} of {len(timed)} points{where}."
        )
    return ["", head, "", *out] if out else []


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="+", type=Path, help="kprof grid --markdown files, oldest first")
    ap.add_argument("--markdown", type=Path, help="write the scoreboard here too")
    ap.add_argument("--root", type=Path, default=Path("."), help="table paths are shown relative to this")
    ap.add_argument("--all-points", action="store_true", help="keep points off the families' grids too")
    ap.add_argument("--device", help="build from the tables whose title names this device (as written there)")
    ap.add_argument(
        "--include-unrecorded", action="store_true", help="with --device: keep the tables that name no device too"
    )
    args = ap.parse_args()
    selection = select_tables(args.tables, args.device, args.include_unrecorded)
    points = latest(list(selection.kept))
    families = {family for family, _, _ in points}  # the families come from the points: no table read again
    parts = point_parts(families)
    if not args.all_points:
        points = only_on_grid(points, on_grid_of(parts, families))
    text = scoreboard(points, args.root.resolve(), parts, selection)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``benchmarks/grid_scoreboard.py`` reads committed ``kprof grid`` tables: every row of a table, the latest
measurement of each point, and a measured row never replaced by a later table's ``not measured``."""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GRID = ROOT / "benchmarks" / "results" / "grid"
# swiglu's bf16 prefill part as the first H200 round's call limit cut it (8192x4096x28672 "not measured"), and the
# later call that raced that point and the four 8192x8192 ones
CUT = GRID / "h200-main-521b2f6" / "matrix-bf16" / "swiglu-prefill" / "grid-swiglu-prefill-bf16-partial.md"
LATER = GRID / "h200-prefill-bf16-8e778f5" / "swiglu" / "grid-swiglu-points-bf16.md"


@pytest.fixture
def scoreboard(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import grid_scoreboard

    return grid_scoreboard


def _summary(path: Path) -> dict[str, int]:
    """The counts a table's summary line states (``32 points: **24 win, 7 tie, 0 loss**, 0 uncertain, ...,
    1 not measured``)."""
    line = next(ln for ln in path.read_text().splitlines() if re.match(r"\d+ points:", ln))
    counts = {"points": int(line.split()[0])}
    for n, what in re.findall(r"(\d+) (win|tie|loss|uncertain|not measured)", line.replace("**", "")):
        counts[what] = int(n)
    return counts


@pytest.mark.parametrize("path", [CUT, LATER], ids=["cut", "later"])
def test_every_row_of_a_table_is_read(scoreboard, path):
    rows = scoreboard.read_table(path)
    summary = _summary(path)
    assert len(rows) == summary["points"]
    for verdict in ("win", "tie", "loss", "uncertain", "not measured"):
        assert sum(r.verdict == verdict for r in rows) == summary[verdict], verdict
    assert {r.family for r in rows} == {"swiglu"}
    assert all(re.fullmatch(r"\d+x\d+x\d+", r.shape) and r.dtype == "bf16" for r in rows)
    assert {r.verdict for r in rows} <= {"win", "tie", "loss", "uncertain", "not measured"}
    # a target the table could not judge (its why column says so) is neither met nor missed
    for r in rows:
        assert (r.met == "not judged") == r.why.startswith("target not judged"), r.shape
    measured = [r for r in rows if r.verdict != "not measured"]
    assert {r.met for r in measured if r.shape.startswith(("2048x", "8192x"))} <= {"yes", "no", "not judged"}
    assert {r.met for r in measured if r.shape.startswith("512x")} <= {""}  # no target under 2048 rows


def test_a_later_table_replaces_a_point_and_not_measured_replaces_nothing(scoreboard):
    cut = {r.shape: r for r in scoreboard.read_table(CUT)}
    later = {r.shape: r for r in scoreboard.read_table(LATER)}
    shape = "8192x4096x28672"
    assert cut[shape].verdict == "not measured" and later[shape].verdict != "not measured"
    for order in ([CUT, LATER], [LATER, CUT]):
        points = scoreboard.latest(order)
        assert points[("swiglu", shape, "bf16")] == later[shape]
    assert len(scoreboard.latest([CUT, LATER])) == len(set(cut) | set(later))


def test_a_point_two_tables_measured_comes_from_the_last_given(scoreboard):
    """rmsnorm_linear's 2048x2048x5504 bf16, raced in the first H200 round and again on another H200."""
    first = GRID / "h200-main-521b2f6" / "matrix-bf16" / "rmsnorm_linear-prefill"
    first = first / "grid-rmsnorm_linear-prefill-bf16-partial.md"
    again = GRID / "h200-prefill-bf16-8e778f5" / "line-points-47e7f69" / "grid-rmsnorm_linear-points-bf16.md"
    key = ("rmsnorm_linear", "2048x2048x5504", "bf16")
    rows = {
        path: {(r.family, r.shape, r.dtype): r for r in scoreboard.read_table(path)}[key] for path in (first, again)
    }
    assert rows[first].best_us != rows[again].best_us  # two measurements, told apart
    assert scoreboard.latest([first, again])[key] == rows[again]
    assert scoreboard.latest([again, first])[key] == rows[first]


def test_the_scoreboard_counts_every_point_once(scoreboard):
    points = scoreboard.latest([CUT, LATER])
    text = scoreboard.scoreboard(points, ROOT)
    row = next(line for line in text.splitlines() if line.startswith("| swiglu | bf16 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    total, win, tie, loss, uncertain, unmeasured = map(int, cells[2:8])
    assert total == len(points) == win + tie + loss + uncertain + unmeasured
    assert "h200-prefill-bf16-8e778f5" in cells[-1] and "h200-main-521b2f6" in cells[-1]


def test_every_target_not_judged_is_listed_with_its_tables_why(scoreboard):
    """The points on a target's line (not judged) are listed as the missed ones are, each once, with its row's why."""
    points = scoreboard.latest([CUT, LATER])
    on_line = {k: p for k, p in points.items() if p.met == "not judged"}
    assert on_line, "the tables hold points whose target was not judged"
    text = scoreboard.scoreboard(points, ROOT)
    head, _, section = text.partition("Targets not judged: ")
    assert section.startswith(f"{len(on_line)} ")
    rows = [ln for ln in section.splitlines() if ln.startswith("| swiglu |")]
    assert sorted(r.split("|")[2].strip() for r in rows) == sorted(p.shape for p in on_line.values())
    for p in on_line.values():
        row = next(r for r in rows if f"| {p.shape} |" in r)
        assert p.why[:60] in row
        assert f"| {p.shape} | {p.dtype} | {p.verdict} |" not in head.partition("Losses and missed targets")[2]


def test_every_uncertain_point_leaning_to_a_loss_is_listed_with_its_tables_why(scoreboard):
    """The uncertain points past the tie band against the fastest peer (the within-2% target not shown there) are
    listed, each once with its row's why; the uncertain points leaning to a win, and every win and tie, are not."""
    table = GRID / "h200-mid-rows-plan-7940d77" / "again-e43e892" / "grid-rmsnorm_linear-points-fp16.md"
    points = scoreboard.latest([table])
    uncertain = [p for p in points.values() if p.verdict == "uncertain"]
    leaning = [p for p in uncertain if float(p.ratio) > scoreboard.TIE]
    assert leaning and len(leaning) < len(uncertain), "the table holds uncertain points on both sides of the band"
    section = scoreboard.scoreboard(points, ROOT).partition("Uncertain, leaning to a loss: ")[2]
    assert section.startswith(f"{len(leaning)} ")
    rows = [ln for ln in section.splitlines() if ln.startswith("| rmsnorm_linear |")]
    assert sorted(r.split("|")[2].strip() for r in rows) == sorted(p.shape for p in leaning)
    for p in leaning:
        assert p.why[:60] in next(r for r in rows if f"| {p.shape} |" in r)


def test_points_raced_beside_a_grid_count_only_with_all_points(scoreboard):
    """add_rmsnorm's race of 64x131072 (a grid point) beside 128x131072 and 256x65536 (not on its grid): only the
    grid point counts unless every point is asked for (256x65536 is in its default sweep, not its grid); kasmina's
    grid has its default sweep's shapes as a part."""
    table = ROOT / "benchmarks/results/rmsnorm-cooperative/h200-in-flight-61ffca9/few-rows-2103124"
    table = table / "grid-add_rmsnorm-points-bf16-ncu.md"
    rows = {r.shape for r in scoreboard.read_table(table)}
    assert rows == {"64x131072", "128x131072", "256x65536"}
    on_grid = scoreboard.grid_points({"add_rmsnorm", "kasmina"})
    assert ("64x131072", "bf16") in on_grid["add_rmsnorm"] and ("256x65536", "bf16") not in on_grid["add_rmsnorm"]
    assert {shape for _, shape, _ in scoreboard.latest([table], on_grid)} == {"64x131072"}
    assert {shape for _, shape, _ in scoreboard.latest([table])} == rows
    assert ("48x333x100", "fp32") in on_grid["kasmina"]  # its part "default"


# rmsnorm's wide rows: ncu at dadf658, then raced again beside the copy of their own bytes without ncu
NCU_TABLE = (
    ROOT / "benchmarks/results/rmsnorm-cooperative/h200-in-flight-61ffca9/ncu-dadf658/grid-rmsnorm-points-bf16-ncu.md"
)
COPY_TABLE = GRID / "h200-copy-bytes" / "bf16-678640a" / "grid-rmsnorm-points-bf16.md"


def test_an_earlier_ncu_reading_of_the_same_version_is_quoted_and_named(scoreboard):
    key = ("rmsnorm", "2048x131072", "bf16")
    old = {(r.family, r.shape, r.dtype): r for r in scoreboard.read_table(NCU_TABLE)}[key]
    new = {(r.family, r.shape, r.dtype): r for r in scoreboard.read_table(COPY_TABLE)}[key]
    assert scoreboard.ncu_reading(old.why).startswith("ncu: triton_tuned: DRAM")
    assert not scoreboard.ncu_reading(new.why) and scoreboard.NO_NCU in new.why
    assert new.target.startswith("<= 1.05x a bare copy of the same bytes") and new.met == "no"
    point = scoreboard.latest([NCU_TABLE, COPY_TABLE])[key]
    assert point.best_us == new.best_us and point.met == new.met  # the latest row's figures and verdict
    assert (point.carried_ncu, point.carried_from) == (scoreboard.ncu_reading(old.why), old.source)
    text = scoreboard.scoreboard({key: point}, ROOT / "benchmarks" / "results")
    assert "(in `rmsnorm-cooperative/h200-in-flight-61ffca9/ncu-dadf658/" in text and scoreboard.NO_NCU not in text
    # another version was the best in the earlier table: its kernels are not this one's, nothing is carried
    other = scoreboard.with_earlier_ncu(new, dataclasses.replace(old, best="triton_looped"))
    assert other == new
    # a row with its own reading keeps it; the earlier one is not quoted
    assert scoreboard.with_earlier_ncu(old, new) == old
    assert scoreboard.latest([COPY_TABLE, NCU_TABLE])[key] == old


def test_a_carried_reading_says_whether_it_is_of_the_rows_kernel_code(scoreboard):
    """Both titles naming their kernel code: nothing added where it is the same, both named where it differs; a
    table that names none (written before ``kprof grid`` named it) leaves it open, and the scoreboard says so."""
    key = ("rmsnorm", "2048x131072", "bf16")
    old = {(r.family, r.shape, r.dtype): r for r in scoreboard.read_table(NCU_TABLE)}[key]
    new = {(r.family, r.shape, r.dtype): r for r in scoreboard.read_table(COPY_TABLE)}[key]
    assert old.code == "" and new.code == ""  # tables of before the title named it
    root = ROOT / "benchmarks" / "results"
    for old_code, new_code, said in (
        ("0a1b2c3d", "0a1b2c3d", "-ncu.md`): triton_tuned: DRAM"),
        ("0a1b2c3d", "9f8e7d6c", "-ncu.md`, kernel code 0a1b2c3d, this row's 9f8e7d6c): triton_tuned: DRAM"),
        ("", "9f8e7d6c", "-ncu.md`, whose kernel code is not named): triton_tuned: DRAM"),
    ):
        point = scoreboard.with_earlier_ncu(
            dataclasses.replace(new, code=new_code), dataclasses.replace(old, code=old_code)
        )
        assert point.carried_code == old_code
        text = scoreboard.scoreboard({key: point}, root)
        assert "ncu (in `rmsnorm-cooperative/h200-in-flight-61ffca9/ncu-dadf658/" in text and said in text, said


def test_the_title_names_the_kernel_code(scoreboard, tmp_path):
    table = tmp_path / "grid.md"
    table.write_text(COPY_TABLE.read_text().replace("\n", " · kernel code 0a1b2c3d\n", 1))
    assert {p.code for p in scoreboard.read_table(table)} == {"0a1b2c3d"}
    table.write_text(COPY_TABLE.read_text().replace("\n", " · kernel code 0a1b2c3d (r), 9f8e7d6c (s)\n", 1))
    assert {p.code for p in scoreboard.read_table(table)} == {"0a1b2c3d (r), 9f8e7d6c (s)"}


def test_the_rerender_reads_the_runs_of_a_title_with_or_without_its_device_and_kernel_code(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import grid_rerender as rerender

    assert rerender.runs_of("# kprof grid · kasmina · runs a-1, b-2") == ["a-1", "b-2"]
    assert rerender.runs_of("# kprof grid · kasmina · runs a-1, b-2 · kernel code 0a1b2c3d") == ["a-1", "b-2"]
    assert rerender.runs_of("# kprof grid · kasmina · runs a-1 · device NVIDIA H200 · kernel code 0a1b") == ["a-1"]
    assert rerender.runs_of("# kprof grid · kasmina · runs a-1, b-2 · device NVIDIA H100 80GB HBM3") == ["a-1", "b-2"]
    assert rerender.runs_of("# not a grid table") == []


PREPARED = GRID / "h200-prepared-op-8acaa92"


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_the_prepared_objects_column_is_read_and_counted_as_its_table_counts_it(scoreboard, dtype):
    """The decode grid that first timed ``triton_prepared_op``: every row's ratio is read, and the points within the
    tie band and past it are the ones its summary line counts (within, beyond and not judged together)."""
    path = PREPARED / f"grid-rmsnorm_linear-decode-{dtype}.md"
    rows = scoreboard.read_table(path)
    assert rows and all(float(r.prepared_op) > 0 for r in rows)
    line = next(ln for ln in path.read_text().splitlines() if ln.startswith("Prepared object"))
    within, timed = map(int, re.search(r"at (\d+) of (\d+) points", line).groups())
    assert timed == len(rows)
    lines = scoreboard.prepared_op_lines({("rmsnorm_linear", dtype): rows})
    assert f"within 1.02x of the best version at {within} of {timed} points" in lines[-1]
    past = [r.shape for r in rows if float(r.prepared_op) > 1.02]
    assert len(past) == timed - within and all(f"{shape} (" in lines[-1] for shape in past)
    # a table written before the column existed leaves it empty, and no line is written for it
    assert not any(r.prepared_op for r in scoreboard.read_table(CUT))
    assert scoreboard.prepared_op_lines({("swiglu", "bf16"): scoreboard.read_table(CUT)}) == []


# gelu_mul's 512-row grid points with the H200's launch classes: the dispatch past the band at two of eight
DISPATCH = GRID / "h200-gated-whole-row" / "final" / "grid" / "grid-gelu_mul-points-bf16.md"


def test_the_dispatch_column_is_read_and_counted_as_its_table_counts_it(scoreboard):
    """Every row's ``triton_tuned / best`` is read; the points within the tie band are the ones the table's dispatch
    line counts, and every point past it is named with its ratio."""
    rows = scoreboard.read_table(DISPATCH)
    assert rows and all(float(r.dispatch) >= 1.0 for r in rows)
    line = next(ln for ln in DISPATCH.read_text().splitlines() if ln.startswith("Dispatch"))
    within, timed = map(int, re.search(r"at (\d+) of (\d+) points", line).groups())
    assert timed == len(rows) and within < timed
    lines = scoreboard.dispatch_lines({("gelu_mul", "bf16"): rows})
    assert f"within 1.02x of the best version at {within} of {timed} points" in lines[-1]
    past = [r for r in rows if float(r.dispatch) > 1.02]
    assert len(past) == timed - within and all(f"{r.shape} ({r.dispatch}x)" in lines[-1] for r in past)
    # the prepared objects' column is another column: this table has none
    assert not any(r.prepared_op for r in rows) and scoreboard.prepared_op_lines({("gelu_mul", "bf16"): rows}) == []
    # another family's dispatch has its own provider name: swiglu's (``triton_tuned_pointer / best``) is read too
    assert all(float(r.dispatch) >= 1.0 for r in scoreboard.read_table(CUT) if r.verdict != "not measured")


MODELS = GRID / "h200-models" / "gpu0" / "grid-add_rmsnorm-models-bf16.md"


def test_the_points_are_counted_by_grid_part_as_their_tables_count_them(scoreboard):
    """A ``models`` table and a main-grid table of one family: each point falls to the part of the family's grid that
    holds it, and the part's row gives the verdicts and the plain op's count within the tie band that the table's own
    summary and dispatch lines state."""
    points = scoreboard.latest([CUT, MODELS])
    parts = scoreboard.point_parts({"swiglu", "add_rmsnorm"})
    assert {parts[key] for key in points if key[0] == "add_rmsnorm"} == {"models"}
    assert {parts[key] for key in points if key[0] == "swiglu"} == {"prefill"}
    rows = {line.split("|")[1].strip(): line for line in scoreboard.part_lines(points, parts) if line.startswith("| ")}
    cells = [c.strip() for c in rows["models"].strip("|").split("|")]
    summary = _summary(MODELS)
    assert int(cells[1]) == summary["points"]
    assert [int(c) for c in cells[2:6]] == [summary[v] for v in ("win", "tie", "loss", "uncertain")]
    dispatch = next(ln for ln in MODELS.read_text().splitlines() if ln.startswith("Dispatch"))
    within, timed = re.search(r"at (\d+) of (\d+) points", dispatch).groups()
    assert cells[6] == f"{within} of {timed}"
    assert scoreboard.part_lines(points, {}) == []


# the device names ``kprof grid`` writes in the title (``· device NAME``); the committed tables name none
H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"


def _planted(tmp_path: Path, source: Path, name: str, device: str | None = None, code: str = "") -> Path:
    """A copy of the committed table ``source`` whose title names ``device`` (none where None) and ``code``."""
    said = (f" · device {device}" if device else "") + (f" · kernel code {code}" if code else "")
    path = tmp_path / name
    path.write_text(source.read_text().replace("\n", f"{said}\n", 1))
    return path


def _main(scoreboard, monkeypatch, capsys, tables: list[Path], *flags: str, root: Path = ROOT) -> str:
    """What the script prints for ``tables`` and ``flags`` (its exit status 0)."""
    monkeypatch.setattr(sys, "argv", ["grid_scoreboard.py", *map(str, tables), "--root", str(root), *flags])
    assert scoreboard.main() == 0
    return capsys.readouterr().out


def _tables_cell(text: str, family: str, dtype: str) -> str:
    """The tables column of the scoreboard's row of ``family`` and ``dtype``."""
    row = next(line for line in text.splitlines() if line.startswith(f"| {family} | {dtype} |"))
    return row.strip().strip("|").split("|")[-1]


def test_the_title_names_the_device(scoreboard, tmp_path):
    """The device up to the next `` · `` (the kernel code after it still read) or the line's end; None in a title of
    before ``kprof grid`` named it."""
    coded = _planted(tmp_path, COPY_TABLE, "coded.md", H200, code="0a1b2c3d")
    assert scoreboard.table_device(coded) == H200
    assert {p.code for p in scoreboard.read_table(coded)} == {"0a1b2c3d"}
    assert scoreboard.table_device(_planted(tmp_path, COPY_TABLE, "bare.md", H100)) == H100
    assert scoreboard.table_device(COPY_TABLE) is None


def test_tables_of_two_devices_are_refused_naming_each_with_its_tables(scoreboard, monkeypatch, capsys, tmp_path):
    cut, again = _planted(tmp_path, CUT, "cut.md", H200), _planted(tmp_path, CUT, "cut-again.md", H200)
    later, bare = _planted(tmp_path, LATER, "later.md", H100), _planted(tmp_path, LATER, "bare.md")
    tables = [cut, later, bare, again]
    with pytest.raises(SystemExit) as refused:
        _main(scoreboard, monkeypatch, capsys, tables, root=tmp_path)
    message = str(refused.value.code)
    for device, theirs in ((H200, [cut, again]), (H100, [later])):
        line = next(ln for ln in message.splitlines() if ln.strip().startswith(f"{device}:"))
        assert {t for t in tables if f"`{t}`" in line} == set(theirs), device
    assert f"`{bare}`" in message and "--device NAME" in message
    assert not capsys.readouterr().out  # no scoreboard printed


def test_device_keeps_its_tables_and_lists_those_it_left_out(scoreboard, monkeypatch, capsys, tmp_path):
    cut, later = _planted(tmp_path, CUT, "cut.md", H200), _planted(tmp_path, LATER, "later.md", H100)
    bare = _planted(tmp_path, LATER, "bare.md")
    text = _main(scoreboard, monkeypatch, capsys, [cut, later, bare], "--device", H200, "--all-points", root=tmp_path)
    assert text.splitlines()[0].startswith(f"Device: {H200}")
    left_out = [line for line in text.splitlines() if line.startswith("- `")]
    assert left_out[0].startswith(f"- `later.md`: device {H100}")
    assert left_out[1].startswith("- `bare.md`: ") and "--include-unrecorded" in left_out[1]
    assert len(left_out) == 2 and f"Left out by `--device {H200}`: 2 tables" in text
    assert _tables_cell(text, "swiglu", "bf16").strip() == "`cut.md`"
    # the rows are the H200 table's alone: its points, its unmeasured one not replaced by the H100's measurement
    row = next(line for line in text.splitlines() if line.startswith("| swiglu | bf16 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert int(cells[2]) == _summary(CUT)["points"] and int(cells[7]) == _summary(CUT)["not measured"]
    # a device no table names is refused, naming those they do
    monkeypatch.setattr(sys, "argv", ["grid_scoreboard.py", str(cut), str(later), "--device", "NVIDIA B200"])
    with pytest.raises(SystemExit) as refused:
        scoreboard.main()
    assert "NVIDIA B200" in str(refused.value.code) and f"{H200}: `{cut}`" in str(refused.value.code)


def test_tables_that_name_no_device_are_kept_with_device_only_on_asking(scoreboard, monkeypatch, capsys, tmp_path):
    bare, later = _planted(tmp_path, CUT, "bare.md"), _planted(tmp_path, LATER, "later.md", H200)

    def run(*flags: str) -> str:
        return _main(scoreboard, monkeypatch, capsys, [bare, later], *flags, "--all-points", root=tmp_path)

    alone = run("--device", H200)
    assert _tables_cell(alone, "swiglu", "bf16").strip() == "`later.md`" and "- `bare.md`: " in alone
    assert "unchecked" not in alone.splitlines()[0]
    for kept in (run("--device", H200, "--include-unrecorded"), run()):  # asked for, or no device asked for
        cell = _tables_cell(kept, "swiglu", "bf16")
        assert "`bare.md`" in cell and "`later.md`" in cell
        header = kept.splitlines()[0]
        assert header.startswith(f"Device: {H200}, named by 1 of the 2 tables") and header.endswith("unchecked.")
        assert "no device is named in 1 table" in header and "Left out" not in kept
    # a table given twice (two globs matching it) is one table in the header
    twice = _main(scoreboard, monkeypatch, capsys, [bare, later, bare], "--all-points", root=tmp_path)
    assert twice.splitlines()[0].startswith(f"Device: {H200}, named by 1 of the 2 tables")
    assert "no device is named in 1 table " in twice.splitlines()[0]


def test_tables_that_name_no_device_make_the_scoreboard_of_before_said_unchecked(scoreboard, monkeypatch, capsys):
    """The committed tables (none names its device): the same scoreboard as before, under a header that says no
    device is recorded and that the rows are taken to be of one machine, unchecked."""
    text = _main(scoreboard, monkeypatch, capsys, [CUT, LATER])
    points = scoreboard.latest([CUT, LATER])
    parts = scoreboard.point_parts({"swiglu"})
    before = scoreboard.scoreboard(
        scoreboard.only_on_grid(points, scoreboard.on_grid_of(parts, {"swiglu"})), ROOT, parts
    )
    header, rest = text.split("\n\n", 1)
    assert header.startswith("Device: not recorded") and "2 tables" in header and header.endswith("unchecked.")
    assert rest == before + "\n"


def test_a_later_table_of_the_device_replaces_and_one_of_another_does_not(scoreboard, tmp_path):
    """rmsnorm_linear's 2048x2048x5504 bf16, measured in two tables: the later one's row replaces the earlier's
    where both name one device, and not where it names another that ``--device`` leaves out."""
    first = GRID / "h200-main-521b2f6" / "matrix-bf16" / "rmsnorm_linear-prefill"
    first = first / "grid-rmsnorm_linear-prefill-bf16-partial.md"
    again = GRID / "h200-prefill-bf16-8e778f5" / "line-points-47e7f69" / "grid-rmsnorm_linear-points-bf16.md"
    key = ("rmsnorm_linear", "2048x2048x5504", "bf16")
    first, other = _planted(tmp_path, first, "first.md", H200), _planted(tmp_path, again, "other.md", H100)
    again = _planted(tmp_path, again, "again.md", H200)
    row = {path: {(r.family, r.shape, r.dtype): r for r in scoreboard.read_table(path)}[key] for path in (first, again)}
    assert row[first].best_us != row[again].best_us  # two measurements, told apart

    def latest(tables: list[Path], device: str | None = None) -> scoreboard.Point:
        return scoreboard.latest(list(scoreboard.select_tables(tables, device).kept))[key]

    assert latest([first, again]) == row[again]
    assert latest([first, other], H200) == row[first]
    assert latest([first, other, again], H200) == row[again]
    assert latest([again, other, first], H200) == row[first]

"""ncu parser on real H100 output: banner lines, units row, thousands separators, NVTX case column."""

from __future__ import annotations

import csv
import json

import pytest

from kprof.errors import TraceFormatError
from kprof.profilers import ncu, parse_trace
from tests.conftest import DATA


def raw_rows(path):
    lines = path.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    return lines[:start], rows[0], rows[1], rows[2:]


def test_banner_units_and_rows(data_file):
    path = data_file("ncu_rmsnorm_raw.csv")
    banner, header, units, body = raw_rows(path)
    assert any(b.startswith("==PROF==") for b in banner)  # real ncu output starts with tool lines
    t = ncu.parse(path)
    assert len(t) == len(body)
    dur = [float(r[header.index("gpu__time_duration.sum")].replace(",", "")) for r in body]
    assert units[header.index("gpu__time_duration.sum")] == "ns"
    assert t["duration_ns"].tolist() == [round(d) for d in dur]
    reads = [float(r[header.index("dram__bytes_read.sum")].replace(",", "")) for r in body]
    assert t["dram_read_bytes"].tolist() == [round(x) for x in reads]
    assert t["start_ns"].isna().all()  # ncu serialises kernels and gives no timestamps


def test_default_units_convert_to_the_same_values(data_file):
    base = ncu.parse(data_file("ncu_rmsnorm_raw.csv"))
    scaled = ncu.parse(data_file("ncu_rmsnorm_import_default_units.csv"))
    _, header, units, _ = raw_rows(data_file("ncu_rmsnorm_import_default_units.csv"))
    assert {"Kbyte", "Mbyte", "us"} <= set(units)  # it really used prefixed units
    # two profiling runs of the same replay: same kernels, the same launch configuration and resources
    assert base["kernel"].tolist() == scaled["kernel"].tolist()
    for col in ("registers_per_thread", "shared_mem_bytes", "grid_x", "block_x", "occupancy_theoretical_pct"):
        assert base[col].tolist() == scaled[col].tolist(), col
    # byte counts in Kbyte/Mbyte come back as bytes: same magnitude as the base-unit run
    ratio = scaled["dram_read_bytes"].astype(float) / base["dram_read_bytes"].astype(float)
    assert ratio.between(0.8, 1.25).all()


def test_cases_limiters_and_occupancy(data_file):
    spec = json.loads((DATA / "replay_spec_rmsnorm_4cases.json").read_text())
    t = ncu.parse(data_file("ncu_rmsnorm_raw.csv"))
    assert t["case"].notna().all()  # --nvtx-include: only kernels inside kprof ranges were profiled
    assert set(t["case"]) == {c["id"] for c in spec["cases"]}
    assert (t.groupby("case").size() % spec["repeats"] == 0).all()
    _, header, _, body = raw_rows(data_file("ncu_rmsnorm_raw.csv"))
    lim_cols = [c for c in header if c.startswith("launch__occupancy_limit_")]
    for row, limiter in zip(body, t["occupancy_limiter"]):
        values = {c: float(row[header.index(c)]) for c in lim_cols}
        assert values[[c for c in lim_cols if ncu._LIMITERS.get(c) == limiter][0]] == min(values.values())
    assert t["occupancy_achieved_pct"].between(0, 100).all()
    assert (t["occupancy_achieved_pct"] <= t["occupancy_theoretical_pct"] + 1).all()


def test_sniffed_and_malformed(data_file, tmp_path):
    assert (parse_trace(data_file("ncu_rmsnorm_raw.csv"))["source"] == "ncu").all()
    good = data_file("ncu_rmsnorm_raw.csv").read_text().splitlines()
    start = next(i for i, ln in enumerate(good) if ln.startswith('"ID"'))
    truncated = tmp_path / "truncated.csv"
    truncated.write_text("\n".join(good[: start + 4]) + "\n" + good[start + 4][:200])
    with pytest.raises(TraceFormatError, match="truncated"):
        ncu.parse(truncated)
    no_time = tmp_path / "no_time.csv"
    no_time.write_text('"ID","Kernel Name","dram__bytes_read.sum"\n"","","byte"\n"0","k","1"\n')
    with pytest.raises(TraceFormatError, match="gpu__time_duration.sum"):
        ncu.parse(no_time)
    banner_only = tmp_path / "banner.csv"
    banner_only.write_text("==PROF== Connected to process 1\n==ERROR== no kernels were profiled\n")
    with pytest.raises(TraceFormatError, match="no ncu CSV header"):
        ncu.parse(banner_only)


def test_command_has_the_metric_list_and_range_filter(tmp_path):
    argv = ncu.profile_command("/x/ncu", ["python", "-m", "kprof.replay", "s.json"], tmp_path / "o.csv")
    assert argv[argv.index("--metrics") + 1].split(",") == list(ncu.METRICS)
    assert argv[argv.index("--clock-control") + 1] == "none"
    assert argv[argv.index("--nvtx-include") + 1] == "regex:kprof::.*/"
    assert argv[argv.index("--page") + 1] == "raw" and argv[-1] == "s.json"


@pytest.mark.parametrize(
    "text,unit,value",
    [
        ("1,678,297.60", "Kbyte", 1678297600.0),
        ("4,032", "ns", 4032.0),
        ("2.5", "usecond", 2500.0),
        ("12", "byte/block", 12.0),
        ("n/a", "byte", None),
        ("75", "%", 75.0),
    ],
)
def test_number_parsing(text, unit, value):
    got = ncu._number(text, unit)
    assert got == value if value is None else got == pytest.approx(value)


def test_tensor_pipe_and_sm_cycles_are_kept_as_counters(data_file):
    """A full-set capture of a compute-bound kernel: each launch's tensor-pipe share and SM cycles (ncu.COUNTERS)
    land in the launch table's ``counters`` JSON, the values the CSV holds."""
    path = data_file("ncu_tma_product_full_set.csv")
    rows = list(csv.reader(path.read_text().splitlines()))
    header, body = rows[0], [r for r in rows[1:] if r and r[0]]  # the units row has no ID
    t = ncu.parse(path)
    assert len(t) == len(body) == 2
    for (_, launch), row in zip(t.iterrows(), body):
        counters = json.loads(launch["counters"])
        assert set(counters) == set(ncu.COUNTERS.values())
        for metric, name in ncu.COUNTERS.items():
            assert counters[name] == pytest.approx(float(row[header.index(metric)].replace(",", "")))
    assert ncu.parse(data_file("ncu_rmsnorm_raw.csv"))["counters"].isna().all()  # captured without them

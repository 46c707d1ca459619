"""Damage that used to parse into plausible but wrong rows: a CSV cut inside a quoted name, a Proton kernel node
without its time. Every input is derived from a real capture in tests/data; expectations come from the files."""

from __future__ import annotations

import csv
import gzip
import json

import pytest

from kprof.errors import TraceFormatError
from kprof.profilers import parse_trace, proton
from tests.conftest import DATA

LEGACY = DATA / "rocprof" / "rocprof_legacy"


def cut_inside_last_quoted_field(text: str) -> str:
    """The text up to the middle of the last quoted field: what a copy of a file still being written holds."""
    end = text.rstrip("\n").rfind('"')
    start = text.rfind('"', 0, end)
    assert start < end - 4, "the last row must end in a quoted field"
    return text[: (start + end) // 2]


@pytest.mark.parametrize(
    "name",
    ["nsys_rmsnorm_cuda_gpu_trace.csv", "nsys_rmsnorm_cuda_kern_exec_trace.csv", "nsys_rmsnorm_cuda_gpu_kern_sum.csv"],
)
def test_nsys_stats_cut_inside_the_last_kernel_name_is_an_error(name, tmp_path, data_file):
    """The name is the last column: the csv module silently ends an unterminated quoted field at the end of the
    file, so the cut row became a kernel with half a name (a kernel that never ran)."""
    text = data_file(name).read_text()
    whole = list(csv.reader(text.splitlines()))
    cut = tmp_path / "cut" / name  # not where data_file unpacks the whole file
    cut.parent.mkdir()
    cut.write_text(cut_inside_last_quoted_field(text))
    assert parse_trace(data_file(name))["kernel"].isin([whole[-1][-1]]).any()
    with pytest.raises(TraceFormatError, match=r"cut short|truncated") as err:
        parse_trace(cut)
    assert str(cut) in str(err.value)


def test_gzipped_rocprof_stats_cut_inside_a_name_is_an_error(tmp_path):
    path = LEGACY / "HPCTrainingExamples_finite-difference_results.stats.csv"
    text = path.read_text()
    # cut inside the first field (the quoted name) of the last row
    last = text.rstrip("\n").rfind("\n")
    cut = tmp_path / "results.stats.csv.gz"
    cut.write_bytes(gzip.compress(text[: last + 12].encode()))
    with pytest.raises(TraceFormatError, match=r"cut short|truncated"):
        parse_trace(cut)


def test_files_without_a_final_newline_still_parse(tmp_path):
    """rocprofv3 writes its stats without a trailing newline (the real hip_api_stats fixture): not a cut."""
    path = LEGACY / "HPCTrainingExamples_finite-difference_results.stats.csv"
    plain = tmp_path / "results.stats.csv"
    plain.write_text(path.read_text().rstrip("\n"))
    assert len(parse_trace(plain)) == len(path.read_text().strip().splitlines()) - 1


def test_proton_kernel_node_without_its_time_is_an_error(tmp_path, data_file):
    """A kernel node (count, device_id) without 'time (ns)' used to become a kernel of 0 ns."""
    tree = json.loads(data_file("proton_rmsnorm_tree.hatchet").read_text())
    kernel = next(c for c in tree[0]["children"] if "device_id" in c.get("metrics", {}))
    del kernel["metrics"]["time (ns)"]
    bad = tmp_path / "cut.hatchet"
    bad.write_text(json.dumps(tree))
    with pytest.raises(TraceFormatError, match="time"):
        proton.parse(bad)

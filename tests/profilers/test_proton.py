"""Proton parsers on real H100 output: the hatchet tree and the Chrome trace of the same replay."""

from __future__ import annotations

import json

import pytest

from kprof.errors import TraceFormatError
from kprof.profilers import parse_trace, proton
from tests.conftest import DATA


def test_hatchet_and_trace_agree(data_file):
    spec = json.loads((DATA / "replay_spec_rmsnorm_4cases.json").read_text())
    tree = proton.parse(data_file("proton_rmsnorm_tree.hatchet"))
    trace = proton.parse(data_file("proton_rmsnorm_trace.chrome_trace"))
    ids = {c["id"] for c in spec["cases"]}
    assert set(tree["case"].dropna()) == ids == set(trace["case"].dropna())
    # launches per case: summed counts of the tree == traced rows; a multiple of the repeats
    per_tree = tree[tree["case"].notna()].groupby("case")["count"].sum()
    per_trace = trace[trace["case"].notna()].groupby("case").size()
    assert per_tree.to_dict() == per_trace.to_dict()
    assert (per_trace % spec["repeats"] == 0).all()
    assert tree["start_ns"].isna().all() and trace["start_ns"].notna().all()
    assert (trace["end_ns"] - trace["start_ns"] == trace["duration_ns"]).all()


def test_hatchet_counts_match_the_raw_tree(data_file):
    raw = json.loads(data_file("proton_rmsnorm_tree.hatchet").read_text())
    kernels = []

    def walk(n):
        if "device_id" in n.get("metrics", {}):
            kernels.append(n["metrics"])
        for c in n.get("children", []):
            walk(c)

    walk(raw[0])
    t = proton.parse(data_file("proton_rmsnorm_tree.hatchet"))
    assert int(t["count"].sum()) == sum(k["count"] for k in kernels)
    assert abs((t["duration_ns"] * t["count"]).sum() - sum(k["time (ns)"] for k in kernels)) <= len(kernels)


def test_sniffed_and_refused(data_file, tmp_path):
    assert (parse_trace(data_file("proton_rmsnorm_tree.hatchet"))["source"] == "proton").all()
    assert (parse_trace(data_file("proton_rmsnorm_trace.chrome_trace"))["source"] == "proton").all()
    bad = tmp_path / "x.hatchet"
    bad.write_text(json.dumps({"not": "a tree"}))
    with pytest.raises(TraceFormatError, match="hatchet"):
        proton.parse(bad)
    cut = tmp_path / "cut.hatchet"
    cut.write_text(data_file("proton_rmsnorm_tree.hatchet").read_text()[:500])
    with pytest.raises(TraceFormatError, match="not valid JSON"):
        proton.parse(cut)

"""kprof sweep: parameter parsing and the cartesian product, pinned providers, skip-with-reason, the guide
on stored H100 sweeps, and the CLI end to end under the interpreter."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from kprof.errors import KprofError
from kprof.guide import configs_table, guide_table, render_markdown, sweep_grid, swept_params
from kprof.kernels import discover
from kprof.registry import config_name, split_config_name
from kprof.sweep import expand, parse_params, sweep_providers
from tests.conftest import HAS_CUDA


def test_params_parse_lists_and_power_of_two_ranges():
    assert parse_params(["BLOCK_N=1024..8192", "num_warps=4, 8,4"]) == {
        "BLOCK_N": [1024, 2048, 4096, 8192],
        "num_warps": [4, 8],
    }
    for bad in ["BLOCK_N", "BLOCK_N=", "BLOCK_N=big", "BLOCK_N=1000..4000", "=4"]:
        with pytest.raises(KprofError):
            parse_params([bad])
    with pytest.raises(KprofError, match="twice"):
        parse_params(["num_warps=4", "num_warps=8"])


def test_product_is_complete_and_ordered_first_parameter_slowest():
    combos = expand({"A": [1, 2], "B": [3, 4, 5]})
    assert len(combos) == 6 and len({json.dumps(c) for c in combos}) == 6
    assert [c["A"] for c in combos] == [1, 1, 1, 2, 2, 2]
    with pytest.raises(KprofError, match="at most"):
        expand({"A": list(range(30)), "B": list(range(30))})


def test_config_names_round_trip():
    name = config_name("triton_one_row", {"BLOCK_N": 4096, "num_warps": 8})
    assert name == "triton_one_row[BLOCK_N=4096,num_warps=8]"
    assert split_config_name(name) == ("triton_one_row", {"BLOCK_N": 4096, "num_warps": 8})
    assert split_config_name("torch_eager") == ("torch_eager", None)
    with pytest.raises(KprofError, match="NAME=INTEGER"):
        split_config_name("triton_one_row[BLOCK_N=big]")


def test_sweep_providers_check_the_version_and_its_parameters():
    fam = discover()["rmsnorm"]
    names = sweep_providers(fam, "triton_one_row", {"BLOCK_N": [1024, 2048], "num_warps": [4]})
    assert names == [
        "triton_one_row[BLOCK_N=1024,num_warps=4]",
        "triton_one_row[BLOCK_N=2048,num_warps=4]",
        "triton_one_row",
    ]
    with pytest.raises(KprofError, match="takes no meta-parameters.*triton_one_row"):
        sweep_providers(fam, "torch_eager", {"BLOCK_N": [1024]})
    with pytest.raises(KprofError, match="no meta-parameter BLOCK_SIZE.*BLOCK_N"):
        sweep_providers(fam, "triton_one_row", {"BLOCK_SIZE": [1024]})
    with pytest.raises(KprofError, match="at least one --param"):
        sweep_providers(fam, "triton_one_row", {})
    # every pinned name resolves back to a provider of the family, as the replay child of a profiler needs
    assert fam.get_provider(names[0]).config == (("BLOCK_N", 1024), ("num_warps", 4))


def test_tunable_versions_declare_what_each_parameter_means():
    fams = discover()
    tunable = {(f, p.name) for f, fam in fams.items() for p in fam.providers.values() if p.params}
    assert {("rmsnorm", "triton_one_row"), ("rmsnorm", "triton_looped"), ("swiglu", "triton_tiled")} <= tunable
    for fam, name in tunable:
        p = fams[fam].providers[name]
        assert all(meaning for _, meaning in p.params) and p.kind == "triton"


def _stored(data_file, name: str) -> pd.DataFrame:
    return pd.read_csv(data_file(name))


def test_guide_on_the_stored_rmsnorm_sweep(data_file):
    m = _stored(data_file, "sweep_rmsnorm_one_row_h100.csv")
    g = guide_table(m)
    assert list(g["shape"]) == list(dict.fromkeys(m["shape"]))
    for row in g.to_dict("records"):
        cases = m[(m["shape"] == row["shape"]) & m["params"].notna()]
        ok = cases[cases["status"] == "ok"].sort_values("gpu_time_us")
        assert row["best_us"] == pytest.approx(ok["gpu_time_us"].iloc[0])
        best_params = json.loads(ok["params"].iloc[0])
        assert row["best"] == " ".join(f"{k}={v}" for k, v in best_params.items())
        assert row["runner_up_slower_pct"] == pytest.approx(
            100 * (ok["gpu_time_us"].iloc[1] / ok["gpu_time_us"].iloc[0] - 1)
        )
        default = m[(m["shape"] == row["shape"]) & (m["provider"] == "triton_one_row")].iloc[0]
        assert row["default"] == default["config"]
        assert row["default_slower_pct"] == pytest.approx(
            100 * (default["gpu_time_us"] / ok["gpu_time_us"].iloc[0] - 1)
        )
        # BLOCK_N below the row width cannot hold the row: skipped, never failed
        n = int(row["shape"].split("x")[1])
        small = [p for p in cases["params"] if json.loads(p)["BLOCK_N"] < n]
        assert row["skipped"] == len(small) and row["failed"] == 0
    md = render_markdown(
        g,
        {"id": "r", "family": "rmsnorm", "config": {"sweep": {"version": "triton_one_row", "params": swept_params(m)}}},
        configs_table(m),
    )
    assert "| 16384x4096 | bf16 | **" in md and "Why the winners win" in md


def test_guide_on_the_stored_swiglu_sweep_explains_skips(data_file):
    m = _stored(data_file, "sweep_swiglu_tiled_h100.csv")
    g = guide_table(m).iloc[0]
    skipped = m[m["status"] == "skipped"]
    assert g["skipped"] == len(skipped) > 0
    assert skipped["note"].str.contains("shared memory").all()
    assert g["bound"] == "compute" and 0 < g["best_pct_roof"] <= 100
    grid = sweep_grid(m, "2048x2048x5504", "bf16", "BLOCK_N", "num_stages")
    # one cell per (BLOCK_N, num_stages) pair, each the fastest config sharing that pair
    assert len(grid) == 3 * 4
    for cell in grid[grid["status"] == "ok"].to_dict("records"):
        same = m[
            m["params"].fillna("").str.contains(f'"BLOCK_N": {cell["BLOCK_N"]},')
            & m["params"].fillna("").str.contains(f'"num_stages": {cell["num_stages"]}')
            & (m["status"] == "ok")
        ]
        assert cell["gpu_time_us"] == pytest.approx(same["gpu_time_us"].min())


def test_guide_refuses_a_run_that_is_not_a_sweep(data_file):
    m = _stored(data_file, "sweep_rmsnorm_one_row_h100.csv")
    with pytest.raises(KprofError, match="not a sweep"):
        guide_table(m.assign(params=pd.NA))


@pytest.mark.skipif(HAS_CUDA, reason="the CPU path: interpreter correctness and offline sm_90 resources")
def test_cli_sweep_on_the_cpu_end_to_end(tmp_path):
    from typer.testing import CliRunner

    from kprof.cli import app
    from kprof.store import RunStore

    store = tmp_path / "k.db"
    guide_md = tmp_path / "guide.md"
    res = CliRunner().invoke(
        app,
        [
            "sweep",
            "rmsnorm",
            "--version",
            "triton_one_row",
            "--param",
            "BLOCK_N=512,2048",
            "--param",
            "num_warps=2,8",
            "--shapes",
            "3x1000",
            "--dtypes",
            "fp16",
            "--store",
            str(store),
            "--guide",
            str(guide_md),
        ],
    )
    assert res.exit_code == 0, res.output
    st = RunStore(store)
    run = st.run("latest")
    assert run["mode"] == "interpreter" and run["config"]["sweep"]["params"] == {
        "BLOCK_N": [512, 2048],
        "num_warps": [2, 8],
    }
    m = st.metrics(run["id"]).set_index("provider")
    assert (
        m.loc[["triton_one_row[BLOCK_N=512,num_warps=2]", "triton_one_row[BLOCK_N=512,num_warps=8]"], "status"]
        == "skipped"
    ).all()
    ran = m.loc[["triton_one_row[BLOCK_N=2048,num_warps=2]", "triton_one_row[BLOCK_N=2048,num_warps=8]"]]
    assert (ran["status"] == "ok").all()
    assert list(ran["config"]) == ["BLOCK_N=2048 num_warps=2 num_stages=3", "BLOCK_N=2048 num_warps=8 num_stages=3"]
    # compiled for sm_90 offline: fewer warps for the same block, more registers per thread
    assert (ran["resources_from"] == "ptxas sm_90 (offline)").all()
    assert ran["registers_per_thread"].iloc[0] > ran["registers_per_thread"].iloc[1] > 0
    assert ran["occupancy_theoretical_pct"].notna().all()
    assert "CPU interpreter run" in guide_md.read_text()


def _tunable():
    fams = discover()
    return [(f, p.name) for f, fam in fams.items() for p in fam.providers.values() if p.params]


@pytest.mark.parametrize("family, version", _tunable())
def test_every_tunable_version_pinned_to_its_own_choice_gives_the_same_answer(family, version):
    """Run the version as it chooses, read the specialisation it launched, pin exactly that: same
    specialisation recorded, same output bits; and a pinned config differing in num_warps still matches
    the float64 oracle."""
    import torch

    from kprof.harness import case_seed
    from kprof.registry import Case
    from kprof.specialization import recording

    fam = discover()[family]
    p = fam.providers[version]
    shape = fam.sweep("interpreter").shapes[0]
    inputs = fam.make_inputs(
        shape, "fp32", "cuda" if HAS_CUDA else "cpu", case_seed(5, Case(family, version, shape, "fp32"))
    )
    with recording() as rec:
        free = p.fn(**inputs)
    spec = rec.launches[-1]
    chosen = {k: v for k, v in spec.config.items() if k in p.param_names}
    assert set(chosen) == set(p.param_names), (chosen, p.param_names)
    with recording() as rec2:
        pinned = fam.get_provider(config_name(version, chosen)).fn(**inputs)
    assert rec2.launches[-1].config == spec.config
    for a, b in zip(free if isinstance(free, tuple) else (free,), pinned if isinstance(pinned, tuple) else (pinned,)):
        assert torch.equal(a, b)
    other = {**chosen, "num_warps": 2 if chosen["num_warps"] != 2 else 4}
    out = fam.get_provider(config_name(version, other)).fn(**inputs)
    refs = fam.oracle(**inputs)
    for o, r in zip(out if isinstance(out, tuple) else (out,), refs if isinstance(refs, tuple) else (refs,)):
        assert float((o.double() - r).norm() / r.norm()) < fam.tolerances["fp32"]


def test_a_cut_sweep_says_which_best_configs_are_of_part_of_the_sweep(data_file):
    """A sweep cut at its budget stored some buckets whole, one in part, the rest not at all: the guide counts each
    bucket's planned cases not run, lists the buckets never reached, and says its best is of those measured."""
    from kprof.store import RunPlan

    m = _stored(data_file, "sweep_rmsnorm_one_row_h100.csv")
    rng = np.random.default_rng()
    first, second, *rest = list(dict.fromkeys(m["shape"]))
    plan = RunPlan(tuple(dict.fromkeys(m["provider"])), tuple((s, "bf16") for s in dict.fromkeys(m["shape"])))
    part = m[m["shape"] == second]
    kept = part.sample(n=int(rng.integers(2, len(part))), random_state=int(rng.integers(1 << 30)))
    cut = pd.concat([m[m["shape"] == first], kept])
    g = guide_table(cut, plan).set_index("shape")
    assert g.loc[first, "not_run"] == 0 and g.loc[second, "not_run"] == len(part) - len(kept)
    for shape in rest:
        assert g.loc[shape, "configs"] == 0 and g.loc[shape, "not_run"] == len(plan.providers)
    run = {"id": "r", "family": "rmsnorm", "config": {"sweep": {"version": "triton_one_row", "params": {}}}}
    md = render_markdown(g.reset_index(), run, configs_table(cut))
    missing = len(part) - len(kept) + len(rest) * len(plan.providers)
    assert f"The run ended before {missing} planned case(s) ran" in md
    assert f"; {len(part) - len(kept)} not run |" in md
    whole = render_markdown(guide_table(m, plan), run, configs_table(m))
    assert "ended before" not in whole and "not run" not in whole

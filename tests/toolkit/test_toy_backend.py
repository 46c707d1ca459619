"""A new profiler is one module: a toy backend, written to a folder added to ``kprof.profilers``' path,
drives a fake tool (which runs the replay child and writes a known trace) through a whole profiler pass,
with no other file of kprof edited."""

from __future__ import annotations

import json
import stat
import sys
import textwrap

import pytest

import kprof.profilers
from tests.conftest import DEVICE

TOY_MODULE = '''
"""toyprof: a profiler whose trace is 'TOYPROF 1' then one 'case,kernel,start_ns,end_ns' line per launch."""
import pandas as pd

from kprof import launch_table
from kprof.profilers import Backend
from kprof.tools import ToolSpec

TOOL = ToolSpec("toyprof", "toyprof", "KPROF_TOYPROF", (), hint="set KPROF_TOYPROF")


def sniff(src):
    return src.head(16).startswith("TOYPROF 1")


def parse(src, opts):
    rows = []
    for line in src.text.split("\\n")[1:]:
        if line.strip():
            case, kernel, start, end = line.split(",")
            rows.append({"case": case, "kernel": kernel, "kind": "kernel", "count": 1, "start_ns": int(start),
                         "end_ns": int(end), "duration_ns": int(end) - int(start), "source": "toyprof"})
    return launch_table.validate(pd.DataFrame(rows), source="toyprof") if rows else launch_table.empty()


def capture(ctx):
    out = ctx.workdir / "toy.trace"
    ctx.expect(ctx.step([ctx.tool.path, str(out), *ctx.child], "toyprof"), out, "toyprof wrote no trace")


BACKEND = Backend(name="toyprof", description="a toy profiler", sniff=sniff, parse=parse, marker="none",
                  tools=(TOOL,), default_repeats=2, capture=capture)
'''

# the fake tool: runs the replay child, then writes launches of a known duration for every case it ran
FAKE_TOOL = """#!{python}
import json, subprocess, sys
if sys.argv[1] == "--version":
    print("toyprof 0.1 (fake)")
    sys.exit(0)
out, child = sys.argv[1], sys.argv[2:]
rc = subprocess.call(child)
spec = json.load(open(child[-1]))
lines = ["TOYPROF 1"]
t = 1000
for case in spec["cases"]:
    for _ in range(spec["repeats"]):
        lines.append(f"{{case['id']}},toy_kernel,{{t}},{{t + 2500}}")
        t += 10000
open(out, "w").write("\\n".join(lines) + "\\n")
sys.exit(rc)
"""


@pytest.fixture
def toyprof(tmp_path, monkeypatch):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "toyprof.py").write_text(textwrap.dedent(TOY_MODULE))
    # discovered like a family folder: the package's path grows by one folder; registry restored after
    monkeypatch.setattr(kprof.profilers, "__path__", [*kprof.profilers.__path__, str(plugins)])
    monkeypatch.setattr(kprof.profilers, "_BACKENDS", dict(kprof.profilers._BACKENDS))
    monkeypatch.setattr(kprof.profilers, "_discovered_paths", ())
    monkeypatch.delitem(sys.modules, "kprof.profilers.toyprof", raising=False)
    exe = tmp_path / "bin" / "toyprof"
    exe.parent.mkdir()
    exe.write_text(FAKE_TOOL.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("KPROF_TOYPROF", str(exe))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    yield exe
    sys.modules.pop("kprof.profilers.toyprof", None)


def test_a_toy_backend_runs_a_profile_through_the_runner(toyprof, tmp_path):
    from kprof import external, runner
    from kprof.harness import BenchSettings, run_case
    from kprof.kernels import discover
    from kprof.profilers import backends, parse_trace
    from kprof.registry import Case
    from kprof.store import RunStore
    from tests.toolkit.run_contexts import context_for
    from tests.toolkit.test_store import record

    assert "toyprof" in backends() and "toyprof" in external.all_profilers()
    choice = external.choose("toyprof", "gpu")
    assert choice.tool is not None and choice.tool.path == str(toyprof) and choice.tool.how == "$KPROF_TOYPROF"

    fam = discover()["rmsnorm"]
    cases = [Case("rmsnorm", p, (3, 37), "fp32") for p in ("torch_eager", "triton_tuned")]
    results = [
        run_case(fam, fam.providers[c.provider], c, device=DEVICE, settings=BenchSettings(seed=3), timing=False)
        for c in cases
    ]
    assert all(r.status == "ok" for r in results)
    st = RunStore(tmp_path / "s.db")
    run_id = st.begin_run(record(profiler="toyprof"))
    opts = runner.ProfileOptions(family="rmsnorm", profiler="toyprof", profiler_timeout_s=300)
    repeats = backends()["toyprof"].default_repeats
    ctx = context_for(
        st, fam, mode="gpu", profiler=choice, options=opts, settings=BenchSettings(seed=3), repeats=repeats
    )
    failure = runner._external_pass(ctx, ctx.arms[0], run_id, results)
    assert failure is None
    launches = st.launches(run_id)
    assert sorted(launches["case"].value_counts().items()) == sorted((c.id, repeats) for c in cases)
    assert (launches["duration_ns"] == 2500).all() and (launches["source"] == "toyprof").all()
    caps = st.captures(run_id)
    assert caps["tool_version"].iloc[0] == "toyprof 0.1 (fake)" and "kprof.replay" in caps["command"].iloc[0]
    trace = st.run(run_id)["trace_path"]
    assert parse_trace(trace).attrs["format"] == "toyprof"  # `kprof parse` reads it too, recognised by content
    spec = json.loads((tmp_path / "s.db").parent.joinpath(trace).parent.joinpath("replay_spec.json").read_text())
    assert spec["marker"] == "none" and spec["repeats"] == repeats

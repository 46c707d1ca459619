"""On a GPU: ``kprof sweep --workers 1`` starts its worker early (before the checks), with ``--prepare``,
hands it the run without starting another, and the run carries the ceilings that worker measured."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kprof.cli import app
from kprof.executors import LocalExecutor
from kprof.fanout import listed_gpus
from kprof.store import RunStore


@pytest.mark.gpu
def test_a_gpu_sweep_is_run_by_the_worker_it_started_early(tmp_path, monkeypatch):
    gpus = listed_gpus()
    if not gpus:
        pytest.skip("neither CUDA_VISIBLE_DEVICES nor nvidia-smi lists a GPU: nothing is started early")
    spawns: list[tuple[str, bool]] = []
    real = LocalExecutor.spawn

    def counted(self, slot, prepare=False):
        spawns.append((slot.name, prepare))
        return real(self, slot, prepare)

    monkeypatch.setattr(LocalExecutor, "spawn", counted)
    store = tmp_path / "k.db"
    args = ["sweep", "rmsnorm", "--version", "triton_one_row", "--param", "BLOCK_N=1024,2048", "--param"]
    args += ["num_warps=4", "--shapes", "37x1000", "--dtypes", "bf16", "--workers", "1", "--store", str(store)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output[-3000:]
    assert spawns == [(f"gpu{gpus[0]}", True)], spawns  # one process, started early, none after
    run = RunStore(store).run("latest")
    worker = run["config"]["fanout"]["workers"][0]
    assert run["status"] == "complete" and worker["ceiling_gbps"] > 100  # measured while the checks ran
    assert run["ceiling_gbps"] == pytest.approx(worker["ceiling_gbps"])

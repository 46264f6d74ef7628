"""Sweeps: local process pool and Ray (on a local instance)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_runs._sweep import run_one, run_sweep
from llm_runs.config import SweepConfig
from llm_runs.runlog import competence_table


def _sweep(tmp_path, micro_cfg, backend):
    base = dict(micro_cfg)
    base["steps"] = 2
    base["eval_every"] = 2
    base["rl"] = {**micro_cfg["rl"], "warmup_steps": 1}
    return SweepConfig(
        base=base,
        grid={"network.motif": ["C1", "I1"]},
        seeds=[0],
        backend=backend,
        workers=2 if backend == "local" else 1,
        out=str(tmp_path / backend),
    )


def test_local_sweep(tmp_path, micro_cfg):
    sw = _sweep(tmp_path, micro_cfg, "local")
    res = run_sweep(sw, progress=False)
    assert [r["ok"] for r in res] == [True, True], res
    df = competence_table([r["out"] for r in res])
    assert set(df.run) == {"motif=C1-s0", "motif=I1-s0"} and len(df) == 12
    log = Path(res[0]["out"]) / "competence.jsonl"
    before = log.stat().st_mtime_ns
    again = run_one(sw.configs()[0].to_dict(), res[0]["out"])  # a restarted sweep skips it
    assert again["ok"] and log.stat().st_mtime_ns == before


def test_ray_sweep_local_instance(tmp_path, micro_cfg):
    pytest.importorskip("ray")
    sw = _sweep(tmp_path, micro_cfg, "ray")
    res = run_sweep(sw, progress=False)
    assert [r["ok"] for r in res] == [True, True], res
    assert (tmp_path / "ray" / "sweep.json").exists()

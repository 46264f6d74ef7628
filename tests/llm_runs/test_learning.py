"""Proof that it learns (slow): a shortened default math run on the tiny preset.

The full default run (``python -m llm_runs train --task math --motif C1 --out runs/c1``)
is measured in the README; this checks a shorter version end to end, base pretraining
included (in a temp cache).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from llm_runs._train import train
from llm_runs.config import TrainConfig
from llm_runs.runlog import read_run


@pytest.mark.slow
def test_math_learns_short(tmp_path):
    cfg = TrainConfig.from_dict(
        {
            "model": {"preset": "tiny", "base_cache": str(tmp_path / "cache")},
            "task": {"name": "math"},
            "steps": 200,
            "eval_every": 50,
        }
    )
    log = read_run(train(cfg, tmp_path / "run", progress=False))
    e2e = log.e2e_rows
    assert e2e[-1]["accuracy"] >= e2e[0]["accuracy"] + 0.10, e2e
    first = {r["agent"]: r["competence"] for r in log.agent_rows if r["step"] == 0}
    last = {r["agent"]: r["competence"] for r in log.agent_rows if r["step"] == 200}
    assert sum(last[a] > first[a] for a in first) >= 2, (first, last)

"""paper/llm_sign_check.py: C1- vs I1-wired runs, calibrate's fitted edge signs (slow).

The quick run (micro base, 12 steps) checks the pipeline end to end: training, resuming
from finished folders, fitting C1 vs I1 to each run set, the table and sign_check.json.
A micro run is too short for the signs to mean anything, so the agreement itself is
checked only on a full run set when one exists (``runs/llm_sign_check``, made by
``python paper/llm_sign_check.py``).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "paper" / "llm_sign_check.py"
FULL = ROOT / "runs" / "llm_sign_check" / "sign_check.json"


def _module():
    spec = importlib.util.spec_from_file_location("llm_sign_check", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["llm_sign_check"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_run_configs_differ_only_in_the_sign_of_y_to_z():
    from llm_runs.config import TrainConfig

    sc = _module()
    c1 = TrainConfig.from_dict(sc.run_config("C1", 0, steps=400))
    i1 = TrainConfig.from_dict(sc.run_config("I1", 0, steps=400))
    e1 = {e.key: e for e in c1.network.network_spec().edges}
    e2 = {e.key: e for e in i1.network.network_spec().edges}
    assert {k: e.sign for k, e in e1.items()} == {"X->Y": 1, "X->Z": 1, "Y->Z": 1}
    assert {k: e.sign for k, e in e2.items()} == {"X->Y": 1, "X->Z": 1, "Y->Z": -1}
    d1, d2 = c1.to_dict(), i1.to_dict()
    for d in (d1, d2):
        d["network"]["spec"]["edges"][2]["sign"] = 0
        d["network"]["spec"]["name"] = d["name"] = ""
    assert d1 == d2


@pytest.mark.slow
def test_quick_sign_check_end_to_end(tmp_path, base_cache):
    sc = _module()
    out = tmp_path / "sc"
    args = ["--quick", "--seeds", "0", "--out", str(out), "--base-cache", str(base_cache)]
    assert sc.main(args) == 0
    rows = json.loads((out / "sign_check.json").read_text())
    assert [r["set"] for r in rows] == ["C1-all", "I1-all"]
    for r in rows:
        assert r["top"] in ("C1-AND", "I1-AND")
        assert set(r["p_activating"]) == {"X->Y", "X->Z", "Y->Z"}
        assert r["se_C1_minus_I1"] >= 0
    logs = sorted(p.name for p in (out / "runs").iterdir())
    assert logs == ["C1-s0", "I1-s0"]
    mtime = (out / "runs" / "C1-s0" / "competence.jsonl").stat().st_mtime
    assert sc.main([*args, "--train-only"]) == 0  # finished folders are reused
    assert (out / "runs" / "C1-s0" / "competence.jsonl").stat().st_mtime == mtime


@pytest.mark.slow
@pytest.mark.skipif(not FULL.exists(), reason="no full run set (python paper/llm_sign_check.py)")
def test_full_run_set_signs_agree_with_wiring():
    rows = {r["set"]: r for r in json.loads(FULL.read_text())}
    # C1 logs: the C1 model (Y->Z activating) wins; I1 logs: the I1 model (Y->Z repressing)
    assert rows["C1-all"]["elpd_C1_minus_I1"] > 0
    assert rows["I1-all"]["elpd_C1_minus_I1"] < 0
    assert rows["C1-all"]["p_activating"]["Y->Z"] > 0.5
    assert rows["I1-all"]["p_activating"]["Y->Z"] < 0.5

"""paper/llm_sign_check.py: C1- vs I1-wired runs, calibrate's fitted edge signs (slow).

The quick run (micro base, 12 steps) checks the pipeline end to end: training, resuming
from finished folders, fitting C1 vs I1 to each run set, the table and sign_check.json.
A micro run is too short for the signs to mean anything, so there the table's numbers are
checked for agreement with each other; whether the sign check names the right wiring is
checked on curves simulated from a known C1 or I1 network.
"""

from __future__ import annotations

import importlib.util
import json
import math

import pytest


def _module():
    return importlib.import_module("paper.llm_sign_check")


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
        _check_row(r)
    logs = sorted(p.name for p in (out / "runs").iterdir())
    assert logs == ["C1-s0", "I1-s0"]
    mtime = (out / "runs" / "C1-s0" / "competence.jsonl").stat().st_mtime
    assert sc.main([*args, "--train-only"]) == 0  # finished folders are reused
    assert (out / "runs" / "C1-s0" / "competence.jsonl").stat().st_mtime == mtime


def _check_row(r):
    """What a sign_check.json row must say, whatever the data: its numbers agree."""
    elpd = r["elpd"]
    assert set(elpd) == {"C1-AND", "I1-AND"}
    assert r["top"] == max(elpd, key=elpd.get)
    assert r["elpd_C1_minus_I1"] == pytest.approx(elpd["C1-AND"] - elpd["I1-AND"], abs=1e-6)
    assert r["top_signs"] == {"X->Y": 1, "X->Z": 1, "Y->Z": 1 if r["top"] == "C1-AND" else -1}
    # both candidates activate X->Y and X->Z; only C1 activates Y->Z: its pseudo-BMA weight
    w_c1 = 1.0 / (1.0 + math.exp(elpd["I1-AND"] - elpd["C1-AND"]))
    assert r["p_activating"]["X->Y"] == pytest.approx(1.0)
    assert r["p_activating"]["X->Z"] == pytest.approx(1.0)
    assert r["p_activating"]["Y->Z"] == pytest.approx(w_c1, abs=1e-9)
    assert math.isfinite(r["se_C1_minus_I1"])


# An FFL whose Y->Z edge matters: X learns fast, Y slowly, Z fast once its gate opens (C1: Z
# waits for Y; I1: Y shuts Z off again). Measured: I1 data give elpd(C1 - I1) = -44.6 (se
# 10.3), C1 data +2.4 (se 2.4), the right sign of Y->Z both times.
SYNTH = {
    "rho[X]": 0.08,
    "rho[Y]": 0.015,
    "rho[Z]": 0.1,
    "delta": 0.002,
    "b[Y]": 0.05,
    "b[Z]": 0.05,
    "A0": 0.05,
    "K[X->Y]": 0.4,
    "K[X->Z]": 0.3,
    "K[Y->Z]": 0.5,
    "n": 4.0,
}


@pytest.mark.slow
@pytest.mark.parametrize("wiring", ["I1", "C1"])
def test_sign_check_recovers_the_sign_of_synthetic_runs(tmp_path, wiring):
    """Curves simulated from a known wiring: the sign check must name it."""
    import jax
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    import calibrate as cal

    sc = _module()
    data = cal.synthetic_curves(
        wiring, SYNTH, key=jax.random.key(1), steps=np.arange(0, 200, 5), runs=2, n_eval=200
    )
    table = tmp_path / f"{wiring}.csv"
    data.table.to_csv(table, index=False)
    r = sc.fit_set(
        f"{wiring}-all",
        [table],
        ["C1", "I1"],
        tmp_path / "fits",
        fit_config=None,
        log=lambda s: None,
    )
    _check_row(r)
    assert r["top"] == f"{wiring}-AND"
    d, se = r["elpd_C1_minus_I1"], r["se_C1_minus_I1"]
    if wiring == "I1":
        assert d < -2 * se and r["p_activating"]["Y->Z"] < 0.01
    else:
        assert d > 0 and r["p_activating"]["Y->Z"] > 0.5

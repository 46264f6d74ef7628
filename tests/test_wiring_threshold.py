"""The wiring read back with edge thresholds inside Y's logged range
(paper/wiring_threshold.py): its runs (set 3, seeds no earlier wiring study used, K and n on
every edge), the share of sets with two signs and its exact interval, and its --quick
pipeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm_runs.config import TrainConfig
from paper._wiring_confirm import ConfirmDesign
from paper._wiring_logged import LoggedDesign
from paper._wiring_threshold import ThresholdDesign, two_signs_shares

ROOT = Path(__file__).resolve().parents[1]


def test_new_runs_at_unused_seeds_with_the_designed_threshold(tmp_path):
    cfg = ThresholdDesign()
    jobs = cfg.jobs("wiring")
    assert len(jobs) == 16 and {j[1] for j in jobs} == {3}
    assert all(cfg.run_path(tmp_path, j).parent == tmp_path for j in jobs)
    used = set()
    for old in (LoggedDesign(), ConfirmDesign()):
        used |= {old.train_config(*j)["seed"] for js in old.sets().values() for j in js}
    new = {cfg.train_config(*j)["seed"] for j in jobs}
    assert new == {3030, 3032, 3033, 3035} and not new & used
    for j in jobs:
        spec = TrainConfig.from_dict(cfg.train_config(*j)).network.network_spec()
        assert {(e.K, e.n) for e in spec.edges} == {(0.6, 10.0)}
    # the same runs as the confirmation's otherwise
    mine, theirs = (
        cfg.train_config("I2", 3, "pulseYe"),
        ConfirmDesign().train_config("I2", 3, "pulseYe"),
    )
    assert {k: v for k, v in mine.items() if k != "network"} == {
        k: v for k, v in theirs.items() if k != "network"
    }
    assert mine["task"]["spurious"]["roles"] == ["Y"]
    assert list(cfg.sets()) == [f"{m}_set3_early" for m in ("C1", "I1", "C2", "I2")]
    assert all({"--dse-blocks", "--pulses"} <= set(cfg.args(n)) for n in cfg.sets())


def _fam(k: int, n: int) -> dict:
    return {"sets_with_two_signs": k, "n_sets": n}


def test_two_signs_share_with_its_exact_interval():
    s = {"by_family": {"early": {"logged": _fam(0, 4)}}, "pointwise": {"early": _fam(4, 4)}}
    got = two_signs_shares(s)
    b, p = got["early_blocks"], got["early_pointwise"]
    assert (b["two_signs"], b["sets"], b["share"]) == (0, 4, 0.0)
    # Clopper-Pearson at k = 0 and k = n: closed forms 1 - (a/2)^(1/n) and (a/2)^(1/n)
    assert b["ci95"][0] == 0.0 and b["ci95"][1] == pytest.approx(1 - 0.025**0.25, abs=1e-9)
    assert p["share"] == 1.0 and p["ci95"][0] == pytest.approx(0.025**0.25, abs=1e-9)
    assert p["ci95"][1] == 1.0
    assert two_signs_shares({"by_family": {"x": {"logged": _fam(0, 0)}}, "pointwise": {}}) == {}


@pytest.mark.slow
def test_quick_read_back_trains_fits_and_summarises(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out, runs = tmp_path / "out", tmp_path / "runs"
    cmd = [sys.executable, "-m", "paper.wiring_threshold", "--quick",
           "--out", str(out), "--runs", str(runs)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert sorted(s["wiring_identification"]["sets"]) == ["C2_set0_early"]
    fit = out / "wiring" / "C2_set0_early"
    configs = json.loads((fit / "fits" / "C2-AND" / "run_configs.json").read_text())
    assert {(c["network"]["K"], c["network"]["n"]) for c in configs.values()} == {(0.6, 10.0)}
    read = s["wiring_identification"]["sets"]["C2_set0_early"]
    two = s["two_signs_share"]["early_blocks"]
    assert two["sets"] == 1 and two["two_signs"] == int(len(read["identified"]) >= 2)
    assert (out / "wiring_threshold.png").is_file()


def _fake_fit(path: Path, ll: list[float], obs: list[float] | None = None) -> None:
    """A saved fit whose log-likelihood is the same in every draw (so each observation's
    PSIS-LOO elpd is exactly that value), on 2 runs x 2 agents x 1 step."""
    import arviz as az
    import numpy as np
    import pandas as pd

    path.mkdir(parents=True)
    data = pd.DataFrame({"run": ["C1_set3_w0", "C1_set3_w0", "C1_set3_w0.9", "C1_set3_w0.9"],
                         "agent": ["Y", "Z", "Y", "Z"], "step": [10] * 4,
                         "competence": [0.5, 0.25, 0.75, 1.0], "n_eval": [64] * 4})  # fmt: skip
    data.to_parquet(path / "data.parquet")
    rng = np.random.default_rng(0)
    idata = az.from_dict(
        posterior={"a": rng.normal(size=(2, 50))},
        log_likelihood={"obs": np.broadcast_to(np.array(ll), (2, 50, 4)).copy()},
        observed_data={"obs": np.array(obs if obs is not None else [32.0, 16.0, 48.0, 64.0])},
    )
    idata.to_netcdf(str(path / "posterior.nc"))


def test_misfit_by_block_sums_the_truths_pointwise_losses(tmp_path):
    import warnings

    from paper._wiring_threshold import misfit_by_block

    fits = tmp_path / "wiring" / "C1_set3_early" / "fits"
    _fake_fit(fits / "C1-AND", [-1.0, -2.0, -3.0, -4.0])
    _fake_fit(fits / "I4-AND", [-1.5, -1.0, -3.0, -2.0])
    _fake_fit(fits / "I1-AND", [-1.0, -2.0, -3.0, -5.0])
    sel = {"best": "I4-AND"}
    (tmp_path / "wiring" / "C1_set3_early" / "selection.json").write_text(json.dumps(sel))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = misfit_by_block(tmp_path, {"C1_set3_early": {"true": "C1-AND"}})["C1_set3_early"]
    first, partner = got["first"], got["partner"]
    assert first["other"] == "I4-AND" and partner["other"] == "I1-AND"
    assert first["total"] == pytest.approx(-2.5)
    assert first["by_agent"] == pytest.approx({"Y": 0.5, "Z": -3.0})
    assert first["by_run_agent"] == pytest.approx(
        {"w0/Y": 0.5, "w0/Z": -1.0, "w0.9/Y": 0.0, "w0.9/Z": -2.0}
    )
    assert partner["total"] == pytest.approx(1.0) and partner["by_agent"]["Z"] == pytest.approx(1.0)


def test_misfit_by_block_refuses_observations_out_of_line(tmp_path):
    from paper._wiring_threshold import pointwise_loo

    _fake_fit(tmp_path / "f", [-1.0] * 4, obs=[1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="do not line up"):
        pointwise_loo(tmp_path / "f")


def test_y_to_z_contrast_pairs_runs_that_differ_in_that_sign(tmp_path, monkeypatch):
    import numpy as np

    from paper import _study_runs
    from paper._wiring_threshold import y_to_z_contrast

    steps = np.array([0, 10, 20, 30])
    z_of = {"C1": [0.5, 0.5, 0.6, 0.8], "I1": [0.5, 0.7, 0.8, 0.8],
            "C2": [0.4, 0.4, 0.4, 0.5], "I2": [0.4, 0.4, 0.5, 0.6]}  # fmt: skip

    def fake(path: Path):
        motif = path.name.split("_")[0]
        y = [0.5, 0.5, 0.5, 0.9] if motif in ("C1", "I1") else [0.5, 0.5, 0.5, 0.6]
        y = [v + 0.05 for v in y] if (motif == "I2" and "pulseX" in path.name) else y
        comp = np.column_stack([[0.3, 0.6, 0.9, 0.9], y, z_of[motif]])
        return {"steps": steps, "comp": comp, "roles": ["X", "Y", "Z"]}

    monkeypatch.setattr(_study_runs, "run_curves", fake)
    got = y_to_z_contrast(ThresholdDesign(), tmp_path)
    assert sorted(got) == sorted(f"{p}/{k}" for p in ("C1-I1", "C2-I2")
                                 for k in ("w0.9", "pulseX_w0.9", "pulseYearly_w0.9"))  # fmt: skip
    c = got["C1-I1/w0.9"]
    assert c["z_mean_act_minus_rep"] == pytest.approx((2.4 - 2.8) / 4)
    assert c["z_steps_to_0.7_act_minus_rep"] == 30 - 10 and c["x_and_y_identical"]
    d = got["C2-I2/pulseX_w0.9"]  # C2's Z never reaches 0.7: the last step; I2's Y differs
    assert d["z_steps_to_0.7_act_minus_rep"] == 0 and not d["x_and_y_identical"]
    assert got["C2-I2/w0.9"]["x_and_y_identical"]
    # a pooled set of two seeds a condition: each run's set in its key, none overwritten
    from paper._wiring_replicates import ReplicatesDesign

    pooled = y_to_z_contrast(ReplicatesDesign(), tmp_path)
    assert sorted(pooled) == sorted(f"{p}/set{k}_{c}" for p in ("C1-I1", "C2-I2")
                                    for k in (8, 9) for c in ("w0.9", "pulseX_w0.9"))  # fmt: skip


def test_misfit_by_block_is_read_back_where_the_posteriors_are_not(tmp_path):
    import shutil
    import warnings

    from paper._wiring_threshold import misfit_by_block

    fits = tmp_path / "wiring" / "C1_set3_early" / "fits"
    _fake_fit(fits / "C1-AND", [-1.0, -2.0, -3.0, -4.0])
    _fake_fit(fits / "I4-AND", [-1.5, -1.0, -3.0, -2.0])
    (tmp_path / "wiring" / "C1_set3_early" / "selection.json").write_text('{"best": "I4-AND"}')
    sets = {"C1_set3_early": {"true": "C1-AND"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = misfit_by_block(tmp_path, sets)
    assert "partner" not in first["C1_set3_early"]  # I1-AND not fitted: left out
    shutil.rmtree(fits)
    assert misfit_by_block(tmp_path, sets) == first
    (tmp_path / "wiring" / "C1_set3_early" / "misfit_by_block.json").unlink()
    assert misfit_by_block(tmp_path, sets) == {}

"""The hypotheses study (paper/hypotheses_study.py): the pre-stated measures on hand-worked
curves, the permutation test against scipy's, the bootstrap interval's coverage, the
simulator's predictions against an independent scipy integration, the summary's verdicts on
synthetic runs with a known answer, and the driver's refusals."""

from __future__ import annotations

import dataclasses
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from scipy.integrate import solve_ivp

from paper import _hypotheses_analysis as ha
from paper import _hypotheses_metrics as hm
from paper import hypotheses_study as hs

ROOT = Path(__file__).resolve().parents[1]


def test_dip_recovery_and_steps_to_recover_by_hand():
    steps = np.arange(0, 52, 4)
    y = np.array([0.3, 0.5, 0.6, 0.7, 0.5, 0.6, 0.65, 0.7, 0.7, 0.4, 0.6, 0.7, 0.7])
    # pulse at 12 (length 4): before = y[12] = 0.7; after in (12, 24]: 0.5, 0.6, 0.65
    # pulse at 30: before = y[28] = 0.7; after in (30, 42]: 0.4, 0.6, 0.7
    assert hm.dip(steps, y, [12, 30], 4, 4) == pytest.approx(((0.7 - 0.5) + (0.7 - 0.4)) / 2)
    # shift at 24: at = y[24] = 0.65; after: 0.7, 0.7, 0.4, 0.6, 0.7, 0.7
    assert hm.recovery(steps, y, 24) == pytest.approx(
        np.mean([0.7, 0.7, 0.4, 0.6, 0.7, 0.7]) - 0.65
    )
    # pre = mean(y[16], y[20]) = 0.55; 0.9 * pre = 0.495: reached at step 24 already
    assert hm.steps_to_recover(steps, y, 24, 4) == 0
    low = y.copy()
    low[6:] = 0.1
    assert hm.steps_to_recover(steps, low, 24, 4) is None
    with pytest.raises(ValueError, match="pulse"):
        hm.dip(steps, y, [100], 4, 4)


@pytest.mark.parametrize("shift", [0.0, 0.6])
def test_permutation_test_equals_scipys_on_one_task(shift):
    rng = np.random.default_rng(11)
    focus, other = rng.normal(0, 1, 5), rng.normal(shift, 1, 7)
    stat, p = hm.permutation_test({"t": {"A": focus, "B": other}}, "A", ["B"], n_perm=20000)
    ref = stats.permutation_test(
        (other, focus),
        lambda a, b: np.mean(a) - np.mean(b),
        alternative="greater",
        permutation_type="independent",
        n_resamples=100_000,  # > C(12, 5): exact
    )
    assert stat == pytest.approx(other.mean() - focus.mean(), abs=1e-12)
    assert p == pytest.approx(
        ref.pvalue, abs=float(4 * np.sqrt(ref.pvalue * (1 - ref.pvalue) / 20000) + 1e-4)
    )


def test_contrast_is_the_mean_over_tasks_and_pools_the_others():
    g = {
        "a": {"C1": np.array([1.0, 3.0]), "X": np.array([4.0]), "Y": np.array([6.0, 8.0])},
        "b": {"C1": np.array([0.0]), "X": np.array([1.0]), "Y": np.array([1.0])},
    }
    # task a: mean(4, 6, 8) - mean(1, 3) = 4; task b: 1 - 0 = 1
    assert hm.contrast(g, "C1", ["X", "Y"]) == pytest.approx(2.5)


def test_bootstrap_interval_covers_the_true_contrast_about_95_percent():
    rng = np.random.default_rng(5)
    hits, n = 0, 120
    for _ in range(n):
        g = {"t": {"A": rng.normal(0.0, 1.0, 12), "B": rng.normal(1.0, 1.0, 12)}}
        lo, hi = hm.bootstrap_ci(g, "A", ["B"], seed=int(rng.integers(1 << 30)), n_boot=400)
        hits += lo <= 1.0 <= hi
    # percentile bootstrap with 12 per group under-covers a little; 95 % binomial band
    assert 0.84 <= hits / n <= 0.99


def _ode_proxy(params, signs, schedule, t_eval, reset=None):
    """Independent integration of the 3-node competence FFL (AND gate) with scipy."""
    rho, b, delta, A0 = (
        np.array([params[f"{k}[{n}]"] for n in "XYZ"]) for k in ("rho", "b", "delta", "A0")
    )
    K = {e: params[f"K[{e}]"] for e in ("X->Y", "X->Z", "Y->Z")}
    n = {e: params[f"n[{e}]"] for e in ("X->Y", "X->Z", "Y->Z")}
    s_xy, s_xz, s_yz = signs

    def term(a, e, s):
        u = (max(a, 0.0) / K[e]) ** n[e]
        return u / (1 + u) if s > 0 else 1 / (1 + u)

    def rhs(t, A):
        G = np.array(
            [1.0, term(A[0], "X->Y", s_xy), term(A[0], "X->Z", s_xz) * term(A[1], "Y->Z", s_yz)]
        )
        drive = np.array([schedule(t), 1.0, 1.0])
        return rho * (b + (1 - b) * drive * G) * (1 - A) - delta * A

    def integrate(t0, t1, y0, ts):
        # integrate piecewise between the schedule's switch times (2 and 4)
        breaks = sorted({t0, t1, *[x for x in (2.0, 4.0) if t0 < x < t1]})
        out, y = [], y0
        for a, c in itertools.pairwise(breaks):
            sel = ts[(ts >= a) & ((ts < c) if c < t1 else (ts <= c))]
            sol = solve_ivp(
                rhs, (a, c), y, dense_output=True, rtol=1e-10, atol=1e-12, method="LSODA"
            )
            if sel.size:
                out.append(sol.sol(sel).T)
            y = sol.y[:, -1]
        return np.concatenate(out)

    if reset is None:
        return np.prod(integrate(0.0, t_eval[-1], A0, t_eval), axis=1)
    first = t_eval[t_eval < reset]
    return np.prod(
        np.concatenate(
            [
                integrate(0.0, reset, A0, first),
                integrate(reset, t_eval[-1], A0, t_eval[t_eval >= reset]),
            ]
        ),
        axis=1,
    )


def test_predictions_equal_an_independent_scipy_integration():
    import jax

    jax.config.update("jax_enable_x64", True)
    from paper import _hypotheses_predict as hp

    cfg = dataclasses.replace(
        hs.StudyConfig(),
        motifs=["C1", "I1"],
        steps=24,
        eval_every=4,
        pulse_starts=[2],
        pulse_length=2,
        shift_step=12,
    )
    params = {
        "rho[X]": 0.2,
        "rho[Y]": 0.15,
        "rho[Z]": 0.1,
        "b[X]": 0.05,
        "b[Y]": 0.1,
        "b[Z]": 0.1,
        "delta[X]": 0.01,
        "delta[Y]": 0.02,
        "delta[Z]": 0.01,
        "A0[X]": 0.5,
        "A0[Y]": 0.4,
        "A0[Z]": 0.3,
        "K[X->Y]": 0.5,
        "K[X->Z]": 0.4,
        "K[Y->Z]": 0.6,
        "n[X->Y]": 2.0,
        "n[X->Z]": 2.0,
        "n[Y->Z]": 3.0,
    }
    got = hp.predict_task(cfg, [params])
    steps = np.arange(0, 25, 4).astype(float)
    flip = lambda t: -1.0 if 2.0 <= t < 4.0 else 1.0  # noqa: E731
    for motif, signs in (("C1", (1, 1, 1)), ("I1", (1, 1, -1))):
        y = _ode_proxy(params, signs, flip, steps)
        assert got["dip"][motif]["mean"] == pytest.approx(hm.dip(steps, y, [2], 2, 4), abs=2e-5)
        y = _ode_proxy(params, signs, lambda t: 1.0, steps, reset=12.0)
        assert got["recovery"][motif]["mean"] == pytest.approx(hm.recovery(steps, y, 12), abs=2e-5)
    assert got["h2_statistic"]["mean"] == pytest.approx(
        got["recovery"]["I1"]["mean"] - got["recovery"]["C1"]["mean"], abs=1e-12
    )


def _curves(steps, e2e):
    comp = np.stack([e2e, e2e, e2e], axis=1)
    return {
        "steps": steps,
        "e2e": e2e,
        "comp": comp,
        "regime": "converged",
        "path": "x",
        "roles": ["X", "Y", "Z"],
        "seconds": 1.0,
    }


@pytest.mark.parametrize("c1_better", [True, False])
def test_summary_verdicts_on_synthetic_runs_with_a_known_answer(tmp_path, monkeypatch, c1_better):
    cfg = hs.StudyConfig()
    steps = np.arange(0, cfg.steps + 1, cfg.eval_every)
    rng = np.random.default_rng(0)
    groups = {}
    for cond, task, motif, seed in cfg.jobs("runs"):
        y = 0.6 + 0.01 * rng.standard_normal(len(steps))
        if cond == "pulse":
            depth = 0.05 if (motif == "C1" and c1_better) else 0.2
            for s0 in cfg.pulse_starts:
                y[(steps > s0) & (steps <= s0 + 8)] -= depth
        if cond in ("shift", "lag"):
            y[steps >= cfg.shift_step] = 0.3
            gain = 0.3 if motif == "I1" else 0.1
            after = steps > cfg.shift_step
            y[after] = 0.3 + gain * np.linspace(0.5, 1, after.sum())
        c = _curves(steps, y)
        c["seed"] = seed
        groups.setdefault((cond, task, motif), []).append(c)
    monkeypatch.setattr(ha, "collect", lambda cfg, runs: groups)
    s = ha.summarise(cfg, tmp_path, tmp_path)
    h1, h2 = s["hypotheses"]["c1_filters_spurious"], s["hypotheses"]["i1_adapts_faster"]
    assert h1["complete"] and h2["complete"]
    assert h1["holds"] is c1_better
    assert h1["effect"] == pytest.approx(0.15 if c1_better else 0.0, abs=0.02)
    assert h2["holds"] and h2["effect"] == pytest.approx(0.2 * 0.75, abs=0.02)
    assert h2["oscillation"]["oscillating"] == {"C1": 0, "I1": 0}
    assert (tmp_path / "table.md").is_file() and (tmp_path / "hypotheses.png").is_file()
    assert (
        json.loads((tmp_path / "summary.json").read_text())["hypotheses"]["c1_filters_spurious"][
            "holds"
        ]
        is c1_better
    )


def test_design_jobs_and_configs():
    cfg = hs.StudyConfig()
    assert len(cfg.jobs("pilots")) == 2 * 3
    runs = cfg.jobs("runs")
    assert len(runs) == 5 * (2 * 2 * 8 + 2)
    from llm_runs.config import TrainConfig

    for job in runs:
        c = TrainConfig.from_dict(cfg.train_config(*job))
        assert c.network.motif == job[2] and c.network.gate == "AND"
        assert (c.task.spurious.starts == cfg.pulse_starts) is (job[0] == "pulse")
        assert (c.task.shift.step == cfg.shift_step) is (job[0] in ("shift", "lag"))
        assert c.rl.staleness == (cfg.lag_staleness if job[0] == "lag" else 0)


def test_test_runs_need_stored_predictions(tmp_path, capsys):
    rc = hs.main(["--phase", "runs", "--out", str(tmp_path / "res"), "--runs", str(tmp_path / "r")])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "predictions.json" in err
    assert not (tmp_path / "r").exists()  # nothing trained


def test_driver_refuses_another_design(tmp_path, capsys):
    out = tmp_path / "res"
    out.mkdir()
    (out / "config.json").write_text(json.dumps({"steps": 1}))
    assert hs.main(["--phase", "summary", "--out", str(out), "--runs", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error:")


@pytest.mark.parametrize("args", [["--workers", "0"], ["--code", "/nonexistent/tree"]])
def test_bad_options_exit_2_with_one_error_line(tmp_path, capsys, args):
    rc = hs.main(["--out", str(tmp_path / "o"), "--runs", str(tmp_path / "r"), *args])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists() and not (tmp_path / "r").exists()


def test_mean_interval_covers_the_true_mean_about_95_percent():
    rng = np.random.default_rng(8)
    hits = sum(
        lo <= 0.5 <= hi
        for lo, hi in (hm.mean_ci(rng.normal(0.5, 0.1, 15), n_boot=500) for _ in range(150))
    )
    assert 0.84 <= hits / 150 <= 0.99


@pytest.mark.slow
def test_quick_study_end_to_end(tmp_path):
    """Pilots, stored predictions, test runs and summary at toy size (micro base, ~4 min)."""
    import subprocess

    out, runs = tmp_path / "res", tmp_path / "runs"
    args = [sys.executable, "-m", "paper.hypotheses_study", "--quick",
            "--runs", str(runs), "--out", str(out), "--workers", "2"]  # fmt: skip
    r = subprocess.run(args, capture_output=True, text=True, timeout=1800, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["predictions_created"] <= s["first_run_created"]
    for key in ("c1_filters_spurious", "i1_adapts_faster"):
        h = s["hypotheses"][key]
        assert h["complete"] and isinstance(h["holds"], bool) and len(h["ci95"]) == 2
    assert (out / "hypotheses.png").is_file() and (out / "table.md").is_file()
    # a second call trains nothing and refuses to redo the predictions
    r2 = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r2.returncode == 0 and "kept as it is" in r2.stdout


def test_rank_agreement_is_spearmans_over_motifs():
    motifs = ["C1", "C2", "C3", "I1"]
    pred_dip = {"C1": 0.1, "C2": 0.3, "C3": 0.2, "I1": 0.4}
    meas = {"C1": 1.0, "C2": 9.0, "C3": 4.0, "I1": 16.0}  # monotone in the prediction
    per = {"pulse": {"math": {m: {"dip": {"mean": meas[m]}} for m in motifs}}}
    pred = {"tasks": {"math": {"dip": {m: {"mean": pred_dip[m]} for m in motifs}}}}
    got = ha.rank_agreement(per, pred)["math"]["dip"]
    assert got["spearman"] == pytest.approx(1.0) and got["motifs"] == 4
    meas["C1"] = 20.0  # now the largest
    per = {"pulse": {"math": {m: {"dip": {"mean": meas[m]}} for m in motifs}}}
    want = stats.spearmanr([pred_dip[m] for m in motifs], [meas[m] for m in motifs])
    assert ha.rank_agreement(per, pred)["math"]["dip"]["spearman"] == pytest.approx(want.statistic)


def test_pulse_recovery_by_hand():
    steps = np.arange(0, 52, 4)
    y = np.array([0.3, 0.5, 0.6, 0.7, 0.5, 0.6, 0.65, 0.7, 0.7, 0.4, 0.6, 0.7, 0.7])
    # pulse 12-16: pre 0.7, 0.9 x pre = 0.63: y[16] 0.5, y[20] 0.6, y[24] 0.65 -> 24 - 16 = 8
    # pulse 30-34: pre y[28] = 0.7: y[36] 0.4, y[40] 0.6, y[44] 0.7 -> 44 - 34 = 10
    assert hm.pulse_recovery(steps, y, [12, 30], 4) == [8, 10]
    # the full level: back at step 28 (before the next pulse at 30) and at 44
    assert hm.pulse_recovery(steps, y, [12, 30], 4, frac=1.0) == [12, 10]
    # above every later level: never back, None
    assert hm.pulse_recovery(steps, y, [12, 30], 4, frac=1.05) == [None, None]

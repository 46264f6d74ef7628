"""Early warning on training signals: indicators against closed forms and numpy/scipy, the
alert rule's fitting and first alert on runs with known answers."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from calibrate._warning import (
    SignalRule,
    Trigger,
    first_alert,
    fit_rule,
    rolling_lag1,
    rolling_variance,
    spike_z,
    trend,
)
from simulate.common import ConfigError


def _ar1(phi: float, n: int, rng: np.random.Generator) -> np.ndarray:
    x = np.zeros(n)
    e = rng.standard_normal(n)
    for t in range(1, n):
        x[t] = phi * x[t - 1] + e[t]
    return x


@pytest.mark.parametrize("phi", [0.8, 0.0, -0.6])
def test_lag1_of_an_ar1_is_its_coefficient_and_variance_its_closed_form(phi: float) -> None:
    rng = np.random.default_rng(1)
    x = _ar1(phi, 6000, rng)
    r = rolling_lag1(x, window=5000, min_points=100)
    v = rolling_variance(x, window=5000, min_points=100)
    assert r[-1] == pytest.approx(phi, abs=0.04)
    assert v[-1] == pytest.approx(1.0 / (1.0 - phi**2), rel=0.1)  # sigma^2 / (1 - phi^2)


def test_rolling_variance_and_trend_match_numpy_and_scipy_on_each_window() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal(80)
    x[5] = np.nan
    v, k = rolling_variance(x, window=20, min_points=8), trend(x, window=20, min_points=8)
    for t in (10, 40, 79):
        w = x[max(0, t - 19) : t + 1]
        idx = np.flatnonzero(np.isfinite(w))
        assert v[t] == pytest.approx(np.var(w[idx], ddof=1))
        assert k[t] == pytest.approx(kendalltau(idx, w[idx]).statistic)
    assert np.isnan(v[3])  # fewer than min_points values


def test_spike_z_sees_the_spike_and_only_the_past() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal(100)
    x[60] = 12.0
    z = spike_z(x, window=40, min_points=10)
    assert z[60] > 8
    assert np.nanmax(np.abs(z[:60])) < 5  # nothing before it moves
    z2 = spike_z(np.r_[x[:60], 0.0, x[61:]], window=40, min_points=10)
    np.testing.assert_allclose(z[:60], z2[:60])  # the values before t do not see x[t]


def _run(rng: np.random.Generator, n: int = 200, spike_at: int | None = None) -> pd.DataFrame:
    rows = []
    for agent in ("X", "Y"):
        g = np.abs(1.0 + 0.1 * rng.standard_normal(n))
        if spike_at is not None and agent == "Y":
            g[spike_at : spike_at + 6] *= 8.0  # a grad-norm surge that lasts 6 steps
        for t in range(n):
            rows.append({"step": t + 1, "agent": agent, "grad_norm": g[t]})
    return pd.DataFrame(rows)


def test_fit_rule_sets_thresholds_on_calm_runs_and_flags_a_surge() -> None:
    rng = np.random.default_rng(4)
    rule = SignalRule(triggers=(Trigger("grad_norm", "spike_z"),), window=30, persist=3,
                      false_alert=0.1)  # fmt: skip
    calm = [_run(rng) for _ in range(20)]
    fitted, report = fit_rule([*calm, _run(rng, spike_at=120)], [False] * 20 + [True], rule)
    thr = fitted.triggers[0].threshold
    assert thr is not None and report["grad_norm:spike_z:above"]["runs"] == 20
    assert report["false_alert_share_train"] <= 0.1
    alert = first_alert(_run(rng, spike_at=150), fitted)
    assert alert is not None and alert.agent == "Y" and alert.signal == "grad_norm"
    assert 152 <= alert.step <= 156  # held for 3 steps from the surge at step 151
    assert "grad_norm spike_z" in alert.words()
    fresh = [first_alert(_run(rng), fitted) for _ in range(40)]
    assert sum(a is not None for a in fresh) <= 8  # calm runs mostly stay quiet
    assert first_alert(_run(rng, spike_at=150), fitted, upto=140) is None


def test_rule_round_trips_and_refuses_bad_input() -> None:
    r = SignalRule(triggers=(Trigger("entropy", "spike_z", "below", -4.0),))
    assert SignalRule.from_dict(json.loads(json.dumps(r.to_dict()))) == r
    with pytest.raises(ConfigError, match="unknown signal"):
        Trigger("loss_of_nerve", "spike_z")
    with pytest.raises(ConfigError, match="indicator"):
        Trigger("entropy", "wavelet")
    with pytest.raises(ConfigError, match="persist"):
        SignalRule(persist=0)
    with pytest.raises(ConfigError, match="unknown field"):
        SignalRule.from_dict({"windows": 3})
    with pytest.raises(ConfigError, match="fit the thresholds"):
        first_alert(_run(np.random.default_rng(0)), SignalRule())
    with pytest.raises(ConfigError, match="did not collapse"):
        fit_rule([_run(np.random.default_rng(0))], [True])


@pytest.fixture(scope="module")
def signal_run(tmp_path_factory) -> str:
    """One real 60-step tiny run with its training signals (run-log schema 3)."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("sig") / "run"
    cmd = [sys.executable, "-m", "llm_runs", "train", "--motif", "C1", "--preset", "tiny",
           "--task", "math", "--steps", "60", "--eval-every", "10", "--seed", "0",
           "--threads", "1", "--no-progress", "--out", str(out)]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True)
    return str(out)


@pytest.mark.slow
def test_signal_rule_cli_then_watch_names_the_signal(signal_run: str, tmp_path) -> None:
    import shutil
    import subprocess
    import sys

    twin = tmp_path / "twin"
    shutil.copytree(signal_run, twin)
    rule = tmp_path / "rule.json"
    base = [sys.executable, "-m", "calibrate"]
    r = subprocess.run([*base, "signal-rule", signal_run, str(twin), "--out", str(rule),
                        "--window", "20"], capture_output=True, text=True, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(rule.read_text())
    fitted = SignalRule.from_dict(doc["rule"])
    assert fitted.fitted and doc["report"]["false_alert_share_train"] == 0.0
    # the same command again: refused without --overwrite, one error line
    r = subprocess.run([*base, "signal-rule", signal_run, "--out", str(rule)],
                       capture_output=True, text=True, check=False)  # fmt: skip
    assert r.returncode == 2 and r.stderr.strip().startswith("error:") and "--overwrite" in r.stderr
    # a rule that fires at once: watch alerts (exit 3) and names agent, signal, indicator
    hot = SignalRule(triggers=(Trigger("grad_norm", "spike_z", "above", -1e9),), window=20)
    (tmp_path / "hot.json").write_text(json.dumps({"rule": hot.to_dict()}))
    r = subprocess.run([*base, "watch", signal_run, "--once", "--signal-rule",
                        str(tmp_path / "hot.json")], capture_output=True, text=True,
                       check=False)  # fmt: skip
    assert r.returncode == 3, r.stderr
    assert "ALERT: signals: step" in r.stderr and "grad_norm spike_z" in r.stderr
    # an unfitted rule is refused before any work
    (tmp_path / "raw.json").write_text(json.dumps(SignalRule().to_dict()))
    r = subprocess.run([*base, "watch", signal_run, "--once", "--signal-rule",
                        str(tmp_path / "raw.json")], capture_output=True, text=True,
                       check=False)  # fmt: skip
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and "not fitted" in lines[0]


def test_watch_and_signal_rule_refuse_bad_input_with_one_line(tmp_path) -> None:
    import subprocess
    import sys

    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "raw.json").write_text(json.dumps(SignalRule().to_dict()))
    (tmp_path / "bad.json").write_text("{not json")
    base = [sys.executable, "-m", "calibrate"]
    for extra, needle in (
        (["watch", str(run), "--once", "--signal-rule", str(tmp_path / "raw.json")], "not fitted"),
        (["watch", str(run), "--once", "--signal-rule", str(tmp_path / "bad.json")], "not JSON"),
        (["watch", str(run), "--once", "--signal-rule", str(tmp_path / "no.json")], "no such"),
        (["signal-rule", str(run), "--out", str(tmp_path / "r.json")], "not a run folder"),
    ):
        r = subprocess.run([*base, *extra], capture_output=True, text=True, check=False)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), r.stderr
        assert needle in lines[0]
    assert not (tmp_path / "r.json").exists()


def test_spike_z_of_a_mostly_constant_history_uses_its_mean_deviation() -> None:
    x = np.r_[np.ones(20), 2.0, np.ones(9), 3.0]
    z = spike_z(x, window=30, min_points=10)
    assert np.all(np.isnan(z[10:20]))  # a constant history: no scale
    # at the end the history holds one 2.0 among 29 ones: MAD 0, mean |dev| 1/30
    assert z[-1] == pytest.approx(2.0 / (1.2533 / 30))


def test_fit_rule_below_thresholds_leave_every_calm_run_quiet() -> None:
    rng = np.random.default_rng(7)

    def run() -> pd.DataFrame:
        e = 1.0 + 0.05 * rng.standard_normal(120)
        return pd.DataFrame({"step": np.arange(1, 121), "agent": "X", "entropy": e})

    calm = [run() for _ in range(3)]
    rule = SignalRule(triggers=(Trigger("entropy", "spike_z", "below"),), false_alert=0.05)
    fitted, report = fit_rule(calm, [False] * 3, rule)
    assert report["false_alert_share_train"] == 0.0
    thr = fitted.triggers[0].threshold
    assert thr is not None and thr < 0

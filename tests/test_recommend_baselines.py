"""The recommendation baselines of issue 19 §2 (paper/_recommend_baselines.py) on synthetic
tabular benchmarks: grids of known sigmoid curves with one known best setting; budgets never
exceeded; reproducible per rng_seed; the sigmoid fit and the GP against known answers; and the
table read from run folders written with llm_runs' own log writer."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from paper import _recommend_baselines as rb

ROOT = Path(__file__).resolve().parents[1]

#: The baselines that need the optional extra ``baselines`` (and which module).
NEEDS = {"optuna": "optuna", "gp surrogate": "sklearn"}


def _needs(name: str) -> None:
    mod = NEEDS.get(name)
    if mod is not None and importlib.util.find_spec(mod) is None:
        pytest.skip(f"{mod} is not installed (extra 'baselines')")


LRS = (1e-3, 2.5e-3, 6e-3, 1.5e-2)
KS = (0, 2, 4, 8)
STEPS = np.arange(0, 201, 10)
BEST = (2.5e-3, 2)
R0 = 0.3


def _asymptote(lr: float, k: int) -> float:
    """A smooth bump in (log lr, log1p staleness), highest (0.9) at BEST."""
    d = (math.log(lr / BEST[0]) / 1.2) ** 2 + ((math.log1p(k) - math.log1p(BEST[1])) / 1.0) ** 2
    return 0.25 + 0.65 * math.exp(-d)


def _grid_table(seeds=(0, 1), noise: float = 0.0, collapse=()) -> rb.RunTable:
    """Sigmoid curves R(n) = A - (A - R0)/(1 + (n/60)^2) with A from :func:`_asymptote`
    (optionally with seed-dependent noise); settings in ``collapse`` fall to 0.02."""
    curves = {}
    for seed in seeds:
        rng = np.random.default_rng(100 + seed)
        for lr in LRS:
            for k in KS:
                a = 0.02 if (lr, k) in collapse else _asymptote(lr, k)
                v = rb.sigmoid(STEPS, a, 2.0, 60.0, R0) + noise * rng.standard_normal(len(STEPS))
                v[0] = R0
                regime = "collapse" if (lr, k) in collapse else "converged"
                curves[((lr, k), seed)] = rb.Curve(STEPS, np.clip(v, 0, 1), regime)
    return rb.RunTable(curves)


TABLE = _grid_table()
BASELINES = list(rb.BASELINES.items())


def _true_best(table: rb.RunTable) -> rb.Setting:
    return max(table.settings, key=table.true_value)


def test_the_synthetic_grid_has_the_known_single_best():
    assert _true_best(TABLE) == BEST
    vals = sorted(TABLE.true_value(s) for s in TABLE.settings)
    assert vals[-1] - vals[-2] > 0.02  # a clear winner
    assert TABLE.horizon == 200 and TABLE.eval_steps == tuple(range(0, 201, 10))
    assert TABLE.corners() == ((1e-3, 0), (1e-3, 8), (1.5e-2, 0), (1.5e-2, 8))


@pytest.mark.parametrize(("name", "method"), BASELINES)
def test_each_baseline_finds_the_best_with_enough_budget(name, method):
    _needs(name)
    kw = {"pilots": TABLE.settings} if name == "gp surrogate" else {}  # the GP sees every final
    pick = method(TABLE, budget_steps=3400, seed=0, rng_seed=0, **kw)
    assert pick.setting == BEST, (name, pick.trace)
    assert TABLE.regret(pick.setting) == 0.0
    assert 0 < pick.steps <= pick.budget == 3400
    assert pick.steps == sum(t.steps for t in pick.trace)


@pytest.mark.parametrize("budget", [200, 450, 1000, 1333])
@pytest.mark.parametrize(("name", "method"), BASELINES)
def test_no_baseline_spends_more_than_its_budget(name, method, budget):
    _needs(name)
    try:
        pick = method(TABLE, budget_steps=budget, seed=1, rng_seed=3)
    except rb.BudgetError:
        # only when not even the method's minimum fits (GP: 4 pilots + confirmation = 1000;
        # extrapolation: 16 prefixes of 30 steps + continuation = 650)
        assert (name, budget) in {
            ("gp surrogate", 200), ("gp surrogate", 450), ("curve extrapolation", 200),
            ("curve extrapolation", 450),
        }  # fmt: skip
        return
    assert pick.steps <= budget
    assert pick.steps == sum(t.steps for t in pick.trace)
    assert all(t.steps == t.reached - t.start for t in pick.trace)
    assert pick.setting in TABLE.settings


def test_the_ledger_refuses_to_overspend_and_charges_nothing_then():
    ledger = rb.Ledger(TABLE, 0, 250)
    ledger.run(BEST, 200)
    with pytest.raises(rb.BudgetError, match="60 steps asked, 50 of 250 left"):
        ledger.run(BEST, 60)
    assert ledger.spent == 200 and len(ledger.trace) == 1
    with pytest.raises(rb.BudgetError, match="positive"):
        rb.Ledger(TABLE, 0, 0)


@pytest.mark.parametrize("name", ["random search", "optuna"])
def test_randomised_baselines_are_reproducible_per_rng_seed(name):
    _needs(name)
    method = rb.BASELINES[name]
    table = _grid_table(noise=0.03)

    def run(r):
        return method(table, budget_steps=1000, seed=0, rng_seed=r).trace

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_deterministic_baselines_repeat_exactly():
    _needs("gp surrogate")
    for name in ("gp surrogate", "curve extrapolation"):
        a = rb.BASELINES[name](TABLE, budget_steps=1000, seed=0, rng_seed=0)
        b = rb.BASELINES[name](TABLE, budget_steps=1000, seed=0, rng_seed=0)
        assert a.setting == b.setting and a.trace == b.trace


def test_random_search_runs_distinct_settings_at_full_length():
    pick = rb.random_search(TABLE, budget_steps=1000, seed=0, rng_seed=1)
    assert [t.reached for t in pick.trace] == [200] * 5 and pick.steps == 1000
    ran = [t.setting for t in pick.trace]
    assert len(set(ran)) == 5
    assert pick.setting == max(ran, key=lambda s: TABLE.final(s, 0))


def test_optuna_prunes_and_counts_the_steps_each_trial_ran():
    _needs("optuna")
    pick = rb.optuna_tpe(TABLE, budget_steps=1500, seed=0, rng_seed=0)
    notes = [t.note for t in pick.trace]
    assert "pruned" in notes and "complete" in notes
    assert all(t.reached < 200 for t in pick.trace if t.note == "pruned")
    done = [t for t in pick.trace if t.note == "complete"]
    assert pick.setting == max(done, key=lambda t: (t.value, -done.index(t))).setting
    ordered = rb.optuna_tpe(TABLE, budget_steps=1500, seed=0, rng_seed=0, knobs="ordered")
    assert ordered.info["knobs"] == "ordered" and ordered.steps <= 1500
    assert all(t.setting in TABLE.settings for t in ordered.trace)


def test_a_diverged_run_costs_its_steps_scores_zero_and_counts_as_unstable():
    curves = dict(TABLE.curves)
    c = curves[(BEST, 0)]
    keep = c.steps <= 70
    curves[(BEST, 0)] = rb.Curve(c.steps[keep], c.values[keep], "collapse", diverged_step=70)
    table = rb.RunTable(curves)
    assert table.read(BEST, 0, 200) == (0.0, 70) and table.final(BEST, 0) == 0.0
    assert table.unstable(BEST, 0) and not table.unstable(BEST, 1)
    assert table.true_value(BEST) == pytest.approx(TABLE.final(BEST, 1) / 2)
    pick = rb.random_search(table, budget_steps=3200, seed=0, rng_seed=0)
    assert pick.setting != BEST
    assert next(t for t in pick.trace if t.setting == BEST).steps == 70


def test_unstable_uses_the_regime_groups():
    table = _grid_table(seeds=(0,), collapse={(1.5e-2, 8)})
    assert table.unstable((1.5e-2, 8), 0) and not table.unstable(BEST, 0)
    assert rb.regime_group("damped oscillation") == "oscillating"
    assert rb.regime_group("overshoot/pulse") == "converged"
    with pytest.raises(rb.BenchmarkError, match="unknown regime"):
        rb.regime_group("wobbly")


def test_sigmoid_fit_recovers_known_parameters_from_noiseless_data():
    a, b, c = 0.82, 2.5, 70.0
    n = np.arange(0, 201, 10)
    fit = rb.fit_sigmoid(n, rb.sigmoid(n, a, b, c, 0.2))
    assert fit["R0"] == pytest.approx(0.2, abs=1e-12) and fit["rmse"] < 1e-8
    np.testing.assert_allclose([fit["A"], fit["B"], fit["C_mid"]], [a, b, c], rtol=1e-5)
    # a falling curve (collapse), from a prefix past its midpoint
    fall = rb.sigmoid(n, 0.05, 1.5, 30.0, 0.6)
    fit = rb.fit_sigmoid(n[:8], fall[:8])
    np.testing.assert_allclose([fit["A"], fit["B"], fit["C_mid"]], [0.05, 1.5, 30.0], rtol=1e-4)
    with pytest.raises(rb.BenchmarkError, match="at least 3"):
        rb.fit_sigmoid(n[:3], fall[:3])


def test_extrapolation_prefix_is_the_longest_that_fits_the_budget():
    pick = rb.curve_extrapolation(TABLE, budget_steps=1000, seed=0, rng_seed=0)
    assert pick.info["prefix"] == 50  # 16 * 50 + 150 = 950 <= 1000 < 16 * 60 + 140
    assert [t.note for t in pick.trace] == ["prefix"] * 16 + ["continued"]
    assert pick.steps == 950 and pick.trace[-1].start == 50
    assert pick.setting == max(pick.info["extrapolated"], key=pick.info["extrapolated"].get)


def test_gp_picks_the_maximum_of_a_smooth_function_it_has_seen():
    _needs("gp surrogate")
    pilots = [(1e-3, 0), (1e-3, 8), (1.5e-2, 0), (1.5e-2, 8), BEST, (6e-3, 4)]
    pick = rb.gp_surrogate(TABLE, budget_steps=1400, seed=0, rng_seed=0, pilots=pilots)
    assert pick.setting == BEST
    assert [t.note for t in pick.trace] == ["pilot"] * 6  # a pilot needs no confirmation
    mean = pick.info["posterior_mean"]
    assert max(mean, key=mean.get) == BEST
    # default pilots are the corners; the pick gets one confirmation run
    corner = rb.gp_surrogate(TABLE, budget_steps=1000, seed=0, rng_seed=0)
    assert corner.info["pilots"] == TABLE.corners()
    assert corner.trace[-1].note == "confirm" or corner.setting in TABLE.corners()
    with pytest.raises(rb.BenchmarkError, match="pilots"):
        rb.gp_surrogate(TABLE, budget_steps=1000, seed=0, rng_seed=0, pilots=[(9.0, 0), BEST])


@pytest.mark.parametrize(
    ("name", "module", "pip"),
    [("optuna", "optuna", "optuna"), ("gp surrogate", "sklearn", "scikit-learn")],
)
def test_a_missing_optional_library_is_a_one_line_error_naming_the_extra(
    name, module, pip, monkeypatch
):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    if module == "sklearn":
        for sub in [m for m in sys.modules if m.startswith("sklearn.")]:
            monkeypatch.setitem(sys.modules, sub, None)
    with pytest.raises(rb.BenchmarkError, match=rf"^{pip} is missing: .*\[baselines\]"):
        rb.BASELINES[name](TABLE, budget_steps=1000, seed=0, rng_seed=0)


def test_bad_seed_and_missing_setting_are_one_line_errors():
    with pytest.raises(rb.BenchmarkError, match="seed 5 not in the table"):
        rb.random_search(TABLE, budget_steps=1000, seed=5, rng_seed=0)
    with pytest.raises(rb.BenchmarkError, match="no run of setting"):
        TABLE.true_value((0.5, 0))


def _write_run(folder: Path, lr: float, k: int, seed: int, acc: np.ndarray, competence):
    from llm_runs import runlog as rl

    manifest = rl.make_manifest(
        run=folder.name,
        seed=seed,
        agents=["X", "Y"],
        spec={"nodes": ["X", "Y"], "edges": []},
        config={"steps": 200, "eval_every": 10, "rl": {"lr": lr, "staleness": k}},
    )
    with rl.RunWriter(folder, manifest) as w:
        for i, s in enumerate(STEPS):
            w.write(
                [
                    *({"kind": "agent", "step": int(s), "agent": a, "competence": float(c[i]),
                       "n_eval": 64} for a, c in competence.items()),
                    {"kind": "e2e", "step": int(s), "accuracy": float(acc[i]), "n_eval": 128},
                ]
            )  # fmt: skip
    rl.update_manifest(folder, status="finished")


def test_table_from_run_folders_written_by_the_log_writer(tmp_path):
    rise = 0.9 - 0.5 * np.exp(-STEPS / 50)
    fall = 0.64 * np.exp(-STEPS / 30)
    _write_run(tmp_path / "lr0.001_k0_s0", 1e-3, 0, 0, rise * 0.9, {"X": rise, "Y": rise})
    _write_run(tmp_path / "lr0.015_k0_s0", 1.5e-2, 0, 0, fall, {"X": fall, "Y": rise})
    _write_run(tmp_path / "lr0.001_k0_s1", 1e-3, 0, 1, rise * 0.8, {"X": rise, "Y": rise})
    (tmp_path / "lr0.015_k0_s1").mkdir()  # still running: skipped
    from llm_runs import runlog as rl

    rl.RunWriter(
        tmp_path / "lr0.015_k0_s1",
        rl.make_manifest(run="r", seed=1, agents=["X"], spec={"nodes": ["X"]},
                         config={"steps": 200, "eval_every": 10, "rl": {"lr": 0.015,
                                                                        "staleness": 0}}),
    ).close()  # fmt: skip
    table, skipped = rb.RunTable.from_runs(tmp_path)
    assert skipped == ["lr0.015_k0_s1 (status running)"]
    assert table.settings == ((1e-3, 0), (1.5e-2, 0)) and table.seeds == (0, 1)
    assert table.settings_of(1) == ((1e-3, 0),)
    assert table.true_value((1e-3, 0)) == pytest.approx(rise[-1] * 0.85)
    assert table.true_value((1.5e-2, 0)) == pytest.approx(fall[-1])
    assert table.group((1e-3, 0), 0) == "converged" and not table.unstable((1e-3, 0), 0)
    assert table.unstable((1.5e-2, 0), 0)  # A_X driven to zero: a collapse
    assert table.read((1e-3, 0), 0, 50) == (pytest.approx(rise[5] * 0.9), 50)
    only1, _ = rb.RunTable.from_runs(tmp_path, seeds=[1])
    assert only1.seeds == (1,)
    pick = rb.random_search(table, budget_steps=400, seed=0, rng_seed=0)
    assert pick.setting == (1e-3, 0) and pick.steps == 400

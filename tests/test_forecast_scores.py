"""The forecast baselines and scoring of paper/forecast_scores.py (issue 31 §3), on runs whose
answer is known: a known nearest pilot, a smooth function a Gaussian process must interpolate,
curves drawn from ScaleRL's sigmoid itself, boundaries placed by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from paper import _forecast_baselines as fb
from paper import _forecast_report as fr
from paper._recommend_extrapolate import sigmoid

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("sklearn")
KNOBS = ("rl.lr", "rl.staleness")
STEPS = list(range(0, 201, 10))


def _run(lr, k, finals, group="converged", cell=(0, 0), curves=None):
    curves = curves or {a: [v] * len(STEPS) for a, v in finals.items()}
    return {
        "setting": {"rl.lr": lr, "rl.staleness": k},
        "group": group,
        "cell": list(cell),
        "final": dict(finals),
        "steps": STEPS,
        "curves": curves,
        "name": f"{lr}_{k}",
    }


def test_nearest_pilot_uses_the_nearest_setting_on_knob_scales():
    pilots = [
        _run(1e-3, 0, {"X": 0.9}),
        _run(1e-3, 0, {"X": 0.86}),
        _run(1e-2, 8, {"X": 0.1}, "collapse"),
        _run(1e-2, 8, {"X": 0.14}, "collapse"),
    ]
    # 2e-3 is nearer 1e-3 than 1e-2 on the log scale; staleness 1 nearer 0 than 8 on log1p
    f = fb.nearest_pilot(
        pilots,
        [{"rl.lr": 2e-3, "rl.staleness": 1}, {"rl.lr": 6e-3, "rl.staleness": 6}],
        KNOBS,
        n_eval=64,
        draws=4000,
        rng=np.random.default_rng(0),
    )
    assert f.label() == ["converged", "collapse"]
    assert f.samples.shape == (2, 1, 4000)
    assert np.mean(f.samples[0, 0]) == pytest.approx(0.88, abs=0.01)
    assert np.std(f.samples[0, 0]) == pytest.approx(np.sqrt(0.0008), abs=0.01)  # pooled sd
    assert np.allclose(f.samples * 64, np.rint(f.samples * 64))  # on the evaluation grid


def test_gp_interpolates_a_smooth_function_of_the_knobs():
    rng = np.random.default_rng(1)
    truth = lambda lr, k: 0.2 + 0.6 / (1 + np.exp(2.0 * (np.log10(lr) + 2.5))) - 0.02 * k  # noqa: E731
    pilots = [
        _run(lr, k, {"X": truth(lr, k) + 0.01 * rng.standard_normal()})
        for lr in np.geomspace(1e-4, 1e-1, 7)
        for k in (0, 2, 4)
    ]
    targets = [{"rl.lr": 5e-3, "rl.staleness": 1}, {"rl.lr": 4e-4, "rl.staleness": 3}]
    f = fb.gp_finals(pilots, targets, KNOBS, n_eval=256, draws=4000, rng=rng)
    for h, t in enumerate(targets):
        assert np.mean(f.samples[h, 0]) == pytest.approx(truth(**_kw(t)), abs=0.04)
    assert f.probs.shape == (2, len(fb.GROUPS)) and np.allclose(f.probs.sum(1), 1)


def _kw(t):
    return {"lr": t["rl.lr"], "k": t["rl.staleness"]}


def test_knn_and_gp_classifier_follow_the_pilots_groups():
    pilots = [
        _run(lr, 0, {"X": 0.5}, "converged" if lr < 5e-3 else "collapse")
        for lr in (1e-3, 2e-3, 3e-3, 1e-2, 2e-2, 3e-2)
    ]
    targets = [{"rl.lr": 1.5e-3, "rl.staleness": 0}, {"rl.lr": 2.5e-2, "rl.staleness": 0}]
    knn = fb.knn_groups(pilots, targets, KNOBS, k=3)
    assert knn.label() == ["converged", "collapse"]
    assert knn.probs[0, fb.GROUPS.index("converged")] == pytest.approx(1.0)
    gpc = fb.gp_groups(pilots, targets, KNOBS)
    assert gpc.label() == ["converged", "collapse"]
    one = fb.gp_groups(pilots[:3], targets, KNOBS)  # a single observed group
    assert np.all(one.probs[:, fb.GROUPS.index("converged")] == 1.0)


def test_sigmoid_prefix_extrapolates_its_own_curve_and_labels_a_fall():
    rise = sigmoid(np.array(STEPS), 0.9, 2.0, 40.0, 0.3)
    fall = sigmoid(np.array(STEPS), 0.02, 3.0, 30.0, 0.7)
    runs = [
        _run(1e-3, 0, {"X": float(rise[-1])}, curves={"X": rise.tolist()}),
        _run(1e-2, 0, {"X": float(fall[-1])}, curves={"X": fall.tolist()}),
    ]
    f = fb.sigmoid_prefix(runs, prefix=60, n_eval=64, draws=4000, rng=np.random.default_rng(2))
    assert np.mean(f.samples[0, 0]) == pytest.approx(rise[-1], abs=0.03)
    assert np.mean(f.samples[1, 0]) == pytest.approx(fall[-1], abs=0.03)
    assert f.label() == ["converged", "collapse"]


def test_scores_and_boundary_error_on_a_hand_made_grid():
    design = {"lrs": [1e-3, 1e-2, 1e-1], "staleness": [0]}
    pilots = [_run(1e-3, 0, {"X": 0.9}, cell=(0, 0))]
    held = [
        _run(1e-2, 0, {"X": 0.5}, "converged", cell=(1, 0)),
        _run(1e-1, 0, {"X": 0.0}, "collapse", cell=(2, 0)),
    ]
    n = 4000
    exact = fb.Forecast(
        "exact",
        ("X",),
        np.stack([np.full((1, n), 0.5), np.zeros((1, n))]),
        fr_probs(["converged", "collapse"]),
    )
    wrong = fb.Forecast(
        "wrong",
        ("X",),
        np.stack([np.full((1, n), 0.9), np.full((1, n), 0.9)]),
        fr_probs(["collapse", "collapse"]),
    )
    s = fr.score_all([exact, wrong], held, pilots, design, 64, rng=np.random.default_rng(0))
    m = s["methods"]
    assert m["exact"]["regime_accuracy"] == 1.0 and m["wrong"]["regime_accuracy"] == 0.5
    assert m["exact"]["crps"]["X"] == pytest.approx(0.0, abs=1e-12)
    assert m["wrong"]["crps"]["all"] == pytest.approx((0.4 + 0.9) / 2, abs=1e-12)
    assert m["exact"]["coverage90"]["all"] == 1.0 and m["wrong"]["coverage90"]["all"] == 0.0
    assert m["exact"]["log_score"]["all"] > m["wrong"]["log_score"]["all"]
    # observed boundary between 1e-2 and 1e-1 (-1.5); "wrong" leaves converged at 1e-2 (-2.5)
    assert m["exact"]["boundary_error"]["decades"] == pytest.approx(0.0)
    assert m["wrong"]["boundary_error"]["decades"] == pytest.approx(1.0)
    assert s["summary"]["regime_accuracy"]["heldout"]["wrong"][0] == 0.5


def fr_probs(labels):
    return fb._onehot(labels)


def test_driver_refuses_a_folder_that_is_not_a_study(tmp_path, capsys):
    from paper import forecast_scores

    with pytest.raises(SystemExit) as e:
        forecast_scores.main(["--source", str(tmp_path), "--out", str(tmp_path / "o")])
    assert e.value.code == 2
    assert "is not a finished study" in capsys.readouterr().err


def test_driver_refuses_a_folder_of_other_files(tmp_path, capsys):
    from paper import forecast_scores

    (tmp_path / "keep.txt").write_text("mine")
    src = ROOT / "paper" / "results" / "regime_map"
    with pytest.raises(SystemExit) as e:
        forecast_scores.main(["--source", str(src), "--out", str(tmp_path)])
    assert e.value.code == 2
    assert "did not write" in capsys.readouterr().err
    assert (tmp_path / "keep.txt").read_text() == "mine" and not (tmp_path / "config.json").exists()

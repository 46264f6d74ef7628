"""The demo report's confirmation table: the new-run forecast with its CRPS and whether each
agent fell inside, beside the nearest-pilot baseline (runs written with llm_runs' writer)."""

from __future__ import annotations

import numpy as np
import pytest

from calibrate._demo._report import BASELINE_SAMPLES, compare_confirmation, nearest_pilot
from llm_runs import runlog as rl

STEPS = np.arange(0, 210, 10)


def _run(folder, finals: dict[str, float], n_eval: int = 64):
    manifest = rl.make_manifest(
        run=folder.name, seed=0, agents=list(finals),
        spec={"nodes": list(finals), "edges": []},
        config={"steps": int(STEPS[-1]), "eval_every": 10},
    )  # fmt: skip
    with rl.RunWriter(folder, manifest) as w:
        for s in STEPS:
            w.write(
                {"kind": "agent", "step": int(s), "agent": a,
                 "competence": float(v * (1 - np.exp(-(s + 10) / 30))), "n_eval": n_eval}
                for a, v in finals.items()
            )  # fmt: skip
    return folder


def test_nearest_pilot_in_the_knob_scales_with_its_own_binomial_noise(tmp_path):
    pilots = [
        ({"rl.lr": 1e-3, "rl.staleness": 0}, _run(tmp_path / "a", {"X": 0.5, "Y": 0.9})),
        ({"rl.lr": 1e-2, "rl.staleness": 0}, _run(tmp_path / "b", {"X": 0.1, "Y": 0.2})),
        ({"rl.lr": 1e-3, "rl.staleness": 8}, _run(tmp_path / "c", {"X": 0.3, "Y": 0.6}, 16)),
    ]
    # lr 2e-3 is nearer 1e-3 than 1e-2 in log; lag 1 nearer 0 than 8 in log(1 + k)
    b = nearest_pilot({"rl.lr": 2e-3, "rl.staleness": 1}, pilots)
    assert b["pilot"] == "a"
    x = b["agents"]["X"]
    last = 0.5 * (1 - np.exp(-(200 + 10) / 30))
    assert x["p"] == pytest.approx(last) and x["n_eval"] == 64
    assert x["samples"].shape == (BASELINE_SAMPLES,)
    assert x["samples"].mean() == pytest.approx(last, abs=0.01)
    assert x["samples"].std() == pytest.approx(np.sqrt(last * (1 - last) / 64), rel=0.05)
    assert nearest_pilot({"rl.lr": 1.1e-3, "rl.staleness": 6}, pilots)["pilot"] == "c"
    assert nearest_pilot({"rl.lr": 7e-3, "rl.staleness": 0}, pilots)["pilot"] == "b"


def test_confirmation_scores_the_new_run_forecast_and_the_baseline(tmp_path):
    confirm = _run(tmp_path / "confirm", {"X": 0.8, "Y": 0.5})
    obs = {a: v * (1 - np.exp(-(200 + 10) / 30)) for a, v in {"X": 0.8, "Y": 0.5}.items()}
    rng = np.random.default_rng(0)
    samples = {"X": rng.normal(obs["X"], 0.05, 200), "Y": rng.normal(0.9, 0.02, 200)}

    def entry(a):
        s = samples[a]
        q05, q95 = np.quantile(s, [0.05, 0.95])
        fin = {"mean": float(s.mean()), "q05": float(q05), "q95": float(q95)}
        return {
            "final": fin | {"band": "new_run"},
            "final_new_run": fin | {"samples": list(s)},
            "final_mean_curve": {"q05": fin["mean"] - 0.01, "q95": fin["mean"] + 0.01},
        }

    network = {f"p_{g}": 0.2 for g in ("converged", "oscillating", "collapse", "unsettled",
                                        "failed")}  # fmt: skip
    pred = {"agents": {a: entry(a) for a in "XY"}, "network": network}
    pilots = [({"rl.lr": 1e-3}, _run(tmp_path / "p", {"X": 0.7, "Y": 0.5}))]
    cmp = compare_confirmation(pred, confirm, nearest_pilot({"rl.lr": 2e-3}, pilots))
    x, y = cmp["agents"]["X"], cmp["agents"]["Y"]
    assert x["band"] == "new_run" and x["inside90"] is True and y["inside90"] is False
    # the CRPS of the forecast's samples: small where it is centred, ~|error| where far
    assert x["crps"] < 0.03 and y["crps"] == pytest.approx(0.9 - obs["Y"], abs=0.02)
    assert cmp["baseline_pilot"] == "p"
    assert y["baseline_inside90"] is True and y["baseline_crps"] < y["crps"]
    assert x["baseline_p"] == pytest.approx(0.7 * (1 - np.exp(-210 / 30)))
    assert x["mean_curve_q05"] == pytest.approx(x["predicted_mean"] - 0.01)

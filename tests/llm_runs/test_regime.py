"""Real runs' regimes by simulate's classifier (torch-free): curves of known shape written as
run logs with llm_runs' own writer; a diverged run is a collapse."""

from __future__ import annotations

import numpy as np
import pytest

import llm_runs
from llm_runs import runlog as rl

STEPS = np.arange(0, 610, 10)  # 61 evaluations, as a 600-step run with eval_every 10


def _write(folder, curves: dict[str, np.ndarray], *, status=None, diverged_step=None):
    manifest = rl.make_manifest(
        run=folder.name,
        seed=0,
        agents=list(curves),
        spec={"nodes": list(curves), "edges": []},
        config={"steps": int(STEPS[-1]), "eval_every": 10},
    )
    with rl.RunWriter(folder, manifest) as w:
        for i, s in enumerate(STEPS):
            w.write(
                {"kind": "agent", "step": int(s), "agent": a, "competence": float(c[i]),
                 "n_eval": 64}
                for a, c in curves.items()
            )  # fmt: skip
    if status is not None:
        rl.update_manifest(folder, status=status, diverged_step=diverged_step)
    return folder


def _noisy(p: np.ndarray, seed: int) -> np.ndarray:
    """Binomial probe noise of 64 problems around the true competence p."""
    return np.random.default_rng(seed).binomial(64, np.clip(p, 0, 1)) / 64


def test_saturating_curves_are_converged(tmp_path):
    rise = 0.9 - 0.5 * np.exp(-STEPS / 80)
    run = _write(tmp_path / "conv", {"X": _noisy(rise, 1), "Y": _noisy(rise * 0.95, 2)})
    out = llm_runs.observed_regime(run)
    assert out["regime"] == "converged", out
    assert out["diverged"] is False and out["steps"] == 600


def test_a_competence_driven_to_zero_is_a_collapse(tmp_path):
    fall = 0.64 * np.exp(-STEPS / 40)  # A_X 0.64 -> 0 as with lr 8e-3 (PITFALLS)
    rise = 0.97 - 0.3 * np.exp(-STEPS / 60)
    run = _write(tmp_path / "coll", {"X": _noisy(fall, 3), "Y": _noisy(rise, 4)})
    out = llm_runs.observed_regime(run)
    assert out["regime"] == "collapse" and out["node_regimes"]["X"] == "collapse", out
    assert out["node_regimes"]["Y"] != "collapse"


def test_the_lr_8e3_run_a_new_user_saw_is_a_collapse(tmp_path):
    """Issue 31 §0: C1-AND at lr 8e-3, 200 steps: X 0.64 -> 0.05 by step 40, ending at 0.02,
    Y rising to 0.97, Z 0.62 falling to 0.16 over the last 40 steps. It was labelled
    converged for every agent; X (and Z) collapsed."""
    global STEPS
    saved, STEPS = STEPS, np.arange(0, 201, 10)
    try:
        x = np.interp(STEPS, [0, 40, 200], [0.64, 0.05, 0.02])
        y = np.interp(STEPS, [0, 100, 200], [0.6, 0.95, 0.97])
        z = np.interp(STEPS, [0, 160, 200], [0.62, 0.62, 0.16])
        run = _write(tmp_path / "lr8e-3", {"X": _noisy(x, 7), "Y": _noisy(y, 8), "Z": _noisy(z, 9)})
        out = llm_runs.observed_regime(run)
    finally:
        STEPS = saved
    assert out["regime"] == "collapse", out
    assert out["node_regimes"]["X"] == "collapse" and out["node_regimes"]["Y"] != "collapse"
    assert out["collapse"]["X"]["reference"] >= 0.5 and out["collapse"]["X"]["tail"] < 0.1


def test_an_agent_that_never_learned_has_not_collapsed(tmp_path):
    """Near 0 from the first evaluation on: no fall, so not a collapse (the simulator's
    low-level rule does not apply to measured curves)."""
    low = 0.02 + 0.0 * STEPS
    rise = 0.9 - 0.5 * np.exp(-STEPS / 80)
    out = llm_runs.observed_regime(_write(tmp_path / "low", {"X": _noisy(low, 1), "Y": rise}))
    assert out["node_regimes"]["X"] != "collapse", out


def test_a_persistent_oscillation_is_an_oscillation(tmp_path):
    osc = 0.55 + 0.3 * np.sin(2 * np.pi * STEPS / 120)  # 5 periods, amplitude >> probe noise
    flat = 0.8 + 0.0 * STEPS
    run = _write(tmp_path / "osc", {"X": _noisy(osc, 5), "Y": _noisy(flat, 6)})
    out = llm_runs.observed_regime(run)
    assert out["node_regimes"]["X"] in ("sustained oscillation", "damped oscillation"), out
    assert out["regime"] == out["node_regimes"]["X"]


def test_a_diverged_run_is_a_collapse_whatever_its_curves(tmp_path):
    rise = 0.9 - 0.5 * np.exp(-STEPS / 80)
    run = _write(tmp_path / "div", {"X": rise, "Y": rise}, status="diverged", diverged_step=600)
    out = llm_runs.observed_regime(run)
    assert out == {
        "regime": "collapse",
        "node_regimes": {"X": "collapse", "Y": "collapse"},
        "collapse": {},
        "steps": 600,
        "diverged": True,
    }


def test_too_short_a_log_is_an_error(tmp_path):
    folder = tmp_path / "short"
    manifest = rl.make_manifest(
        run="short", seed=0, agents=["X"], spec={"nodes": ["X"], "edges": []},
        config={"steps": 20, "eval_every": 10},
    )  # fmt: skip
    with rl.RunWriter(folder, manifest) as w:
        for s in (0, 10, 20):
            w.write([{"kind": "agent", "step": s, "agent": "X", "competence": 0.5, "n_eval": 8}])
    with pytest.raises(llm_runs.RunLogError, match="at least 4"):
        llm_runs.observed_regime(folder)


def test_probe_noise_on_a_short_flat_run_is_not_an_oscillation(tmp_path):
    """A 200-step run evaluated every 10 steps whose agents sit at a constant competence,
    measured on 64 probes: labelled converged (the binomial noise level is known), in at
    least 18 of 20 replicates of three agents."""
    global STEPS
    saved, STEPS = STEPS, np.arange(0, 201, 10)
    try:
        labels = []
        for rep in range(20):
            levels = {"X": 0.94, "Y": 0.9, "Z": 0.5}
            curves = {
                a: _noisy(np.full(STEPS.size, p), 100 * rep + i)
                for i, (a, p) in enumerate(levels.items())
            }
            labels.append(llm_runs.observed_regime(_write(tmp_path / f"r{rep}", curves))["regime"])
    finally:
        STEPS = saved
    assert sum(lab == "converged" for lab in labels) >= 18, labels

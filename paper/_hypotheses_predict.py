"""The simulator's predictions for the hypotheses study (driver: paper/hypotheses_study.py),
made once from the C1-AND pilot runs of each task and stored before any test run.

Per task, ``calibrate fit`` (C1, AND, Laplace) of the pilots gives a posterior over the
competence model's rates; up to ``N_DRAWS`` posterior draws are pushed through the model of
every FFL type (the same rates, the type's signs) and the pre-stated measures of
``_hypotheses_metrics`` are computed on the end-to-end proxy (the product of the three
competences) at the evaluation steps. How the perturbations enter the model:

- a reward flip of the pulse condition reverses the input's drive (schedule level -1 for
  its length: the input agent unlearns, the others feel it through the wiring);
- the shift restarts every competence at the pilots' fitted step-0 level ``A0`` (the
  shifted problems taken to be as new as the original ones were at step 0), so the curve
  after the shift is the model's curve from step 0;
- the policy lag ``rl.staleness = k`` is a delay of mean ``k`` steps (4 Erlang stages);
  a run is predicted to oscillate if the classifier labels it a damped or sustained
  oscillation.

A hypothesis is *predicted* when the posterior probability that its statistic is > 0 is at
least 0.95 in every task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from paper._hypotheses_metrics import dip, recovery
from paper._study import fit_pilots, simulator_params, store_once

N_DRAWS = 200
DELAY_STAGES = 4
OSCILLATING = ("damped oscillation", "sustained oscillation")


def _draws(fit_dir: Path) -> list[dict[str, float]]:
    """Up to N_DRAWS posterior draws of the simulator's parameters (observation-model
    parameters dropped)."""
    import calibrate

    params = simulator_params(calibrate.load_fit(fit_dir).params())
    keep = {k: np.asarray(v, float).reshape(-1) for k, v in params.items()}
    total = min(len(v) for v in keep.values())
    idx = np.linspace(0, total - 1, min(N_DRAWS, total)).astype(int)
    return [{k: float(v[i]) for k, v in keep.items()} for i in idx]


def _proxy(models: Any, schedule: Any, t1: float, n_points: int) -> np.ndarray:
    """(draws, T) product of the competences at the evaluation steps."""
    import simulate

    opts = simulate.SolveOptions(n_points=n_points)
    sol = simulate.solve(models, schedule, t1=t1, options=opts, batch="vmap")
    return np.prod(np.asarray(sol.states), axis=-1)


def predict_task(cfg: Any, draws: list[dict[str, float]], *, raw: bool = False) -> dict[str, Any]:
    """Predicted measures per motif (mean and 90 % interval over draws) and statistics
    (``raw``: also every draw's statistics, ``_h1`` and ``_h2``)."""
    import jax
    import jax.numpy as jnp

    import simulate

    n_points = cfg.steps // cfg.eval_every + 1
    steps = np.arange(n_points) * cfg.eval_every
    flips = sorted(
        {float(s) for s in cfg.pulse_starts}
        | {float(s + cfg.pulse_length) for s in cfg.pulse_starts}
    )
    starts = {float(s) for s in cfg.pulse_starts}
    pulse = simulate.Schedule(
        jnp.asarray([0.0, *flips]),
        jnp.asarray([1.0] + [-1.0 if t in starts else 1.0 for t in flips]),
    )
    dips, recs, osc = {}, {}, {}
    for motif in cfg.motifs:
        models = simulate.stack_models([simulate.make_model(motif, "competence", d) for d in draws])
        y_pulse = _proxy(models, pulse, float(cfg.steps), n_points)
        dips[motif] = np.array(
            [dip(steps, y, cfg.pulse_starts, cfg.pulse_length, cfg.eval_every) for y in y_pulse]
        )
        y0 = _proxy(models, None, float(cfg.steps), n_points)
        k = cfg.shift_step // cfg.eval_every
        y_shift = np.concatenate([y0[:, :k], y0[:, : n_points - k]], axis=1)
        recs[motif] = np.array([recovery(steps, y, cfg.shift_step) for y in y_shift])
        if motif in cfg.lag_motifs:
            lagged = [
                simulate.make_model(
                    motif, "competence", d, delay_stages=DELAY_STAGES, tau=float(cfg.lag_staleness)
                )
                for d in draws
            ]
            sol = simulate.solve(
                simulate.stack_models(lagged),
                None,
                t1=float(cfg.steps),
                options=simulate.SolveOptions(n_points=4 * n_points),
                batch="vmap",
            )
            codes, _ = jax.vmap(simulate.classify)(sol)
            names = [simulate.REGIME_NAMES[simulate.Regime(int(c))] for c in np.asarray(codes)]
            osc[motif] = float(np.mean([n in OSCILLATING for n in names]))
    others = [m for m in cfg.motifs if m != "C1"]
    h1 = np.mean([dips[m] for m in others], axis=0) - dips["C1"]
    h2 = recs["I1"] - recs["C1"] if "I1" in recs else np.zeros(len(draws))

    def band(x: np.ndarray) -> dict[str, Any]:
        return {"mean": float(x.mean()), "ci90": np.percentile(x, [5, 95]).tolist()}

    return {
        "dip": {m: band(v) for m, v in dips.items()},
        "recovery": {m: band(v) for m, v in recs.items()},
        "h1_statistic": band(h1),
        "h1_prob_positive": float(np.mean(h1 > 0)),
        "h2_statistic": band(h2),
        "h2_prob_positive": float(np.mean(h2 > 0)),
        "lag_oscillation_fraction": osc,
        "draws": len(draws),
        **({"_h1": h1.tolist(), "_h2": h2.tolist()} if raw else {}),
    }


def make_predictions(cfg: Any, runs: Path, out: Path) -> dict[str, Any]:
    """Fit the pilots of each task and store ``predictions.json`` (once)."""
    return store_once(out / "predictions.json", lambda: _predict_all(cfg, runs, out))


def _predict_all(cfg: Any, runs: Path, out: Path) -> dict[str, Any]:
    import jax

    jax.config.update("jax_enable_x64", True)
    from paper._hypotheses_design import run_name

    doc: dict[str, Any] = {"tasks": {}}
    for task in cfg.tasks:
        pilots = [str(runs / run_name(*j)) for j in cfg.jobs("pilots") if j[1] == task]
        missing = [p for p in pilots if not (Path(p) / "manifest.json").is_file()]
        if missing:
            raise RuntimeError(f"pilot runs missing: {missing}; run --phase pilots first")
        fit_dir = out / f"fit_{task}"
        fit_pilots(pilots, fit_dir, what=f"the {task} pilots")
        res = predict_task(cfg, _draws(fit_dir))
        res["fit"] = str(fit_dir)
        doc["tasks"][task] = res
        print(
            f"  {task}: H1 statistic {res['h1_statistic']['mean']:+.4f} "
            f"(P>0 {res['h1_prob_positive']:.2f}); H2 statistic "
            f"{res['h2_statistic']['mean']:+.4f} (P>0 {res['h2_prob_positive']:.2f}); "
            f"lag oscillation {res['lag_oscillation_fraction']}"
        )
    tasks = doc["tasks"].values()
    lag = doc["tasks"][cfg.lag_task]["lag_oscillation_fraction"]
    doc["predicted"] = {
        "c1_filters_spurious": all(t["h1_prob_positive"] >= 0.95 for t in tasks),
        "i1_adapts_faster": all(t["h2_prob_positive"] >= 0.95 for t in tasks),
        "i1_oscillates_where_c1_does_not": bool(lag.get("I1", 0.0) > lag.get("C1", 0.0)),
    }
    return doc

"""``recommend --space`` on a motif selection (each motif its own fit, or the best fit, or
the stacking mixture) and the spread across seeds of each top candidate.

One module-scoped selection of two laplace fits (C1-AND, I1-AND) of 4 synthetic C1 pilots
whose rates follow ``rho ∝ lr`` (links on ``rl.lr``), with a per-run random effect on rho,
saved as ``calibrate fit --motif C1,I1`` saves it (``selection.json`` + ``fits/LABEL``).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml

import calibrate as cal
from calibrate._recommend._core import recommend_space, recommend_space_from_dir
from calibrate._recommend._eval import weighted_quantile
from calibrate._recommend._motif import MotifFits
from calibrate._recommend._seeds import new_run_draws
from calibrate._solvers import solve_at
from calibrate._space import SearchSpace
from llm_runs.config import TrainConfig, load_config
from simulate import SolveOptions
from tests.calibrate.test_fit import TRUTH

LRS = [1e-4, 3e-4, 1e-3, 3e-3]
STEPS = np.arange(0, 300, 20)
TIGHT = SolveOptions(rtol=1e-9, atol=1e-11)
CFG = dict(method="laplace", chains=1, samples=200, map_starts=2, map_steps=150, dt=5.0)


@pytest.fixture(scope="module")
def sel(tmp_path_factory):
    run_params = [{f"rho[{n}]": TRUTH[f"rho[{n}]"] * lr / 3e-4 for n in "XYZ"} for lr in LRS]
    data = cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(3), steps=STEPS, runs=4, run_params=run_params,
        hyper={"rl.lr": LRS}, n_eval=50,
    )  # fmt: skip
    pilots = {
        run: TrainConfig.from_dict(
            {"rl": {"lr": lr}, "steps": 280, "eval_every": 20, "seed": i, "name": run,
             "network": {"motif": "C1", "gate": "AND"}}
        ).to_dict()
        for i, (run, lr) in enumerate(zip(data.runs, LRS, strict=True))
    }  # fmt: skip
    data = dataclasses.replace(data, configs=pilots)
    hier = cal.Hierarchy(random_effects=("rho",), links=(cal.Link("rho", "rl.lr"),))
    cfg = cal.FitConfig(**CFG, hierarchy=hier)
    s = cal.select(
        data, cal.candidates(["C1", "I1"], ["AND"]), cfg, key=jax.random.key(0), workers=1
    )
    folder = tmp_path_factory.mktemp("motif") / "sel"
    s.save(folder, fits=True, figure=False)
    return s, folder


def _space(**fields):
    return SearchSpace.from_dict({"fields": fields, "budget_steps": 300, "risk": 0.5})


def _predict(post, lr, key, draws):
    p = cal.predict(post, [{"rl.lr": lr}], steps=300, max_draws=draws, key=key, bands=False)
    _, net = p.groups()
    return p.final[0, :, -1], {g: float(v[0]) for g, v in net.items()}


def test_each_motif_is_predicted_by_its_own_fit(sel):
    """Oracle: calibrate.predict on each motif's saved fit, same setting, draws and key."""
    _, folder = sel
    key = jax.random.key(5)
    space = _space(
        **{"rl.lr": {"choices": [3e-4, 2e-3]}, "network.motif": {"choices": ["C1", "I1"]}}
    )
    rec = recommend_space_from_dir(folder, space, max_draws=30, top=4, key=key)
    assert rec["motif_source"] == "own fit per motif: C1 -> C1-AND, I1 -> I1-AND"
    assert len(rec["top"]) == 4
    means = {}
    for row in rec["top"]:
        motif, lr = row["setting"]["network.motif"], row["setting"]["rl.lr"]
        assert row["fits"] == {f"{motif}-AND": 1.0}
        final, net = _predict(cal.load_fit(folder / "fits" / f"{motif}-AND"), lr, key, 30)
        assert row["final"]["mean"] == pytest.approx(float(final.mean()), rel=1e-9)
        q05, q95 = np.quantile(final, [0.05, 0.95])
        assert row["final"]["q05"] == pytest.approx(q05, rel=1e-9)
        assert row["final"]["q95"] == pytest.approx(q95, rel=1e-9)
        for g, v in net.items():
            assert row[f"p_{g}"] == pytest.approx(v, abs=1e-12)
        means[(motif, lr)] = row["final"]["mean"]
    # the two fits do predict differently, so the assignment is tested
    assert max(abs(means[("C1", lr)] - means[("I1", lr)]) for lr in (3e-4, 2e-3)) > 1e-3


def test_stacking_mixture_is_the_weighted_average_of_the_fits(sel):
    s, _ = sel
    ranking = [dict(r, weight=w) for r, w in zip(s.ranking, (0.6, 0.4), strict=True)]
    fits = MotifFits(ranking, s.posteriors.__getitem__, "test")
    key = jax.random.key(2)
    space = _space(**{"rl.lr": {"choices": [3e-4, 1e-3, 3e-3]}})
    rec = recommend_space(fits, space, max_draws=30, top=3, key=key, motif_weights="stacking")
    w = {r["label"]: r["weight"] for r in ranking}
    assert (
        rec["motif_source"]
        == "stacking weights {" + ", ".join(f"{lb}: {v:.3g}" for lb, v in w.items()) + "}"
    )
    for row in rec["top"]:
        lr = row["setting"]["rl.lr"]
        assert row["fits"] == w
        per = {lb: _predict(s.posteriors[lb], lr, key, 30) for lb in w}
        for g in ("converged", "oscillating", "collapse", "unsettled", "failed"):
            want = sum(w[lb] * per[lb][1][g] for lb in w)
            assert abs(row[f"p_{g}"] - want) <= 1e-12, g
        mean = sum(w[lb] * float(per[lb][0].mean()) for lb in w)
        assert row["final"]["mean"] == pytest.approx(mean, rel=1e-12)
        # the mixture's 5 % point lies between the fits' 5 % points (a CDF average)
        q = [float(np.quantile(per[lb][0], 0.05)) for lb in w]
        assert min(q) - 1e-9 <= row["final"]["q05"] <= max(q) + 1e-9
    # best: the selection's best fit alone; stacking on one fit is an error
    best = recommend_space(fits, space, max_draws=30, top=1, key=key)
    assert best["motif_source"] == f"selection best: {s.ranking[0]['label']}"
    with pytest.raises(cal.ConfigError, match="stacking needs a selection folder"):
        recommend_space(s.posteriors["C1-AND"], space, max_draws=5, motif_weights="stacking")


def test_weighted_quantile_equal_weights_is_hazen():
    rng = np.random.default_rng(0)
    v = rng.normal(size=37)
    q = [0.0, 0.01, 0.05, 0.5, 0.95, 1.0]
    got = weighted_quantile(v, np.ones_like(v), q)
    np.testing.assert_allclose(got, np.quantile(v, q, method="hazen"), rtol=0, atol=1e-13)


def test_cli_motif_in_space_best_yaml_and_unknown_motif(sel, tmp_path, capsys):
    _, folder = sel
    from calibrate.__main__ import main

    def run(fields, *extra):
        path = tmp_path / "space.yaml"
        path.write_text(yaml.safe_dump({"fields": fields, "budget_steps": 300, "risk": 0.5}))
        out = tmp_path / "rec"
        code = main(["recommend", str(folder), "--space", str(path), "--out", str(out),
                     "--draws", "20", "--top", "2", *extra])  # fmt: skip
        return code, out, capsys.readouterr()

    # a motif other than the pilots' (C1): predicted by I1's fit and written into best.yaml
    code, out, cap = run({"rl.lr": {"choices": [3e-4, 1e-3]}, "network.motif": {"choices": ["I1"]}})
    assert code == 0, cap.err
    rec = json.loads((out / "recommendation.json").read_text())
    assert rec["motif_source"] == "own fit per motif: I1 -> I1-AND"
    assert "motif: own fit per motif: I1 -> I1-AND" in cap.out and "seed sd" in cap.out
    best = load_config(out / "best.yaml")  # validated by llm_runs.config
    assert (best.network.motif, best.network.gate) == ("I1", "AND")
    assert best.rl.lr == rec["best"]["rl.lr"] and best.steps == 300
    # no motif in the space: predicted by the selection's best fit; best.yaml keeps the
    # pilots' wiring (C1-AND), which every fit of the selection models
    code, out, cap = run({"rl.lr": {"choices": [3e-4, 1e-3]}})
    assert code == 0, cap.err
    rec = json.loads((out / "recommendation.json").read_text())
    label = json.loads((folder / "selection.json").read_text())["best"]
    assert rec["motif_source"] == f"selection best: {label}"
    best = load_config(out / "best.yaml")
    assert (best.network.motif, best.network.gate) == ("C1", "AND")
    code, out, cap = run({"rl.lr": {"choices": [3e-4, 1e-3]}}, "--motif-weights", "stacking")
    assert code == 0, cap.err
    assert json.loads((out / "recommendation.json").read_text())["motif_source"].startswith(
        "stacking weights {"
    )
    # a motif without a fit: exit 2, one error line naming it
    code, _, cap = run({"rl.lr": {"choices": [1e-3]}, "network.motif": {"choices": ["C1", "C3"]}})
    err = cap.err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ")
    assert "network.motif 'C3' has no fit" in err[0] and "C1-AND" in err[0] and "I1-AND" in err[0]


def _oracle_new_runs(post, lr, reps, seed):
    """New runs simulated from the fitted generative model on their own: every posterior
    draw, ``reps`` fresh run effects eps ~ N(0, 1) scaled by the draw's tau, the linked
    log-rates moved by c * log(lr / geometric mean of the pilots), an adaptive solve to
    step 300, then k ~ Binomial(n_eval, A_Z(300)) for the observed final score."""
    cm = post.model
    lay, pr = cm.layout, cm.config.priors
    flat = {k: v.reshape(-1, *v.shape[2:]) for k, v in post.samples.items()}
    rng = np.random.default_rng(seed)
    g = flat["z"].shape[0]
    u = np.asarray(lay.loc) + np.asarray(lay.scale) * flat["z"]  # (G, D)
    x = np.log(lr) - np.mean(np.log(LRS))
    u[:, cm.link_index] += pr.slope_sd * flat["c"] * x
    u = np.repeat(u, reps, axis=0)
    tau = np.exp(np.log(pr.re_median) + pr.re_sd * flat["tau_z"])[:, cm.re_group]
    u[:, cm.re_index] += np.repeat(tau, reps, axis=0) * rng.standard_normal(
        (g * reps, tau.shape[1])
    )
    theta = lay.to_natural(jnp.asarray(u))
    ts = jnp.asarray([0.0, 300.0])
    solve = eqx.filter_jit(jax.vmap(lambda th: solve_at(cm.with_params(th), ts, options=TIGHT)))
    A, ok = solve(theta)
    assert bool(jnp.all(ok))
    mu = np.asarray(A[:, -1, -1]).reshape(g, reps)
    n = int(np.median(cm.n_eval[cm.node_idx == 2]))
    y = rng.binomial(n, np.clip(mu, 0, 1)) / n
    return mu, y, n


def test_seed_spread_matches_a_monte_carlo_oracle(sel):
    """seed_sd (root mean over draws of the seed-to-seed variance of one run's observed
    final score) and the new-run 90 % interval, against new runs simulated directly.

    The fitted run-effect sd is small on these pilots (tau ~ 0.1), so the draws' tau_z are
    moved up by 2 (tau x ~4.5) and the setting is a slow one (lr 1e-4, final ~0.75), where
    run effects move the final score well beyond the evaluation noise (measured: seed_sd
    0.169, oracle 0.170, evaluation noise alone 0.059)."""
    s, _ = sel
    fitted = s.posteriors["C1-AND"]
    post = copy.copy(fitted)
    post.samples = dict(fitted.samples, tau_z=fitted.samples["tau_z"] + 2.0)
    lr = 1e-4
    nr = new_run_draws(post, [{"rl.lr": lr}], steps=300, max_draws=200, key=jax.random.key(1))
    assert nr["replicates"] == 8 and nr["n_eval"] == 50 and nr["y"].shape == (1, 200, 8)
    mu, y, n = _oracle_new_runs(post, lr, reps=16, seed=7)
    sd = float(np.sqrt(np.mean(nr["var"][0])))
    sd_oracle = float(np.sqrt(np.mean(y.var(axis=1, ddof=1))))
    # Monte-Carlo error of either estimate is ~3 %; 12 % is ~3 sigma of the difference
    assert sd == pytest.approx(sd_oracle, rel=0.12)
    np.testing.assert_allclose(
        np.quantile(nr["y"][0], [0.05, 0.95]), np.quantile(y, [0.05, 0.95]), atol=0.03
    )
    # the run effect is in it: well above the evaluation noise alone
    noise = float(np.sqrt(np.mean(mu * (1 - mu) / n)))
    assert sd > 2 * noise
    # the new run's interval is at least as wide as the mean run's posterior interval
    final, _ = _predict(post, lr, jax.random.key(1), 200)
    q05, q95 = np.quantile(final, [0.05, 0.95])
    ny = np.quantile(nr["y"][0], [0.05, 0.95])
    assert ny[1] - ny[0] >= q95 - q05 and ny[0] <= q05 and ny[1] >= q95


def test_seed_spread_without_random_effects_is_the_evaluation_noise(sel):
    """A fit without random effects: seeds differ only by the binomial evaluation noise,
    whose variance given the draw is mu (1 - mu) / n exactly; the note says so."""
    s, _ = sel
    post = s.posteriors["C1-AND"]
    cm = post.model
    hier = dataclasses.replace(cm.config.hierarchy, random_effects=())
    no_re = copy.copy(post)
    no_re.model = dataclasses.replace(
        cm, config=dataclasses.replace(cm.config, hierarchy=hier),
        re_index=np.zeros(0, np.int64), re_group=np.zeros(0, np.int64), re_bases=(),
    )  # fmt: skip
    no_re.samples = {k: v for k, v in post.samples.items() if k in ("z", "c")}
    key = jax.random.key(4)
    nr = new_run_draws(no_re, [{"rl.lr": 1e-3}], steps=300, max_draws=50, key=key)
    assert nr["replicates"] == 1
    final, _ = _predict(no_re, 1e-3, key, 50)  # the mean run (no run effect) of each draw
    np.testing.assert_allclose(np.sort(nr["mu"][0, :, 0]), np.sort(final), rtol=1e-9)
    mu = nr["mu"][0, :, 0]
    np.testing.assert_allclose(nr["var"][0], mu * (1 - mu) / 50, rtol=1e-12)
    rec = recommend_space(no_re, _space(**{"rl.lr": {"choices": [1e-3]}}), max_draws=50, key=key)
    assert "no per-run random effects" in rec["seed_spread"]
    assert rec["top"][0]["final"]["seed_sd"] == pytest.approx(
        float(np.sqrt(np.mean(mu * (1 - mu) / 50))), rel=1e-9
    )


def test_single_fit_with_other_motif_in_space_is_an_error(sel):
    s, _ = sel
    space = _space(**{"rl.lr": {"choices": [1e-3]}, "network.motif": {"choices": ["I1"]}})
    with pytest.raises(cal.ConfigError, match="a single fit predicts only its own motif"):
        recommend_space(s.posteriors["C1-AND"], space, max_draws=5)


def test_docs_example_motif_space_is_valid():
    root = Path(__file__).resolve().parents[2]
    space = SearchSpace.load(root / "docs" / "examples" / "space_motif.yaml")
    assert "network.motif" in {f.name for f in space.fields}

"""``watch``: forecast a running job from its evaluations so far.

Two ways to condition on a run that is still being written:

- **with a pilots' fit** (:func:`prepare`): every posterior draw of the fit gets
  ``replicates`` fresh per-run effects (:func:`calibrate._new_run.fresh_effects`: the fit's
  random effects ``tau * eps`` where it has them, else a jitter of sd ``spread`` on the
  transformed ``rho``, ``delta`` and ``A0`` of every agent), and the resulting new runs are
  pushed through :func:`calibrate.predict` at the run's own setting (its linked
  training-config fields) once: curves on ``[0, horizon]``, final competences with the
  evaluation noise of :mod:`calibrate._new_run` at the run's ``n_eval`` (what the run will
  log, as ``predict``'s new-run band) and :func:`simulate.classify`'s regimes per draw
  (of the noise-free curves). As evaluations arrive
  :func:`forecast` importance-weights those draws by how well their curves match the
  evaluations (a per-run random-effect update: nothing is solved again; ``update="weights"``,
  the default), or, with ``prepare(..., update="laplace")``, refits the run's own parameters
  at every evaluation (a Laplace step with the pilots' posterior and the run effects as its
  prior, :mod:`calibrate._watch._update`) and solves fresh draws of that posterior;
- **without one** (:func:`self_fit`): a small Laplace fit of the run's own evaluations, whose
  draws are pushed through the same predictor and weighted equally.

The weight of a draw is a Gaussian likelihood of each observed competence ``y`` around the
draw's curve ``p``, variance ``p (1 - p) / n_eval + misfit**2``: binomial evaluation noise
plus a model-misfit floor, so that one noisy evaluation of a smooth model cannot make every
draw but one vanish.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np
import pandas as pd

from .._config import ConfigError
from .._covariates import factors, is_product
from .._new_run import band_note, draw_phi, evaluation_noise, fresh_effects, resolve_n_eval
from .._posterior import Posterior
from .._predict._core import link_covariates, predict
from .._predict._knots import check_sd
from ._draws import Forecast as Forecast
from ._draws import WatchDraws as WatchDraws
from ._draws import summarize, with_observed
from ._draws import weighted_quantile as weighted_quantile
from ._update import UPDATES as UPDATES
from ._update import LaplaceWatch as LaplaceWatch
from ._update import forecast_laplace as forecast_laplace
from ._update import prepare_laplace as prepare_laplace

__all__ = [
    "MIN_ESS",
    "UPDATES",
    "Forecast",
    "LaplaceWatch",
    "WatchDraws",
    "forecast",
    "forecast_laplace",
    "prepare",
    "prepare_laplace",
    "run_setting",
    "self_fit",
    "tempered_weights",
]


def run_setting(post: Posterior, hyper: Mapping[str, Any]) -> tuple[dict[str, float], list[str]]:
    """The run's values of the fit's linked fields, and the fields it lacks (predicted at
    the pilots' reference value)."""
    setting: dict[str, float] = {}
    missing: list[str] = []
    for field in link_covariates(post):
        v = hyper.get(field)
        parts = factors(field)  # rl.lr*rl.lr_scale.X: the product of the run's values
        if v is None and is_product(field) and all(hyper.get(f) is not None for f in parts):
            v = float(np.prod([float(hyper[f]) for f in parts]))
        if v is None or not np.isfinite(float(v)):
            missing.append(field)
        else:
            setting[field] = float(v)
    return setting, missing


def _new_runs(post: Posterior, draws: int, replicates: int, spread: float, seed: int):
    """A copy of ``post`` whose draws are ``draws * replicates`` new runs (fresh effects,
    :func:`calibrate._new_run.fresh_effects`: the fit's run effects, and a jitter of sd
    ``spread`` on bases without them), and the new runs' beta-binomial ``phi`` (or None)."""
    cm = post.model
    rng = np.random.default_rng(seed)
    flat = post._flat()
    n_all = flat["z"].shape[0]
    idx = np.sort(rng.choice(n_all, min(draws, n_all), replace=False))
    m = max(1, int(replicates))
    z = np.repeat(flat["z"][idx], m, axis=0)
    tau_z = np.repeat(flat["tau_z"][idx], m, axis=0) if cm.re_index.size else None
    eff = fresh_effects(cm, tau_z, rng, draws=z.shape[0], jitter=spread)
    z = z + eff / np.asarray(cm.layout.scale)  # u = loc + scale * z: an effect e on u is e / scale
    runs = copy.copy(post)
    runs.samples = {"z": z[None]}
    if "c" in flat:
        runs.samples["c"] = np.repeat(flat["c"][idx], m, axis=0)[None]
    phi = draw_phi(cm, np.repeat(flat["z_phi"][idx], m, axis=0) if "z_phi" in flat else None)
    return runs, phi


def prepare(
    post: Posterior,
    setting: Mapping[str, float],
    *,
    steps: float,
    draws: int = 200,
    replicates: int = 4,
    spread: float = 0.3,
    n_points: int = 200,
    key: jax.Array | None = None,
    weighted: bool = True,
    source: str = "the pilots' fit",
    n_eval: int | Mapping[str, int] | None = None,
    update: str = "weights",
    extrapolation_sd: float = 0.0,
) -> WatchDraws | LaplaceWatch:
    """Solve the new-run draws of one setting once (see the module docstring).

    Args:
        post: A fit (the pilots', or the run's own).
        setting: The run's linked training-config fields (as for :func:`calibrate.predict`).
        steps: Horizon: the step whose competence is the forecast's final one.
        draws: Posterior draws used (a random subset when the fit has more).
        replicates: New runs per draw (fresh run effects; 1 with ``spread`` 0 and no
            random effects in the fit).
        spread: Sd of the run-effect jitter on the transformed ``rho``, ``delta``, ``A0`` of
            bases the fit has no random effects for (0: none).
        n_points: Points of each curve on ``[0, steps]``.
        key: PRNG key of the draw subset, the run effects and the evaluation noise.
        weighted: Whether :func:`forecast` weights the draws by the evaluations (False:
            the draws already condition on them, as the run's own fit's).
        source: Where the draws come from, for messages.
        n_eval: Probes per evaluation of the run: one integer or ``{agent: n}`` (default:
            each agent's median ``n_eval`` in the fit's data), for the evaluation noise of
            :attr:`WatchDraws.logged`.
        update: ``weights`` (default: the draws solved here, weighted by :func:`forecast`)
            or ``laplace`` (:func:`prepare_laplace`: ``draws`` draws of the run's own
            Laplace posterior, solved at each :func:`forecast`; ``replicates`` unused).
        extrapolation_sd: Sd of each link's slope change beyond the pilots' range
            (:func:`calibrate.predict`'s bent links; 0, the default: straight links). Each
            new run draws its own bend, which its evaluations then weight like its other
            effects. Only with ``update="weights"``.

    Raises:
        ConfigError: A bad count, spread, horizon, ``n_eval``, update or
            ``extrapolation_sd`` (and predict's own checks).
    """
    if update not in UPDATES:
        raise ConfigError(f"update must be one of {list(UPDATES)}, got {update!r}")
    if check_sd(extrapolation_sd) > 0 and update != "weights":
        raise ConfigError(
            f"extrapolation_sd needs update='weights' (got update={update!r}): the Laplace "
            "update refits straight links only"
        )
    if update == "laplace":
        return prepare_laplace(
            post, setting, steps=steps, draws=draws, spread=spread, n_points=n_points,
            key=key, n_eval=n_eval,
        )  # fmt: skip
    for name, v in (("draws", draws), ("replicates", replicates)):
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
            raise ConfigError(f"{name} must be an integer >= 1, got {v!r}")
    if not (isinstance(spread, int | float) and np.isfinite(spread) and spread >= 0):
        raise ConfigError(f"spread must be a finite number >= 0, got {spread!r}")
    cm = post.model
    n_probe = resolve_n_eval(cm, n_eval)
    seed = 0 if key is None else int(jax.random.randint(key, (), 0, 2**30))
    m = replicates if (spread > 0 or cm.re_index.size) else 1
    runs, phi = _new_runs(post, draws, m, float(spread), seed)
    g = int(runs.samples["z"].shape[1])
    pred = predict(
        runs, [dict(setting)], steps=steps, n_points=n_points, max_draws=g, key=key,
        keep_curves=True, bands=False, band="mean",  # the runs carry their own effects
        extrapolation_sd=extrapolation_sd,
    )  # fmt: skip
    assert pred.curves is not None
    logged = evaluation_noise(
        pred.final[0], n_probe, np.random.default_rng([seed, 3]),
        phi=None if phi is None else phi[pred.draw_index][:, None],
    )  # fmt: skip
    if weighted:
        spread_source = (
            "random_effects" if cm.re_index.size else ("jitter" if spread > 0 else "missing")
        )
        note = f"{band_note('new_run', spread_source)}, weighted by the run's evaluations so far"
    else:
        note = (
            "this run's logged competence (its own fit's posterior uncertainty, evaluation noise)"
        )
    return WatchDraws(
        agents=pred.agents,
        setting=dict(setting),
        t=pred.t,
        curves=pred.curves[0],
        codes=pred.codes[0],
        final=pred.final[0],
        weighted=weighted,
        source=source,
        logged=logged,
        band_note=note,
    )


def _curves_at(wd: WatchDraws, steps: np.ndarray) -> np.ndarray:
    """Every draw's curves at ``steps`` (linear between grid points): ``(G, len, N)``."""
    s = np.clip(np.asarray(steps, float), wd.t[0], wd.t[-1])
    hi = np.clip(np.searchsorted(wd.t, s), 1, wd.t.size - 1)
    lo = hi - 1
    w = ((s - wd.t[lo]) / (wd.t[hi] - wd.t[lo]))[None, :, None]
    return wd.curves[:, lo, :] * (1 - w) + wd.curves[:, hi, :] * w


def log_weights(wd: WatchDraws, obs: pd.DataFrame, misfit: float = 0.05) -> np.ndarray:
    """Log-likelihood of the evaluations ``obs`` (``step, agent, competence, n_eval``) under
    each draw ``(G,)``; -inf for failed draws.

    Raises:
        ConfigError: An agent of ``obs`` is not a node of the fit.
    """
    unknown = sorted(set(obs["agent"]) - set(wd.agents))
    if unknown:
        raise ConfigError(f"the run's agents {unknown} are not nodes of the fit {list(wd.agents)}")
    ll = np.zeros(wd.curves.shape[0])
    for j, a in enumerate(wd.agents):
        o = obs[obs["agent"] == a]
        if o.empty:
            continue
        p = _curves_at(wd, o["step"].to_numpy())[:, :, j]
        y = o["competence"].to_numpy(float)[None, :]
        var = p * (1 - p) / o["n_eval"].to_numpy(float)[None, :] + misfit**2
        ll += np.sum(-0.5 * (y - p) ** 2 / var - 0.5 * np.log(var), axis=1)
    return np.where(np.isfinite(ll), ll, -np.inf)


def forecast(
    wd: WatchDraws | LaplaceWatch,
    obs: pd.DataFrame,
    *,
    misfit: float = 0.05,
    observed: bool = True,
) -> Forecast:
    """The forecast from the evaluations ``obs`` (long table ``step, agent, competence,
    n_eval``, the run's rows so far; empty: the prior forecast at the run's setting):
    importance weights of :class:`WatchDraws`, or the Laplace refit of a
    :class:`LaplaceWatch` (:func:`forecast_laplace`).

    ``observed`` (default): an agent whose evaluations so far have already collapsed by the
    one rule for real runs has P(collapse) 1, and so has the network, whatever the draws say
    (:func:`calibrate._watch._draws.with_observed`); False: the draws' regimes alone.

    Raises:
        ConfigError: A bad ``misfit``, or an agent that is not a node of the fit.
    """
    fc = _forecast(wd, obs, misfit)
    return with_observed(fc, obs) if observed else fc


def _forecast(wd: WatchDraws | LaplaceWatch, obs: pd.DataFrame, misfit: float) -> Forecast:
    if isinstance(wd, LaplaceWatch):
        return forecast_laplace(wd, obs, misfit=misfit)
    if not (isinstance(misfit, int | float) and np.isfinite(misfit) and misfit > 0):
        raise ConfigError(f"misfit must be a finite number > 0, got {misfit!r}")
    ok = np.all(np.isfinite(wd.final), axis=1)
    ll = log_weights(wd, obs, misfit) if wd.weighted and len(obs) else np.zeros(ok.size)
    ll = np.where(ok, ll, -np.inf)
    if not np.isfinite(ll).any():  # every solve failed: weights from the prior
        ll = np.zeros(ok.size)
    w, beta, ess1 = tempered_weights(ll)
    fc = summarize(wd, w, obs)
    return dataclasses.replace(fc, tempered=beta, ess_untempered=ess1) if beta < 1 else fc


#: Fewest effective draws an interval is drawn from; below it the weights degenerated.
MIN_ESS = 20.0


def tempered_weights(ll: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Normalised weights ``exp(beta * ll)``: ``beta = 1`` unless that leaves fewer than
    :data:`MIN_ESS` effective draws (or a quarter of the draws), when the largest ``beta``
    that keeps them (bisection) is taken: one effective draw is no interval (issue 72 §2:
    ``X 0.92 [0.92, 0.92] (ess 1)``), and a tempered update is a wider, honest one.

    Returns:
        The weights, ``beta`` and the effective number of draws at ``beta = 1``.
    """

    def weights(beta: float) -> tuple[np.ndarray, float]:
        x = np.where(np.isfinite(ll), beta * ll, -np.inf)
        w = np.exp(x - x.max())
        w /= w.sum()
        return w, float(1.0 / np.sum(w**2))

    w, ess = weights(1.0)
    need = min(MIN_ESS, np.isfinite(ll).sum() / 4)
    if ess >= need:
        return w, 1.0, ess
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if weights(mid)[1] >= need else (lo, mid)
    return weights(lo)[0], lo, ess


def self_fit(
    obs: pd.DataFrame,
    network: str,
    *,
    steps: float,
    nodes: Sequence[str] | None = None,
    draws: int = 200,
    key: jax.Array | None = None,
) -> WatchDraws:
    """A Laplace fit of the run's own evaluations, solved to the horizon (no weighting).

    Args:
        obs: The run's rows (``run, step, agent, competence, n_eval``).
        network: The network to fit (e.g. ``C1-AND``).
        steps: Horizon in steps.
        nodes: Agent names in the network's node order (default: sorted).
        draws: Posterior draws.
        key: PRNG key.
    """
    from .._config import FitConfig
    from .._curve_data import CurveData
    from .._fit import fit

    key = jax.random.key(0) if key is None else key
    data = CurveData.from_table(obs[["run", "step", "agent", "competence", "n_eval"]])
    cfg = FitConfig(method="laplace", chains=1, samples=draws)
    post = fit(data, network, cfg, key=key, nodes=tuple(nodes) if nodes else None)
    wd = prepare(
        post, {}, steps=steps, draws=draws, replicates=1, spread=0.0, key=key,
        weighted=False, source=f"the run's own Laplace fit ({network})",
    )  # fmt: skip
    assert isinstance(wd, WatchDraws)
    return wd

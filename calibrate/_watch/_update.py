"""``watch --update laplace``: refit the new run's own parameters as its evaluations arrive.

The importance weights of :func:`calibrate._watch.forecast` reuse a fixed set of new-run
draws; on a real run the weight piles onto a handful of them after a few evaluations (the
replay of issue 34: a median of 2 effective draws out of 800 at a run's last evaluation),
and a run whose curve none of the draws follows is never forecast to collapse. This update
moves the draws to the run instead:

1. **prior** (:func:`run_prior`): the new run's transformed parameter vector
   ``u = u_pop + e`` at its setting (the linked fields moved through the fit's links), with
   ``u_pop`` the pilots' posterior draws and ``e`` a fresh run effect
   (:func:`calibrate._new_run.fresh_effects`' story: ``tau * eps`` on the fit's
   random-effect columns, else an ``N(0, spread^2)`` jitter on the transformed ``rho``,
   ``delta`` and ``A0``), as one Gaussian: the mean and covariance of the draws' ``u_pop``
   plus the effects' variance. For a Laplace pilots' fit the draws are Gaussian in the latent
   ``(z, c)`` and ``u_pop`` is linear in them, so the Gaussian is the fit's own (up to its
   importance resampling); for a NUTS fit it is the moment-matched approximation. The
   likelihood below depends on ``u_pop`` and ``e`` only through their sum, so the Laplace
   step on ``u`` is the step on the run's effects with the population part integrated out
   (and the run's evaluations also update the population part, as they should).
2. **Laplace step** (:func:`forecast_laplace`): in whitened coordinates
   ``u = mean + chol @ w`` (prior ``w ~ N(0, I)``), L-BFGS to the MAP of
   ``log N(w; 0, I) + loglik``, then the Hessian by :func:`calibrate._fit.laplace`
   (central differences of the jitted gradient, eigenvalues clipped to ``[1, 1e8]``).
3. **draws**: ``draws`` samples of that Gaussian (the same standard-normal numbers at every
   step of a run, so the forecast moves only as the posterior moves) pushed through
   :func:`calibrate._predict._core.predict_arrays` at the run's horizon: curves, final
   competences (with evaluation noise at the run's ``n_eval``) and regime codes, so that
   P(collapse) is the share of draws that fit the run and collapse. Every draw has weight
   1/draws.

The likelihood is the weights' Gaussian approximation: each competence ``y`` around the
curve ``p`` with variance ``p (1 - p) / n_eval + misfit**2``. The binomial at ``n_eval``
would treat a smooth ODE curve as exact up to sampling noise; the real runs wobble by more
than that (their evaluations move by 0.1-0.3 between evaluations on 64 probes), so a
binomial Laplace step would put the whole posterior on a curve threaded through the last
wobble, the same overconfidence that emptied the weights. The misfit floor keeps the two
updates on one likelihood, so a comparison of them is a comparison of the update alone.

The evaluations are padded (and masked) to a power of two of at least 64 rows, so one
compiled objective serves every step of every run of a fit at one horizon.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from .._config import ConfigError
from .._new_run import JITTER_BASES, draw_phi, evaluation_noise, resolve_n_eval
from .._posterior import Posterior
from .._predict._checks import failed_draws
from .._predict._core import _setting_matrix, predict_arrays
from ._draws import Forecast, WatchDraws, summarize

__all__ = [
    "UPDATES",
    "LaplaceWatch",
    "RunPrior",
    "forecast_laplace",
    "prepare_laplace",
    "run_map",
    "run_prior",
]

#: The update methods of ``watch``: importance weights of fixed draws, or a Laplace refit.
UPDATES = ("weights", "laplace")

_MIN_ROWS = 64  # padded evaluation rows (a power of two at least this)
_P_EPS = 1e-6


@dataclasses.dataclass(frozen=True)
class RunPrior:
    """The Gaussian prior of one new run's transformed parameters at its setting.

    Attributes:
        mean: Prior mean of ``u`` ``(D,)``.
        chol: Lower Cholesky factor of its covariance ``(D, D)``.
        effect_sd: Sd of the fresh run effect per column ``(D,)`` (0: none).
    """

    mean: np.ndarray
    chol: np.ndarray
    effect_sd: np.ndarray


def run_prior(
    post: Posterior,
    setting: Mapping[str, float],
    *,
    draws: int = 200,
    spread: float = 0.3,
    seed: int = 0,
) -> RunPrior:
    """The new run's prior at ``setting`` (see the module docstring, step 1).

    Args:
        post: The pilots' fit.
        setting: The run's linked training-config fields.
        draws: Posterior draws the mean and covariance are taken over (a random subset).
        spread: Sd of the run-effect jitter on the transformed ``rho``, ``delta``, ``A0`` of
            bases without random effects in the fit.
        seed: Seed of the draw subset.
    """
    cm = post.model
    flat = post._flat()
    n_all = flat["z"].shape[0]
    rng = np.random.default_rng([seed, 11])
    idx = np.sort(rng.choice(n_all, min(draws, n_all), replace=False))
    u = np.asarray(cm.layout.loc + cm.layout.scale * flat["z"][idx], float)
    if "c" in flat and cm.link_index.size:
        x = _setting_matrix(post, [dict(setting)])[0] if setting else np.zeros(cm.link_index.size)
        slopes = cm.config.priors.slope_sd * np.asarray(flat["c"][idx], float)
        for r, col in enumerate(np.asarray(cm.link_index)):
            u[:, col] += slopes[:, r] * x[r]
    var_e = np.zeros(cm.layout.size)
    if cm.re_index.size and "tau_z" in flat:
        pr = cm.config.priors
        tau = np.exp(np.log(pr.re_median) + pr.re_sd * np.asarray(flat["tau_z"][idx], float))
        var_e[cm.re_index] = np.mean(tau[:, cm.re_group] ** 2, axis=0)
    jit = np.array([b in JITTER_BASES for b in cm.layout.bases]) & (var_e == 0)
    var_e[jit & (spread > 0)] = float(spread) ** 2
    cov = np.cov(u.T, ddof=1) if u.shape[0] > 1 else np.zeros((u.shape[1],) * 2)
    cov = np.atleast_2d(cov) + np.diag(var_e)
    cov = 0.5 * (cov + cov.T) + 1e-10 * np.eye(cov.shape[0])
    return RunPrior(u.mean(0), np.linalg.cholesky(cov), np.sqrt(var_e))


@dataclasses.dataclass(frozen=True)
class LaplaceWatch:
    """What :func:`forecast_laplace` needs of one run (prepared once).

    Attributes:
        post: The pilots' fit.
        prior: The run's prior (:func:`run_prior`).
        agents: Agent (node) names.
        setting: The run's linked fields.
        t: Steps of the predicted curves ``(T,)`` from 0 to the horizon.
        n_probe: Probes per evaluation per agent ``(N,)`` (evaluation noise of the finals).
        eps: Standard-normal numbers of the draws ``(G, D)`` (the same at every step).
        seed: Seed of the evaluation noise.
        phi: Beta-binomial concentration per draw ``(G,)`` (None: binomial).
        source: Where the draws come from, for messages.
        band_note: What the interval of the final competence holds.
    """

    post: Posterior
    prior: RunPrior
    agents: tuple[str, ...]
    setting: dict[str, float]
    t: np.ndarray
    n_probe: np.ndarray
    eps: np.ndarray
    seed: int
    phi: np.ndarray | None = None
    source: str = "the pilots' fit, refitted to the run (Laplace)"
    band_note: str = ""
    weighted: bool = False  # the draws already condition on the evaluations

    @property
    def draws(self) -> int:
        """Number of draws ``G``."""
        return int(self.eps.shape[0])


def prepare_laplace(
    post: Posterior,
    setting: Mapping[str, float],
    *,
    steps: float,
    draws: int = 200,
    spread: float = 0.3,
    n_points: int = 200,
    key: jax.Array | None = None,
    n_eval: int | Mapping[str, int] | None = None,
    prior_draws: int = 1000,
) -> LaplaceWatch:
    """Prepare the Laplace update of one run (nothing is solved until evaluations arrive).

    Args:
        post: The pilots' fit.
        setting: The run's linked training-config fields.
        steps: Horizon: the step whose competence is the forecast's final one.
        draws: Draws of the run's Laplace posterior pushed through the predictor.
        spread: Sd of the run-effect jitter (as :func:`calibrate._watch.prepare`).
        n_points: Points of each curve on ``[0, steps]``.
        key: PRNG key of the draws and the evaluation noise.
        n_eval: Probes per evaluation of the run (as :func:`calibrate._watch.prepare`).
        prior_draws: Posterior draws the prior's mean and covariance are taken over.

    Raises:
        ConfigError: A bad count, spread, horizon, ``n_points`` or ``n_eval``, or a setting
            field without a link.
    """
    from .._new_run import band_note

    for name, v in (("draws", draws), ("prior_draws", prior_draws)):
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
            raise ConfigError(f"{name} must be an integer >= 1, got {v!r}")
    if not (isinstance(spread, int | float) and np.isfinite(spread) and spread >= 0):
        raise ConfigError(f"spread must be a finite number >= 0, got {spread!r}")
    if not (isinstance(steps, int | float) and np.isfinite(steps) and steps > 0):
        raise ConfigError(f"the horizon (steps) must be a finite number > 0, got {steps!r}")
    if not (isinstance(n_points, int) and n_points >= 8):
        raise ConfigError(f"n_points must be an integer >= 8, got {n_points!r}")
    cm = post.model
    if setting:
        _setting_matrix(post, [dict(setting)])  # the fields' checks, before anything else
    seed = 0 if key is None else int(jax.random.randint(key, (), 0, 2**30))
    prior = run_prior(post, setting, draws=prior_draws, spread=float(spread), seed=seed)
    rng = np.random.default_rng([seed, 7])
    eps = rng.standard_normal((draws, cm.layout.size))
    flat = post._flat()
    phi = None
    if "z_phi" in flat:
        pick = rng.choice(flat["z_phi"].shape[0], draws)
        phi = draw_phi(cm, np.asarray(flat["z_phi"])[pick])
    spread_source = (
        "random_effects" if cm.re_index.size else ("jitter" if spread > 0 else "missing")
    )
    return LaplaceWatch(
        post=post,
        prior=prior,
        agents=tuple(cm.network.names),
        setting=dict(setting),
        t=np.linspace(0.0, float(steps), n_points),
        n_probe=resolve_n_eval(cm, n_eval),
        eps=eps,
        seed=seed,
        phi=phi,
        band_note=f"{band_note('new_run', spread_source)}, refitted to the run's evaluations "
        "so far (Laplace)",
    )


def _padded(lw: LaplaceWatch, obs: pd.DataFrame) -> dict[str, np.ndarray]:
    """The evaluations as fixed-length arrays: grid indices and weight of the linear
    interpolation, node, competence, probes and a mask (padding rows: mask 0)."""
    unknown = sorted(set(obs["agent"]) - set(lw.agents))
    if unknown:
        raise ConfigError(f"the run's agents {unknown} are not nodes of the fit {list(lw.agents)}")
    o = obs.dropna(subset=["competence"])
    n_rows = max(_MIN_ROWS, 1 << max(0, len(o) - 1).bit_length())
    t = lw.t
    s = np.clip(o["step"].to_numpy(float), t[0], t[-1])
    hi = np.clip(np.searchsorted(t, s), 1, t.size - 1)
    lo = hi - 1
    out = {
        "lo": np.zeros(n_rows, np.int32),
        "hi": np.zeros(n_rows, np.int32),
        "frac": np.zeros(n_rows),
        "node": np.zeros(n_rows, np.int32),
        "y": np.full(n_rows, 0.5),
        "n": np.ones(n_rows),
        "mask": np.zeros(n_rows),
    }
    k = len(o)
    out["lo"][:k], out["hi"][:k] = lo, hi
    out["frac"][:k] = (s - t[lo]) / (t[hi] - t[lo])
    out["node"][:k] = [lw.agents.index(a) for a in o["agent"]]
    out["y"][:k] = o["competence"].to_numpy(float)
    out["n"][:k] = np.maximum(o["n_eval"].to_numpy(float), 1.0)
    out["mask"][:k] = 1.0
    return out


_OBJECTIVES: dict[bytes, Any] = {}
#: Times the objective was traced (each trace is one compile): a check on compile counts.
TRACES = [0]


def _objective(t: np.ndarray):
    """The jitted value and gradient of the negative log posterior in ``w`` (one per grid
    ``t``; its compiled programs cached per model structure and padded length)."""
    tk = np.asarray(t, float).tobytes()
    if tk in _OBJECTIVES:
        return _OBJECTIVES[tk]
    tc = np.asarray(t, float)

    def neg(w, cm, mean, chol, ev, misfit):
        TRACES[0] += 1
        u = mean + chol @ w
        A, ok = cm.curves(cm.layout.to_natural(u)[None], ts=tc)
        a = A[0]
        p = a[ev["lo"], ev["node"]] * (1 - ev["frac"]) + a[ev["hi"], ev["node"]] * ev["frac"]
        p = jnp.clip(p, _P_EPS, 1 - _P_EPS)
        var = p * (1 - p) / ev["n"] + misfit**2
        nll = 0.5 * jnp.sum(ev["mask"] * ((ev["y"] - p) ** 2 / var + jnp.log(var)))
        return 0.5 * jnp.sum(w**2) + jnp.where(jnp.all(ok), nll, 1e12)

    fn = eqx.filter_jit(jax.value_and_grad(neg))
    _OBJECTIVES[tk] = fn
    return fn


class _WFlat:
    """The one latent site ``w`` as :func:`calibrate._fit.laplace` reads it."""

    names = ("w",)

    def flatten(self, params) -> np.ndarray:
        return np.asarray(params["w"], float)


def run_map(
    lw: LaplaceWatch, obs: pd.DataFrame, *, misfit: float = 0.05, max_iter: int = 200
) -> tuple[np.ndarray, np.ndarray]:
    """The Laplace step: the MAP of the whitened parameters ``w`` and its covariance."""
    from scipy.optimize import minimize

    from .._fit import laplace

    cm = lw.post.model
    d = cm.layout.size
    if not len(obs.dropna(subset=["competence"])):
        return np.zeros(d), np.eye(d)
    ev = {k: jnp.asarray(v) for k, v in _padded(lw, obs).items()}
    vg = _objective(lw.t)
    mean, chol = jnp.asarray(lw.prior.mean), jnp.asarray(lw.prior.chol)

    def fun(x):
        v, g = vg(jnp.asarray(x, float), cm, mean, chol, ev, float(misfit))
        v, g = float(v), np.asarray(g, float)
        if not np.isfinite(v):
            return 1e12, np.zeros_like(g)
        return v, np.where(np.isfinite(g), g, 0.0)

    res = minimize(fun, np.zeros(d), jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    w = np.asarray(res.x, float) if np.isfinite(res.fun) else np.zeros(d)
    _, cov = laplace(cm, {"w": w}, objective=(_WFlat(), fun))  # type: ignore[arg-type]
    return w, cov


def forecast_laplace(lw: LaplaceWatch, obs: pd.DataFrame, *, misfit: float = 0.05) -> Forecast:
    """The forecast from the run's evaluations ``obs`` (``step, agent, competence, n_eval``;
    empty: the prior forecast) by the Laplace update (see the module docstring).

    Raises:
        ConfigError: A bad ``misfit``, or an agent that is not a node of the fit.
    """
    if not (isinstance(misfit, int | float) and np.isfinite(misfit) and misfit > 0):
        raise ConfigError(f"misfit must be a finite number > 0, got {misfit!r}")
    cm = lw.post.model
    w, cov = run_map(lw, obs, misfit=float(misfit))
    wl = np.linalg.cholesky(cov + 1e-12 * np.eye(cov.shape[0]))
    u = lw.prior.mean + (w + lw.eps @ wl.T) @ lw.prior.chol.T  # (G, D)
    n_l = int(cm.link_index.size)
    out = predict_arrays(
        cm, u, np.zeros((u.shape[0], n_l)), np.zeros((1, n_l)), lw.t,
        keep_curves=True, bands=False,
    )  # fmt: skip
    final, codes, _ = failed_draws(out["final"], out["codes"], out.get("curves"))
    curves = np.asarray(out["curves"])[0]
    curves = np.where(np.isfinite(final[0]).all(1)[:, None, None], curves, np.nan)
    logged = evaluation_noise(
        final[0], lw.n_probe, np.random.default_rng([lw.seed, 3]),
        phi=None if lw.phi is None else lw.phi[:, None],
    )  # fmt: skip
    wd = WatchDraws(
        agents=lw.agents, setting=lw.setting, t=lw.t, curves=curves, codes=codes[0],
        final=final[0], weighted=False, source=lw.source, logged=logged,
        band_note=lw.band_note,
    )  # fmt: skip
    ok = np.all(np.isfinite(wd.final), axis=1)  # every draw that solved, weighted equally
    w = ok / max(ok.sum(), 1) if ok.any() else np.full(ok.size, 1.0 / ok.size)
    return summarize(wd, w, obs, update="laplace")

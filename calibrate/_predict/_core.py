"""``predict``: forecast runs that have not been made, from a fit with hyperparameter links.

A setting is a dict of training-config fields (``{"rl.lr": 3e-4}``), each the covariate of
a fitted log-linear link ``log theta = a + c log(h / h_ref)`` (``h_ref``: the geometric mean
of the pilots' values). For every posterior draw the setting moves the linked parameters
from their reference values; linked fields a setting leaves out stay at ``h_ref`` (zero
contribution). The mean curve leaves the random effects out (population median); the
default forecast, one new run (``band="new_run"``), draws fresh ones and adds seed spread
and evaluation noise (:mod:`calibrate._new_run`). The competence curves of
all settings × draws are solved by one compiled function (``lax.map`` over settings, each
a vmap over draws; cached across calls and sharded over the devices, see
:mod:`calibrate._predict._fast`) and reduced there to bands, final competences and the
regimes of :func:`simulate.classify`, so 10^4 settings × 200 draws never hold every curve
in memory (``bands=False`` skips the per-step bands, the costliest part).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np

from .._config import ConfigError
from .._covariates import expand_settings
from .._knobs import check_value, transform_values
from .._model import CurveModel
from .._new_run import replicate_spread, resolve_n_eval
from .._posterior import Posterior
from .._solvers import fixed_substeps
from . import _band_points
from ._checks import check_size, collapse_floor, extrapolation, failed_draws, pilot_distance
from ._fast import BAND_LEVELS as BAND_LEVELS
from ._fast import curve_regimes as curve_regimes
from ._fast import predict_batch
from ._knots import bend_links, check_sd, knot_matrix
from ._new_run import solve_new_run
from ._pages import plain_pages
from ._prediction import BANDS
from ._prediction import REGIME_GROUPS as REGIME_GROUPS
from ._prediction import Prediction as Prediction

__all__ = ["Prediction", "curve_regimes", "link_covariates", "predict", "predict_arrays"]


def link_covariates(post: Posterior) -> dict[str, float]:
    """Linked training-config fields of a fit and their reference values
    ``h_ref = T^-1(mean T(h))`` over the pilots (``T`` the link's transform: the geometric
    mean for ``log``, ``exp(mean log(1 + h)) - 1`` for ``log1p``, the mean for ``linear``),
    read from the fit's link records (:attr:`calibrate.CurveModel.link_rows`)."""
    return {r.covariate: r.reference for r in post.model.link_rows}


def _row_covariates(cm: CurveModel) -> list[str]:
    """Covariate of each slope row (from the fit's link records)."""
    return [r.covariate for r in cm.link_rows]


def _setting_matrix(post: Posterior, settings: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Per setting and slope row, ``T(h) - mean_pilots T(h)`` (``log(h / h_ref)`` for a
    ``log`` link): shape ``(S, L)``.

    Raises:
        ConfigError: No settings, a field without a link, or a value outside its link
            transform's domain (``log``: a finite number > 0; ``log1p``: >= 0).
    """
    if isinstance(settings, Mapping) or not len(settings):
        raise ConfigError("predict needs a non-empty sequence of settings (dicts of fields)")
    settings = _expanded(post, settings)
    refs = link_covariates(post)
    given = sorted({str(k) for s in settings for k in s})
    unlinked = [f for f in given if f not in refs]
    if unlinked:
        known = [f for f in unlinked if post.hyper is not None and f in post.hyper]
        hint = f" ({known} vary in the data but have no link: refit with hierarchy.links)"
        hint = hint if known else ""
        raise ConfigError(
            f"the fit has no hyperparameter link for field(s) {unlinked}{hint}; "
            f"linked fields: {sorted(refs) or 'none'}"
        )
    transforms = post.model.config.hierarchy.transforms
    centre = {r.covariate: r.center for r in post.model.link_rows}  # as the fit stored it
    rows = _row_covariates(post.model)
    x = np.zeros((len(settings), len(rows)))
    for i, s in enumerate(settings):
        for f, v in s.items():
            tv = transform_values(transforms[f], check_value(transforms[f], v, f))
            for r, cov in enumerate(rows):
                if cov == f:
                    x[i, r] = float(tv) - centre[f]
    return x


def _draw_index(post: Posterior, max_draws: int, key: jax.Array | None) -> np.ndarray:
    """A random subset of at most ``max_draws`` posterior draws (flat indices)."""
    if not (isinstance(max_draws, int) and max_draws >= 1):
        raise ConfigError(f"max_draws must be an integer >= 1, got {max_draws!r}")
    n = int(np.prod(post.shape))
    rng = np.random.default_rng(0 if key is None else int(jax.random.randint(key, (), 0, 2**30)))
    return rng.choice(n, min(max_draws, n), replace=False)


def predict_arrays(
    cm: CurveModel,
    u: np.ndarray,
    slopes: np.ndarray,
    x: np.ndarray,
    t: np.ndarray,
    *,
    keep_curves: bool = False,
    batch: int | None = None,
    bands: bool = True,
    shard: bool = True,
    dtype: str = "float64",
    band_steps: np.ndarray | None = None,
    curve_steps: np.ndarray | None = None,
    mean_draws: int | None = None,
) -> dict[str, np.ndarray]:
    """The batched predictor: curves of every setting × draw, reduced per setting.

    Args:
        cm: The fitted model.
        u: Reference parameters of each draw on the transformed scale, ``(G, D)``.
        slopes: Natural link slopes of each draw, ``(G, L)``.
        x: ``log(h / h_ref)`` per setting and slope row, ``(S, L)``.
        t: Steps at which curves are evaluated (input on from 0), ``(T,)``.
        keep_curves: Also return every draw's curves (``(S, G, T, N)``; small S only).
        batch: Settings solved together (a vmap of ``batch × G`` solves; default about
            400 solves).
        bands: Also the per-step mean and quantile bands (most of the cost of thousands
            of settings: a sort of the draws at every step).
        shard: Split the settings over all devices of JAX's default backend.
        dtype: ``float64`` (default) or ``float32`` (faster, ~1e-6 less accurate).
        band_steps: The bands at these step indices only, linear in between (None: all).
        curve_steps: With ``keep_curves``, the curves at these step indices only, with
            ``curve_ok`` (every step finite and in range).
        mean_draws: With ``curve_steps``, also the per-step ``mean`` of the first
            ``mean_draws`` draws.

    Returns:
        ``final`` ``(S, G, N)``, ``codes`` ``(S, G, N)`` (per-node :class:`simulate.Regime`),
        ``mean`` ``(S, T, N)`` and ``bands`` ``(S, 4, T, N)`` at :data:`BAND_LEVELS` if
        ``bands``, and ``curves`` if asked.
    """
    t = np.asarray(t, dtype=float)
    return predict_batch(
        cm,
        np.asarray(u, dtype=float),
        np.asarray(slopes, dtype=float),
        np.asarray(x, dtype=float),
        t,
        fixed_substeps(t, cm.config.dt),
        keep_curves=keep_curves,
        bands=bands,
        batch=batch,
        shard=shard,
        dtype=dtype,
        band_steps=band_steps,
        curve_steps=curve_steps,
        mean_draws=mean_draws,
    )


@plain_pages()  # fresh large host arrays are slow to fault in as huge pages
def predict(
    post: Posterior,
    settings: Sequence[Mapping[str, Any]],
    *,
    steps: float | None = None,
    n_points: int = 200,
    max_draws: int = 200,
    key: jax.Array | None = None,
    keep_curves: bool = False,
    bands: bool = True,
    dtype: str = "float64",
    band: str = "new_run",
    n_eval: int | Mapping[str, int] | None = None,
    band_points: int | None = None,
    extrapolation_sd: float = 0.0,
) -> Prediction:
    """Predict the competence curves and regimes of training settings through the links.

    Two forecasts (see :mod:`calibrate._new_run`): the *mean curve* (the population-median
    run's expected competence; posterior uncertainty only), always computed, and *one new
    run* (``band="new_run"``, the default): what one more run at the setting will log,
    with fresh per-run effects, seed spread learned from pilot replicates (or said to be
    missing) and binomial evaluation noise at ``n_eval`` probes. ``band="mean"`` skips the
    new run (one solve per draw instead of two for a fit with random effects).

    Args:
        post: A fit whose hierarchy links the settings' fields.
        settings: Dicts of dotted training-config fields to values, e.g.
            ``[{"rl.lr": 3e-4}, {"rl.lr": 1e-3}]``; every field must be a link covariate.
        steps: Horizon in steps, > 0 (default: the data's last step).
        n_points: Points of each curve on ``[0, steps]`` (>= 8).
        max_draws: Posterior draws used (a random subset when the fit has more).
        key: PRNG key for the draw subset (keyword-only).
        keep_curves: Keep every draw's curves in :attr:`Prediction.curves`.
        bands: Compute the per-step mean curves and 50/90 % bands. False leaves them out
            (:attr:`Prediction.mean` and ``bands`` None) and keeps final competences and
            regimes: for thousands of settings, where the bands (a sort of the draws at
            every step) cost more than the solves.
        dtype: ``float64`` (default), or ``float32``: about 2x faster, curves ~1e-6 less
            accurate (regimes on the edge of a label's threshold may flip).
        band: ``new_run`` (default) or ``mean``: the forecast the prediction headlines.
        n_eval: Probes per evaluation of the new run: one integer, or ``{agent: n}``
            (default: each agent's median ``n_eval`` in the pilots' logs).
        band_points: None (default): the bands (and the new run's per-step mean) at every
            step. An integer ``K >= 2``: computed at ``K`` evenly spaced steps (the first
            and the last among them) and interpolated linearly in between, the arrays'
            shapes unchanged (:mod:`calibrate._predict._band_points`); the mean curve's
            ``mean`` stays exact at every step. For thousands of settings, where the
            per-step bands cost most. With a binomial likelihood and probe counts up to
            256 the new run's evaluation noise at those steps is drawn inside the
            compiled program (exact binomial draws from random bits,
            :mod:`calibrate._predict._banded`), so its Monte Carlo draws are not those of
            the per-step band; its final values are.
        extrapolation_sd: Sd of the change of each link's slope beyond the pilots' range
            (>= 0; 0, the default: the log-linear link holds everywhere). A link is known
            only where the pilots are: with ``s > 0`` each draw's link bends at the edges
            of the pilots' range of its field by a slope change ``~ N(0, s^2)`` per slope
            row (on the link's scale, e.g. per unit of ``log h``), which the pilots cannot
            inform, so both bands widen with the distance beyond the range and are
            unchanged inside it (:func:`calibrate._predict._knots.bend_links`).

    Returns:
        A :class:`Prediction`.

    Raises:
        ConfigError: No settings, an unlinked field, a value that is not a finite number
            > 0, a horizon that is not a finite number > 0, too few points, another
            dtype, another band, an ``n_eval`` that is not an integer >= 1, or a
            ``band_points`` that is not an integer >= 2.
    """
    cm = post.model
    x = _setting_matrix(post, settings)
    if steps is not None and not (
        isinstance(steps, int | float | np.number)
        and not isinstance(steps, bool)
        and math.isfinite(float(steps))
        and float(steps) > 0
    ):
        raise ConfigError(f"the horizon (steps) must be a finite number > 0, got {steps!r}")
    if not (isinstance(n_points, int) and n_points >= 8):
        raise ConfigError(f"n_points must be an integer >= 8, got {n_points!r}")
    if band not in BANDS:
        raise ConfigError(f"band must be one of {list(BANDS)}, got {band!r}")
    n_probe = resolve_n_eval(cm, n_eval)
    steps_b = _band_points.band_steps(n_points, band_points)
    idx = _draw_index(post, max_draws, key)
    u, slopes = _draw_arrays(post, idx)
    if check_sd(extrapolation_sd) > 0:  # links bent beyond the pilots' range
        beyond = knot_matrix(cm, _pilot_values(post), x)
        cm, slopes, x = bend_links(cm, slopes, x, beyond, extrapolation_sd, seed=_seed(key))
    t = np.linspace(0.0, float(cm.ts[-1] if steps is None else steps), n_points)
    draws = 2 * idx.size if band == "new_run" and cm.re_index.size else idx.size
    check_size(t, fixed_substeps(t, cm.config.dt), draws)  # before any solve
    extra: dict[str, Any] = {}
    if band == "new_run":
        spread = replicate_spread(cm, post.hyper)
        flat = post._flat()
        out = solve_new_run(
            predict_arrays, cm, {k: flat[k][idx] for k in ("tau_z", "z_phi") if k in flat},
            u, slopes, x, t, bands=bool(bands), keep_curves=keep_curves, n_eval=n_probe,
            spread=spread, seed=_seed(key), dtype=dtype, band_steps=steps_b,
        )  # fmt: skip
        final, codes = out["final"], out["codes"]
        extra = {k: out.get(k) for k in ("new_final", "new_codes", "new_mean", "new_bands")}
        extra |= {"n_eval": n_probe, "seed_spread": spread.to_dict(tuple(cm.network.names))}
    else:
        out = predict_arrays(
            cm, u, slopes, x, t, keep_curves=keep_curves, bands=bool(bands), dtype=dtype,
            band_steps=steps_b,
        )  # fmt: skip
        final, codes, bad = failed_draws(out["final"], out["codes"], out.get("curves"))
        for k in ("mean", "bands", "curves"):
            if out.get(k) is not None and bad.any():  # no band through failed solves
                shape = (-1,) + (1,) * (out[k].ndim - 1)
                out[k] = np.where(bad.any(1).reshape(shape), np.nan, out[k])
    return Prediction(
        settings=tuple(dict(s) for s in settings),
        reference=link_covariates(post),
        agents=tuple(cm.network.names),
        t=t,
        mean=out.get("mean"),
        bands=out.get("bands"),
        final=final,
        codes=codes,
        draw_index=idx,
        curves=out.get("curves"),
        extrapolation=tuple(_extrapolation(post, settings)),
        distance=tuple(_distance(post, settings)),
        collapse_floor=tuple(_floor(post, settings)),
        band=band,
        extrapolation_sd=float(extrapolation_sd),
        **extra,
    )


def _seed(key: jax.Array | None) -> int:
    """The seed of a prediction's noise streams (0 without a key)."""
    return 0 if key is None else int(jax.random.randint(key, (), 0, 2**30))


def _pilot_values(post: Posterior) -> dict[str, np.ndarray]:
    """Per linked field, its transformed values over the fit's runs."""
    transforms = post.model.config.hierarchy.transforms
    hv = post.hyper or {}
    return {f: transform_values(transforms[f], hv[f]) for f in link_covariates(post)}


def _expanded(post: Posterior, settings: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Settings in the fit's covariates (a product ``a*b`` from its fields)."""
    return expand_settings(settings, link_covariates(post), post.hyper)


def _extrapolation(post: Posterior, settings: Sequence[Mapping[str, Any]]):
    transforms = post.model.config.hierarchy.transforms
    pilots = _pilot_values(post)
    given = [{f: float(transform_values(transforms[f], float(v))) for f, v in s.items()}
             for s in _expanded(post, settings)]  # fmt: skip
    return extrapolation(pilots, given)


def _transformed(post: Posterior, settings: Sequence[Mapping[str, Any]]) -> list[dict]:
    transforms = post.model.config.hierarchy.transforms
    return [{f: float(transform_values(transforms[f], float(v))) for f, v in s.items()}
            for s in _expanded(post, settings)]  # fmt: skip


def _distance(post: Posterior, settings: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """How far each setting lies from the pilots (knob units and pilot spreads)."""
    hv = post.hyper or {}
    raw = {f: np.asarray(hv[f], float) for f in link_covariates(post) if f in hv}
    return pilot_distance(raw, post.model.config.hierarchy.transforms, _expanded(post, settings))


def _floor(post: Posterior, settings: Sequence[Mapping[str, Any]]) -> list[float]:
    """The least P(collapse) the pilots leave open at each setting (0 inside their range)."""
    return collapse_floor(_pilot_values(post), _transformed(post, settings))


def _draw_arrays(post: Posterior, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reference parameters (transformed scale) ``(G, D)`` and natural slopes ``(G, L)``."""
    cm = post.model
    flat = post._flat()
    u = cm.layout.loc + cm.layout.scale * flat["z"][idx]
    if "c" in flat:
        slopes = cm.config.priors.slope_sd * flat["c"][idx]
    else:
        slopes = np.zeros((idx.size, 0))
    return np.asarray(u, float), np.asarray(slopes, float)

"""``predict``: forecast runs that have not been made, from a fit with hyperparameter links.

A setting is a dict of training-config fields (``{"rl.lr": 3e-4}``), each the covariate of
a fitted log-linear link ``log theta = a + c log(h / h_ref)`` (``h_ref``: the geometric mean
of the pilots' values). For every posterior draw the setting moves the linked parameters
from their reference values; linked fields a setting leaves out stay at ``h_ref`` (zero
contribution); random effects are left out (population median). The competence curves of
all settings × draws are solved by one compiled function (``lax.map`` over settings, each
a vmap over draws; cached across calls and sharded over the devices, see
:mod:`calibrate._predict_fast`) and reduced there to bands, final competences and the
regimes of :func:`simulate.classify`, so 10^4 settings × 200 draws never hold every curve
in memory (``bands=False`` skips the per-step bands, the costliest part).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np

from ._config import ConfigError
from ._knobs import check_value, reference_value, transform_values
from ._model import CurveModel
from ._posterior import Posterior
from ._predict_checks import EXTRAPOLATION_FLAG, check_size, extrapolation, failed_draws
from ._predict_fast import BAND_LEVELS as BAND_LEVELS
from ._predict_fast import curve_regimes as curve_regimes
from ._predict_fast import predict_batch
from ._solvers import fixed_substeps

#: Regime groups reported by predictions (simulate.Regime codes of each); they partition the
#: codes: ``converged`` settles without oscillating (overshoot/pulse included).
REGIME_GROUPS: dict[str, tuple[int, ...]] = {
    "converged": (0, 1),
    "oscillating": (2, 3),
    "collapse": (4,),
    "unsettled": (6,),
    "failed": (5,),
}

__all__ = ["Prediction", "curve_regimes", "link_covariates", "predict", "predict_arrays"]


def link_covariates(post: Posterior) -> dict[str, float]:
    """Linked training-config fields of a fit and their reference values
    ``h_ref = T^-1(mean T(h))`` over the pilots (``T`` the link's transform: the geometric
    mean for ``log``, ``exp(mean log(1 + h)) - 1`` for ``log1p``, the mean for ``linear``).

    Raises:
        ConfigError: The fit does not carry a linked field's per-run values.
    """
    transforms = post.model.config.hierarchy.transforms
    out: dict[str, float] = {}
    for name in _row_covariates(post.model):
        if name not in out:
            hv = post.hyper
            if hv is None or name not in hv:
                raise ConfigError(f"the fit does not carry hyperparameter {name!r}")
            out[name] = reference_value(transforms[name], hv[name])
    return out


def _row_covariates(cm: CurveModel) -> list[str]:
    """Covariate of each slope row (link names read ``c[rho[X]~lr]``)."""
    return [n[2:-1].split("]~", 1)[1] for n in cm.link_names]


def _setting_matrix(post: Posterior, settings: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Per setting and slope row, ``T(h) - mean_pilots T(h)`` (``log(h / h_ref)`` for a
    ``log`` link): shape ``(S, L)``.

    Raises:
        ConfigError: No settings, a field without a link, or a value outside its link
            transform's domain (``log``: a finite number > 0; ``log1p``: >= 0).
    """
    if isinstance(settings, Mapping) or not len(settings):
        raise ConfigError("predict needs a non-empty sequence of settings (dicts of fields)")
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
    hv = post.hyper or {}  # link_covariates checked that it holds every linked field
    centre = {f: float(np.mean(transform_values(transforms[f], hv[f]))) for f in refs}
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
            2000 solves).
        bands: Also the per-step mean and quantile bands (most of the cost of thousands
            of settings: a sort of the draws at every step).
        shard: Split the settings over all devices of JAX's default backend.
        dtype: ``float64`` (default) or ``float32`` (faster, ~1e-6 less accurate).

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
    )


@dataclasses.dataclass(frozen=True)
class Prediction:
    """Predicted curves and regimes of settings (arrays indexed setting, [draw], step, agent).

    Attributes:
        settings: The settings, as given.
        reference: Every linked field's reference value (used where a setting omits it).
        agents: Agent (node) names.
        t: Steps of the curves.
        mean: Posterior mean curves ``(S, T, N)`` (None if predicted with ``bands=False``).
        bands: Quantile curves ``(S, 4, T, N)`` at :data:`BAND_LEVELS` (None likewise).
        final: Final competence per draw ``(S, G, N)``.
        codes: Per-node regime code per draw ``(S, G, N)`` (:class:`simulate.Regime`).
        draw_index: The flat posterior draws used ``(G,)``.
        curves: Every draw's curves ``(S, G, T, N)`` when asked, else None.
        extrapolation: Per setting, each field's distance outside the pilots' range in
            units of their spread (:func:`~calibrate._predict_checks.extrapolation`).

    A draw whose competence leaves [0, 1] (or is not finite) is a failed solve: its codes
    are ``failed``, its ``final`` NaN, and a setting with such draws has NaN bands.
    """

    settings: tuple[dict[str, Any], ...]
    reference: dict[str, float]
    agents: tuple[str, ...]
    t: np.ndarray
    mean: np.ndarray | None
    bands: np.ndarray | None
    final: np.ndarray
    codes: np.ndarray
    draw_index: np.ndarray
    curves: np.ndarray | None = None
    extrapolation: tuple[dict[str, float], ...] = ()

    def regime_probs(self) -> tuple[np.ndarray, np.ndarray]:
        """Per agent ``(S, N, 7)`` and network ``(S, 7)`` regime probabilities by code;
        the network's regime per draw is its most severe node's, as in classify."""
        from simulate._analysis import REGIME_NAMES, REGIME_SEVERITY

        k = len(REGIME_NAMES)
        onehot = self.codes[..., None] == np.arange(k)  # (S, G, N, K)
        sev = np.asarray(REGIME_SEVERITY)
        worst = np.take_along_axis(self.codes, np.argmax(sev[self.codes], -1)[..., None], -1)
        net = worst[..., 0][..., None] == np.arange(k)
        return onehot.mean(axis=1), net.mean(axis=1)

    def groups(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Grouped regime probabilities per agent ``(S, N)`` and network ``(S,)``:
        ``converged`` (converged or overshoot/pulse: settles without oscillating),
        ``oscillating`` (damped or sustained), ``collapse``, ``unsettled``, ``failed``;
        they sum to 1."""
        per, net = self.regime_probs()
        return (
            {g: per[..., list(c)].sum(-1) for g, c in REGIME_GROUPS.items()},
            {g: net[..., list(c)].sum(-1) for g, c in REGIME_GROUPS.items()},
        )

    def to_dict(self, curves: bool = True) -> dict[str, Any]:
        """A JSON-ready summary (``curves=False``, or a prediction without bands, leaves the
        band curves out)."""
        import simulate

        curves = curves and self.mean is not None and self.bands is not None

        names = [simulate.REGIME_NAMES[simulate.Regime(i)] for i in range(7)]
        per, net = self.regime_probs()
        gp, gn = self.groups()
        q05, q95, fm = _final_stats(self.final)
        rows = []
        for s, setting in enumerate(self.settings):
            agents = {}
            for j, a in enumerate(self.agents):
                d: dict[str, Any] = {
                    "final": {"mean": fm[s, j], "q05": q05[s, j], "q95": q95[s, j]},
                    **{f"p_{g}": gp[g][s, j] for g in gp},
                    "regimes": dict(zip(names, per[s, j], strict=True)),
                }
                if curves and self.mean is not None and self.bands is not None:
                    d["curve"] = {"mean": self.mean[s, :, j]} | {
                        f"q{round(lv * 100):02d}": self.bands[s, i, :, j]
                        for i, lv in enumerate(BAND_LEVELS)
                    }
                agents[a] = d
            network = {f"p_{g}": gn[g][s] for g in gn} | {
                "regimes": dict(zip(names, net[s], strict=True))
            }
            far = self.extrapolation[s] if self.extrapolation else {}
            flag = any(v > EXTRAPOLATION_FLAG for v in far.values())
            rows.append(
                {"setting": setting, "agents": agents, "network": network,
                 "extrapolation": far, "extrapolated": flag}
            )  # fmt: skip
        return simulate.jsonable(
            {
                "reference": self.reference,
                "draws": int(self.draw_index.size),
                "horizon_steps": float(self.t[-1]),
                "steps": self.t if curves else None,
                "predictions": rows,
            }
        )

    def table(self) -> list[str]:
        """Terminal lines: per setting and agent, final competence and regime probabilities."""
        gp, _ = self.groups()
        q05, q95, fm = _final_stats(self.final)
        head = (f"{'agent':<10}{'final [q05, q95]':>26}{'conv':>7}{'osc':>7}{'coll':>7}"
                f"{'unset':>7}{'fail':>7}")  # fmt: skip
        lines = []
        for s, setting in enumerate(self.settings):
            lines.append(", ".join(f"{k}={v:g}" for k, v in setting.items()) or "(reference)")
            lines.append(head)
            for j, a in enumerate(self.agents):
                fin = f"{fm[s, j]:.3f} [{q05[s, j]:.3f}, {q95[s, j]:.3f}]"
                fin = fin if np.isfinite(fm[s, j]) else "failed (every draw)"
                ps = "".join(f"{gp[g][s, j]:>7.2f}" for g in REGIME_GROUPS)
                lines.append(f"{a:<10}{fin:>26}{ps}")
            far = self.extrapolation[s] if self.extrapolation else {}
            for f, v in far.items():
                if v > EXTRAPOLATION_FLAG and np.isfinite(v):
                    lines.append(f"note: {f} is {v:.1f} spreads outside the pilots' range "
                                 "(an extrapolation)")  # fmt: skip
                elif v > EXTRAPOLATION_FLAG:
                    lines.append(f"note: {f} is constant in the fit: this follows the prior")
        return lines


def _final_stats(final: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q05, q95 and mean of the final competence over the draws that did not fail (NaN
    where every draw failed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: NaN, as meant
        q05, q95 = np.nanquantile(final, [0.05, 0.95], axis=1)
        return q05, q95, np.nanmean(final, axis=1)


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
) -> Prediction:
    """Predict the competence curves and regimes of training settings through the links.

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

    Returns:
        A :class:`Prediction`.

    Raises:
        ConfigError: No settings, an unlinked field, a value that is not a finite number
            > 0, a horizon that is not a finite number > 0, too few points, or another
            dtype.
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
    idx = _draw_index(post, max_draws, key)
    u, slopes = _draw_arrays(post, idx)
    t = np.linspace(0.0, float(cm.ts[-1] if steps is None else steps), n_points)
    check_size(t, fixed_substeps(t, cm.config.dt), idx.size)  # before any solve
    out = predict_arrays(
        cm, u, slopes, x, t, keep_curves=keep_curves, bands=bool(bands), dtype=dtype
    )
    final, codes, bad = failed_draws(out["final"], out["codes"], out.get("curves"))
    for k in ("mean", "bands", "curves"):
        if out.get(k) is not None and bad.any():  # no band through failed solves
            out[k] = np.where(bad.any(1).reshape((-1,) + (1,) * (out[k].ndim - 1)), np.nan, out[k])
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
    )


def _extrapolation(post: Posterior, settings: Sequence[Mapping[str, Any]]):
    transforms = post.model.config.hierarchy.transforms
    hv = post.hyper or {}
    pilots = {f: transform_values(transforms[f], hv[f]) for f in link_covariates(post)}
    given = [{f: float(transform_values(transforms[f], float(v))) for f, v in s.items()}
             for s in settings]  # fmt: skip
    return extrapolation(pilots, given)


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

"""The result of :func:`calibrate.predict`: per setting, the mean-curve forecast and (by
default) the forecast of one new run, with JSON and terminal views that name their band."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np

from simulate.common import REGIME_GROUPS as REGIME_GROUPS

from .._new_run import band_note
from ._checks import EXTRAPOLATION_FLAG, lift_collapse
from ._fast import BAND_LEVELS

#: The bands a prediction can headline.
BANDS = ("new_run", "mean")

__all__ = ["BANDS", "REGIME_GROUPS", "Prediction"]


@dataclasses.dataclass(frozen=True)
class Prediction:
    """Predicted curves and regimes of settings (arrays indexed setting, [draw], step, agent).

    Two forecasts live side by side (see :mod:`calibrate._new_run`): the *mean curve*
    (``mean``, ``bands``, ``final``, ``codes``: the population-median run's expected
    competence, posterior uncertainty only) and *one new run* (``new_*``: fresh run
    effects, seed spread, binomial evaluation noise at ``n_eval``). ``band`` says which one
    :meth:`to_dict`, :meth:`table` and the figure headline.

    Attributes:
        settings: The settings, as given.
        reference: Every linked field's reference value (used where a setting omits it).
        agents: Agent (node) names.
        t: Steps of the curves.
        mean: Posterior mean curves ``(S, T, N)`` (None if predicted with ``bands=False``).
        bands: Quantile curves ``(S, 4, T, N)`` at :data:`BAND_LEVELS` (None likewise).
        final: Final competence of the mean curve per draw ``(S, G, N)``.
        codes: Per-node regime code of the mean curve per draw ``(S, G, N)``.
        draw_index: The flat posterior draws used ``(G,)``.
        curves: Every draw's mean curves ``(S, G, T, N)`` when asked, else None.
        extrapolation: Per setting, each field's distance outside the pilots' range in
            units of their spread (:func:`~calibrate._predict._checks.extrapolation`).
        distance: Per setting, how far it lies from the pilots in knob units and pilot
            spreads (:func:`~calibrate._predict._checks.pilot_distance`).
        collapse_floor: Per setting, the least network P(collapse) the pilots leave open
            (:func:`~calibrate._predict._checks.collapse_floor`; 0 inside their range):
            :meth:`groups` lifts the network's P(collapse) to it (times the share of draws
            whose solve did not fail) and scales the other solved groups down.
        band: ``new_run`` or ``mean``: the headline forecast.
        new_final: One new run's logged final competence per draw ``(S, G, N)`` (None
            for ``band="mean"``).
        new_codes: The regime of that run's (noise-free) curve ``(S, G, N)``.
        new_mean: Per-step mean of one new run's logged competence ``(S, T, N)`` (None
            without bands).
        new_bands: Its quantile curves ``(S, 4, T, N)`` at :data:`BAND_LEVELS`.
        n_eval: The probe count of each agent used for the evaluation noise ``(N,)``.
        seed_spread: Where the seed-to-seed spread came from
            (:meth:`~calibrate._new_run.SeedSpread.to_dict`).
        extrapolation_sd: The links' slope-change sd beyond the pilots' range (0: straight
            links; :mod:`calibrate._predict._knots`).

    A draw whose competence leaves [0, 1] (or is not finite) is a failed solve: its codes
    are ``failed``, its finals NaN, and a setting with such draws has NaN bands.
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
    distance: tuple[dict[str, Any], ...] = ()
    collapse_floor: tuple[float, ...] = ()
    band: str = "mean"
    new_final: np.ndarray | None = None
    new_codes: np.ndarray | None = None
    new_mean: np.ndarray | None = None
    new_bands: np.ndarray | None = None
    n_eval: np.ndarray | None = None
    seed_spread: dict[str, Any] | None = None
    extrapolation_sd: float = 0.0

    def headline(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
        """``final``, ``codes``, ``mean``, ``bands`` of the :attr:`band` forecast."""
        if self.band == "new_run" and self.new_final is not None and self.new_codes is not None:
            return self.new_final, self.new_codes, self.new_mean, self.new_bands
        return self.final, self.codes, self.mean, self.bands

    def band_note(self) -> str:
        """What the :attr:`band` interval holds, in one phrase (seed spread named only when
        the interval has it, :func:`~calibrate._new_run.band_note`)."""
        spread = None if self.seed_spread is None else self.seed_spread.get("source")
        return band_note(self.band, spread if self.band == "new_run" else None)

    def regime_probs(self) -> tuple[np.ndarray, np.ndarray]:
        """Per agent ``(S, N, 7)`` and network ``(S, 7)`` regime probabilities by code (of
        the :attr:`band` forecast's curves); the network's regime per draw is its most
        severe node's, as in classify."""
        from simulate.common import REGIME_NAMES, REGIME_SEVERITY

        codes = self.headline()[1]
        k = len(REGIME_NAMES)
        onehot = codes[..., None] == np.arange(k)  # (S, G, N, K)
        sev = np.asarray(REGIME_SEVERITY)
        worst = np.take_along_axis(codes, np.argmax(sev[codes], -1)[..., None], -1)
        net = worst[..., 0][..., None] == np.arange(k)
        return onehot.mean(axis=1), net.mean(axis=1)

    def groups(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Grouped regime probabilities per agent ``(S, N)`` and network ``(S,)``:
        ``converged`` (converged or overshoot/pulse: settles without oscillating),
        ``oscillating`` (damped or sustained), ``collapse``, ``unsettled``, ``failed``;
        they sum to 1."""
        per, net = self.regime_probs()
        gn = {g: net[..., list(c)].sum(-1) for g, c in REGIME_GROUPS.items()}
        if self.collapse_floor and any(self.collapse_floor):
            gn = lift_collapse(gn, self.collapse_floor)
        return {g: per[..., list(c)].sum(-1) for g, c in REGIME_GROUPS.items()}, gn

    def to_dict(self, curves: bool = True) -> dict[str, Any]:
        """A JSON-ready summary (``curves=False``, or a prediction without bands, leaves the
        band curves out). Per agent, ``final`` is the :attr:`band` forecast (its ``band``
        key says which); ``final_mean_curve`` is always there, ``final_new_run`` (with its
        ``samples``, one per draw, for scores such as the CRPS) when computed."""
        import simulate

        final, _, mean, bands = self.headline()
        curves = curves and mean is not None and bands is not None
        names = [simulate.REGIME_NAMES[simulate.Regime(i)] for i in range(7)]
        per, net = self.regime_probs()
        gp, gn = self.groups()
        head = _final_stats(final)
        mc = _final_stats(self.final)
        nr = _final_stats(self.new_final) if self.new_final is not None else None
        rows = []
        for s, setting in enumerate(self.settings):
            agents = {}
            for j, a in enumerate(self.agents):
                d: dict[str, Any] = {
                    "final": _stats_entry(head, s, j) | {"band": self.band},
                    "final_mean_curve": _stats_entry(mc, s, j),
                    **{f"p_{g}": gp[g][s, j] for g in gp},
                    "regimes": dict(zip(names, per[s, j], strict=True)),
                }
                if nr is not None and self.new_final is not None:
                    d["final_new_run"] = _stats_entry(nr, s, j) | {
                        "samples": self.new_final[s, :, j]
                    }
                if curves and mean is not None and bands is not None:
                    d["curve"] = {"band": self.band, "mean": mean[s, :, j]} | {
                        f"q{round(lv * 100):02d}": bands[s, i, :, j]
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
                 "extrapolation": far, "extrapolated": flag,
                 "distance": self.distance[s] if self.distance else None,
                 "collapse_floor": self.collapse_floor[s] if self.collapse_floor else 0.0}
            )  # fmt: skip
        out: dict[str, Any] = {
            "band": self.band,
            "band_note": self.band_note(),
            "reference": self.reference,
            "draws": int(self.draw_index.size),
            "horizon_steps": float(self.t[-1]),
            "steps": self.t if curves else None,
            "extrapolation_sd": self.extrapolation_sd,
        }
        if self.n_eval is not None:
            out["n_eval"] = dict(zip(self.agents, self.n_eval.tolist(), strict=True))
        if self.seed_spread is not None:
            out["seed_spread"] = self.seed_spread
        return simulate.jsonable(out | {"predictions": rows})

    def table(self) -> list[str]:
        """Terminal lines: per setting and agent, the :attr:`band` forecast's final
        competence (named) and regime probabilities; then what the interval holds."""
        gp, _ = self.groups()
        q05, q95, fm = _final_stats(self.headline()[0])[:3]
        what = "new run" if self.band == "new_run" else "mean curve"
        title = f"{what} final [90 %]"
        head = (f"{'agent':<10}{title:>30}{'conv':>7}{'osc':>7}{'coll':>7}"
                f"{'unset':>7}{'fail':>7}")  # fmt: skip
        lines = []
        for s, setting in enumerate(self.settings):
            lines.append(", ".join(f"{k}={v:g}" for k, v in setting.items()) or "(reference)")
            lines.append(head)
            for j, a in enumerate(self.agents):
                fin = f"{fm[s, j]:.3f} [{q05[s, j]:.3f}, {q95[s, j]:.3f}]"
                fin = fin if np.isfinite(fm[s, j]) else "failed (every draw)"
                ps = "".join(f"{gp[g][s, j]:>7.2f}" for g in REGIME_GROUPS)
                lines.append(f"{a:<10}{fin:>30}{ps}")
            if self.distance:
                dist = self.distance[s]
                words = "; ".join(f"{f} {d['words']}" for f, d in dist["fields"].items())
                lines.append(f"from the pilots: {words}; nearest pilot run "
                             f"{dist['nearest_pilot_spreads']:.2f} spreads away")  # fmt: skip
            if self.collapse_floor and self.collapse_floor[s] > 0:
                lines.append(f"P(collapse) >= {self.collapse_floor[s]:.2f}: beyond the pilots' "
                             "range no pilot rules a collapse out (collapse floor)")  # fmt: skip
            far = self.extrapolation[s] if self.extrapolation else {}
            for f, v in far.items():
                if v > EXTRAPOLATION_FLAG and np.isfinite(v):
                    lines.append(f"note: {f} is {v:.1f} spreads outside the pilots' range "
                                 "(an extrapolation)")  # fmt: skip
                elif v > EXTRAPOLATION_FLAG:
                    lines.append(f"note: {f} is constant in the fit: this follows the prior")
        lines.append(f"interval: 90 % of {self.band_note()}")
        if self.extrapolation_sd > 0:
            lines.append(f"links beyond the pilots' range: each may bend by a slope change of "
                         f"sd {self.extrapolation_sd:g} (in both bands)")  # fmt: skip
        if self.band == "new_run" and self.n_eval is not None:
            n = ", ".join(f"{a} {v}" for a, v in zip(self.agents, self.n_eval, strict=True))
            lines.append(f"evaluation noise: binomial at n_eval {n}")
            if self.seed_spread is not None:
                lines.append(f"seed spread: {self.seed_spread['note']}")
        return lines


def _stats_entry(st: tuple[np.ndarray, ...], s: int, j: int) -> dict[str, Any]:
    q05, q95, fm, q25, q50, q75 = st
    return {"mean": fm[s, j], "q05": q05[s, j], "q25": q25[s, j], "q50": q50[s, j],
            "q75": q75[s, j], "q95": q95[s, j]}  # fmt: skip


def _final_stats(final: np.ndarray) -> tuple[np.ndarray, ...]:
    """q05, q95, mean, q25, q50 and q75 of the final competence over the draws that did
    not fail (NaN where every draw failed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: NaN, as meant
        q05, q25, q50, q75, q95 = np.nanquantile(final, [0.05, 0.25, 0.5, 0.75, 0.95], axis=1)
        return q05, q95, np.nanmean(final, axis=1), q25, q50, q75

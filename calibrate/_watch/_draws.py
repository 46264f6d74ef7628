"""The draws behind a ``watch`` forecast and the forecast they give (shared by both updates:
:mod:`calibrate._watch`'s importance weights and :mod:`calibrate._watch._update`'s Laplace
refit)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._predict._prediction import REGIME_GROUPS

__all__ = [
    "Forecast",
    "WatchDraws",
    "observed_collapse",
    "summarize",
    "weighted_quantile",
    "with_observed",
]


@dataclasses.dataclass(frozen=True)
class WatchDraws:
    """Draws of one new run's curves, solved once.

    Attributes:
        agents: Agent (node) names.
        setting: The linked training-config fields the run was predicted at.
        t: Steps of the curves ``(T,)`` from 0 to the horizon.
        curves: Competence curves per draw ``(G, T, N)`` (NaN for failed solves).
        codes: Per-node :class:`simulate.Regime` codes per draw ``(G, N)``.
        final: Final competence per draw ``(G, N)`` (of the curve, no evaluation noise).
        weighted: Whether :func:`forecast` weights the draws by the run's evaluations
            (False for the run's own fit, whose draws already condition on them).
        source: One phrase: where the draws come from.
        logged: The final competence the run logs per draw ``(G, N)``: ``final`` with
            evaluation noise at the run's ``n_eval`` (None: ``final``; the interval's).
        band_note: What the interval of the final competence holds, in one phrase.
    """

    agents: tuple[str, ...]
    setting: dict[str, float]
    t: np.ndarray
    curves: np.ndarray
    codes: np.ndarray
    final: np.ndarray
    weighted: bool
    source: str
    logged: np.ndarray | None = None
    band_note: str = "the final competence of the run's curve (posterior uncertainty)"


@dataclasses.dataclass(frozen=True)
class Forecast:
    """The forecast after the evaluations up to :attr:`step`.

    Attributes:
        step: The last evaluation step used.
        evaluations: Evaluation steps used.
        horizon: The step the final competence is forecast at.
        agents: Per agent: ``final`` (``mean``, ``q05``, ``q95``) and ``p_collapse``.
        network: ``p_converged``, ``p_oscillating``, ``p_collapse``, ``p_unsettled``,
            ``p_failed`` of the network (its most severe agent's regime, as in classify).
        ess: Effective number of draws after weighting.
        draws: Draws behind the forecast.
        band_note: What each agent's ``final`` interval holds (as ``predict``'s).
        update: How the draws met the evaluations: ``weights`` or ``laplace``.
        observed_collapse: Agents whose evaluations so far have collapsed by the one rule
            for real runs (:func:`observed_collapse`); their and the network's
            P(collapse) is then 1.
    """

    step: int
    evaluations: int
    horizon: float
    agents: dict[str, dict[str, Any]]
    network: dict[str, float]
    ess: float
    draws: int
    band_note: str = ""
    update: str = "weights"
    observed_collapse: tuple[str, ...] = ()
    tempered: float = 1.0
    ess_untempered: float | None = None

    @property
    def p_collapse(self) -> float:
        """P(the network collapses): some agent's regime is ``collapse``."""
        return float(self.network["p_collapse"])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return dataclasses.asdict(self)

    def line(self) -> str:
        """One terminal line: per agent the final competence [90 % interval], then P()."""
        parts = [f"step {self.step:>5}"]
        for a, d in self.agents.items():
            f = d["final"]
            parts.append(f"{a} {f['mean']:.2f} [{f['q05']:.2f}, {f['q95']:.2f}]")
        n = self.network
        parts.append(f"P(collapse) {n['p_collapse']:.2f}  P(oscillation) {n['p_oscillating']:.2f}")
        parts.append(f"(ess {self.ess:.0f})")
        if self.tempered < 1:
            parts.append(f"weights degenerated (ess {self.ess_untempered or 0:.0f} at full "
                         f"weight): tempered to {self.tempered:.2g}")  # fmt: skip
        if self.observed_collapse:
            parts.append(f"collapsed so far: {', '.join(self.observed_collapse)}")
        return "  ".join(parts)


def observed_collapse(obs: pd.DataFrame, agents: Sequence[str]) -> tuple[str, ...]:
    """The agents whose evaluations so far (``obs``: ``step, agent, competence, n_eval``)
    have collapsed by the one rule for real runs (:func:`simulate.classify_observed`'s, on
    the agent's curve with its median ``n_eval``; fewer than 4 evaluations: not judged)."""
    from simulate.common import fall_collapse

    out = []
    for a in agents:
        o = obs[obs["agent"] == a].sort_values("step")
        if len(o) >= 4 and fall_collapse(o["competence"].to_numpy(float),
                                         float(o["n_eval"].median())).collapsed:  # fmt: skip
            out.append(a)
    return tuple(out)


def with_observed(fc: Forecast, obs: pd.DataFrame) -> Forecast:
    """``fc`` with the collapse already in the evaluations (:func:`observed_collapse`): the
    collapsed agents' and the network's P(collapse) set to 1 (the other regimes to 0)."""
    seen = observed_collapse(obs, list(fc.agents))
    if not seen:
        return fc
    agents = {a: {**d, "p_collapse": 1.0} if a in seen else d for a, d in fc.agents.items()}
    network = {k: float(k == "p_collapse") for k in fc.network}
    return dataclasses.replace(fc, agents=agents, network=network, observed_collapse=seen)


def weighted_quantile(x: np.ndarray, w: np.ndarray, q: Sequence[float]) -> np.ndarray:
    """Quantiles ``q`` of values ``x`` with weights ``w`` (NaN values dropped)."""
    ok = np.isfinite(x) & (w > 0)
    if not ok.any():
        return np.full(len(q), np.nan)
    order = np.argsort(x[ok])
    xs, ws = x[ok][order], w[ok][order]
    cum = (np.cumsum(ws) - 0.5 * ws) / ws.sum()
    return np.interp(q, cum, xs)


def summarize(
    wd: WatchDraws, w: np.ndarray, obs: pd.DataFrame, update: str = "weights"
) -> Forecast:
    """The forecast of draws ``wd`` with normalised weights ``w`` ``(G,)`` after the
    evaluations ``obs`` (their last step and count), by the update ``update``."""
    from simulate.common import REGIME_SEVERITY

    agents: dict[str, dict[str, Any]] = {}
    final = wd.final if wd.logged is None else wd.logged
    for j, a in enumerate(wd.agents):
        f = final[:, j]
        q05, q95 = weighted_quantile(f, w, [0.05, 0.95])
        fin = np.isfinite(f)
        mean = float(np.sum(np.where(fin, f, 0.0) * w) / max(w[fin].sum(), 1e-300))
        agents[a] = {
            "final": {"mean": mean, "q05": float(q05), "q95": float(q95)},
            "p_collapse": float(np.sum(w * np.isin(wd.codes[:, j], REGIME_GROUPS["collapse"]))),
        }
    sev = np.asarray(REGIME_SEVERITY)
    worst = np.take_along_axis(wd.codes, np.argmax(sev[wd.codes], -1)[:, None], -1)[:, 0]
    network = {f"p_{g}": float(np.sum(w * np.isin(worst, c))) for g, c in REGIME_GROUPS.items()}
    steps = sorted(set(obs["step"].tolist())) if len(obs) else []
    return Forecast(
        step=int(steps[-1]) if steps else 0,
        evaluations=len(steps),
        horizon=float(wd.t[-1]),
        agents=agents,
        network=network,
        ess=float(1.0 / np.sum(w**2)),
        draws=int(w.size),
        band_note=wd.band_note,
        update=update,
    )

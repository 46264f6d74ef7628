"""A forecast of held-out runs (:class:`Forecast`), the run records it is scored against,
and the knob features every baseline shares.

A run record is a dict ``{"name": str, "setting": {knob: value}, "group": str, "final":
{agent: float}, "steps": [int], "curves": {agent: [float]}, "n_eval": int}``: its training
setting, its regime group (one of :data:`FORECAST_GROUPS`, the groups of
:data:`simulate.common.REGIME_GROUPS`), each agent's last logged competence and its curves.
:func:`calibrate.run_record` reads one from a run folder; studies build them from their own
tables (``n_eval`` may then be left out and given to the scoring instead).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from simulate.common import REGIME_GROUPS, regime_group, to_scale

__all__ = [
    "FORECAST_GROUPS",
    "Forecast",
    "group_of",
    "knob_features",
    "onehot_groups",
]

#: Regime groups, in the order of :data:`simulate.common.REGIME_GROUPS` (columns of
#: :attr:`Forecast.probs`).
FORECAST_GROUPS: tuple[str, ...] = tuple(REGIME_GROUPS)

#: The group whose probability the Brier score and the reliability table score.
COLLAPSE = "collapse"


@dataclasses.dataclass(frozen=True)
class Forecast:
    """One method's forecast of ``H`` held-out runs.

    Attributes:
        method: Its name.
        agents: Agent names ``(N,)`` (empty for a method that forecasts groups only).
        samples: Logged final competence of one new run ``(H, N, M)`` (``(H, 0, 0)`` for a
            method that forecasts groups only).
        probs: Regime-group probabilities ``(H, len(FORECAST_GROUPS))``, rows summing to 1.
    """

    method: str
    agents: tuple[str, ...]
    samples: np.ndarray
    probs: np.ndarray

    def label(self) -> list[str]:
        """The most probable group per run (first in :data:`FORECAST_GROUPS` on ties)."""
        return [FORECAST_GROUPS[int(i)] for i in np.argmax(self.probs, axis=1)]

    def p_collapse(self) -> np.ndarray:
        """P(collapse) per run ``(H,)``."""
        return np.asarray(self.probs, dtype=float)[:, FORECAST_GROUPS.index(COLLAPSE)]

    def rows(self, index: Sequence[int]) -> Forecast:
        """The forecast of the runs ``index`` only (in that order, repeats allowed)."""
        i = list(index)
        return Forecast(self.method, self.agents, self.samples[i], self.probs[i])

    def named(self, method: str) -> Forecast:
        """The same forecast under another name."""
        return dataclasses.replace(self, method=method)

    def to_dict(self, decimals: int = 4) -> dict[str, Any]:
        """A JSON-ready dict (samples rounded to ``decimals``, probabilities to 6), e.g. to
        store forecasts before the runs they predict (:meth:`from_dict` reads it back)."""
        return {"method": self.method, "agents": list(self.agents),
                "samples": np.round(self.samples, decimals).tolist(),
                "probs": np.round(self.probs, 6).tolist()}  # fmt: skip

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> Forecast:
        """The forecast of :meth:`to_dict`'s dict.

        Raises:
            ValueError: Its arrays do not have the shapes of one forecast.
        """
        samples = np.asarray(d["samples"], dtype=float)
        probs = np.asarray(d["probs"], dtype=float)
        n = len(probs)
        if probs.ndim != 2 or probs.shape[1] != len(FORECAST_GROUPS):
            raise ValueError(f"probs must be (H, {len(FORECAST_GROUPS)}), got {probs.shape}")
        if samples.size == 0:
            samples = np.zeros((n, 0, 0))
        if samples.ndim != 3 or samples.shape[:2] != (n, len(d["agents"])):
            raise ValueError(f"samples must be (H, N, M) = ({n}, {len(d['agents'])}, M)")
        return Forecast(str(d["method"]), tuple(d["agents"]), samples, probs)

    @staticmethod
    def concat(parts: Sequence[Forecast]) -> Forecast:
        """The forecasts of one method over several sets of runs, stacked in order.

        Raises:
            ValueError: The parts differ in method, agents or number of samples.
        """
        first = parts[0]
        if any(p.method != first.method or p.agents != first.agents for p in parts):
            raise ValueError(f"forecasts to stack differ in method or agents ({first.method})")
        samples = np.concatenate([p.samples for p in parts], axis=0)
        probs = np.concatenate([p.probs for p in parts], axis=0)
        return Forecast(first.method, first.agents, samples, probs)


def onehot_groups(labels: Sequence[str]) -> np.ndarray:
    """Group probabilities ``(len(labels), len(FORECAST_GROUPS))`` that put 1 on each label."""
    out = np.zeros((len(labels), len(FORECAST_GROUPS)))
    for i, g in enumerate(labels):
        out[i, FORECAST_GROUPS.index(g)] = 1.0
    return out


#: simulate's regime name -> its group (as :meth:`calibrate.Prediction.groups`): the one
#: mapping, :func:`simulate.common.regime_group`.
group_of = regime_group


def _scale_of(knob: str) -> str:
    from llm_runs.knobs import knob as lookup

    k = lookup(knob)
    return k.scale if k is not None else "linear"


def knob_features(
    settings: Sequence[Mapping[str, float]],
    pilots: Sequence[Mapping[str, float]],
    knobs: Sequence[str],
) -> np.ndarray:
    """Settings as features ``(len(settings), len(knobs))``: each knob on its scale
    (:data:`llm_runs.knobs.KNOBS`: log for ``rl.lr``, log1p for ``rl.staleness``, linear for a
    field that is no knob), scaled to [0, 1] over the pilots' range (a knob constant over the
    pilots is left centred at 0). A value outside [0, 1] is an extrapolation."""

    def on_scale(rows: Sequence[Mapping[str, float]]) -> np.ndarray:
        cols = [to_scale(_scale_of(k), np.array([float(r[k]) for r in rows])) for k in knobs]
        return np.stack(cols, axis=1)

    x, p = on_scale(settings), on_scale(pilots)
    lo, hi = p.min(axis=0), p.max(axis=0)
    return (x - lo) / np.where(hi > lo, hi - lo, 1.0)


def on_grid(values: Any, n_eval: int) -> np.ndarray:
    """Values clipped to [0, 1] and rounded to the evaluation grid ``k / n_eval``."""
    return np.rint(np.clip(values, 0.0, 1.0) * n_eval) / n_eval

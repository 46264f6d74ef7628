"""Scores of one method's forecasts of held-out runs: regime accuracy with its Wilson
interval, the Brier score of P(collapse) and its reliability table, and, for a method that
samples final competences, 50 % and 90 % coverage (with Wilson intervals), CRPS, the log
score on the evaluation grid and the randomised PIT histogram (the sample scores of
:mod:`simulate.common`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from simulate.common import crps_samples, grid_log_score, interval_hit, randomized_pit

from ._forecast import COLLAPSE, Forecast

__all__ = ["FINAL_METRICS", "brier_score", "reliability_table", "score_forecast", "wilson"]

#: Scores of final competence (per agent and pooled over agents, ``all``).
FINAL_METRICS = ("coverage50", "coverage90", "crps", "log_score")

#: Bins of the reliability table: equal-width forecast probabilities on [0, 1].
RELIABILITY_BINS = 5


def wilson(k: int, n: int, z: float = 1.96) -> list[float]:
    """Wilson score interval ``[lo, hi]`` of a proportion ``k / n`` (95 % at ``z`` 1.96;
    ``[nan, nan]`` when ``n`` is 0)."""
    if n == 0:
        return [math.nan, math.nan]
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [max(0.0, c - h), min(1.0, c + h)]


def brier_score(
    p: Sequence[float] | np.ndarray, happened: Sequence[bool] | Sequence[int] | np.ndarray
) -> float:
    """Mean squared difference between forecast probabilities ``p`` and outcomes (1 when the
    event happened, else 0): 0 is perfect, 0.25 the score of always saying one half."""
    p, y = np.asarray(p, dtype=float), np.asarray(happened, dtype=float)
    if p.shape != y.shape or p.size == 0:
        raise ValueError(f"brier_score needs equal, non-empty shapes, got {p.shape}, {y.shape}")
    return float(np.mean((p - y) ** 2))


def reliability_table(
    p: Sequence[float] | np.ndarray,
    happened: Sequence[bool] | Sequence[int] | np.ndarray,
    bins: int = 5,
) -> list[dict[str, Any]]:
    """Forecast probabilities against observed frequencies: per equal-width bin of ``p`` on
    [0, 1] (the last bin closed), ``{"lo", "hi", "n", "mean_forecast", "observed_share",
    "observed_ci95"}`` (share and mean None and the interval ``[nan, nan]`` for an empty
    bin). A reliable forecast has ``observed_share`` near ``mean_forecast`` in every bin."""
    p, y = np.asarray(p, dtype=float), np.asarray(happened, dtype=bool)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, bins - 1)
    rows = []
    for b in range(bins):
        sel = which == b
        n, k = int(sel.sum()), int(y[sel].sum())
        rows.append({
            "lo": float(edges[b]), "hi": float(edges[b + 1]), "n": n,
            "mean_forecast": float(p[sel].mean()) if n else None,
            "observed_share": k / n if n else None, "observed_ci95": wilson(k, n),
        })  # fmt: skip
    return rows


def score_forecast(
    f: Forecast,
    held: Sequence[Mapping[str, Any]],
    n_eval: int,
    *,
    rng: np.random.Generator,
    bins: int = RELIABILITY_BINS,
) -> dict[str, Any]:
    """One method's scores on the held-out run records ``held`` (row ``h`` of ``f`` forecasts
    ``held[h]``).

    Args:
        f: The forecasts.
        held: Held-out run records (``group``, and ``final`` for a sampling method).
        n_eval: Probes per evaluation (the grid of the log score).
        rng: Source of the randomised PIT.
        bins: Bins of the reliability table.

    Returns:
        ``regime_accuracy``, ``regime_accuracy_ci95`` (Wilson), ``labels``, ``brier`` (of
        P(collapse)), ``reliability`` (:func:`reliability_table`); with samples, per agent
        and pooled (``all``) ``coverage50``, ``coverage90``, ``crps``, ``log_score``, the
        Wilson intervals ``coverage50_ci95`` and ``coverage90_ci95`` of the pooled hits,
        ``pit_hist`` (10 bins) and ``per_run`` (each run's scores).
    """
    obs = [r["group"] for r in held]
    hits = sum(p == o for p, o in zip(f.label(), obs, strict=True))
    collapsed = np.array([o == COLLAPSE for o in obs])
    out: dict[str, Any] = {
        "regime_accuracy": hits / len(held),
        "regime_accuracy_ci95": wilson(hits, len(held)),
        "labels": f.label(),
        "brier": brier_score(f.p_collapse(), collapsed),
        "reliability": reliability_table(f.p_collapse(), collapsed, bins),
    }
    if not f.samples.size:
        return out
    y = np.array([[r["final"][a] for a in f.agents] for r in held], dtype=float)  # (H, N)
    per = {
        "coverage50": interval_hit(f.samples, y, 0.5),
        "coverage90": interval_hit(f.samples, y, 0.9),
        "crps": crps_samples(f.samples, y),
        "log_score": grid_log_score(f.samples, y, n_eval),
    }
    for m, v in per.items():
        out[m] = {a: float(np.nanmean(v[:, j])) for j, a in enumerate(f.agents)}
        out[m]["all"] = float(np.nanmean(v))
    for level in ("coverage50", "coverage90"):
        n_in = int(np.sum(per[level] == 1.0))
        out[f"{level}_ci95"] = wilson(n_in, int(np.sum(np.isfinite(per[level]))))
    pit = randomized_pit(f.samples, y, rng=rng)
    out["pit_hist"] = np.histogram(pit[np.isfinite(pit)], bins=10, range=(0, 1))[0].tolist()
    out["per_run"] = {m: v.tolist() for m, v in per.items()}
    return out

"""Predict the candidates of ``recommend --space`` through a motif plan (which fits).

Each fit of the plan predicts the candidates assigned to it in one batched
:func:`calibrate.predict` call. A candidate predicted by several fits (the stacking mixture)
pools their posterior draws, each fit's draws weighing ``weight / draws``: its mean and
regime probabilities are the weighted averages of the fits' and its quantiles those of
the pooled weighted draws. With one fit the numbers are that fit's (plain
``numpy.quantile`` and ``numpy.median`` over its draws).

The regime probabilities come from one of two rules (``regime_rule``): ``model`` labels each
draw's smooth mean curve with :func:`simulate.classify` (:meth:`calibrate.Prediction.groups`);
``observed`` labels one simulated new run per draw, read at the pilots' evaluation steps with
seed spread and probe noise, by the rule real runs are labelled with
(:func:`calibrate.observed_regime_probs`): the label a run at the candidate would get.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._objective import E2E_LABEL, objective_values
from .._predict._core import REGIME_GROUPS, predict
from ._motif import Plan
from ._seeds import new_run_draws

__all__ = ["Evaluation", "evaluate", "head_stats", "weighted_quantile"]

GROUPS = tuple(REGIME_GROUPS)
#: The rules a candidate's regime probabilities can come from (the module docstring).
REGIME_RULES = ("model", "observed")


def eval_every(post: Any) -> int:
    """Steps between the pilots' evaluations (the median gap of the fit's observed steps)."""
    ts = np.unique(np.asarray(post.model.ts, float))
    return max(1, round(float(np.median(np.diff(ts))))) if ts.size > 1 else 1


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: Sequence[float]) -> np.ndarray:
    """Quantiles of weighted draws: the inverse of the piecewise-linear CDF through the
    sorted values at their cumulative weight midpoints (NaN if any value is NaN; ``inf``
    values are allowed and sort last)."""
    v, w = np.asarray(values, float).ravel(), np.asarray(weights, float).ravel()
    if np.isnan(v).any():
        return np.full(len(q), np.nan)
    o = np.argsort(v, kind="stable")
    v, w = v[o], w[o] / w.sum()
    mid = np.cumsum(w) - w / 2
    out = []
    for qq in q:
        j = int(np.searchsorted(mid, qq))
        if j == 0 or j == v.size:
            out.append(v[min(j, v.size - 1)])
            continue
        lo, hi = v[j - 1], v[j]
        f = (qq - mid[j - 1]) / (mid[j] - mid[j - 1])
        out.append(lo if f <= 0 or lo == hi else hi if f >= 1 else lo + f * (hi - lo))
    return np.asarray(out, float)


class Evaluation:
    """Per-candidate predictions combined over the plan's fits.

    Attributes:
        mean: Posterior mean final objective ``(S,)``: the proxy agent's competence, or
            for ``e2e`` the product of the agents' (NaN when a draw's solve failed).
        net: Grouped network regime probabilities, group -> ``(S,)``.
        risk: P(oscillating or collapse or failed) ``(S,)``.
        draws: Posterior draws per fit.
        proxy_agent: The proxy agent's name (``agent``: its index, default the last), or
            for ``agent=None`` (the ``e2e`` objective) :data:`calibrate._objective.E2E_LABEL`.
    """

    def __init__(
        self, plan: Plan, settings: list[dict[str, Any]], agent: int | None = -1, **kw: Any
    ) -> None:
        s = len(settings)
        rule = kw.pop("regime_rule", "model")
        if rule not in REGIME_RULES:
            raise ValueError(f"regime_rule must be one of {REGIME_RULES}, got {rule!r}")
        self.plan, self.settings, self.kw, self.agent = plan, settings, kw, agent
        self.regime_rule = rule
        self.mean = np.zeros(s)
        self.net = {g: np.zeros(s) for g in GROUPS}
        self.finals: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # label -> (pos, (n, G))
        self.draws: dict[str, int] = {}
        for label, post in plan.fits.items():
            pos = np.asarray(
                [i for i, c in enumerate(plan.components) if label in dict(c)], dtype=np.int64
            )
            if not pos.size:
                continue
            w = np.asarray([dict(plan.components[i])[label] for i in pos])
            pred = predict(post, [settings[i] for i in pos], bands=False, band="mean", **kw)
            final = objective_values(pred.final, agent)  # (n, G): the objective
            ok = np.all(np.isfinite(final), axis=1)
            # a candidate with a failed draw has no mean (NaN), and no numpy warning says so
            m = np.where(ok, np.where(ok[:, None], final, 0.0).mean(1), np.nan)
            self.mean[pos] += w * m
            if rule == "observed":
                from .._predict._rule import observed_regime_probs

                net = observed_regime_probs(
                    post, [settings[i] for i in pos], steps=int(kw["steps"]),
                    every=eval_every(post), max_draws=int(kw.get("max_draws", 200)),
                    extrapolation_sd=float(kw.get("extrapolation_sd", 0.0)), key=kw.get("key"),
                )  # fmt: skip
            else:
                _, net = pred.groups()
            for g in GROUPS:
                self.net[g][pos] += w * net[g]
            self.finals[label] = (pos, final)
            self.draws[label] = int(pred.draw_index.size)
            self.proxy_agent = E2E_LABEL if agent is None else pred.agents[agent]
        self.risk = self.net["oscillating"] + self.net["collapse"] + self.net["failed"]

    def _pooled(self, i: int, per: dict[str, tuple[np.ndarray, np.ndarray]]):
        """Candidate ``i``'s values of every fit in ``per`` and their draw weights."""
        vals, wts = [], []
        for label, w in self.plan.components[i]:
            pos, arr = per[label]
            v = arr[int(np.flatnonzero(pos == i)[0])].ravel()
            vals.append(v)
            wts.append(np.full(v.size, w / v.size))
        return vals, wts

    def quantiles(self, i: int, q: Sequence[float]) -> np.ndarray:
        """Quantiles of candidate ``i``'s final objective over its (pooled) draws."""
        vals, wts = self._pooled(i, self.finals)
        if len(vals) == 1:
            return np.quantile(vals[0], q)
        return weighted_quantile(np.concatenate(vals), np.concatenate(wts), q)


def evaluate(
    plan: Plan, settings: list[dict[str, Any]], agent: int | None = -1, **kw: Any
) -> Evaluation:
    """Predict every candidate (``agent``: index of the proxy agent, None for ``e2e``;
    ``kw``: :func:`calibrate.predict`'s ``steps``, ``max_draws``, ``key``)."""
    return Evaluation(plan, settings, agent, **kw)


def head_stats(
    ev: Evaluation, head: Sequence[int], *, steps: int, target: float, replicates: int = 8
) -> list[dict[str, Any]]:
    """Per top candidate: the final objective's 90 % interval, steps to ``target`` (median
    over draws, on the objective's curve: for ``e2e`` the product of the agents' curves;
    None when most never reach it), P(reach), and the seed spread (``seed_sd`` and
    the 90 % interval of one new run's observed final score, see
    :mod:`calibrate._recommend._seeds`)."""
    plan, kw = ev.plan, ev.kw
    firsts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    runs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    var: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for label, post in plan.fits.items():
        pos = np.asarray([i for i in head if label in dict(plan.components[i])], dtype=np.int64)
        if not pos.size:
            continue
        sets = [ev.settings[i] for i in pos]
        pred = predict(
            post, sets, n_points=max(200, min(2001, steps + 1)), keep_curves=True, bands=False,
            band="mean", **kw,
        )  # fmt: skip
        assert pred.curves is not None  # keep_curves=True
        hit = objective_values(pred.curves, ev.agent) >= target  # (n, G, T)
        firsts[label] = (pos, np.where(hit.any(-1), pred.t[np.argmax(hit, axis=-1)], np.inf))
        seed_kw = {k: v for k, v in kw.items() if k != "extrapolation_sd"}  # straight links
        nr = new_run_draws(post, sets, replicates=replicates, agent=ev.agent, **seed_kw)
        runs[label], var[label] = (pos, nr["y"]), (pos, nr["var"])
    rows = []
    for i in head:
        q05, q95 = ev.quantiles(i, [0.05, 0.95])
        fv, fw = ev._pooled(i, firsts)
        reach = sum(float(np.sum(w[np.isfinite(v)])) for v, w in zip(fv, fw, strict=True))
        if len(fv) == 1:
            reach, med = float(np.isfinite(fv[0]).mean()), float(np.median(fv[0]))
        else:
            big = 2.0 * steps + 1.0  # never reached: beyond the horizon
            v = np.concatenate(fv)
            med = float(weighted_quantile(np.where(np.isfinite(v), v, big), np.concatenate(fw),
                                          [0.5])[0])  # fmt: skip
            med = med if med <= steps else np.inf
        yv, yw = ev._pooled(i, runs)
        vv, vw = ev._pooled(i, var)
        sd = float(np.sqrt(sum(float(np.sum(v * w)) for v, w in zip(vv, vw, strict=True))))
        if len(yv) == 1:
            nq = np.quantile(yv[0], [0.05, 0.95])
        else:
            nq = weighted_quantile(np.concatenate(yv), np.concatenate(yw), [0.05, 0.95])
        rows.append(
            {
                "q05": float(q05),
                "q95": float(q95),
                "steps_to_target": med if np.isfinite(med) else None,
                "p_reach_target": reach,
                "seed_sd": sd,
                "new_run_q05": float(nq[0]),
                "new_run_q95": float(nq[1]),
            }
        )
    return rows


def rank_candidates(mean: np.ndarray, risk: np.ndarray, bound: float) -> list[int]:
    """Candidate order: those with ``risk <= bound`` (and a finite mean) by mean, highest
    first; then the rest by risk, lowest first (ties: the higher mean, then the index), a
    candidate without a finite mean (a failed solve among its draws) after every other."""
    ok = (risk <= bound) & np.isfinite(mean)
    m = np.where(np.isfinite(mean), mean, -np.inf)
    first = sorted(np.flatnonzero(ok), key=lambda i: (-m[i], risk[i], i))
    rest = sorted(np.flatnonzero(~ok), key=lambda i: (not np.isfinite(mean[i]), risk[i], -m[i], i))
    return [int(i) for i in first + rest]

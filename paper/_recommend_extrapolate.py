"""Early-curve extrapolation, one of the recommendation baselines (issue 19 §2): ScaleRL's
saturating sigmoid in optimizer steps, fitted to a short prefix of every candidate's curve.
Re-exported by :mod:`_recommend_baselines`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from _recommend_table import BenchmarkError, BudgetError, Ledger, Pick, RunTable, Setting
from _recommend_table import best_setting as best_setting

__all__ = ["curve_extrapolation", "fit_sigmoid", "sigmoid"]


def sigmoid(n: Any, a: float, b: float, c_mid: float, r0: float) -> Any:
    """ScaleRL's saturating curve ``R(n) = A - (A - R0) / (1 + (n / C_mid)^B)``: ``R(0) = R0``,
    ``R -> A`` (asymptote) as ``n -> inf``, half-way at ``n = C_mid``, steepness ``B``."""
    n = np.asarray(n, dtype=float)
    return a - (a - r0) / (1.0 + (n / c_mid) ** b)


def fit_sigmoid(
    steps: Any,
    values: Any,
    *,
    a_bounds: tuple[float, float] = (0.0, 1.0),
    b_bounds: tuple[float, float] = (0.1, 10.0),
    c_bounds: tuple[float, float] | None = None,
) -> dict[str, float]:
    """Fit :func:`sigmoid` by bounded least squares (``scipy.optimize.least_squares``, trust
    region reflective) with ``R0`` fixed at the value logged at step 0.

    ``C_mid`` is fitted on a log scale (analytic Jacobian), from 8 starting points (4 ``C_mid``
    x 2 ``B``); the lowest residual wins.

    Args:
        steps: Logged steps, the first 0, at least 3 after it.
        values: Accuracy at each step.
        a_bounds, b_bounds: Bounds of the asymptote and the efficiency.
        c_bounds: Bounds of the midpoint (default: a tenth of the first step after 0 to 100 x
            the last step).

    Returns:
        ``{"A", "B", "C_mid", "R0", "rmse"}``.

    Raises:
        BenchmarkError: Fewer than 3 points after step 0, or the first step is not 0.
    """
    from scipy import optimize

    n, y = np.asarray(steps, dtype=float), np.asarray(values, dtype=float)
    if n.ndim != 1 or n.shape != y.shape or n[0] != 0 or len(n) < 4:
        raise BenchmarkError("a sigmoid fit needs step 0 and at least 3 later points")
    r0, n1, y1 = float(y[0]), n[1:], y[1:]
    lo_c, hi_c = c_bounds or (n1[0] / 10, 100 * n1[-1])

    def resid(p: np.ndarray) -> np.ndarray:
        return sigmoid(n1, p[0], p[1], math.exp(p[2]), r0) - y1

    def jac(p: np.ndarray) -> np.ndarray:  # d R / d (A, B, log C_mid)
        log_ratio = np.log(n1) - p[2]
        x = np.exp(p[1] * log_ratio)
        dx = (p[0] - r0) / (1.0 + x) ** 2
        return np.stack([x / (1.0 + x), dx * x * log_ratio, -dx * p[1] * x], axis=1)

    jac_fn: Any = jac
    lo = [a_bounds[0], b_bounds[0], math.log(lo_c)]
    hi = [a_bounds[1], b_bounds[1], math.log(hi_c)]
    a0 = float(np.clip(y1[-1], *a_bounds))
    best = None
    for c0 in np.geomspace(max(lo_c, n1[0] / 2), min(hi_c, 4 * n1[-1]), 4):
        for b0 in (0.8, 2.5):
            x0 = np.clip([a0, b0, math.log(c0)], lo, hi)
            # scipy's annotations type jac as a string only; a callable is documented
            r = optimize.least_squares(resid, x0, jac=jac_fn, bounds=(lo, hi), method="trf")
            if best is None or r.cost < best.cost:
                best = r
    if best is None:  # unreachable: the loops above always run
        raise BenchmarkError("no sigmoid fit was made")
    a, b, logc = (float(v) for v in best.x)
    rmse = float(np.sqrt(np.mean(best.fun**2)))
    return {"A": a, "B": b, "C_mid": math.exp(logc), "R0": r0, "rmse": rmse}


def curve_extrapolation(
    table: RunTable,
    *,
    budget_steps: int,
    seed: int,
    rng_seed: int,
    prefix: int | None = None,
) -> Pick:
    """Early-curve extrapolation: every setting of the seed runs a prefix of ``p`` steps,
    :func:`fit_sigmoid` is fitted to each prefix, the setting whose fit is highest at the
    horizon is continued to the horizon (``horizon - p`` more steps) and picked.

    ``p`` is the largest logged step with ``n_settings * p + (horizon - p) <= budget_steps``
    (at most the horizon), unless given. A run that diverged within its prefix extrapolates
    to 0.0. Deterministic: ``rng_seed`` is not used.

    Raises:
        BenchmarkError: ``prefix`` is not a logged step.
        BudgetError: The prefixes and the continuation do not fit, or the prefix has fewer
            than 3 logged points after step 0.
    """
    del rng_seed  # deterministic
    cands, horizon = table.settings_of(seed), table.horizon
    grid = [s for s in table.eval_steps if 0 < s <= horizon]

    def cost(p: int) -> int:
        return len(cands) * p + (horizon - p)

    if prefix is None:
        fits = [p for p in grid if cost(p) <= budget_steps]
        prefix = max(fits) if fits else grid[0]
    if prefix not in grid:
        raise BenchmarkError(f"prefix {prefix} is not a logged step ({grid[0]}..{grid[-1]})")
    if cost(prefix) > budget_steps or grid.index(prefix) < 2:
        raise BudgetError(
            f"budget {budget_steps}: prefixes of {prefix} steps for {len(cands)} settings plus "
            f"the continuation cost {cost(prefix)}; a fit needs >= 3 logged points (prefix "
            f">= {grid[2]})"
        )
    ledger = Ledger(table, seed, budget_steps)
    scored: list[tuple[Setting, float]] = []
    fits_out: dict[Setting, dict[str, float] | None] = {}
    for s in cands:
        if ledger.run(s, prefix, note="prefix").diverged:
            scored.append((s, 0.0))
            fits_out[s] = None
            continue
        c = table.curve(s, seed)
        keep = c.steps <= prefix
        f = fit_sigmoid(c.steps[keep], c.values[keep])
        fits_out[s] = f
        scored.append((s, float(sigmoid(horizon, f["A"], f["B"], f["C_mid"], f["R0"]))))
    best = best_setting(scored)
    if prefix < horizon:
        ledger.run(best, horizon, start=prefix, note="continued")
    return ledger.pick(
        "curve extrapolation", best, prefix=prefix, extrapolated=dict(scored), fits=fits_out
    )

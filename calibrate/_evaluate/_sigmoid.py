"""ScaleRL's saturating sigmoid fitted to the first steps of a run and extrapolated: the
early-curve baseline of ``calibrate evaluate`` (and of the recommendation benchmarks)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from simulate.common import ConfigError

from ._forecast import Forecast, group_of, on_grid, onehot_groups

__all__ = ["fit_sigmoid", "sigmoid_curve", "sigmoid_prefix"]


def sigmoid_curve(n: Any, a: float, b: float, c_mid: float, r0: float) -> Any:
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
    """Fit :func:`sigmoid_curve` by bounded least squares (``scipy.optimize.least_squares``,
    trust region reflective) with ``R0`` fixed at the value logged at step 0.

    ``C_mid`` is fitted on a log scale (analytic Jacobian), from 8 starting points (4 ``C_mid``
    x 2 ``B``); the lowest residual wins.

    Args:
        steps: Logged steps, the first 0, at least 3 after it.
        values: Accuracy at each step.
        a_bounds: Bounds of the asymptote.
        b_bounds: Bounds of the efficiency.
        c_bounds: Bounds of the midpoint (default: a tenth of the first step after 0 to 100 x
            the last step).

    Returns:
        ``{"A", "B", "C_mid", "R0", "rmse"}``.

    Raises:
        ConfigError: Fewer than 3 points after step 0, or the first step is not 0.
    """
    from scipy import optimize

    n, y = np.asarray(steps, dtype=float), np.asarray(values, dtype=float)
    if n.ndim != 1 or n.shape != y.shape or n[0] != 0 or len(n) < 4:
        raise ConfigError("a sigmoid fit needs step 0 and at least 3 later points")
    r0, n1, y1 = float(y[0]), n[1:], y[1:]
    lo_c, hi_c = c_bounds or (n1[0] / 10, 100 * n1[-1])

    def resid(p: np.ndarray) -> np.ndarray:
        return sigmoid_curve(n1, p[0], p[1], math.exp(p[2]), r0) - y1

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
        raise ConfigError("no sigmoid fit was made")
    a, b, logc = (float(v) for v in best.x)
    rmse = float(np.sqrt(np.mean(best.fun**2)))
    return {"A": a, "B": b, "C_mid": math.exp(logc), "R0": r0, "rmse": rmse}


def sigmoid_prefix(
    targets: Sequence[Mapping[str, Any]],
    *,
    prefix: int,
    n_eval: int,
    draws: int,
    rng: np.random.Generator,
) -> Forecast:
    """:func:`fit_sigmoid` (``R0`` the step-0 value) fitted to each target run's evaluations
    at steps <= ``prefix`` and extrapolated to its last step; final ~ normal(extrapolation,
    rmse^2 + p(1-p)/n_eval) on the grid. The group: :func:`simulate.classify_observed` of the
    prefix followed by the extrapolated steps (probability 1). Unlike the other baselines it
    sees the target's own first steps (a practitioner runs them first).

    Args:
        targets: Held-out run records (their ``steps`` and ``curves``).
        prefix: The last step the fit sees.
        n_eval: Probes per evaluation (the grid of the samples and the classifier's noise).
        draws: Samples per target.
        rng: Source of the samples.

    Raises:
        ConfigError: A run logs fewer than 3 evaluations after step 0 within the prefix.
    """
    import simulate

    agents = tuple(targets[0]["final"])
    samples = np.empty((len(targets), len(agents), draws))
    labels = []
    for h, run in enumerate(targets):
        steps = np.asarray(run["steps"], dtype=float)
        cut = steps <= prefix
        curve = np.empty((len(steps), len(agents)))
        for j, a in enumerate(agents):
            y = np.asarray(run["curves"][a], dtype=float)
            fit = fit_sigmoid(steps[cut], y[cut])
            ext = sigmoid_curve(steps, fit["A"], fit["B"], fit["C_mid"], fit["R0"])
            curve[:, j] = np.where(cut, y, np.clip(ext, 0.0, 1.0))
            m = float(np.clip(ext[-1], 0.0, 1.0))
            s = np.sqrt(fit["rmse"] ** 2 + m * (1 - m) / n_eval)
            samples[h, j] = on_grid(m + s * rng.standard_normal(draws), n_eval)
        regime = simulate.classify_observed(steps, curve, n_eval, names=agents)["regime"]
        labels.append(group_of(regime))
    return Forecast(f"sigmoid on first {prefix} steps", agents, samples, onehot_groups(labels))

"""Early-curve extrapolation, one of the recommendation baselines (issue 19 §2): ScaleRL's
saturating sigmoid in optimizer steps, fitted to a short prefix of every candidate's curve.
Re-exported by :mod:`_recommend_baselines`; the sigmoid and its fit are calibrate's
(:func:`calibrate.fit_sigmoid`, :func:`calibrate.sigmoid_curve`)."""

from __future__ import annotations

from typing import Any

import calibrate
from calibrate import sigmoid_curve as sigmoid  # ScaleRL's R(n); calibrate's, issue 71
from paper._recommend_table import BenchmarkError, BudgetError, Ledger, Pick, RunTable, Setting
from paper._recommend_table import best_setting as best_setting

__all__ = ["curve_extrapolation", "fit_sigmoid", "sigmoid"]


def fit_sigmoid(steps: Any, values: Any, **bounds: Any) -> dict[str, float]:
    """:func:`calibrate.fit_sigmoid` (ScaleRL's sigmoid by bounded least squares, ``R0``
    fixed at the step-0 value), its bad input a :class:`BenchmarkError` here.

    Returns:
        ``{"A", "B", "C_mid", "R0", "rmse"}``.

    Raises:
        BenchmarkError: Fewer than 3 points after step 0, or the first step is not 0.
    """
    try:
        return calibrate.fit_sigmoid(steps, values, **bounds)
    except calibrate.ConfigError as err:
        raise BenchmarkError(str(err)) from None


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

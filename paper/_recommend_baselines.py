"""What a practitioner would use instead of the motif model (issue 19 §2), as methods on the
tabular benchmark of :mod:`_recommend_table`: equal compute counted in optimizer steps.

Every baseline has the signature ``f(table, *, budget_steps, seed, rng_seed) -> Pick``, reads
only the runs of ``seed``, and never spends more than ``budget_steps`` (a :class:`Ledger`
raises :class:`BudgetError` first):

- :func:`random_search`: distinct settings in random order, each run to the horizon, while a
  full run still fits; the best observed final accuracy.
- :func:`optuna_tpe`: Optuna's ``TPESampler(seed=rng_seed)`` with its ``HyperbandPruner`` on
  the end-to-end accuracy reported at every logged step; each trial costs the steps it ran
  before it was pruned or finished; the best completed trial.
- :func:`gp_surrogate`: a scikit-learn Gaussian process (Matern 5/2 + white noise, normalised
  targets) on (log lr, log1p staleness) fitted on the pilots' final accuracies; the argmax of
  its posterior mean over the grid, then one confirmation run.
- :func:`curve_extrapolation`: every setting runs a prefix of ``p`` steps, ScaleRL's
  saturating sigmoid (:func:`sigmoid`) is fitted to each prefix, the best extrapolation to
  the horizon is continued to full length and picked (in :mod:`_recommend_extrapolate`).

Optuna and scikit-learn come with the optional extra ``baselines``
(``pip install -e '.[baselines]'``) and are imported only inside the functions.
"""

from __future__ import annotations

import importlib
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from paper import _recommend_knobs as rk
from paper._recommend_extrapolate import curve_extrapolation as curve_extrapolation
from paper._recommend_extrapolate import fit_sigmoid as fit_sigmoid
from paper._recommend_extrapolate import sigmoid as sigmoid
from paper._recommend_table import UNSTABLE_GROUPS as UNSTABLE_GROUPS
from paper._recommend_table import BenchmarkError as BenchmarkError
from paper._recommend_table import BudgetError as BudgetError
from paper._recommend_table import Curve as Curve
from paper._recommend_table import Ledger as Ledger
from paper._recommend_table import Pick as Pick
from paper._recommend_table import RunTable as RunTable
from paper._recommend_table import Setting as Setting
from paper._recommend_table import Trial as Trial
from paper._recommend_table import best_setting as best_setting
from paper._recommend_table import regime_group as regime_group

__all__ = [
    "BASELINES",
    "PILOT_BASELINES",
    "UNSTABLE_GROUPS",
    "BenchmarkError",
    "BudgetError",
    "Curve",
    "Ledger",
    "Pick",
    "RunTable",
    "Setting",
    "Trial",
    "best_pilot",
    "best_setting",
    "curve_extrapolation",
    "fit_sigmoid",
    "gp_ei",
    "gp_surrogate",
    "optuna_tpe",
    "random_search",
    "regime_group",
    "sigmoid",
]


_PIP = {"sklearn": "scikit-learn"}


def _need(module: str) -> Any:
    """Import an optional dependency of the ``baselines`` extra, or fail in one line."""
    top = module.split(".")[0]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise BenchmarkError(
            f"{_PIP.get(top, top)} is missing: install the baselines extra "
            "(pip install -e '.[baselines]')"
        ) from None


def random_search(table: RunTable, *, budget_steps: int, seed: int, rng_seed: int) -> Pick:
    """Random search: distinct settings uniformly at random, each run to the horizon while a
    full run still fits in the budget; picks the best observed final accuracy (the first
    evaluated on ties).

    Raises:
        BudgetError: Not even one full run fits.
    """
    ledger = Ledger(table, seed, budget_steps)
    cands = table.settings_of(seed)
    order = np.random.default_rng(rng_seed).permutation(len(cands))
    seen: list[tuple[Setting, float]] = []
    for i in order:
        if ledger.left < table.horizon:
            break
        seen.append((cands[i], ledger.run(cands[i], table.horizon, note="full").value))
    if not seen:
        raise BudgetError(f"budget {budget_steps} < one full run ({table.horizon} steps)")
    return ledger.pick("random search", best_setting(seen))


def optuna_tpe(
    table: RunTable,
    *,
    budget_steps: int,
    seed: int,
    rng_seed: int,
    knobs: Literal["categorical", "ordered"] = "categorical",
    reduction_factor: int = 3,
    hyperband: bool = True,
) -> Pick:
    """Optuna: ``TPESampler(seed=rng_seed)`` with ``HyperbandPruner`` (min resource the first
    logged step after 0, max resource the horizon, ``reduction_factor``; ``hyperband=False``:
    ``NopPruner``, every trial a full run), driven by ask/tell.

    Each trial reports the end-to-end accuracy at every logged step after 0 and is pruned when
    the pruner says so; it costs the steps it ran. Trials start while the first logged segment
    still fits; a trial that would pass the budget is stopped there (told as pruned). A run
    that diverged is told as failed (Optuna's rule for a non-finite objective). A setting
    suggested twice is run (and paid for) twice, as Optuna would.

    Args:
        table, budget_steps, seed, rng_seed: As every baseline.
        knobs: ``"categorical"`` (default): every knob a categorical choice of the grid's
            values; ``"ordered"``: ordered knobs as floats (lr log-uniform, staleness in log1p
            space) snapped to the nearest grid value (:func:`_recommend_knobs.suggest`).
        reduction_factor: Hyperband's reduction factor.
        hyperband: Prune with Hyperband (default) or not at all (plain TPE).

    Returns:
        The best completed trial's setting (first on ties); if no trial completed, the trial
        that got furthest (then highest value), with ``info["fallback"] = True``.

    Raises:
        BenchmarkError: The seed's settings are not a full grid of the knobs' values, or
            ``knobs`` is unknown.
        BudgetError: Not even the first logged segment fits.
    """
    optuna = _need("optuna")
    if knobs not in ("categorical", "ordered"):
        raise BenchmarkError(f"knobs must be 'categorical' or 'ordered', got {knobs!r}")
    ledger = Ledger(table, seed, budget_steps)
    grid = set(table.settings_of(seed))
    values = rk.grid_values(table.knobs, list(grid))
    if len(grid) != math.prod(len(v) for v in values):
        raise BenchmarkError(f"seed {seed}: the settings are not a full grid of the knobs")
    steps = [s for s in table.eval_steps if s > 0]
    if ledger.left < steps[0]:
        raise BudgetError(f"budget {budget_steps} < the first logged segment ({steps[0]})")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    state = optuna.trial.TrialState
    study = optuna.create_study(
        study_name=f"baseline-rng{rng_seed}",  # Hyperband's brackets hash the study name
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=rng_seed),
        pruner=optuna.pruners.HyperbandPruner(
            min_resource=steps[0], max_resource=table.horizon, reduction_factor=reduction_factor
        )
        if hyperband
        else optuna.pruners.NopPruner(),
    )
    done: list[tuple[Setting, float]] = []
    out_of_budget = False
    while not out_of_budget and ledger.left >= steps[0]:
        trial = study.ask()
        setting = rk.suggest(trial, table.knobs, values, knobs)
        first, prev, note = len(ledger.trace), 0, "complete"
        for n in steps:
            if n - prev > ledger.left:
                out_of_budget, note = True, "stopped"
                break
            t = ledger.run(setting, n, start=prev, note="segment")
            prev = n
            if t.diverged:
                note = "failed"
                break
            trial.report(t.value, n)
            if n < table.horizon and trial.should_prune():
                note = "pruned"
                break
        if len(ledger.trace) == first:  # stopped before its first segment
            study.tell(trial, state=state.FAIL)
            break
        t = ledger.merge(first, note)
        if note == "complete":
            study.tell(trial, t.value)
            done.append((setting, t.value))
        else:
            study.tell(trial, state=state.FAIL if note == "failed" else state.PRUNED)
    info: dict[str, object] = {"knobs": knobs, "trials": len(study.trials)}
    if done:
        return ledger.pick("optuna", best_setting(done), **info)
    ran = [t for t in ledger.trace if not t.diverged] or list(ledger.trace)
    far = max(enumerate(ran), key=lambda e: (e[1].reached, e[1].value, -e[0]))[1]
    return ledger.pick("optuna", far.setting, fallback=True, **info)


def gp_surrogate(
    table: RunTable,
    *,
    budget_steps: int,
    seed: int,
    rng_seed: int,
    pilots: Sequence[Setting] | None = None,
) -> Pick:
    """A Gaussian-process surrogate fitted on the pilots' final accuracies.

    ``GaussianProcessRegressor`` with kernel ``Matern(nu=2.5) + WhiteKernel`` (length scales in
    [0.05, 20], noise level in [1e-6, 1], by maximum marginal likelihood with
    ``n_restarts_optimizer=5`` seeded by ``rng_seed``) and ``normalize_y=True``, on the
    knobs' features (:func:`_recommend_knobs.features`). The pick is the argmax of the
    posterior mean over the seed's settings (first on ties); one confirmation run of it
    follows unless it is a pilot (whose run with this seed exists already).

    Args:
        table, budget_steps, seed, rng_seed: As every baseline.
        pilots: The pilot settings (the motif model's pilots); default the grid's corners.

    Raises:
        BenchmarkError: A pilot is not in the seed's settings, or fewer than 2 pilots.
        BudgetError: Pilots plus one confirmation run do not fit.
    """
    cands = table.settings_of(seed)
    pil = _pilots(table, seed, pilots, budget_steps, extra=1)
    ledger = Ledger(table, seed, budget_steps)
    y = [ledger.run(p, table.horizon, note="pilot").value for p in pil]
    mean, _, kernel = _gp(table, cands, pil, y, rng_seed)
    best = cands[int(np.argmax(mean))]
    if best not in pil:
        ledger.run(best, table.horizon, note="confirm")
    return ledger.pick(
        "gp surrogate",
        best,
        pilots=pil,
        posterior_mean={c: float(m) for c, m in zip(cands, mean, strict=True)},
        kernel=kernel,
    )


def _pilots(
    table: RunTable, seed: int, pilots: Sequence[Setting] | None, budget: int, extra: int
) -> tuple[Setting, ...]:
    """The pilot settings (default the grid's corners), checked to be >= 2 of the seed's
    settings with ``extra`` full runs after them fitting in ``budget``."""
    cands = table.settings_of(seed)
    pil = tuple(dict.fromkeys(table.norm(p) for p in (pilots or table.corners())))
    if len(pil) < 2 or not set(pil) <= set(cands):
        raise BenchmarkError(f"pilots must be >= 2 settings of seed {seed}'s grid, got {pil}")
    if (len(pil) + extra) * table.horizon > budget:
        raise BudgetError(
            f"budget {budget} < {len(pil)} pilots + {extra} more runs of {table.horizon} steps"
        )
    return pil


def _gp(
    table: RunTable, cands: Sequence[Setting], xs: Sequence[Setting], y: Sequence[float],
    rng_seed: int,
) -> tuple[np.ndarray, np.ndarray, str]:  # fmt: skip
    """A Matern 5/2 + white-noise GP (normalised targets, marginal likelihood with 5
    restarts seeded by ``rng_seed``) fitted on ``(xs, y)``: its posterior mean and sd at
    ``cands`` and the fitted kernel."""
    gp_mod = _need("sklearn.gaussian_process")
    kernels = _need("sklearn.gaussian_process.kernels")
    exc = _need("sklearn.exceptions")
    grid = rk.grid_values(table.knobs, list(cands))
    f_c, f_x = rk.features(table.knobs, cands, grid), rk.features(table.knobs, xs, grid)
    kernel = kernels.Matern(
        length_scale=[0.5] * f_c.shape[1], length_scale_bounds=(0.05, 20.0), nu=2.5
    )
    kernel = kernel + kernels.WhiteKernel(noise_level=0.1, noise_level_bounds=(1e-6, 1.0))
    gp = gp_mod.GaussianProcessRegressor(
        kernel=kernel, normalize_y=True, n_restarts_optimizer=5, random_state=rng_seed
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", exc.ConvergenceWarning)  # bounds hit on few points
        gp.fit(f_x, np.asarray(y, dtype=float))
    mean, sd = gp.predict(f_c, return_std=True)
    return np.asarray(mean, dtype=float), np.asarray(sd, dtype=float), str(gp.kernel_)


def gp_ei(
    table: RunTable,
    *,
    budget_steps: int,
    seed: int,
    rng_seed: int,
    pilots: Sequence[Setting] | None = None,
) -> Pick:
    """Sequential Bayesian optimisation: the GP of :func:`gp_surrogate` on the pilots, then
    while a full run fits, the untried setting of largest expected improvement over the best
    observed final accuracy is run to the horizon and the GP refitted; picks the best
    observed final accuracy (first on ties).

    Raises:
        BenchmarkError, BudgetError: As :func:`gp_surrogate`.
    """
    from scipy.stats import norm

    cands = table.settings_of(seed)
    pil = _pilots(table, seed, pilots, budget_steps, extra=1)
    ledger = Ledger(table, seed, budget_steps)
    seen = [(p, ledger.run(p, table.horizon, note="pilot").value) for p in pil]
    while ledger.left >= table.horizon and len(seen) < len(cands):
        mean, sd, _ = _gp(table, cands, [s for s, _ in seen], [v for _, v in seen], rng_seed)
        best, tried = max(v for _, v in seen), {s for s, _ in seen}
        z = (mean - best) / np.maximum(sd, 1e-12)
        ei = np.where(sd > 1e-12, (mean - best) * norm.cdf(z) + sd * norm.pdf(z), 0.0)
        order = [i for i in np.argsort(-ei, kind="stable") if cands[i] not in tried]
        nxt = cands[order[0]]
        seen.append((nxt, ledger.run(nxt, table.horizon, note="ei").value))
    return ledger.pick("gp ei", best_setting(seen), pilots=pil, evaluated=len(seen))


def best_pilot(
    table: RunTable,
    *,
    budget_steps: int,
    seed: int,
    rng_seed: int,
    pilots: Sequence[Setting] | None = None,
) -> Pick:
    """Keep the best pilot: the pilots (default the grid's corners) run to the horizon; picks
    the best observed final accuracy (first on ties).

    Raises:
        BenchmarkError, BudgetError: As :func:`gp_surrogate` (without the confirmation run).
    """
    pil = _pilots(table, seed, pilots, budget_steps, extra=0)
    ledger = Ledger(table, seed, budget_steps)
    seen = [(p, ledger.run(p, table.horizon, note="pilot").value) for p in pil]
    return ledger.pick("best pilot", best_setting(seen), pilots=pil)


#: The baselines by name; each ``f(table, *, budget_steps, seed, rng_seed) -> Pick``.
BASELINES: dict[str, Callable[..., Pick]] = {
    "random search": random_search,
    "optuna": optuna_tpe,
    "gp surrogate": gp_surrogate,
    "curve extrapolation": curve_extrapolation,
}

#: Baselines added for the testbed benchmark (``recommend_study.py``): they take ``pilots``.
PILOT_BASELINES: dict[str, Callable[..., Pick]] = {
    "best pilot": best_pilot,
    "gp surrogate": gp_surrogate,
    "gp ei": gp_ei,
}

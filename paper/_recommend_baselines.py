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
from _recommend_extrapolate import curve_extrapolation as curve_extrapolation
from _recommend_extrapolate import fit_sigmoid as fit_sigmoid
from _recommend_extrapolate import sigmoid as sigmoid
from _recommend_table import UNSTABLE_GROUPS as UNSTABLE_GROUPS
from _recommend_table import BenchmarkError as BenchmarkError
from _recommend_table import BudgetError as BudgetError
from _recommend_table import Curve as Curve
from _recommend_table import Ledger as Ledger
from _recommend_table import Pick as Pick
from _recommend_table import RunTable as RunTable
from _recommend_table import Setting as Setting
from _recommend_table import Trial as Trial
from _recommend_table import best_setting as best_setting
from _recommend_table import regime_group as regime_group

__all__ = [
    "BASELINES",
    "UNSTABLE_GROUPS",
    "BenchmarkError",
    "BudgetError",
    "Curve",
    "Ledger",
    "Pick",
    "RunTable",
    "Setting",
    "Trial",
    "best_setting",
    "curve_extrapolation",
    "fit_sigmoid",
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


def _suggest(trial: Any, lrs: list[float], ks: list[int], knobs: str) -> Setting:
    if knobs == "categorical":
        return (trial.suggest_categorical("lr", lrs), trial.suggest_categorical("staleness", ks))
    lr = trial.suggest_float("lr", lrs[0], lrs[-1], log=True)
    k = trial.suggest_float("log1p_staleness", math.log1p(ks[0]), math.log1p(ks[-1]))
    return (
        min(lrs, key=lambda v: abs(math.log(v) - math.log(lr))),
        min(ks, key=lambda v: abs(math.log1p(v) - k)),
    )


def optuna_tpe(
    table: RunTable,
    *,
    budget_steps: int,
    seed: int,
    rng_seed: int,
    knobs: Literal["categorical", "ordered"] = "categorical",
    reduction_factor: int = 3,
) -> Pick:
    """Optuna: ``TPESampler(seed=rng_seed)`` with ``HyperbandPruner`` (min resource the first
    logged step after 0, max resource the horizon, ``reduction_factor``), driven by ask/tell.

    Each trial reports the end-to-end accuracy at every logged step after 0 and is pruned when
    the pruner says so; it costs the steps it ran. Trials start while the first logged segment
    still fits; a trial that would pass the budget is stopped there (told as pruned). A run
    that diverged is told as failed (Optuna's rule for a non-finite objective). A setting
    suggested twice is run (and paid for) twice, as Optuna would.

    Args:
        table, budget_steps, seed, rng_seed: As every baseline.
        knobs: ``"categorical"`` (default): lr and staleness as categorical choices of the
            grid's values; ``"ordered"``: lr a log-uniform float and staleness a float in
            log1p space, each snapped to the nearest grid value.
        reduction_factor: Hyperband's reduction factor.

    Returns:
        The best completed trial's setting (first on ties); if no trial completed, the trial
        that got furthest (then highest value), with ``info["fallback"] = True``.

    Raises:
        BenchmarkError: The seed's settings are not a full lr x staleness grid, or ``knobs`` is
            unknown.
        BudgetError: Not even the first logged segment fits.
    """
    optuna = _need("optuna")
    if knobs not in ("categorical", "ordered"):
        raise BenchmarkError(f"knobs must be 'categorical' or 'ordered', got {knobs!r}")
    ledger = Ledger(table, seed, budget_steps)
    grid = set(table.settings_of(seed))
    lrs, ks = sorted({s[0] for s in grid}), sorted({s[1] for s in grid})
    if len(grid) != len(lrs) * len(ks):
        raise BenchmarkError(f"seed {seed}: the settings are not a full lr x staleness grid")
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
        ),
    )
    done: list[tuple[Setting, float]] = []
    out_of_budget = False
    while not out_of_budget and ledger.left >= steps[0]:
        trial = study.ask()
        setting = _suggest(trial, lrs, ks, knobs)
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


def _features(settings: Sequence[Setting], lrs: Sequence[float], ks: Sequence[int]) -> np.ndarray:
    """(log lr, log1p staleness), each scaled to [0, 1] over the grid's range."""
    x = np.array([[math.log(s[0]), math.log1p(s[1])] for s in settings], dtype=float)
    lo = np.array([math.log(min(lrs)), math.log1p(min(ks))])
    hi = np.array([math.log(max(lrs)), math.log1p(max(ks))])
    return (x - lo) / np.where(hi > lo, hi - lo, 1.0)


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
    ``n_restarts_optimizer=5`` seeded by ``rng_seed``) and
    ``normalize_y=True``, on (log lr, log1p staleness) scaled to [0, 1]. The pick is the argmax
    of the posterior mean over the seed's settings (first on ties); one confirmation run of it
    follows unless it is a pilot (whose run with this seed exists already).

    Args:
        table, budget_steps, seed, rng_seed: As every baseline.
        pilots: The pilot settings (the motif model's pilots); default the grid's corners.

    Raises:
        BenchmarkError: A pilot is not in the seed's settings, or fewer than 2 pilots.
        BudgetError: Pilots plus one confirmation run do not fit.
    """
    gp_mod = _need("sklearn.gaussian_process")
    kernels = _need("sklearn.gaussian_process.kernels")
    exc = _need("sklearn.exceptions")
    cands = table.settings_of(seed)
    pil = tuple(dict.fromkeys((float(p[0]), int(p[1])) for p in (pilots or table.corners())))
    if len(pil) < 2 or not set(pil) <= set(cands):
        raise BenchmarkError(f"pilots must be >= 2 settings of seed {seed}'s grid, got {pil}")
    if (len(pil) + 1) * table.horizon > budget_steps:
        raise BudgetError(
            f"budget {budget_steps} < {len(pil)} pilots + 1 confirmation of {table.horizon} steps"
        )
    ledger = Ledger(table, seed, budget_steps)
    y = np.array([ledger.run(p, table.horizon, note="pilot").value for p in pil])
    lrs, ks = [s[0] for s in cands], [s[1] for s in cands]
    kernel = kernels.Matern(length_scale=[0.5, 0.5], length_scale_bounds=(0.05, 20.0), nu=2.5)
    kernel = kernel + kernels.WhiteKernel(noise_level=0.1, noise_level_bounds=(1e-6, 1.0))
    gp = gp_mod.GaussianProcessRegressor(
        kernel=kernel, normalize_y=True, n_restarts_optimizer=5, random_state=rng_seed
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", exc.ConvergenceWarning)  # bounds hit on 4 points
        gp.fit(_features(pil, lrs, ks), y)
    mean = np.asarray(gp.predict(_features(cands, lrs, ks)), dtype=float)
    best = cands[int(np.argmax(mean))]
    if best not in pil:
        ledger.run(best, table.horizon, note="confirm")
    return ledger.pick(
        "gp surrogate",
        best,
        pilots=pil,
        posterior_mean={c: float(m) for c, m in zip(cands, mean, strict=True)},
        kernel=str(gp.kernel_),
    )


#: The baselines by name; each ``f(table, *, budget_steps, seed, rng_seed) -> Pick``.
BASELINES: dict[str, Callable[..., Pick]] = {
    "random search": random_search,
    "optuna": optuna_tpe,
    "gp surrogate": gp_surrogate,
    "curve extrapolation": curve_extrapolation,
}

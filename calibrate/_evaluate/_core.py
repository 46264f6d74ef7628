"""Score the motif model's forecasts of held-out runs against the practitioner baselines:
:func:`evaluate_forecasts` (pilots and held-out runs) and :func:`evaluate_loo` (leave one
setting out over one set of runs), on run records (:mod:`._runs`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from simulate.common import ConfigError

from ._baselines import gp_finals, gp_groups, knn_groups, nearest_pilot
from ._forecast import FORECAST_GROUPS, Forecast
from ._scores import score_forecast
from ._sigmoid import sigmoid_prefix

__all__ = [
    "BASELINES",
    "baseline_forecasts",
    "evaluate_forecasts",
    "evaluate_loo",
    "probe_count",
    "split_of",
    "varying_knobs",
]

Run = Mapping[str, Any]

#: The baselines, by the names their forecasts carry.
BASELINES = ("nearest pilot", "GP over knobs", "GP classifier", "3-nn", "sigmoid")

#: The splits of the held-out runs, in the order they are reported.
SPLITS = ("interpolation", "extrapolation", "all")


def split_of(setting: Mapping[str, float], pilots: Sequence[Run], knobs: Sequence[str]) -> str:
    """``extrapolation`` when any knob of ``setting`` lies outside the pilots' range of it,
    else ``interpolation``."""
    for k in knobs:
        vals = [float(r["setting"][k]) for r in pilots]
        lo, hi, v = min(vals), max(vals), float(setting[k])
        tol = 1e-9 * max(abs(lo), abs(hi)) + 1e-12  # a value written back from text
        if v < lo - tol or v > hi + tol:
            return "extrapolation"
    return "interpolation"


def varying_knobs(runs: Sequence[Run], knobs: Sequence[str] | None) -> tuple[str, ...]:
    """The knobs given, or every setting field that varies across ``runs``."""
    if knobs:
        return tuple(knobs)
    names = list(dict.fromkeys(k for r in runs for k in r["setting"]))
    varied = tuple(k for k in names if len({r["setting"].get(k) for r in runs}) > 1)
    if not varied:
        raise ConfigError("the runs share one setting: there is nothing to forecast across")
    return varied


def probe_count(runs: Sequence[Run], n_eval: int | None) -> int:
    """``n_eval`` if given, else the median ``n_eval`` of the run records.

    Raises:
        ConfigError: Neither is there.
    """
    if n_eval is not None:
        return int(n_eval)
    seen = [int(r["n_eval"]) for r in runs if r.get("n_eval")]
    if not seen:
        raise ConfigError("n_eval: give it, or run records with their n_eval")
    return int(np.median(seen))


def baseline_forecasts(
    pilots: Sequence[Run],
    heldout: Sequence[Run],
    knobs: Sequence[str],
    *,
    n_eval: int,
    draws: int = 400,
    prefix: int | None = 50,
    baselines: Sequence[str] = BASELINES,
    rng: np.random.Generator,
    seed: int = 0,
) -> list[Forecast]:
    """Every baseline's forecast of each held-out run (one row per run), fitted on the pilots.

    Args:
        pilots: Pilot run records.
        heldout: Held-out run records (their settings; the sigmoid also reads their curves).
        knobs: The knobs that place a setting.
        n_eval: Probes per evaluation.
        draws: Samples per forecast.
        prefix: The steps the sigmoid sees (None: no sigmoid).
        baselines: Which of :data:`BASELINES`.
        rng: Source of every sample.
        seed: Seed of the Gaussian processes' optimizers.

    Raises:
        ConfigError: An unknown baseline.
    """
    bad = [b for b in baselines if b not in BASELINES]
    if bad:
        raise ConfigError(f"unknown baseline {bad[0]!r}: one of {', '.join(BASELINES)}")
    targets = [r["setting"] for r in heldout]
    kw = {"n_eval": n_eval, "draws": draws, "rng": rng}
    make: dict[str, Callable[[], Forecast]] = {
        "nearest pilot": lambda: nearest_pilot(pilots, targets, knobs, **kw),
        "GP over knobs": lambda: gp_finals(pilots, targets, knobs, seed=seed, **kw),
        "GP classifier": lambda: gp_groups(pilots, targets, knobs, seed=seed),
        "3-nn": lambda: knn_groups(pilots, targets, knobs, k=3),
        "sigmoid": lambda: sigmoid_prefix(heldout, prefix=int(prefix), **kw),  # type: ignore[arg-type]
    }
    out = []
    for name in BASELINES:
        if name in baselines and not (name == "sigmoid" and prefix is None):
            f = make[name]()
            out.append(f if name == "sigmoid" else f.named(name))
    return out


def _scores(
    forecasts: Sequence[Forecast],
    heldout: Sequence[Run],
    splits: Sequence[str],
    n_eval: int,
    rng: np.random.Generator,
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], dict[str, int]]:
    """Per split and method: the scores without per-run lists, and each run's scores."""
    summary: dict[str, dict[str, Any]] = {}
    per_run: dict[str, dict[str, Any]] = {}
    n_runs: dict[str, int] = {}
    for split in SPLITS:
        keep = [i for i, s in enumerate(splits) if split in ("all", s)]
        if not keep:
            continue
        n_runs[split] = len(keep)
        held = [heldout[i] for i in keep]
        summary[split] = {}
        for f in forecasts:
            s = score_forecast(f.rows(keep), held, n_eval, rng=rng)
            if split == "all":
                per_run[f.method] = {"labels": s["labels"], **s.get("per_run", {})}
            summary[split][f.method] = {k: v for k, v in s.items()
                                        if k not in ("labels", "per_run")}  # fmt: skip
    return summary, per_run, n_runs


def _check_runs(pilots: Sequence[Run], heldout: Sequence[Run]) -> None:
    if not pilots or not heldout:
        raise ConfigError("give at least one pilot run and one held-out run")
    agents = {tuple(r["final"]) for r in [*pilots, *heldout]}
    if len(agents) > 1:
        raise ConfigError(f"the runs log different agents: {sorted(agents)}")
    bad = [r["group"] for r in [*pilots, *heldout] if r["group"] not in FORECAST_GROUPS]
    if bad:
        raise ConfigError(f"unknown regime group {bad[0]!r}: one of {', '.join(FORECAST_GROUPS)}")


def _check_names(forecasts: Sequence[Forecast]) -> None:
    names = [f.method for f in forecasts]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"two forecasts are named {twice[0]!r}: leave that baseline out "
                          "(baselines=...) or rename the forecast (Forecast.named)")  # fmt: skip


def _result(
    forecasts: list[Forecast], heldout: Sequence[Run], splits: list[str], n_pilots: int,
    knobs: tuple[str, ...], n_eval: int, rng: np.random.Generator, extra: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    summary, per_run, n_runs = _scores(forecasts, heldout, splits, n_eval, rng)
    return {
        "knobs": list(knobs), "n_eval": n_eval, "n_pilot_runs": n_pilots, "n_runs": n_runs,
        "methods": [f.method for f in forecasts],
        "splits": {str(r.get("name", i)): s for i, (r, s) in enumerate(zip(heldout, splits,
                                                                            strict=True))},
        "observed_groups": dict(Counter(r["group"] for r in heldout)),
        "summary": summary, "per_run": per_run, **extra, "forecasts": forecasts,
    }  # fmt: skip


def evaluate_forecasts(
    pilots: Sequence[Run],
    heldout: Sequence[Run],
    model_forecast: Forecast | Sequence[Forecast] | None = None,
    *,
    knobs: Sequence[str] | None = None,
    n_eval: int | None = None,
    draws: int = 400,
    prefix: int | None = 50,
    baselines: Sequence[str] = BASELINES,
    seed: int = 0,
) -> dict[str, Any]:
    """Score forecasts of held-out runs — the model's, given, and every baseline's, fitted
    here on the pilots — per split (``interpolation``, ``extrapolation``, ``all``; a split
    without runs left out). A held-out run is an extrapolation when any knob of its setting
    lies outside the pilots' range.

    Args:
        pilots: Pilot run records (what the model was fitted on).
        heldout: Held-out run records.
        model_forecast: The model's forecast(s) of the held-out runs, row ``h`` for
            ``heldout[h]`` (e.g. from :func:`model_forecasts`), or None (baselines only).
        knobs: The knobs that place a setting (default: every setting field that varies).
        n_eval: Probes per evaluation (default: the median of the runs' ``n_eval``).
        draws: Samples per baseline forecast.
        prefix: The steps of each held-out run the sigmoid sees (None: no sigmoid).
        baselines: Which of :data:`BASELINES`.
        seed: Seed of every random draw.

    Returns:
        A dict: ``knobs``, ``n_eval``, ``n_pilot_runs``, ``n_runs`` (per split),
        ``methods``, ``splits`` (run name -> split), ``observed_groups``, ``summary``
        (``{split: {method: scores}}``, the scores of :func:`calibrate.score_forecast`
        without ``labels`` and ``per_run``: regime accuracy and its Wilson interval, Brier
        score of P(collapse), reliability table and, for sampling methods, coverage50/90
        with Wilson intervals, CRPS, log score, PIT histogram), ``per_run``
        (``{method: {"labels", score: [per run]}}``, split ``all``) and ``forecasts`` (the
        :class:`Forecast` objects, not JSON; :func:`calibrate.write_evaluation` leaves them
        out).

    Raises:
        ConfigError: No pilots or held-out runs, runs of different agents, an unknown group
            or baseline, or a model forecast whose rows do not match ``heldout``.
    """
    _check_runs(pilots, heldout)
    if model_forecast is None:
        model = []
    elif isinstance(model_forecast, Forecast):
        model = [model_forecast]
    else:
        model = list(model_forecast)
    for f in model:
        if f.probs.shape != (len(heldout), len(FORECAST_GROUPS)):
            raise ConfigError(f"{f.method}: {f.probs.shape[0]} rows for {len(heldout)} runs")
    knobs_ = varying_knobs([*pilots, *heldout], knobs)
    n = probe_count([*pilots, *heldout], n_eval)
    rng = np.random.default_rng(seed)
    forecasts = model + baseline_forecasts(
        pilots, heldout, knobs_, n_eval=n, draws=draws, prefix=prefix, baselines=baselines,
        rng=rng, seed=seed,
    )  # fmt: skip
    _check_names(forecasts)
    splits = [split_of(r["setting"], pilots, knobs_) for r in heldout]
    return _result(forecasts, heldout, splits, len(pilots), knobs_, n, rng, {})


def evaluate_loo(
    runs: Sequence[Run],
    model: Callable[[Sequence[Run], Sequence[Run]], Forecast | Sequence[Forecast]] | None = None,
    *,
    knobs: Sequence[str] | None = None,
    n_eval: int | None = None,
    draws: int = 400,
    prefix: int | None = 50,
    baselines: Sequence[str] = BASELINES,
    seed: int = 0,
) -> dict[str, Any]:
    """Leave one setting out: each setting's runs held out in turn and forecast from every
    other run (the model by ``model(pilots, heldout)``, fitted on those pilots only), the
    forecasts of all folds scored together as :func:`evaluate_forecasts` scores them; a
    fold's setting is an extrapolation when a knob lies outside the other runs' range.

    Returns:
        As :func:`evaluate_forecasts` (``n_pilot_runs`` the runs in all), plus ``folds``
        (one per setting: its setting and held-out run names).

    Raises:
        ConfigError: Fewer than 2 settings, or as :func:`evaluate_forecasts`.
    """
    knobs_ = varying_knobs(runs, knobs)
    n = probe_count(runs, n_eval)
    keys = list(dict.fromkeys(tuple(float(r["setting"][k]) for k in knobs_) for r in runs))
    if len(keys) < 2:
        raise ConfigError("leave-one-setting-out needs runs of at least 2 settings")
    rng = np.random.default_rng(seed)
    parts: dict[str, list[Forecast]] = {}
    held_all: list[Run] = []
    splits: list[str] = []
    folds = []
    for key in keys:
        inside = [tuple(float(r["setting"][k]) for k in knobs_) == key for r in runs]
        held = [r for r, i in zip(runs, inside, strict=True) if i]
        pilots = [r for r, i in zip(runs, inside, strict=True) if not i]
        _check_runs(pilots, held)
        got = [] if model is None else model(pilots, held)
        fs = [got] if isinstance(got, Forecast) else list(got)
        fs += baseline_forecasts(pilots, held, knobs_, n_eval=n, draws=draws, prefix=prefix,
                                 baselines=baselines, rng=rng, seed=seed)  # fmt: skip
        _check_names(fs)
        for f in fs:
            if f.probs.shape[0] != len(held):
                raise ConfigError(f"{f.method}: {f.probs.shape[0]} rows for {len(held)} runs")
            parts.setdefault(f.method, []).append(f)
        held_all += held
        splits += [split_of(r["setting"], pilots, knobs_) for r in held]
        folds.append({"setting": dict(zip(knobs_, key, strict=True)),
                      "runs": [str(r.get("name", "")) for r in held]})  # fmt: skip
    incomplete = [m for m, p in parts.items() if len(p) != len(keys)]
    if incomplete:
        raise ConfigError(f"{incomplete[0]}: forecast in some folds only")
    forecasts = [Forecast.concat(p) for p in parts.values()]
    return _result(forecasts, held_all, splits, len(runs), knobs_, n, rng, {"folds": folds})

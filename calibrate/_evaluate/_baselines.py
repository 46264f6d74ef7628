"""What a practitioner forecasts a new run with instead of the motif model, fitted on the
same pilot runs (records of :mod:`calibrate._evaluate._forecast`), each a :class:`Forecast`
of what one new run will log.

- :func:`nearest_pilot`: the pilot setting nearest in scaled knob space: its modal group; its
  runs' mean final +- the pooled within-setting sd (normal, clipped, on the grid).
- :func:`gp_finals`: scikit-learn's Gaussian process per agent (Matern 5/2 + white noise,
  normalised targets) on every pilot run's final; the white-noise term makes it a new-run
  forecast. Its groups come from :func:`knn_groups`.
- :func:`knn_groups` / :func:`gp_groups`: k-nearest-neighbour and Gaussian-process
  classifiers of the regime group on the pilot runs.

The sigmoid on a run's own early steps is :func:`calibrate.sigmoid_prefix`. scikit-learn
is imported when a Gaussian process is fitted (the ``baselines`` extra).
"""

from __future__ import annotations

import importlib
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from simulate.common import ConfigError

from ._forecast import FORECAST_GROUPS, Forecast, knob_features, on_grid, onehot_groups

__all__ = ["gp_finals", "gp_groups", "knn_groups", "nearest_pilot"]

Run = Mapping[str, Any]


def _settings(runs: Sequence[Run]) -> list[tuple]:
    return [tuple(sorted(r["setting"].items())) for r in runs]


def nearest_pilot(
    pilots: Sequence[Run],
    targets: Sequence[Mapping[str, float]],
    knobs: Sequence[str],
    *,
    n_eval: int,
    draws: int,
    rng: np.random.Generator,
) -> Forecast:
    """The nearest pilot setting (Euclidean in :func:`calibrate.knob_features`, first on
    ties): its runs' modal group (first seen on ties) and mean final +- the pooled
    within-setting sd of the pilots (the binomial sd at the mean when every pilot setting has
    one run).

    Args:
        pilots: Pilot run records.
        targets: Settings to forecast.
        knobs: The knobs that place a setting.
        n_eval: Probes per evaluation (the grid of the samples).
        draws: Samples per target.
        rng: Source of the samples.
    """
    agents = tuple(pilots[0]["final"])
    keys = list(dict.fromkeys(_settings(pilots)))
    by = {k: [r for r, s in zip(pilots, _settings(pilots), strict=True) if s == k] for k in keys}
    cells = [dict(k) for k in keys]
    var = [np.var([r["final"][a] for r in rs], ddof=1) for rs in by.values() if len(rs) > 1
           for a in agents]  # fmt: skip
    sd = float(np.sqrt(np.mean(var))) if var else None
    fx, tx = knob_features(cells, cells, knobs), knob_features(targets, cells, knobs)
    samples = np.empty((len(targets), len(agents), draws))
    labels = []
    for h in range(len(targets)):
        rs = by[keys[int(np.argmin(np.sum((fx - tx[h]) ** 2, axis=1)))]]
        labels.append(Counter(r["group"] for r in rs).most_common(1)[0][0])
        for j, a in enumerate(agents):
            m = float(np.mean([r["final"][a] for r in rs]))
            s = sd if sd is not None else np.sqrt(max(m * (1 - m), 1e-4) / n_eval)
            samples[h, j] = on_grid(m + s * rng.standard_normal(draws), n_eval)
    return Forecast("nearest pilot", agents, samples, onehot_groups(labels))


def sklearn_module(name: str) -> Any:
    """A scikit-learn module, imported now.

    Raises:
        ConfigError: scikit-learn is not installed.
    """
    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - the extra is part of make install
        raise ConfigError("scikit-learn is missing: pip install -e '.[baselines]'") from None


def gp_finals(
    pilots: Sequence[Run],
    targets: Sequence[Mapping[str, float]],
    knobs: Sequence[str],
    *,
    n_eval: int,
    draws: int,
    rng: np.random.Generator,
    seed: int = 0,
) -> Forecast:
    """A Gaussian process per agent on every pilot run's final competence (kernel
    ``Matern(nu=2.5) + WhiteKernel``, length scales in [0.05, 20], noise in [1e-6, 1],
    ``normalize_y``, 5 optimizer restarts seeded by ``seed``); the predictive sd includes the
    white noise (seed spread and evaluation noise of a new run). Groups: :func:`knn_groups`.

    Args:
        pilots: Pilot run records.
        targets: Settings to forecast.
        knobs: The knobs that place a setting.
        n_eval: Probes per evaluation (the grid of the samples).
        draws: Samples per target.
        rng: Source of the samples.
        seed: Seed of the optimizer's restarts.
    """
    gp_mod = sklearn_module("sklearn.gaussian_process")
    kern = sklearn_module("sklearn.gaussian_process.kernels")
    exc = sklearn_module("sklearn.exceptions")
    agents = tuple(pilots[0]["final"])
    cells = [r["setting"] for r in pilots]
    fx, tx = knob_features(cells, cells, knobs), knob_features(targets, cells, knobs)
    samples = np.empty((len(targets), len(agents), draws))
    for j, a in enumerate(agents):
        y = np.array([r["final"][a] for r in pilots], dtype=float)
        k = kern.Matern(length_scale=[0.5] * len(knobs), length_scale_bounds=(0.05, 20.0), nu=2.5)
        k = k + kern.WhiteKernel(noise_level=0.1, noise_level_bounds=(1e-6, 1.0))
        gp = gp_mod.GaussianProcessRegressor(
            kernel=k, normalize_y=True, n_restarts_optimizer=5, random_state=seed
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", exc.ConvergenceWarning)
            gp.fit(fx, y)
        mu, sd = gp.predict(tx, return_std=True)
        z = rng.standard_normal((len(targets), draws))
        samples[:, j] = on_grid(mu[:, None] + sd[:, None] * z, n_eval)
    probs = knn_groups(pilots, targets, knobs).probs
    return Forecast("gp", agents, samples, probs)


def knn_groups(
    pilots: Sequence[Run],
    targets: Sequence[Mapping[str, float]],
    knobs: Sequence[str],
    *,
    k: int = 3,
) -> Forecast:
    """Group probabilities: the share of each group among the ``k`` pilot runs nearest in
    :func:`calibrate.knob_features` (stable order on distance ties). No samples (shape
    ``(H, 0, 0)``)."""
    cells = [r["setting"] for r in pilots]
    fx, tx = knob_features(cells, cells, knobs), knob_features(targets, cells, knobs)
    probs = np.zeros((len(targets), len(FORECAST_GROUPS)))
    for h in range(len(targets)):
        near = np.argsort(np.sum((fx - tx[h]) ** 2, axis=1), kind="stable")[: min(k, len(pilots))]
        for i in near:
            probs[h, FORECAST_GROUPS.index(pilots[int(i)]["group"])] += 1.0 / len(near)
    return Forecast(f"{k}-nn", (), np.zeros((len(targets), 0, 0)), probs)


def gp_groups(
    pilots: Sequence[Run],
    targets: Sequence[Mapping[str, float]],
    knobs: Sequence[str],
    *,
    seed: int = 0,
) -> Forecast:
    """Group probabilities from scikit-learn's ``GaussianProcessClassifier`` (RBF kernel,
    one-vs-rest, seeded by ``seed``) on the pilot runs; a single observed group gets
    probability 1. No samples."""
    cells = [r["setting"] for r in pilots]
    fx, tx = knob_features(cells, cells, knobs), knob_features(targets, cells, knobs)
    ys = [r["group"] for r in pilots]
    probs = np.zeros((len(targets), len(FORECAST_GROUPS)))
    seen = sorted(set(ys), key=FORECAST_GROUPS.index)
    if len(seen) == 1:
        probs[:, FORECAST_GROUPS.index(seen[0])] = 1.0
    else:
        gp_mod = sklearn_module("sklearn.gaussian_process")
        clf = gp_mod.GaussianProcessClassifier(random_state=seed, n_restarts_optimizer=2)
        clf.fit(fx, ys)
        p = clf.predict_proba(tx)
        for c, g in enumerate(clf.classes_):
            probs[:, FORECAST_GROUPS.index(str(g))] = p[:, c]
    return Forecast("gp classifier", (), np.zeros((len(targets), 0, 0)), probs)

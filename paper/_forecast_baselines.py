"""What a practitioner forecasts a new run with instead of the motif model (issue 31 §3),
fitted on the same pilot runs, each giving what one new run will log.

A run is a record ``{"setting": {knob: value}, "group": str, "final": {agent: float},
"steps": [int], "curves": {agent: [float]}}`` (the shape of a study's ``observed.json``
entries, ``group`` the regime group of :data:`simulate.common.REGIME_GROUPS`). Every method
returns a :class:`Forecast`: samples of each agent's logged final competence (rounded to the
evaluation grid ``k / n_eval``) and regime-group probabilities, per target.

- :func:`nearest_pilot`: the pilot setting nearest in scaled knob space: its modal group; its
  runs' mean final +- the pooled within-setting sd (normal, clipped, on the grid).
- :func:`gp_finals`: scikit-learn's Gaussian process per agent (Matern 5/2 + white noise,
  normalised targets) on every pilot run's final; the white-noise term makes it a new-run
  forecast. Its groups come from :func:`knn_groups`.
- :func:`knn_groups` / :func:`gp_groups`: k-nearest-neighbour and Gaussian-process
  classifiers of the regime group on the pilot runs.
- :func:`sigmoid_prefix`: ScaleRL's saturating sigmoid fitted to the target run's own first
  ``prefix`` steps and extrapolated; its group is the one collapse rule applied to the prefix
  followed by the extrapolation. Unlike the others it needs the target's prefix (a
  practitioner runs it first), so it is scored on the same runs with that advantage stated.

Knob features: each knob on its scale (:data:`llm_runs.knobs.KNOBS`: log for ``rl.lr``,
log1p for ``rl.staleness``), scaled to [0, 1] over the pilots' range (beyond 1 or below 0 is
extrapolation).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from _regime_report import group_of

from simulate.common import REGIME_GROUPS, to_scale

__all__ = [
    "GROUPS",
    "Forecast",
    "gp_finals",
    "gp_groups",
    "knn_groups",
    "knob_features",
    "nearest_pilot",
    "sigmoid_prefix",
]

#: Regime groups, in the order of :data:`simulate.common.REGIME_GROUPS`.
GROUPS: tuple[str, ...] = tuple(REGIME_GROUPS)


@dataclasses.dataclass(frozen=True)
class Forecast:
    """One method's forecast of ``H`` targets.

    Attributes:
        method: Its name.
        agents: Agent names ``(N,)``.
        samples: Logged final competence of one new run ``(H, N, M)``.
        probs: Regime-group probabilities ``(H, len(GROUPS))``, rows summing to 1.
    """

    method: str
    agents: tuple[str, ...]
    samples: np.ndarray
    probs: np.ndarray

    def label(self) -> list[str]:
        """The most probable group per target (first in :data:`GROUPS` on ties)."""
        return [GROUPS[int(i)] for i in np.argmax(self.probs, axis=1)]


def _scale_of(knob: str) -> str:
    from llm_runs.knobs import knob as lookup

    k = lookup(knob)
    return k.scale if k is not None else "linear"


def knob_features(
    settings: Sequence[dict[str, float]], pilots: Sequence[dict[str, float]], knobs: Sequence[str]
) -> np.ndarray:
    """Settings as features ``(len(settings), len(knobs))``: each knob on its scale, scaled to
    [0, 1] over the pilots' range (a knob constant over the pilots is left centred at 0)."""

    def on_scale(rows: Sequence[dict[str, float]]) -> np.ndarray:
        cols = [to_scale(_scale_of(k), np.array([float(r[k]) for r in rows])) for k in knobs]
        return np.stack(cols, axis=1)

    x, p = on_scale(settings), on_scale(pilots)
    lo, hi = p.min(axis=0), p.max(axis=0)
    return (x - lo) / np.where(hi > lo, hi - lo, 1.0)


def _grid(values: np.ndarray, n_eval: int) -> np.ndarray:
    return np.rint(np.clip(values, 0.0, 1.0) * n_eval) / n_eval


def _onehot(labels: Sequence[str]) -> np.ndarray:
    out = np.zeros((len(labels), len(GROUPS)))
    for i, g in enumerate(labels):
        out[i, GROUPS.index(g)] = 1.0
    return out


def _settings(runs: Sequence[dict[str, Any]]) -> list[tuple]:
    return [tuple(sorted(r["setting"].items())) for r in runs]


def nearest_pilot(
    pilots: Sequence[dict[str, Any]],
    targets: Sequence[dict[str, float]],
    knobs: Sequence[str],
    *,
    n_eval: int,
    draws: int,
    rng: np.random.Generator,
) -> Forecast:
    """The nearest pilot setting (Euclidean in :func:`knob_features`, first on ties): its
    runs' modal group (first seen on ties) and mean final +- the pooled within-setting sd of
    the pilots (the binomial sd at the mean when every pilot setting has one run)."""
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
            samples[h, j] = _grid(m + s * rng.standard_normal(draws), n_eval)
    return Forecast("nearest pilot", agents, samples, _onehot(labels))


def _sklearn(name: str) -> Any:
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:  # pragma: no cover - the extra is part of make install
        raise RuntimeError("scikit-learn is missing: pip install -e '.[baselines]'") from None


def gp_finals(
    pilots: Sequence[dict[str, Any]],
    targets: Sequence[dict[str, float]],
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
    white noise (seed spread and evaluation noise of a new run). Groups: :func:`knn_groups`."""
    gp_mod = _sklearn("sklearn.gaussian_process")
    kern = _sklearn("sklearn.gaussian_process.kernels")
    exc = _sklearn("sklearn.exceptions")
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
        samples[:, j] = _grid(mu[:, None] + sd[:, None] * z, n_eval)
    probs = knn_groups(pilots, targets, knobs).probs
    return Forecast("gp", agents, samples, probs)


def knn_groups(
    pilots: Sequence[dict[str, Any]],
    targets: Sequence[dict[str, float]],
    knobs: Sequence[str],
    *,
    k: int = 3,
) -> Forecast:
    """Group probabilities: the share of each group among the ``k`` pilot runs nearest in
    :func:`knob_features` (stable order on distance ties). No samples (shape ``(H, 0, 0)``)."""
    cells = [r["setting"] for r in pilots]
    fx, tx = knob_features(cells, cells, knobs), knob_features(targets, cells, knobs)
    probs = np.zeros((len(targets), len(GROUPS)))
    for h in range(len(targets)):
        near = np.argsort(np.sum((fx - tx[h]) ** 2, axis=1), kind="stable")[: min(k, len(pilots))]
        for i in near:
            probs[h, GROUPS.index(pilots[int(i)]["group"])] += 1.0 / len(near)
    return Forecast(f"{k}-nn", (), np.zeros((len(targets), 0, 0)), probs)


def gp_groups(
    pilots: Sequence[dict[str, Any]],
    targets: Sequence[dict[str, float]],
    knobs: Sequence[str],
    *,
    seed: int = 0,
) -> Forecast:
    """Group probabilities from scikit-learn's ``GaussianProcessClassifier`` (RBF kernel,
    one-vs-rest, seeded by ``seed``) on the pilot runs; a single observed group gets
    probability 1. No samples."""
    gp_mod = _sklearn("sklearn.gaussian_process")
    cells = [r["setting"] for r in pilots]
    fx, tx = knob_features(cells, cells, knobs), knob_features(targets, cells, knobs)
    ys = [r["group"] for r in pilots]
    probs = np.zeros((len(targets), len(GROUPS)))
    seen = sorted(set(ys), key=GROUPS.index)
    if len(seen) == 1:
        probs[:, GROUPS.index(seen[0])] = 1.0
    else:
        clf = gp_mod.GaussianProcessClassifier(random_state=seed, n_restarts_optimizer=2)
        clf.fit(fx, ys)
        p = clf.predict_proba(tx)
        for c, g in enumerate(clf.classes_):
            probs[:, GROUPS.index(str(g))] = p[:, c]
    return Forecast("gp classifier", (), np.zeros((len(targets), 0, 0)), probs)


def sigmoid_prefix(
    targets: Sequence[dict[str, Any]],
    *,
    prefix: int,
    n_eval: int,
    draws: int,
    rng: np.random.Generator,
) -> Forecast:
    """ScaleRL's sigmoid (``paper/_recommend_extrapolate.fit_sigmoid``, ``R0`` the step-0
    value) fitted to each target run's evaluations at steps <= ``prefix`` and extrapolated to
    its last step; final ~ normal(extrapolation, rmse^2 + p(1-p)/n_eval) on the grid. The
    group: :func:`simulate.classify_observed` of the prefix followed by the extrapolated
    steps (probability 1)."""
    from _recommend_extrapolate import fit_sigmoid, sigmoid

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
            ext = sigmoid(steps, fit["A"], fit["B"], fit["C_mid"], fit["R0"])
            curve[:, j] = np.where(cut, y, np.clip(ext, 0.0, 1.0))
            m = float(np.clip(ext[-1], 0.0, 1.0))
            s = np.sqrt(fit["rmse"] ** 2 + m * (1 - m) / n_eval)
            samples[h, j] = _grid(m + s * rng.standard_normal(draws), n_eval)
        regime = simulate.classify_observed(steps, curve, n_eval, names=agents)["regime"]
        labels.append(group_of(regime))
    return Forecast(f"sigmoid on first {prefix} steps", agents, samples, _onehot(labels))

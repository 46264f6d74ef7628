"""Forecasts of held-out runs scored against the practitioner baselines (``calibrate
evaluate``).

Public names (re-exported by :mod:`calibrate`): :class:`Forecast` and
:data:`FORECAST_GROUPS`; :func:`evaluate_forecasts` and :func:`evaluate_loo` (scores per
split), :func:`write_evaluation`; the scores (:func:`score_forecast`, :func:`wilson`,
:func:`brier_score`, :func:`reliability_table`); the baselines (:func:`nearest_pilot`,
:func:`gp_finals`, :func:`gp_groups`, :func:`knn_groups`, :func:`sigmoid_prefix` with
:func:`fit_sigmoid` and :func:`sigmoid_curve`) and their features (:func:`knob_features`);
the model's forecasts (:func:`model_forecasts`) and run records (:func:`run_record`).
Nothing here imports torch; scikit-learn and matplotlib load when first used.
"""

from __future__ import annotations

from ._baselines import gp_finals, gp_groups, knn_groups, nearest_pilot
from ._core import BASELINES, baseline_forecasts, evaluate_forecasts, evaluate_loo, split_of
from ._forecast import FORECAST_GROUPS, Forecast, group_of, knob_features, onehot_groups
from ._model import model_forecasts
from ._report import evaluation_table, write_evaluation
from ._runs import run_record
from ._scores import brier_score, reliability_table, score_forecast, wilson
from ._sigmoid import fit_sigmoid, sigmoid_curve, sigmoid_prefix

__all__ = [
    "BASELINES",
    "FORECAST_GROUPS",
    "Forecast",
    "baseline_forecasts",
    "brier_score",
    "evaluate_forecasts",
    "evaluate_loo",
    "evaluation_table",
    "fit_sigmoid",
    "gp_finals",
    "gp_groups",
    "group_of",
    "knn_groups",
    "knob_features",
    "model_forecasts",
    "nearest_pilot",
    "onehot_groups",
    "reliability_table",
    "run_record",
    "score_forecast",
    "sigmoid_curve",
    "sigmoid_prefix",
    "split_of",
    "wilson",
    "write_evaluation",
]

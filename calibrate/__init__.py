"""calibrate — Bayesian fitting of network coupling parameters to competence logs.

Everything loads on first use (``calibrate.fit`` imports the fitting code, numpyro
included, when it is first looked up), so ``python -m calibrate predict`` loads only
what a forecast needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from simulate.common import lazy_exports

if TYPE_CHECKING:
    from ._archive import archive_runs as archive_runs
    from ._archive import restore_runs as restore_runs
    from ._build import build_model as build_model
    from ._compare import ELPD_BAND as ELPD_BAND
    from ._compare import compare_pointwise as compare_pointwise
    from ._compare import identified_structure as identified_structure
    from ._config import ConfigError as ConfigError
    from ._config import FitConfig as FitConfig
    from ._config import Hierarchy as Hierarchy
    from ._config import Link as Link
    from ._config import Priors as Priors
    from ._data import CurveData as CurveData
    from ._data import DataError as DataError
    from ._data import DataWarning as DataWarning
    from ._data import load_inputs as load_inputs
    from ._data import read_run_folder as read_run_folder
    from ._data import read_table as read_table
    from ._data import read_tensorboard as read_tensorboard
    from ._data import validate_table as validate_table
    from ._demo._config import DEMO_QUICK as DEMO_QUICK
    from ._demo._config import DemoConfig as DemoConfig
    from ._demo._core import run_demo as run_demo
    from ._density import neg_log_joint_and_grad as neg_log_joint_and_grad
    from ._density import unflatten as unflatten
    from ._evaluate import BASELINES as BASELINES
    from ._evaluate import FORECAST_GROUPS as FORECAST_GROUPS
    from ._evaluate import Forecast as Forecast
    from ._evaluate import baseline_forecasts as baseline_forecasts
    from ._evaluate import brier_score as brier_score
    from ._evaluate import evaluate_forecasts as evaluate_forecasts
    from ._evaluate import evaluate_loo as evaluate_loo
    from ._evaluate import evaluation_table as evaluation_table
    from ._evaluate import fit_sigmoid as fit_sigmoid
    from ._evaluate import gp_finals as gp_finals
    from ._evaluate import gp_groups as gp_groups
    from ._evaluate import group_of as group_of
    from ._evaluate import knn_groups as knn_groups
    from ._evaluate import knob_features as knob_features
    from ._evaluate import model_forecasts as model_forecasts
    from ._evaluate import nearest_pilot as nearest_pilot
    from ._evaluate import onehot_groups as onehot_groups
    from ._evaluate import reliability_table as reliability_table
    from ._evaluate import run_record as run_record
    from ._evaluate import score_forecast as score_forecast
    from ._evaluate import sigmoid_curve as sigmoid_curve
    from ._evaluate import sigmoid_prefix as sigmoid_prefix
    from ._evaluate import split_of as split_of
    from ._evaluate import wilson as wilson
    from ._evaluate import write_evaluation as write_evaluation
    from ._fit import FlatParams as FlatParams
    from ._fit import fit as fit
    from ._fit import fit_model as fit_model
    from ._fit import laplace as laplace
    from ._fit import map_fit as map_fit
    from ._fit_plot import plot_prediction as plot_prediction
    from ._fit_plot import plot_predictive as plot_predictive
    from ._importers import KeyMapping as KeyMapping
    from ._importers import Meaning as Meaning
    from ._importers import RunStatus as RunStatus
    from ._importers import observed_regimes as observed_regimes
    from ._importers import read_events as read_events
    from ._importers import read_mlflow as read_mlflow
    from ._importers import read_training_args as read_training_args
    from ._importers import read_trl as read_trl
    from ._importers import read_verl as read_verl
    from ._importers import read_wandb_csv as read_wandb_csv
    from ._importers import status_counts as status_counts
    from ._knobs import KNOB_LINKS as KNOB_LINKS
    from ._knobs import default_links as default_links
    from ._model import CurveModel as CurveModel
    from ._model import Layout as Layout
    from ._network import resolve_network as resolve_network
    from ._new_run import crps_samples as crps_samples
    from ._pilots import PilotPlan as PilotPlan
    from ._pilots import initial_settings as initial_settings
    from ._pilots import label_runs as label_runs
    from ._pilots import pilot_runs as pilot_runs
    from ._pilots import run_pilot_rounds as run_pilot_rounds
    from ._pilots import train_args_for as train_args_for
    from ._posterior import Posterior as Posterior
    from ._posterior import load_fit as load_fit
    from ._predict._core import Prediction as Prediction
    from ._predict._core import predict as predict
    from ._predict._rule import observed_regime_probs as observed_regime_probs
    from ._quad import Quad as Quad
    from ._quad import QuadGrid as QuadGrid
    from ._recommend._core import recommend as recommend
    from ._recommend._core import recommend_space as recommend_space
    from ._recommend._motif import MotifFits as MotifFits
    from ._reparam import SamplingCoords as SamplingCoords
    from ._reparam import draws_to_z as draws_to_z
    from ._select._core import Selection as Selection
    from ._select._core import candidates as candidates
    from ._select._core import select as select
    from ._solvers import RK4 as RK4
    from ._solvers import AbstractCurveSolver as AbstractCurveSolver
    from ._solvers import Adaptive as Adaptive
    from ._solvers import solve_at as solve_at
    from ._space import SearchSpace as SearchSpace
    from ._study import StageError as StageError
    from ._study import Study as Study
    from ._study import StudyInterrupted as StudyInterrupted
    from ._study import fit_runs as fit_runs
    from ._study import run_command as run_command
    from ._study import store_once as store_once
    from ._study import train_run as train_run
    from ._study import train_runs as train_runs
    from ._synth import synthetic_curves as synthetic_curves
    from ._warning import SignalAlert as SignalAlert
    from ._warning import SignalRule as SignalRule
    from ._warning import Trigger as Trigger
    from ._warning import first_alert as first_alert
    from ._warning import fit_rule as fit_rule
    from ._warning import indicator_series as indicator_series

_LAZY: dict[str, str] = {
    "archive_runs": "._archive",
    "restore_runs": "._archive",
    "ConfigError": "._config",
    "FitConfig": "._config",
    "Hierarchy": "._config",
    "Link": "._config",
    "Priors": "._config",
    "CurveData": "._data",
    "DataError": "._data",
    "DataWarning": "._data",
    "load_inputs": "._data",
    "read_run_folder": "._data",
    "read_table": "._data",
    "read_tensorboard": "._data",
    "validate_table": "._data",
    "DEMO_QUICK": "._demo._config",
    "DemoConfig": "._demo._config",
    "run_demo": "._demo._core",
    "neg_log_joint_and_grad": "._density",
    "unflatten": "._density",
    "BASELINES": "._evaluate",
    "FORECAST_GROUPS": "._evaluate",
    "Forecast": "._evaluate",
    "baseline_forecasts": "._evaluate",
    "brier_score": "._evaluate",
    "evaluate_forecasts": "._evaluate",
    "evaluate_loo": "._evaluate",
    "evaluation_table": "._evaluate",
    "fit_sigmoid": "._evaluate",
    "gp_finals": "._evaluate",
    "gp_groups": "._evaluate",
    "group_of": "._evaluate",
    "knn_groups": "._evaluate",
    "knob_features": "._evaluate",
    "model_forecasts": "._evaluate",
    "nearest_pilot": "._evaluate",
    "onehot_groups": "._evaluate",
    "reliability_table": "._evaluate",
    "run_record": "._evaluate",
    "score_forecast": "._evaluate",
    "sigmoid_curve": "._evaluate",
    "sigmoid_prefix": "._evaluate",
    "split_of": "._evaluate",
    "wilson": "._evaluate",
    "write_evaluation": "._evaluate",
    "FlatParams": "._fit",
    "fit": "._fit",
    "fit_model": "._fit",
    "laplace": "._fit",
    "map_fit": "._fit",
    "plot_prediction": "._fit_plot",
    "plot_predictive": "._fit_plot",
    "KeyMapping": "._importers",
    "Meaning": "._importers",
    "RunStatus": "._importers",
    "read_events": "._importers",
    "read_mlflow": "._importers",
    "read_training_args": "._importers",
    "read_trl": "._importers",
    "read_verl": "._importers",
    "read_wandb_csv": "._importers",
    "observed_regimes": "._importers",
    "status_counts": "._importers",
    "KNOB_LINKS": "._knobs",
    "default_links": "._knobs",
    "CurveModel": "._model",
    "Layout": "._model",
    "build_model": "._build",
    "ELPD_BAND": "._compare",
    "compare_pointwise": "._compare",
    "identified_structure": "._compare",
    "resolve_network": "._network",
    "crps_samples": "._new_run",
    "Posterior": "._posterior",
    "load_fit": "._posterior",
    "Prediction": "._predict._core",
    "predict": "._predict._core",
    "observed_regime_probs": "._predict._rule",
    "SignalAlert": "._warning",
    "SignalRule": "._warning",
    "Trigger": "._warning",
    "first_alert": "._warning",
    "fit_rule": "._warning",
    "indicator_series": "._warning",
    "PilotPlan": "._pilots",
    "initial_settings": "._pilots",
    "train_args_for": "._pilots",
    "label_runs": "._pilots",
    "pilot_runs": "._pilots",
    "run_pilot_rounds": "._pilots",
    "Quad": "._quad",
    "QuadGrid": "._quad",
    "recommend": "._recommend._core",
    "recommend_space": "._recommend._core",
    "MotifFits": "._recommend._motif",
    "SamplingCoords": "._reparam",
    "draws_to_z": "._reparam",
    "Selection": "._select._core",
    "candidates": "._select._core",
    "select": "._select._core",
    "RK4": "._solvers",
    "AbstractCurveSolver": "._solvers",
    "Adaptive": "._solvers",
    "solve_at": "._solvers",
    "SearchSpace": "._space",
    "StageError": "._study",
    "Study": "._study",
    "StudyInterrupted": "._study",
    "fit_runs": "._study",
    "run_command": "._study",
    "store_once": "._study",
    "train_run": "._study",
    "train_runs": "._study",
    "synthetic_curves": "._synth",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

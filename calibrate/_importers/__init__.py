"""Importers of external training logs: TRL, verl, TensorBoard, MLflow, W&B (torch-free).

Each reads a framework's own files into competence curves through a
:class:`KeyMapping` (which keys are which agent's competence and what their values mean,
the evaluation size where the run's arguments do not give it, config keys as named
covariates), with each run's status and training signals. See docs/runlog.md for a command
per framework.
"""

from ._curves import Point as Point
from ._curves import RunInfo as RunInfo
from ._curves import curves_from_scalars as curves_from_scalars
from ._events import read_events as read_events
from ._mapping import KeyMapping as KeyMapping
from ._meaning import Meaning as Meaning
from ._meaning import parse_meaning as parse_meaning
from ._sources import FRAMEWORKS as FRAMEWORKS
from ._sources import detect as detect
from ._sources import read_source as read_source
from ._status import SIGNAL_KEYS as SIGNAL_KEYS
from ._status import RunStatus as RunStatus
from ._status import observed_regimes as observed_regimes
from ._status import status_counts as status_counts
from ._tracking import read_mlflow as read_mlflow
from ._tracking import read_wandb_csv as read_wandb_csv
from ._trl import read_training_args as read_training_args
from ._trl import read_trl as read_trl
from ._trl import trl_info as trl_info
from ._verl import read_verl as read_verl
from ._verl import verl_info as verl_info

__all__ = [
    "FRAMEWORKS",
    "SIGNAL_KEYS",
    "KeyMapping",
    "Meaning",
    "Point",
    "RunInfo",
    "RunStatus",
    "curves_from_scalars",
    "detect",
    "observed_regimes",
    "parse_meaning",
    "read_events",
    "read_mlflow",
    "read_source",
    "read_training_args",
    "read_trl",
    "read_verl",
    "read_wandb_csv",
    "status_counts",
    "trl_info",
    "verl_info",
]

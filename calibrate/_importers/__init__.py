"""Importers of external training logs: TRL, verl, TensorBoard, MLflow, W&B (torch-free).

Each reads a framework's own files into competence curves through a
:class:`KeyMapping` (which keys are which agent's competence, the evaluation size the log
lacks, config keys as named covariates). See docs/runlog.md for a command per framework.
"""

from ._events import read_events as read_events
from ._mapping import KeyMapping as KeyMapping
from ._mapping import curves_from_scalars as curves_from_scalars
from ._sources import FRAMEWORKS as FRAMEWORKS
from ._sources import detect as detect
from ._sources import read_source as read_source
from ._tracking import read_mlflow as read_mlflow
from ._tracking import read_wandb_csv as read_wandb_csv
from ._trl import read_training_args as read_training_args
from ._trl import read_trl as read_trl
from ._verl import read_verl as read_verl

__all__ = [
    "FRAMEWORKS",
    "KeyMapping",
    "curves_from_scalars",
    "detect",
    "read_events",
    "read_mlflow",
    "read_source",
    "read_training_args",
    "read_trl",
    "read_verl",
    "read_wandb_csv",
]

"""Which importer reads a path: detection and one entry point for :func:`calibrate.load_inputs`."""

from __future__ import annotations

from pathlib import Path

from .._curve_data import CurveData
from ._events import is_event_input, read_events
from ._mapping import KeyMapping
from ._tracking import is_mlflow_input, is_wandb_csv, read_mlflow, read_wandb_csv
from ._trl import is_trl_folder, read_trl
from ._verl import is_verl_log, read_verl

__all__ = ["FRAMEWORKS", "detect", "read_source"]

#: The kinds of external logs read through a :class:`KeyMapping`, in detection order.
FRAMEWORKS = ("trl", "verl", "mlflow", "wandb", "tensorboard")


def detect(path: Path) -> str | None:
    """The kind of external log at ``path`` (one of :data:`FRAMEWORKS`), or None.

    A TRL folder is recognised before its ``runs/`` event files, so a TRL output folder is
    read from ``trainer_state.json``; pass ``output_dir/runs`` to read its TensorBoard logs.
    """
    if is_trl_folder(path):
        return "trl"
    if is_verl_log(path):
        return "verl"
    if is_mlflow_input(path):
        return "mlflow"
    if is_wandb_csv(path):
        return "wandb"
    if is_event_input(path):
        return "tensorboard"
    return None


def read_source(path: Path, kind: str, mapping: KeyMapping, *, strict: bool = False) -> CurveData:
    """Read one external log of a known kind through ``mapping``."""
    readers = {
        "trl": read_trl,
        "verl": read_verl,
        "mlflow": read_mlflow,
        "wandb": read_wandb_csv,
        "tensorboard": read_events,
    }
    return readers[kind](path, mapping, strict=strict)

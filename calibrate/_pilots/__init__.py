"""Pilot designs that find the regime boundary (``calibrate pilots``; torch-free)."""

from ._design import PilotPlan as PilotPlan
from ._design import entropy as entropy
from ._design import initial_settings as initial_settings
from ._design import pick_uncertain as pick_uncertain
from ._design import setting_name as setting_name
from ._design import unit_coords as unit_coords
from ._loop import PilotRun as PilotRun
from ._loop import label_runs as label_runs
from ._loop import pilot_runs as pilot_runs
from ._loop import run_pilot_rounds as run_pilot_rounds
from ._loop import train_args_for as train_args_for

__all__ = [
    "PilotPlan",
    "PilotRun",
    "entropy",
    "initial_settings",
    "label_runs",
    "pick_uncertain",
    "pilot_runs",
    "run_pilot_rounds",
    "setting_name",
    "train_args_for",
    "unit_coords",
]

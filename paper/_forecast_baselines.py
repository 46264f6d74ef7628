"""What a practitioner forecasts a new run with instead of the motif model (issue 31 §3):
the baselines now live in calibrate (``calibrate evaluate``, issue 71 §1); this module keeps
the names the forecast studies use.

- ``nearest_pilot``, ``gp_finals`` (groups by ``knn_groups``), ``knn_groups``, ``gp_groups``
  and ``sigmoid_prefix``: :func:`calibrate.nearest_pilot` and the others, fitted on the pilot
  run records of a study's ``observed.json``.
- ``Forecast`` is :class:`calibrate.Forecast`; ``GROUPS`` is
  :data:`calibrate.FORECAST_GROUPS`; ``knob_features`` is :func:`calibrate.knob_features`.
"""

from __future__ import annotations

from calibrate import FORECAST_GROUPS as GROUPS
from calibrate import Forecast as Forecast
from calibrate import gp_finals as gp_finals
from calibrate import gp_groups as gp_groups
from calibrate import knn_groups as knn_groups
from calibrate import knob_features as knob_features
from calibrate import nearest_pilot as nearest_pilot
from calibrate import onehot_groups as _onehot  # noqa: F401 (tests build probabilities)
from calibrate import sigmoid_prefix as sigmoid_prefix

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

"""Early warning from a run's training signals (issue 69 §3): indicators, one alert rule,
its thresholds fitted on runs it is not scored on."""

from ._indicators import rolling_lag1 as rolling_lag1
from ._indicators import rolling_variance as rolling_variance
from ._indicators import spike_z as spike_z
from ._indicators import trend as trend
from ._rule import DEFAULT_TRIGGERS as DEFAULT_TRIGGERS
from ._rule import INDICATORS as INDICATORS
from ._rule import SignalAlert as SignalAlert
from ._rule import SignalRule as SignalRule
from ._rule import Trigger as Trigger
from ._rule import first_alert as first_alert
from ._rule import fit_rule as fit_rule
from ._rule import indicator_series as indicator_series

__all__ = [
    "DEFAULT_TRIGGERS",
    "INDICATORS",
    "SignalAlert",
    "SignalRule",
    "Trigger",
    "first_alert",
    "fit_rule",
    "indicator_series",
    "rolling_lag1",
    "rolling_variance",
    "spike_z",
    "trend",
]

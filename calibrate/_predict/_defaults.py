"""Defaults of the forecasts that the command lines name without loading JAX."""

__all__ = ["DEFAULT_EXTRAPOLATION_SD"]

#: The bend that ``predict``, ``recommend``, ``pilots`` and the demo give the links beyond
#: the pilots' range by default: the fifth forecast test chose 0.5 by the best pooled log
#: score of final competence over 168 held-out runs of four earlier tests (ties within 0.005
#: going to the smaller bend; ``paper/results/forecast_round5/calibration.json``).
DEFAULT_EXTRAPOLATION_SD = 0.5

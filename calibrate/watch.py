"""Watching a running log: forecasts of one run updated with its own evaluations so far
(what ``python -m calibrate watch`` does), as public names for studies and users.

``prepare(post, setting, steps=..., draws=..., replicates=..., spread=..., key=...)`` solves
the new-run draws of one setting from a fit once; ``forecast(prepared, rows)`` updates
them with a run's evaluations so far (a long table ``step, agent, competence, n_eval``)
and returns its :class:`Forecast` (final competences, bands, P(collapse),
P(oscillation)). ``run_setting(post, hyper)`` reads the fit's linked fields from a run's
hyperparameters; ``self_fit`` fits a run's own evaluations where no pilots' fit exists.
"""

from __future__ import annotations

from ._watch import Forecast, WatchDraws, forecast, prepare, run_setting, self_fit

__all__ = ["Forecast", "WatchDraws", "forecast", "prepare", "run_setting", "self_fit"]

"""``watch``: a running job's forecast updated with its own evaluations (:mod:`._core`, with
its draws :mod:`._draws` and the Laplace update :mod:`._update`) and the command line
(:mod:`._cli`); the training signals' early warning is :mod:`calibrate._warning`. Public
face: :mod:`calibrate.watch`."""

from ._core import MIN_ESS as MIN_ESS
from ._core import UPDATES as UPDATES
from ._core import Forecast as Forecast
from ._core import LaplaceWatch as LaplaceWatch
from ._core import WatchDraws as WatchDraws
from ._core import forecast as forecast
from ._core import forecast_laplace as forecast_laplace
from ._core import prepare as prepare
from ._core import prepare_laplace as prepare_laplace
from ._core import run_setting as run_setting
from ._core import self_fit as self_fit
from ._core import tempered_weights as tempered_weights

__all__ = [
    "MIN_ESS",
    "UPDATES",
    "Forecast",
    "LaplaceWatch",
    "WatchDraws",
    "forecast",
    "forecast_laplace",
    "prepare",
    "prepare_laplace",
    "run_setting",
    "self_fit",
    "tempered_weights",
]

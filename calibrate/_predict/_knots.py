"""Links that may bend beyond the pilots' range (``predict(..., extrapolation_sd=s)``).

A fitted link ``u = a + c (T(h) - center)`` is learned from the pilots' values of ``h``
only. Beyond their range the data say nothing about whether the line goes on: a training
knob often acts through a threshold (a learning rate past which a role collapses) that the
pilots never reached. The bent link

    u = a + c (T(h) - center) + k * beyond(T(h)),
    beyond(v) = v - max_pilots T(h) above the range, v - min_pilots T(h) below it, 0 inside,

adds a knot at each edge of the pilots' range with a slope change ``k ~ N(0, s^2)`` per
draw and slope row. The pilots' likelihood does not depend on ``k`` (every pilot lies inside
its range), so its posterior is its prior: a forecast inside the range is unchanged, and one
beyond it widens with the distance, by ``s`` per unit of the link's scale (``log h`` for a
log link).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import equinox as eqx
import numpy as np

from .._config import ConfigError
from .._model import CurveModel
from ._defaults import DEFAULT_EXTRAPOLATION_SD as DEFAULT_EXTRAPOLATION_SD

__all__ = ["DEFAULT_EXTRAPOLATION_SD", "EDGE", "bend_links", "check_sd", "knot_matrix"]

#: Distances beyond the range below this (on the link's scale) are rounding: no bend.
EDGE = 1e-9


def knot_matrix(cm: CurveModel, pilots: Mapping[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """Per setting and slope row, how far the row's field lies beyond the pilots' range on
    the link's scale (signed; 0 inside the range, within :data:`EDGE` of an edge, or when the
    setting leaves the field out: then it sits at the pilots' centre).

    Args:
        cm: The fitted model (its link records give each row's field and centre).
        pilots: Per linked field, its transformed values over the fit's runs.
        x: The setting matrix ``T(h) - centre`` ``(S, L)`` (``predict``'s).

    Returns:
        ``beyond`` of :mod:`calibrate._predict._knots`, shape ``(S, L)``.
    """
    rows = cm.link_rows
    if not rows:
        return np.zeros_like(x)
    centre = np.array([r.center for r in rows])
    lo = np.array([float(np.min(pilots[r.covariate])) for r in rows])
    hi = np.array([float(np.max(pilots[r.covariate])) for r in rows])
    tv = np.asarray(x, dtype=float) + centre
    out = np.where(tv > hi, tv - hi, np.where(tv < lo, tv - lo, 0.0))
    return np.where(np.abs(out) > EDGE, out, 0.0)


def check_sd(sd: Any) -> float:
    """``sd`` as a float.

    Raises:
        ConfigError: ``sd`` is not a finite number >= 0.
    """
    ok = isinstance(sd, int | float | np.number) and not isinstance(sd, bool)
    if not (ok and math.isfinite(float(sd)) and float(sd) >= 0):
        raise ConfigError(f"extrapolation_sd must be a finite number >= 0, got {sd!r}")
    return float(sd)


def bend_links(
    cm: CurveModel,
    slopes: np.ndarray,
    x: np.ndarray,
    beyond: np.ndarray,
    sd: float,
    *,
    seed: int,
) -> tuple[CurveModel, np.ndarray, np.ndarray]:
    """The model, slopes and setting matrix of bent links (unchanged when ``sd`` is 0 or
    every setting lies inside the pilots' range).

    Each slope row gets a second row on the same parameter whose covariate is ``beyond``
    and whose slope is a fresh ``N(0, sd^2)`` per draw, so the compiled predictor solves
    the bent links as ordinary ones.

    Args:
        cm: The fitted model.
        slopes: Natural link slopes per draw ``(G, L)``.
        x: Setting matrix ``(S, L)``.
        beyond: :func:`knot_matrix` ``(S, L)``.
        sd: Sd of the slope change beyond the range (finite, >= 0).
        seed: Seed of the slope changes (keyword-only).

    Returns:
        ``(cm, slopes, x)`` with ``2L`` slope rows where a link bends.

    Raises:
        ConfigError: ``sd`` is not a finite number >= 0.
    """
    if check_sd(sd) == 0 or not np.any(beyond):
        return cm, slopes, x
    change = float(sd) * np.random.default_rng([seed, 5]).standard_normal(slopes.shape)
    index = np.concatenate([cm.link_index, cm.link_index])
    bent = eqx.tree_at(lambda m: m.link_index, cm, index)
    return bent, np.concatenate([slopes, change], axis=1), np.concatenate([x, beyond], axis=1)

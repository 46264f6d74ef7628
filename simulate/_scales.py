"""The one vocabulary of value scales (plain numpy), shared by every package.

A scale ``T`` maps a value ``h`` to the axis on which it is spaced, fitted or linked:

* ``log`` — ``T(h) = log h`` (``h > 0``): rates and sizes (``rl.lr``, ``rl.batch``);
* ``log1p`` — ``T(h) = log(1 + h)`` (``h >= 0``): counts and coefficients whose default is
  0 (``rl.staleness``, ``rl.kl_coef``); 0 is an ordinary value;
* ``linear`` — ``T(h) = h`` (any finite ``h``).

``simulate.grid`` spaces its axes on these scales, ``calibrate``'s hyperparameter links use
them as link transforms, search spaces (``recommend --space``) sample on them, and the knob
schema (:mod:`llm_runs.knobs`) gives each training knob one. ``lin`` (search-space files of
earlier versions) is read as ``linear``: :func:`scale_name` resolves it.

Example:
    >>> from simulate.common import scale_name, to_scale
    >>> scale_name("lin"), float(to_scale("log1p", 0.0))
    ('linear', 0.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._errors import ConfigError

__all__ = [
    "SCALES",
    "SCALE_ALIASES",
    "SCALE_DOMAINS",
    "from_scale",
    "in_scale_domain",
    "scale_name",
    "to_scale",
]

#: The scales, the default first.
SCALES = ("log", "log1p", "linear")
#: Older spellings read on input (never written): ``lin`` of search-space files.
SCALE_ALIASES = {"lin": "linear"}
#: The values each scale allows, in words (for error messages).
SCALE_DOMAINS = {"log": "a finite number > 0", "log1p": "a finite number >= 0", "linear": "finite"}


def scale_name(name: Any, *, what: str = "scale", error: type[Exception] = ConfigError) -> str:
    """The canonical name of a scale (``lin`` → ``linear``; case as written).

    Raises:
        ConfigError: (or ``error``) Not a scale of :data:`SCALES` nor an alias.
    """
    if isinstance(name, str) and name in SCALES:
        return name
    if isinstance(name, str) and name in SCALE_ALIASES:
        return SCALE_ALIASES[name]
    raise error(f"{what} must be one of {SCALES}, got {name!r}")


def in_scale_domain(scale: str, h: Any) -> np.ndarray:
    """Elementwise: ``h`` is finite and in the scale's domain."""
    h = np.asarray(h, dtype=float)
    finite = np.isfinite(h)
    if scale == "log":
        return finite & (h > 0)
    if scale == "log1p":
        return finite & (h >= 0)
    return finite


#: Per scale, ``(T, T^-1)``: the transform and its inverse.
_MAPS = {"log": (np.log, np.exp), "log1p": (np.log1p, np.expm1), "linear": (np.asarray,) * 2}


def _maps(scale: str):
    if scale not in _MAPS:
        raise ConfigError(f"scale must be one of {SCALES}, got {scale!r}")
    return _MAPS[scale]


def to_scale(scale: str, h: Any) -> np.ndarray:
    """``T(h)`` elementwise (values must lie in the scale's domain).

    Raises:
        ConfigError: An unknown scale.
    """
    return _maps(scale)[0](np.asarray(h, dtype=float))


def from_scale(scale: str, x: Any) -> np.ndarray:
    """``T^-1(x)`` elementwise, the inverse of :func:`to_scale`.

    Raises:
        ConfigError: An unknown scale.
    """
    return _maps(scale)[1](np.asarray(x, dtype=float))

"""The parameter-name grammar (plain Python, no JAX): ``rho[X]``, ``K[X->Y]``, ``beta``...

Names are ``BASE`` or ``BASE[TARGET]`` (a node, or an edge ``SOURCE->TARGET``); the Alon
kinetics also read the textbook short names ``beta``, ``gamma``, ``n_xy``, ``n_xz``, ``n_yz``.
Each base has a domain (:func:`check_param_value`).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .spec import SpecError

__all__ = ["ALON_SHORT", "check_param_value", "parse_param_name"]

_NAME = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\[\s*([^\]]+?)\s*\])?\s*$")
ALON_SHORT = {
    "beta": ("beta", "Y"),
    "gamma": ("gamma", "Z"),
    "n_xy": ("n", "X->Y"),
    "n_xz": ("n", "X->Z"),
    "n_yz": ("n", "Y->Z"),
}
# (lower bound, lower inclusive, upper bound, upper inclusive)
_BOUNDS: dict[str, tuple[float, bool, float, bool]] = {
    "rho": (0, True, np.inf, False),
    "delta": (0, True, np.inf, False),
    "b": (0, True, 1, True),
    "beta": (0, True, np.inf, False),
    "gamma": (0, False, np.inf, False),
    "K": (0, False, np.inf, False),
    "n": (0, False, np.inf, False),
    "Kp": (0, False, np.inf, False),
    "m": (0, False, np.inf, False),
    "sigma": (0, True, np.inf, False),
    "tau": (0, False, np.inf, False),
    "eta": (0, False, np.inf, False),
    "x0": (0, True, np.inf, False),
}


def parse_param_name(name: str) -> tuple[str, str | None]:
    """``"K[X->Y]"`` → ``("K", "X->Y")``; ``"beta"`` → ``("beta", None)``.

    Raises:
        SpecError: ``name`` is not of the form ``BASE`` or ``BASE[TARGET]``.
    """
    m = _NAME.match(name)
    if not m:
        raise SpecError(f"cannot read parameter name {name!r}; write e.g. rho[X] or K[X->Y]")
    return m.group(1), m.group(2)


def check_param_value(name: str, base: str, value: Any, *, bounded: bool) -> None:
    """Raise :class:`~simulate.SpecError` unless ``value`` is finite and inside the domain of
    ``base`` (``bounded``: competence kinetics, whose levels live in [0, 1])."""
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise SpecError(f"parameter {name} must be finite, got {value!r}")
    lo, lo_inc, hi, hi_inc = _BOUNDS.get(base, (-np.inf, True, np.inf, True))
    if base in ("A0", "x0") and bounded:
        lo, lo_inc, hi, hi_inc = 0, True, 1, True
    bad_lo = np.any(arr < lo) if lo_inc else np.any(arr <= lo)
    bad_hi = np.any(arr > hi) if hi_inc else np.any(arr >= hi)
    if bad_lo or bad_hi:
        lb = "[" if lo_inc else "("
        ub = "]" if hi_inc else ")"
        raise SpecError(f"parameter {name}={value!r} is outside its domain {lb}{lo}, {hi}{ub}")

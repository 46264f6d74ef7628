"""Regime labels, their severity order and the groups forecasts report (plain Python).

The one definition of the regime vocabulary every package shares: simulate's classifier
labels trajectories with these codes, llm_runs labels real runs with the same names, and
calibrate's forecasts sum label probabilities into :data:`REGIME_GROUPS`.
"""

from __future__ import annotations

import enum

__all__ = ["REGIME_GROUPS", "REGIME_NAMES", "REGIME_SEVERITY", "Regime", "regime_group"]


class Regime(enum.IntEnum):
    """Regime labels (codes are stable; :data:`REGIME_SEVERITY` orders them)."""

    CONVERGED = 0
    OVERSHOOT = 1  # overshoot or pulse: leaves the start/end interval once, then settles
    DAMPED = 2  # damped oscillation: turning points alternating about the end level, shrinking
    SUSTAINED = 3  # sustained oscillation: still turning at the end, amplitude not decaying
    COLLAPSE = 4  # a competence ends near 0 while the input is on, or the values diverge
    FAILED = 5  # solver error
    UNSETTLED = 6  # still moving at t1 without oscillating (or still growing): run longer


REGIME_NAMES = {
    Regime.CONVERGED: "converged",
    Regime.OVERSHOOT: "overshoot/pulse",
    Regime.DAMPED: "damped oscillation",
    Regime.SUSTAINED: "sustained oscillation",
    Regime.COLLAPSE: "collapse",
    Regime.FAILED: "failed",
    Regime.UNSETTLED: "unsettled",
}

#: Rank of each label when a network's label is its most severe node's (index = code).
REGIME_SEVERITY = (0, 1, 2, 4, 5, 6, 3)

#: Regime groups reported by predictions (simulate.Regime codes of each); they partition the
#: codes: ``converged`` settles without oscillating (overshoot/pulse included).
REGIME_GROUPS: dict[str, tuple[int, ...]] = {
    "converged": (0, 1),
    "oscillating": (2, 3),
    "collapse": (4,),
    "unsettled": (6,),
    "failed": (5,),
}


def regime_group(name: str) -> str:
    """The group of :data:`REGIME_GROUPS` a regime name (:data:`REGIME_NAMES`) belongs to.

    >>> regime_group("damped oscillation")
    'oscillating'

    Raises:
        KeyError: A name that is no regime's.
    """
    code = next((c for c, n in REGIME_NAMES.items() if n == name), None)
    if code is None:
        raise KeyError(f"unknown regime name {name!r}; known: {sorted(REGIME_NAMES.values())}")
    return next(g for g, codes in REGIME_GROUPS.items() if int(code) in codes)

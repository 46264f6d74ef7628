"""No silent wrong answers from :func:`calibrate.predict` (issue 36 §2).

* :func:`failed_draws`: a draw whose competence leaves [0, 1] or is not finite, or whose
  solve failed on any agent, is a failed solve, never a forecast: its regime becomes
  ``failed`` on every agent and its final values NaN (the summaries skip them; all-failed
  shows as failed, not as a number).
* :func:`extrapolation`: how far each setting lies outside the pilots' range of each linked
  field, in units of the pilots' spread (the standard deviation of the link's transformed
  values over the fit's runs); 0 inside the range, ``inf`` for a field constant in the fit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "EXTRAPOLATION_FLAG",
    "MAX_SOLVE_STEPS",
    "TOLERANCE",
    "check_size",
    "extrapolation",
    "failed_draws",
]

#: Slack around [0, 1] (solver round-off) before a competence counts as out of range.
TOLERANCE = 1e-6
#: Settings farther than this many spreads outside the pilots' range are flagged.
EXTRAPOLATION_FLAG = 1.0
_FAILED = 5  # simulate.Regime.FAILED


def failed_draws(
    final: np.ndarray, codes: np.ndarray, curves: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mark out-of-range draws as failed.

    Args:
        final: Final competences ``(S, G, N)``.
        codes: Per-node regime codes ``(S, G, N)``.
        curves: Every draw's curves ``(S, G, T, N)`` when kept (checked at every step).

    Returns:
        ``final`` with NaN for failed draws, ``codes`` with ``failed`` for them, and the
        failed mask ``(S, G)``.
    """
    final = np.asarray(final)
    if not np.issubdtype(final.dtype, np.floating):
        final = final.astype(float)
    bad = ~np.all(np.isfinite(final), -1)
    bad |= np.any(np.asarray(codes) == _FAILED, -1)  # the solver's own failure: no final value
    with np.errstate(invalid="ignore"):
        bad |= np.any((final < -TOLERANCE) | (final > 1 + TOLERANCE), -1)
        if curves is not None:
            c = np.asarray(curves)
            bad |= ~np.all(np.isfinite(c), (-2, -1))
            bad |= np.any((c < -TOLERANCE) | (c > 1 + TOLERANCE), (-2, -1))
    codes = np.where(bad[..., None], _FAILED, np.asarray(codes))
    final = np.where(bad[..., None], np.nan, final).astype(final.dtype)
    return final, codes, bad


def extrapolation(values: dict[str, np.ndarray], settings: Any) -> list[dict[str, float]]:
    """Per setting, each given linked field's distance outside the pilots' range.

    Args:
        values: Per linked field, its transformed values over the fit's runs.
        settings: The settings' transformed values, per setting a dict field -> value.
    """
    stats = {}  # per field, its range and spread over the runs (once, not per setting)
    for f, v in values.items():
        v = np.asarray(v, dtype=float)
        stats[f] = (float(v.min()), float(v.max()), float(v.std()))
    out = []
    for s in settings:
        d: dict[str, float] = {}
        for f, tv in s.items():
            lo, hi, sd = stats[f]
            beyond = max(0.0, float(tv) - hi, lo - float(tv))
            if sd > 0:
                d[f] = beyond / sd
            else:
                d[f] = 0.0 if beyond == 0 else float("inf")
        out.append(d)
    return out


#: Most fixed RK4 steps one draw's solve may take (a 10^8-step horizon asked 52 GB).
MAX_SOLVE_STEPS = 2_000_000


def check_size(t: np.ndarray, substeps: int, draws: int) -> None:
    """Refuse, before any solve, a horizon whose fixed-step solves would not fit.

    Raises:
        ConfigError: more than :data:`MAX_SOLVE_STEPS` RK4 steps per draw.
    """
    from .._config import ConfigError

    n = int(t.size - 1) * int(substeps)
    if n > MAX_SOLVE_STEPS:
        raise ConfigError(
            f"the horizon of {t[-1]:g} steps needs {n:.3g} solver steps per draw (x {draws} "
            f"draws); at most {MAX_SOLVE_STEPS:.0e}: ask for a shorter --steps"
        )

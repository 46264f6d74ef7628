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
    "EDGE_RADIUS",
    "EXTRAPOLATION_FLAG",
    "FLOOR_FADE",
    "MAX_SOLVE_STEPS",
    "TOLERANCE",
    "check_size",
    "collapse_floor",
    "extrapolation",
    "failed_draws",
    "lift_collapse",
    "pilot_distance",
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


#: Pilot spreads beyond the range over which the collapse floor fades in (see
#: :func:`collapse_floor`).
FLOOR_FADE = 0.25
#: Radius (pilot spreads, all fields together) of the pilots that count as the evidence at
#: the edge nearest a setting.
EDGE_RADIUS = 0.5


def pilot_distance(
    raw: dict[str, np.ndarray], transforms: dict[str, str], settings: Any
) -> list[dict[str, Any]]:
    """Per setting, how far it lies from the pilots, field by field and in all.

    Args:
        raw: Per linked field, its values over the fit's runs (knob units).
        transforms: Per field, its link transform (``log``, ``log1p``, ``linear``).
        settings: Per setting, a dict field -> value (knob units).

    Returns:
        Per setting ``{"fields": {field: {"value", "pilots_low", "pilots_high", "beyond",
        "spreads", "words"}}, "nearest_pilot_spreads": float}``: ``beyond`` in knob units
        (a factor for a ``log`` field: 2.0 is twice the highest pilot or half the lowest;
        a difference otherwise; 0 inside the range), ``spreads`` the same distance in sds
        of the pilots' transformed values, ``words`` a phrase for people, and the
        Euclidean distance to the nearest pilot run in those spreads over every field.
    """
    from .._knobs import transform_values

    tv = {f: np.asarray(transform_values(transforms[f], np.asarray(v, float)), float)
          for f, v in raw.items()}  # fmt: skip
    out = []
    for s in settings:
        fields: dict[str, Any] = {}
        sq = np.zeros(next(iter(tv.values())).size) if tv else np.zeros(0)
        for f, v in s.items():
            if f not in raw:
                continue
            lo, hi = float(np.min(raw[f])), float(np.max(raw[f]))
            x = float(transform_values(transforms[f], float(v)))
            sd = float(np.std(tv[f]))
            t_lo, t_hi = float(np.min(tv[f])), float(np.max(tv[f]))
            past = max(0.0, x - t_hi, t_lo - x)
            spreads = past / sd if sd > 0 else (0.0 if past == 0 else float("inf"))
            if transforms[f] == "log":
                beyond = 1.0 if past == 0 else (float(v) / hi if x > t_hi else lo / float(v))
                side = "above the highest" if x > t_hi else "below the lowest"
                words = ("inside the pilots' range" if past == 0
                         else f"{beyond:.2g}x {side} pilot")  # fmt: skip
            else:
                beyond = 0.0 if past == 0 else (float(v) - hi if x > t_hi else lo - float(v))
                side = "above the highest" if x > t_hi else "below the lowest"
                words = ("inside the pilots' range" if past == 0
                         else f"{beyond:.3g} {side} pilot")  # fmt: skip
            if past > 0 and np.isfinite(spreads):
                words += f" ({spreads:.1f} pilot spreads)"
            fields[f] = {"value": float(v), "pilots_low": lo, "pilots_high": hi,
                         "beyond": beyond, "spreads": spreads, "words": words}  # fmt: skip
            if sd > 0:
                sq = sq + ((tv[f] - x) / sd) ** 2
        near = float(np.sqrt(sq.min())) if sq.size else 0.0
        out.append({"fields": fields, "nearest_pilot_spreads": near})
    return out


def collapse_floor(values: dict[str, np.ndarray], settings: Any) -> list[float]:
    """Per setting, the least P(collapse) that the pilots leave open.

    A fit that saw no collapse near a setting beyond the pilots' range cannot rule one out.
    Beyond the range, the floor is the rule of succession over the ``n`` pilot runs within
    :data:`EDGE_RADIUS` spreads of the setting's nearest point of the range (the evidence at
    that edge; ``n = 0`` gives 1/2), faded in with the distance ``d`` (pilot spreads, the
    largest over the fields): ``(1 - exp(-d / FLOOR_FADE)) / (n + 2)``. Inside the range it
    is 0: there the fit interpolates between pilots it has seen.

    Args:
        values: Per linked field, its transformed values over the fit's runs.
        settings: Per setting, its transformed values (field -> value).
    """
    fields = list(values)
    if not fields:
        return [0.0 for _ in settings]
    v = np.stack([np.asarray(values[f], float) for f in fields], axis=1)  # (R, F)
    lo, hi, sd = v.min(0), v.max(0), v.std(0)
    sd = np.where(sd > 0, sd, np.inf)
    out = []
    for s in settings:
        x = np.asarray([float(s.get(f, (lo[j] + hi[j]) / 2)) for j, f in enumerate(fields)])
        past = np.maximum(0.0, np.maximum(x - hi, lo - x)) / sd
        d = float(np.max(past)) if past.size else 0.0
        if d <= 0:
            out.append(0.0)
            continue
        edge = np.clip(x, lo, hi)
        n = int(np.sum(np.sqrt((((v - edge) / sd) ** 2).sum(1)) <= EDGE_RADIUS))
        out.append(float((1.0 - np.exp(-d / FLOOR_FADE)) / (n + 2)))
    return out


#: Memory of one solver step of one draw, setting and agent (measured: ~40 bytes: the
#: fixed-step solve keeps its stages and states; 24 GB at --steps 1e6 for 200 draws of C1).
STEP_BYTES = 40


def check_memory(
    post: Any,
    *,
    steps: float | None,
    draws: int,
    band: str,
    settings: int = 1,
    what: str = "--steps",
    advice: str | None = None,
) -> None:
    """Refuse, before any solve, a forecast whose solves would not fit in memory (the
    estimate: solver steps x draws x settings x agents x :data:`STEP_BYTES`, against
    :func:`simulate.memory_limit`), naming ``what`` and its value.

    Raises:
        ConfigError: The estimate is larger than the machine allows (one line).
    """
    from simulate import check_memory as refuse

    cm = post.model
    horizon = float(cm.ts[-1] if steps is None else steps)
    n_steps = max(1.0, horizon / float(cm.config.dt))
    n_draws = min(int(draws), int(np.prod(post.shape)))
    if band == "new_run" and cm.re_index.size:
        n_draws *= 2
    agents = len(cm.network.names)
    value = f"{int(horizon)}" if horizon.is_integer() and horizon < 1e18 else f"{horizon:g}"
    refuse(
        f"{what} {value}",
        STEP_BYTES * n_steps * n_draws * settings * agents,
        detail=f"{n_draws} draws x {settings} setting(s) x {agents} agents x "
        f"{n_steps:.3g} solver steps",
        advice=advice or f"ask for a shorter {what} or fewer --draws",
    )


def lift_collapse(groups: dict[str, Any], floor: Any) -> dict[str, Any]:
    """Group probabilities with P(collapse) lifted to ``floor`` (per setting, times the share
    of draws whose solve did not fail: a failed solve stays one) and the other solved groups
    scaled down, so they still sum to 1 (:func:`collapse_floor` gives the floor)."""
    c, failed = np.asarray(groups["collapse"], float), np.asarray(groups["failed"], float)
    solved = 1.0 - failed
    lifted = np.maximum(c, np.asarray(floor, float) * solved)
    others = solved - c  # the solved draws' mass outside collapse
    rest = np.where(others > 0, (solved - lifted) / np.where(others > 0, others, 1.0), 0.0)
    return {g: lifted if g == "collapse" else v if g == "failed" else v * rest
            for g, v in groups.items()}  # fmt: skip

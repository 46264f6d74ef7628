"""Collapse of a measured competence curve: one rule for every real run (plain NumPy, no JAX).

A real run's competence is measured on ``n_eval`` probes at each evaluation, so each value
carries binomial noise of sd ``sqrt(p (1 - p) / n_eval)``. :func:`fall_collapse` calls a curve
collapsed when it falls far below where it was and stays there, by margins stated in that
noise (see its docstring for the thresholds and their reasons). :func:`simulate.classify_observed`
applies it to every node of a run, on top of the noise-aware regime classifier, and
``llm_runs.observed_regime`` labels run folders with that.

Example:
    >>> from simulate.common import fall_collapse
    >>> fall_collapse([0.64, 0.3, 0.1, 0.05, 0.04, 0.03, 0.02], 64).collapsed
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._errors import AgentmotifsError

__all__ = [
    "COLLAPSE_RULE",
    "PEAK_COLLAPSE_RULE",
    "Collapse",
    "fall_collapse",
    "fall_collapse_many",
    "peak_collapse",
]

COLLAPSE_RULE = (
    "an agent's competence curve (T >= 4 evaluations on n_eval probes) has collapsed iff, with "
    "m = max(3, ceil(0.2 T)) tail evaluations of mean L and a reference R = the larger of the "
    "first evaluation and the highest 3-evaluation moving mean before the tail: L < 0.5 R, the "
    "last evaluation < 0.5 R, and R - L > 3 binomial sd of that difference (each level's "
    "variance p (1 - p) / (n_eval k) over its k evaluations, p clipped to [1/n_eval, "
    "1 - 1/n_eval]); a run has collapsed iff it diverged or any agent has"
)


@dataclass(frozen=True)
class Collapse:
    """The verdict of :func:`fall_collapse` on one curve, with the numbers it used.

    Attributes:
        collapsed: Whether the curve fell far below its reference and stayed there.
        reference: ``R``, the level the fall is measured from.
        tail: ``L``, the mean of the tail evaluations.
        last: The last evaluation.
        drop_sd: Binomial sd of ``R - L``.
        n_tail: Evaluations in the tail (``m``).
        onset: Index of the evaluation the collapse began at (None when not collapsed): the
            first one after the reference's evaluations that is below ``fall * R`` and from
            which the mean of the rest of the curve stays below ``fall * R``.
    """

    collapsed: bool
    reference: float
    tail: float
    last: float
    drop_sd: float
    n_tail: int
    onset: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """The verdict as a JSON-ready dict."""
        return {
            "collapsed": self.collapsed,
            "reference": self.reference,
            "tail": self.tail,
            "last": self.last,
            "drop_sd": self.drop_sd,
            "n_tail": self.n_tail,
            "onset": self.onset,
        }


def _sd(p: float, n_eval: float, k: int) -> float:
    q = min(max(p, 1.0 / n_eval), 1.0 - 1.0 / n_eval)
    return math.sqrt(q * (1.0 - q) / (n_eval * k))


def fall_collapse(
    values: Any,
    n_eval: float,
    *,
    fall: float = 0.5,
    z: float = 3.0,
    tail_share: float = 0.2,
    min_tail: int = 3,
    smooth: int = 3,
) -> Collapse:
    """Whether a measured competence curve collapsed: fell far below its start or its peak
    and stayed there, beyond what binomial probe noise at ``n_eval`` explains.

    The rule, on ``T >= 4`` evaluations ``y`` (evenly spaced or not):

    * tail: the last ``m = max(min_tail, ceil(tail_share * T))`` evaluations (3 of 7, 5 of
      21), mean ``L``. Averaging ``m >= 3`` values shrinks the probe noise by ``sqrt(m)``, and
      a tail of a fifth of the run is what "stays there" means: one low evaluation is not a
      collapse;
    * reference: ``R = max(y[0], highest moving mean of `smooth` evaluations before the
      tail)``. The start covers a fall from the first evaluation; the smoothed running peak
      covers a rise then a fall, and smoothing over 3 evaluations keeps one lucky probe draw
      from setting the peak (the max of ~15 three-point means of a flat curve exceeds its
      level by ~1.7 of their sd: 0.05 at p = 0.5 and n_eval = 32);
    * collapsed iff ``L < fall * R`` and ``y[-1] < fall * R`` (lost at least half of it and
      still low at the end: a dip that recovers is not a collapse) and ``R - L > z * sd`` with
      ``sd^2 = p_R (1 - p_R) / (n_eval k_R) + p_L (1 - p_L) / (n_eval m)`` (``k_R`` = 1 for
      the start, ``smooth`` for a moving mean; levels clipped to ``[1/n_eval, 1 - 1/n_eval]``
      so a level of 0 still carries the noise of one probe). ``z = 3`` is a one-sided
      0.13 % test per curve: a flat curve at level ``p`` passes the halving only where the
      noise is large against ``p`` (``p`` below ~0.25 at ``n_eval`` 32), and there the
      3-sd test stops it (Monte Carlo in the tests: < 1 % of flat curves at ``n_eval`` 32).

    Unlike :func:`simulate.classify`'s low-level rule for simulated kinetics (a node that
    settles below ``collapse_level``), a curve that starts near 0 and stays there has not
    collapsed: it never learned.

    Args:
        values: The curve, shape ``(T,)``, values in ``[0, 1]``.
        n_eval: Probes per evaluation (> 0; the effective count for a mean over agents).
        fall: Largest share of ``R`` that counts as far below it.
        z: Binomial sds the drop must exceed.
        tail_share: Share of the evaluations in the tail.
        min_tail: Fewest evaluations in the tail.
        smooth: Width of the moving mean of the reference peak.

    Returns:
        The verdict and the numbers behind it.

    Raises:
        AgentmotifsError: Fewer than 4 evaluations, non-finite values, or a bad ``n_eval``.
    """
    y = np.asarray(values, dtype=np.float64).reshape(-1)
    if not (isinstance(n_eval, int | float | np.integer | np.floating) and n_eval > 0):
        raise AgentmotifsError(f"n_eval must be a positive number, got {n_eval!r}")
    if y.size < 4:
        raise AgentmotifsError(f"a collapse needs at least 4 evaluations, got {y.size}")
    if not np.all(np.isfinite(y)):
        raise AgentmotifsError("competence values must be finite to judge a collapse")
    T = y.size
    m = min(max(min_tail, math.ceil(tail_share * T)), T - 1)
    head = y[: T - m]
    w = max(1, min(smooth, head.size))
    means = np.convolve(head, np.ones(w) / w, mode="valid")
    peak = float(np.max(means))
    start = float(y[0])
    ref, k_ref = (start, 1) if start >= peak else (peak, w)
    after = 1 if start >= peak else int(np.argmax(means)) + w  # first evaluation past R's
    tail = float(np.mean(y[-m:]))
    last = float(y[-1])
    sd = math.sqrt(_sd(ref, float(n_eval), k_ref) ** 2 + _sd(tail, float(n_eval), m) ** 2)
    collapsed = tail < fall * ref and last < fall * ref and ref - tail > z * sd
    onset = None
    if collapsed:
        rest = np.cumsum(y[::-1])[::-1] / np.arange(T, 0, -1)  # mean of y[i:]
        low = (y < fall * ref) & (rest < fall * ref)
        low[:after] = False
        onset = int(np.argmax(low))  # exists: the last evaluation qualifies
    return Collapse(bool(collapsed), ref, tail, last, sd, m, onset)


#: The second collapse rule, which ignores falls from the starting level (its words).
PEAK_COLLAPSE_RULE = (
    "an agent's competence curve (T >= 4 evaluations) has collapsed iff, with P the highest "
    "3-evaluation moving mean after the first evaluation (before the last three), each of the "
    "last three evaluations < 0.5 P and P minus their mean >= 0.2; a curve that falls from its "
    "starting level without ever rising is not a collapse by this rule; a run has collapsed "
    "iff it diverged or any agent has"
)


def peak_collapse(
    values: Any, *, fall: float = 0.5, gap: float = 0.2, smooth: int = 3, tail: int = 3
) -> bool:
    """The second rule for real runs (:data:`PEAK_COLLAPSE_RULE`): a fall from a learned peak.

    Where :func:`fall_collapse` measures the fall from the larger of the start and the
    smoothed peak, this rule takes the peak of the ``smooth``-evaluation moving mean over the
    evaluations after the first, so an agent that falls from where it started without ever
    learning is not called collapsed. It needs no ``n_eval``: the margin ``gap`` is absolute.

    Args:
        values: The curve, shape ``(T,)``, values in ``[0, 1]``, ``T >= 4``.
        fall: Largest share of the peak each tail evaluation may keep.
        gap: Smallest drop of the tail's mean below the peak (competence units).
        smooth: Width of the peak's moving mean.
        tail: Evaluations in the tail.

    Returns:
        Whether the curve collapsed by this rule.

    Raises:
        AgentmotifsError: Fewer than 4 evaluations or non-finite values.
    """
    y = np.asarray(values, dtype=np.float64).reshape(-1)
    if y.size < 4:
        raise AgentmotifsError(f"a collapse needs at least 4 evaluations, got {y.size}")
    if not np.all(np.isfinite(y)):
        raise AgentmotifsError("competence values must be finite to judge a collapse")
    m = min(tail, y.size - 2)
    head = y[1 : y.size - m]
    w = max(1, min(smooth, head.size))
    peak = float(np.max(np.convolve(head, np.ones(w) / w, mode="valid")))
    last = y[-m:]
    return bool(np.all(last < fall * peak) and peak - float(np.mean(last)) >= gap)


def fall_collapse_many(
    values: Any,
    n_eval: Any,
    *,
    fall: float = 0.5,
    z: float = 3.0,
    tail_share: float = 0.2,
    min_tail: int = 3,
    smooth: int = 3,
) -> np.ndarray:
    """:func:`fall_collapse`'s verdict on many curves at once (its rule, vectorised).

    Args:
        values: Curves, shape ``(B, T)``, finite, in ``[0, 1]``, ``T >= 4``.
        n_eval: Probes per evaluation: a number or one per curve ``(B,)``, > 0.
        fall: As :func:`fall_collapse`.
        z: As :func:`fall_collapse`.
        tail_share: As :func:`fall_collapse`.
        min_tail: As :func:`fall_collapse`.
        smooth: As :func:`fall_collapse`.

    Returns:
        Whether each curve collapsed, shape ``(B,)`` (bool).

    Raises:
        AgentmotifsError: Fewer than 4 evaluations, non-finite values, or a bad ``n_eval``.
    """
    y = np.asarray(values, dtype=np.float64)
    if y.ndim != 2 or y.shape[1] < 4:
        raise AgentmotifsError(f"curves must have shape (B, T) with T >= 4, got {y.shape}")
    if not np.all(np.isfinite(y)):
        raise AgentmotifsError("competence values must be finite to judge a collapse")
    ne = np.broadcast_to(np.asarray(n_eval, dtype=np.float64), (y.shape[0],))
    if not np.all(ne > 0):
        raise AgentmotifsError(f"n_eval must be positive, got {n_eval!r}")
    T = y.shape[1]
    m = min(max(min_tail, math.ceil(tail_share * T)), T - 1)
    head = y[:, : T - m]
    w = max(1, min(smooth, head.shape[1]))
    csum = np.concatenate([np.zeros((y.shape[0], 1)), np.cumsum(head, axis=1)], axis=1)
    peak = ((csum[:, w:] - csum[:, :-w]) / w).max(axis=1)
    start = y[:, 0]
    use_start = start >= peak
    ref = np.where(use_start, start, peak)
    k_ref = np.where(use_start, 1.0, float(w))
    tail = y[:, -m:].mean(axis=1)
    last = y[:, -1]

    def var(p: np.ndarray, k: Any) -> np.ndarray:
        q = np.clip(p, 1.0 / ne, 1.0 - 1.0 / ne)
        return q * (1.0 - q) / (ne * k)

    sd = np.sqrt(var(ref, k_ref) + var(tail, float(m)))
    return (tail < fall * ref) & (last < fall * ref) & (ref - tail > z * sd)

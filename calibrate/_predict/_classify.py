"""simulate.classify's per-node regimes on a batch of curves laid out with the batch LAST.

:func:`classify_batch` is :func:`simulate.classify` for solutions with the input on
throughout (its ``ode`` branch, default options), written on ``(T, N, B)`` curves: the
reductions over time and one zig-zag scan whose every step is a wide SIMD operation over
the batch, with the same comparisons on the same values, so the same labels (checked
against ``simulate.classify`` in tests/calibrate/test_predict_fast_classify.py). The
predictor's per-curve vmap of ``simulate.classify`` runs two scans over time per node with
the batch first.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import simulate
from simulate import zigzag_update

__all__ = ["classify_batch"]


def classify_batch(
    y: jax.Array,
    ok: jax.Array,
    *,
    rel_tol: float = 0.02,
    abs_tol: float = 1e-6,
    collapse_level: float = 0.05,
    sustain_ratio: float = 0.5,
    growth_ratio: float = 2.0,
    diverge_level: float = 1e6,
    shortcut: bool = False,
) -> jax.Array:
    """Per-node regime codes of :func:`simulate.classify` (default options, ``ode``
    solutions, input on throughout) for curves ``y`` of shape ``(T, N, B)``.

    Args:
        y: Levels, time first, batch last.
        ok: Per-curve solver success ``(B,)`` (``False``: every node ``failed``).
        shortcut: Skip the zig-zag scan when no curve of the batch can have a turning
            point (:func:`_no_turns`; the same labels). Only outside a ``vmap``: under one
            the ``cond`` runs both branches.

    Returns:
        Codes of :class:`simulate.Regime`, ``(N, B)`` int8.
    """
    T = y.shape[0]
    R = simulate.Regime
    y_start, y_end = y[0], y[-1]
    y_max, y_min = jnp.max(y, axis=0), jnp.min(y, axis=0)
    big = jnp.maximum(jnp.abs(y_max), jnp.abs(y_min))  # max |y| of a finite curve
    scale = jnp.maximum(big, abs_tol)
    h = jnp.maximum(rel_tol * scale, abs_tol)
    late0 = T - max(T // 4, 1)
    late_max, late_min = jnp.max(y[late0:], axis=0), jnp.min(y[late0:], axis=0)
    m = 0.5 * (late_max + late_min)
    a_late = 0.5 * (late_max - late_min)
    mid = y[T // 4 : T // 2]
    a_mid = jnp.maximum(jnp.max(jnp.abs(mid - m), axis=0, initial=0.0), 0.0)
    if shortcut:
        z = jnp.zeros(y.shape[1:], jnp.int32)
        n_late, best = jax.lax.cond(
            _no_turns(y, h), lambda: (z, z), lambda: _turning_points(y, m, h, T // 2)
        )
    else:
        n_late, best = _turning_points(y, m, h, T // 2)
    excursion = jnp.maximum(
        y_max - jnp.maximum(y_start, y_end), jnp.minimum(y_start, y_end) - y_min
    )
    overshoot = excursion > h
    settled = a_late <= h
    growing = (a_mid > h) & (a_late > growth_ratio * a_mid)
    late_turns = n_late >= 2
    sustained = late_turns & ~settled & (a_late >= sustain_ratio * a_mid) & ~growing
    damped = (best >= 2) & ~sustained & (settled | (late_turns & ~growing))
    unsettled = ~settled & ~sustained & ~damped
    label = jnp.where(
        sustained,
        int(R.SUSTAINED),
        jnp.where(
            damped,
            int(R.DAMPED),
            jnp.where(
                unsettled,
                int(R.UNSETTLED),
                jnp.where(overshoot, int(R.OVERSHOOT), int(R.CONVERGED)),
            ),
        ),
    )
    label = jnp.where((y_end < collapse_level) & settled, int(R.COLLAPSE), label)
    finite = jnp.all(jnp.isfinite(y), axis=0)
    sc = jnp.maximum(1.0, jnp.abs(jnp.where(jnp.isfinite(y_start), y_start, 0.0)))
    huge = big > diverge_level * sc  # all finite: some |y| beyond the divergence level
    label = jnp.where(huge & finite, int(R.COLLAPSE), label)
    label = jnp.where(~ok[None, :] | ~finite, int(R.FAILED), label)
    return label.astype(jnp.int8)


def _no_turns(y: jax.Array, h: jax.Array) -> jax.Array:
    """Whether no curve of ``y`` ``(T, ...)`` has a turning point of height ``h``.

    A turning point needs a fall of more than ``h`` below an earlier value (after a rise) or
    a rise of more than ``h`` above one (after a fall), and the zig-zag starts moving only by
    such a rise or fall from ``y[0]``; a curve whose total fall (or total rise) is at most
    ``h`` bounds every such move, so it has none (zero turning points, chain 0). The smaller
    of the two is ``(V - |y[-1] - y[0]|) / 2`` with ``V`` the total variation (one pass);
    checked against half of ``h``, so rounding cannot decide it; any NaN answers False.
    """
    v = jnp.sum(jnp.abs(y[1:] - y[:-1]), axis=0)
    return jnp.all(v - jnp.abs(y[-1] - y[0]) <= h)


def _turning_points(y: jax.Array, m: jax.Array, h: jax.Array, late_from: int):
    """simulate's zig-zag of height ``h`` (``simulate._features._turning_points`` with the
    whole run in the window) on ``(T, ...)`` curves: turning points from index
    ``late_from`` on, and the longest alternating chain beyond ``m ± h``."""
    i32 = jnp.int32

    def step(carry, inp):
        direction, ext, n_late, prev_dev, chain, best = carry
        yi, li = inp
        new_dir, ext, prev_dev, chain, turn = zigzag_update(
            direction, ext, prev_dev, chain, yi, True, m, h
        )
        n_late = n_late + (turn & li).astype(i32)
        return (new_dir, ext, n_late, prev_dev, chain, jnp.maximum(best, chain)), None

    z = jnp.zeros(y.shape[1:], i32)
    init = (z, y[0], z, jnp.zeros_like(y[0]), z, z)
    late = jnp.arange(1, y.shape[0]) >= late_from
    (_, _, n_late, _, _, best), _ = jax.lax.scan(step, init, (y[1:], late))
    return n_late, best

"""A lean adaptive Runge–Kutta solver for a batch of ODE systems that share one step.

:func:`tsit5_shared` integrates ``B`` independent systems stored as one ``(S, B)`` array with
Tsitouras' 5(4) pair (the tableau diffrax's ``Tsit5`` uses), one scalar time and step for the
whole batch, a PI step-size controller on the worst cell's error, and Tsitouras' continuous
extension to fill the save times. It is a single ``lax.while_loop`` whose per-step control
flow is scalar, so the cost per step is the seven right-hand-side evaluations on the whole
batch and little else; ``diffrax.diffeqsolve`` does the same mathematics with more per-step
bookkeeping, which dominates for small systems.

Discontinuities of a piecewise-constant input are handled exactly: steps never cross a jump
time (they end on it), the input level is read once per step at the step's midpoint, and the
FSAL stage is recomputed when the level changes.

Failures are data: a cell that turns non-finite is first retried with smaller steps (so a too
large step cannot produce a spurious NaN); if it is still non-finite once the step is at the
floor, the cell is frozen (its values no longer updated, its error ignored) and the caller sees
non-finite values. If the step would have to go below the floor for finite cells, or the
step budget runs out, the returned ``ok`` is False.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jaxtyping import Array

__all__ = ["RKResult", "tsit5_shared"]

# Tsitouras (2011), Table 1; the same digits as diffrax._solver.tsit5 (truncated to float64).
_A = (
    (0.161,),
    (-0.008480655492356989, 0.335480655492357),
    (2.897153057105493, -6.359448489975075, 4.3622954328695815),
    (5.325864828439257, -11.748883564062828, 7.4955393428898365, -0.09249506636175525),
    (
        5.86145544294642,
        -12.92096931784711,
        8.159367898576159,
        -0.071584973281401,
        -0.028269050394068383,
    ),
)
_B = (
    0.09646076681806523,
    0.01,
    0.4798896504144996,
    1.379008574103742,
    -3.290069515436081,
    2.324710524099774,
)
_E = (  # b - b_hat (7 stages, the last is the FSAL stage)
    0.09646076681806523 - 0.09468075576583945,
    0.01 - 0.009183565540343254,
    0.4798896504144996 - 0.4877705284247616,
    1.379008574103742 - 1.234297566930479,
    -3.290069515436081 + 2.7077123499835256,
    2.324710524099774 - 1.866628418170587,
    -1.0 / 66.0,
)
_SAFETY, _FAC_MIN, _FAC_MAX = 0.9, 0.2, 10.0
_PI_BETA1, _PI_BETA2 = 0.7 / 5.0, 0.4 / 5.0  # Hairer's PI exponents for a 5(4) pair


def _dense_weights(th: Array) -> tuple[Array, ...]:
    """Tsitouras' continuous-extension weights ``b_i(theta)``, ``theta`` in [0, 1]."""
    t2 = th * th
    return (
        -1.0530884977290216
        * th
        * (th - 1.3299890189751412)
        * (t2 - 1.4364028541716351 * th + 0.7139816917074209),
        0.1017 * t2 * (t2 - 2.1966568338249754 * th + 1.2949852507374631),
        2.490627285651252793 * t2 * (t2 - 2.38535645472061657 * th + 1.57803468208092486),
        -16.54810288924490272 * (th - 1.21712927295533244) * (th - 0.61620406037800089) * t2,
        47.37952196281928122 * (th - 1.203071208372362603) * (th - 0.658047292653547382) * t2,
        -34.87065786149660974 * (th - 1.2) * (th - 0.666666666666666667) * t2,
        2.5 * (th - 1.0) * (th - 0.6) * t2,
    )


def _lin(coeffs, ks) -> Array:
    """``sum_i coeffs[i] * ks[i]`` (scalar coefficients, ``(S, B)`` stages)."""
    acc = coeffs[0] * ks[0]
    for c, k in zip(coeffs[1:], ks[1:], strict=True):
        acc = acc + c * k
    return acc


def _barrier(x: Array) -> Array:
    return jax.lax.optimization_barrier(x)


def _combine(y: Array, h: Array, coeffs, ks) -> Array:
    return y + h * _lin(coeffs, ks)


class RKResult(NamedTuple):
    """Output of :func:`tsit5_shared`.

    Attributes:
        ys: States at the save times, shape ``(T, S, B)`` (or as ``emit`` and ``time_axis``
            lay them out); NaN where never reached.
        y_end: State at the last time reached, shape ``(S, B)``.
        ok: Scalar bool: the end time was reached within the step budget.
        steps: Number of attempted steps (scalar int).
        rejected: Number of rejected steps (scalar int).
    """

    ys: Array
    y_end: Array
    ok: Array
    steps: Array
    rejected: Array


def _cell_norm(e: Array) -> Array:
    """Root-mean-square over the state axis (axis 0) of a scaled ``(S, B)`` array → ``(B,)``."""
    return jnp.sqrt(jnp.mean(e * e, axis=0))


def _initial_step(f, y0, k0, aux, rtol, atol, span):
    """Hairer, Nørsett & Wanner's starting step (worst cell), clipped to ``span``."""
    scale = atol + rtol * jnp.abs(y0)
    fin = jnp.isfinite(y0).all(axis=0)

    def worst(v):
        return jnp.max(jnp.where(fin, _cell_norm(v / scale), 0.0))

    d0, d1 = worst(y0), worst(k0)
    h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / jnp.maximum(d1, 1e-30))
    h0 = jnp.minimum(h0, span)
    k1 = f(y0 + h0 * k0, aux)
    d2 = worst(k1 - k0) / h0
    dm = jnp.maximum(d1, d2)
    h1 = jnp.where(
        dm <= 1e-15, jnp.maximum(1e-6, h0 * 1e-3), (0.01 / jnp.maximum(dm, 1e-30)) ** 0.2
    )
    return jnp.minimum(jnp.minimum(100.0 * h0, h1), span)


def tsit5_shared(
    f: Callable[[Array, Any], Array],
    prep: Callable[[Array], Any],
    y0: Array,
    ts: Array,
    level: Callable[[Array], Array],
    jump_ts: Array,
    rtol: float,
    atol: float,
    max_steps: int,
    emit: Callable[[Array, Array], Array] | None = None,
    time_axis: int = 0,
) -> RKResult:
    """Integrate ``dY/dt = f(Y, prep(level(t)))`` for a batch of systems sharing one step.

    Args:
        f: Right-hand side ``f(Y, aux) -> dY`` on the batched state ``Y`` of shape
            ``(S, B)``; column ``b`` of the result may depend on column ``b`` of ``Y`` only.
        prep: ``aux = prep(s)`` for a scalar input level ``s`` (evaluated once per step).
        y0: Initial state, shape ``(S, B)``.
        ts: Increasing save times, shape ``(T,)``; ``ts[0]`` is the start, ``ts[-1]`` the end.
        level: Scalar input level at scalar time ``t`` (piecewise constant).
        jump_ts: Times where ``level`` may jump, shape ``(J,)``, increasing (any beyond the
            span are ignored).
        rtol: Relative tolerance (per component).
        atol: Absolute tolerance (per component).
        max_steps: Budget of attempted steps.
        emit: What to store per save time: ``emit(Y, level(t_save))`` (default ``Y``), e.g.
            the observed levels in the caller's final layout (saves a pass over the output).
        time_axis: Position of the time axis in ``ys`` (the other axes are ``emit``'s).

    Returns:
        :class:`RKResult`; ``ys`` in the dtype of ``ts``.
    """
    dtype = ts.dtype
    y0 = y0.astype(dtype)
    t0, t_end = ts[0], ts[-1]
    span = t_end - t0
    n_save = ts.shape[0]
    eps = jnp.finfo(dtype).eps
    h_floor = 100.0 * eps * jnp.maximum(span, jnp.abs(t_end))
    jumps = jnp.concatenate([jump_ts.astype(dtype), jnp.full((1,), jnp.inf, dtype)])
    rtol_, atol_ = jnp.asarray(rtol, dtype), jnp.asarray(atol, dtype)

    s0 = level(t0)
    aux0 = prep(s0)
    k0 = f(y0, aux0)
    h_init = _initial_step(f, y0, k0, aux0, rtol_, atol_, span).astype(dtype)
    if emit is None:
        emit = lambda y, s: y  # noqa: E731
    shape = list(jax.eval_shape(emit, y0, s0).shape)
    shape.insert(time_axis, n_save)
    buf0 = jnp.full(shape, jnp.nan, dtype)

    def save(t, h, y, ks, idx, buf, t_new, accept):
        """Fill every save time in ``(t, t_new]`` (none if the step was rejected)."""

        def cond(c):
            i, _ = c
            return accept & (i < n_save) & (ts[jnp.minimum(i, n_save - 1)] <= t_new)

        def body(c):
            i, b = c
            w = _dense_weights((ts[i] - t) / h)
            val = emit(_combine(y, h, w, ks), level(ts[i])).astype(dtype)
            return i + 1, jax.lax.dynamic_update_index_in_dim(b, val, i, time_axis)

        return jax.lax.while_loop(cond, body, (idx, buf))

    def step(c):
        t, h, y, k1, s_k1, err_prev, idx, buf, n, n_rej, failed = c
        nxt = jumps[jnp.searchsorted(jumps, t, side="right")]
        stop = jnp.minimum(nxt, t_end)
        clipped = h >= stop - t
        t_new = jnp.where(clipped, stop, t + h)
        hh = t_new - t
        s = level(t + 0.5 * hh)
        aux = prep(s)
        k1 = jax.lax.cond(s == s_k1, lambda: k1, lambda: f(y, aux))
        ks = [k1]
        for row in _A:  # the barrier stops XLA from fusing (recomputing) stages into stages
            ks.append(_barrier(f(_combine(y, hh, row, ks), aux)))
        y_new = _combine(y, hh, _B, ks[:6])
        k7 = _barrier(f(y_new, aux))
        ks.append(k7)
        err = hh * _lin(_E, ks)
        scale = atol_ + rtol_ * jnp.maximum(jnp.abs(y), jnp.abs(y_new))
        r = _cell_norm(err / scale)
        was_fin = jnp.isfinite(y).all(axis=0)
        now_fin = jnp.isfinite(y_new).all(axis=0) & jnp.isfinite(r)
        fresh_bad = jnp.any(was_fin & ~now_fin)
        enorm = jnp.max(jnp.where(now_fin, r, 0.0))
        at_floor = hh <= h_floor
        accept = (enorm <= 1.0) & (~fresh_bad | at_floor)
        failed = failed | (~accept & at_floor)
        # PI controller (Hairer & Wanner) on accept; pure I controller, no growth, on reject
        safe = jnp.maximum(enorm, 1e-10)
        fac_acc = _SAFETY * safe ** (-_PI_BETA1) * jnp.maximum(err_prev, 1e-4) ** _PI_BETA2
        fac_rej = jnp.where(fresh_bad, _FAC_MIN, _SAFETY * safe ** (-0.2))
        fac = jnp.where(
            accept, jnp.clip(fac_acc, _FAC_MIN, _FAC_MAX), jnp.clip(fac_rej, _FAC_MIN, 1.0)
        )
        h_next = hh * fac
        # a step shortened to land on a jump or the end does not shrink the next proposal
        h_next = jnp.where(accept & clipped, jnp.maximum(h_next, h), h_next)
        h_next = jnp.maximum(h_next, 0.5 * h_floor).astype(dtype)  # below: reject = fail
        idx, buf = save(t, hh, y, ks, idx, buf, t_new, accept)
        t = jnp.where(accept, t_new, t)
        y = jnp.where(accept & was_fin, y_new, y)  # frozen cells keep their values
        k1 = jnp.where(accept, k7, k1)
        err_prev = jnp.where(accept, safe, err_prev)
        return (t, h_next, y, k1, s, err_prev, idx, buf, n + 1, n_rej + (~accept), failed)

    def cond(c):
        t, n, failed = c[0], c[8], c[10]
        return (t < t_end) & (n < max_steps) & ~failed

    init = (
        t0,
        h_init,
        y0,
        k0,
        s0,
        jnp.asarray(1.0, dtype),
        jnp.asarray(0),
        buf0,
        jnp.asarray(0),
        jnp.asarray(0),
        jnp.asarray(False),
    )
    t, _, y, _, _, _, idx, buf, n, n_rej, failed = jax.lax.while_loop(cond, step, init)
    ok = (t >= t_end) & ~failed & (idx == n_save)
    return RKResult(buf, y, ok, n, n_rej)

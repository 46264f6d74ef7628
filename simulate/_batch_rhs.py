"""The right-hand side of a stacked batch of models, written for a batch-last state.

:meth:`Model.rhs` is written for one model; ``vmap`` over it on an ``(S, B)`` state works but
leaves XLA with transposes and per-pair arrays that it fuses poorly inside a Runge–Kutta
step. :func:`batched_rhs` builds the same drift directly on ``(rows, B)`` arrays from the
static wiring: one Hill term per wired edge and batch row, the kinetics' own
:meth:`~simulate.Kinetics.rates` on the dynamic rows only (algebraic input nodes of the
``alon`` kinetics are not integrated at all), and gates fixed at trace time where the whole
batch shares them. Values equal :meth:`Model.rhs` up to rounding (tested).
"""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from ._kinetics import Model
from ._regulation import gate_or

__all__ = ["batched_rhs"]


def _uniform(x) -> float | None:
    """The single value of a concrete array, or None (traced or not uniform)."""
    try:
        a = np.asarray(x)
    except jax.errors.TracerArrayConversionError:
        return None
    return float(a.flat[0]) if a.size and np.all(a == a.flat[0]) else None


def batched_rhs(
    models: Model,
) -> tuple[Callable[[Array, Array], Array], np.ndarray] | None:
    """Drift of a stacked batch on the batch-last state of its dynamic rows.

    Args:
        models: Stacked model, every array leaf with leading batch axis ``B``.

    Returns:
        ``(f, rows)`` where ``rows`` are the state indices that evolve (static) and
        ``f(Y, s)`` maps their values ``Y`` of shape ``(len(rows), B)`` and the scalar schedule
        level ``s`` to ``dY/dt`` (zero for cells with any non-finite value, which are thereby
        frozen); the other state entries keep their initial values. None for models with
        policy lag (``delay_stages > 0``); use :meth:`Model.rhs` there.
    """
    if models.delay_stages > 0:
        return None
    net = models.network
    N = net.size
    rows = np.flatnonzero(np.asarray(models.dynamic))
    row_of = {int(r): k for k, r in enumerate(rows)}
    sources = np.asarray(net.pure_sources) & bool(models.kinetics.algebraic_sources)
    inputs = np.asarray(net.inputs, dtype=bool)
    kin = models.kinetics
    node_params = type(kin).node_params
    kin_rows = eqx.tree_at(
        lambda k: [getattr(k, p) for p in node_params],
        kin,
        [jnp.moveaxis(getattr(kin, p), 0, -1)[rows] for p in node_params],
    )
    x0 = kin.x0  # (B,)
    edges = []  # per dynamic target: (source indices, inv_K, n, sign, static sign/gate)
    for i in rows:
        js = [j for j in range(N) if net.wiring[i][j]]
        if not js:
            edges.append(None)
            continue
        inv_K = [1.0 / net.K[:, i, j] for j in js]
        n = [net.n[:, i, j] for j in js]
        sign = [net.sign[:, i, j] for j in js]
        static_sign = [_uniform(s) for s in sign]
        gate = _uniform(net.is_or[:, i])
        edges.append((int(i), js, inv_K, n, sign, static_sign, gate))

    def hill_term(u, s, s_static):
        inv = 1.0 / (1.0 + u)
        if s_static is not None:
            return u * inv if s_static > 0 else (inv if s_static < 0 else jnp.ones_like(u))
        return jnp.where(s > 0, u * inv, jnp.where(s < 0, inv, 1.0))

    def f(Y: Array, level: Array) -> Array:
        x = x0 * level
        A = [x if sources[j] else Y[row_of[j]] for j in range(N)]
        G = []
        for e in edges:
            if e is None:
                G.append(jnp.ones_like(x))
                continue
            i, js, inv_K, n, sign, static_sign, gate = e
            us = [
                net._hill_power(jnp.maximum(A[j], 0.0) * ik, nn)
                for j, ik, nn in zip(js, inv_K, n, strict=True)
            ]
            g_and = g_or = None
            if gate is None or gate <= 0.5:
                terms = [
                    hill_term(u, s, ss) for u, s, ss in zip(us, sign, static_sign, strict=True)
                ]
                g_and = terms[0]
                for t in terms[1:]:
                    g_and = g_and * t
            if gate is None or gate > 0.5:
                g_or = gate_or(jnp.stack(us), jnp.stack(sign), axis=0)
            if gate is None:
                G.append(jnp.where(net.is_or[:, i] > 0.5, g_or, g_and))
            else:
                G.append(g_or if gate > 0.5 else g_and)
        Gm = jnp.stack(G).astype(Y.dtype)
        drive = jnp.stack([x if inputs[i] else jnp.ones_like(x) for i in rows]).astype(Y.dtype)
        dY = kin_rows.rates(Y, Gm, drive)
        return jnp.where(jnp.isfinite(Y).all(axis=0), dY, 0.0)

    return f, rows

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
from ._regulation import gate_or, occupancy_term

__all__ = ["batched_rhs"]


def _uniform(x) -> float | None:
    """The single value of a concrete array, or None (traced or not uniform)."""
    try:
        a = np.asarray(x)
    except jax.errors.TracerArrayConversionError:
        return None
    return float(a.flat[0]) if a.size and np.all(a == a.flat[0]) else None


def batched_rhs(models: Model) -> tuple[Callable, Callable, np.ndarray] | None:
    """Drift of a stacked batch on the batch-last state of its dynamic rows.

    Args:
        models: Stacked model, every array leaf with leading batch axis ``B``.

    Returns:
        ``(prep, f, rows)``: ``rows`` are the state indices that evolve (static; the other
        entries keep their initial values); ``prep(s)`` computes, for the scalar schedule
        level ``s``, everything that depends on the input only (once per step);
        ``f(Y, prep(s))`` maps the values ``Y`` of the rows, shape ``(len(rows), B)``, to
        ``dY/dt``. Cells are independent: a non-finite cell only affects its own column.
        None for models with policy lag (``delay_stages > 0``), pipeline gates or edge
        weights; use :meth:`Model.rhs` there.
    """
    kin = models.kinetics
    if models.delay_stages > 0 or any(
        getattr(kin, f, None) is not None for f in ("pipeline", "weight")
    ):
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
        return occupancy_term(u, s if s_static is None else s_static)

    def edge_u(a, ik, nn):
        return net._hill_power(jnp.maximum(a, 0.0) * ik, nn)

    def prep(level: Array) -> tuple:
        """Everything that depends on the input only (constant within a step)."""
        x = x0 * level
        pre = []
        for e in edges:
            if e is None:
                pre.append(None)
                continue
            _, js, inv_K, n, sign, static_sign, _ = e
            us = {k: edge_u(x, inv_K[k], n[k]) for k, j in enumerate(js) if sources[j]}
            terms = [hill_term(us[k], sign[k], static_sign[k]) for k in us]
            pre.append((us, _product(terms)))
        return x, pre

    def f(Y: Array, aux: tuple) -> Array:
        x, pre = aux
        G = []
        for e, p in zip(edges, pre, strict=True):
            if e is None:
                G.append(jnp.ones_like(x))
                continue
            i, js, inv_K, n, sign, static_sign, gate = e
            us_src, and_src = p
            us = [
                us_src[k] if k in us_src else edge_u(Y[row_of[j]], inv_K[k], n[k])
                for k, j in enumerate(js)
            ]

            def g_and(us=us, us_src=us_src, and_src=and_src, sign=sign, static_sign=static_sign):
                terms = [
                    hill_term(u, sign[k], static_sign[k])
                    for k, u in enumerate(us)
                    if k not in us_src
                ]
                out = _product(([] if and_src is None else [and_src]) + terms)
                return jnp.ones_like(x) if out is None else out

            def g_or(us=us, sign=sign):
                return gate_or(jnp.stack(us), jnp.stack(sign), axis=0)

            if gate is None:
                G.append(jnp.where(net.is_or[:, i] > 0.5, g_or(), g_and()))
            else:
                G.append(g_or() if gate > 0.5 else g_and())
        Gm = jnp.stack(G).astype(Y.dtype)
        drive = jnp.stack([x if inputs[i] else jnp.ones_like(x) for i in rows]).astype(Y.dtype)
        return kin_rows.rates(Y, Gm, drive)

    return prep, f, rows


def _product(terms: list) -> Array | None:
    """Product of a list of arrays (None for an empty list)."""
    if not terms:
        return None
    out = terms[0]
    for t in terms[1:]:
        out = out * t
    return out

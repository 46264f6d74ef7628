"""Hill regulation and input gates, array-library agnostic.

One home for the regulation functions: the JAX kinetics call them with ``jax.numpy``,
the training side (llm_runs edge controllers) with NumPy or plain floats.

Conventions: ``x`` is the regulator's level, ``K`` the edge threshold in the same units,
``n`` the Hill coefficient; ``u = (max(x, 0)/K)**n`` is the dimensionless occupancy ratio.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "edge_term",
    "gate_and",
    "gate_or",
    "hill_activation",
    "hill_repression",
    "network_regulation",
    "occupancy_term",
]


def _xp(*arrays: Any) -> Any:
    """The array namespace of the inputs: jax.numpy for JAX arrays, else NumPy."""
    for a in arrays:
        mod = type(a).__module__
        if mod.startswith("jax") or mod.startswith("jaxlib"):
            import jax.numpy as jnp

            return jnp
    return np


def _occupancy(x: Any, K: Any, n: Any, xp: Any) -> Any:
    return xp.power(xp.maximum(x, 0.0) / K, n)


def hill_activation(x: Any, K: Any = 1.0, n: Any = 2.0) -> Any:
    """Activating Hill function ``u/(1+u)``, ``u = (x/K)^n``; in [0, 1)."""
    xp = _xp(x, K, n)
    u = _occupancy(x, K, n, xp)
    return u / (1.0 + u)


def hill_repression(x: Any, K: Any = 1.0, n: Any = 2.0) -> Any:
    """Repressing Hill function ``1/(1+u)``, ``u = (x/K)^n``; in (0, 1]."""
    xp = _xp(x, K, n)
    return 1.0 / (1.0 + _occupancy(x, K, n, xp))


def occupancy_term(u: Any, sign: Any) -> Any:
    """Edge term from the occupancy ``u``: ``u/(1+u)`` (sign > 0), ``1/(1+u)`` (< 0), 1 (0).

    A Python number ``sign`` selects the branch at trace time (only that branch is built);
    an array ``sign`` selects elementwise.
    """
    xp = _xp(u, sign)
    inv = 1.0 / (1.0 + u)
    if isinstance(sign, int | float):
        return u * inv if sign > 0 else (inv if sign < 0 else xp.ones_like(u))
    sign = xp.asarray(sign)
    return xp.where(sign > 0, u * inv, xp.where(sign < 0, inv, 1.0))


def edge_term(x: Any, sign: Any, K: Any = 1.0, n: Any = 2.0) -> Any:
    """Regulation by one edge: activating (sign > 0), repressing (< 0) or 1 (sign 0)."""
    xp = _xp(x, sign, K, n)
    return occupancy_term(_occupancy(x, K, n, xp), xp.asarray(sign))


def gate_and(terms: Any, axis: int = -1) -> Any:
    """AND gate: the product of the per-edge Hill terms along ``axis``."""
    xp = _xp(terms)
    return xp.prod(terms, axis=axis)


def gate_or(u: Any, sign: Any, axis: int = -1) -> Any:
    """OR gate, single-occupancy competitive form (Alon; Bois, BE150).

    With activator occupancies ``a_j`` and repressor occupancies ``r_k``::

        activators only:  sum(a) / (1 + sum(a))                  e.g. (x^n + y^m)/(1 + x^n + y^m)
        with repressors:  (1 + sum(a)) / (1 + sum(a) + prod(r))   e.g. (1 + x^n)/(1 + x^n + y^m)
        repressors only:  1 / (1 + prod(r))                       e.g. 1/(1 + x^n y^m)

    i.e. the output is OFF only when no activator is bound and every repressor is.

    Args:
        u: Occupancies ``(x/K)^n``, shape ``(..., M)``.
        sign: Signs of the same edges (+1, -1, 0 ignored), broadcastable to ``u``.
        axis: The edge axis.
    """
    xp = _xp(u, sign)
    sign = xp.asarray(sign)
    act = xp.sum(xp.where(sign > 0, u, 0.0), axis=axis)
    has_rep = xp.any(sign < 0, axis=axis)
    rep_prod = xp.prod(xp.where(sign < 0, u, 1.0), axis=axis)
    num = xp.where(has_rep, 1.0, 0.0) + act
    den = 1.0 + act + xp.where(has_rep, rep_prod, 0.0)
    return num / den


def network_regulation(A: Any, sign: Any, K: Any, n: Any, is_or: Any) -> Any:
    """Gated regulation ``G_i(A)`` of every node by its parents.

    Args:
        A: Regulator levels, shape ``(N,)``.
        sign: Signed adjacency, shape ``(N, N)``; ``sign[i, j]`` is the edge ``j → i``.
        K: Thresholds, shape ``(N, N)`` (ignored where ``sign == 0``).
        n: Hill coefficients, shape ``(N, N)``.
        is_or: Per node, True for an OR gate, shape ``(N,)``.

    Returns:
        ``G``, shape ``(N,)``; 1 for nodes without regulators.
    """
    xp = _xp(A, K, n)
    sign = xp.asarray(sign)
    u = _occupancy(A[None, :], K, n, xp)
    terms = xp.where(sign > 0, u / (1.0 + u), xp.where(sign < 0, 1.0 / (1.0 + u), 1.0))
    g_and = gate_and(terms, axis=-1)
    g_or = gate_or(u, sign, axis=-1)
    has_parents = xp.any(sign != 0, axis=-1)
    g_or = xp.where(has_parents, g_or, 1.0)
    return xp.where(xp.asarray(is_or), g_or, g_and)

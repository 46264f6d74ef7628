"""Edge weights of the competence kinetics: llm_runs' learning-rate coupling ``1 - w + w G``.

A real run of llm_runs realises the edges into agent ``i`` as a learning-rate multiplier
(``llm_runs._edges.EdgeController.factors``)::

    lr_i = lr * (1 - w_i + w_i G_i),   w_i = max of the weights of the edges into i

``G_i`` is ``i``'s gated regulation (AND: product of the Hill terms, OR: Alon's form) and
the weight enters once, on the gated ``G_i``, not per edge before the gate; a node that no
edge enters gets factor 1 (``w_i = 0``). :class:`~simulate.CompetenceKinetics` follows it
with an optional per-node weight: the factor multiplies the node's whole rate, as a
learning-rate multiplier scales every step the agent takes, and ``G_i`` acts through it
alone::

    dA_i/dt = (1 - w_i + w_i G_i) {rho_i [b_i + (1 - b_i) drive_i] (1 - A_i) - delta_i A_i}

so ``w_i = 0`` is the unregulated basal + learning law; the basal term ``b_i`` does not
escape the regulation (a repressed agent learns at ``(1 - w_i)`` of its rate, as in a run).
:func:`node_weights` turns per-edge weights into per-node ones (the max rule);
:func:`with_edge_weights` adds them to a model.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike

from ._kinetics import Model
from .spec import SpecError

__all__ = ["node_weights", "with_edge_weights"]


def _edge_key(key: str) -> tuple[str, str]:
    """``"SRC->DST"`` as ``(source, target)`` (whitespace stripped)."""
    if not isinstance(key, str) or "->" not in key:
        raise SpecError(f"edge weight key must be written SRC->DST, got {key!r}")
    src, dst = (s.strip() for s in key.split("->", 1))
    if not src or not dst or "->" in dst:
        raise SpecError(f"edge weight key must be written SRC->DST, got {key!r}")
    return src, dst


def _check_weight(value: object, what: str) -> float:
    """``value`` as a float in [0, 1] (SpecError naming ``what`` otherwise)."""
    ok = isinstance(value, int | float | np.number) and not isinstance(value, bool)
    w = float(value) if ok else math.nan  # type: ignore[arg-type]
    if not (math.isfinite(w) and 0.0 <= w <= 1.0):
        raise SpecError(f"{what} must be a number in [0, 1], got {value!r}")
    return w


def node_weights(names: Sequence[str], edges: Mapping[str, float]) -> np.ndarray:
    """Per-node weights from per-edge weights, as llm_runs combines them.

    Args:
        names: Node names, in the model's order (``N`` of them).
        edges: Weight in [0, 1] (dimensionless) of each edge ``"SRC->DST"``; every edge
            that acts on a node must be listed (llm_runs: its config's weight, else the
            default weight).

    Returns:
        ``w``, shape ``(N,)``, float64: per node the largest weight of the edges into it,
        0 for a node that no listed edge enters (factor 1, as in llm_runs).

    Raises:
        SpecError: A key not of the form ``SRC->DST``, a node not in ``names``, or a
            weight that is not a number in [0, 1].
    """
    w = np.zeros(len(names), dtype=np.float64)
    for key, value in edges.items():
        src, dst = _edge_key(key)
        for node in (src, dst):
            if node not in names:
                raise SpecError(
                    f"edge weight {src}->{dst}: {node!r} is not a node (nodes {list(names)})"
                )
        i = list(names).index(dst)
        w[i] = max(w[i], _check_weight(value, f"edge weight {src}->{dst}"))
    return w


def with_edge_weights(
    model: Model, weights: Mapping[str, float] | ArrayLike, *, default: float = 1.0
) -> Model:
    """``model`` with llm_runs' coupling weights on its competence kinetics.

    Args:
        model: A model with :class:`~simulate.CompetenceKinetics`.
        weights: Either per-edge weights ``{"X->Y": w}`` (edges of ``model``'s network;
            edges not listed take ``default``), combined per node by :func:`node_weights`;
            or per-node weights ``w`` in [0, 1], shape ``(N,)`` (checked when concrete;
            a traced array passes as it is).
        default: Weight of the edges a mapping leaves out (1: the unweighted law).

    Returns:
        The model with ``kinetics.weight`` set (float64, shape ``(N,)``).

    Raises:
        SpecError: Not competence kinetics, a key that is no edge of the network, a weight
            outside [0, 1], or per-node weights of another shape than ``(N,)``.
    """
    if model.kinetics.name != "competence":
        raise SpecError("edge weights need competence kinetics")
    net = model.network
    if isinstance(weights, Mapping):
        given = {"->".join(_edge_key(k)): v for k, v in weights.items()}
        unknown = [k for k in given if k not in net.edge_keys]
        if unknown:
            raise SpecError(f"edge weights {unknown} name no edge; edges are {net.edge_keys}")
        d = _check_weight(default, "default edge weight")
        w = jnp.asarray(node_weights(net.names, {k: given.get(k, d) for k in net.edge_keys}))
    else:
        w = jnp.asarray(weights, dtype=jnp.result_type(float))
        if w.shape != (net.size,):
            raise SpecError(f"node weights must have shape ({net.size},), got {w.shape}")
        try:
            values = np.asarray(w).tolist()
        except jax.errors.TracerArrayConversionError:  # traced (e.g. vmapped): as it is
            values = []
        for node, value in zip(net.names, values, strict=False):
            _check_weight(value, f"weight of node {node}")
    kin = dataclasses.replace(model.kinetics, weight=w)  # type: ignore[call-arg]
    return eqx.tree_at(lambda m: m.kinetics, model, kin)

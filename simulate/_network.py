"""The immutable network types used by the simulator (equinox Modules, abstract/final).

:class:`AbstractNetwork` holds the structure and the regulation; its concrete (final)
subclasses differ only in how an occupancy ``r**n`` is computed: :class:`Network`
(``jnp.power``, what users construct) and the fast variants that
:func:`~simulate.with_log_hill` and the batched solvers swap into a model.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from ._regulation import gate_or, occupancy_term
from .spec import EdgeSpec, NetworkSpec, SpecError, resolve_spec

__all__ = ["AbstractNetwork", "Network", "as_network"]


class AbstractNetwork(eqx.Module):
    """Signed network with per-edge thresholds and Hill coefficients (abstract base).

    The wiring (names, which edges exist, inputs) is static; signs, gates, ``K`` and ``n``
    are array leaves, so one compiled solver serves all networks of the same wiring
    (e.g. all 16 FFL presets) and sweeps can ``vmap`` over any of them. A concrete network
    declares these fields and implements :meth:`_hill_power`; :class:`Network` is the one
    users construct.

    Attributes:
        names: Node names in state order.
        wiring: ``wiring[i][j]`` True if the spec has an edge ``j → i`` (any sign).
        inputs: Per node, True if the input schedule drives it.
        feedback: ``feedback[i][j]`` True for end-to-end reward edges.
        sign: Signed adjacency, shape ``(N, N)``; ``sign[i, j]`` for edge ``j → i``.
        is_or: Per node, 1.0 if its regulators combine with an OR gate, shape ``(N,)``.
        K: Thresholds, shape ``(N, N)`` (1 where there is no edge).
        n: Hill coefficients, shape ``(N, N)`` (1 where there is no edge).

    The spec's ``name`` is not kept (so all presets share one tree structure).
    """

    names: eqx.AbstractVar[tuple[str, ...]]
    wiring: eqx.AbstractVar[tuple[tuple[bool, ...], ...]]
    inputs: eqx.AbstractVar[tuple[bool, ...]]
    feedback: eqx.AbstractVar[tuple[tuple[bool, ...], ...]]
    sign: eqx.AbstractVar[Array]
    is_or: eqx.AbstractVar[Array]
    K: eqx.AbstractVar[Array]
    n: eqx.AbstractVar[Array]

    def to_spec(self, name: str = "network") -> NetworkSpec:
        """Back to a spec, with the current (concrete) ``K`` and ``n``."""
        K, n, sign = np.asarray(self.K), np.asarray(self.n), np.asarray(self.sign)
        edges = []
        for i, row in enumerate(self.wiring):
            for j, wired in enumerate(row):
                if wired:
                    edges.append(
                        EdgeSpec(
                            self.names[j],
                            self.names[i],
                            int(sign[i, j]),
                            K=float(K[i, j]),
                            n=float(n[i, j]),
                            feedback=self.feedback[i][j],
                        )
                    )
        is_or = np.asarray(self.is_or)
        gates = {
            name: "OR" if is_or[i] > 0.5 else "AND"
            for i, name in enumerate(self.names)
            if sum(self.wiring[i]) >= 2
        }
        inputs = tuple(nm for nm, flag in zip(self.names, self.inputs, strict=True) if flag)
        return NetworkSpec(self.names, tuple(edges), gates, inputs, name)

    # -- structure (NumPy, static) --------------------------------------------------
    @property
    def size(self) -> int:
        """Number of nodes N."""
        return len(self.names)

    @property
    def edge_mask(self) -> np.ndarray:
        """Static wiring as a boolean array, shape ``(N, N)``."""
        return np.asarray(self.wiring, dtype=bool)

    @property
    def has_parents(self) -> np.ndarray:
        """Per node, True if any edge regulates it (static wiring)."""
        return np.asarray(self.edge_mask.any(axis=1), dtype=bool)

    @property
    def edge_keys(self) -> list[str]:
        """``"SRC->DST"`` of every wired edge, row-major by target."""
        return [
            f"{self.names[j]}->{self.names[i]}"
            for i, row in enumerate(self.wiring)
            for j, wired in enumerate(row)
            if wired
        ]

    @property
    def pure_sources(self) -> np.ndarray:
        """Input nodes without regulators (their level *is* the input in ``alon``)."""
        return np.asarray(self.inputs) & ~self.has_parents

    def index(self, node: str) -> int:
        """Position of ``node`` in the state vector."""
        if node not in self.names:
            raise SpecError(f"unknown node {node!r}; nodes are {list(self.names)}")
        return self.names.index(node)

    def edge_index(self, key: str) -> tuple[int, int]:
        """``(i, j)`` of the edge ``"SRC->DST"`` in the ``(N, N)`` arrays."""
        if "->" not in key:
            raise SpecError(f"edge must be written SRC->DST, got {key!r}")
        src, dst = (s.strip() for s in key.split("->", 1))
        i, j = self.index(dst), self.index(src)
        if not self.wiring[i][j]:
            raise SpecError(f"no edge {src}->{dst}; edges are {self.edge_keys}")
        return i, j

    # -- dynamics -------------------------------------------------------------------
    @abc.abstractmethod
    def _hill_power(self, r: Array, n: Array) -> Array:
        """Occupancy ``r**n`` of levels ``r = A / K`` (elementwise)."""

    def regulation(self, A: Array) -> Array:
        """Gated regulation ``G_i(A)`` of every node by its parents, shape ``(N,)``.

        Same values as :func:`~simulate.network_regulation` on the full ``(N, N)`` arrays,
        but evaluated only on the (static) wired edges: for sparse networks this is many
        times faster in batched solves (one Hill power per edge instead of per pair).
        """
        dtype = jnp.result_type(A, self.K)
        return jnp.stack([self.node_regulation(i, A).astype(dtype) for i in range(self.size)])

    def node_regulation(self, i: int, A: Array | Sequence[Array]) -> Array:
        """Gated regulation ``G_i`` of node ``i`` (static) by its parents.

        Args:
            i: Node index.
            A: Levels, shape ``(N, ...)`` (or a sequence of ``N`` arrays of one shape, of
                which only the parents' are read); trailing axes (e.g. time) are
                elementwise.

        Returns:
            ``G_i``, shape ``A.shape[1:]`` (a scalar 1 for a node without parents).
        """
        js = [j for j, w in enumerate(self.wiring[i]) if w]
        if not js:
            return jnp.ones((), jnp.result_type(float))
        a = jnp.stack([A[j] for j in js])
        trail = (1,) * (a.ndim - 1)
        s = jnp.stack([self.sign[i, j] for j in js]).reshape(-1, *trail)
        u = self._hill_power(
            jnp.maximum(a, 0.0) / jnp.stack([self.K[i, j] for j in js]).reshape(-1, *trail),
            jnp.stack([self.n[i, j] for j in js]).reshape(-1, *trail),
        )
        g_and = jnp.prod(occupancy_term(u, s), axis=0)
        g_or = gate_or(u, s, axis=0)
        return jnp.where(self.is_or[i] > 0.5, g_or, g_and).astype(jnp.result_type(a, self.K))


class Network(AbstractNetwork):
    """The signed network users construct: occupancies by ``jnp.power`` (final).

    Fields as in :class:`AbstractNetwork`; build one with :meth:`from_spec` or
    :func:`~simulate.as_network`.
    """

    names: tuple[str, ...] = eqx.field(static=True)
    wiring: tuple[tuple[bool, ...], ...] = eqx.field(static=True)
    inputs: tuple[bool, ...] = eqx.field(static=True)
    feedback: tuple[tuple[bool, ...], ...] = eqx.field(static=True)
    sign: Array
    is_or: Array
    K: Array
    n: Array

    @classmethod
    def from_spec(cls, spec: NetworkSpec) -> Network:
        """Build from a validated :class:`~simulate.spec.NetworkSpec`."""
        N = len(spec.nodes)
        sign = np.zeros((N, N))
        wired = np.zeros((N, N), dtype=bool)
        fb = np.zeros((N, N), dtype=bool)
        K = np.ones((N, N))
        n = np.ones((N, N))
        for e in spec.edges:
            i, j = spec.index(e.target), spec.index(e.source)
            sign[i, j], K[i, j], n[i, j], fb[i, j] = e.sign, e.K, e.n, e.feedback
            wired[i, j] = True
        return cls(
            names=tuple(spec.nodes),
            wiring=tuple(tuple(bool(w) for w in row) for row in wired),
            inputs=tuple(node in (spec.inputs or ()) for node in spec.nodes),
            feedback=tuple(tuple(bool(f) for f in row) for row in fb),
            sign=jnp.asarray(sign, dtype=float),
            is_or=jnp.asarray([spec.gate(node) == "OR" for node in spec.nodes], dtype=float),
            K=jnp.asarray(K, dtype=float),
            n=jnp.asarray(n, dtype=float),
        )

    def _hill_power(self, r: Array, n: Array) -> Array:
        return jnp.power(r, n)


def as_network(obj: AbstractNetwork | NetworkSpec | str, gate: str = "AND") -> AbstractNetwork:
    """Coerce a network (returned as it is), a spec, a preset name (``"C1"``,
    ``"I1-OR"``) or a spec path (a :class:`Network`)."""
    if isinstance(obj, AbstractNetwork):
        return obj
    if isinstance(obj, NetworkSpec | str):
        return Network.from_spec(resolve_spec(obj, gate, what="network"))
    raise SpecError(f"cannot make a network from {type(obj).__name__}")

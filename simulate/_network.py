"""The immutable network type used by the simulator (an equinox Module)."""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ._regulation import network_regulation
from .spec import EdgeSpec, NetworkSpec, SpecError, ffl_spec, load_spec

__all__ = ["Network", "as_network"]


class Network(eqx.Module):
    """Signed network with per-edge thresholds and Hill coefficients.

    The structure (names, signs, gates, inputs) is static; ``K`` and ``n`` are array
    leaves, so sweeps can ``vmap`` over them.

    Attributes:
        names: Node names in state order.
        signs: ``signs[i][j]`` is the sign of edge ``j → i`` (+1, -1, 0).
        gates_or: Per node, True if its regulators combine with an OR gate.
        inputs: Per node, True if the input schedule drives it.
        feedback: ``feedback[i][j]`` True for end-to-end reward edges.
        K: Thresholds, shape ``(N, N)`` (1 where there is no edge).
        n: Hill coefficients, shape ``(N, N)`` (1 where there is no edge).
        name: Label of the network.
    """

    names: tuple[str, ...] = eqx.field(static=True)
    signs: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    gates_or: tuple[bool, ...] = eqx.field(static=True)
    inputs: tuple[bool, ...] = eqx.field(static=True)
    feedback: tuple[tuple[bool, ...], ...] = eqx.field(static=True)
    K: Float[Array, "N N"]
    n: Float[Array, "N N"]
    name: str = eqx.field(static=True, default="network")

    @classmethod
    def from_spec(cls, spec: NetworkSpec) -> Network:
        """Build from a validated :class:`~simulate.spec.NetworkSpec`."""
        N = len(spec.nodes)
        sign = np.zeros((N, N), dtype=int)
        fb = np.zeros((N, N), dtype=bool)
        K = np.ones((N, N))
        n = np.ones((N, N))
        for e in spec.edges:
            i, j = spec.index(e.target), spec.index(e.source)
            sign[i, j], K[i, j], n[i, j], fb[i, j] = e.sign, e.K, e.n, e.feedback
        return cls(
            names=tuple(spec.nodes),
            signs=tuple(tuple(int(s) for s in row) for row in sign),
            gates_or=tuple(spec.gate(node) == "OR" for node in spec.nodes),
            inputs=tuple(node in (spec.inputs or ()) for node in spec.nodes),
            feedback=tuple(tuple(bool(f) for f in row) for row in fb),
            K=jnp.asarray(K, dtype=float),
            n=jnp.asarray(n, dtype=float),
            name=spec.name,
        )

    def to_spec(self) -> NetworkSpec:
        """Back to a spec, with the current (concrete) ``K`` and ``n``."""
        K, n = np.asarray(self.K), np.asarray(self.n)
        edges = []
        for i, row in enumerate(self.signs):
            for j, s in enumerate(row):
                if s != 0 or self.feedback[i][j]:
                    edges.append(
                        EdgeSpec(
                            self.names[j],
                            self.names[i],
                            s,
                            K=float(K[i, j]),
                            n=float(n[i, j]),
                            feedback=self.feedback[i][j],
                        )
                    )
        gates = {
            name: "OR" if o else "AND"
            for name, o, row in zip(self.names, self.gates_or, self.signs, strict=True)
            if sum(1 for s in row if s != 0) >= 2
        }
        inputs = tuple(nm for nm, flag in zip(self.names, self.inputs, strict=True) if flag)
        return NetworkSpec(self.names, tuple(edges), gates, inputs, self.name)

    # -- structure (NumPy, static) --------------------------------------------------
    @property
    def size(self) -> int:
        """Number of nodes N."""
        return len(self.names)

    @property
    def sign(self) -> np.ndarray:
        """Signed adjacency, shape ``(N, N)``, ``sign[i, j]`` for edge ``j → i``."""
        return np.asarray(self.signs, dtype=int)

    @property
    def has_parents(self) -> np.ndarray:
        """Per node, True if any edge regulates it."""
        return (self.sign != 0).any(axis=1)

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
        if self.signs[i][j] == 0 and not self.feedback[i][j]:
            raise SpecError(f"no edge {src}->{dst} in network {self.name!r}")
        return i, j

    # -- dynamics -------------------------------------------------------------------
    def regulation(self, A: Float[Array, " N"]) -> Float[Array, " N"]:
        """Gated regulation ``G_i(A)`` of every node by its parents, shape ``(N,)``."""
        return network_regulation(A, self.sign, self.K, self.n, np.asarray(self.gates_or))


def as_network(obj: Network | NetworkSpec | str, gate: str = "AND") -> Network:
    """Coerce a Network, a spec, a preset name (``"C1"``, ``"I1-OR"``) or a spec path."""
    if isinstance(obj, Network):
        return obj
    if isinstance(obj, NetworkSpec):
        return Network.from_spec(obj)
    if isinstance(obj, str):
        text = obj.strip()
        if "-" in text and text.split("-")[0].upper() in {"C1", "C2", "C3", "C4", "I1", "I2", "I3", "I4"}:
            motif, g = text.split("-", 1)
            return Network.from_spec(ffl_spec(motif, g))
        if text.upper() in {"C1", "C2", "C3", "C4", "I1", "I2", "I3", "I4"}:
            return Network.from_spec(ffl_spec(text, gate))
        return Network.from_spec(load_spec(text))
    raise SpecError(f"cannot make a network from {type(obj).__name__}")

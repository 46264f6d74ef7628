"""Pipeline gates of the competence kinetics: a role learns only from its upstream role's output.

In a pipeline of agents each role's prompt carries its upstream role's sampled output, so a
role can learn only as far as that output is useful: whatever the designed (coupling)
regulation, the whole learning term of a pipeline target ``i`` is scaled by an activating
Hill occupancy of its pipeline source ``j``::

    dA_i/dt = rho_i P_i(A) [b_i + (1 - b_i) G_i(A)] (1 - A_i) - delta_i A_i,
    P_i = a^m / (Kp^m + a^m),  a = A_j

(sign fixed +; forgetting is not gated). ``Kp`` (competence units) and ``m`` are per pipeline
edge, named ``Kp[X->Y]`` and ``m[X->Y]``. A node has at most one pipeline source; nodes that
are no pipeline target are not gated (their rate law is unchanged, to the bit). The gate
reads the source's current level (not a policy-lagged one).

:class:`Pipeline` holds the gates (a field of :class:`~simulate.CompetenceKinetics`);
:func:`parse_pipeline` reads and checks ``"X->Y,Y->Z"``; :func:`simulate.with_pipeline` adds
gates to a model.
"""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array

from ._regulation import hill_activation
from .spec import SpecError

__all__ = ["Pipeline", "parse_pipeline"]


def parse_pipeline(
    edges: str | Sequence[str], names: Sequence[str] | None = None
) -> tuple[tuple[str, str], ...]:
    """Pipeline edges ``"X->Y,Y->Z"`` (or a list of ``"SRC->DST"``) as ``(source, target)``
    pairs, checked.

    Args:
        edges: A comma list or a sequence of ``"SRC->DST"`` strings.
        names: The network's node names (None: only the form is checked).

    Returns:
        ``((source, target), ...)`` in the order given.

    Raises:
        SpecError: An item not of the form ``SRC->DST``, a self-edge, a target with two
            sources, a repeated edge, or (with ``names``) a node that is not in ``names``.
    """
    items = [e for e in edges.split(",")] if isinstance(edges, str) else list(edges)
    out: list[tuple[str, str]] = []
    for item in items:
        if not isinstance(item, str) or "->" not in item:
            raise SpecError(f"pipeline edge must be written SRC->DST, got {item!r}")
        src, dst = (s.strip() for s in item.split("->", 1))
        if not src or not dst or "->" in dst:
            raise SpecError(f"pipeline edge must be written SRC->DST, got {item!r}")
        if src == dst:
            raise SpecError(f"pipeline edge {item.strip()!r} joins a node to itself")
        if any(d == dst for _, d in out):
            raise SpecError(f"pipeline target {dst!r} has two sources; give it one")
        for node in (src, dst):
            if names is not None and node not in names:
                raise SpecError(
                    f"pipeline edge {src}->{dst}: {node!r} is not a node of the network "
                    f"(nodes {list(names)})"
                )
        out.append((src, dst))
    return tuple(out)


class Pipeline(eqx.Module):
    """Pipeline gates of the nodes of one network (see the module docstring).

    Attributes:
        source: Per node, the index of its pipeline source, or -1 (not gated); static.
        K: Per node, the gate's threshold ``Kp`` (competence units; 1 where not gated),
            shape ``(N,)``.
        n: Per node, the gate's Hill coefficient ``m`` (1 where not gated), shape ``(N,)``.
    """

    source: tuple[int, ...] = eqx.field(static=True)
    K: Array
    n: Array

    def gate(self, i: int, A: Array | Sequence[Array]) -> Array | None:
        """Gate ``P_i`` of node ``i`` (static) from the levels ``A`` (shape ``(N, ...)``, or
        a sequence of ``N`` arrays of which only the source's is read); None when node
        ``i`` is not gated."""
        j = self.source[i]
        if j < 0:
            return None
        return hill_activation(A[j], self.K[i], self.n[i])

    def gates(self, A: Array) -> Array:
        """``P`` of every node (1 where not gated), shape ``(N,)`` for levels ``(N,)``."""
        one = jnp.ones((), jnp.result_type(A, self.K))
        return jnp.stack(
            [one if (g := self.gate(i, A)) is None else g for i in range(len(self.source))]
        )

    def edge_keys(self, names: Sequence[str]) -> list[str]:
        """``"SRC->DST"`` of every gate, in node order."""
        return [f"{names[j]}->{names[i]}" for i, j in enumerate(self.source) if j >= 0]

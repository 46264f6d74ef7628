"""Presets and builders of network specs: the 16 FFLs, rings, feedback, and the one resolver
from a motif name or spec file to a :class:`~simulate.spec.NetworkSpec` (plain Python)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from ._spec import FFL_SIGNS, GATES, MOTIFS, EdgeSpec, NetworkSpec, SpecError, load_spec

__all__ = [
    "SINGLE",
    "add_feedback",
    "ffl_spec",
    "preset_names",
    "resolve_spec",
    "ring_spec",
    "single_spec",
]

#: The preset name of the one-node network (``--motif single``).
SINGLE = "single"


def single_spec(node: str = "X") -> NetworkSpec:
    """The one-node network: one agent (a single policy, e.g. one GRPO run) and no edges.

    Its competence follows the same kinetics as any node's (learning rate, decay, the
    lag and finite-step mechanisms), with nothing regulating it.
    """
    return NetworkSpec(nodes=(node,), edges=(), name=SINGLE)


def ffl_spec(
    motif: str,
    gate: str = "AND",
    *,
    K: float | Mapping[str, float] = 1.0,
    n: float | Mapping[str, float] = 2.0,
    nodes: tuple[str, str, str] = ("X", "Y", "Z"),
) -> NetworkSpec:
    """One of the 16 feed-forward-loop presets.

    Args:
        motif: ``C1``…``C4`` or ``I1``…``I4`` (case-insensitive).
        gate: ``AND`` or ``OR`` at the output node.
        K: One threshold for all edges, or a mapping ``{"X->Y": ..}`` by edge.
        n: One Hill coefficient for all edges, or a mapping by edge.
        nodes: Names for (X, Y, Z), e.g. ``("solver", "refiner", "critic")``.

    Returns:
        The spec, with the edges X→Y, X→Z, Y→Z signed by :data:`FFL_SIGNS`.
    """
    m = str(motif).upper()
    if m not in FFL_SIGNS:
        raise SpecError(f"unknown motif {motif!r}; choose one of {list(FFL_SIGNS)}")
    g = str(gate).upper()
    if g not in GATES:
        raise SpecError(f"unknown gate {gate!r}; choose AND or OR")
    x, y, z = nodes
    edges = []
    for (src, dst), sign in zip(((x, y), (x, z), (y, z)), FFL_SIGNS[m], strict=True):
        key = f"{src}->{dst}"
        k = (
            K[key]
            if isinstance(K, Mapping) and key in K
            else (K if not isinstance(K, Mapping) else 1.0)
        )
        h = (
            n[key]
            if isinstance(n, Mapping) and key in n
            else (n if not isinstance(n, Mapping) else 2.0)
        )
        edges.append(EdgeSpec(src, dst, sign, K=k, n=h))
    return NetworkSpec(nodes=(x, y, z), edges=tuple(edges), gates={z: g}, name=f"{m}-{g}")


def preset_names() -> list[tuple[str, str]]:
    """All 16 (motif, gate) presets, in table order."""
    return [(m, g) for m in MOTIFS for g in GATES]


def add_feedback(
    spec: NetworkSpec,
    source: str,
    targets: Iterable[str] | None = None,
    *,
    sign: int = 1,
    K: float = 1.0,
    n: float = 2.0,
    gate: str = "AND",
) -> NetworkSpec:
    """Close the loop with end-to-end reward edges ``source → target``.

    In joint training the upstream agents learn from the downstream outcome, so the
    output node's competence feeds back on its ancestors.

    Args:
        spec: The network to extend.
        source: Node whose competence is the end-to-end reward (usually the sink, Z).
        targets: Nodes receiving the reward (default: every node other than ``source``).
        sign: +1 (reward helps) or -1 (reward hurts, e.g. a critic's success penalises).
        K: Threshold of the feedback edges.
        n: Hill coefficient of the feedback edges.
        gate: Gate set on targets that thereby get >= 2 regulators and have none yet.

    Returns:
        A new spec with the edges added (marked ``feedback=True``); ``inputs`` unchanged.
    """
    spec.index(source)
    if targets is None:
        targets = [t for t in spec.nodes if t != source]
    new_edges = list(spec.edges)
    gates = dict(spec.gates)
    for t in targets:
        spec.index(t)
        if any(e.source == source and e.target == t for e in spec.edges):
            raise SpecError(f"edges[{source}->{t}]: the network already has this edge")
        new_edges.append(EdgeSpec(source, t, sign, K=K, n=n, feedback=True))
        if sum(1 for e in new_edges if e.target == t) >= 2 and t not in gates:
            gates[t] = gate
    return NetworkSpec(
        nodes=spec.nodes,
        edges=tuple(new_edges),
        gates=gates,
        inputs=spec.inputs,
        name=f"{spec.name}+fb",
    )


def resolve_spec(
    source: NetworkSpec | str | Path,
    gate: str = "AND",
    *,
    feedback: int | None = None,
    feedback_K: float = 0.5,
    what: str = "--motif",
) -> NetworkSpec:
    """The one way to turn a motif name or a spec file into a spec (CLIs and libraries).

    Args:
        source: A spec, a preset (``"C1"``; ``"I1-OR"`` names its gate; ``"single"`` the
            one-node network, :func:`single_spec`), or a ``.json``/
            ``.yaml``/``.yml`` spec file.
        gate: Gate of a preset named without one (``AND`` or ``OR``).
        feedback: If ±1, close the loop with end-to-end reward edges of this sign from the
            last node (:func:`add_feedback`).
        feedback_K: Threshold of those feedback edges.
        what: How the caller names ``source`` in error messages.

    Returns:
        The spec.

    Raises:
        SpecError: For an unknown preset or gate, a missing, unreadable or invalid file.
    """
    if isinstance(source, NetworkSpec):
        spec = source
    else:
        text = str(source).strip()
        if not text:  # Path("") is the current folder: say what was written
            raise SpecError(
                f"{what} is empty: give a preset ({', '.join(FFL_SIGNS)}) or a spec file"
            )
        head, _, gate_part = text.partition("-")
        if isinstance(source, str) and head.lower() == SINGLE:  # a gate means nothing here
            spec = single_spec()
        elif isinstance(source, str) and head.upper() in FFL_SIGNS:
            spec = ffl_spec(head, gate_part or gate)
        elif Path(text).suffix.lower() in (".json", ".yaml", ".yml") or Path(text).exists():
            spec = load_spec(text)
        else:
            raise SpecError(
                f"{what} {text!r} is neither a preset ({', '.join(FFL_SIGNS)}, optionally "
                "with -AND/-OR) nor a spec file (.json, .yaml)"
            )
    if feedback is not None:
        if int(feedback) not in (-1, 1):
            raise SpecError(f"feedback sign must be -1 or 1, got {feedback!r}")
        spec = add_feedback(spec, spec.nodes[-1], sign=int(feedback), K=feedback_K)
    return spec


def ring_spec(
    n_nodes: int = 3, *, n_repressors: int = 1, K: float = 1.0, n: float = 2.0
) -> NetworkSpec:
    """A cyclic chain ``N0 → N1 → … → N0``; the last ``n_repressors`` edges repress.

    With an odd number of repressing edges the loop is a negative-feedback ring, the
    classic oscillator topology (Goodwin; repressilator). Every node is an input.
    """
    if int(n_nodes) < 1:
        raise SpecError(f"n_nodes must be >= 1, got {n_nodes!r}")
    if not 0 <= int(n_repressors) <= int(n_nodes):
        raise SpecError(f"n_repressors must be in [0, n_nodes], got {n_repressors!r}")
    names = tuple(f"N{i}" for i in range(n_nodes))
    edges = tuple(
        EdgeSpec(
            names[i],
            names[(i + 1) % n_nodes],
            -1 if i >= n_nodes - n_repressors else 1,
            K=K,
            n=n,
        )
        for i in range(n_nodes)
    )
    return NetworkSpec(nodes=names, edges=edges, inputs=names, name=f"ring{n_nodes}")

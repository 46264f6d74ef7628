"""The spec language's types and files (re-exported by :mod:`simulate.spec`, the one place to
import them from)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._errors import AgentmotifsError
from ._io import read_structured, write_json, write_text

__all__ = [
    "FFL_SIGNS",
    "GATES",
    "MOTIFS",
    "EdgeSpec",
    "NetworkSpec",
    "SpecError",
    "load_spec",
    "save_spec",
]

GATES = ("AND", "OR")

#: Sign table of the eight feed-forward loops, edges (X→Y, X→Z, Y→Z) (Mangan & Alon 2003).
FFL_SIGNS: dict[str, tuple[int, int, int]] = {
    "C1": (1, 1, 1),
    "C2": (-1, -1, 1),
    "C3": (1, -1, -1),
    "C4": (-1, 1, -1),
    "I1": (1, 1, -1),
    "I2": (-1, -1, -1),
    "I3": (1, -1, 1),
    "I4": (-1, 1, 1),
}
MOTIFS = tuple(FFL_SIGNS)


class SpecError(AgentmotifsError):
    """An invalid network spec; the message names the offending field."""


def _positive(value: Any, field: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SpecError(f"{field} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise SpecError(f"{field} must be a finite number > 0, got {value!r}")
    return v


@dataclasses.dataclass(frozen=True)
class EdgeSpec:
    """One signed edge ``source → target``.

    Attributes:
        source: Name of the regulating (upstream) node.
        target: Name of the regulated (downstream) node.
        sign: +1 activation, -1 repression, 0 no influence.
        K: Threshold, in units of the source node's level (> 0).
        n: Hill coefficient (> 0, dimensionless).
        feedback: True for end-to-end reward edges added by :func:`add_feedback`.
    """

    source: str
    target: str
    sign: int
    K: float = 1.0
    n: float = 2.0
    feedback: bool = False

    def __post_init__(self) -> None:
        label = f"edges[{self.source}->{self.target}]"
        if not isinstance(self.source, str) or not self.source:
            raise SpecError(f"{label}.source must be a non-empty node name")
        if not isinstance(self.target, str) or not self.target:
            raise SpecError(f"{label}.target must be a non-empty node name")
        if isinstance(self.sign, bool) or self.sign not in (-1, 0, 1):
            raise SpecError(f"{label}.sign must be one of -1, 0, 1, got {self.sign!r}")
        object.__setattr__(self, "sign", int(self.sign))
        object.__setattr__(self, "K", _positive(self.K, f"{label}.K"))
        object.__setattr__(self, "n", _positive(self.n, f"{label}.n"))

    @property
    def key(self) -> str:
        """Edge label used in parameter names, e.g. ``X->Y``."""
        return f"{self.source}->{self.target}"


@dataclasses.dataclass(frozen=True)
class NetworkSpec:
    """A signed regulatory network over named nodes (agent roles).

    Attributes:
        nodes: Node names, in state order.
        edges: Signed edges; at most one per (source, target) pair. Self-loops allowed.
        gates: Node name → ``"AND"`` or ``"OR"``; only for nodes with >= 2 regulators.
        inputs: Nodes driven by the input schedule (default: nodes with no regulators).
        name: Free-form label, e.g. ``"C1-AND"``.
    """

    nodes: tuple[str, ...]
    edges: tuple[EdgeSpec, ...]
    gates: Mapping[str, str] = dataclasses.field(default_factory=dict)
    inputs: tuple[str, ...] | None = None
    name: str = "network"

    def __post_init__(self) -> None:
        nodes = tuple(self.nodes)
        if not nodes:
            raise SpecError("nodes must list at least one node")
        for node in nodes:
            if not isinstance(node, str) or not node:
                raise SpecError(f"nodes: every node must be a non-empty string, got {node!r}")
            if any(c in node for c in "[]->, ="):
                raise SpecError(f"nodes: name {node!r} may not contain any of '[]->, ='")
        if len(set(nodes)) != len(nodes):
            dup = sorted({n for n in nodes if nodes.count(n) > 1})
            raise SpecError(f"nodes: duplicated node name(s) {dup}")
        edges = tuple(e if isinstance(e, EdgeSpec) else EdgeSpec(**e) for e in self.edges)
        seen: set[tuple[str, str]] = set()
        for e in edges:
            for end, field in ((e.source, "source"), (e.target, "target")):
                if end not in nodes:
                    raise SpecError(f"edges[{e.key}].{field}: unknown node {end!r}")
            if (e.source, e.target) in seen:
                raise SpecError(f"edges[{e.key}]: duplicated edge")
            seen.add((e.source, e.target))
        gates = {}
        for node, gate in dict(self.gates).items():
            if node not in nodes:
                raise SpecError(f"gates[{node}]: unknown node {node!r}")
            g = str(gate).upper()
            if g not in GATES:
                raise SpecError(f"gates[{node}] must be AND or OR, got {gate!r}")
            n_in = sum(1 for e in edges if e.target == node)
            if n_in < 2:
                raise SpecError(
                    f"gates[{node}]: a gate needs a node with >= 2 regulators, {node} has {n_in}"
                )
            gates[node] = g
        if self.inputs is None:
            inputs = tuple(n for n in nodes if not any(e.target == n for e in edges))
        else:
            if isinstance(self.inputs, str):
                raise SpecError("inputs must be a list of node names, not a string")
            inputs = tuple(self.inputs)
            for node in inputs:
                if node not in nodes:
                    raise SpecError(f"inputs: unknown node {node!r}")
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "gates", gates)
        object.__setattr__(self, "inputs", inputs)
        if not isinstance(self.name, str):
            raise SpecError(f"name must be a string, got {self.name!r}")

    # -- queries -------------------------------------------------------------------
    def index(self, node: str) -> int:
        """Position of ``node`` in the state vector."""
        try:
            return self.nodes.index(node)
        except ValueError:
            raise SpecError(f"unknown node {node!r}; nodes are {list(self.nodes)}") from None

    def edge(self, source: str, target: str) -> EdgeSpec:
        """The edge ``source → target`` (raises :class:`SpecError` if absent)."""
        for e in self.edges:
            if e.source == source and e.target == target:
                return e
        raise SpecError(f"no edge {source}->{target} in network {self.name!r}")

    def parents(self, node: str) -> tuple[EdgeSpec, ...]:
        """Incoming edges of ``node``."""
        return tuple(e for e in self.edges if e.target == node)

    def gate(self, node: str) -> str:
        """Input gate of ``node`` (``AND`` unless set)."""
        return self.gates.get(node, "AND")

    # -- (de)serialisation -----------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict; :meth:`from_dict` inverts it exactly."""
        return {
            "name": self.name,
            "nodes": list(self.nodes),
            "edges": [dataclasses.asdict(e) for e in self.edges],
            "gates": dict(self.gates),
            "inputs": list(self.inputs or ()),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NetworkSpec:
        """Build and validate a spec from a parsed JSON/YAML mapping."""
        if not isinstance(data, Mapping):
            raise SpecError(f"a network spec must be a mapping, got {type(data).__name__}")
        unknown = set(data) - {"name", "nodes", "edges", "gates", "inputs"}
        if unknown:
            raise SpecError(f"unknown top-level field(s) {sorted(unknown)}")
        if "nodes" not in data:
            raise SpecError("missing field 'nodes'")
        edges = []
        for i, e in enumerate(data.get("edges", [])):
            if not isinstance(e, Mapping):
                raise SpecError(f"edges[{i}] must be a mapping")
            missing = {"source", "target", "sign"} - set(e)
            if missing:
                raise SpecError(f"edges[{i}] is missing field(s) {sorted(missing)}")
            extra = set(e) - {f.name for f in dataclasses.fields(EdgeSpec)}
            if extra:
                raise SpecError(f"edges[{i}] has unknown field(s) {sorted(extra)}")
            edges.append(EdgeSpec(**e))
        inputs = data.get("inputs")
        return cls(
            nodes=tuple(data["nodes"]),
            edges=tuple(edges),
            gates=dict(data.get("gates") or {}),
            inputs=None if inputs is None else tuple(inputs),
            name=data.get("name", "network"),
        )

    def replace_edge(self, source: str, target: str, **changes: Any) -> NetworkSpec:
        """Copy with one edge's fields changed (e.g. ``sign=-1``)."""
        self.edge(source, target)
        edges = tuple(
            dataclasses.replace(e, **changes) if (e.source, e.target) == (source, target) else e
            for e in self.edges
        )
        return dataclasses.replace(self, edges=edges)


def load_spec(path: str | Path) -> NetworkSpec:
    """Read a spec from a ``.json``, ``.yaml`` or ``.yml`` file."""
    return NetworkSpec.from_dict(read_structured(path, what="network spec file", error=SpecError))


def save_spec(spec: NetworkSpec, path: str | Path) -> Path:
    """Write ``spec`` as JSON or YAML (chosen by suffix)."""
    path = Path(path)
    data = spec.to_dict()
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        write_text(path, yaml.safe_dump(data, sort_keys=False))
    else:
        write_json(path, data)
    return path

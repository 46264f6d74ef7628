"""Edges are real: EMA competence → Hill regulation → budget, credit or coupling; schedules.

Every signed edge ``j → i`` of the network acts through one mechanism (per edge, from the
config). For each agent ``i`` and mechanism ``m`` the edges into ``i`` using ``m`` are
combined by ``i``'s gate (AND: product of Hill terms; OR: Alon's competitive form), using
``simulate.edge_term`` and ``simulate.gate_or`` on the EMA competences ``Â_j`` in [0, 1]
(bias-corrected as Adam's moments are, ``Â = ema / (1 - decay^k)`` after ``k`` updates, so
that the first steps see the measured competence, not an EMA still rising from 0):

- ``budget``:   share of the rollout batch agent ``i`` trains on, ``1 - w + w·G``;
- ``credit``:   weight ``w·G`` of an auxiliary interaction reward added to ``i``'s reward:
  the end-to-end success under ``role`` credit, else ``i``'s own verifiable correctness
  given its actual upstream inputs (the part the credit mode does not already pay);
- ``coupling``: learning-rate multiplier ``1 - w + w·G``.

``w`` is the largest ``weight`` among those edges. Agents without edges of a mechanism
get factor 1 (budget, coupling) or 0 (credit). Activation grows a factor with upstream
competence, repression shrinks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from simulate import edge_term, gate_or

from .config import MECHANISMS, NetworkConfig, SpuriousConfig

__all__ = ["EdgeController", "pulse_windows"]


class EdgeController:
    """Per-agent EMA competence and the regulation it drives.

    Args:
        spec: The network (:class:`simulate.spec.NetworkSpec`); nodes are the agents.
        net: The network config (mechanisms, weights, EMA decay).
    """

    def __init__(self, spec: Any, net: NetworkConfig) -> None:
        self.spec = spec
        self.agents = list(spec.nodes)
        self.decay = float(net.ema_decay)
        self.ema = {a: 0.0 for a in self.agents}
        #: Updates so far (None: restored from a checkpoint made before the bias correction,
        #: whose run goes on without it, so that its resume stays exact).
        self.count: int | None = 0
        self.edges: dict[tuple[str, str], list[tuple[Any, float]]] = {}
        for e in spec.edges:
            ec = net.edge(e.key)
            self.edges.setdefault((e.target, ec.mechanism), []).append((e, ec.weight))

    def update(self, measured: dict[str, float]) -> None:
        """EMA step with this step's measured competences (fractions in [0, 1])."""
        for a, v in measured.items():
            if a in self.ema:
                self.ema[a] = self.decay * self.ema[a] + (1.0 - self.decay) * float(v)
        if self.count is not None:
            self.count += 1

    def estimate(self, agent: str) -> float:
        """``agent``'s bias-corrected EMA competence (the raw EMA before any update)."""
        if not self.count:
            return self.ema[agent]
        return self.ema[agent] / (1.0 - self.decay**self.count)

    def gated(self, agent: str, mechanism: str) -> float | None:
        """Gated regulation G in [0, 1] of ``agent`` through ``mechanism`` (None: no edge)."""
        edges = self.edges.get((agent, mechanism))
        if not edges:
            return None
        x = np.array([self.estimate(e.source) for e, _ in edges])
        sign = np.array([e.sign for e, _ in edges])
        K = np.array([e.K for e, _ in edges])
        n = np.array([e.n for e, _ in edges])
        if self.spec.gate(agent) == "OR" and len(edges) > 1:
            u = np.power(np.maximum(x, 0.0) / K, n)
            return float(gate_or(u, sign))
        return float(np.prod(edge_term(x, sign, K, n)))

    def weight(self, agent: str, mechanism: str) -> float:
        """Largest edge weight into ``agent`` with ``mechanism`` (0 without such edges)."""
        return max((w for _, w in self.edges.get((agent, mechanism), [])), default=0.0)

    def regulation(self) -> dict[str, dict[str, float | None]]:
        """``{agent: {mechanism: G or None}}``."""
        return {a: {m: self.gated(a, m) for m in MECHANISMS} for a in self.agents}

    def factors(self) -> dict[str, dict[str, float]]:
        """``{agent: {"budget": share, "credit": aux weight, "coupling": lr multiplier}}``."""
        out = {}
        for a in self.agents:
            f = {}
            for m in MECHANISMS:
                g, w = self.gated(a, m), self.weight(a, m)
                if m == "credit":
                    f[m] = 0.0 if g is None else w * g
                else:
                    f[m] = 1.0 if g is None else 1.0 - w + w * g
            out[a] = f
        return out

    def state(self) -> dict[str, Any]:
        """Checkpointable state: the raw EMA per agent and the update count (``_updates``)."""
        return {**self.ema, "_updates": self.count}

    def load_state(self, state: dict[str, Any]) -> None:
        """Inverse of :meth:`state` (a state without ``_updates`` resumes uncorrected)."""
        self.ema = {a: float(state[a]) for a in self.agents}
        n = state.get("_updates")
        self.count = None if n is None else int(n)


def pulse_windows(cfg: SpuriousConfig, steps: int, *, seed: int) -> list[list[int]]:
    """Spurious-reward pulse windows ``[start, stop)`` in optimizer steps.

    Explicit ``cfg.starts`` plus random starts: at each step outside a pulse a pulse starts
    with probability ``cfg.rate``. Overlapping windows are merged.

    Args:
        cfg: The pulse settings.
        steps: Run length.
        seed: Seed of the random starts (keyword-only).
    """
    rng = np.random.default_rng([seed, 1729])
    starts = set(int(s) for s in cfg.starts if s < steps)
    if cfg.rate > 0:
        t = 0
        while t < steps:
            if rng.random() < cfg.rate:
                starts.add(t)
                t += cfg.length
            else:
                t += 1
    windows: list[list[int]] = []
    for s in sorted(starts):
        stop = min(steps, s + cfg.length)
        if windows and s <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], stop)
        else:
            windows.append([s, stop])
    return windows


def in_windows(step: int, windows: Sequence[Sequence[int]]) -> bool:
    """Whether ``step`` lies in one of the half-open windows."""
    return any(a <= step < b for a, b in windows)

"""Policy lag (``rl.staleness``): a ring of past adapter snapshots per agent.

Asynchronous RL trainers sample rollouts with weights a few optimizer steps old. With lag
``k`` each training step ``s`` samples from ``θ_max(0, s-k)`` (every agent's adapter as it
was ``k`` steps earlier) and corrects the loss by the ratio to the current adapter. The
ring holds exactly ``k`` snapshots between steps, each a clone of the LoRA parameters of
every adapter (never the base): the one copy per step that a lag needs, since the optimizer
updates the parameters in place. Swapping a snapshot in points the adapter's parameters at
the snapshot's tensors and back afterwards (by reference: no copies, bit-exact restore).
The behaviour log-probs of the sampled tokens come from the sampling pass itself
(``MultiAdapter.generate(..., with_logp=True)``), not from a second forward.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Iterator
from typing import Any

import torch

from ._policy import MultiAdapter

__all__ = ["AdapterRing", "Snapshot", "use_snapshot"]

Snapshot = dict[str, list[torch.Tensor]]  # adapter name -> clones of its LoRA parameters


class AdapterRing:
    """The last ``k`` adapter snapshots (oldest first).

    Args:
        k: The lag in optimizer steps (0: no ring, every method is a no-op).
    """

    def __init__(self, k: int) -> None:
        self.k = int(k)
        self.snaps: deque[Snapshot] = deque()

    def advance(self, policy: MultiAdapter) -> Snapshot | None:
        """At the start of a step: the behaviour snapshot of this step, then remember now.

        Returns the oldest snapshot held (``θ_{s-k}``, or ``θ_0`` while fewer than ``k``
        steps have passed), or None when the ring is empty (step 0, or ``k == 0``): sample
        from the current adapter. The current adapters are then pushed and the ring is cut
        back to ``k`` snapshots (the returned one stays alive while the caller holds it).
        """
        if self.k == 0:
            return None
        stale = self.snaps[0] if self.snaps else None
        self.snaps.append({a: [p.detach().clone() for p in ps] for a, ps in policy.params.items()})
        while len(self.snaps) > self.k:
            self.snaps.popleft()
        return stale

    def n_params(self) -> int:
        """Number of scalars held (``k`` times the adapters' parameter count when full)."""
        return sum(t.numel() for s in self.snaps for ts in s.values() for t in ts)

    def n_bytes(self) -> int:
        """Bytes of the tensors held."""
        return sum(
            t.numel() * t.element_size() for s in self.snaps for ts in s.values() for t in ts
        )

    def state(self) -> list[Snapshot]:
        """Checkpointable state (the snapshots, oldest first)."""
        return list(self.snaps)

    def load_state(self, state: list[Snapshot] | None) -> None:
        """Inverse of :meth:`state` (None or missing: an empty ring)."""
        self.snaps = deque(state or [])


@contextlib.contextmanager
def use_snapshot(policy: MultiAdapter, name: str, snap: Snapshot | None) -> Iterator[Any]:
    """Within the block, adapter ``name`` holds its parameters of ``snap`` (None: as is).

    The parameters' data are swapped by reference (no copies): nothing in the block may
    write to them (sampling and no-grad scoring only). On exit each parameter gets back the
    very tensor it held (bit for bit; optimizer state and gradients are untouched).
    """
    if snap is None:
        yield
        return
    params = policy.params[name]
    saved = [p.data for p in params]
    for p, t in zip(params, snap[name], strict=True):
        p.data = t
    try:
        yield
    finally:
        for p, t in zip(params, saved, strict=True):
            p.data = t

"""The candidate networks of a motif selection (:func:`calibrate._select._core.select`)."""

from __future__ import annotations

from collections.abc import Sequence

import simulate
from simulate.spec import NetworkSpec

from .._config import ConfigError

__all__ = ["Candidate", "candidates"]

Candidate = tuple[str, str, "simulate.Network | NetworkSpec | str"]


def candidates(
    motifs: Sequence[str] | str = "auto", gates: Sequence[str] = ("AND", "OR")
) -> list[Candidate]:
    """Candidate list ``(motif, gate, network)``: ``"auto"`` = 8 FFL sign structures x gates."""
    ms = list(simulate.MOTIFS) if motifs == "auto" else [str(m).upper() for m in motifs]
    out: list[Candidate] = []
    for m in ms:
        if m not in simulate.MOTIFS:
            raise ConfigError(f"unknown motif {m!r}; choose from {list(simulate.MOTIFS)} or auto")
        for g in gates:
            if str(g).upper() not in ("AND", "OR"):
                raise ConfigError(f"unknown gate {g!r}")
            out.append((m, str(g).upper(), f"{m}-{str(g).upper()}"))
    return out

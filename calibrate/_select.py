"""Motif selection: fit candidate networks, rank by PSIS-LOO with stacking weights."""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax

import simulate
from simulate.spec import NetworkSpec

from ._config import ConfigError, FitConfig
from ._data import CurveData
from ._fit import fit
from ._posterior import Posterior, _az

__all__ = ["Selection", "candidates", "select"]

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


@dataclasses.dataclass
class Selection:
    """Result of :func:`select`.

    Attributes:
        ranking: Best first: ``{motif, gate, elpd_loo, se, d_elpd, dse, p_loo, weight,
            pareto_k_max, warning}``.
        posteriors: Label → :class:`Posterior` of each candidate.
    """

    ranking: list[dict[str, Any]]
    posteriors: dict[str, Posterior]

    @property
    def best(self) -> dict[str, Any]:
        """The top-ranked candidate."""
        return self.ranking[0]

    def save(self, out: str | Path, *, figure: bool = True, fits: bool = False) -> Path:
        """Write ``selection.json`` (+ ``selection.png``; ``fits``: each fit in ``fits/LABEL``)."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "selection.json").write_text(json.dumps(self.ranking, indent=2) + "\n")
        if figure:
            from ._plots import plot_selection

            plot_selection(self.ranking, out / "selection.png")
        if fits:
            for label, post in self.posteriors.items():
                post.save(out / "fits" / label, figure=figure)
        return out / "selection.json"


def select(
    data: CurveData,
    cands: Sequence[Candidate] | str = "auto",
    config: FitConfig | None = None,
    *,
    key: jax.Array,
    nodes: tuple[str, ...] | None = None,
    log: Callable[[str], None] | None = None,
    progress: bool = False,
) -> Selection:
    """Fit each candidate network and rank them by PSIS-LOO (ArviZ), with stacking weights.

    Args:
        data: The curves.
        cands: ``"auto"`` (16 FFL presets) or a list from :func:`candidates` /
            ``(label, "", network_spec)`` tuples.
        config: Fit options shared by all candidates.
        key: PRNG key (keyword-only).
        nodes: Agent names for X, Y, Z.
        log: One-line progress callback.
        progress: Progress bars while sampling.
    """
    az = _az()
    say = log or (lambda s: None)
    cl = candidates("auto") if cands == "auto" else list(cands)
    if len(cl) < 2:
        raise ConfigError("model selection needs >= 2 candidates")
    posts: dict[str, Posterior] = {}
    idatas: dict[str, Any] = {}
    meta: dict[str, tuple[str, str]] = {}
    for i, (motif, gate, net) in enumerate(cl):
        label = f"{motif}-{gate}" if gate else motif
        say(f"[{i + 1}/{len(cl)}] fitting {label}")
        post = fit(
            data, net, config, key=jax.random.fold_in(key, i), nodes=nodes, progress=progress
        )
        posts[label] = post
        idatas[label] = post.to_inference_data()
        meta[label] = (motif, gate)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = az.compare(idatas, ic="loo", method="stacking")
        khat = {lb: float(az.loo(idatas[lb], pointwise=True).pareto_k.max()) for lb in idatas}
    ranking = []
    for label, row in cmp.iterrows():
        lb = str(label)
        ranking.append(
            {
                "motif": meta[lb][0],
                "gate": meta[lb][1],
                "elpd_loo": float(row["elpd_loo"]),
                "se": float(row["se"]),
                "d_elpd": float(row["elpd_diff"]),
                "dse": float(row["dse"]),
                "p_loo": float(row["p_loo"]),
                "weight": float(row["weight"]),
                "pareto_k_max": khat[lb],
                "warning": bool(row["warning"]),
            }
        )
    return Selection(ranking, posts)

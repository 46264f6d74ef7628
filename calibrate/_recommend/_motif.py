"""Which fit predicts which candidate of ``recommend --space``: one fit, or a motif selection.

``FIT_DIR`` may be a selection folder written by ``calibrate fit --motif auto`` (or a motif
list): ``selection.json`` (ranking, stacking weights) and one fit per candidate network in
``fits/LABEL`` (``LABEL`` = ``MOTIF-GATE``, e.g. ``C1-AND``). Then:

- with ``network.motif`` in the space (choices), every candidate is predicted by its
  motif's own fit (own links and draws); the gate is ``network.gate`` of the candidate when
  the space has it, else the best-ranked gate of that motif in the selection. A motif
  without a fit in the folder is an error naming it;
- without it, every candidate is predicted by the selection's best fit (``best``), or by
  the mixture of the fits with their stacking weights (``stacking``: the posterior draws
  of each fit pooled in proportion to its weight; weights below :data:`MIN_WEIGHT` are
  dropped and the rest renormalised).

The plan states its source (``motif_source``), and the chosen fit's motif and gate go into
``best.yaml`` (``network.motif``, ``network.gate``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import simulate

from .._config import ConfigError
from .._posterior import Posterior, load_fit

__all__ = [
    "MIN_WEIGHT",
    "MOTIF_WEIGHTS",
    "MotifFits",
    "Plan",
    "is_selection_folder",
    "plan",
    "preset_of",
]

MOTIF_WEIGHTS = ("best", "stacking")
MIN_WEIGHT = 1e-3  # stacking weights below this are dropped from the mixture
_NET = ("network.motif", "network.gate")


def is_selection_folder(path: str | Path) -> bool:
    """True for a folder with ``selection.json`` (written by ``fit --motif auto``)."""
    return (Path(path) / "selection.json").is_file()


class MotifFits:
    """The fits of a motif selection, loaded on first use.

    Attributes:
        ranking: ``selection.json``'s ranking (best first): ``label``, ``motif``, ``gate``,
            ``weight`` (stacking) per candidate.
        where: Where the fits come from (for messages).
    """

    def __init__(
        self, ranking: list[dict[str, Any]], load: Callable[[str], Posterior], where: str
    ) -> None:
        if not ranking:
            raise ConfigError(f"{where}: the selection ranks no candidate")
        self.ranking = ranking
        self.where = where
        self._load = load
        self._posts: dict[str, Posterior] = {}

    @classmethod
    def load(cls, folder: str | Path) -> MotifFits:
        """From a selection folder (``selection.json`` and ``fits/LABEL``).

        Raises:
            ConfigError: An unreadable ``selection.json``.
        """
        d = Path(folder)
        text = simulate.read_text(d / "selection.json", what="selection")
        try:
            ranking = json.loads(text)["ranking"]
            checked = [(str(r["label"]), str(r["motif"]), float(r["weight"])) for r in ranking]
        except (ValueError, KeyError, TypeError) as err:
            raise ConfigError(f"{str(d)!r}: unreadable selection.json ({err!r})") from None
        del checked  # read for the check only
        have = [r for r in ranking if (d / "fits" / str(r["label"]) / "latent.npz").is_file()]
        if not have:
            raise ConfigError(
                f"{str(d)!r} holds a selection but no fits (fits/LABEL); rerun "
                "calibrate fit --motif ... --out with this folder"
            )
        return cls(have, lambda lb: load_fit(d / "fits" / lb), f"selection folder {str(d)!r}")

    @classmethod
    def from_selection(cls, sel: Any) -> MotifFits:
        """From an in-memory :class:`calibrate.Selection`."""
        return cls(list(sel.ranking), sel.posteriors.__getitem__, "the selection")

    @property
    def labels(self) -> list[str]:
        """Labels of the fits, best first."""
        return [str(r["label"]) for r in self.ranking]

    @property
    def best(self) -> str:
        """The top-ranked label."""
        return self.labels[0]

    def presets(self) -> dict[str, tuple[str, str]]:
        """Label -> ``(motif, gate)`` of the preset candidates (``gate`` AND or OR)."""
        out = {}
        for r in self.ranking:
            m, g = str(r.get("motif", "")).upper(), str(r.get("gate", "")).upper()
            if m in simulate.MOTIFS and g in ("AND", "OR"):
                out[str(r["label"])] = (m, g)
        return out

    def get(self, label: str) -> Posterior:
        """The fit of ``label`` (loaded once)."""
        if label not in self._posts:
            self._posts[label] = self._load(label)
        return self._posts[label]

    def label_for(self, motif: Any, gate: Any = None) -> str:
        """The label of ``motif`` (with ``gate``, or the best-ranked gate of the motif).

        Raises:
            ConfigError: No fit of that motif (and gate) in the selection.
        """
        m, g = str(motif).upper(), None if gate is None else str(gate).upper()
        for r in self.ranking:
            if str(r.get("motif", "")).upper() == m and g in (None, str(r.get("gate")).upper()):
                return str(r["label"])
        what = f"network.motif {motif!r}" + ("" if g is None else f" with network.gate {gate!r}")
        raise ConfigError(
            f"space: {what} has no fit in {self.where} (fits: {', '.join(self.labels)}); "
            "refit the selection with that motif in --motif, or drop it from the space"
        )


@dataclasses.dataclass
class Plan:
    """Per candidate, the fits that predict it and their weights.

    Attributes:
        components: Per candidate, ``((label, weight), ...)`` (weights sum to 1).
        fits: Label -> fit, for every label used.
        motif_source: One line saying where the motif's posterior comes from.
        selection: True when the fits come from a selection folder.
        pilot_wiring: True when ``best.yaml`` keeps the base pilot's wiring (the space does
            not search ``network.motif``: every fit models the pilots' runs); otherwise it
            carries the motif and gate of the candidate's (heaviest) fit.
    """

    components: list[tuple[tuple[str, float], ...]]
    fits: dict[str, Posterior]
    motif_source: str
    selection: bool
    presets: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    pilot_wiring: bool = False

    @property
    def primary(self) -> Posterior:
        """A fit of the plan (all share the data, links and pilots)."""
        return next(iter(self.fits.values()))

    def network_fields(self, i: int) -> dict[str, Any]:
        """``network.*`` fields of candidate ``i``'s training config: its heaviest fit's
        motif and gate (a preset; otherwise the fit's network spec); empty for one fit
        or when the pilots' wiring is kept."""
        if not self.selection or self.pilot_wiring:
            return {}
        label = max(self.components[i], key=lambda c: c[1])[0]
        if label in self.presets:
            motif, gate = self.presets[label]
            return {"network.motif": motif, "network.gate": gate, "network.spec": None,
                    "network.spec_path": None}  # fmt: skip
        cm = self.fits[label].model
        return {"network.spec": cm.network.to_spec(label).to_dict(), "network.spec_path": None}


def preset_of(post: Posterior) -> tuple[str, str] | None:
    """The FFL preset ``(motif, gate)`` whose edge signs and gate the fitted network has
    (nodes compared by position, so agent names do not matter), or None."""

    def structure(spec: Any) -> tuple[Any, ...]:
        pos = {n: i for i, n in enumerate(spec.nodes)}
        edges = sorted((pos[e.source], pos[e.target], int(e.sign)) for e in spec.edges)
        gates = sorted((pos[n], str(g).upper()) for n, g in spec.gates.items())
        return len(spec.nodes), tuple(edges), tuple(gates)

    have = structure(post.model.network.to_spec("fit"))
    for motif in simulate.MOTIFS:
        for gate in ("AND", "OR"):
            if structure(simulate.spec.ffl_spec(motif, gate)) == have:
                return motif, gate
    return None


def plan(
    fits: Posterior | MotifFits,
    space: Any,
    candidates: list[dict[str, Any]],
    motif_weights: str = "best",
) -> Plan:
    """Assign the candidates of ``space`` to fits (see the module docstring).

    Raises:
        ConfigError: An unknown ``motif_weights``; ``stacking`` with one fit or with the
            motif in the space; ``network.motif`` given as a range; a motif (or gate) of
            the space without a fit; or, with a single fit, a motif in the space other
            than the fit's.
    """
    if motif_weights not in MOTIF_WEIGHTS:
        raise ConfigError(f"--motif-weights must be one of {MOTIF_WEIGHTS}, got {motif_weights!r}")
    fields = {f.name: f for f in space.fields}
    for name in _NET:
        if name in fields and fields[name].choices is None:
            raise ConfigError(f"space: fields.{name} must list choices, not a range")
    searched = "network.motif" in fields
    if "network.gate" in fields and not searched:
        raise ConfigError("space: fields.network.gate needs fields.network.motif beside it")
    if isinstance(fits, Posterior):
        preset = preset_of(fits)
        name = f"{preset[0]}-{preset[1]}" if preset else "custom network"
        if motif_weights != "best":
            raise ConfigError(
                "--motif-weights stacking needs a selection folder (calibrate fit --motif auto)"
            )
        if searched:
            motif, gate = preset or ("", "")
            bad = [c for c in fields["network.motif"].choices or () if str(c).upper() != motif]
            bad += [c for c in getattr(fields.get("network.gate"), "choices", None) or ()
                    if str(c).upper() != gate]  # fmt: skip
            if bad:
                raise ConfigError(
                    f"space: network.motif/gate {bad} differ from the fit's network {name!r}; "
                    "a single fit predicts only its own motif: pass a selection folder "
                    "(calibrate fit --motif auto or a motif list) to compare motifs"
                )
        comp = ((name, 1.0),)
        return Plan([comp] * len(candidates), {name: fits}, f"single fit: {name}", False)
    if searched:
        for m in fields["network.motif"].choices or ():
            gates = getattr(fields.get("network.gate"), "choices", None) or (None,)
            for g in gates:
                fits.label_for(m, g)  # every motif of the space has a fit, before any work
        labels = [fits.label_for(c["network.motif"], c.get("network.gate")) for c in candidates]
        posts = {lb: fits.get(lb) for lb in dict.fromkeys(labels)}
        pairs = dict.fromkeys(f"{c['network.motif']} -> {lb}" for c, lb in zip(
            candidates, labels, strict=True))  # fmt: skip
        source = f"own fit per motif: {', '.join(pairs)}"
        return Plan([((lb, 1.0),) for lb in labels], posts, source, True, fits.presets())
    # the motif is not searched: the fits only model the pilots' runs, so best.yaml keeps
    # the pilots' wiring
    if motif_weights == "best":
        best = fits.best
        return Plan([((best, 1.0),)] * len(candidates), {best: fits.get(best)},
                    f"selection best: {best}", True, fits.presets(), True)  # fmt: skip
    w = {str(r["label"]): float(r["weight"]) for r in fits.ranking}
    kept = {lb: v for lb, v in w.items() if v >= MIN_WEIGHT}
    if not kept:
        raise ConfigError(f"{fits.where}: no stacking weight >= {MIN_WEIGHT:g}")
    total = sum(kept.values())
    kept = {lb: v / total for lb, v in sorted(kept.items(), key=lambda kv: -kv[1])}
    dropped = len(w) - len(kept)
    source = "stacking weights {" + ", ".join(f"{lb}: {v:.3g}" for lb, v in kept.items()) + "}"
    if dropped:
        source += f" ({dropped} fit(s) with weight < {MIN_WEIGHT:g} left out, renormalised)"
    comp = tuple(kept.items())
    posts = {lb: fits.get(lb) for lb in kept}
    return Plan([comp] * len(candidates), posts, source, True, fits.presets(), True)

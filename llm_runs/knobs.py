"""The knob schema: one declaration per training knob (torch-free).

A knob is a field of :class:`llm_runs.config.TrainConfig` that a study varies between runs
and that the competence model represents through hyperparameter links. Each :class:`Knob`
declares only what the config does not know — its scale (one of
:data:`simulate.common.SCALES`), the model parameters it links to by default and what those
stand for; its type and domain are read from the config itself (:attr:`Knob.type`,
:meth:`Knob.check` validates a value with the config's own rules), so they cannot drift.

Derived from :data:`KNOBS`: ``calibrate.KNOB_LINKS`` and ``calibrate.default_links`` (the
links ``calibrate fit`` proposes), link transforms, the default scale of a search-space field
(``recommend --space``), and ``llm_runs train``'s options for the knobs (:attr:`Knob.flag`:
``--lr``, ``--staleness``, ``--kl-coef``, ``--weight-decay``, ``--batch``, ``--group``; their
types from the config fields).

Example:
    >>> from llm_runs.knobs import knob
    >>> k = knob("rl.staleness")
    >>> k.scale, k.links, k.type
    ('log1p', ('rho', 'delta'), <class 'int'>)
    >>> k.check(1e1)  # an integral float is the lag 10, as the config reads it
    10
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from simulate.common import SCALE_DOMAINS, SCALES, in_scale_domain

from .config import ConfigError, TrainConfig, field_type, set_dotted, typed_value

__all__ = ["KNOBS", "Knob", "hierarchy_links", "knob", "own_rate_links"]


@dataclasses.dataclass(frozen=True)
class Knob:
    """One training knob.

    Attributes:
        field: Dotted training-config field; ``rl.lr_scale.*`` stands for one field per
            role (``rl.lr_scale.X`` links the role's own node ``X``).
        scale: Its scale (:data:`simulate.common.SCALES`): the link transform, the spacing
            of a search-space range and of a grid.
        links: Base parameters of the competence model it links to by default (every
            node's, or the role's own for ``rl.lr_scale.*``).
        mechanism: The model mechanism the knob stands for.
        not_represented: What the fitted ODE cannot represent of the knob.
    """

    field: str
    scale: str
    links: tuple[str, ...]
    mechanism: str
    not_represented: str

    def __post_init__(self) -> None:
        if self.scale not in SCALES:
            raise ConfigError(f"knob {self.field}: scale must be one of {SCALES}")
        if _hint(self.field) is None:
            raise ConfigError(f"knob {self.field}: not a field of the training config")

    @property
    def flag(self) -> str | None:
        """The ``llm_runs train`` option of the knob, as an argparse ``dest``: the field's
        last part (``rl.lr`` -> ``lr``, the option ``--lr``; ``rl.kl_coef`` -> ``--kl-coef``);
        None for a per-role family (``rl.lr_scale.*``, set with ``--set``)."""
        return None if self.field.endswith(".*") else self.field.rsplit(".", 1)[-1]

    def matches(self, name: str) -> bool:
        """``name`` is this knob's field (or, for ``rl.lr_scale.*``, one role's)."""
        if self.field.endswith(".*"):
            prefix = self.field[:-1]
            role = name[len(prefix) :]
            return name.startswith(prefix) and bool(role) and "." not in role
        return name == self.field

    def targets(self, name: str) -> tuple[str, ...]:
        """Nodes a link of field ``name`` targets: the role for ``rl.lr_scale.ROLE``, else
        every node (``()``)."""
        return (name[len(self.field) - 1 :],) if self.field.endswith(".*") else ()

    @property
    def type(self) -> type:
        """The config field's number type (``int`` or ``float``)."""
        hint = _hint(self.field)
        kinds = hint.__args__ if isinstance(hint, types.UnionType) else (hint,)
        return float if float in kinds else int

    @property
    def integer(self) -> bool:
        """The field takes integers (``rl.staleness``, ``rl.batch``)."""
        return self.type is int

    def check(self, value: Any, name: str | None = None) -> int | float:
        """``value`` typed and validated as the training config reads field ``name``
        (default :attr:`field`): its type conversion (``1e1`` → 10 for an int field) and its
        own check (``rl.lr: must be > 0``). The config's domain lies inside the scale's.

        Raises:
            ConfigError: The config refuses the value (its message, naming the field).
        """
        name = name or self.field
        if not self.matches(name):
            raise ConfigError(f"{name} is not the knob {self.field}")
        typed = typed_value(name, value)  # a role's factor: no dataclass field, any number
        if self.type is float and isinstance(typed, int) and not isinstance(typed, bool):
            typed = float(typed)
        data: dict[str, Any] = {}
        set_dotted(data, name, typed)
        TrainConfig.from_dict(data)
        if not bool(in_scale_domain(self.scale, typed)):  # a knob whose scale is too narrow
            raise ConfigError(f"{name} must be {SCALE_DOMAINS[self.scale]} ({self.scale} scale)")
        return typed


def _hint(name: str) -> Any:
    """The declared type of a knob's field; for ``sec.dict_field.*`` the dict's value type."""
    if name.endswith(".*"):
        parent = field_type(name[:-2])
        args = typing.get_args(parent)
        return args[1] if typing.get_origin(parent) is dict and len(args) == 2 else None
    return field_type(name)


#: The training knobs (docs/model.md, "Training knobs as links", lists the same rows).
KNOBS: tuple[Knob, ...] = (
    Knob(
        "rl.lr",
        "log",
        ("rho", "delta"),
        "learning step: rate per step rho; large steps also undo past learning (delta)",
        "finite-step overshoot and flips (simulate's map, eta) — the fit is an ODE",
    ),
    Knob(
        "rl.staleness",
        "log1p",
        ("rho", "delta"),
        "policy lag k: stale rollouts slow learning (effective rho) and let the "
        "policy drift back (effective delta)",
        "the delay itself: the fitted ODE has no delay (simulate's tau, delay_stages), "
        "so lag enters only as an effective rate and forgetting, never as lag-driven "
        "oscillation",
    ),
    Knob(
        "rl.kl_coef",
        "log1p",
        ("delta",),
        "pull toward the base: forgetting delta",
        "a pull toward the base's competence rather than toward 0",
    ),
    Knob(
        "rl.weight_decay",
        "log1p",
        ("delta",),
        "decay of the adapter weights toward 0: forgetting delta",
        "decay scaled by the warm-up ramp and lr (lr_eff), not a constant rate",
    ),
    Knob(
        "rl.batch",
        "log",
        ("rho",),
        "more rollouts per step: a cleaner gradient, a larger effective rate",
        "gradient noise itself (simulate's sigma, SDE); seed-to-seed spread",
    ),
    Knob(
        "rl.group",
        "log",
        ("rho",),
        "more rollouts per problem: a cleaner gradient, a larger effective rate",
        "gradient noise itself (simulate's sigma, SDE); seed-to-seed spread",
    ),
    Knob(
        "rl.lr_scale.*",
        "log",
        ("rho", "delta"),
        "per-role learning-rate factor: that role's rho and, as rl.lr's, its forgetting "
        "delta; beside a varying rl.lr, through the product rl.lr*rl.lr_scale.ROLE",
        "as for rl.lr: finite-step effects of the role's own steps",
    ),
)


def knob(name: str) -> Knob | None:
    """The knob of training-config field ``name`` (``rl.lr_scale.X`` → ``rl.lr_scale.*``),
    or None when ``name`` is no knob."""
    for k in KNOBS:
        if k.matches(str(name)):
            return k
    return None


def hierarchy_links(
    fields: tuple[str, ...] | list[str], nodes: Sequence[str] | None = None
) -> dict[str, Any]:
    """The hierarchy file (``calibrate fit --hierarchy``) linking each knob of ``fields`` to
    its default parameters on its own scale, in the order given (a ``log`` link leaves
    ``transform`` out, the file format's default); given the network's ``nodes``, a scaled
    role's rates on its own learning rate (:func:`own_rate_links`).

    Raises:
        ConfigError: A field that is no knob.
    """
    links = []
    for name in fields:
        k = knob(name)
        if k is None:
            raise ConfigError(f"{name} is no knob of llm_runs.knobs.KNOBS")
        extra = {"targets": list(k.targets(name))} if k.targets(name) else {}
        extra |= {"transform": k.scale} if k.scale != "log" else {}
        links += [{"param": p, "covariate": name} | extra for p in k.links]
    return {"links": links if nodes is None else own_rate_links(links, nodes)}


def own_rate_links(links: Sequence[Mapping[str, Any]], nodes: Sequence[str]) -> list[dict]:
    """Link records (``param``, ``covariate``, optional ``targets`` and ``transform``) with
    each scaled role's rates on the learning rate it trains at: where ``rl.lr`` links a rate
    of every node and ``rl.lr_scale.ROLE`` the same rate of ``ROLE``, the latter becomes a
    link on ``rl.lr*rl.lr_scale.ROLE`` (llm_runs trains ``ROLE`` at the product; one slope
    for both fields) and the former targets the nodes no scale links, or is dropped when
    every node is scaled (the testbed's fifth forecast test, docs/results.md)."""
    scale = next(k for k in KNOBS if k.field == "rl.lr_scale.*")
    out: list[dict | None] = [dict(lk) for lk in links]
    for i, lk in enumerate(links):
        if lk["covariate"] != "rl.lr" or lk.get("targets"):
            continue
        scaled = [
            j
            for j, other in enumerate(links)
            if other["param"] == lk["param"]
            and scale.matches(str(other["covariate"]))
            and len(other.get("targets") or ()) == 1
            and other["targets"][0] in nodes
        ]
        for j in scaled:
            role = links[j]["targets"][0]
            out[j] = {"param": lk["param"], "covariate": f"rl.lr*rl.lr_scale.{role}",
                      "targets": [role], "transform": "log"}  # fmt: skip
        if scaled:
            roles = {links[j]["targets"][0] for j in scaled}
            rest = [n for n in nodes if n not in roles]
            out[i] = {**lk, "targets": rest} if rest else None
    return [lk for lk in out if lk is not None]

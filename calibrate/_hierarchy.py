r"""The hierarchy of a fit (:class:`Hierarchy`: per-run random effects and hyperparameter
:class:`Link`\ s) and the parameter families they may name; re-exported by
:mod:`calibrate._config`."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from simulate.common import ConfigError

from ._covariates import factors, is_product
from ._transforms import TRANSFORMS

__all__ = ["EDGE_PARAMS", "GLOBAL_PARAMS", "NODE_PARAMS", "PIPELINE_PARAMS", "Hierarchy", "Link"]

NODE_PARAMS = ("rho", "b", "delta", "A0")
EDGE_PARAMS = ("K", "n")
#: Parameters of each pipeline gate (``FitConfig.pipeline``), named ``Kp[X->Y]``, ``m[X->Y]``.
PIPELINE_PARAMS = ("Kp", "m")
#: Parameters of the whole network, free only under the map dynamics (``eta``) and a lag.
GLOBAL_PARAMS = ("eta", "lag")


@dataclasses.dataclass(frozen=True)
class Link:
    """A hyperparameter link ``u_r = a + c (T(h_r) - mean_runs T(h))``, ``u`` the log/logit scale.

    Attributes:
        param: Base parameter (``rho``, ``delta``, ``b``... or ``K``, ``n``).
        covariate: Hyperparameter column (per run), e.g. ``lr`` or ``coupling``; columns
            joined by ``*`` link their product (``rl.lr*rl.lr_scale.X``: the learning rate
            role X trains at; ``log`` only; :mod:`calibrate._covariates`).
        targets: Nodes or edges (``X->Y``) linked; empty = every one of that base.
        transform: ``T``: ``log`` (default; ``h > 0``), ``log1p`` (``log(1 + h)``, ``h >= 0``:
            knobs that can be 0, e.g. ``rl.staleness``) or ``linear`` (see ``_knobs``).
    """

    param: str
    covariate: str
    targets: tuple[str, ...] = ()
    transform: str = "log"

    def __post_init__(self) -> None:
        if self.param not in NODE_PARAMS + EDGE_PARAMS + GLOBAL_PARAMS:
            raise ConfigError(
                f"link.param must be one of {NODE_PARAMS + EDGE_PARAMS + GLOBAL_PARAMS}"
            )
        if not isinstance(self.covariate, str) or not self.covariate:
            raise ConfigError("link.covariate must name a hyperparameter column")
        if self.transform not in TRANSFORMS:
            raise ConfigError(f"link.transform must be one of {TRANSFORMS}, got {self.transform!r}")
        if is_product(self.covariate):
            factors(self.covariate)  # distinct, non-empty fields
            if self.transform != "log":
                raise ConfigError(f"link on {self.covariate}: a product needs transform 'log'")
        object.__setattr__(self, "targets", tuple(str(t) for t in self.targets))


@dataclasses.dataclass(frozen=True)
class Hierarchy:
    """Which parameters vary between runs.

    Attributes:
        random_effects: Base parameters with a per-run (per-seed) random effect on the
            log/logit scale, e.g. ``("rho",)``.
        links: Maps from run hyperparameters to parameters (:class:`Link`).
    """

    random_effects: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()

    def __post_init__(self) -> None:
        re = tuple(str(p) for p in self.random_effects)
        for p in re:
            if p not in NODE_PARAMS + EDGE_PARAMS + GLOBAL_PARAMS:
                raise ConfigError(f"hierarchy.random_effects: unknown parameter {p!r}")
        links = tuple(lk if isinstance(lk, Link) else Link(**lk) for lk in self.links)
        object.__setattr__(self, "random_effects", re)
        object.__setattr__(self, "links", links)
        self.transforms  # noqa: B018 (checks: one transform per covariate)

    @property
    def transforms(self) -> dict[str, str]:
        """Link transform of each linked covariate (one per covariate)."""
        out: dict[str, str] = {}
        for lk in self.links:
            if out.setdefault(lk.covariate, lk.transform) != lk.transform:
                raise ConfigError(
                    f"hierarchy.links: {lk.covariate!r} is linked with transforms "
                    f"{out[lk.covariate]!r} and {lk.transform!r}; use one per covariate"
                )
        return out

    @property
    def empty(self) -> bool:
        """True when all runs share every parameter."""
        return not self.random_effects and not self.links


def _fields(data: Any, cls: type, where: str) -> dict[str, Any]:
    """``data`` as a dict of ``cls``'s fields; anything else is a :class:`ConfigError`."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where} must be an object, got {type(data).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}
    if set(data) - known:
        raise ConfigError(f"{where}: unknown field(s) {sorted(set(data) - known)}")
    return dict(data)


def _sequence(value: Any, where: str) -> tuple[Any, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigError(f"{where} must be a list, got {value!r}")
    return tuple(value)


def _indexed(param: Any, targets: tuple[Any, ...], where: str) -> tuple[Any, tuple]:
    """``rho[X]`` (as a fit's ``links.json`` and summaries name it) is param ``rho`` with
    targets ``[X]``; with other ``targets`` given it is an error saying where they go."""
    m = re.fullmatch(r"\s*(\w+)\[([^\]]+)\]\s*", param) if isinstance(param, str) else None
    if m is None:
        return param, targets
    name, target = m.group(1), m.group(2).strip()
    if targets and tuple(str(t) for t in targets) != (target,):
        raise ConfigError(
            f"{where}: param {param!r} names its target; write param {name!r} with "
            f"targets {[str(t) for t in targets]}, or param {param!r} alone"
        )
    return name, (target,)


def _default_transform(covariate: str) -> str:
    """A link's transform when its record leaves it out: the knob schema's scale of the
    covariate (``log1p`` for ``rl.staleness``, ``rl.kl_coef``), else ``log``."""
    from llm_runs.knobs import knob

    k = None if "*" in covariate else knob(covariate)
    return k.scale if k is not None else "log"


def _hierarchy(data: Any) -> Hierarchy:
    """A :class:`Hierarchy` from its parsed JSON (fields checked, one-line errors)."""
    h = _fields(data, Hierarchy, "hierarchy")
    links = []
    for i, lk in enumerate(_sequence(h.get("links", ()), "hierarchy.links")):
        lk = _fields(lk, Link, f"hierarchy.links[{i}]")
        missing = {"param", "covariate"} - set(lk)
        if missing:
            raise ConfigError(f"hierarchy.links[{i}] is missing {sorted(missing)}")
        targets = _sequence(lk.get("targets", ()), f"hierarchy.links[{i}].targets")
        param, targets = _indexed(lk["param"], targets, f"hierarchy.links[{i}]")
        if "transform" not in lk:  # the knob schema's scale: rl.staleness is log1p (lag 0)
            lk["transform"] = _default_transform(str(lk["covariate"]))
        links.append(Link(**{**lk, "param": param, "targets": targets}))
    re = _sequence(h.get("random_effects", ()), "hierarchy.random_effects")
    return Hierarchy(random_effects=re, links=tuple(links))

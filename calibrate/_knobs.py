"""Link transforms and the table from training knobs to the competence model's parameters.

A link ties a base parameter to a training-config field ``h`` (one value per run) on the
parameter's own scale (log or logit): ``u_r = a + c x_r`` with ``x_r = T(h_r) - mean_runs
T(h)``. The transform ``T`` fits the knob's domain:

* ``log`` — ``T(h) = log h`` (``h > 0``): rates and sizes (``rl.lr``, ``rl.batch``); the
  parameter is then a power law of the knob, ``theta = theta_ref (h / h_ref)^c``.
* ``log1p`` — ``T(h) = log(1 + h)`` (``h >= 0``): counts and coefficients whose default is 0
  (``rl.staleness``, ``rl.kl_coef``, ``rl.weight_decay``); 0 is an ordinary value.
* ``linear`` — ``T(h) = h`` (any finite ``h``).

The reference value of a field (where a prediction leaves it out) is ``T^-1(mean T(h))``:
the geometric mean of the pilots for ``log``, ``exp(mean log(1 + h)) - 1`` for ``log1p``,
the mean for ``linear``.

The transforms are the shared scales (:data:`simulate.common.SCALES`), and
:data:`KNOB_LINKS` is the knob schema itself (:data:`llm_runs.knobs.KNOBS`, documented in
docs/model.md); :func:`default_links` turns it into the :class:`calibrate.Link` list for the
knobs that vary in a set of pilot runs (the links ``calibrate fit`` proposes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from llm_runs.knobs import KNOBS, Knob, knob, own_rate_links
from simulate.common import (
    SCALE_DOMAINS,
    SCALES,
    ConfigError,
    from_scale,
    in_scale_domain,
    to_scale,
)

from ._transforms import TRANSFORMS as TRANSFORMS

if TYPE_CHECKING:
    from ._config import Link

__all__ = [
    "KNOB_LINKS",
    "MECHANISM_LINKS",
    "TRANSFORMS",
    "KnobLink",
    "check_value",
    "check_values",
    "default_links",
    "own_rates",
    "reference_value",
    "transform_values",
]

#: Training knob -> linked parameters: :data:`llm_runs.knobs.KNOBS` itself (docs/model.md,
#: "Training knobs as links", lists the same rows).
KNOB_LINKS: tuple[Knob, ...] = KNOBS
#: One row of :data:`KNOB_LINKS` (:class:`llm_runs.knobs.Knob`).
KnobLink = Knob


def transform_values(transform: str, h: Any) -> np.ndarray:
    """``T(h)`` elementwise (values must lie in the transform's domain)."""
    if transform not in SCALES:
        raise ConfigError(f"link transform must be one of {TRANSFORMS}, got {transform!r}")
    return to_scale(transform, h)


def reference_value(transform: str, h: Any) -> float:
    """The reference ``T^-1(mean T(h))`` of a field's per-run values ``h``."""
    m = float(np.mean(transform_values(transform, h)))
    return float(from_scale(transform, m))


def check_value(transform: str, value: Any, field: str) -> float:
    """``value`` as a float in the domain of ``transform``.

    Raises:
        ConfigError: Not a number, or outside the domain (one line naming ``field``).
    """
    ok = isinstance(value, int | float | np.number) and not isinstance(value, bool)
    if not ok or not bool(in_scale_domain(transform, np.asarray(float(value)))):
        raise ConfigError(
            f"{field} must be {SCALE_DOMAINS.get(transform, 'finite')} (its link transform is "
            f"{transform!r}), got {value!r}"
        )
    return float(value)


def check_values(
    transform: str, h: Any, field: str, error: type[Exception] = ConfigError
) -> np.ndarray:
    """Per-run values ``h`` as floats, all in the transform's domain.

    Raises:
        ConfigError: (or ``error``) A value outside the domain (the message names
            ``field`` and the value).
    """
    h = np.asarray(h, dtype=float)
    bad = h[~in_scale_domain(transform, h)]
    if bad.size:
        raise error(
            f"hyperparameter {field!r} must be {SCALE_DOMAINS[transform]} in every run for a "
            f"{transform!r} link, got {float(bad[0])!r}"
        )
    return h


#: Knobs that act through a mechanism of the map dynamics (``FitConfig.dynamics="map"``):
#: knob -> (the config's option that must be on, the parameter it links instead).
MECHANISM_LINKS = {"rl.lr": ("dynamics", "eta"), "rl.staleness": ("lag", "lag")}


def default_links(
    fields: Mapping[str, Sequence[float]] | Any,
    *,
    dynamics: str = "ode",
    lag: str = "none",
    nodes: Sequence[str] | None = None,
) -> list[Link]:
    """The :class:`calibrate.Link` list of :data:`KNOB_LINKS` for the knobs that vary.

    Args:
        fields: Per-run values of training-config fields by dotted name (a dict of
            sequences, or a DataFrame such as :attr:`calibrate.CurveData.hyper`). A field
            varies when its values are all finite and not all equal; fields that are no
            knob of the table, and fields that do not vary, get no link.
        dynamics: The fit's ``FitConfig.dynamics``: under ``map``, ``rl.lr`` links the
            step size ``eta`` (:data:`MECHANISM_LINKS`) instead of the table's rates.
        lag: The fit's ``FitConfig.lag``: unless ``none``, ``rl.staleness`` links the
            policy lag ``lag`` instead of the table's rates.
        nodes: The network's nodes. Given, a role whose ``rl.lr_scale.ROLE`` varies
            beside ``rl.lr`` has its rates linked to the learning rate it trains at,
            ``rl.lr*rl.lr_scale.ROLE`` (one slope for both fields), and ``rl.lr``'s rate
            links target the other nodes (:func:`own_rates`).

    Returns:
        Links in table order, ``rl.lr_scale.ROLE`` targeting node ``ROLE``.
    """
    from ._config import Link

    links: list[Link] = []
    for row in KNOB_LINKS:
        for name in map(str, fields):
            if knob(name) is not row:
                continue
            h = np.asarray(fields[name], dtype=float).reshape(-1)
            if h.size < 2 or not np.all(np.isfinite(h)) or np.all(h == h[0]):
                continue
            option, param = MECHANISM_LINKS.get(row.field, ("", ""))
            if {"dynamics": dynamics == "map", "lag": lag != "none"}.get(option, False):
                links.append(Link(param, name, (), row.scale))
                continue
            links += [Link(p, name, row.targets(name), row.scale) for p in row.links]
    return links if nodes is None else own_rates(links, nodes)


def own_rates(links: Sequence[Link], nodes: Sequence[str]) -> list[Link]:
    """``links`` with each scaled role's rate links on its own learning rate,
    ``rl.lr*rl.lr_scale.ROLE`` (the knob schema's rule, :func:`llm_runs.knobs.own_rate_links`)."""
    import dataclasses

    from ._config import Link

    records = [dataclasses.asdict(lk) for lk in links]
    return [Link(**{**d, "targets": tuple(d.get("targets", ()))})
            for d in own_rate_links(records, nodes)]  # fmt: skip

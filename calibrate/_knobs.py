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

:data:`KNOB_LINKS` is the one table from llm_runs' training knobs to linked parameters
(documented in docs/model.md); :func:`default_links` turns it into the
:class:`calibrate.Link` list for the knobs that vary in a set of pilot runs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from simulate.common import ConfigError

from ._transforms import TRANSFORMS as TRANSFORMS

if TYPE_CHECKING:
    from ._config import Link

__all__ = [
    "KNOB_LINKS",
    "TRANSFORMS",
    "KnobLink",
    "check_value",
    "check_values",
    "default_links",
    "reference_value",
    "transform_values",
]

_DOMAIN = {"log": "a finite number > 0", "log1p": "a finite number >= 0", "linear": "finite"}


def _in_domain(transform: str, h: np.ndarray) -> np.ndarray:
    finite = np.isfinite(h)
    if transform == "log":
        return finite & (h > 0)
    if transform == "log1p":
        return finite & (h >= 0)
    return finite


def transform_values(transform: str, h: Any) -> np.ndarray:
    """``T(h)`` elementwise (values must lie in the transform's domain)."""
    h = np.asarray(h, dtype=float)
    if transform == "log":
        return np.log(h)
    if transform == "log1p":
        return np.log1p(h)
    if transform == "linear":
        return h
    raise ConfigError(f"link transform must be one of {TRANSFORMS}, got {transform!r}")


def reference_value(transform: str, h: Any) -> float:
    """The reference ``T^-1(mean T(h))`` of a field's per-run values ``h``."""
    m = float(np.mean(transform_values(transform, h)))
    if transform == "log":
        return math.exp(m)
    if transform == "log1p":
        return math.expm1(m)
    return m


def check_value(transform: str, value: Any, field: str) -> float:
    """``value`` as a float in the domain of ``transform``.

    Raises:
        ConfigError: Not a number, or outside the domain (one line naming ``field``).
    """
    ok = isinstance(value, int | float | np.number) and not isinstance(value, bool)
    if not ok or not bool(_in_domain(transform, np.asarray(float(value)))):
        raise ConfigError(
            f"{field} must be {_DOMAIN.get(transform, 'finite')} (its link transform is "
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
    bad = h[~_in_domain(transform, h)]
    if bad.size:
        raise error(
            f"hyperparameter {field!r} must be {_DOMAIN[transform]} in every run for a "
            f"{transform!r} link, got {float(bad[0])!r}"
        )
    return h


@dataclasses.dataclass(frozen=True)
class KnobLink:
    """One row of :data:`KNOB_LINKS`.

    Attributes:
        field: Dotted training-config field; ``rl.lr_scale.*`` stands for one column per
            role (``rl.lr_scale.X`` links the role's own node ``X``).
        transform: Link transform (:data:`TRANSFORMS`).
        params: Base parameters linked (every node's, or the role's for ``lr_scale``).
        mechanism: The model mechanism the knob stands for.
        not_represented: What the fitted ODE cannot represent of the knob.
    """

    field: str
    transform: str
    params: tuple[str, ...]
    mechanism: str
    not_represented: str


#: Training knob -> linked parameters (see docs/model.md, "Training knobs as links").
KNOB_LINKS: tuple[KnobLink, ...] = (
    KnobLink(
        "rl.lr",
        "log",
        ("rho", "delta"),
        "learning step: rate per step rho; large steps also undo past learning (delta)",
        "finite-step overshoot and flips (simulate's map, eta) — the fit is an ODE",
    ),
    KnobLink(
        "rl.staleness",
        "log1p",
        ("rho", "delta"),
        "policy lag k: stale rollouts slow learning (effective rho) and let the "
        "policy drift back (effective delta)",
        "the delay itself: the fitted ODE has no delay (simulate's tau, delay_stages), "
        "so lag enters only as an effective rate and forgetting, never as lag-driven "
        "oscillation",
    ),
    KnobLink(
        "rl.kl_coef",
        "log1p",
        ("delta",),
        "pull toward the base: forgetting delta",
        "a pull toward the base's competence rather than toward 0",
    ),
    KnobLink(
        "rl.weight_decay",
        "log1p",
        ("delta",),
        "decay of the adapter weights toward 0: forgetting delta",
        "decay scaled by the warm-up ramp and lr (lr_eff), not a constant rate",
    ),
    KnobLink(
        "rl.batch",
        "log",
        ("rho",),
        "more rollouts per step: a cleaner gradient, a larger effective rate",
        "gradient noise itself (simulate's sigma, SDE); seed-to-seed spread",
    ),
    KnobLink(
        "rl.group",
        "log",
        ("rho",),
        "more rollouts per problem: a cleaner gradient, a larger effective rate",
        "gradient noise itself (simulate's sigma, SDE); seed-to-seed spread",
    ),
    KnobLink(
        "rl.lr_scale.*",
        "log",
        ("rho",),
        "per-role learning-rate factor: that role's rho",
        "as for rl.lr: finite-step effects of the role's own steps",
    ),
)


def _knob(field: str) -> KnobLink | None:
    for k in KNOB_LINKS:
        if k.field == field or (k.field.endswith(".*") and field.startswith(k.field[:-1])):
            return k
    return None


def default_links(fields: Mapping[str, Sequence[float]] | Any) -> list[Link]:
    """The :class:`calibrate.Link` list of :data:`KNOB_LINKS` for the knobs that vary.

    Args:
        fields: Per-run values of training-config fields by dotted name (a dict of
            sequences, or a DataFrame such as :attr:`calibrate.CurveData.hyper`). A field
            varies when its values are all finite and not all equal; fields that are no
            knob of the table, and fields that do not vary, get no link.

    Returns:
        Links in table order, ``rl.lr_scale.ROLE`` targeting node ``ROLE``.
    """
    from ._config import Link

    links: list[Link] = []
    for knob in KNOB_LINKS:
        for name in fields:
            name = str(name)
            if _knob(name) is not knob:
                continue
            h = np.asarray(fields[name], dtype=float).reshape(-1)
            if h.size < 2 or not np.all(np.isfinite(h)) or np.all(h == h[0]):
                continue
            targets = (name[len(knob.field) - 1 :],) if knob.field.endswith(".*") else ()
            links += [Link(p, name, targets, knob.transform) for p in knob.params]
    return links

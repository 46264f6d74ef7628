"""Product covariates: a link on ``rl.lr*rl.lr_scale.X``, the learning rate role X trains at.

llm_runs multiplies a role's learning rate by its ``rl.lr_scale.ROLE``, so runs at equal
products log the same curve for that role. A link whose covariate names run fields joined by
``*`` takes their product (a ``log`` link only: ``log(a b) = log a + log b``), so one slope
moves with both fields. The fit reads the product from its runs' columns; a setting gives the
factors (``rl.lr``, ``rl.lr_scale.X``) or the product itself, and a factor it leaves out sits
at the pilots' geometric mean, as a field a setting leaves out does for a plain link.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from simulate.common import ConfigError

__all__ = ["PRODUCT", "expand_settings", "factors", "is_product", "with_products"]

#: The separator of a product covariate's factors.
PRODUCT = "*"


def is_product(name: str) -> bool:
    """``name`` is a product of run fields (``a*b``)."""
    return PRODUCT in name


def factors(name: str) -> tuple[str, ...]:
    """The run fields of a covariate: ``("rl.lr", "rl.lr_scale.X")`` for
    ``rl.lr*rl.lr_scale.X``, else ``(name,)``.

    Raises:
        ConfigError: An empty factor (``rl.lr*``) or one named twice.
    """
    parts = tuple(p.strip() for p in name.split(PRODUCT))
    if any(not p for p in parts) or len(set(parts)) != len(parts):
        raise ConfigError(f"covariate {name!r}: a product needs distinct, non-empty fields")
    return parts


def with_products(values: Mapping[str, np.ndarray], names: Iterable[str]) -> dict[str, Any]:
    """``values`` (per field, one value per run) plus each product covariate of ``names``
    whose factors are all there, as the product of their values."""
    out = dict(values)
    for name in names:
        fs = factors(name)
        if len(fs) > 1 and all(f in values for f in fs):
            out[name] = np.prod([np.asarray(values[f], dtype=float) for f in fs], axis=0)
    return out


def expand_settings(
    settings: Sequence[Mapping[str, Any]],
    covariates: Iterable[str],
    pilots: Mapping[str, np.ndarray] | None,
) -> list[dict[str, Any]]:
    """Each setting in the fit's covariates: a product covariate's value from the setting's
    factors (a factor left out at its geometric mean over the pilots ``pilots``); factors
    that are no covariate of their own are dropped. A setting that gives none of a product's
    factors leaves it out (the pilots' reference). Settings of a fit without products are
    returned as they are.

    Raises:
        ConfigError: A setting that gives a product and one of its factors, a factor that is
            not a positive number, or a factor left out that the pilots do not record.
    """
    products = [c for c in covariates if is_product(c)]
    if not products:
        return [dict(s) for s in settings]
    own = set(covariates)
    out = []
    for s in settings:
        s = dict(s)
        drop: set[str] = set()
        for name in products:
            fs = factors(name)
            given = [f for f in fs if f in s]
            if not given:
                continue
            if name in s:  # the product itself; a factor it names may be a covariate too
                if any(f not in own for f in given):
                    raise ConfigError(f"give {name} or its fields {list(fs)}, not both")
                continue
            value = 1.0
            for f in fs:
                value *= _factor(s, f, pilots, name)
            s[name] = value
            drop |= {f for f in fs if f not in own}
        out.append({k: v for k, v in s.items() if k not in drop})
    return out


def _factor(s: Mapping[str, Any], f: str, pilots: Mapping[str, np.ndarray] | None, name: str):
    if f in s:
        v = s[f]
        ok = isinstance(v, int | float | np.number) and not isinstance(v, bool)
        if not (ok and np.isfinite(float(v)) and float(v) > 0):
            raise ConfigError(f"{f} must be a positive number (a factor of {name}), got {v!r}")
        return float(v)
    if pilots is None or f not in pilots:
        raise ConfigError(f"{f} is missing: {name} needs it, and the fit's runs do not record it")
    return float(np.exp(np.mean(np.log(np.asarray(pilots[f], dtype=float)))))

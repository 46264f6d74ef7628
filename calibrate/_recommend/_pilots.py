"""The pilots a recommendation starts from: the pilot nearest the searched value or the
pilots' centre, its config with the recommended setting (validated by ``llm_runs.config``),
and each pilot's values of a field."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from simulate.common import SCALE_DOMAINS, in_scale_domain, to_scale

from .._config import ConfigError
from .._knobs import transform_values
from .._posterior import Posterior

__all__ = [
    "base_pilot",
    "dotted",
    "nearest_pilot",
    "next_run_config",
    "pilot_scale",
    "pilot_values",
    "space_config",
]


def pilot_scale(param: str, transforms: dict[str, str] | None = None) -> str:
    """The scale on which pilots' values of ``param`` are compared: the knob schema's
    (``log1p`` for ``rl.staleness``, whose 0 is an ordinary lag), else the fit's link
    transform of the field, else ``linear``."""
    from llm_runs.knobs import knob

    k = knob(param)
    if k is not None:
        return k.scale
    return (transforms or {}).get(param, "linear")


def nearest_pilot(configs: dict[str, Any], param: str, value: float, scale: str) -> str:
    """The pilot run whose ``param`` lies nearest ``value`` on ``scale`` (ties: the first
    run by name); a pilot without the field, or with a value outside the scale's domain,
    is farthest.

    Raises:
        ConfigError: ``value`` is outside the scale's domain (as the knob's check says).
    """
    if not bool(in_scale_domain(scale, value)):
        raise ConfigError(f"{param}={value!r} must be {SCALE_DOMAINS[scale]} ({scale} scale)")
    target = float(to_scale(scale, value))

    def distance(run: str) -> float:
        h = dotted(configs[run], param)
        if isinstance(h, bool) or not isinstance(h, int | float):
            return math.inf
        if not bool(in_scale_domain(scale, h)):
            return math.inf
        return abs(float(to_scale(scale, h)) - target)

    return min(sorted(configs), key=distance)


def next_run_config(post: Posterior, param: str, value: float) -> tuple[str, dict] | None:
    """The next run's complete llm_runs config: the pilot run whose ``param`` is nearest to
    ``value`` on the knob's scale (:func:`pilot_scale`: ``log`` for ``rl.lr``, ``log1p``
    for ``rl.staleness``), with ``param`` set to ``value``, validated by ``llm_runs.config``.

    Returns:
        ``(pilot run, config dict)``, or None when the fit's data carry no run configs
        (tables and TensorBoard inputs).

    Raises:
        ConfigError: The pilot's config with the new value is not a valid training config.
    """
    if not post.run_configs:
        return None
    from llm_runs.config import TrainConfig, set_dotted

    scale = pilot_scale(param, post.model.config.hierarchy.transforms)
    base = nearest_pilot(post.run_configs, param, value, scale)
    data = json.loads(json.dumps(post.run_configs[base]))
    set_dotted(data, param, value)
    data["name"] = None
    try:
        cfg = TrainConfig.from_dict(data)
    except ConfigError as err:
        msg = f"the recommended {param}={value:g} is not a valid training config: {err}"
        raise ConfigError(msg) from None
    return base, cfg.to_dict()


def dotted(data: Any, key: str) -> Any:
    for part in key.split("."):
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def pilot_values(post: Posterior, name: str) -> list[Any]:
    """Per pilot run, its value of a field (run configs first, then the fit's columns)."""
    runs = list(post.model.runs)
    if post.run_configs:
        return [dotted(post.run_configs.get(r, {}), name) for r in runs]
    hv = post.hyper or {}
    return [float(v) for v in hv[name]] if name in hv else []


def base_pilot(
    post: Posterior, refs: dict[str, float], spaced: set[str]
) -> tuple[str | None, dict[str, float]]:
    """The pilot whose linked fields lie nearest the pilots' centre (sum of squared
    transformed distances over each field's pilot spread), and its values of the linked
    fields the space leaves out (the reference values when the fit has no run configs)."""
    transforms = post.model.config.hierarchy.transforms
    hv = post.hyper or {}
    if not post.run_configs:
        return None, {f: v for f, v in refs.items() if f not in spaced}
    runs = list(post.model.runs)
    dist = np.zeros(len(runs))
    for f in refs:
        x = transform_values(transforms[f], hv[f])
        sd = float(np.std(x)) or 1.0
        dist += ((x - x.mean()) / sd) ** 2
    i = int(np.argmin(dist))
    return runs[i], {f: float(hv[f][i]) for f in refs if f not in spaced}


def space_config(
    post: Posterior, base: str | None, setting: dict[str, Any], steps: int
) -> dict[str, Any] | None:
    """The base pilot's config with the setting and ``steps`` set, validated by
    ``llm_runs.config`` (None without run configs)."""
    if base is None:
        return None
    from llm_runs.config import TrainConfig, set_dotted

    data = json.loads(json.dumps(post.run_configs[base]))
    for name, value in setting.items():
        set_dotted(data, name, value)
    data["steps"], data["name"] = steps, None
    try:
        return TrainConfig.from_dict(data).to_dict()
    except ConfigError as err:
        msg = f"the recommended setting {setting} is not a valid training config: {err}"
        raise ConfigError(msg) from None

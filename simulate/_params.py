"""Building models and reading/writing their parameters by name.

Parameter names (shared with calibrate's summaries)::

    rho[X]  b[X]  delta[X]  A0[X]      competence kinetics, per node
    beta[Y] gamma[Z] A0[X]             alon kinetics, per node
    K[X->Y] n[X->Y]                    per edge
    Kp[X->Y] m[X->Y]                   per pipeline gate (simulate.with_pipeline)
    sigma[X]                           gradient noise, per node
    tau  eta  x0                       policy lag, learning-step size, input level

A name without brackets sets every node (or every edge) at once, e.g. ``rho=0.3``.
For ``alon`` kinetics on a network with nodes X, Y, Z the textbook shorthands apply:
``beta`` = beta[Y], ``gamma`` = gamma[Z], ``kappa`` = 1/K[X->Y], ``n_xy``, ``n_xz``, ``n_yz``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._kinetics import KINETICS, Kinetics, Model
from ._network import AbstractNetwork, as_network
from ._param_names import ALON_SHORT, check_param_value, parse_param_name
from ._pipeline import Pipeline, parse_pipeline
from .spec import NetworkSpec, SpecError

__all__ = ["get_param", "make_model", "param_names", "set_param", "set_params", "with_pipeline"]


def _check_value(name: str, base: str, value: Any, kinetics: Kinetics) -> None:
    try:
        np.asarray(value, dtype=float)
    except jax.errors.TracerArrayConversionError:
        return  # inside a sweep: values are checked by the caller before tracing
    check_param_value(name, base, value, bounded=kinetics.bounded)


def _parse(model: Model, name: str) -> tuple[str, str | None]:
    base, target = parse_param_name(name)
    net = model.network
    if target is None and model.kinetics.name == "alon" and {"X", "Y", "Z"} <= set(net.names):
        if base in ALON_SHORT:
            return ALON_SHORT[base]
    return base, target


def _where(model: Model, base: str, target: str | None):
    """Return (getter-path function, index) for parameter ``base[target]``."""
    kin = model.kinetics
    if base in ("K", "n"):
        if target is None:
            return (lambda m: getattr(m.network, base)), model.network.edge_mask
        return (lambda m: getattr(m.network, base)), model.network.edge_index(target)
    if base in ("Kp", "m"):
        return _where_pipeline(model, base, target)
    if base == "sigma" or base in kin.node_params:
        get = (lambda m: m.sigma) if base == "sigma" else (lambda m: getattr(m.kinetics, base))
        if target is None:
            return get, np.ones(model.size, dtype=bool)
        return get, model.network.index(target)
    if base in ("tau", "eta") and target is None:
        return (lambda m: getattr(m, base)), None
    if base == "x0" and target is None:
        return (lambda m: m.kinetics.x0), None
    known = ", ".join(param_names(model)[:12])
    raise SpecError(
        f"unknown parameter {base}{'[' + target + ']' if target else ''} for "
        f"{kin.name} kinetics; known names include {known}, …"
    )


def _where_pipeline(model: Model, base: str, target: str | None):
    """(getter, index) of a pipeline gate's ``Kp`` or ``m`` (``target`` its edge)."""
    pipe = getattr(model.kinetics, "pipeline", None)
    if pipe is None:
        raise SpecError(f"{base} is a pipeline-gate parameter; the model has no pipeline gates")
    field = "K" if base == "Kp" else "n"
    get = lambda m: getattr(m.kinetics.pipeline, field)  # noqa: E731
    gated = np.asarray([j >= 0 for j in pipe.source])
    if target is None:
        return get, gated
    keys = pipe.edge_keys(model.network.names)
    key = "->".join(s.strip() for s in target.split("->", 1))
    if key not in keys:
        raise SpecError(f"no pipeline gate {target!r}; pipeline gates are {keys}")
    return get, model.network.index(key.split("->")[1])


def set_param(model: Model, name: str, value: Any) -> Model:
    """Return a copy of ``model`` with parameter ``name`` set to ``value``.

    Works under ``jax.vmap`` (traced values skip the domain checks).
    """
    if name.strip() == "kappa":
        if model.kinetics.name != "alon":
            raise SpecError("kappa is an alon-kinetics shorthand (kappa = 1/K[X->Y])")
        _check_value("kappa", "K", value, model.kinetics)
        return set_param(model, "K[X->Y]", 1.0 / jnp.asarray(value, dtype=float))
    base, target = _parse(model, name)
    _check_value(name, base, value, model.kinetics)
    get, idx = _where(model, base, target)
    old = get(model)
    val = jnp.asarray(value, dtype=jnp.result_type(float))
    if idx is None:
        new = val
    elif isinstance(idx, np.ndarray):
        new = jnp.where(jnp.asarray(idx), val, jnp.asarray(old))
    else:
        new = jnp.asarray(old).at[idx].set(val)
    return eqx.tree_at(get, model, new)


def set_params(model: Model, params: Mapping[str, Any]) -> Model:
    """Apply several :func:`set_param` in order."""
    for k, v in params.items():
        model = set_param(model, k, v)
    return model


def get_param(model: Model, name: str) -> jax.Array:
    """Current value of parameter ``name`` (an array; vectors for unbracketed names)."""
    if name.strip() == "kappa":
        return 1.0 / get_param(model, "K[X->Y]")
    base, target = _parse(model, name)
    get, idx = _where(model, base, target)
    val = jnp.asarray(get(model))
    return val if idx is None else val[idx]


def param_names(model: Model) -> list[str]:
    """Every bracketed parameter name of ``model`` (nodes, edges, globals)."""
    names = [f"{p}[{node}]" for p in model.kinetics.node_params for node in model.network.names]
    names += [f"sigma[{node}]" for node in model.network.names]
    for key in model.network.edge_keys:
        names += [f"K[{key}]", f"n[{key}]"]
    pipe = getattr(model.kinetics, "pipeline", None)
    for key in pipe.edge_keys(model.network.names) if pipe is not None else []:
        names += [f"Kp[{key}]", f"m[{key}]"]
    return [*names, "tau", "eta", "x0"]


def make_model(
    network: AbstractNetwork | NetworkSpec | str,
    kinetics: str = "competence",
    params: Mapping[str, Any] | None = None,
    *,
    delay_stages: int = 0,
    tau: float = 1.0,
    eta: float = 0.1,
    sigma: float = 0.0,
) -> Model:
    """Build a :class:`Model` with default rates, then apply ``params`` by name.

    Args:
        network: A Network, a spec, a preset name (``"C1"``, ``"I1-OR"``) or a spec path.
        kinetics: ``"alon"`` or ``"competence"``.
        params: Parameter overrides by name (see module docstring).
        delay_stages: Erlang stages of the policy lag (0 = none).
        tau: Mean policy lag (time units).
        eta: Learning-step size for ``method="map"``.
        sigma: Noise amplitude for every node (``method="sde"``).
    """
    net = as_network(network)
    if kinetics not in KINETICS:
        raise SpecError(f"unknown kinetics {kinetics!r}; choose one of {list(KINETICS)}")
    if int(delay_stages) < 0:
        raise SpecError(f"delay_stages must be >= 0, got {delay_stages!r}")
    kin = KINETICS[kinetics].default(net.size)  # type: ignore[attr-defined]
    model = Model(
        network=net,
        kinetics=kin,
        sigma=jnp.full(net.size, 0.0),
        tau=jnp.asarray(1.0),
        eta=jnp.asarray(0.1),
        delay_stages=int(delay_stages),
    )
    model = set_params(model, {"tau": tau, "eta": eta, "sigma": sigma})
    return set_params(model, params or {})


def param_setter(model: Model, names: Sequence[str]) -> Callable[[Model, Any], Model]:
    """A function ``setter(m, values)`` that writes ``values`` (shape ``(len(names),)``)
    for ``names`` into a model of the structure of ``model``: as :func:`set_params` in
    order, but with one gather and one select per parameter array instead of one scatter
    per name (under ``jit``/``vmap``/``grad`` that is a program a fraction of the size).
    Names are checked here, once; values are not domain-checked (they are traced).

    Raises:
        SpecError: An unknown name, or ``kappa`` (a transformed shorthand).
    """
    groups: dict[int, tuple[Callable, np.ndarray]] = {}
    for col, name in enumerate(names):
        if name.strip() == "kappa":
            raise SpecError("param_setter cannot write kappa (1/K[X->Y]); write K[X->Y]")
        base, target = _parse(model, name)
        get, idx = _where(model, base, target)
        field = get(model)
        key = id(field)
        if key not in groups:
            groups[key] = (get, np.full(np.shape(field), -1, dtype=np.int64))
        src = groups[key][1]
        if idx is None:
            src[...] = col
        else:
            src[idx] = col
    plan = tuple(groups.values())

    def setter(m: Model, values: Any) -> Model:
        values = jnp.asarray(values, dtype=jnp.result_type(float))
        for get, src in plan:
            old = jnp.asarray(get(m))
            new = jnp.where(src >= 0, values[np.maximum(src, 0)], old)
            m = eqx.tree_at(get, m, new)
        return m

    return setter


def with_pipeline(
    model: Model, edges: str | Sequence[str], *, K: float = 0.5, n: float = 2.0
) -> Model:
    """``model`` with pipeline gates on ``edges`` (``"X->Y,Y->Z"``), each of threshold ``K``
    and Hill coefficient ``n`` (set them per edge with ``Kp[X->Y]``, ``m[X->Y]``).

    Raises:
        SpecError: ``model`` does not have competence kinetics, or an edge is invalid
            (:func:`~simulate.parse_pipeline`).
    """
    if model.kinetics.name != "competence":
        raise SpecError("pipeline gates need competence kinetics")
    names = model.network.names
    pairs = parse_pipeline(edges, names)
    source = [-1] * len(names)
    for src, dst in pairs:
        source[names.index(dst)] = names.index(src)
    gated = jnp.asarray([s >= 0 for s in source])
    pipe = Pipeline(
        source=tuple(source),
        K=jnp.where(gated, float(K), 1.0).astype(float),
        n=jnp.where(gated, float(n), 1.0).astype(float),
    )
    kin = dataclasses.replace(model.kinetics, pipeline=pipe)  # type: ignore[call-arg]
    return eqx.tree_at(lambda m: m.kinetics, model, kin)

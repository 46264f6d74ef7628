"""Parameter sweeps: grids, and the chunked, sharded cell runner behind phase diagrams.

A *cell* is one (panel, y value, x value, replicate). :func:`run_cells` builds every cell's
model inside the compiled function (``set_param`` on traced values), solves it with the
batched solver, classifies it and keeps only small per-cell summaries, so memory is bounded
by the chunk size whatever the grid. Chunks are split over all JAX devices with
``jax.shard_map`` (two CPU devices: ``XLA_FLAGS=--xla_force_host_platform_device_count=2``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ._analysis import Regime, classify, metrics, solution_stability
from ._batch import (
    cast_model,
    integer_hill,
    ode_per_cell,
    ode_shared,
    with_integer_hill,
)
from ._kinetics import Model, Schedule
from ._options import SolveOptions
from ._params import set_param
from ._scales import SCALE_DOMAINS, from_scale, in_scale_domain, scale_name
from ._solve import Solution, solve
from .spec import SpecError

__all__ = ["UNITS", "Axis", "SweepOptions", "axis_label", "grid", "run_cells"]

#: Units of the sweepable parameters, by base name (for axis labels).
UNITS: dict[str, str] = {
    "beta": "max level, dimensionless",
    "gamma": "turnover rate rel. to Y",
    "kappa": "1/threshold",
    "K": "upstream level",
    "n": "Hill coefficient",
    "n_xy": "Hill coefficient",
    "n_xz": "Hill coefficient",
    "n_yz": "Hill coefficient",
    "rho": "1/step",
    "b": "basal fraction",
    "delta": "1/step",
    "A0": "level",
    "x0": "input level",
    "tau": "time",
    "eta": "time per step",
    "sigma": "1/sqrt(time)",
}
NUM_REGIMES = len(Regime)
METRIC_KEYS = ("steady", "overshoot", "period", "n_peaks", "t50_on")


@dataclasses.dataclass(frozen=True)
class Axis:
    """One swept parameter.

    Attributes:
        name: Parameter name as :func:`~simulate.set_param` reads it (``tau``, ``K[X->Y]``).
        values: Grid values, shape ``(num,)``, increasing.
        scale: The grid's scale (:data:`simulate.common.SCALES`; for plotting).
    """

    name: str
    values: np.ndarray
    scale: str = "linear"

    @property
    def label(self) -> str:
        """Axis label with units, e.g. ``tau (time)``."""
        return axis_label(self.name)


def axis_label(name: str) -> str:
    """``name (unit)`` for a parameter name."""
    base = name.split("[", 1)[0].strip()
    unit = UNITS.get(base)
    return f"{name} ({unit})" if unit else name


def grid(name: str, lo: float, hi: float, num: int, scale: str = "linear") -> Axis:
    """A grid of ``num`` values from ``lo`` to ``hi`` (inclusive), evenly spaced on ``scale``.

    ``scale`` is one of the shared scales (:data:`simulate.common.SCALES`): ``linear``,
    ``log`` (geometric, ``lo > 0``) or ``log1p`` (even in ``log(1 + h)``, ``lo >= 0``);
    ``lin`` reads as ``linear``.

    Raises:
        SpecError: An unknown scale, ``num < 1``, or bounds outside the scale's domain.
    """
    scale = scale_name(scale, what="grid scale", error=SpecError)
    if int(num) < 1:
        raise SpecError(f"grid for {name}: num must be >= 1, got {num}")
    if not (np.isfinite(lo) and np.isfinite(hi)) or hi < lo:
        raise SpecError(f"grid for {name}: need finite lo <= hi, got {lo}, {hi}")
    if not bool(in_scale_domain(scale, lo)):
        raise SpecError(f"{scale} grid for {name} needs lo {SCALE_DOMAINS[scale]}, got {lo}")
    if scale == "log":
        values = np.geomspace(lo, hi, int(num))
    elif scale == "log1p":
        values = np.clip(
            from_scale(scale, np.linspace(np.log1p(lo), np.log1p(hi), int(num))), lo, hi
        )
    else:
        values = np.linspace(lo, hi, int(num))
    return Axis(name, values, scale)


@dataclasses.dataclass(frozen=True)
class SweepOptions:
    """How every cell is solved and judged (static: one compile per distinct options).

    Attributes:
        method: ``"ode"``, ``"sde"`` or ``"map"``.
        t1: End time (time units of the kinetics).
        n_points: Save points for ``ode``/``sde`` (the classifier's resolution).
        steps: Map steps (``map`` only).
        rtol: Relative tolerance (ODE).
        atol: Absolute tolerance (ODE).
        dt: Euler–Maruyama step (SDE).
        dtype: ``"float64"`` or ``"float32"``.
        fast_hill: Integer-power fast path (only when no swept parameter changes ``n``).
        stability: Also compute the linearisation at the steady state near each cell's end.
        max_steps: ODE step budget per solve (exhausted: code 1, cell masked as failed).
    """

    method: str = "ode"
    t1: float = 20.0
    n_points: int = 200
    steps: int = 200
    rtol: float = 1e-6
    atol: float = 1e-8
    dt: float = 0.01
    dtype: str = "float64"
    fast_hill: bool = True
    stability: bool = True
    max_steps: int = 100_000


def _stability_inputs(sol) -> dict[str, jax.Array]:
    """What :func:`~simulate.solution_stability` reads from a trajectory, compressed to two
    samples (both the mean over the last half), so only ``O(N)`` numbers leave the device."""
    f = jnp.result_type(float)
    half = sol.states.shape[0] // 2
    mean = jnp.mean(sol.states[half:], axis=0).astype(f)
    return {
        "st_states": jnp.stack([mean, mean]),
        "st_inputs": sol.inputs[-2:].astype(f),
        "st_y_final": sol.y_final.astype(f),
    }


def _summarise(model: Model, sol, bounded: bool, stability: bool) -> dict[str, jax.Array]:
    regime, node_regime = classify(sol, bounded=bounded)
    mets = metrics(sol)
    out = {"regime": regime, "node_regime": node_regime, "code": sol.code}
    for k in METRIC_KEYS:
        out[k] = jnp.asarray(mets[k], dtype=jnp.result_type(float))
    if stability:
        out.update(_stability_inputs(sol))
    return out


def _stability_fn(names: tuple[str, ...]):
    """(base, panel idx, values, stability inputs) → linearisation summaries per cell.

    Kept outside ``shard_map`` (optimistix's Newton does not trace there); with several
    devices it is partitioned by ``jit`` over input shardings instead.
    """

    def one(base, p, v, states, inputs, y_final):
        m = _build(base, names, p, v)
        two = Solution(
            jnp.zeros(2), states, inputs, y_final, jnp.asarray(0), m.network.names, "ode"
        )
        st = solution_stability(m, two)
        bad = ~st.found
        return {
            "max_real": jnp.where(bad, jnp.nan, st.max_real),
            "spectral_radius": jnp.where(bad, jnp.nan, st.spectral_radius),
            "leading_imag": jnp.where(bad, jnp.nan, st.leading_imag),
        }

    return jax.vmap(one, in_axes=(None, 0, 0, 0, 0, 0))


def _build(base: Model, names: tuple[str, ...], pidx, values) -> Model:
    m = jax.tree.map(lambda a: a[pidx], base)
    for k, name in enumerate(names):
        m = set_param(m, name, values[k])
    return m


def _cell_fn(names: tuple[str, ...], opts: SweepOptions, hill: int | None, per_cell: bool):
    """The per-device function: (base, schedule, panel idx, values, keys) → summaries."""

    def fn(base, schedule, pidx, values, keys):
        models = jax.vmap(lambda p, v: _build(base, names, p, v))(pidx, values)
        models = with_integer_hill(models, hill)
        if opts.dtype == "float32":
            models = cast_model(models, jnp.float32)
        bounded = base.kinetics.bounded
        ok = jnp.asarray(True)
        sol_axis = 0
        if opts.method == "ode":
            dt = jnp.float32 if opts.dtype == "float32" else jnp.result_type(float)
            ts = jnp.linspace(0.0, opts.t1, opts.n_points, dtype=dt)
            sched = cast_model(schedule, dt)  # type: ignore[arg-type]
            if per_cell:
                sols = ode_per_cell(
                    models, sched, ts, "tsit5", opts.rtol, opts.atol, opts.max_steps
                )
            else:
                sols, ok = ode_shared(
                    models, sched, ts, "tsit5", opts.rtol, opts.atol, opts.max_steps, batch_axis=-1
                )
                sol_axis = -1
        elif opts.method == "sde":
            sde_opts = SolveOptions(n_points=opts.n_points)
            sols = jax.vmap(
                lambda m, k: solve(
                    m, schedule, t1=opts.t1, options=sde_opts, method="sde", dt=opts.dt, key=k
                )
            )(models, keys)
        else:
            sols = jax.vmap(lambda m: solve(m, schedule, method="map", steps=opts.steps))(models)
        out = jax.vmap(
            lambda m, s: _summarise(m, s, bounded, opts.stability), in_axes=(0, sol_axis)
        )(models, sols)
        out["shared_ok"] = jnp.broadcast_to(ok, pidx.shape)
        return out

    return fn


_COMPILED: dict[tuple, Any] = {}


def _compiled_stability(names):
    """Compiled stability function (partitioned over the devices by ``jit``), cached."""
    devices = tuple(jax.devices())
    key = (names, "stability", devices)
    if key not in _COMPILED:
        if len(devices) > 1:
            mesh = Mesh(np.asarray(devices), ("cells",))
            rep, cells = NamedSharding(mesh, P()), NamedSharding(mesh, P("cells"))
            _COMPILED[key] = jax.jit(
                _stability_fn(names),
                in_shardings=(rep, cells, cells, cells, cells, cells),
                out_shardings=cells,
            )
        else:
            _COMPILED[key] = jax.jit(_stability_fn(names))
    return _COMPILED[key]


def _compiled(names, opts, hill, per_cell: bool):
    """Compiled (and, with several devices, sharded) cell function, cached per config."""
    devices = tuple(jax.devices())
    key = (names, opts, hill, per_cell, devices)
    if key not in _COMPILED:
        fn = _cell_fn(names, opts, hill, per_cell)
        if len(devices) > 1:
            mesh = Mesh(np.asarray(devices), ("cells",))
            spec = P("cells")
            fn = jax.shard_map(
                fn,
                mesh=mesh,
                in_specs=(P(), P(), spec, spec, spec),
                out_specs=spec,
                check_vma=False,
            )
        _COMPILED[key] = eqx.filter_jit(fn)
    return _COMPILED[key]


def _touches_hill(model: Model, names: Sequence[str], values: Sequence[np.ndarray]) -> bool:
    for name, vals in zip(names, values, strict=True):
        for v in (vals[0], vals[-1]):
            if not np.array_equal(
                np.asarray(set_param(model, name, v).network.n), np.asarray(model.network.n)
            ):
                return True
    return False


def run_cells(
    base: Model,
    names: Sequence[str],
    pidx: np.ndarray,
    values: np.ndarray,
    schedule: Schedule,
    opts: SweepOptions,
    *,
    seed: int = 0,
    chunk_size: int = 1024,
    progress: bool = True,
) -> dict[str, np.ndarray]:
    """Solve and summarise every cell, chunked and sharded over all JAX devices.

    Args:
        base: Stacked base models, one per panel (leading axis ``P``).
        names: Swept parameter names (length ``D``).
        pidx: Panel index of each cell, shape ``(C,)``.
        values: Swept values of each cell, shape ``(C, D)``.
        schedule: Input schedule shared by every cell.
        opts: Solver and classifier options.
        seed: PRNG seed (one key per cell; SDE only).
        chunk_size: Cells per compiled call (rounded to a multiple of the device count;
            about 1000 was fastest on 2 CPU cores); bounds memory.
        progress: Show a tqdm bar over chunks.

    Returns:
        Per-cell summaries, NumPy arrays with leading axis ``C``: ``regime``,
        ``node_regime`` ``(C, N)``, ``code``, metrics ``(C, N)`` and, with
        ``opts.stability``, ``max_real``, ``spectral_radius``, ``leading_imag``;
        ``shared_ok`` is False for cells of chunks re-solved cell by cell.
    """
    from tqdm.auto import tqdm

    names = tuple(names)
    values = np.asarray(values, dtype=float).reshape(len(pidx), len(names))
    for k, name in enumerate(names):  # domain checks on concrete values, before tracing
        one = jax.tree.map(lambda a: a[0], base)
        for v in (values[:, k].min(), values[:, k].max()):
            set_param(one, name, float(v))
    one = jax.tree.map(lambda a: a[0], base)
    hill = None
    if opts.fast_hill and not _touches_hill(one, names, [values[:, k] for k in range(len(names))]):
        hill = integer_hill(base.network.n, base.network.edge_mask)
    devices = jax.devices()
    n_dev = len(devices)
    C = len(pidx)
    chunk = max(n_dev, min(int(chunk_size), -(-C // n_dev) * n_dev))
    chunk = -(-chunk // n_dev) * n_dev
    n_chunks = -(-C // chunk)
    pad = n_chunks * chunk - C
    pidx_p = np.concatenate([np.asarray(pidx, np.int32), np.full(pad, pidx[-1], np.int32)])
    values_p = np.concatenate([values, np.repeat(values[-1:], pad, axis=0)])
    keys = jax.random.split(jax.random.key(seed), n_chunks * chunk)

    fast = _compiled(names, opts, hill, False)
    parts: list[dict[str, Any]] = []
    bar = tqdm(range(n_chunks), desc="phase cells", unit="chunk", disable=not progress)
    for c in bar:
        sl = slice(c * chunk, (c + 1) * chunk)
        args = (base, schedule, jnp.asarray(pidx_p[sl]), jnp.asarray(values_p[sl]), keys[sl])
        out = fast(*args)
        if opts.method == "ode" and not bool(np.all(np.asarray(out["shared_ok"]))):
            out = dict(_compiled(names, opts, hill, True)(*args), shared_ok=out["shared_ok"])
        if opts.stability:
            st_in = [out.pop(k) for k in ("st_states", "st_inputs", "st_y_final")]
            out.update(_compiled_stability(names)(base, *args[2:4], *st_in))
        parts.append(jax.tree.map(np.asarray, out))
    merged = {k: np.concatenate([p[k] for p in parts])[:C] for k in parts[0]}
    return merged

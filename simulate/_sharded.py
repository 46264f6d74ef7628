"""Large ODE batches: sharded over all JAX devices and chunked (see :func:`solve_sharded`)."""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._batch import (
    _ode_per_cell_jit,
    batch_size,
    cast_model,
    integer_hill,
    ode_shared,
    with_integer_hill,
)
from ._kinetics import Model, Schedule

__all__ = ["solve_sharded"]


_SHARDED: dict[tuple, Any] = {}


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _sharded_fn(solver, rtol, atol, max_steps, sub: int, keep_states: bool):
    """Compiled: shard the cells over the devices; each device runs ``lax.map`` over
    sub-chunks of ``sub`` cells, each one shared-step solve. Returns the node levels
    ``(B, T, N)`` (if kept), the codes ``(B,)`` and one success flag per sub-chunk (the
    caller re-solves failed sub-chunks cell by cell)."""
    devices = tuple(jax.devices())
    key = (solver, rtol, atol, max_steps, sub, keep_states, devices)
    if key not in _SHARDED:
        from jax.sharding import Mesh
        from jax.sharding import PartitionSpec as P

        def one(models, schedule, ts):
            sols, ok = ode_shared(models, schedule, ts, solver, rtol, atol, max_steps)
            return (sols.states if keep_states else None), sols.code, ok

        def fn(models, schedule, ts):
            n = batch_size(models)
            split = jax.tree.map(lambda a: a.reshape(n // sub, sub, *a.shape[1:]), models)
            states, code, ok = jax.lax.map(lambda m: one(m, schedule, ts), split)
            code = code.reshape(n)
            if keep_states:  # (chunks, sub, T, N) -> (cells, T, N)
                states = states.reshape(n, *states.shape[2:])
            return states, code, ok

        if len(devices) > 1:
            mesh = Mesh(np.asarray(devices), ("cells",))
            fn = jax.shard_map(
                fn,
                mesh=mesh,
                in_specs=(P("cells"), P(), P()),
                out_specs=P("cells"),
                check_vma=False,
            )
        _SHARDED[key] = eqx.filter_jit(fn)
    return _SHARDED[key]


def solve_sharded(
    models: Model,
    schedule: Schedule | str | None = None,
    *,
    t1: float = 20.0,
    t0: float = 0.0,
    n_points: int = 200,
    rtol: float = 1e-6,
    atol: float = 1e-8,
    solver: str = "tsit5",
    max_steps: int = 100_000,
    dtype: str | None = None,
    chunk_size: int = 1024,
    call_size: int = 16384,
    keep_states: bool = True,
) -> tuple[np.ndarray | None, np.ndarray]:
    """ODE solves of a large stacked batch: sharded over all JAX devices and chunked.

    The batch is cut into calls of at most ``call_size`` cells (bounds memory); in each
    call the cells are split over the devices with ``jax.shard_map`` and every device runs
    ``lax.map`` over sub-chunks of ``chunk_size`` cells, each solved as one shared-step
    system (:func:`ode_shared`; per-cell fallback where that fails).

    Args:
        models: Stacked model, leading axis ``B``.
        schedule: Shared input schedule.
        t1: End time.
        t0: Start time.
        n_points: Evenly spaced save points.
        rtol: Relative tolerance.
        atol: Absolute tolerance.
        solver: Explicit solver name.
        max_steps: Step budget per solve.
        dtype: ``"float32"`` or ``"float64"`` (default JAX's).
        chunk_size: Cells per shared-step solve (about 512-1024 is fastest on CPU).
        call_size: Cells per compiled call (the trajectories of all cells come back as one
            array either way; a single call avoids copying them).
        keep_states: Return the trajectories (else only codes; for throughput runs).

    Returns:
        (node levels ``(B, T, N)`` as NumPy or None, codes ``(B,)``).
    """
    if isinstance(schedule, str):
        schedule = Schedule.parse(schedule)
    elif schedule is None:
        schedule = Schedule.step(t0)
    models = with_integer_hill(models, integer_hill(models.network.n, models.network.edge_mask))
    float_dtype = jnp.dtype(dtype) if dtype is not None else jnp.result_type(float)
    schedule = cast_model(schedule, float_dtype)  # type: ignore[arg-type]
    ts = jnp.linspace(t0, t1, int(n_points), dtype=float_dtype)
    n_dev = len(jax.devices())
    B = batch_size(models)
    sub = max(1, min(int(chunk_size), -(-B // n_dev)))
    unit = sub * n_dev
    n_calls = -(-B // max(int(call_size), unit))
    per_call = -(-_ceil_div(B, n_calls) // unit) * unit  # little padding
    n_calls = -(-B // per_call)
    fn = _sharded_fn(solver, rtol, atol, int(max_steps), sub, keep_states)
    parts = []
    for c in range(n_calls):  # pad by repeating the last cell; cast; one dispatch per call
        idx = np.arange(c * per_call, (c + 1) * per_call).clip(max=B - 1)
        part = _take_cast(models, idx, float_dtype.name)
        out_states, out_code, ok = fn(part, schedule, ts)
        out_code = np.asarray(out_code)
        for k in np.flatnonzero(~np.asarray(ok)):  # shared solve failed: cell by cell
            chunk = jax.tree.map(lambda a, k=k: a[k * sub : (k + 1) * sub], part)
            fb = _ode_per_cell_jit(chunk, schedule, ts, solver, rtol, atol, int(max_steps))
            out_code = out_code.copy()
            out_code[k * sub : (k + 1) * sub] = np.asarray(fb.code)
            if keep_states:
                out_states = jnp.asarray(out_states).at[k * sub : (k + 1) * sub].set(fb.states)
        parts.append((np.asarray(out_states) if keep_states else None, out_code))
    if n_calls == 1:  # no copy
        return (parts[0][0][:B] if keep_states else None), parts[0][1][:B]
    code = np.concatenate([p[1] for p in parts])[:B]
    return (np.concatenate([p[0] for p in parts])[:B] if keep_states else None), code


@eqx.filter_jit
def _take_cast(models, idx, dtype: str):
    return cast_model(jax.tree.map(lambda a: a[idx], models), dtype)

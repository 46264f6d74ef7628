"""Large ODE batches: sharded over all JAX devices and chunked (see :func:`_solve_sharded`,
``simulate.solve(models, batch=simulate.Sharded(...))``)."""

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
from ._options import SolveOptions, resolve
from ._solve_core import STIFF, Solution, apply_dtype
from .spec import SpecError

__all__: list[str] = []


_SHARDED: dict[tuple, Any] = {}


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _sharded_fn(solver, rtol, atol, max_steps, sub: int, keep_states: bool):
    """Compiled: shard the cells over the devices; each device runs ``lax.map`` over
    sub-chunks of ``sub`` cells, each one shared-step solve. Returns the batch-first
    Solution (if states are kept; else only the codes ``(B,)``) and one success flag per
    sub-chunk (the caller re-solves failed sub-chunks cell by cell)."""
    devices = tuple(jax.devices())
    key = (solver, rtol, atol, max_steps, sub, keep_states, devices)
    if key not in _SHARDED:
        from jax.sharding import Mesh
        from jax.sharding import PartitionSpec as P

        def one(models, schedule, ts):
            sols, ok = ode_shared(models, schedule, ts, solver, rtol, atol, max_steps)
            return (sols if keep_states else sols.code), ok

        def fn(models, schedule, ts):
            n = batch_size(models)
            split = jax.tree.map(lambda a: a.reshape(n // sub, sub, *a.shape[1:]), models)
            out, ok = jax.lax.map(lambda m: one(m, schedule, ts), split)
            # (chunks, sub, ...) -> (cells, ...)
            out = jax.tree.map(lambda a: a.reshape(n, *a.shape[2:]), out)
            return out, ok

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


def _solve_sharded(
    models: Model,
    schedule: Schedule | str | None = None,
    *,
    t1: float = 20.0,
    t0: float = 0.0,
    options: SolveOptions | None = None,
    chunk_size: int = 1024,
    call_size: int = 16384,
    keep_states: bool = True,
) -> Solution:
    """ODE solves of a large stacked batch: sharded over all JAX devices and chunked;
    ``simulate.solve``'s ``batch=Sharded(chunk_size, call_size, keep_states)``.

    The batch is cut into calls of at most ``call_size`` cells (bounds memory); in each
    call the cells are split over the devices with ``jax.shard_map`` and every device runs
    ``lax.map`` over sub-chunks of ``chunk_size`` cells, each solved as one shared-step
    system (:func:`ode_shared`; per-cell fallback where that fails).

    Args:
        models: Stacked model, leading axis ``B``.
        schedule: Shared input schedule.
        t1: End time.
        t0: Start time.
        options: How the ODE is solved; default :class:`~simulate.SolveOptions` ``()``, the
            same default as :func:`~simulate.solve` (explicit solvers only).
        chunk_size: Cells per shared-step solve (about 512-1024 is fastest on CPU).
        call_size: Cells per compiled call (the trajectories of all cells come back as one
            array either way; a single call avoids copying them).
        keep_states: Return the trajectories (else only codes; for throughput runs).

    Returns:
        A batched :class:`~simulate.Solution` like ``batch="vmap"``'s (leading
        axis ``B``; its leaves are NumPy arrays). With ``keep_states=False`` only ``code``
        is filled: ``t``, ``states``, ``inputs`` and ``y_final`` have a length-0 axis.
    """
    opts = resolve(options)
    if opts.solver in STIFF:
        raise SpecError(
            f"solve(..., batch=Sharded) needs tsit5, dopri5 or dopri8, got {opts.solver!r}"
        )
    if not t1 > t0:
        raise SpecError(f"t1 must be > t0, got t0={t0}, t1={t1}")
    if isinstance(schedule, str):
        schedule = Schedule.parse(schedule)
    elif schedule is None:
        schedule = Schedule.step(t0)
    models = with_integer_hill(models, integer_hill(models.network.n, models.network.edge_mask))
    (schedule,) = apply_dtype(opts.dtype, schedule)  # the models are cast per call
    float_dtype = jnp.dtype(opts.dtype)
    ts = jnp.linspace(t0, t1, opts.n_points, dtype=float_dtype)
    solver, rtol, atol, max_steps = opts.solver, opts.rtol, opts.atol, opts.max_steps
    n_dev = len(jax.devices())
    B = batch_size(models)
    sub = max(1, min(int(chunk_size), -(-B // n_dev)))
    unit = sub * n_dev
    n_calls = -(-B // max(int(call_size), unit))
    per_call = -(-_ceil_div(B, n_calls) // unit) * unit  # little padding
    n_calls = -(-B // per_call)
    fn = _sharded_fn(solver, rtol, atol, max_steps, sub, keep_states)
    parts = []
    for c in range(n_calls):  # pad by repeating the last cell; cast; one dispatch per call
        idx = np.arange(c * per_call, (c + 1) * per_call).clip(max=B - 1)
        part = _take_cast(models, idx, float_dtype.name)
        out, ok = fn(part, schedule, ts)
        out = jax.tree.map(np.array, out)  # writable NumPy copies
        for k in np.flatnonzero(~np.asarray(ok)):  # shared solve failed: cell by cell
            sl = slice(k * sub, (k + 1) * sub)
            chunk = jax.tree.map(lambda a, sl=sl: a[sl], part)
            fb = _ode_per_cell_jit(chunk, schedule, ts, solver, rtol, atol, max_steps)
            if keep_states:
                for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(fb), strict=True):
                    a[sl] = np.asarray(b)
            else:
                out[sl] = np.asarray(fb.code)
        parts.append(out)
    if n_calls == 1:  # no copy
        out = jax.tree.map(lambda a: a[:B], parts[0])
    else:
        out = jax.tree.map(lambda *a: np.concatenate(a)[:B], *parts)
    if keep_states:
        return out
    empty = np.zeros((B, 0), float_dtype)
    N = models.size
    states = np.zeros((B, 0, N), float_dtype)
    return Solution(empty, states, empty, empty, out, models.network.names, "ode")  # type: ignore[arg-type]


@eqx.filter_jit
def _take_cast(models, idx, dtype: str):
    return cast_model(jax.tree.map(lambda a: a[idx], models), dtype)

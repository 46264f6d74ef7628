"""Fast batched solves: many models of one wiring solved as one system.

:func:`_solve_batch` (``simulate.solve(models, batch="vmap")``) takes a *stacked*
:class:`~simulate.Model` (every array leaf with a leading batch axis ``B``) and returns a
batched :class:`~simulate.Solution`. For the ODE it
integrates the ``B`` independent systems as one ``(S, B)`` system with one adaptive step
(the error norm is the worst cell's, so every cell meets ``rtol``/``atol``), which removes
the per-cell bookkeeping of a ``vmap`` over ``diffeqsolve``; cells that turn non-finite are
frozen and masked (code 2) instead of stalling the others. If the shared solve itself fails
(e.g. one stiff cell exhausts ``max_steps``), the batch is re-solved cell by cell with
the single-model solver, so failures stay per-cell data.

Two optional speed-ups, both exact up to rounding: integer Hill coefficients shared by the
whole batch are raised by repeated multiplication (``lax.integer_pow``) instead of
``exp(n log r)``, and ``SolveOptions(dtype="float32")`` halves the arithmetic cost (use
tolerances ``rtol >= 1e-6``; float32 resolves about 1e-7).
"""

from __future__ import annotations

from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, PRNGKeyArray

from ._batch_rhs import batched_rhs
from ._hill import with_integer_hill
from ._kinetics import Model, Schedule
from ._options import DEFAULT_OPTIONS as _D
from ._options import SolveOptions, resolve
from ._rk import tsit5_shared
from ._solve_core import STIFF, Solution, apply_dtype, cast_model, diffrax_ode, solve_single
from .spec import SpecError

__all__ = [
    "batch_size",
    "cast_model",  # re-exported from _solve_core
    "integer_hill",
    "ode_per_cell",
    "ode_shared",
    "stack_models",
    "with_integer_hill",  # re-exported from _hill (used by _solve_batch)
]


def stack_models(models: list[Model]) -> Model:
    """Stack models of one wiring into a batched model (leading axis ``len(models)``)."""
    if not models:
        raise SpecError("stack_models needs at least one model")
    return jax.tree.map(lambda *xs: jnp.stack(xs), *models)


def batch_size(models: Model) -> int:
    """Leading-axis length of a stacked model."""
    return int(jnp.shape(models.tau)[0]) if jnp.ndim(models.tau) else 1


def integer_hill(n_values: np.ndarray | Array, wiring: np.ndarray) -> int | None:
    """The common integer Hill coefficient of all wired edges, or None.

    Args:
        n_values: Hill coefficients, shape ``(..., N, N)`` (concrete).
        wiring: Static edge mask, shape ``(N, N)``.
    """
    try:
        n = np.asarray(n_values)[..., wiring]
    except jax.errors.TracerArrayConversionError:
        return None
    if n.size == 0:
        return None
    k = round(float(n.flat[0]))
    if 1 <= k <= 8 and np.all(n == k):
        return k
    return None


def _diffrax_shared(models, schedule, ts, solver, rtol, atol, max_steps):
    """diffrax on the ``vmap`` of :meth:`Model.rhs`, worst cell's error norm: ``(T, S, B)``."""
    y0 = jax.vmap(lambda m: m.initial_state(), out_axes=-1)(models).astype(ts.dtype)
    mT = jax.tree.map(lambda x: jnp.moveaxis(x, 0, -1), models)

    def vf(t, Y, args):
        def one(m, y):
            return m.rhs(y, m.input_value(schedule(t)))

        dY = jax.vmap(one, in_axes=-1, out_axes=-1)(mT, Y)
        return jnp.where(jnp.isfinite(Y).all(axis=0), dY, 0.0)  # freeze non-finite cells

    def norm(e):
        r = jnp.sqrt(jnp.mean(e * e, axis=0))
        return jnp.max(jnp.where(jnp.isfinite(r), r, 0.0))

    jumps = schedule.times.astype(ts.dtype)
    return diffrax_ode(vf, y0, ts, solver, rtol, atol, jumps, max_steps, norm=norm)


def _lean_shared(models, schedule, ts, rtol, atol, max_steps, fast, batch_axis):
    """:mod:`simulate._rk` on the drift of :mod:`simulate._batch_rhs`; the node levels are
    stored straight in the output layout (``(B, T, N)`` or ``(T, N, B)``)."""
    prep, f, rows = fast
    dt = ts.dtype
    y0 = jax.vmap(lambda m: m.initial_state(), out_axes=-1)(models).astype(dt)  # (S, B)
    N = models.size
    row_of = {int(r): k for k, r in enumerate(rows)}
    src = np.asarray(models.network.pure_sources) & bool(models.kinetics.algebraic_sources)
    x0 = jnp.broadcast_to(models.kinetics.x0, y0.shape[-1:]).astype(dt)

    def emit(y, level):  # Model.levels on the batch
        cols = [
            x0 * level if src[j] else (y[row_of[j]] if j in row_of else y0[j]) for j in range(N)
        ]
        return jnp.stack(cols, axis=-1 if batch_axis == 0 else 0)

    jumps = schedule.times.astype(dt)
    res = tsit5_shared(
        f, prep, y0[rows], ts, schedule, jumps, rtol, atol, max_steps,
        emit=emit, time_axis=1 if batch_axis == 0 else 0,
    )  # fmt: skip
    return res.ys, y0.at[rows].set(res.y_end), res.ok


def _batched_ode(models, schedule, ts, solver, rtol, atol, max_steps, batch_axis=0):
    """One shared-step solve of the whole batch; Solution leaves batch-first or -last.

    ``tsit5`` on models without policy lag runs the lean solver (:func:`_lean_shared`);
    anything else diffrax (:func:`_diffrax_shared`). The post-processing is
    :meth:`Model.levels` / :meth:`Model.input_value` on the batch, without a per-cell ``vmap``.
    """
    fast = batched_rhs(models) if solver == "tsit5" else None
    T = ts.shape[0]
    B = int(jnp.shape(models.tau)[0])
    x = jax.vmap(schedule)(ts)[:, None] * jnp.broadcast_to(models.kinetics.x0, (B,))[None, :]
    if fast is not None:
        states, y_final, ok = _lean_shared(
            models, schedule, ts, rtol, atol, max_steps, fast, batch_axis
        )
    else:
        ys, ok = _diffrax_shared(models, schedule, ts, solver, rtol, atol, max_steps)
        states, y_final = ys[:, : models.size], ys[-1]
        if models.kinetics.algebraic_sources:
            src = np.asarray(models.network.pure_sources)[None, :, None]
            states = jnp.where(src, x[:, None, :].astype(states.dtype), states)
        if batch_axis == 0:
            states = jnp.moveaxis(states, -1, 0)
    finite = jnp.isfinite(states).all(axis=(1, 2) if batch_axis == 0 else (0, 1))
    code = jnp.where(ok, jnp.where(finite, 0, 2), 1)
    t = jnp.broadcast_to(ts[:, None], (T, B))
    names = models.network.names
    if batch_axis == 0:
        sol = Solution(t.T, states, x.T, y_final.T, code, names, "ode")
    else:  # time-major layout (T, ..., B): reductions over time vectorise across cells
        sol = Solution(t, states, x, y_final, code, names, "ode")
    return sol, ok


@eqx.filter_jit
def _ode_batch_jit(models, schedule, ts, solver, rtol, atol, max_steps):
    return _batched_ode(models, schedule, ts, solver, rtol, atol, max_steps)


@eqx.filter_jit
def _ode_per_cell_jit(models, schedule, ts, solver, rtol, atol, max_steps):
    return ode_per_cell(models, schedule, ts, solver, rtol, atol, max_steps)


def ode_shared(
    models,
    schedule,
    ts,
    solver=_D.solver,
    rtol=_D.rtol,
    atol=_D.atol,
    max_steps=_D.max_steps,
    batch_axis=0,
):
    """Traceable core: the shared-step solve of a stacked batch.

    With ``batch_axis=-1`` every leaf of the returned Solution has the batch axis last
    (``states`` ``(T, N, B)``): classify it with ``jax.vmap(..., in_axes=-1)``, which is
    about twice as fast on CPU as the batch-first layout.

    Returns:
        (batched Solution, shared-solve success flag); where the flag is False every
        cell has code 1 and the caller should fall back to :func:`ode_per_cell`.
    """
    return _batched_ode(models, schedule, ts, solver, rtol, atol, max_steps, batch_axis)


def ode_per_cell(
    models, schedule, ts, solver=_D.solver, rtol=_D.rtol, atol=_D.atol, max_steps=_D.max_steps
):
    """Traceable fallback: ``vmap`` of the per-cell solver (failures stay per cell)."""
    from ._solve_core import _solve_ode

    sols = jax.vmap(lambda m: _solve_ode(m, schedule, ts, solver, rtol, atol, None, max_steps))(
        models
    )
    dt = ts.dtype
    return jax.tree.map(
        lambda a: a.astype(dt) if jnp.issubdtype(a.dtype, jnp.floating) else a, sols
    )


def _solve_batch(
    models: Model,
    schedule: Schedule | str | None = None,
    *,
    t1: float = 20.0,
    t0: float = 0.0,
    options: SolveOptions | None = None,
    method: Literal["ode", "sde", "map"] = "ode",
    dt: float = 0.01,
    steps: int | None = None,
    fast_hill: bool = True,
    key: PRNGKeyArray | None = None,
) -> Solution:
    """Solve a stacked batch of models (see module docstring); ``simulate.solve``'s
    ``batch="vmap"``.

    Args:
        models: Stacked model, every array leaf with leading axis ``B``.
        schedule: Input schedule (shared by the batch); default on from ``t0``.
        t1: End time (time units of the kinetics).
        t0: Start time.
        options: How the ODE is solved; default :class:`~simulate.SolveOptions` ``()``, the
            same default as one model's solve. The solver must be explicit
            (``tsit5``, ``dopri5``, ``dopri8``); ``dt0`` and ``adjoint`` are not used (the
            shared-step solve is not for differentiation).
        method: ``"ode"`` (one shared adaptive solve), ``"sde"`` (vmapped Euler–Maruyama,
            one key per cell) or ``"map"`` (vmapped discrete learning steps).
        dt: Fixed step of the SDE.
        steps: Number of map steps (required for ``method="map"`` under ``jit``).
        fast_hill: Use integer powers when all wired Hill coefficients are one integer.
        key: PRNG key for ``method="sde"`` (split into one key per cell).

    Returns:
        Batched :class:`~simulate.Solution`, leading axis ``B``; ``code`` per cell.
    """
    opts = resolve(options)
    if isinstance(schedule, str):
        schedule = Schedule.parse(schedule)
    elif schedule is None:
        schedule = Schedule.step(t0)
    if fast_hill:
        models = with_integer_hill(models, integer_hill(models.network.n, models.network.edge_mask))
    models, schedule = apply_dtype(opts.dtype, models, schedule)
    B = batch_size(models)
    if method == "map":
        if steps is None:
            etas = np.asarray(models.eta)
            steps = round((t1 - t0) / float(np.min(etas)))
        n_steps = int(steps)
        return jax.vmap(lambda m: solve_single(m, schedule, t0=t0, method="map", steps=n_steps))(
            models
        )
    if not t1 > t0:
        raise SpecError(f"t1 must be > t0, got t0={t0}, t1={t1}")
    if method == "sde":
        if key is None:
            raise SpecError("method='sde' needs a PRNG key: pass key=jax.random.key(0)")
        keys = jax.random.split(key, B)
        return jax.vmap(
            lambda m, k: solve_single(
                m, schedule, t0=t0, t1=t1, options=opts, method="sde", dt=dt, key=k
            )
        )(models, keys)
    if method != "ode":
        raise SpecError(f"unknown method {method!r}; choose ode, sde or map")
    if opts.solver in STIFF:
        raise SpecError(
            f"solve(..., batch='vmap') needs tsit5, dopri5 or dopri8, got {opts.solver!r}"
        )
    ts = jnp.linspace(t0, t1, opts.n_points, dtype=opts.dtype)
    args = (opts.solver, opts.rtol, opts.atol, opts.max_steps)
    sols, ok = _ode_batch_jit(models, schedule, ts, *args)
    if not bool(ok):
        sols = _ode_per_cell_jit(models, schedule, ts, *args)
    return sols

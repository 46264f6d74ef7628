"""Competences of a simulate model at the observed steps (input on from step 0): one solve
entry point, :func:`solve_at`, in diffrax's style.

``solve_at(model, ts, solver=..., options=...)``: the solver object says how (an
:class:`AbstractCurveSolver`, one of three final kinds), simulate's
:class:`~simulate.SolveOptions` with which tolerances, step budget, initial step, adjoint
and diffrax method (what the adaptive solver reads; a fixed-grid solver carries its grid):

- :class:`Adaptive` (the default): simulate's one diffrax set-up, saved at ``ts``;
- :class:`RK4`: classical fixed-step RK4, ``substeps`` steps per observation interval;
- :class:`~calibrate._quad.Quad` (in :mod:`calibrate._quad`): the feed-forward quadrature
  on a :class:`~calibrate._quad.QuadGrid`.
"""

from __future__ import annotations

import abc
import math
import operator

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

import simulate
from simulate import SolveOptions, resolve_options

__all__ = [
    "RK4",
    "AbstractCurveSolver",
    "Adaptive",
    "finite_levels",
    "fixed_substeps",
    "solve_at",
]


def finite_levels(
    ys: jax.Array, axis: tuple[int, ...] | None = None
) -> tuple[jax.Array, jax.Array]:
    """``(levels, ok)``: non-finite levels replaced by 0.5 (so the likelihood stays finite)
    and a flag that all were finite (the likelihood then rejects the draw), over ``axis``
    (default: all; a batch of solves keeps its own axis)."""
    finite = jnp.isfinite(ys)
    return jnp.where(finite, ys, 0.5), jnp.all(finite, axis=axis)


class AbstractCurveSolver(eqx.Module):
    """How :func:`solve_at` solves a model's competences at increasing steps ``ts >= 0``
    (input on from step 0). Final kinds: :class:`Adaptive`, :class:`RK4`,
    :class:`~calibrate._quad.Quad`."""

    @abc.abstractmethod
    def solve(
        self, model: simulate.Model, ts: ArrayLike, options: SolveOptions
    ) -> tuple[jax.Array, jax.Array]:
        """``(A, ok)``: levels of shape ``(T, N)`` at ``ts`` and a success flag."""


class Adaptive(AbstractCurveSolver):
    """simulate's one diffrax set-up (:func:`simulate.diffrax_ode`) from step 0, saved at
    ``ts``: ``options`` sets the diffrax solver, tolerances, step budget, initial step and
    adjoint; its ``n_points`` and ``dtype`` are not used (``ts`` and the model's arrays set
    them). ``adjoint="forward"`` differentiates the solve in forward mode, cheaper than
    reverse mode for a few parameters and a small state; then only forward-mode
    derivatives (``jax.jacfwd``) are available."""

    def solve(
        self, model: simulate.Model, ts: ArrayLike, options: SolveOptions
    ) -> tuple[jax.Array, jax.Array]:
        from simulate import diffrax_ode  # diffrax loads with the first adaptive solve

        x = model.input_value(jnp.asarray(1.0))
        ys, ok = diffrax_ode(
            lambda t, y, args: model.rhs(y, x),
            model.initial_state(),
            ts,
            options.solver,
            options.rtol,
            options.atol,
            None,  # constant input: no jumps
            options.max_steps,
            options.dt0,
            adjoint=options.adjoint,
            t0=0.0,
        )
        A, finite = finite_levels(ys[:, : model.size])
        return A, ok & finite


def fixed_substeps(ts: np.ndarray, dt: float) -> int:
    """RK4 steps per observation interval so that no step exceeds ``dt`` (training steps)."""
    gaps = np.diff(np.concatenate([[0.0], np.asarray(ts, dtype=float)]))
    return max(1, math.ceil(float(gaps.max(initial=0.0)) / dt - 1e-9))


class RK4(AbstractCurveSolver):
    """Classical fixed-step RK4 (``options`` are not used).

    Each interval ``[t_{i-1}, t_i]`` (with ``t_{-1} = 0``) is crossed in ``substeps`` equal
    steps, so the solution lands exactly on every observation. The step sequence does not
    depend on the parameters, so the log likelihood is a smooth function of them (an
    adaptive controller makes it piecewise, which costs NUTS step size); with rates of order
    0.1 per training step and steps <= 1 training step, the global error is ~1e-7.

    Attributes:
        substeps: RK4 steps per observation interval (>= 1; see :meth:`for_steps`).
    """

    substeps: int = eqx.field(static=True, converter=operator.index)

    def __check_init__(self) -> None:
        if self.substeps < 1:
            raise ValueError(f"substeps must be >= 1, got {self.substeps}")

    @classmethod
    def for_steps(cls, ts: np.ndarray, dt: float) -> RK4:
        """RK4 on the steps ``ts`` with no step longer than ``dt`` (:func:`fixed_substeps`)."""
        return cls(fixed_substeps(ts, dt))

    def solve(
        self, model: simulate.Model, ts: ArrayLike, options: SolveOptions
    ) -> tuple[jax.Array, jax.Array]:
        substeps = self.substeps
        x = model.input_value(jnp.asarray(1.0))
        f = lambda y: model.rhs(y, x)  # noqa: E731
        gaps = jnp.diff(jnp.concatenate([jnp.zeros(1), jnp.asarray(ts, dtype=float)]))
        hs = jnp.repeat(gaps / substeps, substeps)  # one flat scan over all steps

        def step(y, h):
            k1 = f(y)
            k2 = f(y + 0.5 * h * k1)
            k3 = f(y + 0.5 * h * k2)
            k4 = f(y + h * k3)
            y = y + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            return y, y[: model.size]

        # checkpointed: the backward pass recomputes the stages instead of storing them, and
        # one flat scan instead of a scan per interval (gradient of the 8-run benchmark at
        # dt 2.5: 3.1 ms nested without checkpoint, 2.1 nested, 1.36 flat)
        _, ys = jax.lax.scan(jax.checkpoint(step), model.initial_state(), hs)
        return finite_levels(ys[substeps - 1 :: substeps])


def solve_at(
    model: simulate.Model,
    ts: ArrayLike,
    *,
    solver: AbstractCurveSolver | None = None,
    options: SolveOptions | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Competences of ``model`` at increasing steps ``ts >= 0`` (input on from step 0): the
    one solve entry point of calibrate.

    Args:
        model: The model.
        ts: Increasing save steps ``>= 0`` (for a :class:`~calibrate._quad.Quad`, the
            steps its grid was built from).
        solver: How: :class:`Adaptive` (default), :class:`RK4` or
            :class:`~calibrate._quad.Quad`.
        options: Solve options (default :class:`simulate.SolveOptions` ``()``, the default
            of every solve entry point; a fit derives its own with
            :meth:`calibrate.FitConfig.solve_options`); the adaptive solver's settings.

    Returns:
        ``(A, ok)``: levels of shape ``(T, N)`` and a success flag (the solve succeeded and
        every level is finite).

    Raises:
        OptionsError: ``options`` is not a :class:`~simulate.SolveOptions`.
        TypeError: ``solver`` is not an :class:`AbstractCurveSolver`.
    """
    opts = resolve_options(options)
    if solver is None:
        solver = Adaptive()
    elif not isinstance(solver, AbstractCurveSolver):
        raise TypeError(f"solver must be an AbstractCurveSolver, got {type(solver).__name__}")
    return solver.solve(model, ts, opts)

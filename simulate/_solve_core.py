"""The single-model solvers behind :func:`simulate.solve` (ODE, SDE, discrete map) and what
the batched solvers share with them (:class:`Solution`, the diffrax set-up, dtype casts).

Kept apart from :mod:`simulate._solve` (the public entry point, which dispatches to the
batched solvers) so that those can import it without an import cycle."""

from __future__ import annotations

from typing import Literal, cast

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
from jax.core import Tracer
from jaxtyping import Array, PRNGKeyArray

from ._jaxsetup import use_float64
from ._kinetics import Model, Schedule
from ._options import SolveOptions, resolve
from .spec import SpecError

__all__ = [
    "ADJOINT_TYPES",
    "FAILURE_MESSAGES",
    "SOLVERS",
    "STIFF",
    "Solution",
    "apply_dtype",
    "cast_model",
    "diffrax_ode",
    "is_traced",
    "solve_single",
]

SOLVERS = {
    "tsit5": diffrax.Tsit5,
    "dopri5": diffrax.Dopri5,
    "dopri8": diffrax.Dopri8,
    "kvaerno5": diffrax.Kvaerno5,
    "kvaerno3": diffrax.Kvaerno3,
}
STIFF = {"kvaerno5", "kvaerno3"}
#: :attr:`SolveOptions.adjoint` names -> diffrax adjoints.
ADJOINT_TYPES = {
    "recursive": diffrax.RecursiveCheckpointAdjoint,
    "forward": diffrax.ForwardMode,
    "direct": diffrax.DirectAdjoint,
}

#: Meaning of :attr:`Solution.code`.
FAILURE_MESSAGES = {
    0: "ok",
    1: "solver failed (max_steps reached or step size collapsed); the system may be stiff: "
    "try solver='kvaerno5' or a larger max_steps",
    2: "non-finite values (NaN/inf) in the trajectory; parameters out of range or the "
    "discrete map diverged",
}


class Solution(eqx.Module):
    """A solved trajectory.

    Attributes:
        t: Save times, shape ``(T,)``.
        states: Node levels (competences), shape ``(T, N)``; algebraic inputs filled in.
        inputs: Input value ``x(t)`` at the save times, shape ``(T,)``.
        y_final: Full final state incl. delay stages, shape ``(S,)``.
        code: 0 ok, 1 solver failure, 2 non-finite values (see :data:`FAILURE_MESSAGES`).
        names: Node names.
        method: ``"ode"``, ``"sde"`` or ``"map"``.
    """

    t: Array
    states: Array
    inputs: Array
    y_final: Array
    code: Array
    names: tuple[str, ...] = eqx.field(static=True)
    method: str = eqx.field(static=True)

    @property
    def ok(self) -> Array:
        """True where the solve succeeded with finite values."""
        return self.code == 0

    def message(self) -> str:
        """Human-readable status (for an unbatched solution)."""
        return FAILURE_MESSAGES[int(self.code)]

    def node(self, name: str) -> Array:
        """Trajectory of one node."""
        if name not in self.names:
            raise SpecError(f"unknown node {name!r}; nodes are {list(self.names)}")
        return self.states[..., self.names.index(name)]


def _finish(model, schedule, ts, ys, code, method) -> Solution:
    x = jax.vmap(lambda t: model.input_value(schedule(t)))(ts)
    states = jax.vmap(model.levels)(ys, x)
    if method == "sde":
        states = jnp.clip(states, 0.0, 1.0)
    finite = jnp.all(jnp.isfinite(states))
    code = jnp.where(code != 0, code, jnp.where(finite, 0, 2))
    return Solution(ts, states, x, ys[-1], code, model.network.names, method)


def cast_model(model, dtype):
    """Cast every floating array leaf of ``model`` (any pytree) to ``dtype``."""
    dt = jnp.dtype(dtype)

    def cast(x):
        if eqx.is_array(x) and jnp.issubdtype(x.dtype, jnp.floating):
            return x.astype(dt)
        return x

    return jax.tree.map(cast, model)


def is_traced(tree) -> bool:
    """True if any leaf of ``tree`` is a JAX tracer (called inside ``jit``/``vmap``/...)."""
    return any(isinstance(leaf, Tracer) for leaf in jax.tree.leaves(tree))


def apply_dtype(dtype: str, *trees):
    """Enter ``dtype`` (64-bit mode on for ``float64``) and cast ``trees`` to it.

    Only for top-level calls: inside a JAX transformation the caller's dtype rules.
    """
    if dtype == "float64":
        use_float64(True)  # JAX computes in float32 unless 64-bit mode is on
    return tuple(cast_model(t, dtype) for t in trees)


def diffrax_ode(
    vf,
    y0,
    ts,
    solver,
    rtol,
    atol,
    jump_ts,
    max_steps,
    dt0=None,
    norm=None,
    adjoint="recursive",
    t0=None,
):
    """The one diffrax ODE set-up (adaptive PID steps clipped at the input's jump times).

    Args:
        vf: Vector field ``vf(t, y, args)``.
        y0: Initial state (any shape).
        ts: Save times, shape ``(T,)``; ``ts[0]`` and ``ts[-1]`` are the span.
        solver: Name in :data:`SOLVERS`.
        rtol: Relative tolerance.
        atol: Absolute tolerance.
        jump_ts: Times of discontinuities of ``vf`` in ``t``, shape ``(J,)``; None: no
            jumps (plain PID controller).
        max_steps: Step budget.
        dt0: Initial step (None: diffrax chooses).
        norm: Error norm (default diffrax's RMS norm).
        adjoint: How the solve is differentiated, a key of :data:`ADJOINT_TYPES`.
        t0: Start time (default ``ts[0]``); the solution is saved at ``ts`` only.

    Returns:
        (states at ``ts``, shape ``(T, *y0.shape)``; scalar success flag).
    """
    extra = {} if norm is None else {"norm": norm}
    pid = diffrax.PIDController(rtol=rtol, atol=atol, **extra)
    controller = pid if jump_ts is None else diffrax.ClipStepSizeController(pid, jump_ts=jump_ts)
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(vf),
        SOLVERS[solver](),
        ts[0] if t0 is None else t0,
        ts[-1],
        dt0,
        y0,
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=controller,
        max_steps=max_steps,
        throw=False,
        adjoint=ADJOINT_TYPES[adjoint](),
    )
    ys = cast(Array, sol.ys)  # not None: SaveAt(ts=...)
    return ys, sol.result == diffrax.RESULTS.successful


@eqx.filter_jit
def _solve_ode(model, schedule, ts, solver, rtol, atol, dt0, max_steps, adjoint="recursive"):
    def vf(t, y, args):
        return model.rhs(y, model.input_value(schedule(t)))

    ys, ok = diffrax_ode(
        vf,
        model.initial_state(),
        ts,
        solver,
        rtol,
        atol,
        schedule.times,
        max_steps,
        dt0,
        adjoint=adjoint,
    )
    code = jnp.where(ok, 0, 1)
    ys = jnp.where(jnp.isfinite(ys), ys, jnp.nan)  # type: ignore[arg-type]
    return _finish(model, schedule, ts, ys, code, "ode")


@eqx.filter_jit
def _solve_sde(model, schedule, ts, dt, max_steps, key):
    def drift(t, y, args):
        return model.rhs(y, model.input_value(schedule(t)), clip=True)

    def diffusion(t, y, args):
        return lx.DiagonalLinearOperator(model.diffusion(y))

    bm = diffrax.UnsafeBrownianPath(shape=(model.state_size,), key=key)
    terms = diffrax.MultiTerm(diffrax.ODETerm(drift), diffrax.ControlTerm(diffusion, bm))
    sol = diffrax.diffeqsolve(
        terms,
        diffrax.Euler(),
        ts[0],
        ts[-1],
        dt,
        model.initial_state(),
        saveat=diffrax.SaveAt(ts=ts),
        adjoint=diffrax.ForwardMode(),
        max_steps=max_steps,
        throw=False,
    )
    code = jnp.where(sol.result == diffrax.RESULTS.successful, 0, 1)
    return _finish(model, schedule, ts, sol.ys, code, "sde")


@eqx.filter_jit
def _solve_map(model, schedule, t0, steps):
    def step(y, k):
        t = t0 + k * model.eta
        y_next = y + model.eta * model.rhs(y, model.input_value(schedule(t)))
        return y_next, y_next

    y0 = model.initial_state()
    _, ys = jax.lax.scan(step, y0, jnp.arange(steps))
    ys = jnp.concatenate([y0[None], ys])
    ts = t0 + model.eta * jnp.arange(steps + 1)
    return _finish(model, schedule, ts, ys, jnp.asarray(0), "map")


def solve_single(
    model: Model,
    schedule: Schedule | str | None = None,
    *,
    t1: float = 20.0,
    t0: float = 0.0,
    options: SolveOptions | None = None,
    method: Literal["ode", "sde", "map"] = "ode",
    dt: float = 0.01,
    steps: int | None = None,
    key: PRNGKeyArray | None = None,
) -> Solution:
    """:func:`simulate.solve` of one model (``batch=None``); arguments as there."""
    opts = resolve(options)
    if isinstance(schedule, str):
        schedule = Schedule.parse(schedule)
    elif schedule is None:
        schedule = Schedule.step(t0)
    top = not is_traced((model, schedule, key))
    if top:
        model, schedule = apply_dtype(opts.dtype, model, schedule)
    if method == "map":
        if steps is None:
            eta = float(model.eta)
            steps = round((t1 - t0) / eta)
            if steps < 1:  # say what the user wrote: eta and the span, not a derived 0
                raise SpecError(
                    f"eta={eta:g} is longer than the span t1 - t0 = {t1 - t0:g}: the map "
                    "takes no step; give a smaller eta or a longer span (--t1)"
                )
        if int(steps) < 1:
            raise SpecError(f"the map needs >= 1 step, got steps={steps}")
        t0_arr = jnp.asarray(t0, opts.dtype if top else float)
        return _solve_map(model, schedule, t0_arr, int(steps))
    if not t1 > t0:
        raise SpecError(f"t1 must be > t0, got t0={t0}, t1={t1}")
    ts = jnp.linspace(t0, t1, opts.n_points, dtype=opts.dtype if top else None)
    if method == "ode":
        return _solve_ode(
            model,
            schedule,
            ts,
            opts.solver,
            opts.rtol,
            opts.atol,
            opts.dt0,
            opts.max_steps,
            opts.adjoint,
        )
    if method == "sde":
        if key is None:
            raise SpecError("method='sde' needs a PRNG key: solve(..., key=jax.random.key(0))")
        if not model.kinetics.bounded:
            raise SpecError("Wright–Fisher noise needs bounded competences: kinetics='competence'")
        if not dt > 0:
            raise SpecError(f"dt must be > 0, got {dt}")
        budget = max(opts.max_steps, int((t1 - t0) / dt) + 10)
        return _solve_sde(model, schedule, ts, float(dt), budget, key)
    raise SpecError(f"unknown method {method!r}; choose ode, sde or map")

"""One ``solve`` for the ODE, the SDE (gradient noise) and the discrete learning-step map, of
one model or of a stacked batch (``batch=``)."""

from __future__ import annotations

from typing import Literal

from jaxtyping import PRNGKeyArray

from ._kinetics import Model, Schedule
from ._options import OptionsError, Sharded, SolveOptions
from ._solve_core import (
    ADJOINT_TYPES,
    FAILURE_MESSAGES,
    SOLVERS,
    STIFF,
    Solution,
    apply_dtype,
    cast_model,
    diffrax_ode,
    is_traced,
    solve_single,
)
from .spec import SpecError

__all__ = [
    "ADJOINT_TYPES",
    "FAILURE_MESSAGES",
    "SOLVERS",
    "STIFF",
    "Schedule",
    "Solution",
    "apply_dtype",
    "cast_model",
    "diffrax_ode",
    "is_traced",
    "solve",
]


def solve(
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
    batch: Literal["vmap", "sharded"] | Sharded | None = None,
) -> Solution:
    """Solve the model's dynamics under an input schedule: one model, or a stacked batch.

    Failures never raise inside the solver: they come back as ``Solution.code != 0``
    (so a vmapped sweep masks them). Inputs that are wrong before any solving raise
    :class:`~simulate.spec.SpecError`.

    Args:
        model: The model (see :func:`~simulate.make_model`); with ``batch`` set, a stacked
            model of one wiring (:func:`~simulate.stack_models`: every array leaf with a
            leading axis ``B``).
        schedule: Input schedule, a :class:`Schedule` or text like ``"on@0,off@10"``;
            default: on from ``t0``. A batch shares one schedule.
        t1: End time (time units of the kinetics; steps for competence).
        t0: Start time.
        options: How the ODE is solved (save points, tolerances, solver, step budget,
            dtype, adjoint); default :class:`~simulate.SolveOptions` ``()``, the one default
            of every solve entry point. ``n_points`` and ``max_steps`` also apply to the
            SDE, ``dtype`` to every method (applied when ``solve`` is called outside a JAX
            transformation; inside one, the model's arrays set the dtype). A batched ODE
            needs an explicit solver (``tsit5``, ``dopri5``, ``dopri8``) and does not use
            ``dt0`` or ``adjoint`` (the shared-step solve is not for differentiation).
        method: ``"ode"`` (diffrax, adaptive), ``"sde"`` (Euler–Maruyama with
            Wright–Fisher noise ``sigma sqrt(A(1-A))``; levels kept in [0, 1] by projection)
            or ``"map"`` (discrete learning steps ``A <- A + eta F(A)`` by ``lax.scan``).
        dt: Fixed step of the SDE.
        steps: Number of map steps (default ``round((t1 - t0) / eta)``, with a batch the
            smallest ``eta``; give it in sweeps and under ``jit``).
        key: PRNG key, keyword-only, required for ``method="sde"`` (a batch splits it into
            one key per cell).
        batch: How ``model`` is read. ``None`` (default): one model. ``"vmap"``: a stacked
            batch solved in one call, as ``jax.vmap`` of ``solve`` would (the ODE's ``B``
            systems integrated as one system with one adaptive step whose error norm is the
            worst cell's, so every cell meets ``rtol``/``atol``; cells that turn non-finite
            are frozen with code 2; if the shared solve fails, it is redone cell by cell;
            integer Hill coefficients shared by the batch are raised by repeated
            multiplication; the SDE and the map are ``vmap``-ed). ``"sharded"`` or a
            :class:`~simulate.Sharded`: a large stacked ODE batch cut into chunks of shared-
            step solves, sharded over all JAX devices (``"sharded"`` is ``Sharded()``;
            ``method="ode"`` only; must be called outside ``jit``).

    Returns:
        A :class:`Solution`. One model: ``t`` ``(T,)``, ``states`` ``(T, N)``, ``inputs``
        ``(T,)``, ``y_final`` ``(S,)``, ``code`` ``()`` (``T`` = ``options.n_points``, or
        ``steps + 1`` for the map; ``S`` = state size incl. delay stages). A batch: the same
        leaves with a leading axis ``B`` (``code`` ``(B,)``, one per cell); with
        ``Sharded`` the leaves are NumPy arrays, and with ``keep_states=False`` only
        ``code`` is filled (``t``, ``states``, ``inputs``, ``y_final`` have a length-0 axis).

    Raises:
        SpecError: On inputs that are wrong before any solving (also a stiff solver or a
            method other than ``"ode"`` where the batch mode does not take it).
        OptionsError: If ``batch`` is none of the above.
    """
    kw = {"t1": t1, "t0": t0, "options": options, "method": method, "dt": dt, "steps": steps,
          "key": key}  # fmt: skip
    if batch is None:
        return solve_single(model, schedule, **kw)
    if batch == "vmap":
        from ._batch import _solve_batch

        return _solve_batch(model, schedule, **kw)
    if batch == "sharded":
        batch = Sharded()
    if not isinstance(batch, Sharded):
        raise OptionsError(f"batch must be None, 'vmap', 'sharded' or a Sharded, got {batch!r}")
    if method != "ode" or key is not None or steps is not None:
        raise SpecError(f"batch=Sharded solves the ODE only (method='ode'), got {method!r}")
    from ._sharded import _solve_sharded

    return _solve_sharded(
        model,
        schedule,
        t1=t1,
        t0=t0,
        options=options,
        chunk_size=batch.chunk_size,
        call_size=batch.call_size,
        keep_states=batch.keep_states,
    )

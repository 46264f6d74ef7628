"""The compiled batch predictor behind :func:`calibrate.predict` (one program per shape).

Every setting's curves (a vmap over draws) are solved and reduced inside one compiled
program that is cached across calls (keyed by the model's structure, the steps and the
options), so a second call with new settings or draws only runs it. When JAX exposes
several devices (on CPU: ``jax.config.update("jax_num_cpu_devices", 2)`` before JAX starts)
the settings are sharded over them with ``jax.shard_map``; on each device ``lax.map``
walks its settings in chunks of about 400 solves. The model's Hill regulation is written
for its one sign structure (:func:`simulate.with_log_hill` with ``fixed_structure``), the
same values as the fit's (up to rounding) with fewer operations.

Measured (``benchmarks/bench_predict.py``, see docs/benchmarks.md): the per-step quantile
bands (XLA's CPU sort of every column) cost more than the solves; a host-side
:func:`numpy.partition` (:func:`band_quantiles`) is there but off (see
:data:`BAND_METHOD`). The regimes are classified by
:func:`calibrate._predict._classify.classify_batch` (the batch as the last axis;
simulate.classify's labels). A call for thousands of settings that needs only final
competences and regimes should still pass ``bands=False``.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import simulate

from .._config import ConfigError
from .._model import CurveModel
from .._quad import Quad
from .._readout import readout_curves
from .._regulators import NO_NEW_RUN
from .._solvers import solve_at
from ._band_points import interpolation_matrix
from ._checks import TOLERANCE
from ._classify import classify_batch

SOLVE_OPTIONS = simulate.SolveOptions()  # not read by the quad solver

__all__ = [
    "BAND_LEVELS",
    "FLOAT32_CELL_FACTOR",
    "FLOAT32_FINE_GAPS",
    "SOLVES_PER_CHUNK",
    "Cells",
    "band_quantiles",
    "compiled_model",
    "curve_regimes",
    "in_dtype",
    "predict_batch",
    "shard_settings",
    "solve_curves",
]

#: Quantile levels of the bands (90 % and 50 % central intervals).
BAND_LEVELS = (0.05, 0.25, 0.75, 0.95)

#: The regime classifier compiled in: ``"batch"`` (:func:`calibrate._predict._classify.
#: classify_batch`, the batch as the last axis) or ``"vmap"`` (a vmap of
#: :func:`curve_regimes`); the same labels, kept switchable for the benchmark.
CLASSIFIER = "batch"

#: How the bands are computed: ``"sort"`` (``jnp.quantile``, XLA's sort) or
#: ``"partition"`` (:func:`band_quantiles`, 4.6x less CPU in isolation). Not the default:
#: the benchmark (100 settings x 200 draws, two CPU devices) hung in its host callback
#: (every thread waiting on a futex); the cause is not yet found.
BAND_METHOD = "sort"

#: In float32, the ``quad`` cells are at most this many times the fit's ``dt`` (observed
#: steps stay grid nodes). Measured on the benchmark's fit: finals within 3e-8 of the
#: fit's cells at 4x in float64 (4e-7 at 8x), far inside float32's 1e-4 agreement; with
#: 200 points on 290 steps it gives one cell per output interval (201 cells instead of
#: 400) and halves the solve.
FLOAT32_CELL_FACTOR = 4.0

#: In float32, the first this many output intervals keep the fit's cells (the fastest
#: settings rise there). With the wide cells throughout, float32 and float64 differed by up
#: to 4.7e-4 in the mean curve (at the third step) and 1.0e-4 in its band (benchmark fit,
#: 200 settings, 20 band steps); with 8 such intervals by 8.5e-7 and 1.4e-6, at about 4 %
#: more cells (2026-12-06).
FLOAT32_FINE_GAPS = 8

#: Solves per ``lax.map`` step (settings per step = this // draws, at least 1). 400 (two
#: settings of 200 draws) keeps a step's arrays in the CPU's cache: the new-run program at
#: 1000 settings ran in 1.57 s against 2.64 s at 2000 solves (1.83 s at 200).
SOLVES_PER_CHUNK = 400


@eqx.filter_jit
def curve_regimes(t: jax.Array, states: jax.Array, ok: jax.Array, names: tuple[str, ...]):
    """Per-node regime codes of one predicted curve set (input on throughout), by
    :func:`simulate.classify` — the toolkit's one definition of a regime.

    Args:
        t: Steps, shape ``(T,)``.
        states: Competences, shape ``(T, N)``.
        ok: Whether the solve succeeded (scalar bool).
        names: Node names (``N``).

    Returns:
        Codes of :class:`simulate.Regime`, shape ``(N,)``.
    """
    sol = simulate.Solution(
        t=t,
        states=states,
        inputs=jnp.ones_like(t),
        y_final=states[-1],
        code=jnp.where(ok, 0, 1).astype(jnp.int32),
        names=names,
        method="ode",
    )
    return simulate.classify(sol)[1]


def _quantiles_np(A: np.ndarray) -> np.ndarray:
    """``jnp.quantile(A, BAND_LEVELS, axis=-3)`` (linear interpolation), moved to axis -3,
    by :func:`numpy.partition` at the 8 order statistics it needs."""
    A = np.asarray(A)
    n = A.shape[-3]
    a = np.ascontiguousarray(np.moveaxis(A, -3, -1))  # (..., T, N, G)
    pos = [q * (n - 1) for q in BAND_LEVELS]
    lo = [int(np.floor(p)) for p in pos]
    hi = [min(int(np.ceil(p)), n - 1) for p in pos]
    part = np.partition(a, sorted(set(lo + hi)), axis=-1)
    out = []
    for p, i, j in zip(pos, lo, hi, strict=True):
        hw = A.dtype.type(p - i)
        out.append(part[..., i] * (A.dtype.type(1) - hw) + part[..., j] * hw)
    return np.stack(out, axis=-3).astype(A.dtype)


def band_quantiles(A: jax.Array) -> jax.Array:
    """Quantile curves at :data:`BAND_LEVELS` over the draws (axis -3 of ``(..., G, T, N)``),
    shape ``(..., 4, T, N)``: the values of ``jnp.quantile`` (to rounding, 1e-16), computed
    on the host by :func:`numpy.partition` (a selection of 8 order statistics per step and
    node) instead of XLA's CPU sort of every column (measured 4.6x less CPU time on
    200 draws x 600 step-nodes)."""
    shape = (*A.shape[:-3], len(BAND_LEVELS), *A.shape[-2:])
    return jax.pure_callback(
        _quantiles_np, jax.ShapeDtypeStruct(shape, A.dtype), A, vmap_method="expand_dims"
    )


def predict_batch(
    cm: CurveModel,
    u: np.ndarray,
    slopes: np.ndarray,
    x: np.ndarray,
    t: np.ndarray,
    substeps: int,
    *,
    keep_curves: bool = False,
    bands: bool = True,
    batch: int | None = None,
    shard: bool = True,
    dtype: str = "float64",
    band_steps: np.ndarray | None = None,
    curve_steps: np.ndarray | None = None,
    mean_draws: int | None = None,
) -> dict[str, np.ndarray]:
    """Solve and reduce every setting × draw (see :func:`calibrate._predict._core.predict_arrays`).

    Args:
        cm: The fitted model.
        u: Reference parameters per draw, transformed scale, ``(G, D)``.
        slopes: Natural link slopes per draw, ``(G, L)``.
        x: ``log(h / h_ref)`` per setting and slope row, ``(S, L)``.
        t: Steps of the curves ``(T,)`` (concrete).
        substeps: RK4 steps per interval of ``t`` (the ``rk4`` solver).
        keep_curves: Also return every draw's curves ``(S, G, T, N)``.
        bands: Compute the per-step mean and quantile bands (else ``mean`` and ``bands``
            are left out: final competences and regime codes only).
        batch: Settings per ``lax.map`` step (default: :data:`SOLVES_PER_CHUNK` // draws).
        shard: Split the settings over all devices of the default backend.
        dtype: ``float64``, or ``float32`` (JAX's 64-bit mode is switched off while the
            program runs; the ``quad`` cells up to :data:`FLOAT32_CELL_FACTOR` times wider;
            measured ~4.7x faster on the benchmark's fit, the same regime codes there and
            finals within 4e-6 of float64).
        band_steps: The quantile bands only at these step indices, linear in between
            (:mod:`calibrate._predict._band_points`; None: every step).
        curve_steps: With ``keep_curves``, the curves only at these step indices, and
            ``curve_ok`` ``(S, G)``: every step finite and in [0, 1] (to the tolerance of
            :func:`calibrate._predict._checks.failed_draws`).
        mean_draws: With ``curve_steps``, also ``mean`` ``(S, T, N)``: the per-step mean
            of the first ``mean_draws`` draws.

    Returns:
        ``final`` ``(S, G, N)``, ``codes`` ``(S, G, N)`` int8, and ``mean`` ``(S, T, N)``
        and ``bands`` ``(S, 4, T, N)`` if ``bands``, ``curves`` if ``keep_curves``.
    """
    S, G = x.shape[0], u.shape[0]
    if batch is None:
        batch = max(1, SOLVES_PER_CHUNK // max(G, 1))
    n_dev = len(jax.devices()) if shard else 1
    n_dev = max(1, min(n_dev, S))
    pad = -S % n_dev  # shard_map needs equal shares: pad with reference settings
    xp = np.concatenate([x, np.zeros((pad, x.shape[1]))]) if pad else x
    fast, cell = compiled_model(cm, dtype)
    u, slopes, xp = (np.asarray(a, dtype=dtype) for a in (u, slopes, xp))
    args = (
        fast,
        u,
        slopes,
        xp,
        tuple(np.asarray(t, dtype=float).tolist()),
        int(substeps),
        cell,
        bool(keep_curves),
        bool(bands),
        int(min(batch, -(-xp.shape[0] // n_dev))),
        n_dev,
        CLASSIFIER,
        BAND_METHOD,
        _steps(band_steps),
        _steps(curve_steps),
        None if mean_draws is None else int(mean_draws),
    )
    out = in_dtype(_compiled, args, dtype)
    return {k: np.asarray(v)[:S] for k, v in out.items()}


class Cells(NamedTuple):
    """The ``quad`` cells of a compiled predictor (:meth:`calibrate._quad.QuadGrid.build`):
    at most ``width`` steps, the first ``fine`` output intervals at most ``fine_width``."""

    width: float
    fine: int
    fine_width: float


def compiled_model(cm: CurveModel, dtype: str) -> tuple[CurveModel, Cells]:
    """``cm`` with its Hill regulation written for its one sign structure, and the quad
    cells of a compiled predictor in ``dtype``: the fit's ``dt`` (float32: up to
    :data:`FLOAT32_CELL_FACTOR` times wider after the first :data:`FLOAT32_FINE_GAPS` output
    intervals).

    Raises:
        ConfigError: ``dtype`` is not ``float64`` or ``float32``, or the fit reads logged
            regulators (:mod:`calibrate._regulators`): it cannot forecast a new run.
    """
    if dtype not in ("float64", "float32"):
        raise ConfigError(f"dtype must be 'float64' or 'float32', got {dtype!r}")
    if cm.reg_values is not None:
        raise ConfigError(f"the fit reads logged regulators (--regulators logged): {NO_NEW_RUN}")
    fast = eqx.tree_at(lambda c: c.base, cm, simulate.with_log_hill(cm.base, fixed_structure=True))
    dt = float(cm.config.dt)
    return fast, Cells(dt * (FLOAT32_CELL_FACTOR if dtype == "float32" else 1.0),
                       FLOAT32_FINE_GAPS, dt)  # fmt: skip


def in_dtype(program, args: tuple, dtype: str):
    """``program(*args)`` with JAX's 64-bit mode on (float64) or off (float32: every float64
    array and constant becomes float32)."""
    if dtype == "float32":
        with jax.enable_x64(False), warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Explicitly requested dtype")
            return program(*args)
    with jax.enable_x64(True):
        return program(*args)


def _steps(steps: np.ndarray | None) -> tuple[int, ...] | None:
    """Step indices as a static (hashable) argument of the compiled program."""
    return None if steps is None else tuple(int(i) for i in np.asarray(steps))


def solve_curves(
    model: CurveModel,
    theta: jax.Array,
    t: np.ndarray,
    substeps: int,
    cell: Cells,
    *,
    batch_last: bool = False,
):
    """:meth:`CurveModel.curves` at steps ``t``; ``quad`` (the cells of
    :func:`compiled_model`) with its recurrence as a scan over cells (the same values to
    rounding, faster in a wide vmap). ``batch_last``: the curves as ``(T, N, B)`` (``quad``
    solves the whole batch as one, :class:`calibrate._quad.Quad`'s ``batch``: the same
    values, no transposes)."""
    if model.config.solver == "quad" and model.config.dynamics == "ode":
        quad = Quad.for_steps(
            t, cell.width, scan=True, fine=cell.fine, fine_dt=cell.fine_width, batch=batch_last
        )
        if batch_last:
            A, ok = quad.solve(jax.vmap(model.with_params, out_axes=-1)(theta), t, SOLVE_OPTIONS)
        else:
            A, ok = jax.vmap(lambda th: solve_at(model.with_params(th), t, solver=quad))(theta)
        return readout_curves(A, theta, model.layout, batch_last=batch_last), ok
    A, ok = model.curves(theta, t, substeps)
    return (jnp.transpose(A, (1, 2, 0)), ok) if batch_last else (A, ok)


@eqx.filter_jit
def _compiled(
    cm,
    u,
    slopes,
    x,
    ts,
    substeps,
    cell,
    keep_curves,
    bands,
    batch,
    n_dev,
    classifier,
    band_method,
    band_steps,
    curve_steps,
    mean_draws,
):
    t = np.asarray(ts)  # concrete: the quad solver builds its grid from it
    tj = jnp.asarray(t)
    idx = jnp.asarray(cm.link_index)
    dyn, static = eqx.partition(cm, eqx.is_array)

    def node_codes(states, ok):
        return curve_regimes(tj, states, ok, cm.network.names)

    def draw_codes(A, ok):  # (G, T, N) curves -> (G, N) codes
        if classifier == "batch":
            return classify_batch(jnp.moveaxis(A, 0, -1), ok).T
        return jax.vmap(node_codes)(A, ok).astype(jnp.int8)

    def run(dyn, u, slopes, xs):
        model = eqx.combine(dyn, static)

        def one_setting(xv):
            ug = u.at[:, idx].add(slopes * xv) if idx.size else u
            A, ok = solve_curves(model, model.layout.to_natural(ug), t, substeps, cell)  # (G, T, N)
            ok = jnp.broadcast_to(ok, A.shape[:1])
            res = {
                "final": A[:, -1, :],
                "codes": draw_codes(A, ok),
            }
            if bands:
                res["mean"] = A.mean(axis=0)
                Ab = A if band_steps is None else A[:, np.asarray(band_steps)]
                q = (
                    band_quantiles(Ab)
                    if band_method == "partition"
                    else jnp.quantile(Ab, jnp.asarray(BAND_LEVELS), axis=0)
                )
                if band_steps is not None:  # about the mean curve (interpolate_about)
                    W = interpolation_matrix(t, np.asarray(band_steps)).astype(q.dtype)
                    mk = res["mean"][np.asarray(band_steps)]
                    q = res["mean"][None] + jnp.einsum("tk,qkn->qtn", W, q - mk[None])
                res["bands"] = q
            if keep_curves and curve_steps is not None:
                res["curves"] = A[:, np.asarray(curve_steps)]
                inside = jnp.isfinite(A) & (A >= -TOLERANCE) & (A <= 1 + TOLERANCE)
                res["curve_ok"] = jnp.all(inside, axis=(1, 2))
                if mean_draws is not None:
                    res["mean"] = A[:mean_draws].mean(axis=0)
            elif keep_curves:
                res["curves"] = A
            return res

        return jax.lax.map(one_setting, xs, batch_size=batch)

    return shard_settings(run, n_dev, replicated=3, split=1)(dyn, u, slopes, x)


def shard_settings(run, n_dev: int, *, replicated: int, split: int):
    """``run`` with its last ``split`` arguments (settings first) split over ``n_dev``
    devices and its first ``replicated`` ones on every device (``jax.shard_map``); the
    outputs are concatenated over the settings. ``run`` itself when ``n_dev == 1``."""
    if n_dev <= 1:
        return run
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.asarray(jax.devices()[:n_dev]), ("settings",))
    return jax.shard_map(
        run,
        mesh=mesh,
        in_specs=(P(),) * replicated + (P("settings"),) * split,
        out_specs=P("settings"),
        check_vma=False,
    )

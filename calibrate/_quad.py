"""Quadrature solver of competence kinetics on feed-forward networks (no scan over time).

On an acyclic network without policy lag each node's equation is linear in its own level
once its regulators' trajectories are known: with ``B = 1 - A`` and the node's total rate
``c(t) = r(t) + delta``, ``r = rho [b + (1 - b) drive G(regulators)]``,

    dB/dt = -c(t) B + delta,

so over a cell ``[t_j, t_j+1]`` of a fixed grid, exactly,

    B_{j+1} = E_j B_j + delta J_j,   E_j = exp(-int c),   J_j = int exp(-int_s^{t_j+1} c) ds.

Nodes are solved in topological order, each on the whole grid at once: ``int c`` by the
cubic Hermite interpolant of ``c`` (values, and time derivatives from a forward-mode
derivative of the regulation along the regulators' own slopes), ``J`` as the
constant-rate value ``h (1 - E) / int c`` plus a Simpson correction (so a constant rate,
e.g. a node without regulators, is integrated exactly, and stiff cells stay stable), and
the recurrence by cumulative sums. Against a fixed-step RK4 scan this turns ~60 sequential
steps into a few hundred vectorised operations: the log-joint gradient of the calibrate
benchmark (8 runs x 60 steps, one chain) costs 0.25-0.30 ms instead of 0.7 ms, with a
smaller error (7.9e-5 against 5.2e-4 at the benchmark's MAP, both at 5-step cells).
"""

from __future__ import annotations

from typing import cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

import simulate
from simulate import SolveOptions

from ._solvers import AbstractCurveSolver, finite_levels

__all__ = ["Quad", "QuadGrid", "feedforward_order"]

_CLIP = 25.0  # largest exp-exponent of one cell (e^-25 ~ 1e-11: the cell forgets its past)
_SEGMENT = 24  # cells per cumulative-sum segment (24 * 25 < 709: e^L stays finite)
_JOIN_MATRIX_MAX = 32  # segments joined by an (S, S) matrix up to this many, else a scan


def feedforward_order(model: simulate.Model) -> tuple[int, ...] | None:
    """Topological order of the nodes if :class:`Quad` can solve ``model``, else None.

    That needs competence kinetics, no policy lag and an acyclic wiring, pipeline gates
    counted as edges (every FFL preset, with either gate, qualifies; a feedback or reward
    loop does not).
    """
    if not isinstance(model.kinetics, simulate.CompetenceKinetics) or model.delay_stages:
        return None
    parents = [{j for j, w in enumerate(row) if w} for row in model.network.wiring]
    pipe = model.kinetics.pipeline
    for i, j in enumerate(pipe.source if pipe is not None else ()):
        if j >= 0:  # a pipeline gate reads its source like a regulator
            parents[i].add(j)
    order: list[int] = []
    while len(order) < len(parents):
        ready = [i for i, p in enumerate(parents) if i not in order and p <= set(order)]
        if not ready:
            return None
        order += ready
    return tuple(order)


class QuadGrid(eqx.Module):
    """Fixed grid of :class:`Quad` (built from concrete steps).

    Attributes:
        obs: Grid node of each requested step, shape ``(T,)``.
        h: Cell widths (training steps), ``(M,)``.
    """

    obs: np.ndarray
    h: np.ndarray

    @property
    def nodes(self) -> np.ndarray:
        """The grid's nodes in training steps, from 0, shape ``(M + 1,)`` (a JAX array when
        the grid is traced: passed as an argument of a compiled function)."""
        if isinstance(self.h, jax.Array):
            return cast(
                np.ndarray, jnp.concatenate([jnp.zeros(1, self.h.dtype), jnp.cumsum(self.h)])
            )
        return np.concatenate([[0.0], np.cumsum(np.asarray(self.h, dtype=float))])

    @classmethod
    def build(cls, ts: np.ndarray, dt: float, *, fine: int = 0, fine_dt: float = 0.0) -> QuadGrid:
        """Grid from 0 through the increasing steps ``ts >= 0``: each gap in equal cells of
        at most ``dt`` steps (observed steps are grid nodes), the very first cell split in
        quarter, quarter and half (the error of the benchmark's MAP curves: 8.9e-4 with
        equal cells of 5 steps, 7.8e-5 so graded; fixed-step RK4: 5.2e-4). The first
        ``fine`` gaps (the steps' first intervals, where the fastest rises are) in cells of
        at most ``fine_dt`` steps instead (``fine_dt`` > 0 when ``fine`` > 0)."""
        ts = np.asarray(ts, dtype=float)
        if ts.ndim != 1 or ts.size == 0 or ts[0] < 0 or np.any(np.diff(ts) <= 0):
            raise ValueError("steps must be a non-empty increasing sequence >= 0")
        if fine and not fine_dt > 0:
            raise ValueError(f"fine cells need a width > 0, got {fine_dt!r}")
        nodes, obs, t0, gaps = [0.0], [], 0.0, 0
        for t in ts:
            if t > t0:
                width = fine_dt if gaps < fine else dt
                gaps += 1
                m = max(1, int(np.ceil((t - t0) / width - 1e-9)))
                cells = t0 + (t - t0) * np.arange(1, m + 1) / m
                if t0 == 0.0:  # transients are fastest at step 0: first cell in 1/4, 1/4, 1/2
                    cells = np.concatenate([cells[:1] * (0.25, 0.5), cells])
                nodes.extend(cells)
            obs.append(len(nodes) - 1)
            t0 = t
        return cls(np.asarray(obs), np.diff(np.asarray(nodes)))


def _rows(a: jax.Array, index: np.ndarray) -> jax.Array:
    """``a[index]`` for a concrete increasing ``index``, as static slices of its runs of
    consecutive rows (a gather with an index array is a scalar loop on CPU); a gather when
    ``index`` is traced (a grid passed as an argument of a compiled function)."""
    if isinstance(index, jax.Array):  # traced (or on a device): a gather
        return a[index]
    index = np.asarray(index)
    cut = np.flatnonzero(np.diff(index) != 1) + 1
    runs = [(int(r[0]), int(r[-1]) + 1) for r in np.split(index, cut) if r.size]
    if len(runs) == 1 and runs[0] == (0, a.shape[0]):
        return a
    return jnp.concatenate([a[lo:hi] for lo, hi in runs], axis=0)


def _decays(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(exp(-x), exp(-x / 2), (1 - exp(-x)) / x)`` for ``x >= 0`` from one ``expm1``
    (``1 - e^-x = -m (2 + m)`` with ``m = expm1(-x / 2)``: no cancellation at small
    ``x``), stable and differentiable at 0."""
    m = jnp.expm1(-0.5 * x)
    half = 1.0 + m
    small = x < 1e-6
    xs = jnp.where(small, 1.0, x)
    return half * half, half, jnp.where(small, 1.0 - 0.5 * x, -m * (2.0 + m) / xs)


def _node_levels(
    c: jax.Array,
    dc: jax.Array,
    delta: jax.Array,
    A0: jax.Array,
    h: np.ndarray,
    scan: bool = False,
    cut: tuple[jax.Array, jax.Array, jax.Array] | None = None,
) -> jax.Array:
    """Levels ``A`` at every grid node, ``(M + 1,)``, of ``dA/dt = (c - delta)(1 - A) -
    delta A``, from the total rate ``c`` and its time derivative ``dc`` at the nodes
    (``scan``: the recurrence as a scan over cells, see :class:`Quad`). ``cut = (s, r,
    dr)``: per cell the share ``s`` of a part ``r`` (slopes ``dr``, at the nodes) of ``c``
    is taken out of the cell's rate (a flip pulse's slower rate)."""
    M = h.shape[0]
    if M == 0:
        return jnp.reshape(A0, (1,))
    w = jnp.asarray(h)  # cell widths

    def hermite(c, dc):  # integrals of the cubic Hermite interpolant over cells, first halves
        c0, c1, d0, d1 = c[:-1], c[1:], dc[:-1], dc[1:]
        whole = w * 0.5 * (c0 + c1) + w * w / 12.0 * (d0 - d1)
        return whole, w * (13 / 32 * c0 + 3 / 32 * c1) + w * w * (11 / 192 * d0 - 5 / 192 * d1)

    dL, dH = hermite(c, dc)
    if cut is not None:
        cL, cH = hermite(cut[1], cut[2])
        dL, dH = dL - cut[0] * cL, dH - cut[0] * cH
    dL = jnp.clip(dL, 0.0, _CLIP)
    back = jnp.clip(dL - dH, 0.0, _CLIP)  # int c over the second half
    E, half, phi1 = _decays(dL)
    J = w * (phi1 + (2.0 / 3.0) * (jnp.exp(-back) - half))
    if scan:

        def cell(B, ef):
            B = ef[0] * B + ef[1]
            return B, B

        _, Bs = jax.lax.scan(cell, 1.0 - A0, (E, delta * J))
        return jnp.concatenate([jnp.asarray(A0)[None], 1.0 - Bs])
    # B_{j+1} = E_j B_j + delta J_j, i.e. B_j = e^{-L_j} (B_0 + sum_{k<=j} delta J_k e^{L_k})
    # with L the cumulative dL: summed within segments of _SEGMENT cells (e^L finite), and
    # the segments joined by a small (S, S) matrix of decays e^{-(C_s - C_q)} <= 1
    # (cumulative sums as products with a triangular matrix: one kernel, where XLA's CPU
    # cumsum is a chain of reduce-windows)
    S = -(-M // _SEGMENT)
    pad = S * _SEGMENT - M
    upper = np.triu(np.ones((_SEGMENT, _SEGMENT)))
    L = jnp.pad(dL, (0, pad)).reshape(S, _SEGMENT) @ upper
    decay = jnp.exp(-L)
    inflow = decay * ((jnp.pad(delta * J, (0, pad)).reshape(S, _SEGMENT) * jnp.exp(L)) @ upper)
    if S == 1:
        start = jnp.reshape(1.0 - A0, (1,))
    elif S <= _JOIN_MATRIX_MAX:
        lower = np.tril(np.ones((S, S)), -1)  # segment q < s feeds the start of s
        C = lower @ L[:, -1]  # L before each segment, (S,)
        W = jnp.exp(-jnp.maximum(C[:, None] - (C + L[:, -1])[None, :], 0.0)) * lower
        start = (1.0 - A0) * jnp.exp(-C) + W @ inflow[:, -1]
    else:  # long grids: the same join as a parallel prefix of B -> decay B + inflow

        def compose(a, b):
            return a[0] * b[0], b[0] * a[1] + b[1]

        d_all, f_all = jax.lax.associative_scan(compose, (decay[:, -1], inflow[:, -1]))
        ends = d_all * (1.0 - A0) + f_all  # B at the end of every segment
        start = jnp.concatenate([jnp.reshape(1.0 - A0, (1,)), ends[:-1]])
    Bs = decay * start[:, None] + inflow
    return jnp.concatenate([jnp.reshape(A0, (1,)), 1.0 - Bs.reshape(-1)[:M]])


def _constant_levels(c: jax.Array, s: jax.Array, A0: jax.Array, t: ArrayLike) -> jax.Array:
    """Levels at the grid nodes ``t`` ``(M + 1,)`` (steps) of ``dB/dt = -c B + s`` (``B =
    1 - A``) for a constant rate ``c >= 0`` and source ``s``: ``B(t) = B0 e^{-c t} + s t
    phi1(c t)`` (what the cell recurrence gives for a constant rate, to rounding; exact, no
    clip)."""
    t = jnp.asarray(t)
    E, _, phi1 = _decays(jnp.maximum(c, 0.0) * t)
    return 1.0 - ((1.0 - A0) * E + s * t * phi1)


class Quad(AbstractCurveSolver):
    """The quadrature solver of a feed-forward model (see :func:`feedforward_order`), at
    the steps ``grid`` was built from, input on from step 0 (``options`` are not used).

    ``scan`` runs the recurrence ``B_{j+1} = E_j B_j + delta J_j`` as a scan over the cells
    instead of segment sums (the same values to rounding, 6e-15 on the predict benchmark):
    slower for one solve and its gradient, but under a wide ``vmap`` (thousands of solves,
    no gradient, as in :func:`calibrate.predict`) every step is one vector operation and
    the solve took 0.6x the time of the segment sums.

    Attributes:
        grid: The grid (:meth:`QuadGrid.build` from the steps to solve at, or
            :meth:`for_steps`).
        scan: The recurrence as a scan.
        batch: The model is a batch of ``B`` models, every array leaf with a trailing axis
            of ``B`` (``jax.vmap(cm.with_params, out_axes=-1)(theta)``), solved as one:
            each operation acts on ``(cells, B)`` arrays, so the scan reads its rows with
            no transpose, and the levels come back as ``(T, N, B)`` with ``ok`` ``(B,)``
            (the values of one solve each; needs ``scan`` and a network with its sign
            structure fixed, :func:`simulate.with_log_hill`). Under a ``vmap`` of single
            solves the batch is first and every scan's inputs and outputs are transposed.
        flip: Per node and cell, the share ``phi`` of the cell inside a ``flip``
            spurious-reward pulse (:func:`calibrate._pulses.lagged_shares`), shape ``(N, M)``
            in [0, 1], or None (no pulse). Inside a pulse a node is driven back toward its
            start level ``A0`` at ``flip_rate`` times its learning rate ``r``:
            ``dA/dt = r [(1 - phi)(1 - A) + kappa phi (A0 - A)] - delta A`` (a reward
            ``1 - r`` unlearns what was learned; it moves a policy only where its samples
            differ, so at a fraction ``kappa`` of the rate, toward the base's level).
        flip_rate: ``kappa``, the pulse's rate as a share of ``r`` (> 0), per node
            ``(N,)`` (or one for all).
        regulators: Per node, the levels its out-edges' Hill terms read at the grid's nodes,
            shape ``(N, M + 1)``, with their time derivatives ``regulator_slopes`` (logged
            regulators, :mod:`calibrate._regulators`), or None: the solved levels.
        gates_logged: Whether the pipeline gates read ``regulators`` too (static; default
            False: they read the solved levels). llm_runs feeds each role its upstream
            role's sampled outputs while training, whose quality is the logged training
            competence (``FitConfig(regulators="logged-gates")``).
    """

    grid: QuadGrid
    scan: bool = eqx.field(static=True, default=False)
    batch: bool = eqx.field(static=True, default=False)
    flip: jax.Array | None = None
    flip_rate: jax.Array | float = 1.0
    regulators: jax.Array | None = None
    regulator_slopes: jax.Array | None = None
    gates_logged: bool = eqx.field(static=True, default=False)

    @classmethod
    def for_steps(
        cls,
        ts: np.ndarray,
        dt: float,
        *,
        scan: bool = False,
        fine: int = 0,
        fine_dt: float = 0.0,
        batch: bool = False,
    ) -> Quad:
        """Quadrature on the steps ``ts`` (concrete) in cells of at most ``dt`` steps (the
        first ``fine`` gaps in cells of at most ``fine_dt``, :meth:`QuadGrid.build`)."""
        return cls(QuadGrid.build(ts, dt, fine=fine, fine_dt=fine_dt), scan, batch)

    def solve(
        self, model: simulate.Model, ts: ArrayLike, options: SolveOptions
    ) -> tuple[jax.Array, jax.Array]:
        """``(A, ok)``: levels ``(T, N)`` and a finiteness flag (``batch``: ``(T, N, B)``
        and ``(B,)``).

        Raises:
            ValueError: ``model`` is not feed-forward with competence kinetics, ``ts`` are
                not as many steps as the grid's, or ``batch`` without its conditions.
        """
        grid, scan, batch = self.grid, self.scan, self.batch
        if batch and not (scan and getattr(model.network, "fixed", None) is not None):
            raise ValueError(
                "a batch-last quad solve runs its recurrence as a scan, on a network with "
                "its sign structure fixed (simulate.with_log_hill(..., fixed_structure=True))"
            )
        order = feedforward_order(model)
        kin, net = model.kinetics, model.network
        if order is None or not isinstance(kin, simulate.CompetenceKinetics):
            raise ValueError(
                "the quad solver needs competence kinetics on an acyclic network "
                "without lag; use RK4 or an adaptive solve"
            )
        if batch and self.regulators is not None:
            raise ValueError("a batch-last quad solve takes no logged regulators")
        if jnp.shape(ts) != self.grid.obs.shape:
            raise ValueError(
                f"the quad grid was built for {self.grid.obs.shape[0]} steps, got ts of "
                f"shape {jnp.shape(ts)}: build it from the steps to solve at"
            )
        # batch last: every array leaf of the model has a trailing axis of B solves, and
        # the grid's arrays get a trailing unit axis to broadcast against it
        nb = (jnp.shape(kin.rho)[-1],) if batch else ()
        h, nodes = (grid.h[:, None], grid.nodes[:, None]) if batch else (grid.h, grid.nodes)
        shape = (grid.h.shape[0] + 1, *nb)
        x = model.input_value(jnp.asarray(1.0))
        drive = jnp.where(jnp.reshape(jnp.asarray(net.inputs), (-1, *(1,) * len(nb))), x, 1.0)
        levels: list = [None] * model.size  # levels and time derivatives, in topological order
        slopes: list = [None] * model.size
        pipe, w, flip = kin.pipeline, kin.weight, self.flip
        logged = self.regulators is not None
        reg = list(self.regulators) if self.regulators is not None else [None] * model.size
        reg_dot = (
            list(self.regulator_slopes)
            if self.regulator_slopes is not None
            else [None] * model.size
        )

        def rate(lv: list, rg: list, i: int) -> tuple[jax.Array, jax.Array]:
            """``(r_i, f_i)``: the learning rate (times the pipeline gate) and the weight
            factor; with weights ``f = 1 - w + w G`` scales the whole rate (forgetting too)
            and ``G`` leaves the bracket (simulate.CompetenceKinetics). ``G`` reads the
            logged regulators ``rg`` where given, else the levels ``lv``; the pipeline gate
            ``P`` reads ``rg`` too under ``gates_logged``."""
            gain = kin.rho[i] * (1.0 - kin.b[i]) * drive[i]
            G = net.node_regulation(i, rg if logged else lv)
            src = rg if logged and self.gates_logged else lv
            P = None if pipe is None or pipe.source[i] < 0 else cast(jax.Array, pipe.gate(i, src))
            if w is None:
                r = kin.rho[i] * kin.b[i] + gain * G
                return (r if P is None else P * r), jnp.ones(())
            f = (1.0 - w[i]) + w[i] * G
            r = kin.rho[i] * kin.b[i] + gain
            return f * (r if P is None else P * r), f

        for i in order:
            if flip is None and not any(net.wiring[i]) and (pipe is None or pipe.source[i] < 0):
                r, f = rate(levels, reg, i)  # no regulator, no gate: a constant rate, closed form
                d = kin.delta[i] * (1.0 if w is None else f)
                A = _constant_levels(r + d, d, kin.A0[i], nodes)
                levels[i] = A
                slopes[i] = r * (1.0 - A) - d * A
                continue
            (r, f), (dr, df) = jax.jvp(
                lambda lv, rg, i=i: rate(lv, rg, i), (levels, reg), (slopes, reg_dot)
            )
            r, dr = jnp.broadcast_to(r, shape), jnp.broadcast_to(dr, shape)
            d = kin.delta[i]
            a0, cut = kin.A0[i], None
            if w is None and flip is None:  # dB/dt = -(r + delta) B + delta
                c, dc, source, gain, target = r + d, dr, d, 1.0, 1.0
            else:  # dB/dt = -(r m + f delta) B + f delta + r k phi (1 - A0), m = 1 - (1 - k) phi
                f, df = jnp.broadcast_to(f, shape), jnp.broadcast_to(df, shape)
                c, dc = r + f * d, dr + df * d
                phi = (  # per cell (one pulse for every solve of a batch)
                    jnp.zeros((shape[0] - 1, *nb))
                    if flip is None
                    else jnp.reshape(flip[i], (-1, *(1,) * len(nb)))
                )
                k = jnp.broadcast_to(jnp.asarray(self.flip_rate), (model.size,))[i]
                cut = ((1.0 - k) * phi, r, dr)
                source = 0.5 * (f[:-1] + f[1:]) * d + 0.5 * (r[:-1] + r[1:]) * k * phi * (1 - a0)
                pn = jnp.concatenate([phi, phi[-1:]])  # at nodes: right-continuous
                gain, target = 1.0 - (1.0 - k) * pn, (1.0 - pn + k * pn * a0)
            A = _node_levels(c, dc, source, a0, h, scan, cut)
            levels[i] = A
            slopes[i] = r * (target - gain * A) - (d if w is None else f * d) * A
        if batch:  # (T, N, B), ok per solve (B,)
            return finite_levels(_rows(jnp.stack(levels, axis=1), grid.obs), axis=(0, 1))
        return finite_levels(_rows(jnp.stack(levels, axis=-1), grid.obs))

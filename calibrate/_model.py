"""The numpyro model: simulate's competence kinetics solved by diffrax inside the likelihood.

Parameters are laid out in one vector (see :class:`Layout`). Every latent site is a
standard normal (non-centred): the global vector ``z`` maps to natural parameters via
``theta = T(loc + scale * z + links + random effects)`` with ``T = exp`` (rho, delta, K, n)
or ``sigmoid`` (b, A0). All runs are solved at once (``vmap`` over runs) on the union of
the observed steps; the input schedule is constant on from step 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import simulate

from ._config import ConfigError, FitConfig
from ._link_rows import LinkRow
from ._map import solve_map
from ._network import Layout
from ._pulses import lagged_shares
from ._quad import Quad, QuadGrid
from ._readout import readout_curves
from ._regulators import NO_NEW_RUN, grid_regulators
from ._solvers import RK4, solve_at

__all__ = ["CurveModel", "Layout"]

_EPS = 1e-9
_OWN = ("lag", "flip", "flip_lag", "mid", "width")  # the fit's own parameters, not the model's


class CurveModel(eqx.Module):
    """Everything the likelihood needs, precomputed as arrays.

    An equinox Module: the arrays (data, prior locations, network signs) are leaves and the
    labels/options static, so one compiled likelihood serves every dataset of the same
    shape and every network of the same wiring (e.g. all FFL presets). For NUTS the edge
    signs and gates are fixed at trace time instead (``simulate.with_log_hill``), a faster
    gradient at the price of one compile per sign structure.

    Attributes:
        network: The network (structure; K, n are overwritten by the parameters).
        name: Label of the network (e.g. ``C1-AND``).
        base: The simulate model the parameters are written into.
        layout: Free-parameter layout.
        config: Fit options.
        runs: Run labels (order of the run axis).
        ts: Union of observed steps, shape ``(T,)``.
        run_idx: Per observation, the run index.
        t_idx: Per observation, the index into ``ts``.
        node_idx: Per observation, the node index.
        n_eval: Per observation, the evaluation size.
        k: Per observation, the observed successes.
        re_index: Per random-effect column, the index into the parameter vector.
        re_group: Per random-effect column, the index of its sd (one sd per base).
        re_bases: Base names with random effects.
        link_index: Per slope, the index into the parameter vector.
        link_x: Per slope, the centred transformed covariate ``T(h) - mean T(h)`` of each
            run (``T`` the link's transform: log, log1p or linear), shape ``(L, R)``.
        link_rows: Per slope, its structured record (:class:`calibrate._link_rows.LinkRow`:
            parameter, covariate, transform, the runs' centre ``mean T(h)``); the labels
            ``c[rho[X]~lr]`` (:attr:`link_names`) derive from them.
        log_choose: Sum of the log binomial coefficients ``log C(n_eval, k)`` (a constant
            of the binomial log-likelihood, computed once).
        substeps: RK4 steps per interval of ``ts`` (``rk4``).
        quad: The quadrature grid on ``ts`` (``quad``).
        map_ts: ``ts`` as a static tuple (``map`` dynamics: the step count is static).
        run_weights: Per run and node, the run's known edge weight ``w`` in [0, 1]
            (``FitConfig.edge_weights``; data, not fitted), shape ``(R, N)``; None: none.
        pulse_windows: Per run and node, its flip pulses' windows (``FitConfig.pulses``;
            ``()``: none; quad only); :attr:`run_windows`: the same as one array.
        reg_steps: The logged regulators' steps ``(S,)`` (``FitConfig.regulators ==
            "logged"``, :mod:`calibrate._regulators`), or None.
        reg_values: Per run and node, the logged training competence at ``reg_steps``,
            ``(R, N, S)``, or None.
        reg_grid: ``reg_values`` and their slopes at the nodes of :attr:`quad`, each ``(R,
            N, M + 1)`` (:func:`calibrate._regulators.grid_regulators`, once per model: the
            likelihood's solves read them), or None.
    """

    network: simulate.Network
    name: str = eqx.field(static=True)
    base: simulate.Model
    layout: Layout
    config: FitConfig = eqx.field(static=True)
    runs: tuple[str, ...] = eqx.field(static=True)
    ts: np.ndarray
    run_idx: np.ndarray
    t_idx: np.ndarray
    node_idx: np.ndarray
    n_eval: np.ndarray
    k: np.ndarray
    re_index: np.ndarray
    re_group: np.ndarray
    re_bases: tuple[str, ...] = eqx.field(static=True)
    link_index: np.ndarray
    link_x: np.ndarray
    link_rows: tuple[LinkRow, ...] = eqx.field(static=True)
    log_choose: np.ndarray
    substeps: int = eqx.field(static=True, default=1)
    quad: QuadGrid | None = None
    map_ts: tuple[float, ...] = eqx.field(static=True, default=())
    run_weights: np.ndarray | None = None
    pulse_windows: tuple = eqx.field(static=True, default=())
    run_windows: np.ndarray | None = None
    reg_steps: np.ndarray | None = None
    reg_values: np.ndarray | None = None
    reg_grid: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def link_names(self) -> tuple[str, ...]:
        """Per slope, its summary label ``c[rho[X]~lr]``."""
        return tuple(r.label for r in self.link_rows)

    @property
    def n_runs(self) -> int:
        """Number of runs R."""
        return len(self.runs)

    @property
    def quad_only(self) -> bool:
        """True when only the quad solver solves these runs (pulses, logged regulators)."""
        return bool(self.pulse_windows) or self.reg_values is not None

    @property
    def pooled(self) -> bool:
        """True when every run shares all parameters (then one solve serves all runs)."""
        per_run = self.run_weights is not None or self.quad_only
        return not self.re_index.size and not self.link_index.size and not per_run

    def weights_for(self, theta_runs: jax.Array) -> np.ndarray | None:
        """:attr:`run_weights` if ``theta_runs`` has a row per run, else None (unweighted)."""
        return self.run_weights if theta_runs.shape[0] == self.n_runs else None

    # -- parameters -------------------------------------------------------------------
    def run_params(self, z, c=None, tau_z=None, eps=None) -> jax.Array:
        """Natural parameters per run, shape ``(R, D)`` (``(1, D)`` if :attr:`pooled`)."""
        lay = self.layout
        u = jnp.asarray(lay.loc) + jnp.asarray(lay.scale) * z
        u = jnp.broadcast_to(u, (1 if self.pooled else self.n_runs, lay.size))
        if self.link_index.size and c is not None:
            sd = self.config.priors.slope_sd
            contrib = (sd * c)[:, None] * jnp.asarray(self.link_x)  # (L, R)
            u = u.at[:, self.link_index].add(contrib.T)
        if self.re_index.size and tau_z is not None and eps is not None:
            pr = self.config.priors
            tau = jnp.exp(math.log(pr.re_median) + pr.re_sd * tau_z)  # (G,)
            u = u.at[:, self.re_index].add(tau[self.re_group][None, :] * eps)
        return lay.to_natural(u)

    def theta(self, params: dict[str, jax.Array]) -> jax.Array:
        """:meth:`run_params` from a dict of latent sites (as the sampler returns them)."""
        return self.run_params(params["z"], params.get("c"), params.get("tau_z"), params.get("eps"))

    def with_params(self, theta: jax.Array, weight: jax.Array | None = None) -> simulate.Model:
        """The simulate model with natural parameter vector ``theta`` (D,) written in (a
        ``lag`` in training steps as the Erlang chain's ``tau = eta * lag``, or not at all:
        the ``stale`` lag is the map's, :meth:`curves`), and node weights ``weight`` (N,)."""
        if weight is not None:
            return simulate.with_edge_weights(self.with_params(theta), weight)
        names, own = self.layout.names, _OWN
        keep = np.array([i for i, b in enumerate(self.layout.bases) if b not in own])
        if keep.size == len(names):
            return simulate.param_setter(self.base, names)(self.base, theta)
        m = simulate.param_setter(self.base, [names[i] for i in keep])(self.base, theta[keep])
        if "lag" in names and self.config.lag == "erlang":
            m = eqx.tree_at(lambda mm: mm.tau, m, m.eta * theta[names.index("lag")])
        return m

    def curves(
        self,
        theta_runs: jax.Array,
        ts=None,
        substeps: int | None = None,
        solver: str | None = None,
        dt: float | None = None,
        *,
        latent: bool = False,
    ) -> tuple[jax.Array, jax.Array]:
        """Mean observed competences ``(R, T, N)`` and per-run ok flags, at ``ts`` (default
        data): the solved levels read out by ``config.readout`` (:mod:`calibrate._readout`;
        ``identity`` or ``latent``: the levels themselves).

        ``substeps`` (static): RK4 steps per interval of ``ts`` (default: the data's,
        :func:`fixed_substeps`); ``solver`` overrides ``config.solver``, ``dt`` the quad
        cell. With ``quad`` or the ``map`` dynamics (:mod:`calibrate._map`), ``ts`` other
        than the data's must be concrete. A row per run solves each run with its own
        weights and pulses (pulses: the quad solver only, ``ConfigError`` otherwise)."""
        A, ok = self._levels(theta_runs, ts, substeps, solver, dt)
        return (A if latent else readout_curves(A, theta_runs, self.layout)), ok

    def _levels(self, theta_runs, ts, substeps, solver, dt) -> tuple[jax.Array, jax.Array]:
        """:meth:`curves` before the readout."""
        cfg = self.config
        pulsed = bool(self.pulse_windows) and theta_runs.shape[0] == self.n_runs
        method = solver or cfg.solver
        if pulsed and (cfg.dynamics == "map" or method != "quad"):
            raise ConfigError("runs with pulses are solved by the quad solver only")
        logged = self.reg_values is not None
        if logged and (theta_runs.shape[0] != self.n_runs or method != "quad"):
            raise ConfigError(f"logged regulators (solved by the quad solver only): {NO_NEW_RUN}")
        if cfg.dynamics == "map":  # exact: no solver, no substeps (ts concrete)
            t = np.asarray(self.map_ts if ts is None else ts, dtype=float)
            stale = cfg.lag == "stale"
            j = self.layout.names.index("lag") if stale else 0
            return jax.vmap(
                lambda th, w: solve_map(
                    self.with_params(th, w), t, lag=th[j] if stale else None, max_lag=cfg.max_lag
                )
            )(theta_runs, self.weights_for(theta_runs))
        grid = self.ts if ts is None else ts
        qg = None
        if method == "quad":
            qg = self.quad if ts is None and dt is None else None
            if qg is None:
                steps = np.asarray(self.ts if ts is None else ts)
                qg = QuadGrid.build(steps, cfg.dt if dt is None else dt)
            how = Quad(qg)
        else:
            grid = jnp.asarray(grid, dtype=float)
            how = RK4(self.substeps if substeps is None else substeps) if method == "rk4" else None
        opts = cfg.solve_options()
        win, bases = self.run_windows if pulsed and qg is not None else None, self.layout.bases
        kappa, lag = np.array(bases) == "flip", bases.index("flip_lag") if win is not None else 0
        regs = (None, None)
        if qg is self.quad and self.reg_grid is not None:  # the data's grid: computed once
            regs = self.reg_grid
        elif self.reg_steps is not None and self.reg_values is not None and qg is not None:
            regs = grid_regulators(self.reg_steps, self.reg_values, qg.nodes)  # another grid

        def f(th, w, win, rg, rg_dot):  # a pulse acts on its share of each cell, after its lag
            how_run = how
            if win is not None or rg is not None:
                g = cast(QuadGrid, qg)
                how_run = Quad(
                    g,
                    flip=None if win is None else lagged_shares(win, g.h, th[lag]),
                    flip_rate=th[kappa] if win is not None else 1.0,
                    regulators=rg,
                    regulator_slopes=rg_dot,
                    gates_logged=cfg.regulators == "logged-gates",
                )
            return solve_at(self.with_params(th, w), grid, solver=how_run, options=opts)

        return jax.vmap(f)(theta_runs, self.weights_for(theta_runs), win, *regs)

    def mean_obs(self, theta_runs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Mean competence at each observation, and an all-runs-ok flag."""
        A, ok = self.curves(theta_runs)
        runs = jnp.zeros_like(self.run_idx) if self.pooled else self.run_idx
        mu = A[runs, self.t_idx, self.node_idx]
        return jnp.clip(mu, _EPS, 1 - _EPS), jnp.all(ok)

    def phi(self, z_phi) -> jax.Array:
        """Beta-binomial concentration from its latent."""
        pr = self.config.priors
        return jnp.exp(math.log(pr.phi_median) + pr.phi_sd * z_phi)

    def obs_dist(self, mu, phi=None) -> Any:
        """numpyro's distribution of the successes given the means (imported here)."""
        import numpyro.distributions as dist

        n = jnp.asarray(self.n_eval)
        if self.config.likelihood == "betabinomial":
            return dist.BetaBinomial(mu * phi, (1 - mu) * phi, total_count=n)
        return dist.Binomial(total_count=n, probs=mu)

    def sites(self) -> dict[str, tuple[int, ...]]:
        """Latent site name → shape (all standard normal)."""
        out: dict[str, tuple[int, ...]] = {"z": (self.layout.size,)}
        if self.link_index.size:
            out["c"] = (int(self.link_index.size),)
        if self.re_index.size:
            out["tau_z"] = (len(self.re_bases),)
            out["eps"] = (self.n_runs, int(self.re_index.size))
        if self.config.likelihood == "betabinomial":
            out["z_phi"] = ()
        return out

    # -- numpyro ------------------------------------------------------------------------
    def model(self, observe: bool = True) -> None:
        """The numpyro model (call with no arguments)."""
        import numpyro
        import numpyro.distributions as dist

        latent = {
            name: numpyro.sample(
                name, dist.Normal(0.0, 1.0).expand(list(shape)).to_event(len(shape))
            )
            for name, shape in self.sites().items()
        }
        theta = self.run_params(
            latent["z"], latent.get("c"), latent.get("tau_z"), latent.get("eps")
        )
        mu, ok = self.mean_obs(theta)
        numpyro.factor("solver_ok", jnp.where(ok, 0.0, -1e8))
        phi = self.phi(latent["z_phi"]) if "z_phi" in latent else None
        if observe:
            numpyro.factor("loglik", self.loglik(mu, phi))
        else:
            numpyro.sample("obs", self.obs_dist(mu, phi))

    def loglik(self, mu, phi=None) -> jax.Array:
        """Log-likelihood of all the successes given the means (a scalar): for the binomial
        the kernel ``k log mu + (n - k) log(1 - mu)`` plus :attr:`log_choose`, which spares
        the sampler three ``gammaln`` per observation and gradient."""
        if self.config.likelihood == "betabinomial":
            return jnp.sum(self.obs_dist(mu, phi).log_prob(jnp.asarray(self.k)))
        k, n = jnp.asarray(self.k, dtype=float), jnp.asarray(self.n_eval, dtype=float)
        return jnp.asarray(self.log_choose) + jnp.sum(k * jnp.log(mu) + (n - k) * jnp.log1p(-mu))

    def log_joint_fn(self) -> Callable[[dict[str, jax.Array]], jax.Array]:
        """``params -> log joint density`` (all sites unconstrained)."""
        import numpyro.distributions as dist

        def f(params):
            lp = 0.0
            for name in self.sites():
                lp = lp + jnp.sum(dist.Normal(0.0, 1.0).log_prob(params[name]))
            theta = self.theta(params)
            mu, ok = self.mean_obs(theta)
            phi = self.phi(params["z_phi"]) if "z_phi" in params else None
            return lp + jnp.where(ok, self.loglik(mu, phi), -1e8)

        return f

    def pointwise_loglik(self, params: dict[str, jax.Array]) -> jax.Array:
        """Log-likelihood of each observation, shape ``(n_obs,)``, for one draw."""
        theta = self.theta(params)
        mu, _ = self.mean_obs(theta)
        phi = self.phi(params["z_phi"]) if "z_phi" in params else None
        return self.obs_dist(mu, phi).log_prob(jnp.asarray(self.k))

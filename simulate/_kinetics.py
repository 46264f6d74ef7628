"""Kinetics on the network machinery, the input schedule, and the full model.

Two kinetics share :class:`~simulate.Network`:

* :class:`AlonKinetics` — the dimensionless textbook FFL form (Alon; Bois, Caltech BE150)::

      dA_i/dt = gamma_i * (beta_i * G_i(A) - A_i)

  For the FFL presets (X→Y, X→Z, Y→Z with K[X->Y] = 1/kappa, K[X->Z] = K[Y->Z] = 1,
  beta[Y] = beta, gamma[Y] = 1, beta[Z] = 1, gamma[Z] = gamma) this is exactly
  ``dy/dt = beta f(kappa x) - y`` and ``(1/gamma) dz/dt = f(x, y) - z``. Input nodes without
  regulators are algebraic: their level *is* the input ``x(t)``.

* :class:`CompetenceKinetics` — bounded competences of learning agents, in [0, 1]::

      dA_i/dt = rho_i [b_i + (1 - b_i) G_i(A)] (1 - A_i) - delta_i A_i

  ``rho_i`` learning rate (1/step), ``b_i`` basal learning (in [0, 1]), ``delta_i``
  forgetting (1/step). Input nodes have ``G_i`` multiplied by the input ``x(t)`` in [0, 1].
  Optional pipeline gates (:mod:`simulate._pipeline`) scale the learning term of their
  targets by ``P_i(A)``; optional node weights ``w_i`` in [0, 1]
  (:mod:`simulate._edge_weight`) make the regulation llm_runs' learning-rate multiplier:
  the whole rate (learning and forgetting) is scaled by ``1 - w_i + w_i G_i`` and ``G_i``
  leaves the bracket.

:class:`Model` bundles network, kinetics and the options that make training oscillate:
policy lag (Erlang delay by the linear-chain trick), learning-step size ``eta`` for the
discrete map, and gradient-noise amplitudes ``sigma``.
"""

from __future__ import annotations

import abc
import itertools
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from ._network import AbstractNetwork
from ._pipeline import Pipeline
from .spec import SpecError

__all__ = ["AlonKinetics", "CompetenceKinetics", "Kinetics", "Model", "Schedule"]


class Schedule(eqx.Module):
    """Piecewise-constant input level ``s(t)``: 0 before ``times[0]``, then ``levels[k]``.

    Attributes:
        times: Switch times, increasing, shape ``(S,)`` (time units of the kinetics).
        levels: Level from each switch on, shape ``(S,)`` (1 = on, 0 = off).
    """

    times: Array
    levels: Array

    def __check_init__(self) -> None:
        t = np.asarray(self.times) if not isinstance(self.times, jnp.ndarray) else None
        if t is not None and (t.ndim != 1 or np.any(np.diff(t) <= 0)):
            raise SpecError(f"schedule times must be strictly increasing, got {t.tolist()}")

    @classmethod
    def parse(cls, text: str) -> Schedule:
        """Parse ``"on@0,off@10"``; a level may be a number, e.g. ``"0.5@5"``."""
        times, levels = [], []
        for part in (p.strip() for p in str(text).split(",") if p.strip()):
            if "@" not in part:
                raise SpecError(f"schedule item {part!r} must look like on@T, off@T or LEVEL@T")
            what, when = part.split("@", 1)
            word = what.strip().lower()
            try:
                level = {"on": 1.0, "off": 0.0}[word] if word in ("on", "off") else float(word)
                t = float(when)
            except ValueError:
                raise SpecError(f"schedule item {part!r}: cannot read level or time") from None
            if not (np.isfinite(level) and np.isfinite(t)) or level < 0:
                raise SpecError(f"schedule item {part!r}: level must be >= 0 and time finite")
            if t < 0:  # before any solve starts: the item would mean nothing
                raise SpecError(
                    f"schedule item {part!r}: time must be >= 0 (time 0 is the start of training)"
                )
            times.append(t)
            levels.append(level)
        if not times:
            raise SpecError("schedule is empty; write e.g. on@0,off@10")
        if any(b <= a for a, b in itertools.pairwise(times)):
            raise SpecError(f"schedule times must be strictly increasing, got {times}")
        return cls(jnp.asarray(times, dtype=float), jnp.asarray(levels, dtype=float))

    @classmethod
    def step(cls, t_on: float = 0.0) -> Schedule:
        """Input switched on at ``t_on`` and left on."""
        return cls(jnp.asarray([t_on], dtype=float), jnp.asarray([1.0]))

    def __call__(self, t: Array) -> Array:
        idx = jnp.searchsorted(self.times, t, side="right") - 1
        return jnp.where(idx >= 0, self.levels[jnp.clip(idx, 0, None)], 0.0)


class Kinetics(eqx.Module):
    """Abstract base: per-node rate parameters and the node-wise rate law.

    A concrete (final) kinetics declares ``A0``, ``x0`` and its rate parameters as fields
    and implements :meth:`rates`: :class:`AlonKinetics`, :class:`CompetenceKinetics`.
    """

    A0: eqx.AbstractVar[Array]
    x0: eqx.AbstractVar[Array]
    name: ClassVar[str] = "kinetics"
    algebraic_sources: ClassVar[bool] = False
    bounded: ClassVar[bool] = False
    node_params: ClassVar[tuple[str, ...]] = ()

    @abc.abstractmethod
    def rates(self, A: Array, G: Array, drive: Array) -> Array:
        """``dA/dt`` given own levels ``A``, regulation ``G`` and input drive (1/time)."""


class AlonKinetics(Kinetics):
    """Dimensionless textbook kinetics ``dA_i/dt = gamma_i (beta_i drive_i G_i - A_i)``.

    Attributes:
        beta: Production (maximal level), shape ``(N,)``.
        gamma: Turnover rate relative to Y's, shape ``(N,)``.
        A0: Initial levels, shape ``(N,)``.
        x0: Input level when the schedule is on.
    """

    beta: Array
    gamma: Array
    A0: Array
    x0: Array
    name: ClassVar[str] = "alon"
    algebraic_sources: ClassVar[bool] = True
    node_params: ClassVar[tuple[str, ...]] = ("beta", "gamma", "A0")

    @classmethod
    def default(cls, n_nodes: int) -> AlonKinetics:
        """beta = gamma = 1, A0 = 0, x0 = 2 (input well above threshold)."""
        one = jnp.ones(n_nodes)
        return cls(beta=one, gamma=one, A0=jnp.zeros(n_nodes), x0=jnp.asarray(2.0))

    def rates(self, A, G, drive):
        return self.gamma * (self.beta * drive * G - A)


class CompetenceKinetics(Kinetics):
    """Bounded competence kinetics ``rho [b + (1-b) drive G] (1-A) - delta A``.

    With pipeline gates the learning term of a gated node is multiplied by its gate
    ``P_i(A)``: ``rho P [b + (1-b) drive G] (1-A) - delta A``. With node weights ``w`` the
    regulation acts as llm_runs' learning-rate multiplier, on every step the agent takes:
    ``(1 - w + w G) {rho P [b + (1-b) drive] (1-A) - delta A}`` (``w = 0`` is the
    unregulated law; at ``w = 1`` the whole rate is ``G`` times the unregulated one).

    Attributes:
        rho: Learning rate, 1/step, shape ``(N,)``.
        b: Basal learning in [0, 1], shape ``(N,)``.
        delta: Forgetting rate, 1/step, shape ``(N,)``.
        A0: Initial competences in [0, 1], shape ``(N,)``.
        x0: Input level in (0, 1] when the schedule is on.
        pipeline: Pipeline gates (:class:`~simulate._pipeline.Pipeline`), or None (none:
            the rate law above, unchanged); add them with :func:`simulate.with_pipeline`.
        weight: Per-node weight ``w`` in [0, 1] of the gated regulation (dimensionless),
            shape ``(N,)``, or None (none: the rate law above, unchanged to the bit); add
            it with :func:`simulate.with_edge_weights`.
    """

    rho: Array
    b: Array
    delta: Array
    A0: Array
    x0: Array
    pipeline: Pipeline | None = None
    weight: Array | None = None
    name: ClassVar[str] = "competence"
    bounded: ClassVar[bool] = True
    node_params: ClassVar[tuple[str, ...]] = ("rho", "b", "delta", "A0")

    @classmethod
    def default(cls, n_nodes: int) -> CompetenceKinetics:
        """rho = 0.5, b = 0.05, delta = 0.02, A0 = 0.02, x0 = 1."""
        ones = jnp.ones(n_nodes)
        return cls(
            rho=0.5 * ones, b=0.05 * ones, delta=0.02 * ones, A0=0.02 * ones, x0=jnp.asarray(1.0)
        )

    def rates(self, A, G, drive):
        if self.weight is not None:
            # llm_runs' learning-rate multiplier 1 - w + w G scales the whole step
            # (simulate._edge_weight); the designed regulation acts through it alone
            factor = (1.0 - self.weight) + self.weight * G
            G = jnp.ones_like(G)
        if self.pipeline is not None:
            learn = self.rho * self.pipeline.gates(A) * (self.b + (1.0 - self.b) * drive * G)
            out = learn * (1.0 - A) - self.delta * A
        else:
            out = self.rho * (self.b + (1.0 - self.b) * drive * G) * (1.0 - A) - self.delta * A
        return out if self.weight is None else factor * out


KINETICS: dict[str, type[Kinetics]] = {"alon": AlonKinetics, "competence": CompetenceKinetics}


class Model(eqx.Module):
    """Network + kinetics + oscillation options; the unit every solver and sweep takes.

    The ODE/SDE state is ``[A (N), delay stages (N * delay_stages)]``.

    Attributes:
        network: The signed network.
        kinetics: Rate parameters (:class:`AlonKinetics` or :class:`CompetenceKinetics`).
        sigma: Gradient-noise amplitude per node (SDE only), shape ``(N,)``.
        tau: Mean policy lag (time units), used when ``delay_stages > 0``.
        eta: Learning-step size of the discrete map (time units per step).
        delay_stages: Erlang stages ``k`` of the lag (0 = no lag); static.
    """

    network: AbstractNetwork
    kinetics: Kinetics
    sigma: Array
    tau: Array
    eta: Array
    delay_stages: int = eqx.field(static=True, default=0)

    @property
    def size(self) -> int:
        """Number of nodes N."""
        return self.network.size

    @property
    def state_size(self) -> int:
        """Length of the ODE state, ``N * (1 + delay_stages)``."""
        return self.size * (1 + self.delay_stages)

    @property
    def dynamic(self) -> np.ndarray:
        """Per node, True if its level is a state variable (not an algebraic input)."""
        if self.kinetics.algebraic_sources:
            return ~self.network.pure_sources
        return np.ones(self.size, dtype=bool)

    def input_value(self, level: Array) -> Array:
        """Input ``x = x0 * s`` for schedule level ``s``."""
        return self.kinetics.x0 * level

    def levels(self, y: Array, x: Array) -> Array:
        """Node levels from the state: algebraic input nodes take the input ``x``."""
        A = y[: self.size]
        if self.kinetics.algebraic_sources:
            A = jnp.where(jnp.asarray(self.network.pure_sources), x, A)
        return A

    def initial_state(self) -> Array:
        """``A0`` with every delay stage at ``A0`` (constant history)."""
        A0 = jnp.asarray(self.kinetics.A0, dtype=float)
        return jnp.concatenate([A0] + [A0] * self.delay_stages)

    def rhs(self, y: Array, x: Array, clip: bool = False):
        """Autonomous drift ``dy/dt`` at input value ``x`` (``clip``: levels into [0, 1])."""
        N, k = self.size, self.delay_stages
        A = self.levels(y, x)
        if clip:
            A = jnp.clip(A, 0.0, 1.0)
        if k > 0:
            D = y[N:].reshape(N, k)
            if clip:
                D = jnp.clip(D, 0.0, 1.0)
            upstream = jnp.concatenate([A[:, None], D[:, :-1]], axis=1)
            dD = (k / self.tau) * (upstream - D)
            A_reg = D[:, -1]
        else:
            A_reg = A
        G = self.network.regulation(A_reg)
        drive = jnp.where(jnp.asarray(self.network.inputs), x, 1.0)
        dA = self.kinetics.rates(A, G, drive)
        dA = jnp.where(jnp.asarray(self.dynamic), dA, 0.0)
        if k > 0:
            return jnp.concatenate([dA, dD.reshape(-1)])
        return dA

    def diffusion(self, y: Array) -> Array:
        """Wright–Fisher diffusion ``sigma_i sqrt(A_i (1 - A_i))`` (0 on delay stages)."""
        A = jnp.clip(y[: self.size], 0.0, 1.0)
        g = self.sigma * jnp.sqrt(A * (1.0 - A))
        g = jnp.where(jnp.asarray(self.dynamic), g, 0.0)
        return jnp.concatenate([g, jnp.zeros(self.size * self.delay_stages)])

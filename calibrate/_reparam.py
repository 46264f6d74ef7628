"""Sampling coordinates of NUTS: exact, smooth bijections of the latent vector that
straighten the curved ridges of competence-kinetics posteriors.

The model's latent vector ``z`` (standard normal prior, :mod:`calibrate._model`) maps to
``theta`` coordinate by coordinate, but competence curves identify combinations of its
coordinates, not the coordinates themselves:

* **The basal corner.** While a regulator ``j`` of node ``i`` is still low, ``i`` learns
  at ``rho_i (b_i + (1 - b_i) h)`` with the Hill occupancy ``h`` of the edge small: the
  data fix the sum ``T = b + (1 - b) h``, not how it splits. In ``(logit b, log n)`` the
  posterior is an L-shaped corner (small ``b`` with ``n`` pinned, or ``b`` pinned with
  ``n`` free), which no mass matrix fits (measured on the calibrate benchmark: skewness
  -2.2 and excess kurtosis 6.6 of ``b[Y]``, and NUTS divergences). For a node with one
  activating regulator we sample instead ``s = logit(2T - b)`` and ``g = logit(b / T)``,
  with ``h = c^n / (1 + c^n)`` the occupancy at a regulator level ``c K`` (``c`` =
  :data:`CORNER_LEVEL`): a bijection of R² whatever ``K`` (``2T - b < 1`` because
  ``h < 1/2``). On the benchmark's posterior ``(s, g)`` have skewness within +-0.5.
* **The edge threshold.** Where a regulator's data lie below its threshold ``K``, the
  occupancy is ~``(a/K)^n`` and the curves fix ``n`` and ``n log K``, a product that
  bends ``(log K, log n)`` into a hyperbola with a long tail to large ``K``. We sample
  ``q = n log(K / a)``, the occupancy log-odds of the edge at the regulator level ``a``
  = :data:`EDGE_LEVEL` (1: a learned regulator; ``log |dK/dq| = -log n``), for every
  edge whose ``n`` is not already a corner coordinate. (Measured on the benchmark over
  seeds 1-5: the minimum bulk ESS was 1072-1533 with ``a = 1``, against 299-1330 with
  ``a = 0.5``.)
* **The learned rate.** Late in training the data fix ``rho_i (b_i + (1 - b_i) G_i(1))``,
  the rate with every regulator learned (``G_i(1)`` the gated regulation at levels 1),
  so ``log rho_i`` lies on a ridge that bends with ``K`` and ``n``. We sample ``log rho_i +
  log(b_i + (1 - b_i) G_i(1))`` instead: a shift of one coordinate by a function of
  others (unit Jacobian).
* **The basal fraction.** Early in training the data fix the basal rate ``rho_i b_i``;
  with the learned rate fixed too, ``b_i`` must follow ``G_i(1)``: where an edge into a
  node with several regulators slides to a large threshold (``h`` ~ ``Y/K``), ``b_i``
  falls like ``1/K`` and ``rho_i`` rises with it, a curved ridge on which chains stuck
  with hundreds of divergences. For every regulated node outside a corner we sample
  ``logit b_i - log G_i(1)``, the log-odds of the basal fraction ``b_i / (b_i + (1 - b_i)
  G_i(1))`` of the learned rate (again a shift by a function of the edges). Measured on
  the calibrate benchmark with the pooled warm-up of :mod:`calibrate._sampler`: minimum
  bulk ESS 1439-2325 at 13-15 leapfrog steps per draw and 0-4 divergences per fit
  (seeds 1-20), against 972-1806 at 15-20 steps and 0-15 divergences without it (seeds
  1-10; with per-chain step sizes a seed-1 fit had a chain stuck on the ridge: 143
  divergences at ``K`` ~ 2, ``n`` ~ 1, minimum bulk ESS 70).

They change only where the sampler moves, not the posterior: the potential is the log
joint at ``z(w)`` plus ``log |det dz/dw|``, and draws are mapped back to ``z``. Measured
on the calibrate benchmark (C1-AND, 8 runs, 4 x 1000 draws, seeds 1-5) before the basal
fraction: minimum bulk ESS 1072-1533 at 14-15 leapfrog steps per draw, against 592-804
at 25 in ``z`` (seeds 1-3).
"""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._density import unflatten
from ._model import CurveModel

__all__ = ["CORNER_LEVEL", "EDGE_LEVEL", "SamplingCoords", "draws_to_z", "start_energies"]

CORNER_LEVEL = 0.12  # regulator level (in units of K) of the corner's occupancy h
EDGE_LEVEL = 1.0  # regulator level of an edge's sampled occupancy log-odds q (learned)
_LOG2 = math.log(2.0)
_TINY = 1e-300  # floor of G_i(1) under the log of a basal shift


def _corner_to_natural(s: jax.Array, g: jax.Array, c: float) -> tuple[jax.Array, jax.Array]:
    """``(s, g) -> (logit b, log n)`` in log space (stable for any real ``s, g``)."""
    ls, lms = jax.nn.log_sigmoid(s), jax.nn.log_sigmoid(-s)
    lg, lmg = jax.nn.log_sigmoid(g), jax.nn.log_sigmoid(-g)
    # b = sig(g) sig(s) / (2 - sig(g)), 1 - b = (2 sig(-g) + sig(g) sig(-s)) / (2 - sig(g))
    logit_b = lg + ls - jnp.logaddexp(_LOG2 + lmg, lg + lms)
    # -logit h = log(sig(-g) + sig(-s)) - log sig(s) - log sig(-g) > 0; n = -logit h / -log c
    ell = jnp.logaddexp(lmg, lms) - ls - lmg
    return logit_b, jnp.log(ell) - math.log(-math.log(c))


def _corner_from_natural(
    logit_b: jax.Array, log_n: jax.Array, c: float
) -> tuple[jax.Array, jax.Array]:
    """Inverse of :func:`_corner_to_natural`."""
    log_h = jax.nn.log_sigmoid(jnp.exp(log_n) * math.log(c))  # h = c^n / (1 + c^n) < 1/2
    lb, lmb = jax.nn.log_sigmoid(logit_b), jax.nn.log_sigmoid(-logit_b)
    # 2T - b = b + 2 (1 - b) h and 1 - (2T - b) = (1 - b)(1 - 2h)
    s = jnp.logaddexp(lb, _LOG2 + lmb + log_h) - lmb - jnp.log1p(-2.0 * jnp.exp(log_h))
    g = logit_b - log_h  # b / (T - b) = b / ((1 - b) h)
    return s, g


class SamplingCoords(eqx.Module):
    """The map between NUTS's coordinates ``w`` and the model's flat latent vector ``z``.

    Attributes:
        cm: The model (its layout gives the prior scales; its network the regulation).
        corners: ``(index of b[i], index of n[j->i])`` per corner, into the flat vector.
        edges: ``(index of K[e], index of n[e])`` per edge sampled as ``q = n log(K/a)``.
        shears: ``(index of rho[i], index of b[i], node i)`` per learned-rate shift.
        basal: Positions in ``shears`` of the nodes whose ``logit b`` is sampled shifted
            by ``-log G_i(1)`` (the basal fraction of the learned rate).
        level: Corner reference level ``c`` (units of K).
    """

    cm: CurveModel
    corners: tuple[tuple[int, int], ...] = eqx.field(static=True)
    edges: tuple[tuple[int, int], ...] = eqx.field(static=True)
    shears: tuple[tuple[int, int, int], ...] = eqx.field(static=True)
    basal: tuple[int, ...] = eqx.field(static=True, default=())
    level: float = eqx.field(static=True, default=CORNER_LEVEL)

    @classmethod
    def build(cls, cm: CurveModel, enabled: bool = True) -> SamplingCoords:
        """The coordinates of ``cm``: a learned-rate shift for every regulated node, a
        corner for every node with exactly one regulator, activating, a basal-fraction
        shift for every other regulated node, and the occupancy log-odds of every edge
        outside a corner; with ``enabled`` False the identity (NUTS then samples ``z``
        itself)."""
        names = cm.layout.names
        corners, shears = [], []
        net = cm.network
        sign = np.asarray(net.sign)
        for i, node in enumerate(net.names):
            if not enabled or f"b[{node}]" not in names:
                continue
            shears.append((names.index(f"rho[{node}]"), names.index(f"b[{node}]"), i))
            parents = [j for j, w in enumerate(net.wiring[i]) if w]
            if len(parents) == 1 and sign[i, parents[0]] > 0:
                edge = f"n[{net.names[parents[0]]}->{node}]"
                corners.append((names.index(f"b[{node}]"), names.index(edge)))
        in_corner = {jn for _, jn in corners}
        edges = [
            (names.index(f"K[{e}]"), names.index(f"n[{e}]"))
            for e in net.edge_keys
            if enabled and f"n[{e}]" in names and names.index(f"n[{e}]") not in in_corner
        ]
        in_corner_b = {ib for ib, _ in corners}
        basal = [k for k, (_, ib, _) in enumerate(shears) if ib not in in_corner_b]
        return cls(cm, tuple(corners), tuple(edges), tuple(shears), tuple(basal))

    @property
    def identity(self) -> bool:
        """True when ``w`` is ``z``."""
        return not (self.corners or self.edges or self.shears or self.basal)

    def _natural(self, z: jax.Array) -> jax.Array:
        """Natural values of the global parameters in ``z``, ``(D,)``."""
        lay = self.cm.layout
        return lay.to_natural(jnp.asarray(lay.loc) + jnp.asarray(lay.scale) * z[: lay.size])

    def _gates(self, z: jax.Array) -> list[jax.Array]:
        """``G_i(1)``, the gated regulation with every regulator at level 1, per shear
        (reads only the edges in ``z``)."""
        net = self.cm.with_params(self._natural(z)).network
        ones = jnp.ones(net.size, z.dtype)
        return [net.node_regulation(i, ones) for _, _, i in self.shears]

    def _basals(self, z: jax.Array) -> list[jax.Array]:
        """``b_i`` per shear."""
        theta = self._natural(z)
        return [theta[ib] for _, ib, _ in self.shears]

    def _basal_shift(self, z: jax.Array, sign: float, G: list[jax.Array]) -> jax.Array:
        """``z`` with ``sign`` times the basal shifts ``-log G_i(1)`` added to ``logit b_i``."""
        scale = self.cm.layout.scale
        for k in self.basal:
            ib = self.shears[k][1]
            z = z.at[ib].add(-sign * jnp.log(jnp.maximum(G[k], _TINY)) / scale[ib])
        return z

    def _rate_shift(self, z: jax.Array, sign: float, G: list[jax.Array]) -> jax.Array:
        """``z`` with ``sign`` times the learned-rate shifts ``log(b_i + (1 - b_i)
        G_i(1))`` added to ``log rho_i`` (``b_i`` read from ``z``)."""
        scale = self.cm.layout.scale
        for (ir, _, _), b, Gi in zip(self.shears, self._basals(z), G, strict=True):
            z = z.at[ir].add(sign * jnp.log(b + (1.0 - b) * Gi) / scale[ir])
        return z

    def to_z(self, w: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``z`` of one flat vector ``w`` (shape ``(P,)``) and ``log |det dz/dw|``."""
        w = jnp.asarray(w)
        if self.identity:
            return w, jnp.zeros((), w.dtype)
        loc, scale = self.cm.layout.loc, self.cm.layout.scale
        z, logdet = w, jnp.zeros((), w.dtype)
        for ib, jn in self.corners:

            def f(sg, ib=ib, jn=jn):
                lb, ln = _corner_to_natural(sg[0], sg[1], self.level)
                return jnp.stack([(lb - loc[ib]) / scale[ib], (ln - loc[jn]) / scale[jn]])

            sg = jnp.stack([w[ib], w[jn]])
            zz = f(sg)
            D = jax.jacfwd(f)(sg)  # 2 x 2: its determinant written out (no LU to trace)
            logdet = logdet + jnp.log(jnp.abs(D[0, 0] * D[1, 1] - D[0, 1] * D[1, 0]))
            z = z.at[ib].set(zz[0]).at[jn].set(zz[1])
        for iK, jn in self.edges:  # q = n log(K / a): log K = log a + q / n
            log_n = loc[jn] + scale[jn] * z[jn]
            z = z.at[iK].set((math.log(EDGE_LEVEL) + w[iK] * jnp.exp(-log_n) - loc[iK]) / scale[iK])
            logdet = logdet - log_n - jnp.log(scale[iK])
        if self.shears:  # unit Jacobians: shifts by functions of the edges (and b)
            G = self._gates(z)  # the edges are natural again, each b still shifted
            z = self._rate_shift(self._basal_shift(z, -1.0, G), -1.0, G)
        return z, logdet

    def from_z(self, z: jax.Array) -> jax.Array:
        """``w`` of one flat vector ``z`` (shape ``(P,)``); the inverse of :meth:`to_z`."""
        z = jnp.asarray(z)
        if self.identity:
            return z
        loc, scale = self.cm.layout.loc, self.cm.layout.scale
        w = z
        if self.shears:
            G = self._gates(z)  # both shifts read b from z: the rate's first
            w = self._basal_shift(self._rate_shift(w, 1.0, G), 1.0, G)
        for ib, jn in self.corners:
            s, g = _corner_from_natural(
                loc[ib] + scale[ib] * z[ib], loc[jn] + scale[jn] * z[jn], self.level
            )
            w = w.at[ib].set(s).at[jn].set(g)
        for iK, jn in self.edges:
            log_K = loc[iK] + scale[iK] * z[iK]
            w = w.at[iK].set(jnp.exp(loc[jn] + scale[jn] * z[jn]) * (log_K - math.log(EDGE_LEVEL)))
        return w

    def potential(self, w: jax.Array) -> jax.Array:
        """NUTS's potential: minus the log joint at ``z(w)`` minus ``log |det dz/dw|``."""
        z, logdet = self.to_z(w)
        return -(self.cm.log_joint_fn()(unflatten(self.cm, z)) + logdet)


@eqx.filter_jit
def draws_to_z(coords: SamplingCoords, w: jax.Array) -> jax.Array:
    """``z`` of a batch of draws ``w`` of shape ``(..., P)`` (one compiled program)."""
    flat = jnp.reshape(w, (-1, w.shape[-1]))
    return jnp.reshape(jax.vmap(lambda v: coords.to_z(v)[0])(flat), w.shape)


@eqx.filter_jit
def _to_z_linearised(coords: SamplingCoords, w: jax.Array):
    """``z(w)``, ``log |det dz/dw|`` and both their Jacobians for a batch ``w`` ``(C, P)``."""

    def one(v):
        return coords.to_z(v), jax.jacfwd(coords.to_z)(v)

    return jax.vmap(one)(w)


def start_energies(
    coords: SamplingCoords, w: np.ndarray, neg_log_joint_and_grad
) -> tuple[np.ndarray, np.ndarray]:
    """NUTS's potential and its gradient at the starts ``w`` ``(C, P)`` by the chain rule
    through :meth:`SamplingCoords.to_z`, from ``neg_log_joint_and_grad(z) -> (value,
    gradient)`` in the model's coordinates (the MAP fit's compiled objective: the
    sampler's program then need not trace the potential's gradient a second time).

    Returns:
        Potential energies ``(C,)`` and gradients ``(C, P)``.
    """
    (z, logdet), (J, dlogdet) = _to_z_linearised(coords, jnp.asarray(w, float))
    z, logdet, J, dlogdet = (np.asarray(a) for a in (z, logdet, J, dlogdet))
    pe, grad = np.empty(len(z)), np.empty_like(z)
    for c in range(len(z)):
        v, g = neg_log_joint_and_grad(z[c])
        pe[c] = v - logdet[c]
        grad[c] = J[c].T @ g - dlogdet[c]
    return pe, grad

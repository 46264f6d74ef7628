"""The new-run forecast with its bands at a few steps, in one compiled program per chunk.

:func:`calibrate.predict` with ``band_points`` (and a binomial likelihood) solves, labels
and draws the new run's evaluation noise of a chunk of settings in one program, so that
only what the bands need leaves it: per setting the mean curves at the band steps and the
new run's noisy counts there, both with the draws as the last, contiguous axis, where
:func:`numpy.sort` (SIMD, ~1 µs per column of 200 float32 on this machine class, 7x
:func:`numpy.partition`) orders them for the quantiles (:func:`sorted_bands`). Inside the
program:

* the settings of a chunk are solved in steps of about :data:`SOLVES_PER_STEP` solves
  (one batch-last quad solve per step, :class:`calibrate._quad.Quad`'s ``batch``: the
  curves come out as ``(T, N, B)``, the layout the labels and the band reductions read,
  with no transposes; a ``lax.map`` over steps, sharded over the devices);
* the regimes are labelled per step with the batch last and the zig-zag scan skipped
  where no curve can have a turning point (:func:`calibrate._predict._classify.
  classify_batch`'s ``shortcut``: the same labels);
* the evaluation noise is exact binomial, from one host-drawn 32-bit word per value
  (:func:`calibrate._predict._binomial.binomial_counts`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._model import CurveModel
from . import _binomial
from ._binomial import alias_tables, binomial_counts
from ._checks import TOLERANCE
from ._classify import classify_batch
from ._fast import (
    BAND_LEVELS,
    compiled_model,
    in_dtype,
    shard_settings,
    solve_curves,
)

__all__ = ["banded_batch", "sorted_bands"]

# Solves per compiled step. At 10^4 settings x 200 draws (float32, 2 devices) a whole
# call took 9.6-10.0 s at 200, 10.0-10.3 s at 400, 10.8 s at 800 and 11.0 s at 1600: the
# batch's arrays stay in the cache (docs/benchmarks.md).
SOLVES_PER_STEP = 200


def banded_batch(
    cm: CurveModel,
    u: np.ndarray,
    slopes: np.ndarray,
    x: np.ndarray,
    t: np.ndarray,
    substeps: int,
    *,
    draws: int,
    new_from: int,
    band_steps: np.ndarray,
    bits: np.ndarray,
    offset: np.ndarray,
    n_eval: np.ndarray,
    keep_curves: bool = False,
    dtype: str = "float64",
    shard: bool = True,
    whole: bool = False,
) -> dict[str, jax.Array]:
    """Dispatch one chunk (asynchronously: the arrays are JAX's, not yet computed).

    Args:
        cm: The fitted model.
        u: Reference parameters per solve, transformed scale, ``(Ga, D)``: the ``draws``
            mean-curve draws, then (with random effects) their new runs.
        slopes: Natural link slopes per solve ``(Ga, L)``.
        x: ``log(h / h_ref)`` per setting and slope row ``(S, L)``; ``S`` a multiple of the
            devices times :func:`settings_per_step`.
        t: Steps of the curves ``(T,)``.
        substeps: RK4 steps per interval of ``t`` (the ``rk4`` solver).
        draws: ``G``, the mean-curve draws (the first ``G`` solves).
        new_from: Index of the first new-run solve (``G`` with random effects, else 0).
        band_steps: Step indices of the bands ``(K,)`` (the last step last).
        bits: Random words of the noise ``(S, G, K - 1, N)`` uint32.
        offset: The new run's seed offset per draw ``(G, N)``.
        n_eval: Probe count per agent ``(N,)``.
        keep_curves: Also the mean-curve draws' curves ``(S, G, T, N)``.
        dtype: ``float64`` or ``float32`` (as :func:`calibrate._predict._fast.predict_batch`).
        shard: Split the settings over the devices.
        whole: Every count drawn to the end (else ``-1`` in the rare ones that need more
            than the first terms of the thinning, :func:`~calibrate._predict._binomial.
            binomial_counts`: draw the chunk again with ``whole``, the same words).

    Returns:
        ``final`` and ``codes`` ``(S, Ga, N)``, ``curve_ok`` ``(S, Ga)``, ``mean``
        ``(S, T, N)`` (of the mean-curve draws), ``band`` ``(S, K, N, G)`` (their curves at
        the band steps), ``counts`` ``(S, K - 1, N, G)`` int16 (the new run's noisy
        counts at the band steps but the last; ``-1`` where ``whole`` was needed), and
        ``curves`` if asked.
    """
    n_dev = len(jax.devices()) if shard else 1
    fast, cell = compiled_model(cm, dtype)
    prob, alias, table = alias_tables(n_eval)
    arrays = [np.asarray(a, dtype=dtype) for a in (u, slopes, x, offset, prob)]
    static = (
        tuple(np.asarray(t, dtype=float).tolist()), int(substeps), cell, int(draws),
        int(new_from), tuple(int(i) for i in band_steps), settings_per_step(u.shape[0]),
        n_dev, bool(keep_curves), bool(whole), int(_binomial.TERMS),
    )  # fmt: skip
    args = (fast, *arrays[:4], bits, np.asarray(n_eval, np.int32), arrays[4], alias, table,
            *static)  # fmt: skip
    return in_dtype(_program, args, dtype)


def settings_per_step(solves: int) -> int:
    """Settings solved together in one step (about :data:`SOLVES_PER_STEP` solves)."""
    return max(1, SOLVES_PER_STEP // max(solves, 1))


@eqx.filter_jit
def _program(
    cm, u, slopes, x, offset, bits, n_eval, prob, alias, table,
    ts, substeps, cell, draws, new_from, band_steps, per_step, n_dev, keep_curves, whole,
    terms,
):  # fmt: skip
    t = np.asarray(ts)
    kb = np.asarray(band_steps)
    idx = jnp.asarray(cm.link_index)
    dyn, static = eqx.partition(cm, eqx.is_array)

    def run(dyn, u, slopes, offset, n_eval, prob, alias, table, xs, bits):
        model = eqx.combine(dyn, static)

        def step(inp):
            xc, bc = inp  # (b, L), (b, G, K - 1, N)
            b = xc.shape[0]
            ug = jnp.broadcast_to(u, (b, *u.shape))
            if idx.size:
                ug = ug.at[:, :, idx].add(slopes[None] * xc[:, None])
            ga = u.shape[0]
            # the step's b * Ga solves as one batch, last: (T, N, b * Ga), ok (b * Ga,)
            A, ok = solve_curves(
                model, model.layout.to_natural(ug.reshape(b * ga, -1)), t, substeps, cell,
                batch_last=True,
            )  # fmt: skip
            nt, nn = A.shape[:2]
            codes = classify_batch(A, ok, shortcut=True)  # (N, b * Ga)
            # every level in range: from the max and min over time (the labels' own
            # reductions, computed once); a non-finite level is in ``ok`` (the solve
            # replaced it by 0.5)
            lo, hi = jnp.min(jnp.min(A, axis=0), axis=0), jnp.max(jnp.max(A, axis=0), axis=0)
            inside = (lo >= -TOLERANCE) & (hi <= 1 + TOLERANCE)
            A = A.reshape(nt, nn, b, ga)
            mc = A[..., :draws]  # (T, N, b, G)
            out = {
                "final": jnp.transpose(A[-1], (1, 2, 0)),
                "codes": jnp.transpose(codes.reshape(nn, b, ga), (1, 2, 0)),
                "curve_ok": inside.reshape(b, ga) & ok.reshape(b, ga),
                "mean": jnp.transpose(mc.mean(axis=-1), (2, 0, 1)),
                "band": jnp.transpose(mc[kb], (2, 0, 1, 3)),
            }
            an = jnp.transpose(A[kb[:-1], :, :, new_from : new_from + draws], (2, 3, 0, 1))
            p = jnp.where(jnp.isfinite(an), an, 0.5) + offset[None, :, None, :]
            k = binomial_counts(bc, p, n_eval, prob, alias, table, whole=whole, terms=terms)
            out["counts"] = jnp.transpose(k, (0, 2, 3, 1)).astype(jnp.int16)
            if keep_curves:
                out["curves"] = jnp.transpose(mc, (2, 3, 0, 1))
            return out

        xs = xs.reshape(-1, per_step, xs.shape[-1])
        bits = bits.reshape(-1, per_step, *bits.shape[1:])
        out = jax.lax.map(step, (xs, bits))
        return {k: v.reshape(-1, *v.shape[2:]) for k, v in out.items()}

    run = shard_settings(run, n_dev, replicated=8, split=2)
    return run(dyn, u, slopes, offset, n_eval, prob, alias, table, x, bits)


_POOL = ThreadPoolExecutor(2)


def sorted_bands(values: np.ndarray, scale: np.ndarray | None = None):
    """Mean and :data:`BAND_LEVELS` quantiles over the last axis (the draws), as
    ``numpy.quantile``'s linear method, from a sort of each column on two threads.

    Args:
        values: ``(S, K, N, G)`` values (float, or integer counts).
        scale: Per agent ``(N,)`` divisor of the values (the probe counts), or None.

    Returns:
        The mean ``(S, K, N)`` and the quantiles ``(S, 4, K, N)``, float64 (NaN through a
        column with a NaN).
    """
    s = np.array(values)  # sorted in place, in two halves of the settings on two threads
    m = s.shape[0] // 2
    list(_POOL.map(lambda sl: s[sl].sort(axis=-1), [slice(0, m), slice(m, None)]))
    g = s.shape[-1]
    out = []
    for q in BAND_LEVELS:
        pos = q * (g - 1)
        lo = int(np.floor(pos))
        hi = min(lo + 1, g - 1)
        a, b, gamma = s[..., lo].astype(float), s[..., hi].astype(float), pos - lo
        d = b - a
        out.append(b - d * (1 - gamma) if gamma >= 0.5 else a + d * gamma)  # numpy's _lerp
    q = np.stack(out, axis=1)
    if values.dtype.kind == "f":
        mean = values.mean(axis=-1, dtype=float)
    else:  # counts: an exact integer sum (half the time of a float mean)
        mean = values.sum(axis=-1, dtype=np.int32) / g
    if s.dtype.kind == "f":
        q = np.where(np.isnan(s[..., -1])[:, None], np.nan, q)
    if scale is not None:
        sc = np.asarray(scale, float)
        q, mean = q / sc, mean / sc
    return mean, q

"""The solves behind :func:`calibrate.predict`'s ``band="new_run"``: one new run per draw.

Per posterior draw, the mean curve (random effects at 0, as before) and one new run (the
same draw with fresh run effects, :func:`calibrate._new_run.fresh_effects`) are solved in
one batch of ``2G`` draws (``G`` when the fit has no random effects: then both are the same
curve). The new run's logged competence adds the seed offset and evaluation noise of
:mod:`calibrate._new_run`. Its final competence is drawn from its own random stream, so
``bands=True`` and ``bands=False`` give the same ``new_final``; the per-step band uses
that value at the last step. With bands, the curves are solved in chunks of settings
(about :data:`CHUNK_VALUES` values each) and reduced on the host chunk by chunk (the new
run's last step after every chunk, from that final competence), so memory does not grow with
the number of settings beyond the reduced arrays. With ``band_steps`` (``predict``'s
``band_points``) only the curves at those steps come back from the compiled program (with
the per-step mean of the mean curves and a flag per draw that every step is in range),
the bands and the new run's noise are computed there and interpolated linearly between
them (:mod:`calibrate._predict._band_points`). With a binomial likelihood and probe counts
up to :data:`calibrate._predict._binomial.MAX_N` that is one program per chunk that also
labels the regimes and draws the noise (:mod:`calibrate._predict._banded`), the next
chunk solved on a worker thread while the last is reduced.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import jax
import numpy as np

import simulate

from .._model import CurveModel
from .._new_run import SeedSpread, draw_phi, evaluation_noise, fresh_effects
from .._solvers import fixed_substeps
from ._band_points import interpolate_about, interpolation_matrix
from ._banded import banded_batch, settings_per_step, sorted_bands
from ._binomial import MAX_N, logged_values
from ._checks import failed_draws
from ._fast import BAND_LEVELS

__all__ = ["CHUNK_VALUES", "solve_new_run"]

#: Curve values (settings x draws x steps x agents) held on the host per chunk.
CHUNK_VALUES = 4_000_000


def solve_new_run(
    predict_arrays: Any,
    cm: CurveModel,
    draws: dict[str, np.ndarray],
    u: np.ndarray,
    slopes: np.ndarray,
    x: np.ndarray,
    t: np.ndarray,
    *,
    bands: bool,
    keep_curves: bool,
    n_eval: np.ndarray,
    spread: SeedSpread,
    seed: int,
    dtype: str,
    band_steps: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Mean-curve and new-run forecasts of every setting × draw.

    Args:
        predict_arrays: :func:`calibrate._predict._core.predict_arrays` (passed in: no cycle).
        cm: The fitted model.
        draws: The used draws' latent sites (``tau_z``, ``z_phi`` when the fit has them).
        u: Reference parameters per draw, transformed scale ``(G, D)``.
        slopes: Natural link slopes per draw ``(G, L)``.
        x: Setting matrix ``(S, L)``.
        t: Steps ``(T,)``.
        bands: Also the per-step means and quantile bands of both forecasts.
        keep_curves: Also every draw's mean curves.
        n_eval: Probe count per agent ``(N,)``.
        spread: The seed spread (an offset per agent when from replicates).
        seed: Seed of the run effects, offsets and noise.
        dtype: As for :func:`calibrate.predict`.
        band_steps: The bands at these step indices (the last one included), linear in
            between; None: at every step.

    Returns:
        ``final``, ``codes`` (mean curve, failed draws marked), ``new_final``,
        ``new_codes``, and with ``bands`` ``mean``, ``bands``, ``new_mean``,
        ``new_bands`` (NaN for a setting with a failed draw), ``curves`` if asked.
    """
    g, n_nodes = u.shape[0], cm.network.size
    eff = fresh_effects(cm, draws.get("tau_z"), np.random.default_rng([seed, 1]))
    has_re = bool(cm.re_index.size)
    u_all = np.concatenate([u, u + eff]) if has_re else u
    s_all = np.concatenate([slopes, slopes]) if has_re else slopes
    offset = np.random.default_rng([seed, 2]).standard_normal((g, n_nodes)) * spread.sd
    phi = draw_phi(cm, draws.get("z_phi"))
    kw = {"n": n_eval, "phi": None if phi is None else phi[None, :, None]}
    if not (bands or keep_curves):
        o = predict_arrays(cm, u_all, s_all, x, t, bands=False, dtype=dtype)
        out = _split(o, g, has_re, None)
        for k in ("bad", "new_bad"):
            out.pop(k)
        out["new_final"] = _final_noise(out["new_final"], kw, np.random.default_rng([seed, 3]),
                                        offset)  # fmt: skip
        return out
    if band_steps is not None and phi is None and int(np.max(n_eval)) <= MAX_N:
        return _banded_chunks(cm, u_all, s_all, x, t, g, has_re, band_steps, keep_curves,
                              n_eval, offset, seed, dtype)  # fmt: skip
    sub = None if keep_curves else band_steps  # the steps the compiled program returns
    n_per = u_all.shape[0] * (t.size if sub is None else sub.size) * n_nodes
    chunk = max(1, min(x.shape[0], CHUNK_VALUES // max(n_per, 1)))
    parts: list[dict[str, np.ndarray]] = []
    rng_band = np.random.default_rng([seed, 4])
    for start in range(0, x.shape[0], chunk):
        xc = x[start : start + chunk]
        pad = chunk - xc.shape[0]  # one program shape for every chunk
        xp = np.concatenate([xc, np.zeros((pad, x.shape[1]))]) if pad else xc
        o = predict_arrays(
            cm, u_all, s_all, xp, t, keep_curves=True, bands=False, dtype=dtype,
            curve_steps=sub, mean_draws=None if sub is None else g,
        )  # fmt: skip
        o = {k: v[: xc.shape[0]] for k, v in o.items()}
        part = _split(o, g, has_re, o["curves"], o.get("curve_ok"))
        mc, nc = part.pop("curves"), part.pop("new_curves")
        curves_kept = mc
        if band_steps is None:
            part["mean"], part["bands"] = _band(mc)
        else:
            if sub is None:  # every step came back (keep_curves)
                mean, mc, nc = mc.mean(axis=1), mc[:, :, band_steps], nc[:, :, band_steps]
            else:
                mean = _nan_where(o["mean"][:, None], part["bad"])[:, 0]
            part["mean"], part["bands"] = mean, _band(mc)[1]
        noisy = evaluation_noise(nc[:, :, :-1], rng=rng_band, offset=offset[None, :, None],
                                 **(kw | {"phi": None if phi is None else phi[None, :, None,
                                                                              None]}))  # fmt: skip
        # the new run's band per step but the last (that one needs new_final, drawn below
        # from its own stream over every setting): per chunk, so its curves are not kept
        part["new_mean"], part["new_bands"] = _band(noisy)
        if keep_curves:
            part["curves"] = curves_kept
        parts.append(part)
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return _finish(out, kw, seed, offset, t, band_steps)


def _finish(out, kw, seed, offset, t, band_steps, noised: bool = False):
    """The new run's final values (own stream; ``noised``: already drawn, chunk by chunk
    from the same stream in the same order, which gives the same values), its band's last
    step, and the bands from the band steps to every step."""
    if not noised:
        out["new_final"] = _final_noise(out["new_final"], kw, np.random.default_rng([seed, 3]),
                                        offset)  # fmt: skip
    last_mean, last_bands = _band(out["new_final"][:, :, None])  # (S, 1, N), (S, 4, 1, N)
    out["new_mean"] = np.concatenate([out["new_mean"], last_mean], axis=1)
    out["new_bands"] = np.concatenate([out["new_bands"], last_bands], axis=2)
    if band_steps is not None:  # from the band steps to every step
        W, mean = interpolation_matrix(t, band_steps), out["mean"]
        for k in ("bands", "new_bands"):  # about the mean curve, exact at every step
            out[k] = interpolate_about(W, band_steps, out[k], mean[:, None], axis=2)
        out["new_mean"] = interpolate_about(W, band_steps, out["new_mean"], mean, axis=1)
    for k in ("bad", "new_bad"):
        out.pop(k, None)
    return out


def _banded_chunks(
    cm, u_all, s_all, x, t, g, has_re, band_steps, keep_curves, n_eval, offset, seed, dtype
) -> dict[str, np.ndarray]:
    """The bands at ``band_steps`` from :func:`calibrate._predict._banded.banded_batch`,
    chunk by chunk (the next chunk solved on a worker thread while this one is reduced,
    noised, and its bands interpolated to every step into the whole arrays)."""
    n_nodes, kn = cm.network.size, len(band_steps)
    unit = settings_per_step(u_all.shape[0]) * len(jax.devices())
    per = g * (2 * kn - 1) * n_nodes + (g * t.size * n_nodes if keep_curves else 0)
    chunk = max(1, CHUNK_VALUES // per) // unit * unit or unit
    chunk = min(chunk, -(-x.shape[0] // unit) * unit)
    rng, final_rng = np.random.default_rng([seed, 4]), np.random.default_rng([seed, 3])
    substeps = fixed_substeps(t, cm.config.dt)

    def solve(start: int) -> dict[str, np.ndarray]:
        xc = x[start : start + chunk]
        xp = np.zeros((chunk, x.shape[1]))
        xp[: xc.shape[0]] = xc
        bits = np.zeros((chunk, g, kn - 1, n_nodes), np.uint32)
        bits[: xc.shape[0]] = _words(rng, xc.shape[0], bits.shape[1:])

        def run(whole: bool) -> dict[str, np.ndarray]:
            o = banded_batch(
                cm, u_all, s_all, xp, t, substeps, draws=g, new_from=g if has_re else 0,
                band_steps=band_steps, bits=bits, offset=offset, n_eval=n_eval,
                keep_curves=keep_curves, dtype=dtype, whole=whole,
            )  # fmt: skip
            return {k: np.asarray(v)[: xc.shape[0]] for k, v in o.items()}

        o = run(False)
        return run(True) if (o["counts"] < 0).any() else o  # a count needed every term

    out: dict[str, np.ndarray] = {}
    kw = {"n": n_eval, "phi": None}
    with ThreadPoolExecutor(1) as pool:  # one chunk solved while the last is reduced
        pending = pool.submit(solve, 0)
        for start in range(0, x.shape[0], chunk):
            o = pending.result()
            if start + chunk < x.shape[0]:
                pending = pool.submit(solve, start + chunk)
            part = _reduce(o, g, has_re, n_eval, keep_curves)
            part["new_final"] = _final_noise(part["new_final"], kw, final_rng, offset)
            part = _finish(part, kw, seed, offset, t, band_steps, noised=True)
            for k, v in part.items():
                if k not in out:
                    out[k] = np.empty((x.shape[0], *v.shape[1:]), v.dtype)
                out[k][start : start + v.shape[0]] = v
    return out


def _final_noise(final: np.ndarray, kw: dict, rng: np.random.Generator, offset: np.ndarray):
    """The new run's logged final values from its mean ones ``(S, G, N)``: exact binomial
    counts from one random word per value (:func:`~calibrate._predict._binomial.
    logged_values`; the words per setting, so any chunking gives the same values), or
    numpy's generator with a beta-binomial ``phi`` or more than ``MAX_N`` probes."""
    n = np.asarray(kw["n"])
    if kw["phi"] is not None or int(np.max(n)) > MAX_N:
        return evaluation_noise(final, rng=rng, offset=offset[None], **kw)
    return logged_values(final, n, offset, _words(rng, final.shape[0], final.shape[1:]))


def _words(rng: np.random.Generator, rows: int, shape: tuple[int, ...]) -> np.ndarray:
    """``rows`` settings' random 32-bit words of ``shape`` each, from whole 64-bit outputs
    of the generator per setting (so any chunking of the settings draws the same words)."""
    per = int(np.prod(shape))
    raw = rng.bit_generator.random_raw((rows, -(-per // 2)))
    return raw.view(np.uint32)[:, :per].reshape(rows, *shape)


def _reduce(o, g, has_re, n_eval, keep_curves) -> dict[str, np.ndarray]:
    """One chunk's failed draws marked, and its bands from the sorted draws."""
    part = _split(o, g, has_re, None, o["curve_ok"])
    bad = np.asarray(np.any(part.pop("bad"), axis=1))
    nbad = np.asarray(np.any(part.pop("new_bad"), axis=1))
    dt = o["band"].dtype
    part["mean"] = np.where(bad[:, None, None], np.nan, o["mean"])
    part["bands"] = np.where(bad[:, None, None, None], np.nan, sorted_bands(o["band"])[1])
    nm, nq = sorted_bands(o["counts"], scale=n_eval)
    part["new_mean"] = np.where(nbad[:, None, None], np.nan, nm)
    part["new_bands"] = np.where(nbad[:, None, None, None], np.nan, nq)
    for k in ("bands", "new_mean", "new_bands"):
        part[k] = part[k].astype(dt)
    if keep_curves:
        part["curves"] = _nan_where(o["curves"], bad[:, None])
    return part


def _split(
    o: dict[str, np.ndarray],
    g: int,
    has_re: bool,
    curves: np.ndarray | None,
    curve_ok: np.ndarray | None = None,
):
    """Mean-curve and new-run halves of a ``2G`` (or ``G``) solve, failed draws marked
    (``curve_ok`` ``(S, 2G)``: every step in range, when the curves are at some steps)."""
    mean_sl, new_sl = slice(0, g), (slice(g, 2 * g) if has_re else slice(0, g))
    mc = None if curves is None else curves[:, mean_sl]
    nc = None if curves is None else curves[:, new_sl]
    if curve_ok is not None:  # a draw out of range between the returned steps: failed
        o = o | {"codes": np.where(curve_ok[..., None], o["codes"], int(simulate.Regime.FAILED))}
    final, codes, bad = failed_draws(o["final"][:, mean_sl], o["codes"][:, mean_sl], mc)
    nfinal, ncodes, nbad = failed_draws(o["final"][:, new_sl], o["codes"][:, new_sl], nc)
    out = {"final": final, "codes": codes, "new_final": nfinal, "new_codes": ncodes}
    out["new_bad"] = nbad
    if curves is not None:
        out["curves"] = _nan_where(mc, bad)
        out["new_curves"] = _nan_where(nc, nbad)
    out["bad"] = bad
    return out


def _nan_where(curves: np.ndarray, bad: np.ndarray) -> np.ndarray:
    """Curves of a setting with a failed draw set to NaN (no band through failed solves)."""
    if not bad.any():
        return curves
    return np.where(bad.any(1)[:, None, None, None], np.nan, curves)


def _band(curves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-step mean ``(S, T, N)`` and quantiles at :data:`BAND_LEVELS` ``(S, 4, T, N)``
    over the draws (axis 1) of ``(S, G, T, N)`` curves (NaN through a NaN column)."""
    q = np.quantile(curves, np.asarray(BAND_LEVELS), axis=1)  # (4, S, T, N)
    return curves.mean(axis=1), np.moveaxis(q, 0, 1).astype(curves.dtype)

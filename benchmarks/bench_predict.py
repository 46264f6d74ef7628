"""Benchmark: ``calibrate.predict`` for 10^4 settings x 200 posterior draws (issue 18 §5).

Fits a small learning-rate family (3 C1 runs, the link ``log rho = a + c log(lr/lr_ref)``,
Laplace) and predicts 10^4 log-spaced learning rates with 200 draws each: 2 x 10^6 curves
solved, reduced to final competences and simulate.classify regimes, with and without the
per-step bands, and in float32 without them; then the issue 33 configurations: the bands
at ``--band-points`` steps (linear in between, ``calibrate.predict(band_points=...)``) in
float64 and float32 (whose quad cells are wider, ``FLOAT32_CELL_FACTOR``), each with its
agreement with the per-step float64 call (the mean-curve band at the band steps and in
between, the new-run band, finals, regime codes and regime probabilities: max |diff| and
how many differ by more than 1e-4). Prints the cold time (first call: compile + run) and
the warm time (second call, goal < 10 s). The previous implementation (one eager
``lax.map`` of 4 settings per step over ``CurveModel.curves`` with the quad grid's segment
sums, bands always) is timed on ``--baseline-settings`` settings and scaled linearly; its
results on those settings are compared with the new ones (regime codes, final
competences, bands). With ``--coarse N`` the regime labels are also computed from N-point
curves and their agreement with the ``--points`` curves is printed. JAX gets two CPU
devices (``jax_num_cpu_devices``) so the settings are sharded over both cores. Times on a
shared machine vary several-fold with its load: the load average is printed with every
figure.

Usage: python benchmarks/bench_predict.py [--settings N] [--draws N] [--points N]
    [--baseline-settings N] [--coarse N] [--compare] [--band-points K] [--quick]

``--quick``: 200 settings and 10 baseline settings (a few minutes); ``--band-points 0``
skips the issue 33 configurations.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import TypeVar

import jax
from _machine import load_average

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_num_cpu_devices", 2)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import calibrate as cal  # noqa: E402
from calibrate._predict import _fast as _predict_fast  # noqa: E402
from calibrate._predict._core import (  # noqa: E402
    BAND_LEVELS,
    _draw_arrays,
    _draw_index,
    _setting_matrix,
    curve_regimes,
)
from calibrate._solvers import fixed_substeps  # noqa: E402

TRUTH = {
    "rho[X]": 0.03, "rho[Y]": 0.05, "rho[Z]": 0.06, "delta": 0.002, "b[Y]": 0.05,
    "b[Z]": 0.05, "A0": 0.05, "K[X->Y]": 0.4, "K[X->Z]": 0.5, "K[Y->Z]": 0.5, "n": 2.0,
}  # fmt: skip
R = TypeVar("R")


def benchmark_fit(samples: int = 200) -> cal.Posterior:
    """The benchmark's fit: 3 synthetic C1 runs at lr 1e-4, 3e-4, 1e-3 (``rho`` scaled
    with lr), Laplace with ``samples`` draws and the link ``rho ~ rl.lr``."""
    lrs = [1e-4, 3e-4, 1e-3]
    run_params = [{f"rho[{n}]": TRUTH[f"rho[{n}]"] * lr / 3e-4 for n in "XYZ"} for lr in lrs]
    data = cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(5), steps=np.arange(0, 300, 10), runs=3,
        run_params=run_params, hyper={"rl.lr": lrs},
    )  # fmt: skip
    cfg = cal.FitConfig(
        method="laplace", chains=1, samples=samples,
        hierarchy=cal.Hierarchy(links=(cal.Link("rho", "rl.lr"),)),
    )  # fmt: skip
    return cal.fit(data, "C1", cfg, key=jax.random.key(0))


def baseline(post, settings, draws: int, points: int) -> dict[str, np.ndarray]:
    """The implementation before issue 18 §5's speed work, as it was (for the timing and
    the agreement check)."""
    cm = post.model
    x = jnp.asarray(_setting_matrix(post, settings))
    u, slopes = (jnp.asarray(a) for a in _draw_arrays(post, _draw_index(post, draws, None)))
    t = np.linspace(0.0, float(cm.ts[-1]), points)
    tj, idx, levels = jnp.asarray(t), jnp.asarray(cm.link_index), jnp.asarray(BAND_LEVELS)
    substeps = fixed_substeps(t, cm.config.dt)

    def one_setting(xs):
        ug = u.at[:, idx].add(slopes * xs)
        A, ok = cm.curves(cm.layout.to_natural(ug), t, substeps)
        ok = jnp.broadcast_to(ok, A.shape[:1])
        codes = jax.vmap(lambda s, o: curve_regimes(tj, s, o, cm.network.names))(A, ok)
        return {
            "mean": A.mean(axis=0),
            "bands": jnp.quantile(A, levels, axis=0),
            "final": A[:, -1, :],
            "codes": codes.astype(jnp.int8),
        }

    out = jax.lax.map(one_setting, x, batch_size=4)
    return {k: np.asarray(v) for k, v in out.items()}


def _timed(fn: Callable[[], R], reps: int = 2) -> tuple[list[float], R]:
    t0 = time.perf_counter()
    out = fn()
    times = [time.perf_counter() - t0]
    for _ in range(reps - 1):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return times, out


def main() -> None:
    ap = argparse.ArgumentParser(description="calibrate.predict for 10^4 settings x 200 draws")
    ap.add_argument("--settings", type=int, default=10_000)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--points", type=int, default=200)
    ap.add_argument("--baseline-settings", type=int, default=100)
    ap.add_argument("--coarse", type=int, default=0, help="also label from N-point curves")
    ap.add_argument(
        "--compare", action="store_true",
        help="first time the previous classifier (vmapped classify) and the new batch-last one "
        "in this one run",
    )  # fmt: skip
    ap.add_argument("--band-points", type=int, default=20, help="band steps of the new path")
    ap.add_argument("--quick", action="store_true", help="200 settings, 10 baseline settings")
    a = ap.parse_args()
    if a.quick:
        a.settings, a.baseline_settings = 200, min(a.baseline_settings, 10)
    post = benchmark_fit(max(a.draws, 200))
    settings = [{"rl.lr": float(v)} for v in np.geomspace(3e-5, 3e-3, a.settings)]
    G = min(a.draws, int(np.prod(post.shape)))
    n = a.settings * G
    print(
        f"predict {a.settings} settings x {G} draws x {a.points} points ({n:,} curves) on "
        f"{len(jax.devices())} {jax.devices()[0].platform} devices ({os.cpu_count()} cpus)"
    )
    res = {}
    if a.compare:
        for cls_, bm in (("vmap", "sort"), ("batch", "sort")):
            _predict_fast.CLASSIFIER, _predict_fast.BAND_METHOD = cls_, bm
            for bands in (True, False):
                times, _ = _timed(
                    lambda b=bands: cal.predict(
                        post, settings, max_draws=a.draws, n_points=a.points, bands=b
                    )
                )
                print(
                    f"  classifier={cls_:5} bands={bands!s:5} ({bm}): warm {times[1]:.1f} s "
                    f"({n / times[1]:,.0f} curves/s; {load_average()})"
                )
        _predict_fast.CLASSIFIER, _predict_fast.BAND_METHOD = "batch", "sort"
    for bands in (True, False):
        times, pred = _timed(
            lambda b=bands: cal.predict(
                post, settings, max_draws=a.draws, n_points=a.points, bands=b
            )
        )
        res[bands] = pred
        print(
            f"  new, bands={bands!s:5}: cold {times[0]:.1f} s, warm {times[1]:.1f} s "
            f"({n / times[1]:,.0f} curves/s warm; {load_average()}; goal < 10 s warm)"
        )
    times, p32 = _timed(
        lambda: cal.predict(
            post, settings, max_draws=a.draws, n_points=a.points, bands=False, dtype="float32"
        )
    )
    print(
        f"  new, bands=False, float32: cold {times[0]:.1f} s, warm {times[1]:.1f} s "
        f"({n / times[1]:,.0f} curves/s warm; {load_average()}); against float64: "
        f"{_agreement(p32, res[False], None)}"
    )
    if a.band_points:
        _band_points_configs(post, settings, a, res, n)
    if a.baseline_settings:
        sub = settings[:: max(1, a.settings // a.baseline_settings)][: a.baseline_settings]
        times, old = _timed(lambda: baseline(post, sub, a.draws, a.points))
        scale = a.settings / len(sub)
        print(
            f"  old (eager lax.map, segment sums, bands), {len(sub)} settings: cold "
            f"{times[0]:.1f} s, warm {times[1]:.1f} s -> {times[1] * scale:.0f} s scaled to "
            f"{a.settings} ({load_average()})"
        )
        new = cal.predict(post, sub, max_draws=a.draws, n_points=a.points)
        assert new.mean is not None and new.bands is not None
        same = float(np.mean(new.codes == old["codes"]))
        print(
            f"  agreement with old on those settings: regime codes {same:.6f} identical, "
            f"max |final diff| {np.max(np.abs(new.final - old['final'])):.1e}, max |band diff| "
            f"{np.max(np.abs(new.bands - old['bands'])):.1e}, max |mean diff| "
            f"{np.max(np.abs(new.mean - old['mean'])):.1e}"
        )
    if a.coarse:
        times, coarse = _timed(
            lambda: cal.predict(post, settings, max_draws=a.draws, n_points=a.coarse, bands=False)
        )
        fine = res[False]
        agree = float(np.mean(coarse.codes == fine.codes))
        diff = np.argwhere(coarse.codes != fine.codes)
        print(
            f"  {a.coarse}-point curves, bands=False: warm {times[1]:.1f} s ({load_average()}); "
            f"regime codes identical to the {a.points}-point ones for {agree:.6f} of "
            f"setting x draw x agent ({len(diff)} differ); max |final diff| "
            f"{np.max(np.abs(coarse.final - fine.final)):.1e}"
        )


def _agreement(new: cal.Prediction, ref: cal.Prediction, steps: np.ndarray | None) -> str:
    """Finals, regime codes and probabilities, and bands of ``new`` against ``ref``."""
    parts = [
        f"finals {np.nanmax(np.abs(new.final - ref.final)):.1e}",
        f"codes identical {np.mean(new.codes == ref.codes):.6f} "
        f"({int(np.sum(new.codes != ref.codes))} differ)",
    ]
    dp = np.abs(new.regime_probs()[0] - ref.regime_probs()[0])
    parts.append(f"regime probs {dp.max():.1e} ({int(np.sum(dp > 1e-4))} > 1e-4)")
    if new.new_final is not None and ref.new_final is not None:
        parts.append(f"new-run finals {np.nanmax(np.abs(new.new_final - ref.new_final)):.1e}")
    for name in ("bands", "new_bands"):
        x, y = getattr(new, name), getattr(ref, name)
        if x is None or y is None:
            continue
        d = np.abs(x - y)
        at = f", at the band steps {np.nanmax(d[:, :, steps]):.1e}" if steps is not None else ""
        parts.append(f"{name} {np.nanmax(d):.1e} (mean {np.nanmean(d):.1e}{at})")
    return "; ".join(parts)


def _band_points_configs(post, settings, a, res, n: int) -> None:
    """Issue 33: the bands at ``a.band_points`` steps, float64 and float32, against the
    per-step float64 call ``res[True]`` (and float32 against float64 at the same steps)."""
    from calibrate._predict._band_points import band_steps

    steps = band_steps(a.points, a.band_points)
    got = {}
    for dtype in ("float64", "float32"):
        times, got[dtype] = _timed(
            lambda d=dtype: cal.predict(
                post, settings, max_draws=a.draws, n_points=a.points,
                band_points=a.band_points, dtype=d,
            )
        )  # fmt: skip
        print(
            f"  new, bands at {a.band_points} steps, {dtype}: cold {times[0]:.1f} s, warm "
            f"{times[1]:.1f} s ({n / times[1]:,.0f} curves/s warm; {load_average()}; goal "
            f"< 10 s warm)\n    against the per-step float64 call: "
            f"{_agreement(got[dtype], res[True], steps)}"
        )
    print(
        f"  float32 against float64, both at {a.band_points} band steps: "
        f"{_agreement(got['float32'], got['float64'], None)}"
    )


if __name__ == "__main__":
    main()

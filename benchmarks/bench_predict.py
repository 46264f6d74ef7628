"""Benchmark: ``calibrate.predict`` for 10^4 settings x 200 posterior draws (issue 18 §5).

Fits a small learning-rate family (3 C1 runs, the link ``log rho = a + c log(lr/lr_ref)``,
Laplace) and predicts 10^4 log-spaced learning rates with 200 draws each: 2 x 10^6 curves
solved, reduced to bands, final competences and simulate.classify regimes. Prints the cold
time (first call: compile + run) and the warm time (second call, goal < 10 s), and the
solves per second. Times on a shared machine vary several-fold with its load: say so.

Usage: python benchmarks/bench_predict.py [--settings N] [--draws N] [--points N]
"""

from __future__ import annotations

import argparse
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

import calibrate as cal  # noqa: E402

TRUTH = {
    "rho[X]": 0.03, "rho[Y]": 0.05, "rho[Z]": 0.06, "delta": 0.002, "b[Y]": 0.05,
    "b[Z]": 0.05, "A0": 0.05, "K[X->Y]": 0.4, "K[X->Z]": 0.5, "K[Y->Z]": 0.5, "n": 2.0,
}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description="calibrate.predict for 10^4 settings x 200 draws")
    ap.add_argument("--settings", type=int, default=10_000)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--points", type=int, default=200)
    a = ap.parse_args()
    lrs = [1e-4, 3e-4, 1e-3]
    run_params = [{f"rho[{n}]": TRUTH[f"rho[{n}]"] * lr / 3e-4 for n in "XYZ"} for lr in lrs]
    data = cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(5), steps=np.arange(0, 300, 10), runs=3,
        run_params=run_params, hyper={"rl.lr": lrs},
    )  # fmt: skip
    cfg = cal.FitConfig(
        method="laplace", chains=1, samples=max(a.draws, 200),
        hierarchy=cal.Hierarchy(links=(cal.Link("rho", "rl.lr"),)),
    )  # fmt: skip
    post = cal.fit(data, "C1", cfg, key=jax.random.key(0))
    settings = [{"rl.lr": float(v)} for v in np.geomspace(3e-5, 3e-3, a.settings)]
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        pred = cal.predict(post, settings, max_draws=a.draws, n_points=a.points)
        times.append(time.perf_counter() - t0)
    n = a.settings * pred.draw_index.size
    print(
        f"predict {a.settings} settings x {pred.draw_index.size} draws x {a.points} points "
        f"({n:,} curves) on {jax.devices()[0].platform} ({os.cpu_count()} cpus, load "
        f"{os.getloadavg()[0]:.1f}): cold {times[0]:.1f} s, warm {times[1]:.1f} s "
        f"({n / times[1]:,.0f} curves/s warm; goal < 10 s warm)"
    )


if __name__ == "__main__":
    main()

"""Benchmark: NUTS fit of 3 agents x 8 runs x 60 evaluation points, 4 chains x 1000 samples.

Prints wall time and the minimum bulk ESS/s over parameters for the optimised fit
(MAP warm start by L-BFGS, Laplace-initialised dense mass matrix, over-dispersed Laplace
starts, ODE rtol 1e-5) and for the same model without those optimisations (diagonal mass,
prior-median start, rtol 1e-8) as the baseline, and their ratio. Goal on 2 cores: under
2 minutes and >= 50 bulk ESS/s for every parameter.

Usage: python benchmarks/bench_calibrate.py [--samples N] [--warmup N] [--skip-baseline]
"""

from __future__ import annotations

import argparse
import time

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

import calibrate as cal  # noqa: E402

TRUTH = {"rho[X]": 0.03, "rho[Y]": 0.05, "rho[Z]": 0.06, "delta": 0.002, "b[Y]": 0.05,
         "b[Z]": 0.05, "A0": 0.05, "K[X->Y]": 0.4, "K[X->Z]": 0.5, "K[Y->Z]": 0.5, "n": 2.0}


def run(cfg: cal.FitConfig, data: cal.CurveData, label: str) -> tuple[float, float]:
    t0 = time.perf_counter()
    post = cal.fit(data, "C1", cfg, key=jax.random.key(1))
    wall = time.perf_counter() - t0
    s = post.summary()
    d = post.diagnostics(s)
    ess = min(v["ess_bulk"] for v in s.values())
    print(f"{label:<10} wall {wall:7.1f} s  min bulk ESS {ess:7.0f}  ESS/s {ess / wall:7.2f}  "
          f"R-hat max {d['r_hat_max']:.3f}  divergences {d['divergences']}  "
          f"leapfrog/sample {d['mean_leapfrog_steps']:.0f}")
    return wall, ess / wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--skip-baseline", action="store_true")
    a = ap.parse_args()
    data = cal.synthetic_curves("C1", TRUTH, key=jax.random.key(0),
                                steps=np.linspace(0, 295, 60).round(), runs=8)
    print(f"data: {len(data.runs)} runs x {len(data.agents)} agents x 60 points; "
          f"4 chains x {a.samples} samples, {a.warmup} warmup")
    opt = cal.FitConfig(chains=4, samples=a.samples, warmup=a.warmup)
    wall, rate = run(opt, data, "optimised")
    if a.skip_baseline:
        return
    # the baseline: the same model and priors without the optimisations
    base = cal.FitConfig(chains=4, samples=a.samples, warmup=a.warmup, dense_mass=False,
                         laplace_mass=False, map_steps=0, map_starts=1, rtol=1e-8, atol=1e-10)
    b_wall, b_rate = run(base, data, "baseline")
    print(f"ratio: ESS/s {rate / b_rate:.1f}x, wall {b_wall / wall:.1f}x faster")
    print(f"goal (<120 s, >=50 ESS/s): wall {'OK' if wall < 120 else 'MISSED'}, "
          f"ESS/s {'OK' if rate >= 50 else 'MISSED'}")


if __name__ == "__main__":
    main()

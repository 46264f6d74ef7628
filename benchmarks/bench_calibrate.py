"""Benchmark: NUTS fit of 3 agents x 8 runs x 60 evaluation points, 4 chains x 1000 samples.

The data are a learning-rate family, as a user brings from a small sweep: 8 C1-wired runs
whose input agent X learns at 8 rates (log-spaced over 25x), fitted jointly with the link
``log rho[X] = a + c log lr``. (8 repeats of one configuration, where X and Y both
saturate early, leave the two thresholds into Z on a curved ridge and no sampler mixes
well there; a rate sweep separates them.)

Prints wall time and the minimum bulk ESS/s over parameters for the optimised fit
(the feed-forward ``quad`` likelihood, smooth in the parameters and without a loop over
time, or ``--solver rk4``; L-BFGS MAP warm start; NUTS in the sampling coordinates
(docs/design/sampler.md), which straighten the basal corner, the edge tails, the
learned-rate and the basal-fraction ridges; Laplace-initialised dense mass matrix whose
warm-up estimates pool the 4 chains' draws, and one shared step size, the least the
chains adapted, the pooled warm-up; over-dispersed Laplace starts, their energies
from the MAP's compiled objective) and for the same model and
priors without those optimisations (adaptive Tsit5 at rtol 1e-8, the model's own
coordinates, diagonal per-chain mass, prior-median start) as the baseline, and their
ratio. The baseline is run with fewer draws (``--baseline-samples``); ESS/s is a rate, so
the ratio stays meaningful. Goal on 2 cores: under 2 minutes and >= 50 bulk ESS/s for
every parameter.

Usage: python benchmarks/bench_calibrate.py [--samples N] [--warmup N] [--solver quad|rk4]
       [--baseline-samples N] [--skip-baseline] [--seed N] [--target-accept P]
       [--n-eval N] [--no-pool] [--oracle-mass]
       [--peers [nutpie,blackjax,numpyro]] [--peer-space z,w] [--repeats N]

``--peers`` then samples the same posterior (same log density, same Laplace starts at the
fit's MAP, same chains, warm-up and draw count) with calibrate's chains program and with
the samplers a user would pick instead (benchmarks/_peers_calibrate.py: nutpie, blackjax,
numpyro's stock dense NUTS), one after another in one process (``--repeats`` rounds in
rotated order), and prints one table: compile and sampling seconds, minimum bulk ESS,
ESS/s, R-hat, divergences, gradients per effective draw and calibrate's ratios. Peers not
installed are skipped with a message (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from _bench_posterior import TRUTH
from _machine import load_average

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    # one CPU device per chain (before JAX starts): NUTS runs the 4 chains in parallel
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    )

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import calibrate as cal  # noqa: E402
from calibrate import (  # noqa: E402
    FlatParams,
    SamplingCoords,
    draws_to_z,
    neg_log_joint_and_grad,
    unflatten,
)

LR = np.geomspace(0.004, 0.1, 8)  # rho[X] of each run (the link slope is 1)
LINKS = cal.Hierarchy(links=(cal.Link("rho", "lr", ("X",)),))


def data(n_eval: int = 100) -> cal.CurveData:
    """The benchmark's 8-run learning-rate family (binomial noise, ``n_eval`` evaluations)."""
    return cal.synthetic_curves(
        "C1",
        TRUTH,
        key=jax.random.key(0),
        steps=np.linspace(0, 295, 60).round(),
        runs=8,
        run_params=[{"rho[X]": float(v)} for v in LR],
        hyper={"lr": LR},
        n_eval=n_eval,
    )


def gradient_ms(post: cal.Posterior, reps: int = 200) -> float:
    """Best-of-5 time (ms) of one chain's log-joint gradient at the MAP (compiled, warm)."""
    cm = post.model
    x = FlatParams(cm).flatten(post.map_params)
    jax.block_until_ready(neg_log_joint_and_grad(cm, x))
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            r = neg_log_joint_and_grad(cm, x)
        jax.block_until_ready(r)
        best = min(best, (time.perf_counter() - t0) / reps * 1e3)
    return best


def ceiling(post: cal.Posterior, ess: float, goal: float = 50.0) -> None:
    """Print the ESS/s this posterior geometry allows at the gradient rate NUTS achieved.

    The rate is the fit's own: chains x (warm-up + samples) x leapfrog steps per draw over
    the NUTS seconds (warm-up trajectories taken as long as the sampling ones). The
    sampling phase turned gradients into ESS at ``ess / sum(leapfrog steps)``; their
    product is the ESS/s if warm-up, MAP and compilation were free.
    """
    steps = np.asarray(post.stats["num_steps"])
    chains, samples = steps.shape
    rate = chains * (post.model.config.warmup + samples) * steps.mean() / post.timing["inference_s"]
    per_grad = ess / steps.sum()
    print(
        f"{'':<10} ceiling: NUTS ran ~{rate:.0f} gradients/s (one gradient alone "
        f"{gradient_ms(post):.2f} ms); {per_grad:.4f} ESS per gradient -> at most "
        f"{per_grad * rate:.0f} ESS/s if warm-up, MAP and compilation were free; "
        f"{goal:.0f} ESS/s needs {goal / rate:.4f} ESS per gradient"
    )


def oracle_mass(post: cal.Posterior, seed: int, warmup: int = 300) -> None:
    """Rerun NUTS with the posterior's own covariance as a fixed dense mass matrix.

    The mass is the covariance of the fit's draws in the fit's sampling coordinates (no
    mass adaptation, ``warmup`` steps of step-size adaptation, chains started at 4 of the
    draws): the best a linear preconditioner can do there, so the ESS per draw printed is
    the geometry's bound for NUTS with a dense mass, whatever the warm-up.
    """
    from numpyro.infer import MCMC, NUTS

    cm = post.model
    names = tuple(cm.sites())
    chains, samples = post.shape
    flat = np.concatenate(
        [np.asarray(post.samples[n]).reshape(chains * samples, -1) for n in names], axis=1
    )
    coords = SamplingCoords.build(cm, enabled=cm.config.reparam)
    w = np.asarray(jax.jit(jax.vmap(coords.from_z))(jnp.asarray(flat)))
    pick = np.random.default_rng(seed).choice(len(w), chains, replace=False)
    kernel = NUTS(
        potential_fn=coords.potential,
        dense_mass=True,
        adapt_mass_matrix=False,
        inverse_mass_matrix=jnp.asarray(np.cov(w.T)),
        max_tree_depth=cm.config.max_tree_depth,
    )
    mcmc = MCMC(
        kernel,
        num_warmup=warmup,
        num_samples=samples,
        num_chains=chains,
        chain_method="parallel",
        progress_bar=False,
    )
    t0 = time.perf_counter()
    mcmc.run(
        jax.random.key(seed + 1),
        init_params=jnp.asarray(w[pick]),
        extra_fields=("diverging", "num_steps", "adapt_state.step_size"),
    )
    zs = draws_to_z(coords, mcmc.get_samples(group_by_chain=True))
    draws = {k: np.asarray(v) for k, v in unflatten(cm, zs).items()}
    seconds = time.perf_counter() - t0
    ex = mcmc.get_extra_fields(group_by_chain=True)
    stats = {k: np.asarray(ex[k]) for k in ("diverging", "num_steps")}
    # the same summary (names, ESS) as the fit's
    s = cal.Posterior(cm, draws, stats, post.map_params).summary()
    worst = min(s, key=lambda k: s[k]["ess_bulk"])
    ess = s[worst]["ess_bulk"]
    eps = np.asarray(ex["adapt_state.step_size"])[:, -1]
    print(
        f"{'oracle':<10} fixed mass = the fit's posterior covariance, {warmup} warm-up: "
        f"min bulk ESS {ess:.0f} ({worst}) = {ess / (chains * samples):.3f} per draw, "
        f"leapfrog/sample {stats['num_steps'].mean():.0f}, step size "
        f"{eps.min():.2f}-{eps.max():.2f}, divergences {int(stats['diverging'].sum())}, "
        f"NUTS {seconds:.1f} s"
    )


def run(
    cfg: cal.FitConfig, d: cal.CurveData, label: str, seed: int = 1
) -> tuple[float, float, cal.Posterior]:
    t0 = time.perf_counter()
    post = cal.fit(d, "C1", cfg, key=jax.random.key(seed))
    wall = time.perf_counter() - t0
    s = post.summary()
    diag = post.diagnostics(s)
    worst = min(s, key=lambda k: s[k]["ess_bulk"])
    ess = s[worst]["ess_bulk"]
    print(
        f"{label:<10} wall {wall:7.1f} s  min bulk ESS {ess:7.0f} ({worst})  "
        f"ESS/s {ess / wall:7.2f}  R-hat max {diag['r_hat_max']:.3f}  "
        f"divergences {diag['divergences']}  leapfrog/sample {diag['mean_leapfrog_steps']:.0f}"
        f"  ODE error {diag['solver_error']:.1e}"
    )
    tm = post.timing
    print(
        f"{'':<10} of which MAP {tm['map_s']:.1f} s, {post.model.config.method.upper()} "
        f"{tm['inference_s']:.1f} s ({diag['chain_method']} chains)"
    )
    if cfg.method == "nuts":
        ceiling(post, ess)
    return wall, ess / wall, post


def peers(
    post: cal.Posterior,
    names: list[str],
    spaces: list[str],
    seed: int,
    repeats: int,
    step_sizes: tuple[str, ...] = ("min",),
):
    """Sample ``post``'s posterior with calibrate's program and each installed peer, from the
    same starts; print the table (and a skip line per peer not installed). ``step_sizes``:
    calibrate's shared post-warm-up step size per variant (``calibrate._sampler.
    SHARED_STEP_SIZE``; the first is the reference ``calibrate``, others are rows
    ``calibrate-<name>``)."""
    import _peers_calibrate as pc

    from calibrate import _sampler

    have = pc.available()
    for n in names:
        if not have[n]:
            print(f"peers: {n} is not installed; skipped (pip install -e '.[bench]')")
    names = [n for n in names if have[n]]
    starts_w, cov_w = pc.laplace_starts(post, jax.random.key(seed + 1000))
    own = ["calibrate"] + [f"calibrate-{v}" for v in step_sizes[1:]]
    jobs = [(n, "w") for n in own] + [(n, sp) for sp in spaces for n in names]
    variant = dict(zip(own, step_sizes, strict=True))
    runners = {
        "nutpie": pc.run_nutpie,
        "blackjax": pc.run_blackjax,
        "numpyro": pc.run_numpyro,
    }
    rows: list[dict] = []
    for r in range(repeats):
        k = r % len(jobs)
        for name, space in jobs[k:] + jobs[:k]:  # rotated: load drifts hit all alike
            pb = pc.problem(post, space, starts_w)
            if name in variant:
                default, _sampler.SHARED_STEP_SIZE = _sampler.SHARED_STEP_SIZE, variant[name]
                row = pc.run_calibrate(pb, cov_w, seed + r) | {"method": name}
                _sampler.SHARED_STEP_SIZE = default
            else:
                row = runners[name](pb, seed + r)
            row["load"] = load_average()
            row["round"] = r
            rows.append(row)
            print(
                f"  [{r}] {name:<10} {space}: sample {row['sample_s']:.1f} s, min ESS "
                f"{row['ess']:.0f} ({row['worst']}), load {row['load']}",
                flush=True,
            )
    for r in range(repeats):
        print(f"== peers, round {r} (same posterior, starts and draw count)")
        print(pc.table([x for x in rows if x["round"] == r], load=load_average()))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument(
        "--baseline-samples",
        type=int,
        default=200,
        help="draws and warm-up steps per chain of the (slow) baseline",
    )
    ap.add_argument("--skip-baseline", action="store_true")
    ap.add_argument(
        "--solver",
        default="quad",
        choices=("quad", "rk4"),
        help="likelihood solver of the optimised fit",
    )
    ap.add_argument(
        "--dt", type=float, default=5.0, help="largest RK4 step / quad cell (training steps)"
    )
    ap.add_argument("--target-accept", type=float, default=0.8)
    ap.add_argument("--seed", type=int, default=1, help="sampler seed (the data are fixed)")
    ap.add_argument(
        "--n-eval",
        type=int,
        default=100,
        help="evaluations per point (more data: a more Gaussian posterior)",
    )
    ap.add_argument(
        "--no-pool",
        action="store_true",
        help="per-chain warm-up mass estimates (numpyro's own), not pooled",
    )
    ap.add_argument(
        "--oracle-mass",
        action="store_true",
        help="then rerun NUTS with the posterior's covariance as a fixed mass "
        "(the geometry's bound on ESS per draw)",
    )
    ap.add_argument(
        "--peers",
        nargs="?",
        const="nutpie,blackjax,numpyro",
        help="also sample with calibrate's program and these peers (comma-separated; "
        "default all): the same log density, starts and draws",
    )
    ap.add_argument(
        "--peer-space",
        default="z,w",
        help="the peers' coordinates: z (the model's, as a user would) and/or w "
        "(calibrate's sampling coordinates)",
    )
    ap.add_argument("--repeats", type=int, default=1, help="rounds of the peer comparison")
    ap.add_argument(
        "--step-sizes",
        default="median",
        help="calibrate's shared step size after the warm-up, one row per variant "
        "(comma-separated: median (calibrate's), min; the first is the reference row)",
    )
    ap.add_argument("--rows-json", default=None, help="also write every round's rows here")
    a = ap.parse_args()
    names = [n for n in (a.peers or "").split(",") if n]
    spaces = [v for v in a.peer_space.split(",") if v]
    bad = [n for n in names if n not in ("nutpie", "blackjax", "numpyro")]
    steps = tuple(v for v in a.step_sizes.split(",") if v)
    if bad or any(v not in ("z", "w") for v in spaces) or a.repeats < 1:
        ap.error("--peers: nutpie, blackjax, numpyro; --peer-space: z and/or w; --repeats >= 1")
    if not steps or any(v not in ("min", "median") for v in steps):
        ap.error("--step-sizes: min and/or median")
    if a.rows_json and Path(a.rows_json).exists():
        ap.error(f"--rows-json {a.rows_json}: exists (not overwritten)")
    d = data(a.n_eval)
    print(
        f"data: {len(d.runs)} runs x {len(d.agents)} agents x 60 points x {a.n_eval} evals; "
        f"4 chains x {a.samples} samples, {a.warmup} warmup"
    )
    opt = cal.FitConfig(
        chains=4,
        samples=a.samples,
        warmup=a.warmup,
        solver=a.solver,
        dt=a.dt,
        hierarchy=LINKS,
        chain_method="parallel",
        target_accept=a.target_accept,
        pool_adaptation=not a.no_pool,
    )
    wall, rate, post = run(opt, d, "optimised", a.seed)
    if a.oracle_mass:
        oracle_mass(post, a.seed)
    if a.peers:
        rows = peers(post, names, spaces, a.seed, a.repeats, steps)
        if a.rows_json:
            Path(a.rows_json).write_text(json.dumps(rows, indent=1, default=float))
    if not a.skip_baseline:
        n = a.baseline_samples
        base = cal.FitConfig(
            chains=4,
            samples=n,
            warmup=n,
            dense_mass=False,
            chain_method="vectorized",
            laplace_mass=False,
            reparam=False,
            pool_adaptation=False,
            map_steps=0,
            map_starts=1,
            solver="tsit5",
            rtol=1e-8,
            atol=1e-10,
            hierarchy=LINKS,
        )
        _, b_rate, _ = run(base, d, "baseline", a.seed)
        print(f"ratio: ESS/s {rate / b_rate:.1f}x")
    print(
        f"goal (<120 s, >=50 ESS/s): wall {'OK' if wall < 120 else 'MISSED'}, "
        f"ESS/s {'OK' if rate >= 50 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()

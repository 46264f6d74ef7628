"""Benchmark: ``calibrate.predict`` with the new-run bands at 10^4 settings (issue 33 §2).

Times ``calibrate.predict(post, settings, max_draws=200, n_points=200, band_points=K,
dtype=...)`` on the benchmark's fit (``bench_predict.benchmark_fit``: 3 synthetic C1 runs,
the link ``rho ~ rl.lr``) for ``--settings`` log-spaced learning rates, with JAX on two
CPU devices. Each checkout runs in its own interpreter (this script in ``--worker`` mode,
with the checkout first on ``PYTHONPATH``): one cold call (compile + run), then ``--reps``
warm calls. With ``--against DIR`` (another checkout of this project, e.g. a ``git
worktree`` at an earlier commit) both are timed in turn for ``--rounds`` rounds, and the
ratio of the best warm times is printed with the agreement of the two forecasts on the
first ``--agree`` settings: finals, regime codes and probabilities, the mean-curve bands
(the same solves, so equal to float rounding: both load one fit, made by this checkout)
and the new-run bands (each draws its own
evaluation noise, so they differ by Monte Carlo noise; the median |difference| is shown).
The load average is printed with every figure: measure on a quiet machine.

Usage: python benchmarks/bench_predict_bands.py [--settings N] [--band-points K]
    [--dtype float32|float64] [--reps N] [--rounds N] [--against DIR] [--agree N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def worker(a: argparse.Namespace) -> None:
    """Time predict in the checkout ``a.worker`` and save the first settings' arrays."""
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_num_cpu_devices", 2)
    import numpy as np

    import calibrate as cal

    if Path(cal.__file__).resolve().parents[1] != Path(a.worker).resolve():
        raise SystemExit(f"error: imported calibrate from {cal.__file__}, not {a.worker}")
    if a.fit:  # always with --against: the worker then needs none of this benchmarks/
        post = cal.load_fit(a.fit)
    else:  # this checkout alone
        from bench_predict import benchmark_fit

        post = benchmark_fit(200)
    settings = [{"rl.lr": float(v)} for v in np.geomspace(3e-5, 3e-3, a.settings)]
    times = []
    pred = None
    for _ in range(1 + a.reps):
        t0 = time.perf_counter()
        pred = cal.predict(
            post, settings, max_draws=a.draws, n_points=a.points, band_points=a.band_points,
            dtype=a.dtype,
        )  # fmt: skip
        times.append(time.perf_counter() - t0)
    if pred is None or pred.bands is None or pred.new_bands is None:
        raise SystemExit("error: the forecast has no bands")
    k = a.agree
    np.savez(
        a.out, final=pred.final[:k], codes=pred.codes[:k], bands=pred.bands[:k],
        new_bands=pred.new_bands[:k], probs=pred.regime_probs()[0][:k],
    )  # fmt: skip
    print(json.dumps({"cold": times[0], "warm": times[1:], "calibrate": cal.__file__}))


def run(checkout: Path, a: argparse.Namespace, out: Path) -> dict:
    """One worker process in ``checkout``."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    cmd = [sys.executable, __file__, "--worker", str(checkout), "--out", str(out), *_pass(a)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=checkout)
    if done.returncode:
        raise SystemExit(f"error: the worker in {checkout} failed:\n{done.stderr[-3000:]}")
    return json.loads((done.stdout or "").strip().splitlines()[-1])


def _pass(a: argparse.Namespace) -> list[str]:
    keys = ("settings", "draws", "points", "band_points", "dtype", "reps", "agree", "fit")
    return [x for k in keys if getattr(a, k) is not None
            for x in (f"--{k.replace('_', '-')}", str(getattr(a, k)))]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--settings", type=int, default=10_000)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--points", type=int, default=200)
    ap.add_argument("--band-points", type=int, default=20)
    ap.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    ap.add_argument("--reps", type=int, default=2, help="warm calls per worker")
    ap.add_argument("--rounds", type=int, default=1, help="workers per checkout, in turn")
    ap.add_argument("--agree", type=int, default=200, help="settings compared")
    ap.add_argument("--against", default=None, help="another checkout to time beside this")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--fit", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a)
    if min(a.settings, a.reps, a.rounds, a.agree) < 1:
        ap.error("--settings, --reps, --rounds and --agree must be >= 1")
    from _machine import checkouts as find_checkouts
    from _machine import load_average

    checkouts = find_checkouts(ap, a.against, ROOT)
    print(
        f"predict {a.settings} settings x {a.draws} draws x {a.points} points, new-run bands "
        f"at {a.band_points} steps, {a.dtype}, 2 CPU devices ({os.cpu_count()} cpus)"
    )
    tmp = Path(tempfile.mkdtemp(prefix="bench_predict_bands_"))
    if len(checkouts) > 1:  # one fit for both: a refit in each checkout samples its own
        a.fit = str(_shared_fit(tmp / "fit"))  # posterior (NUTS is chaotic in rounding)
    best: dict[str, float] = {}
    for r in range(a.rounds):
        for name, path in checkouts.items():
            res = run(path, a, tmp / f"{name}.npz")
            warm = min(res["warm"])
            best[name] = min(best[name], warm) if name in best else warm
            print(
                f"  round {r + 1} {name:8} cold {res['cold']:.1f} s, warm "
                f"{', '.join(f'{w:.1f}' for w in res['warm'])} s ({load_average()}; goal "
                f"< 10 s warm)  [{Path(res['calibrate']).parent.parent}]",
                flush=True,
            )
    if "against" in best:
        print(f"  best warm this / against: {best['this'] / best['against']:.2f}")
        _agreement(tmp / "this.npz", tmp / "against.npz", a.agree)


def _shared_fit(out: Path) -> Path:
    """The benchmark's fit made by this checkout, saved for every worker to load."""
    import jax

    jax.config.update("jax_enable_x64", True)
    from bench_predict import benchmark_fit

    benchmark_fit(200).save(out, figure=False)
    return out


def _agreement(this: Path, other: Path, k: int) -> None:
    import numpy as np

    x, y = np.load(this), np.load(other)
    nb = np.abs(x["new_bands"] - y["new_bands"])
    print(
        f"  on the first {k} settings: finals {np.nanmax(np.abs(x['final'] - y['final'])):.1e}, "
        f"codes identical {np.mean(x['codes'] == y['codes']):.6f}, regime probs "
        f"{np.max(np.abs(x['probs'] - y['probs'])):.1e}, mean-curve bands "
        f"{np.nanmax(np.abs(x['bands'] - y['bands'])):.1e}, new-run bands median "
        f"{np.nanmedian(nb):.1e} (max {np.nanmax(nb):.1e}; Monte Carlo)"
    )


if __name__ == "__main__":
    main()

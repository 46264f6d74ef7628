"""Benchmark: one forecast from the shell, ``python -m calibrate predict FIT --set ...``
(issue 33 §2: < 5 s warm on 2 quiet cores).

Fits and saves the predict benchmark's fit (``bench_predict.benchmark_fit``) once (into
``--work``, reused there on a later run), then times the command as a user runs it, a new
interpreter each call: one cold call (an empty persistent compilation cache) and
``--calls`` warm ones (median, range). With ``--against DIR`` (a checkout of another
revision of this project) the same calls are made from there too, interleaved with this
checkout's, so the load hits both alike, and the ratio of the medians is printed. Both use
this interpreter; each checkout's own packages come first on its path (``python -m`` puts
the working directory first). The caches are a new folder under ``--work`` each run.

Usage: python benchmarks/bench_predict_shell.py [--calls N] [--against DIR] [--work DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _machine import checkouts as find_checkouts
from _machine import load_average

ROOT = Path(__file__).resolve().parents[1]
SETTING = "rl.lr=5e-4"


def save_fit(folder: Path) -> None:
    """``bench_predict.benchmark_fit``, saved to ``folder`` (a new interpreter: its own JAX)."""
    code = (
        "from bench_predict import benchmark_fit; "  # -c: the working folder, benchmarks/
        f"benchmark_fit().save({str(folder)!r}, figure=False)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT / "benchmarks")


def call(checkout: Path, fit: Path, cache: Path) -> float:
    """Wall seconds of one ``calibrate predict`` from ``checkout`` (a new interpreter)."""
    env = {**os.environ, "AGENTMOTIFS_JAX_CACHE": str(cache)}
    cmd = [sys.executable, "-m", "calibrate", "predict", str(fit), "--set", SETTING]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"error: {checkout}: calibrate predict failed: {out.stderr[-500:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10, help="warm calls per checkout")
    ap.add_argument("--against", default=None, help="another checkout to time beside this one")
    ap.add_argument("--work", default=None, help="folder for the fit and the caches")
    a = ap.parse_args()
    if a.calls < 1:
        ap.error("--calls must be >= 1")
    checkouts = find_checkouts(ap, a.against, ROOT)
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="bench_predict_shell_"))
    fit = work / "fit"
    if fit.exists() and not (fit / "latent.npz").is_file():
        ap.error(f"--work {a.work}: {fit} exists and is not a saved fit")
    if not fit.exists():
        work.mkdir(parents=True, exist_ok=True)
        save_fit(fit)
    caches = Path(tempfile.mkdtemp(prefix="caches_", dir=work))  # new: nothing of yours reused
    print(f"calibrate predict {fit} --set {SETTING} ({os.cpu_count()} cpus, load {load_average()})")
    times: dict[str, list[float]] = {k: [] for k in checkouts}
    for name, path in checkouts.items():
        cache = caches / name
        print(f"  {name:8} cold (empty cache): {call(path, fit, cache):.2f} s  ({path})")
    for _ in range(a.calls):
        for name, path in checkouts.items():
            times[name].append(call(path, fit, caches / name))
    for name, t in times.items():
        print(
            f"  {name:8} warm, {len(t)} calls: median {statistics.median(t):.2f} s "
            f"({min(t):.2f}-{max(t):.2f}); goal < 5 s"
        )
    if "against" in times:
        ratio = statistics.median(times["this"]) / statistics.median(times["against"])
        print(f"  ratio of the medians this / against: {ratio:.2f} (load {load_average()})")


if __name__ == "__main__":
    main()

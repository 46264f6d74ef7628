"""What the real-run study drivers share (paper/pool_study.py, paper/hypotheses_study.py):
training a list of runs resumably, two at a time, and the command line of a study whose
phases train runs, store the simulator's predictions once, and summarise.

A study module provides a dataclass design with ``jobs(phase)`` and ``train_config(*job)``, a
``run_name(*job)``, a ``QUICK`` dict of toy sizes and the names of its phases."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import importlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _subproc import call_logged

from llm_runs.runlog import git_revision, is_terminal
from simulate.common import write_json

__all__ = [
    "fit_pilots",
    "git_revision",
    "now",
    "simulator_params",
    "store_once",
    "study_main",
    "train_phase",
]


def now() -> str:
    """The time in UTC, ISO 8601 to the second."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def store_once(path: Path, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Forecasts stored once: the stored document when ``path`` exists (a note says it is
    kept), else ``make()`` stamped with the time it is stored (``created``, UTC) and the
    checkout's ``git_revision``, written atomically and never over a file that appeared
    meanwhile.

    Raises:
        RuntimeError: ``path`` was written by someone else while ``make()`` ran.
    """
    if path.is_file():
        print(f"note: {path} exists (predictions are made once); kept as it is", flush=True)
        return json.loads(path.read_text())
    body = make()
    doc = {"created": now(), "git_revision": git_revision(), **body}
    tmp = write_json(path.with_name(f".{path.name}.{os.getpid()}.new"), doc)
    try:
        os.link(tmp, path)  # fails if path exists: a forecast is never overwritten
    except FileExistsError:
        raise RuntimeError(f"{path} was written while these predictions were made") from None
    finally:
        tmp.unlink()
    return doc


def _train(name: str, config: dict[str, Any], runs: Path, code: str | None) -> str:
    """Train (or resume, or skip when finished) one run; returns its folder name."""
    out = (runs / name).resolve()
    man = out / "manifest.json"
    if man.is_file() and is_terminal(json.loads(man.read_text()).get("status")):
        return name
    conf = (runs / "configs" / f"{name}.json").resolve()
    write_json(conf, config)
    args = [sys.executable, "-m", "llm_runs", "train", "--out", str(out), "--no-progress"]
    args += ["--resume"] if man.is_file() else ["--config", str(conf)]
    call_logged(args, runs / "logs" / f"{name}.log", cwd=code, what=f"training {name}")
    return name


def train_phase(
    cfg: Any, phase: str, runs: Path, workers: int, code: str | None, run_name: Callable
) -> None:
    """Train every run of ``cfg.jobs(phase)``, ``workers`` at a time, printing progress."""
    jobs = cfg.jobs(phase)
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=workers) as ex:
        futs = [ex.submit(_train, run_name(*j), cfg.train_config(*j), runs, code) for j in jobs]
        for i, f in enumerate(futs, 1):
            print(f"  [{i}/{len(jobs)}] {f.result()}  ({time.time() - t0:.0f} s)", flush=True)


def _error(msg: str) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return 2


def study_main(
    argv: list[str] | None,
    *,
    description: str,
    design: type,
    quick: dict[str, Any],
    run_name: Callable,
    phases: list[str],
    gated: str | None,
    default_runs: str,
    default_out: str,
    steps: dict[str, str],
) -> int:
    """The command line of a study.

    Args:
        argv: Arguments (None: ``sys.argv``).
        description: The ``--help`` line.
        design: The design dataclass (``design()`` or ``design(**quick)``); a ``bind(out)``
            method, if it has one, is called with the results folder before any phase.
        quick: Toy sizes for ``--quick``.
        run_name: ``run_name(*job)`` -> the run's folder name.
        phases: The phases in order; those not in ``steps`` train ``cfg.jobs(phase)``.
        gated: The training phase refused on its own until ``predictions.json`` exists
            (None: no phase is gated).
        default_runs: Default ``--runs``.
        default_out: Default ``--out``.
        steps: Non-training phases: ``phase -> "module:function"``, the function called as
            ``function(cfg, runs, out)`` (imported when its phase runs).

    Returns:
        0, or 2 with one ``error:`` line (bad option, another stored design, predictions
        missing before the gated phase, a phase that failed: a run, a fit, or a phase
        that needs an earlier one).
    """
    ap: argparse.ArgumentParser = importlib.import_module("simulate").ArgumentParser(
        description=description
    )  # one error: line for a bad option
    ap.add_argument("--phase", default="all", choices=[*phases, "all"])
    ap.add_argument("--runs", default=default_runs)
    ap.add_argument("--out", default=default_out)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--code", default=None, help="train with the llm_runs of this source tree")
    ap.add_argument("--quick", action="store_true", help="toy sizes (micro base), for tests")
    a = ap.parse_args(argv)
    if a.workers < 1:
        return _error(f"--workers must be >= 1, got {a.workers}")
    if a.code is not None and not (Path(a.code) / "llm_runs").is_dir():
        return _error(f"--code {a.code} is not a source tree with llm_runs/")
    cfg = design(**quick) if a.quick else design()
    runs, out = Path(a.runs), Path(a.out)
    stored = out / "config.json"
    if stored.is_file() and json.loads(stored.read_text()) != dataclasses.asdict(cfg):
        return _error(f"{stored} holds another study design")
    todo = phases if a.phase == "all" else [a.phase]
    if todo == [gated] and not (out / "predictions.json").is_file():
        return _error(
            f"{out / 'predictions.json'} is missing: the simulator's predictions are stored "
            f"before the {gated} runs (run --phase predict)"
        )
    out.mkdir(parents=True, exist_ok=True)
    if hasattr(cfg, "bind"):
        cfg.bind(out)
    if not stored.is_file():
        write_json(stored, dataclasses.asdict(cfg))
    for ph in todo:
        print(f"== {ph} ({now()})", flush=True)
        try:
            if ph in steps:
                module, func = steps[ph].split(":")
                getattr(importlib.import_module(module), func)(cfg, runs, out)
            else:
                train_phase(cfg, ph, runs, a.workers, a.code, run_name)
        except RuntimeError as err:  # a failed run or fit, a phase run out of order
            return _error(f"phase {ph}: {err}")
    return 0


def fit_pilots(inputs: list[str], fit_dir: Path, *, what: str) -> None:
    """``calibrate fit`` (C1, AND, Laplace) of the run folders ``inputs`` into ``fit_dir``,
    unless a posterior is already there.

    Raises:
        RuntimeError: The fit failed; the message names ``what``.
    """
    if (fit_dir / "posterior.nc").is_file():
        return
    args = [sys.executable, "-m", "calibrate", "fit", *inputs, "--motif", "C1", "--gate", "AND",
            "--method", "laplace", "--out", str(fit_dir), "--no-progress"]  # fmt: skip
    if subprocess.call(args) != 0:
        raise RuntimeError(f"calibrate fit of {what} failed")


def simulator_params(params: dict[str, Any]) -> dict[str, Any]:
    """The entries of a fit's ``params()`` that name simulator parameters (``rho[X]``,
    ``K[X->Y]``...); observation-model parameters (noise, dispersion) are dropped."""
    import simulate

    keep = {}
    for k, v in params.items():
        try:
            simulate.parse_param_name(k)
        except simulate.SpecError:
            continue
        keep[k] = v
    return keep

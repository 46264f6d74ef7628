"""What the real-run study drivers under ``paper/`` share: the command line of a study whose
phases train runs, store the simulator's predictions once, and summarise, on the toolkit's
study loop (:class:`calibrate.Study`: the design stored once and checked, runs trained,
resumed or kept, fits, forecasts stored once, stages with timings).

A study module provides a dataclass design with ``jobs(phase)`` and ``train_config(*job)``, a
``run_name(*job)``, a ``QUICK`` dict of toy sizes and the names of its phases."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from calibrate import Study, fit_runs, store_once
from llm_runs.runlog import git_revision
from simulate.common import AgentmotifsError, utc_now, write_json

__all__ = [
    "fit_pilots",
    "git_revision",
    "now",
    "refit",
    "run_config",
    "simulator_params",
    "store_once",
    "study_main",
    "train_phase",
]

#: The time in UTC, ISO 8601 to the second.
now = utc_now


def run_config(
    design: Any, *, network: dict[str, Any], rl: dict[str, Any], seed: int, name: str
) -> dict[str, Any]:
    """The llm_runs config of one run of a study on the testbed: the design's ``task``,
    ``preset``, ``steps`` and ``eval_every``, a checkpoint every 50 steps (every evaluation for
    runs under 100 steps), one torch thread."""
    return {
        "task": {"name": design.task},
        "model": {"preset": design.preset},
        "network": network,
        "rl": rl,
        "steps": design.steps,
        "eval_every": design.eval_every,
        "ckpt_every": 50 if design.steps >= 100 else design.eval_every,
        "seed": seed,
        "threads": 1,
        "name": name,
    }


def train_phase(study: Study, cfg: Any, phase: str, runs: Path, run_name: Callable) -> None:
    """Train every run of ``cfg.jobs(phase)`` (or resume it, or keep it when it has ended),
    ``study.workers`` at a time, one line per run as it ends; each run's config is written
    to ``runs/configs/<name>.json``."""
    todo = []
    for job in cfg.jobs(phase):
        name = run_name(*job)
        conf = write_json((runs / "configs" / f"{name}.json").resolve(), cfg.train_config(*job))
        todo.append(((runs / name).resolve(), ["--config", str(conf), "--no-progress"]))
    study.train(todo, desc=phase, steps=None)


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
    simulate = importlib.import_module("simulate")
    ap: argparse.ArgumentParser = simulate.ArgumentParser(
        description=description
    )  # one error: line for a bad option
    ap.add_argument("--phase", default="all", choices=[*phases, "all"])
    ap.add_argument("--runs", default=default_runs)
    ap.add_argument("--out", default=default_out)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--code", default=None, help="train with the llm_runs of this source tree")
    ap.add_argument("--quick", action="store_true", help="toy sizes (micro base), for tests")
    a = ap.parse_args(argv)
    # the fits and forecasts of a phase load their compiled programs when run again
    simulate.enable_compilation_cache()
    if a.workers < 1:
        return _error(f"--workers must be >= 1, got {a.workers}")
    cfg = design(**quick) if a.quick else design()
    runs, out = Path(a.runs), Path(a.out)
    for flag, path in (("--out", out), ("--runs", runs)):
        if path.exists() and not path.is_dir():
            return _error(f"{flag} {path} is a file: name a folder (new, or one this study made)")
    if runs.is_dir() and not _study_runs(runs):
        return _error(f"--runs {runs} holds files that are no study's runs; it is never written "
                      "into: choose a new or empty folder")  # fmt: skip
    todo = phases if a.phase == "all" else [a.phase]
    if todo == [gated] and not (out / "predictions.json").is_file():
        return _error(
            f"{out / 'predictions.json'} is missing: the simulator's predictions are stored "
            f"before the {gated} runs (run --phase predict)"
        )
    if hasattr(cfg, "bind"):
        cfg.bind(out)

    current: list[str | None] = [None]

    def stage(ph: str) -> Callable[[], None]:
        def do() -> None:
            current[0] = ph
            print(f"== {ph} ({now()})", flush=True)
            if ph in steps:
                module, func = steps[ph].split(":")
                getattr(importlib.import_module(module), func)(cfg, runs, out)
            else:
                train_phase(study, cfg, ph, runs, run_name)

        return do

    try:
        study = Study(out, dataclasses.asdict(cfg), design_file="config.json",
                      workers=a.workers, code=a.code, progress=False, logs=runs / "logs",
                      run_lines=True, echo=lambda line: print(line, flush=True),
                      overwrite_flag=None)  # fmt: skip
    except AgentmotifsError as err:
        return _error(str(err))
    try:
        with study:
            study.run([(ph, stage(ph)) for ph in todo])
    except (RuntimeError, AgentmotifsError) as err:  # a failed run or fit, a phase out of order
        return _error(f"phase {current[0]}: {err}" if current[0] else str(err))
    return 0


def _study_runs(runs: Path) -> bool:
    """Whether a folder is empty or holds what a study writes there (its ``logs``, run
    folders with a ``manifest.json``, ``configs``, an archive's restored runs)."""
    ours = {"logs", "configs"}
    marks = ("manifest.json", "run.lock", "competence.jsonl")  # a run, even one cut short
    for entry in runs.iterdir():
        if entry.name in ours or entry.name.startswith("."):
            continue
        if not entry.is_dir():
            return False
        if any(entry.iterdir()) and not any(any(entry.rglob(m)) for m in marks):
            return False
    return True


def fit_pilots(inputs: list[str], fit_dir: Path, *, what: str) -> None:
    """``calibrate fit`` (C1, AND, Laplace) of the run folders ``inputs`` into ``fit_dir``,
    unless a posterior is already there.

    Raises:
        RuntimeError: The fit failed; the message names ``what``.
    """
    if not inputs:
        raise RuntimeError(f"no runs to fit for {what}: train them first (their phase)")
    args = ["--motif", "C1", "--gate", "AND", "--method", "laplace"]
    try:
        fit_runs(inputs, fit_dir, args=args, log=fit_dir.parent / "logs" / f"{fit_dir.name}.log")
    except AgentmotifsError as err:
        raise RuntimeError(f"calibrate fit of {what} failed: {err}") from None


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


def refit(
    source: Path,
    out: Path,
    *,
    folder: str = "fit",
    links: tuple = (),
    replace_links: bool = False,
    data: Path | None = None,
) -> Path:
    """The pilots' fit, refitted from the committed data and config (kept in ``out/folder``);
    ``links``: link dicts (as the config's ``hierarchy.links``) added to the config's, or in
    their place with ``replace_links``; ``data``: another data file (default the committed
    ``fit/data.parquet``)."""
    from calibrate import run_command

    fit = out / folder
    if not (fit / "latent.npz").is_file():
        net = json.loads((source / "fit" / "network.json").read_text())
        config = source / "fit" / "config.json"
        if links or replace_links:
            doc = json.loads(config.read_text())
            kept = [] if replace_links else doc["hierarchy"]["links"]
            doc["hierarchy"]["links"] = [*kept, *links]
            config = out / f"{folder}_config.json"
            config.write_text(json.dumps(doc, indent=2) + "\n")
        data = data or source / "fit" / "data.parquet"
        args = [sys.executable, "-m", "calibrate", "fit", str(data),
                "--network", str(source / "fit" / "network.json"), "--out", str(fit),
                "--config", str(config), "--no-progress", "--figures", "none"]  # fmt: skip
        log = out / f"{folder}.log"
        print(f"refitting {net.get('name', 'the pilots')} (log: {log})", flush=True)
        run_command(args, log)
    return fit

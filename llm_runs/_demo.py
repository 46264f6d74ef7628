"""The main job, ``python -m llm_runs demo``: pilots → fit → motif selection →
recommendation → confirmation run → report.

Every stage runs the toolkit's own command line in a child process (the same commands a
user would type; their output goes to ``OUT/logs/<stage>.log``) and prints one line when
it ends; a progress bar follows the child's own progress inside a stage. A stage whose
output is complete is reused, so a second call (or a call after an interruption) picks up
where the first stopped; an interrupted training run is resumed from its checkpoint.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from simulate.common import (
    ConfigError,
    OutputError,
    check_writable,
    read_json_object,
    read_text,
    write_json,
    write_text,
)

from ._children import Bar, StageError, call, progress_of, stop_children_on_interrupt
from ._demo_config import DemoConfig, pilot_name
from ._runfolder import LOCK_FILE, RunLock
from .runlog import is_terminal, read_manifest

__all__ = ["STAGES", "DemoInterrupted", "StageError", "progress_of", "run_demo"]

#: The stages, in order.
STAGES = ("base", "pilots", "fit", "recommend", "confirm", "report")


class DemoInterrupted(KeyboardInterrupt):
    """SIGINT during the demo: its child commands were stopped (``stage``: the one running)."""

    def __init__(self, stage: str) -> None:
        super().__init__(stage)
        self.stage = stage


def _py(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def _run_status(folder: Path) -> str | None:
    """A run folder's manifest status (None: no run there yet)."""
    man = folder / "manifest.json"
    if not man.is_file():
        return None
    return str(read_manifest(folder).get("status"))


def _train(args: list[str], folder: Path, log: Path, bar: Bar | None) -> bool:
    """Train (or resume, or keep) one run; True when it was already finished."""
    status = _run_status(folder)
    if is_terminal(status):
        return True
    if status is not None:
        args = _py("llm_runs", "train", "--out", str(folder), "--resume")
    call(args, log, bar, tag=folder.name)
    return False


class _Demo:
    def __init__(self, out: Path, cfg: DemoConfig, progress: bool) -> None:
        self.out, self.cfg, self.progress = out, cfg, progress
        self.logs = out / "logs"

    # -- stages: each returns (what it did, reused) ----------------------------------------
    def base(self) -> tuple[str, bool]:
        preset = self.cfg.preset
        bar = Bar("pretrain", None, self.progress)
        try:
            text = call(
                _py("llm_runs", "pretrain", "--task", self.cfg.task, "--preset", preset),
                self.logs / "base.log", bar, tag=f"pretrain {preset}",
            )  # fmt: skip
        finally:
            bar.close()
        info = json.loads(text)
        what = f"{preset} base, {info.get('n_params', 0):,} parameters"
        return what + ("" if bar.seen else " (from the cache)"), not bar.seen

    def pilots(self) -> tuple[str, bool]:
        cfg = self.cfg
        folders = [self.out / "pilots" / pilot_name(s) for s in cfg.pilots]
        todo = sum(not is_terminal(_run_status(f)) for f in folders)
        bar = Bar("pilots", todo * cfg.pilot_steps, self.progress)

        def one(setting: dict[str, Any], folder: Path) -> bool:
            args = _py(
                "llm_runs", "train", "--out", str(folder), "--motif", cfg.motifs[0],
                "--gate", cfg.gate, "--task", cfg.task, "--preset", cfg.preset,
                "--steps", str(cfg.pilot_steps), "--eval-every", str(cfg.eval_every),
                "--seed", str(cfg.seed), "--threads", "1",
                "--set", f"rl.lr={setting['rl.lr']!r}",
                "--set", f"rl.staleness={setting['rl.staleness']}",
            )  # fmt: skip
            return _train(args, folder, self.logs / f"pilot_{folder.name}.log", bar)

        try:
            with ThreadPoolExecutor(max_workers=cfg.workers) as ex:
                kept = list(ex.map(one, cfg.pilots, folders))
        finally:
            bar.close()
        what = f"{len(folders)} runs x {cfg.pilot_steps} steps of {cfg.motifs[0]}-{cfg.gate}"
        return what, all(kept)

    def fit(self) -> tuple[str, bool]:
        fit = self.out / "fit"
        if (fit / "selection.json").is_file() or (fit / "posterior.nc").is_file():
            return f"{','.join(self.cfg.motifs)} -> {self.fit_dir().name}", True
        links = write_json(self.out / "links.json", self.cfg.links())
        runs = [str(self.out / "pilots" / pilot_name(s)) for s in self.cfg.pilots]
        bar = Bar("fit", None, self.progress)
        try:
            call(
                _py("calibrate", "fit", *runs, "--motif", ",".join(self.cfg.motifs),
                    "--gate", self.cfg.gate, "--hierarchy", str(links), "--method", "laplace",
                    "--out", str(fit), "--no-progress"),
                self.logs / "fit.log", bar,
            )  # fmt: skip
        finally:
            bar.close()
        return f"{','.join(self.cfg.motifs)} -> {self.fit_dir().name}", False

    def fit_dir(self) -> Path:
        """The fit the recommendation uses: the selection's best motif (or the only fit)."""
        fit = self.out / "fit"
        sel = fit / "selection.json"
        if sel.is_file():
            return fit / "fits" / str(read_json_object(sel, what="selection")["best"])
        return fit

    def recommend(self) -> tuple[str, bool]:
        rec = self.out / "rec"
        if (rec / "recommendation.json").is_file() and (rec / "best.yaml").is_file():
            return self._best_line(), True
        space = write_text(self.out / "space.yaml", yaml.safe_dump(self.cfg.space()))
        call(
            _py("calibrate", "recommend", str(self.out / "fit"), "--space", str(space),
                "--out", str(rec), "--draws", str(self.cfg.draws)),
            self.logs / "recommend.log",
        )  # fmt: skip
        if not (rec / "best.yaml").is_file():
            raise StageError(f"recommend wrote no best.yaml (log: {self.logs / 'recommend.log'})")
        write_text(self.out / "recommendation.json", read_text(rec / "recommendation.json"))
        return self._best_line(), False

    def _best_line(self) -> str:
        best = read_json_object(self.out / "rec" / "recommendation.json", what="recommendation")
        return "best " + ", ".join(f"{k}={v:g}" for k, v in best["best"].items())

    def confirm(self) -> tuple[str, bool]:
        folder = self.out / "confirm"
        args = _py("llm_runs", "train", "--config", str(self.out / "rec" / "best.yaml"),
                   "--out", str(folder))  # fmt: skip
        bar = Bar("confirm", self.cfg.budget_steps, self.progress)
        try:
            kept = _train(args, folder, self.logs / "confirm.log", bar)
        finally:
            bar.close()
        return f"{self.cfg.budget_steps} steps at the recommended setting", kept

    def report(self) -> tuple[str, bool]:
        from ._demo_report import write_report

        report = self.out / "report.md"
        if report.is_file():
            return str(report), True
        pred = self.out / "prediction"
        best = read_json_object(self.out / "rec" / "recommendation.json", what="recommendation")
        sets = [a for k, v in best["best"].items() for a in ("--set", f"{k}={v!r}")]
        call(
            _py("calibrate", "predict", str(self.fit_dir()), *sets,
                "--steps", str(self.cfg.budget_steps), "--draws", str(self.cfg.draws),
                "--out", str(pred)),
            self.logs / "report.log",
        )  # fmt: skip
        write_report(self.out, self.cfg, self.fit_dir())
        return str(report), False


def run_demo(
    out: str | Path,
    cfg: DemoConfig,
    *,
    overwrite: bool = False,
    progress: bool = True,
    stop_after: str | None = None,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run (or continue) the whole loop into ``out``.

    Args:
        out: Demo folder. An existing one made with the same config is continued (finished
            stages are reused); one made with another config is refused unless
            ``overwrite``.
        cfg: What to train, fit and search.
        overwrite: Delete a demo folder made with another config and start again (a
            folder that holds no demo is never deleted).
        progress: Show progress bars inside the stages.
        stop_after: Stop after this stage (one of :data:`STAGES`).
        echo: Where the one line per stage goes.

    Returns:
        Per stage: what it did, whether it was reused and its wall time in seconds (also
        written to ``out/timing.json``).

    Raises:
        ConfigError: ``stop_after`` unknown, or ``out`` holds a demo with another config.
        OutputError: ``out`` cannot be written, holds something else than a demo, or another
            demo is running in it (its lock ``run.lock``; a lock left by a killed demo is
            taken over).
        StageError: A stage's command failed.
        DemoInterrupted: SIGINT (Ctrl-C): the stage's commands were stopped first; calling
            again continues from the last finished stage.
    """
    if stop_after is not None and stop_after not in STAGES:
        raise ConfigError(f"--stop-after must be one of {', '.join(STAGES)}, got {stop_after!r}")
    out = Path(out)
    restart = _check_folder(out, cfg, overwrite)  # before anything is written
    check_writable(out)
    out.mkdir(parents=True, exist_ok=True)
    with RunLock(out, what="demo folder"):
        if restart:  # a demo of another config, as a whole (the lock we hold stays)
            for entry in out.iterdir():
                if entry.name != LOCK_FILE:
                    shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        write_json(out / "demo.json", cfg.to_dict())
        demo = _Demo(out, cfg, progress)
        timing: dict[str, Any] = {}
        t_all = time.time()
        stage = STAGES[0]
        try:
            with stop_children_on_interrupt():
                for i, stage in enumerate(STAGES, 1):
                    t0 = time.time()
                    what, reused = getattr(demo, stage)()
                    dt = time.time() - t0
                    timing[stage] = {"what": what, "reused": reused, "seconds": round(dt, 1)}
                    done = "reused" if reused else f"{dt:.0f} s"
                    echo(f"[{i}/{len(STAGES)}] {stage:<9} {what}  ({done})")
                    total = round(time.time() - t_all, 1)
                    write_json(out / "timing.json", timing | {"total_s": total})
                    if stage == stop_after:
                        break
        except KeyboardInterrupt:
            raise DemoInterrupted(stage) from None
    return timing


def _check_folder(out: Path, cfg: DemoConfig, overwrite: bool) -> bool:
    """Whether ``out`` holds a demo of another config to restart (``overwrite``); refuses a
    folder of anything else, always (the demo deletes only what a demo made)."""
    stored = out / "demo.json"
    if stored.is_file():
        if read_json_object(stored, what="demo config") == cfg.to_dict():
            return False
        if not overwrite:
            raise ConfigError(
                f"{out} holds a demo made with another config ({stored}); "
                "choose another --out or pass --overwrite to start it again"
            )
        return True
    if out.is_dir() and any(p.name != LOCK_FILE for p in out.iterdir()):
        raise OutputError(
            f"--out {out} is not empty and holds no demo (no demo.json); it is never "
            "replaced: choose a new or empty folder"
        )
    return False

"""The predict-first study loop every experiment shares (the demo and the studies under
``paper/``): pilots → fit → forecasts stored once → held-out or confirmation runs → summary.

A :class:`Study` owns one folder. Opening it (``with Study(...) as st``) checks the design
stored there (a changed design is an error unless ``overwrite``), takes the folder's lock
and stores the design once. Inside, :meth:`Study.train` trains runs as ``python -m
llm_runs train`` children (a finished run is kept, an interrupted one resumed from its
checkpoint; the terminal-status check is the run log's own), :meth:`Study.fit` runs one
``calibrate fit`` (kept when its posterior exists), :func:`store_once` stores forecasts once
with their time and revision before any held-out run starts, and :meth:`Study.run` runs the
stages in order with progress, one line and a timing per stage, Ctrl-C stopping the
children first. calibrate launches llm_runs only as a child process and stays torch-free.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from llm_runs import CKPT_FILE, LOCK_FILE, RunLock
from llm_runs.runlog import git_revision, is_terminal, read_manifest
from simulate.common import (
    ConfigError,
    OutputError,
    check_writable,
    read_json_object,
    utc_now,
    write_json,
)

from ._children import Bar, StageError, run_command, stop_children_on_interrupt

__all__ = [
    "Stage",
    "StageError",
    "Study",
    "StudyInterrupted",
    "fit_runs",
    "python_m",
    "run_command",
    "run_status",
    "store_once",
    "train_run",
    "train_runs",
]

#: A stage: its name and what it does, returning (one line on what it did, whether it
#: reused earlier output) or None.
Stage = tuple[str, Callable[[], "tuple[str, bool] | None"]]


class StudyInterrupted(KeyboardInterrupt):
    """SIGINT during a study: its child commands were stopped (``stage``: the one running)."""

    def __init__(self, stage: str) -> None:
        super().__init__(stage)
        self.stage = stage


def python_m(module: str, *args: str) -> list[str]:
    """The command line ``python -m module args...`` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def run_status(folder: Path) -> str | None:
    """A run folder's manifest status (None: no run there yet)."""
    if not (folder / "manifest.json").is_file():
        return None
    return str(read_manifest(folder).get("status"))


def train_run(
    folder: Path,
    new: Sequence[str],
    *,
    log: Path,
    code: str | None = None,
    bar: Bar | None = None,
) -> bool:
    """Train one run into ``folder``, resume it, or keep it when it has ended.

    Args:
        folder: The run folder.
        new: Arguments of ``python -m llm_runs train`` for a new run, besides ``--out``
            (a run already started is resumed with ``--resume``; one stopped before its
            first checkpoint has nothing to resume from and is started again).
        log: Log file of the child (appended to).
        code: Train with the llm_runs of this source tree (None: the installed one).
        bar: Progress bar the child's own bar (named after the folder) advances.

    Returns:
        True when the run had already ended (nothing was trained).

    Raises:
        StageError: The training command failed.
    """
    folder = Path(folder).resolve()
    status = run_status(folder)
    if is_terminal(status):
        return True
    args = python_m("llm_runs", "train", "--out", str(folder))
    if status is None:
        args += list(new)
    elif (folder / CKPT_FILE).is_file():
        args += ["--resume"]
    else:  # stopped before its first checkpoint: nothing to resume, nothing kept to lose
        args += [*new, "--overwrite"]
    run_command(args, log, bar, tag=folder.name, cwd=code)
    return False


def _todo(runs: Sequence[tuple[Path, Sequence[str]]]) -> int:
    return sum(not is_terminal(run_status(Path(f))) for f, _ in runs)


def train_runs(
    runs: Sequence[tuple[Path, Sequence[str]]],
    *,
    workers: int,
    logs: Path,
    desc: str,
    code: str | None = None,
    bar: Bar | None = None,
    echo: Callable[[str], None] | None = None,
) -> bool:
    """Train (or resume, or keep) runs with :func:`train_run`, ``workers`` at a time.

    Args:
        runs: Each run's folder and its ``llm_runs train`` arguments for a new run.
        workers: Runs trained at once.
        logs: Folder of the logs, one per run: ``<desc>_<folder name>.log``.
        desc: What the runs are (``pilot``, ``confirm``, a phase's name).
        code: Train with the llm_runs of this source tree (None: the installed one).
        bar: Progress bar the runs' own bars advance.
        echo: Where one line per run goes as it ends (``[k/n] name (s)``; None: nowhere).

    Returns:
        True when every run had already ended.

    Raises:
        StageError: A training command failed (the others are left to end first).
    """

    def one(run: tuple[Path, Sequence[str]]) -> bool:
        folder, new = Path(run[0]), run[1]
        log = logs / (f"{desc}.log" if folder.name == desc else f"{desc}_{folder.name}.log")
        return train_run(folder, new, log=log, code=code, bar=bar)

    t0, kept = time.time(), []
    with ThreadPoolExecutor(max_workers=workers) as ex:
        futs = {ex.submit(one, run): Path(run[0]).name for run in runs}
        for k, fut in enumerate(as_completed(futs), 1):
            kept.append(fut.result())
            if echo is not None:
                echo(f"  [{k}/{len(runs)}] {futs[fut]}  ({time.time() - t0:.0f} s)")
    return all(kept)


def fit_runs(
    inputs: Sequence[str | Path],
    fit_dir: Path,
    *,
    args: Sequence[str],
    log: Path,
    bar: Bar | None = None,
) -> bool:
    """``calibrate fit`` of the run folders ``inputs`` into ``fit_dir`` with ``args``
    (motif, gate, method, hierarchy...), kept when a fit is already there.

    Returns:
        True when the fit was kept.

    Raises:
        StageError: The fit failed (the message names its log).
    """
    if (fit_dir / "selection.json").is_file() or (fit_dir / "posterior.nc").is_file():
        return True
    cmd = python_m("calibrate", "fit", *map(str, inputs), *args)
    run_command([*cmd, "--out", str(fit_dir), "--no-progress"], log, bar)
    return False


def store_once(path: Path, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Forecasts stored once: the stored document when ``path`` exists (a note says it is
    kept), else ``make()`` stamped with the time it is stored (``created``, UTC) and the
    checkout's ``git_revision``, written atomically and never over a file that appeared
    meanwhile.

    Raises:
        OutputError: ``path`` was written by someone else while ``make()`` ran.
    """
    if path.is_file():
        print(f"note: {path} exists (predictions are made once); kept as it is", flush=True)
        return json.loads(path.read_text())
    body = make()
    doc = {"created": utc_now(), "git_revision": git_revision(), **body}
    tmp = write_json(path.with_name(f".{path.name}.{os.getpid()}.new"), doc)
    try:
        os.link(tmp, path)  # fails if path exists: a forecast is never overwritten
    except FileExistsError:
        raise OutputError(f"{path} was written while these predictions were made") from None
    finally:
        tmp.unlink()
    return doc


class Study:
    """A predict-first experiment in one folder (see the module docstring).

    Args:
        out: The study's folder.
        design: The validated, frozen design as a JSON-ready mapping; stored once in
            ``out/<design_file>`` with the time (``created``) and compared on every later
            opening.
        design_file: Name of the stored design.
        overwrite: A folder holding another design is emptied and started again (a folder
            holding no design of this kind is never emptied).
        kind: What the folder holds, in messages ("demo", "study").
        workers: Runs trained at once (one CPU thread each).
        code: Train with the llm_runs of this source tree (None: the installed one).
        progress: Progress bars inside the stages.
        echo: Where the one line per stage goes.
        logs: Folder of the children's logs (None: ``out/logs``).
        run_lines: One line per trained run as it ends (``[k/n] name (s)``), for logs.
        compare_key: Compare only this entry of the stored and the given design (None:
            the whole design but its ``created`` time).
        overwrite_flag: The caller's flag that sets ``overwrite``, named in the refusal
            (None: the caller has none).
    """

    def __init__(
        self,
        out: str | Path,
        design: Mapping[str, Any],
        *,
        design_file: str = "design.json",
        overwrite: bool = False,
        kind: str = "study",
        workers: int = 2,
        code: str | None = None,
        progress: bool = True,
        echo: Callable[[str], None] = print,
        logs: str | Path | None = None,
        run_lines: bool = False,
        compare_key: str | None = None,
        overwrite_flag: str | None = "--overwrite",
    ) -> None:
        if not isinstance(workers, int) or workers < 1:
            raise ConfigError(f"workers must be an integer >= 1, got {workers!r}")
        if code is not None and not (Path(code) / "llm_runs").is_dir():
            raise ConfigError(f"code {code} is not a source tree with llm_runs/")
        self.out, self.design = Path(out), dict(design)
        self.design_file, self.overwrite, self.kind = design_file, overwrite, kind
        self.workers, self.code, self.progress, self.echo = workers, code, progress, echo
        self.logs = self.out / "logs" if logs is None else Path(logs)
        self.run_lines, self.compare_key = run_lines, compare_key
        self.overwrite_flag = overwrite_flag
        self._lock: RunLock | None = None

    def __enter__(self) -> Study:
        restart = self._check()  # before anything is written
        check_writable(self.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self._lock = RunLock(self.out, what=f"{self.kind} folder")
        self._lock.__enter__()
        try:
            if restart:  # another design's folder, as a whole (the lock we hold stays)
                for entry in self.out.iterdir():
                    if entry.name != LOCK_FILE:
                        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
            if not (self.out / self.design_file).is_file():
                write_json(self.out / self.design_file, self.design | {"created": utc_now()})
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._lock is not None:
            self._lock.__exit__(None, None, None)
            self._lock = None

    def _check(self) -> bool:
        """Whether the folder holds another design to start again (``overwrite``)."""
        stored = self.out / self.design_file
        if stored.is_file():
            kept = read_json_object(stored, what="stored design")
            kept.pop("created", None)
            given = json.loads(json.dumps(self.design))
            if self.compare_key is not None:
                kept, given = kept.get(self.compare_key), given.get(self.compare_key)
            if kept == given:
                return False
            if not self.overwrite:
                again = "" if self.overwrite_flag is None else f" or pass {self.overwrite_flag}"
                raise ConfigError(
                    f"{self.out} holds another design (a {self.kind} made with another config: "
                    f"{stored}); choose another --out{again} to start it again"
                )
            return True
        if self.out.is_dir() and any(p.name != LOCK_FILE for p in self.out.iterdir()):
            raise OutputError(
                f"--out {self.out} is not empty and holds no {self.kind} (no "
                f"{self.design_file}); it is never replaced: choose a new or empty folder"
            )
        return False

    def train(
        self, runs: Sequence[tuple[Path, Sequence[str]]], *, desc: str, steps: int | None
    ) -> bool:
        """:func:`train_runs` with the study's workers, code, logs and progress."""
        bar = Bar(desc, None if steps is None else _todo(runs) * steps, self.progress)
        try:
            return train_runs(runs, workers=self.workers, logs=self.logs, desc=desc,
                              code=self.code, bar=bar,
                              echo=self.echo if self.run_lines else None)  # fmt: skip
        finally:
            bar.close()

    def fit(self, inputs: Sequence[str | Path], fit_dir: Path, *, args: Sequence[str]) -> bool:
        """:func:`fit_runs` under a bar, its log ``logs/fit.log``."""
        bar = Bar("fit", None, self.progress)
        try:
            return fit_runs(inputs, fit_dir, args=args, log=self.logs / "fit.log", bar=bar)
        finally:
            bar.close()

    def run(self, stages: Sequence[Stage], *, stop_after: str | None = None) -> dict[str, Any]:
        """Run the stages in order: one line each (what it did, reused or its wall time),
        timings in ``out/timing.json`` as they end.

        Raises:
            ConfigError: ``stop_after`` names no stage.
            StudyInterrupted: SIGINT: the stage's children were stopped first.
        """
        names = [name for name, _ in stages]
        if stop_after is not None and stop_after not in names:
            raise ConfigError(f"--stop-after must be one of {', '.join(names)}, got {stop_after!r}")
        timing: dict[str, Any] = {}
        t_all = time.time()
        stage = names[0]
        try:
            with stop_children_on_interrupt():
                for i, (stage, do) in enumerate(stages, 1):
                    t0 = time.time()
                    what, reused = do() or ("done", False)
                    dt_s = time.time() - t0
                    timing[stage] = {"what": what, "reused": reused, "seconds": round(dt_s, 1)}
                    done = "reused" if reused else f"{dt_s:.0f} s"
                    self.echo(f"[{i}/{len(stages)}] {stage:<9} {what}  ({done})")
                    total = round(time.time() - t_all, 1)
                    write_json(self.out / "timing.json", timing | {"total_s": total})
                    if stage == stop_after:
                        break
        except KeyboardInterrupt:
            raise StudyInterrupted(stage) from None
        return timing

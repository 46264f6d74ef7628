"""The main job, ``python -m calibrate demo``: pilots → fit → motif selection →
recommendation → confirmation run → report, on the study loop (:class:`calibrate.Study`).

Every stage runs the toolkit's own command line in a child process (the same commands a
user would type; their output goes to ``OUT/logs/<stage>.log``) and prints one line when
it ends; a progress bar follows the child's own progress inside a stage. A stage whose
output is complete is reused, so a second call (or a call after an interruption) picks up
where the first stopped; an interrupted training run is resumed from its checkpoint.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from simulate.common import ConfigError, read_json_object, read_text, write_json, write_text

from .._children import Bar, StageError, progress_of, run_command
from .._pilots import label_runs, run_pilot_rounds, train_args_for
from .._predict._defaults import DEFAULT_EXTRAPOLATION_SD
from .._study import Study, StudyInterrupted, python_m
from ._config import DemoConfig, pilot_name

__all__ = ["STAGES", "DemoInterrupted", "StageError", "progress_of", "run_demo"]

#: The stages, in order.
STAGES = ("base", "pilots", "fit", "recommend", "confirm", "report")

#: SIGINT during the demo (the study loop's interrupt: ``stage`` is the one running).
DemoInterrupted = StudyInterrupted
_py = python_m


class _Demo:
    def __init__(self, study: Study, cfg: DemoConfig) -> None:
        self.study, self.cfg = study, cfg
        self.out, self.progress, self.logs = study.out, study.progress, study.logs

    # -- stages: each returns (what it did, reused) ----------------------------------------
    def base(self) -> tuple[str, bool]:
        preset = self.cfg.preset
        bar = Bar("pretrain", None, self.progress)
        try:
            text = run_command(
                _py("llm_runs", "pretrain", "--task", self.cfg.task, "--preset", preset),
                self.logs / "base.log", bar, tag=f"pretrain {preset}",
            )  # fmt: skip
        finally:
            bar.close()
        info = json.loads(text)
        what = f"{preset} base, {info.get('n_params', 0):,} parameters"
        return what + ("" if bar.seen else " (from the cache)"), not bar.seen

    def _train_args(self):
        cfg = self.cfg
        return train_args_for(cfg.motifs[0], cfg.gate, cfg.task, cfg.preset, cfg.pilot_steps,
                              cfg.eval_every, [])  # fmt: skip

    def pilots(self) -> tuple[str, bool]:
        cfg = self.cfg
        folder = self.out / "pilots"
        if (folder / "pilots.json").is_file():
            runs = read_json_object(folder / "pilots.json", what="pilots")["runs"]
            return self._pilots_line(runs), True
        self._links()
        if cfg.design == "adaptive":
            plan = cfg.pilot_plan()
            fit_args = ["--motif", cfg.motifs[0], "--gate", cfg.gate, "--hierarchy",
                        str(self.out / "links.json"), "--method", "laplace"]  # fmt: skip
            runs = run_pilot_rounds(self.study, plan, folder, train_args=self._train_args(),
                                    fit_args=fit_args)  # fmt: skip
        else:
            runs = [{"round": 0, "setting": s, "seed": seed,
                     "folder": str(folder / f"{pilot_name(s)}_s{seed}")}
                    for s in cfg.pilots for seed in cfg.pilot_seeds]  # fmt: skip
            new = self._train_args()
            self.study.train([(Path(r["folder"]), new(r["setting"], r["seed"])) for r in runs],
                             desc="pilot", steps=cfg.pilot_steps)  # fmt: skip
        runs = label_runs(runs)
        write_json(folder / "pilots.json", {"design": cfg.design, "runs": runs})
        return self._pilots_line(runs), False

    def _pilots_line(self, runs: list[dict[str, Any]]) -> str:
        groups: dict[str, int] = {}
        for r in runs:
            groups[r["group"]] = groups.get(r["group"], 0) + 1
        seen = ", ".join(f"{n} {g}" for g, n in sorted(groups.items()))
        rounds = 1 + max(int(r["round"]) for r in runs)
        net = f"{self.cfg.motifs[0]}-{self.cfg.gate}"
        return (f"{len(runs)} runs x {self.cfg.pilot_steps} steps of {net} in {rounds} "
                f"round(s), {self.cfg.design} design ({seen})")  # fmt: skip

    def pilot_folders(self) -> list[Path]:
        """The pilot runs' folders (from ``pilots/pilots.json``)."""
        runs = read_json_object(self.out / "pilots" / "pilots.json", what="pilots")["runs"]
        return [Path(r["folder"]) for r in runs]

    def _links(self) -> Path:
        links = self.out / "links.json"
        if not links.is_file():
            write_json(links, self.cfg.links())
        return links

    def fit(self) -> tuple[str, bool]:
        line = f"{','.join(self.cfg.motifs)} -> "
        fit = self.out / "fit"
        links = self._links()
        runs = self.pilot_folders()
        args = ["--motif", ",".join(self.cfg.motifs), "--gate", self.cfg.gate,
                "--hierarchy", str(links), "--method", "laplace"]  # fmt: skip
        kept = self.study.fit(runs, fit, args=args)
        return line + self.fit_dir().name, kept

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
        run_command(
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
        new = ["--config", str(self.out / "rec" / "best.yaml")]
        kept = self.study.train([(self.out / "confirm", new)], desc="confirm",
                                steps=self.cfg.budget_steps)  # fmt: skip
        return f"{self.cfg.budget_steps} steps at the recommended setting", kept

    def report(self) -> tuple[str, bool]:
        from ._report import write_report

        report = self.out / "report.md"
        if report.is_file():
            return str(report), True
        pred = self.out / "prediction"
        best = read_json_object(self.out / "rec" / "recommendation.json", what="recommendation")
        sets = [a for k, v in best["best"].items() for a in ("--set", f"{k}={v!r}")]
        run_command(
            _py("calibrate", "predict", str(self.fit_dir()), *sets,
                "--steps", str(self.cfg.budget_steps), "--draws", str(self.cfg.draws),
                "--extrapolation-sd", str(DEFAULT_EXTRAPOLATION_SD), "--out", str(pred)),
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
    study = Study(
        out,
        cfg.to_dict(),
        design_file="demo.json",
        overwrite=overwrite,
        kind="demo",
        workers=cfg.workers,
        progress=progress,
        echo=echo,
    )
    with study:
        demo = _Demo(study, cfg)
        return study.run([(s, getattr(demo, s)) for s in STAGES], stop_after=stop_after)

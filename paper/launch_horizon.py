"""Is there a short-horizon bias on the testbed? (issue 67 §1): runs 5x the demo's pilot length
over the demo's search space, ranked at the pilot horizon and at the launch horizon.

Design (fixed before any run; ``<out>/design.json``):

- ``cells``: ``rl.lr`` 1e-3, 2.5e-3, 6e-3, 1.5e-2, 4e-2 (x2.5 apart, the demo's box
  1e-3-4e-2) x ``rl.staleness`` 0, 6, 12 (the box 0-12), the demo's C1-AND network, task
  and base; each cell at ``seeds`` (2: the pilots' seed sd 0.051 of a final competence gives
  n = max(2, ceil((1.96 sd / 0.1)^2)) = 2, the rule of ``paper.demo_heldout``), seed 0 of
  every cell trained before seed 1, so a partial study still has one seed per cell;
- ``launch_steps`` 500 (5x the demo's ``pilot_steps`` 100), evaluations every 10 steps. The
  learning rate is constant (no warmup, no schedule), so a run's first 100 steps are the
  pilot the demo would have run at that cell and seed;
- ``forecasts``: the default demo's adaptive fit (``runs/demo_heldout/adaptive``, the fit
  ``paper.demo_heldout`` forecast from) forecasts every cell at the launch horizon (one new
  run's final competences and P(regime group) by the rule for real runs), stored once in
  ``forecasts.json`` and committed before the first run starts;
- ``bias`` (the analysis): per cell the objective (the demo's ``e2e``: the product of the
  agents' competences) at the pilot horizon and at the launch horizon, mean over seeds; the
  Spearman rank correlation of the two rankings (bootstrap over cells, 95 %); how often the
  setting best at the pilot horizon (chosen on one seed) collapses by the launch horizon or
  is beaten there by >= 0.05 (scored on the other seed); each collapse's onset step, by the
  package's rule (:func:`simulate.fall_collapse`) and the rule that ignores falls from the
  starting level (:func:`simulate.common.peak_collapse`), and whether a pilot of 100 steps
  could have seen it.

Usage: python -m paper.launch_horizon [--phase forecast|runs|bias|all|archive|restore]
       [--runs runs/launch_horizon] [--out paper/results/launch_horizon] [--quick]
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np


@dataclasses.dataclass
class Design:
    """The study's frozen design (see the module docstring)."""

    quick: bool = False
    lrs: list[float] = dataclasses.field(default_factory=lambda: [1e-3, 2.5e-3, 6e-3, 1.5e-2, 4e-2])
    staleness: list[int] = dataclasses.field(default_factory=lambda: [0, 6, 12])
    seeds: list[int] = dataclasses.field(default_factory=lambda: [0, 1])
    pilot_steps: int = 100
    launch_steps: int = 500
    eval_every: int = 10
    beaten_by: float = 0.05
    fit: str = "runs/demo_heldout/adaptive"
    draws: int = 200
    seed_rule: str = (
        "n = max(2, ceil((1.96 sd / 0.1)^2)) with sd = 0.051, the pooled sd between the "
        "default demo's adaptive pilots' seeds of a final competence (paper/results/"
        "demo_heldout/summary.json pilot_seed_sd): 2 seeds per cell"
    )

    def __post_init__(self) -> None:
        if self.quick:
            self.lrs, self.staleness, self.seeds = [2e-3, 3e-2], [0], [0, 1]
            self.pilot_steps, self.launch_steps, self.eval_every = 8, 16, 4
            self.draws = 20

    def cells(self) -> list[dict[str, Any]]:
        grid = itertools.product(self.lrs, self.staleness)
        return [{"rl.lr": lr, "rl.staleness": k} for lr, k in grid]

    def jobs(self) -> list[tuple[dict[str, Any], int]]:
        """(cell, seed) in training order: every cell's first seed before any second."""
        return [(c, s) for s in self.seeds for c in self.cells()]


def run_name(cell: dict[str, Any], seed: int) -> str:
    return f"lr{cell['rl.lr']:g}_k{cell['rl.staleness']}_s{seed}"


def _demo(d: Design) -> Any:
    import calibrate

    return calibrate.DEMO_QUICK if d.quick else calibrate.DemoConfig()


def forecast_phase(d: Design, out: Path) -> None:
    """The demo fit's forecasts of every cell at the launch horizon, stored once."""
    import jax

    import calibrate

    if d.quick:
        print("note: the quick form makes no forecasts (they need the demo's fit)", flush=True)
        return
    fit_root = Path(d.fit) / "fit"
    sel = fit_root / "selection.json"
    fit = (
        fit_root / "fits" / str(json.loads(sel.read_text())["best"]) if sel.is_file() else fit_root
    )
    if not fit.is_dir():
        raise SystemExit(f"error: no demo fit at {fit}: run python -m paper.demo_heldout "
                         "--phase pilots (or restore its runs) first")  # fmt: skip
    cells = d.cells()

    def make() -> dict[str, Any]:
        post = calibrate.load_fit(fit)
        (new, _mean), spread = calibrate.model_forecasts(
            post, cells, horizon=float(d.launch_steps), n_eval=64, draws=d.draws,
            extrapolation_sd=0.5, name="motif model",
        )  # fmt: skip
        groups = {}
        for h in (d.pilot_steps, d.launch_steps):
            g = calibrate.observed_regime_probs(
                post, cells, steps=h, every=d.eval_every, max_draws=d.draws,
                extrapolation_sd=0.5, key=jax.random.key(0),
            )  # fmt: skip
            groups[str(h)] = {k: np.asarray(v, float).round(4).tolist() for k, v in g.items()}
        return {"design": dataclasses.asdict(d), "fit": str(fit), "cells": cells,
                "agents": list(new.agents), "seed_spread": spread,
                "final_samples": np.round(np.asarray(new.samples, float), 4).tolist(),
                "groups_at": groups}  # fmt: skip

    doc = calibrate.store_once(out / "forecasts.json", make)
    print(f"forecasts stored {doc['created']} ({len(doc['cells'])} cells)", flush=True)


def runs_phase(d: Design, runs: Path, *, workers: int) -> None:
    """Train every (cell, seed) to the launch horizon (resumed or kept when done)."""
    import calibrate

    cfg = _demo(d)
    targs = calibrate.train_args_for(cfg.motifs[0], cfg.gate, cfg.task, cfg.preset,
                                     d.launch_steps, d.eval_every, [])  # fmt: skip
    jobs = d.jobs()
    study = calibrate.Study(runs / "long", {"jobs": [[c, s] for c, s in jobs]}, kind="study",
                            workers=workers, progress=False, run_lines=True)  # fmt: skip
    with study:
        study.train([(runs / "long" / run_name(c, s), targs(c, s)) for c, s in jobs],
                    desc="long", steps=d.launch_steps)  # fmt: skip


def bias_phase(d: Design, runs: Path, out: Path) -> dict[str, Any]:
    """The short-horizon bias: ``summary.json``, ``table.md`` and ``bias.png``."""
    from paper._launch_horizon import analyse, figure, table
    from simulate.common import write_json, write_text

    summary = analyse(d, runs / "long", run_name)
    summary["command"] = "python -m paper.launch_horizon --phase bias"
    fc = out / "forecasts.json"
    if fc.is_file():
        from paper._launch_horizon import forecast_scores

        summary["forecast_at_launch"] = forecast_scores(json.loads(fc.read_text()), summary)
    write_json(out / "summary.json", summary)
    write_text(out / "table.md", table(summary))
    figure(summary, out / "bias.png")
    print(json.dumps(summary["short_horizon_bias"], indent=1))
    return summary


def main(argv: list[str] | None = None) -> int:
    import calibrate
    import simulate

    p = simulate.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--phase", default="all",
                   choices=["forecast", "runs", "bias", "all", "archive", "restore"])  # fmt: skip
    p.add_argument("--runs", default="runs/launch_horizon")
    p.add_argument("--out", default="paper/results/launch_horizon")
    p.add_argument("--quick", action="store_true", help="micro sizes (a test runs them)")
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args(argv)
    d = Design(quick=args.quick)
    runs, out = Path(args.runs), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stored = out / "design.json"
    if stored.is_file():
        if json.loads(stored.read_text()) != json.loads(json.dumps(dataclasses.asdict(d))):
            print(f"error: {stored} holds another design", file=sys.stderr)
            return 2
    else:
        stored.write_text(json.dumps(dataclasses.asdict(d), indent=2) + "\n")
    phases = ["forecast", "runs", "bias"] if args.phase == "all" else [args.phase]
    try:
        for ph in phases:
            if ph == "forecast":
                forecast_phase(d, out)
            elif ph == "runs":
                runs_phase(d, runs, workers=args.workers)
            elif ph == "archive":
                calibrate.archive_runs(runs / "long", out / "runs.tar.gz")
            elif ph == "restore":
                calibrate.restore_runs(out / "runs.tar.gz", runs / "long")
            else:
                bias_phase(d, runs, out)
    except simulate.AgentmotifsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

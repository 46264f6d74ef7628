"""Does the motif model choose the next run better than what a practitioner would use?
(issue 19 §2).

Equal compute for every method, counted in optimizer steps, on one grid of real runs (the
regime-map grid: 4 learning rates x 4 policy lags, 200 steps, seeds 0-2), read as a tabular
benchmark (a method that "runs" a setting for n steps with seed r reads the logged end-to-end
accuracy of that run at step n and pays n steps):

- motif model: the 4 corner pilots of seed r → ``calibrate fit`` (C1-AND, laplace, rho and
  delta linked to both knobs) → ``calibrate recommend --space`` over the grid → one
  confirmation run (not paid for when the pick is a pilot). Two objectives: the output
  node Z (recommend's default) and the solver X (``objective: X``; added after a trial on
  seeds 0-1 showed that Z's probe competence stays near 0.5 in this task, so ranking by it
  ranks by noise);
- random search, Optuna TPE + Hyperband, a GP surrogate on the same pilots, early-curve
  (ScaleRL sigmoid) extrapolation: :mod:`_recommend_baselines`.

Regret = best true value on the grid − the pick's true value, a setting's true value being
its mean final end-to-end accuracy over all seeds. A pick is unstable when its run at the
repetition's seed (the confirmation run) oscillated or collapsed (``llm_runs.observed_regime``).
Repetitions: pilot seed r = 0, 1, 2; the stochastic baselines run ``rng_seeds`` times per
repetition. The design is stored in ``config.json`` before any method runs and is checked on
every later call. This is the record of the old testbed (``math-v1``, where only X learned);
the benchmark on the new testbed is ``recommend_study.py``.

Usage: python -m paper.recommend_bench [--runs runs/regime_map]
    [--out paper/results/recommend_old_testbed] [--seeds 0,1,2] [--rng-seeds N]
    [--train [--workers N] [--code TREE]]

``--train`` first trains the missing runs of the grid (the regime map's settings at these
seeds; the seed-2 runs were made that way, with the code pinned at the regime map's commit).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

import simulate
from calibrate import StageError, Study, fit_runs, run_command
from paper import _recommend_baselines as rb
from paper import _recommend_summary as summ
from paper import _regime_design as regime_map
from paper._recommend_summary import pick_record as pick_record

HERE = Path(__file__).resolve().parent
LINKS = regime_map.LINKS  # the regime map's links: the same model


@dataclasses.dataclass(frozen=True)
class BenchConfig:
    """The comparison's design (``config.json``, written before any method runs).

    Attributes:
        seeds: Repetitions: the pilot (and confirmation) seed of each.
        budget_steps: Optimizer steps every method may spend per repetition.
        rng_seeds: Runs of each stochastic baseline per repetition.
        motif, gate: The model fitted by the motif model (the grid's wiring).
        risk: recommend's largest acceptable P(oscillating or collapse).
        draws: Posterior draws per candidate.
        methods: The methods compared.
    """

    seeds: tuple[int, ...] = (0, 1, 2)
    budget_steps: int = 1000
    rng_seeds: int = 10
    motif: str = "C1"
    gate: str = "AND"
    risk: float = 0.1
    draws: int = 200
    methods: tuple[str, ...] = ("motif model", "motif model (X)", *rb.BASELINES)

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v
                for k, v in dataclasses.asdict(self).items()}  # fmt: skip


#: The motif model's variants: method name -> recommend's objective.
OBJECTIVES = {"motif model": "last", "motif model (X)": "X"}
#: Baselines that draw random numbers (run ``rng_seeds`` times per repetition).
STOCHASTIC = ("random search", "optuna")


def motif_model(
    table: rb.RunTable, runs: Path, out: Path, cfg: BenchConfig, seed: int, objective: str
) -> rb.Pick:
    """Pilots (the grid's corners at ``seed``) → fit → recommend → confirmation (a lookup)."""
    corners = table.corners()
    rep = out / "motif_model" / f"seed{seed}"
    fit = rep / "fit"
    names = [_run_name(runs, s, seed) for s in corners]
    if not (fit / "posterior.nc").is_file():
        links = simulate.write_json(rep / "links.json", LINKS)
        args = ["--motif", cfg.motif, "--gate", cfg.gate, "--hierarchy", str(links),
                "--method", "laplace"]  # fmt: skip
        try:
            fit_runs(names, fit, args=args, log=rep / "fit.log")
        except StageError as err:
            raise rb.BenchmarkError(str(err)) from None
    rec = rep / f"rec_{objective}"
    if not (rec / "recommendation.json").is_file():
        lrs = sorted({s[0] for s in table.settings})
        ks = sorted({s[1] for s in table.settings})
        space = {"fields": {"rl.lr": {"choices": lrs}, "rl.staleness": {"choices": ks}},
                 "budget_steps": table.horizon, "risk": cfg.risk, "target": 0.8,
                 "n_candidates": len(lrs) * len(ks), "seed": seed,
                 "objective": objective}  # fmt: skip
        sp = simulate.write_text(rep / f"space_{objective}.yaml", yaml.safe_dump(space))
        _call([sys.executable, "-m", "calibrate", "recommend", str(fit), "--space", str(sp),
               "--out", str(rec), "--draws", str(cfg.draws)],
              rep / f"recommend_{objective}.log")  # fmt: skip
    r = json.loads((rec / "recommendation.json").read_text())
    setting = (float(r["best"]["rl.lr"]), int(r["best"]["rl.staleness"]))
    ledger = rb.Ledger(table, seed, cfg.budget_steps)
    for s in corners:
        ledger.run(s, table.horizon, note="pilot")
    if setting not in corners:
        ledger.run(setting, table.horizon, note="confirmation")
    top = r["top"][0]
    name = next(m for m, o in OBJECTIVES.items() if o == objective)
    made = dt.datetime.fromtimestamp((rec / "recommendation.json").stat().st_mtime, dt.UTC)
    return ledger.pick(name, setting, predicted_final=top["final"], risk=top["risk"],
                       within_risk=top["within_risk"], proxy_agent=r["proxy_agent"],
                       recommended_at=made.isoformat(timespec="seconds"))  # fmt: skip


def _run_name(runs: Path, setting: tuple[float, int], seed: int) -> str:
    path = runs / f"lr{setting[0]:g}_k{setting[1]}_s{seed}"
    if not (path / "manifest.json").is_file():
        raise rb.BenchmarkError(f"no run folder {path}")
    return str(path)


def _call(args: list[str], log: Path) -> None:
    try:
        run_command(args, log)
    except StageError as err:
        raise rb.BenchmarkError(str(err)) from None


def run(runs: Path, out: Path, cfg: BenchConfig) -> dict[str, Any]:
    """Every method on every repetition; writes picks.json, summary.json, table.md, figure."""
    design = {"design": cfg.to_dict(), "runs": str(runs), "links": LINKS}
    with Study(out, design, design_file="config.json", compare_key="design", overwrite_flag=None):
        return _run_methods(runs, out, cfg)


def _run_methods(runs: Path, out: Path, cfg: BenchConfig) -> dict[str, Any]:
    table, skipped = rb.RunTable.from_runs(runs, seeds=cfg.seeds)
    missing = [(s, r) for s in table.settings for r in cfg.seeds if (s, r) not in table.curves]
    if missing or sorted(table.seeds) != sorted(cfg.seeds):
        raise rb.BenchmarkError(
            f"the grid is incomplete: {len(missing)} (setting, seed) pair(s) missing, seeds "
            f"present {sorted(table.seeds)}; skipped: {skipped[:4]}"
        )
    t0 = time.time()
    picks: list[dict[str, Any]] = []
    for seed in cfg.seeds:
        for m in cfg.methods:
            if m in OBJECTIVES:
                p = motif_model(table, runs, out, cfg, seed, OBJECTIVES[m])
                picks.append(pick_record(table, p, None))
                print(f"  seed {seed}: {m} ({time.time() - t0:.0f} s)", flush=True)
                continue
            fn = rb.BASELINES[m]
            n = cfg.rng_seeds if m in STOCHASTIC else 1
            for k in range(n):
                p = fn(table, budget_steps=cfg.budget_steps, seed=seed, rng_seed=k)
                picks.append(pick_record(table, p, k))
            print(f"  seed {seed}: {m} ({time.time() - t0:.0f} s)", flush=True)
    simulate.write_json(out / "picks.json", picks)
    summary = summ.summarise(picks, table, cfg.methods)
    summary |= {"wall_s": round(time.time() - t0, 1), "command": "python -m paper.recommend_bench"}
    simulate.write_json(out / "summary.json", summary)
    simulate.write_text(out / "table.md", summ.table_md(summary))
    summ.figure(summary, picks, table, out / "recommend.png")
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = simulate.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="runs/regime_map", help="the grid's run folders")
    ap.add_argument(
        "--out", default=str(HERE / "results" / "recommend_old_testbed"), help="results folder"
    )
    ap.add_argument("--seeds", default="0,1,2", help="repetitions (pilot seeds), comma list")
    ap.add_argument("--rng-seeds", type=int, default=10, help="runs per stochastic baseline")
    ap.add_argument(
        "--train",
        action="store_true",
        help="first train the grid's missing runs (the regime map's design, these "
        "seeds; resumable)",
    )
    ap.add_argument("--workers", type=int, default=2, help="with --train: runs at once")
    ap.add_argument(
        "--code", default=None, help="with --train: train with the llm_runs of this source tree"
    )
    a = ap.parse_args(argv)
    try:
        seeds = tuple(int(s) for s in a.seeds.split(","))
    except ValueError:
        print(f"error: --seeds must be a comma list of integers, got {a.seeds!r}", file=sys.stderr)
        return 2
    if a.rng_seeds < 1:
        print(f"error: --rng-seeds must be >= 1, got {a.rng_seeds}", file=sys.stderr)
        return 2
    if a.workers < 1:
        print(f"error: --workers must be >= 1, got {a.workers}", file=sys.stderr)
        return 2
    if a.train:
        design = json.loads((HERE / "results" / "regime_map" / "config.json").read_text())
        mc = dataclasses.replace(regime_map.MapConfig.from_dict(design["design"]), seeds=seeds)
        Path(a.runs).mkdir(parents=True, exist_ok=True)
        regime_map.run_cells(mc, mc.cells(), Path(a.runs), a.workers, a.code)
    if not Path(a.runs).is_dir():
        print(f"error: --runs {a.runs} is not a folder", file=sys.stderr)
        return 2
    cfg = BenchConfig(seeds=seeds, rng_seeds=a.rng_seeds)
    try:
        s = run(Path(a.runs), Path(a.out), cfg)
    except simulate.AgentmotifsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(summ.table_md(s))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

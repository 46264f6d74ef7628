"""The ``methods`` phase of the testbed recommendation benchmark (``recommend_study.py``,
issue 32 §2): every method on the table of trained cells, at equal compute in optimizer steps.

Repetitions: ``design.repetitions`` of them; repetition ``r`` uses the pilot seed
``design.seeds[r % len(seeds)]`` and the random start ``r`` (the draws of ``calibrate
recommend``, the GP's restarts, random search's and Optuna's samplers). Every method runs once
per repetition, reads only the runs of its seed and pays the steps it trains
(:class:`_recommend_table.Ledger`); the summary's interval resamples seeds, then repetitions
within a seed.

- motif model: per wiring, its pilots at the seed → ``calibrate fit`` (that wiring, the
  design's gate, Laplace, the knob schema's links of ``rl.lr`` and the knob) →
  ``calibrate recommend --space`` (the grid's values of both knobs, ``--objective e2e``,
  risk 0.1); the wiring whose recommendation has the higher forecast end-to-end accuracy
  (within the risk first) is picked, then one confirmation run (a lookup; free for a pilot).
- motif model (2 rounds): after that confirmation run, the picked wiring is refitted on its
  pilots plus the confirmation run and recommended again; its new pick is run (if new) and is
  the answer (a pilot picked in round 1 adds no run, and round 2 keeps it).
- keep the best pilot, a GP surrogate on the pilots, sequential GP with expected improvement
  (from the pilots), random search, Optuna TPE (full runs) and TPE + Hyperband, ScaleRL-style
  sigmoid extrapolation: :mod:`_recommend_baselines`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

import simulate
from calibrate import StageError, fit_runs, run_command
from llm_runs.knobs import hierarchy_links
from paper import _recommend_baselines as rb
from paper import _recommend_knobs as rk
from paper import _recommend_summary as summ

MOTIF = "motif model"
MOTIF2 = "motif model (2 rounds)"
OTHERS = {"random search": rb.random_search,
          "optuna tpe": functools.partial(rb.optuna_tpe, hyperband=False),
          "optuna tpe + hyperband": rb.optuna_tpe,
          "curve extrapolation": rb.curve_extrapolation}  # fmt: skip
METHODS = (MOTIF, MOTIF2, *rb.PILOT_BASELINES, *OTHERS)
RISK = 0.1
#: Pick details left out of ``picks.json`` (the GP's mean over all 48 cells, every pick).
DROP = ("posterior_mean",)


def knobs(cfg: Any) -> tuple[tuple[str, str], ...]:
    """The table's knobs: ``rl.lr``, the design's knob (both log), the wiring (a choice)."""
    return (("rl.lr", "log"), (cfg.knob, "log"), ("network.motif", "cat"))


def pilot_settings(cfg: Any) -> list[tuple[Any, ...]]:
    """The design's pilot cells as settings."""
    return [(cfg.lrs[i], cfg.knob_values[j], cfg.motifs[m]) for i, j, m in cfg.pilots]


def _folder(runs: Path, run_name: Any, setting: tuple[Any, ...], seed: int) -> str:
    lr, x, motif = setting
    return str(runs / run_name(lr, x, motif, seed))


def _fit(cfg: Any, folders: list[str], fit: Path, motif: str) -> None:
    links = simulate.write_json(fit.parent / "links.json", hierarchy_links(["rl.lr", cfg.knob]))
    args = ["--motif", motif, "--gate", cfg.gate, "--hierarchy", str(links),
            "--method", "laplace"]  # fmt: skip
    try:
        fit_runs(folders, fit, args=args, log=fit.parent / f"{fit.name}.log")
    except StageError as err:
        raise rb.BenchmarkError(str(err)) from None


def _recommend(
    cfg: Any, fit: Path, rec: Path, rng: int, folders: list[str], motif: str
) -> dict[str, Any]:
    """``calibrate recommend`` over the grid from the fit of ``folders`` as ``motif`` (fitted
    first when missing); the recommendation is kept when it exists, and then no fit is
    needed (a new checkout reruns the phase from the committed recommendations)."""
    if not (rec / "recommendation.json").is_file():
        _fit(cfg, folders, fit, motif)
        space = {"fields": {"rl.lr": {"choices": list(cfg.lrs)},
                            cfg.knob: {"choices": list(cfg.knob_values)}},
                 "budget_steps": cfg.steps, "risk": RISK, "target": 0.8,
                 "n_candidates": len(cfg.lrs) * len(cfg.knob_values), "seed": rng,
                 "objective": "e2e"}  # fmt: skip
        sp = simulate.write_text(rec.parent / f"{rec.name}_space.yaml", yaml.safe_dump(space))
        args = [sys.executable, "-m", "calibrate", "recommend", str(fit), "--space", str(sp),
                "--out", str(rec), "--draws", "200"]  # fmt: skip
        try:
            run_command(args, rec.parent / f"{rec.name}.log")
        except StageError as err:
            raise rb.BenchmarkError(str(err)) from None
    r = json.loads((rec / "recommendation.json").read_text())
    top = r["top"][0]
    setting = (float(r["best"]["rl.lr"]), float(r["best"][cfg.knob]))
    return {"setting": setting, "final": top["final"], "risk": top["risk"],
            "within_risk": top["within_risk"]}  # fmt: skip


def _choose(recs: dict[str, dict[str, Any]]) -> str:
    """The wiring whose recommendation is within the risk (first) and forecast highest."""
    return max(recs, key=lambda m: (recs[m]["within_risk"], recs[m]["final"]["mean"]))


def motif_model(cfg: Any, table: rb.RunTable, runs: Path, out: Path, run_name: Any,
                seed: int, rng: int, rounds: int) -> rb.Pick:  # fmt: skip
    """The motif model's pick at pilot ``seed`` and random start ``rng`` after ``rounds``
    (1 or 2) rounds."""
    rep = out / "motif_model" / f"seed{seed}"
    pil = pilot_settings(cfg)

    def folders(settings: list[tuple[Any, ...]]) -> list[str]:
        return [_folder(runs, run_name, s, seed) for s in settings]

    recs = {m: _recommend(cfg, rep / f"fit_{m}", rep / f"rec_{m}_r{rng}", rng,
                          folders([s for s in pil if s[2] == m]), m)
            for m in cfg.motifs}  # fmt: skip
    ledger = rb.Ledger(table, seed, cfg.budget_steps)
    for s in pil:
        ledger.run(s, table.horizon, note="pilot")
    motif = _choose(recs)
    pick = (*recs[motif]["setting"], motif)
    info: dict[str, Any] = {"round1": {"wiring": motif, "recommendations": dict(recs)}}
    new = table.norm(pick) not in {table.norm(p) for p in pil}
    if new:
        ledger.run(pick, table.horizon, note="confirm")
    if rounds == 2 and new:  # a pilot pick: round 2 would refit the same runs
        more = [*(s for s in pil if s[2] == motif), pick]
        tag = run_name(*pick, seed)  # one refit per confirmation run, shared by repetitions
        recs[motif] = _recommend(cfg, rep / f"fit2_{tag}", rep / f"rec2_{tag}_r{rng}", rng,
                                 folders(more), motif)  # fmt: skip
        motif = _choose(recs)
        pick2 = (*recs[motif]["setting"], motif)
        tried = {table.norm(t.setting) for t in ledger.trace}
        if table.norm(pick2) not in tried:
            ledger.run(pick2, table.horizon, note="round 2")
        pick, info["round2"] = pick2, {"wiring": motif, "recommendations": dict(recs)}
    name = MOTIF if rounds == 1 else MOTIF2
    return ledger.pick(name, pick, **info)


def environments(runs: Path, table: rb.RunTable) -> dict[str, int]:
    """How many of the table's runs each software environment trained (python, torch,
    transformers, peft from the manifests)."""
    import llm_runs

    out: dict[str, int] = {}
    for f in sorted(p for p in runs.iterdir() if (p / "manifest.json").is_file()):
        m = llm_runs.runlog.read_manifest(f)
        s = rk.read(table.knobs, m.get("config", {}))
        if s is not None and (s, int(m["seed"])) in table.curves:
            v = m.get("versions", {})
            key = ", ".join(f"{k} {v.get(k)}" for k in ("python", "torch", "transformers", "peft"))
            out[key] = out.get(key, 0) + 1
    return out


def tied_with_edge(check: dict[str, Any]) -> bool:
    """Whether the best cell of ``check.json`` ties exactly with the best cell on the grid's
    edge (its lead 0: the check took the first of equal cells in grid order, issue 71 §5)."""
    lead = check.get("lead_over_best_edge_cell")
    return lead is not None and float(lead["difference"]) == 0.0


def methods_phase(cfg: Any, runs: Path, out: Path, run_name: Any) -> None:
    """Every method at every repetition → ``picks.json``, ``summary.json``, ``table.md``,
    ``recommend.png`` (the check must have passed)."""
    if not (out / "check.json").is_file():
        raise rb.BenchmarkError(f"{out / 'check.json'} is missing: run --phase check first")
    check = json.loads((out / "check.json").read_text())
    if not check.get("passed"):
        raise rb.BenchmarkError("the design's check failed: revise the design first")
    # every seed for the cells' true values; the methods observe only the design's seeds
    table, _ = rb.RunTable.from_runs(runs, seeds=cfg.all_seeds(), knobs=knobs(cfg))
    cells = {table.norm((cfg.lrs[i], cfg.knob_values[j], cfg.motifs[m]))
             for i, j, m in cfg.cells()}  # fmt: skip
    if not cells <= set(table.settings) or len(table.curves) < len(cfg.jobs("cells")):
        raise rb.BenchmarkError("the grid is incomplete: run --phase cells")
    t0, picks, pil = time.time(), [], pilot_settings(cfg)
    for r in range(cfg.repetitions):
        seed = cfg.seeds[r % len(cfg.seeds)]
        for rounds in (1, 2):
            p = motif_model(cfg, table, runs, out, run_name, seed, r, rounds)
            picks.append(summ.pick_record(table, p, r, drop_info=DROP))
        for fn in rb.PILOT_BASELINES.values():
            p = fn(table, budget_steps=cfg.budget_steps, seed=seed, rng_seed=r, pilots=pil)
            picks.append(summ.pick_record(table, p, r, drop_info=DROP))
        for name, fn in OTHERS.items():
            p = fn(table, budget_steps=cfg.budget_steps, seed=seed, rng_seed=r)
            picks.append(
                summ.pick_record(table, dataclasses.replace(p, method=name), r, drop_info=DROP)
            )
        print(f"  repetition {r} (seed {seed}): every method ({time.time() - t0:.0f} s)",
              flush=True)  # fmt: skip
    simulate.write_json(out / "picks.json", picks)
    s = summ.summarise(picks, table, METHODS)
    best = max(table.settings, key=table.true_value)
    s |= {
        "found_best_share": {m: r["zero_regret_share"] for m, r in s["regret"].items()},
        "steps_spent": s["steps_spent_mean"],
        "best_cell_interior": bool(check["best_cell_interior"]),
        "best_cell_tied_with_edge": tied_with_edge(check),
        "best_is_pilot": bool(check["best_is_pilot"]),
        "right_wiring_share": {
            m: sum(p["setting"]["network.motif"] == best[2] for p in picks if p["method"] == m)
            / max(1, sum(p["method"] == m for p in picks))
            for m in METHODS
        },
        "repetitions": f"{cfg.repetitions}: repetition r has pilot seed seeds[r % "
        f"{len(cfg.seeds)}] and random start r",
        "training_environments": environments(runs, table),
        "with_truth_noise": summ.truth_bootstrap(picks, table, METHODS, against="motif model"),
        "wall_s": round(time.time() - t0, 1),
        "command": "python -m paper.recommend_study --phase methods",
    }
    simulate.write_json(out / "summary.json", s)
    simulate.write_text(out / "table.md", summ.table_md(s))
    summ.figure(s, picks, table, out / "recommend.png")

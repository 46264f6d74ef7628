"""The held-out watch replays' shared machinery (drivers: ``python -m paper.watch_testbed``,
``paper.watch_round2``, ``paper.watch_round3``; each states its design): the held-out
replay's frozen design, which the later rounds extend, its pilots' fit, the replay of every
run under each method, the labels by the one collapse rule, the summary and the command
line (:func:`driver`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from paper import _watch_metrics as wm
from paper._watch_metrics import THRESHOLDS
from paper._watch_records import FORECAST, fix_config
from paper._watch_report import figure, table
from simulate import write_text

ROOT = Path(__file__).resolve().parent / "results"


PARTIAL = "replay.partial.jsonl"  # a resumable replay's records so far (watch_round2.py)


RECOMMEND = ROOT / "recommend"


PILOT_TASK = "math"


def design(quick: bool) -> dict[str, Any]:
    """The frozen design (what config.json holds)."""
    return {
        "question": "does watch's Laplace update (the run's own parameters refitted at each "
        "evaluation) flag collapses of held-out real runs earlier, or with fewer false "
        "alerts, than its importance weights?",
        "fit": {
            "pilots": "paper/results/forecast/observed.json runs with split 'pilot' (12)",
            "command": "calibrate fit <pilot run folders> --motif C1 --gate AND --hierarchy "
            "paper/results/forecast/links.json --method laplace"
            + (" --samples 200" if quick else ""),
        },
        "runs": {
            "forecast": "paper/results/forecast/runs: the 36 held-out runs (observed.json "
            "split interpolation/extrapolation)",
            "recommend": "paper/results/recommend/runs: every C1_* run (112; C2 runs left out: "
            "another wiring)",
            "quick": "3 forecast and 3 recommend runs" if quick else None,
            "range": "a run is 'inside' when each of its knobs lies in the pilots' range "
            "(lr 4e-3..2.5e-2, staleness 0..4, lr_scale.X 0.15..0.3), else 'outside'",
        },
        "methods": {
            "weights": {
                "draws": 40 if quick else 200,
                "replicates": 2 if quick else 4,
                "spread": 0.3,
                "misfit": 0.05,
                "seed": 0,
            },
            "laplace": {
                "draws": 40 if quick else 200,
                "spread": 0.3,
                "misfit": 0.05,
                "seed": 0,
                "prior_draws": 1000,
            },
        },
        "horizon": "the study's planned steps (200)",
        "n_eval": "each evaluation's own n_eval from the log; the collapse rule's the run's median",
        "rule": wm.RULE,
        "lead_goal": 20,
        "threshold": 0.5,
        "thresholds": THRESHOLDS,
        "reported": "per method at 0.5: flagged_share, lead_steps, false_alert_share; by source "
        "(forecast, recommend) and range (inside, outside); the curve over thresholds; "
        "breakdown (post hoc, as the first replay's); median draws carrying the weight",
        "development": "while the update was written (before this file), two forecast "
        "held-out runs (lr0.0625_k8_x0.3_s0, lr0.025_k8_x0.3_s1) were forecast by both "
        "updates once to check the code ran; no option above was changed after it",
        "revisions": [
            "2026-12-04 17:23, after the first full replay stopped with an error before it wrote "
            "anything (no forecast or score was seen): the recommend run C1_lr0.064_x0.6_s0 "
            "diverged after 3 evaluations, fewer than the collapse rule's 4, and "
            "_watch_metrics.collapse_step raised. The rule's own words apply: a run recorded "
            "as diverged counts as collapsed at its last recorded step unless the rule fires "
            "earlier (and with fewer than 4 evaluations it cannot); a run with fewer than 4 "
            "that did not diverge would count as not collapsed (there is none). Labels are "
            "now computed for every run before any forecast."
        ],
        "quick": quick,
    }


def pilot_folders() -> list[Path]:
    """The forecast study's 12 pilot run folders (the fit's data)."""
    obs = json.loads((FORECAST / "observed.json").read_text())
    return [FORECAST / "runs" / n for n, r in sorted(obs.items()) if r["split"] == "pilot"]


def label(r: dict[str, Any]) -> float | None:
    """The run's collapse step by the first replay's rule (a diverged run with fewer than
    the rule's 4 evaluations: collapsed at its last step, as the rule says)."""
    if len(r["steps"]) < 4:
        return float(r["steps"][-1]) if r["diverged"] else None
    return wm.collapse_step(r["steps"], r["curves"], n_eval=r["n_eval"], diverged=r["diverged"])


def fit_pilots(pilots: list[Path], out: Path, cfg: dict[str, Any]) -> Path:
    """The forecast study's fit command on its pilots (kept when its draws are there)."""
    from calibrate import StageError, fit_runs

    fit_dir = out / "fit"
    if (fit_dir / "latent.npz").is_file():
        return fit_dir
    args = ["--motif", "C1", "--gate", "AND", "--hierarchy", str(FORECAST / "links.json"),
            "--method", "laplace"] + (["--samples", "200"] if cfg["quick"] else [])  # fmt: skip
    try:
        fit_runs(pilots, fit_dir, args=args, log=out / "fit.log")
    except StageError as err:
        raise SystemExit(f"error: calibrate fit of the pilots failed: {err}") from None
    return fit_dir


def replay(runs: list[dict[str, Any]], fit_dir: Path, cfg: dict[str, Any]) -> list[dict]:
    """Every run's P(collapse) series under each method (one prepare per setting)."""
    import jax
    import pandas as pd

    jax.config.update("jax_enable_x64", True)
    from calibrate import load_fit
    from calibrate.watch import forecast, prepare

    folders = {m: Path(cfg["methods"][m].get("fit") or fit_dir) for m in cfg["methods"]}
    loaded = {f: load_fit(f) for f in set(folders.values())}  # a method's own fit, or fit_dir
    posts = {m: loaded[f] for m, f in folders.items()}
    out = []
    caches: dict[str, dict[tuple, Any]] = {m: {} for m in cfg["methods"]}
    for i, r in enumerate(runs):
        obs = pd.DataFrame(r["rows"])
        rec = {k: r[k] for k in ("run", "experiment", "split", "setting", "task", "shift_step",
                                 "steps", "diverged", "n_eval")}  # fmt: skip
        rec["collapse_step"] = r["collapse_step"]
        rec["final_observed"] = {a: c[-1] for a, c in r["curves"].items()}
        for m in cfg["methods"]:  # a method's update is its name unless it names one
            o = dict(cfg["methods"][m])
            misfit, seed, update = o.pop("misfit"), o.pop("seed"), o.pop("update", m)
            observed = o.pop("observed", False)  # the collapse so far sets P (a later option)
            o.pop("prior_draws", None), o.pop("fit", None)  # a method's own fit folder
            key = (tuple(sorted(r["setting"].items())), r["horizon"])
            if key not in caches[m]:
                caches[m][key] = prepare(posts[m], r["setting"], steps=r["horizon"], update=update,
                                         key=jax.random.key(seed), **o)  # fmt: skip
            wd = caches[m][key]
            series = [forecast(wd, obs[obs["step"] <= s], misfit=misfit, observed=observed)
                      for s in r["steps"]]  # fmt: skip
            rec[m] = {
                "p_collapse": [f.p_collapse for f in series],
                "ess": [f.ess for f in series],
                "final_forecast": {a: series[-1].agents[a]["final"] for a in r["curves"]},
            }
        out.append(rec)
        if (i + 1) % 10 == 0:
            print(f"replayed {i + 1}/{len(runs)} runs", flush=True)
    return out


def _as_scored(rep: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    """The runs with ``p_collapse`` of one method, as :mod:`_watch_metrics` reads them."""
    return [{**r, "p_collapse": r[method]["p_collapse"]} for r in rep]


def summarize_method(rep: list[dict[str, Any]], cfg: dict[str, Any], method: str) -> dict:
    """One method's numbers (the first replay's, plus by source and by range)."""
    import numpy as np

    runs, goal, thr = _as_scored(rep, method), cfg["lead_goal"], cfg["threshold"]
    head = wm.score(runs, thr, lead_goal=goal)
    collapsed = [r for r in runs if r["collapse_step"] is not None]

    def part(sel):
        s = wm.score(sel, thr, lead_goal=goal) if sel else None
        return None if s is None else {k: v for k, v in s.items() if k != "lead_steps"}

    at = (("first", 0), ("second", 1), ("fourth", 3), ("last", -1))
    ess = {k: float(np.median([r[method]["ess"][i] for r in rep if len(r["steps"]) > i]))
           for k, i in at}  # fmt: skip
    return {
        "n_collapsed": head["n_collapsed"],
        "flagged_share": head["flagged_share"],
        "alerted_before_share": head["alerted_before_share"],
        "lead_steps": {r["run"]: v for r, v in zip(collapsed, head["lead_steps"], strict=True)},
        "median_lead": head["median_lead"],
        "false_alert_share": head["false_alert_share"],
        "false_alerts": head["false_alerts"],
        "by_source": {
            g: part([r for r in runs if r["experiment"] == g])
            for g in dict.fromkeys(r["experiment"] for r in runs)
        },
        "by_range": {g: part([r for r in runs if r["split"] == g]) for g in ("inside", "outside")},
        "curve": [
            {k: v for k, v in s.items() if k != "lead_steps"}
            for s in wm.curve(runs, cfg["thresholds"], lead_goal=goal)
        ],
        "breakdown": wm.breakdown(runs, thr, lead_goal=goal, task=PILOT_TASK),
        "end_state": end_state(runs, thr),
        "ess": ess,
    }


def end_state(runs: list[dict[str, Any]], thr: float) -> dict[str, int]:
    """Read after the replay, not part of the design: where P(collapse) ends, at each run's
    last evaluation (>= ``thr``: called a collapse), for collapsed and other runs."""
    last = [(r["collapse_step"] is not None, r["p_collapse"][-1] >= thr) for r in runs]
    return {
        "collapsed_called": sum(c and a for c, a in last),
        "n_collapsed": sum(c for c, _ in last),
        "other_called": sum(a and not c for c, a in last),
        "n_other": sum(not c for c, _ in last),
    }


def summarize(
    rep: list[dict[str, Any]], cfg: dict[str, Any], study: str = "watch_testbed"
) -> dict[str, Any]:
    """summary.json: per method (``cfg["methods"]``), and the runs."""
    return {
        "threshold": cfg["threshold"],
        "lead_goal": cfg["lead_goal"],
        "n_runs": len(rep),
        "n_collapsed": sum(r["collapse_step"] is not None for r in rep),
        "methods": {m: summarize_method(rep, cfg, m) for m in cfg["methods"]},
        "rule": cfg["rule"],
        "command": f"python -m paper.{study}" + (" --quick" if cfg["quick"] else ""),
    }


def driver(
    argv: list[str] | None,
    *,
    doc: str,
    name: str,
    design_fn: Callable[[bool], dict[str, Any]],
    runs_fn: Callable[[bool], list[dict[str, Any]]],
    replay_fn: Callable[..., list[dict[str, Any]]],
    quick_help: str,
) -> int:
    """One held-out replay's command: the frozen design first, the labelled runs
    (``runs_fn``), the pilots' fit, the replay (``replay_fn(runs, fit_dir, cfg, out)``, kept
    once written), then ``summary.json``, ``table.md`` and ``<name>.png`` in ``--out``."""
    from simulate import ArgumentParser

    p = ArgumentParser(description=doc.splitlines()[0])  # one error: line
    p.add_argument("--out", default=str(ROOT / name))
    p.add_argument("--quick", action="store_true", help=quick_help)
    p.add_argument("--design-only", action="store_true", help="write config.json and stop")
    args = p.parse_args(argv)
    out = Path(args.out)
    cfg = design_fn(args.quick)
    fix_config(out, cfg)
    if args.design_only:
        return 0
    runs = runs_fn(args.quick)  # labelled even when the replay is kept: the inputs are read
    if (out / "replay.json").is_file():  # kept: summarised again, nothing refitted
        rep = json.loads((out / "replay.json").read_text())
    else:
        rep = replay_fn(runs, fit_pilots(pilot_folders(), out, cfg), cfg, out)
        write_text(out / "replay.json", json.dumps(rep, indent=1, default=float) + "\n")
        (out / PARTIAL).unlink(missing_ok=True)  # a resumable replay's records, now whole
    summ = summarize(rep, cfg, study=name)
    (out / "summary.json").write_text(json.dumps(summ, indent=2) + "\n")
    (out / "table.md").write_text(table(summ))
    figure(rep, summ, out / f"{name}.png")
    print(table(summ) + f"results written to {out}/")
    return 0

"""``watch`` with training signals, scored on what the launch forecast could not know
(issue 69 §4). The design is ``paper/results/watch_signals/design.json`` (stored first).

Phases:

- ``threshold``: the threshold runs (never scored): the default demo's adaptive pilot
  settings at seeds 20 and 21, 300 steps, with signals;
- ``rule``: ``calibrate signal-rule`` on them (``rule.json``), and each baseline's
  threshold on the same runs (a z-score of ``grad_norm``, of ``policy_kl``, a logistic
  regression on the signals' indicators);
- ``replay``: every held-out run (``paper.launch_horizon``'s runs whose signals start at
  step 1) replayed step by step: the setting-only forecast (the launch forecast stored in
  ``paper/results/launch_horizon/forecasts.json``, P(collapse) >= 0.5), the signal rule, and
  watch = either; each collapse's onset by the package's rule and by the peak rule;
  ``summary.json`` (``flagged_share``, ``flagged_share_missed_at_launch``, ``lead_steps``,
  ``false_alert_share`` under both rules, per method) and ``table.md``.

Usage: python -m paper.watch_signals [--phase threshold|rule|replay|all] [--quick]
       [--runs runs/watch_signals] [--heldout runs/launch_horizon/long]
       [--out paper/results/watch_signals]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

#: The demo's adaptive pilots (paper/results/demo_heldout, runs/demo_heldout/adaptive/pilots).
THRESHOLD_SETTINGS = (
    {"rl.lr": 0.001, "rl.staleness": 1},
    {"rl.lr": 0.00342, "rl.staleness": 12},
    {"rl.lr": 0.0117, "rl.staleness": 0},
    {"rl.lr": 0.04, "rl.staleness": 5},
    {"rl.lr": 0.0318, "rl.staleness": 8},
    {"rl.lr": 0.0369, "rl.staleness": 3},
)
SEEDS = (20, 21)
STEPS, EVERY = 300, 10
QUICK = {"settings": THRESHOLD_SETTINGS[0:3:2], "seeds": (20,), "steps": 40, "every": 10}


def _sizes(quick: bool) -> dict[str, Any]:
    if quick:
        return QUICK
    return {"settings": THRESHOLD_SETTINGS, "seeds": SEEDS, "steps": STEPS, "every": EVERY}


def threshold_phase(runs: Path, quick: bool, workers: int) -> list[Path]:
    """Train the threshold runs (kept or resumed when there)."""
    import calibrate

    z = _sizes(quick)
    targs = calibrate.train_args_for("C1", "AND", "math", "micro" if quick else "tiny",
                                     z["steps"], z["every"], [])  # fmt: skip
    jobs = [(s, seed) for seed in z["seeds"] for s in z["settings"]]
    folder = runs / "threshold"
    design = {"jobs": [[s, k] for s, k in jobs], "steps": z["steps"]}
    study = calibrate.Study(folder, design, kind="study", workers=workers, progress=False,
                            run_lines=True)  # fmt: skip
    names = [folder / f"lr{s['rl.lr']:g}_k{s['rl.staleness']}_s{k}" for s, k in jobs]
    with study:
        study.train([(n, targs(s, k)) for n, (s, k) in zip(names, jobs, strict=True)],
                    desc="threshold", steps=z["steps"])  # fmt: skip
    return names


def rule_phase(runs: Path, out: Path, quick: bool) -> None:
    """Fit the rule and the baselines on the threshold runs: ``rule.json``, ``baselines.json``."""
    from paper._watch_signals import fit_baselines
    from simulate.common import write_json

    names = [p for p in sorted((runs / "threshold").glob("lr*")) if p.is_dir()]
    if not names:
        raise SystemExit("error: no threshold runs: run --phase threshold first")
    rule = out / "rule.json"
    cmd = [sys.executable, "-m", "calibrate", "signal-rule", *map(str, names), "--out",
           str(rule), "--overwrite"]  # fmt: skip
    import subprocess

    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise SystemExit(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "error")
    write_json(out / "baselines.json", fit_baselines(names))
    print(f"rule and baselines fitted on {len(names)} threshold run(s)")


def replay_phase(heldout: Path, out: Path, forecasts: Path | None) -> None:
    """Replay the held-out runs: ``summary.json``, ``table.md``."""
    from paper._watch_signals import replay, table
    from simulate.common import write_json, write_text

    fc = json.loads(forecasts.read_text()) if forecasts and forecasts.is_file() else None
    summary = replay(sorted(p for p in heldout.glob("lr*") if p.is_dir()), out, fc)
    summary["command"] = "python -m paper.watch_signals --phase replay"
    write_json(out / "summary.json", summary)
    write_text(out / "table.md", table(summary))
    print(json.dumps(summary["methods"], indent=1))


def main(argv: list[str] | None = None) -> int:
    import simulate

    p = simulate.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--phase", default="all", choices=["threshold", "rule", "replay", "all"])
    p.add_argument("--runs", default="runs/watch_signals")
    p.add_argument("--heldout", default="runs/launch_horizon/long")
    p.add_argument("--forecasts", default="paper/results/launch_horizon/forecasts.json")
    p.add_argument("--out", default="paper/results/watch_signals")
    p.add_argument("--quick", action="store_true", help="micro sizes (a test runs them)")
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args(argv)
    runs, out = Path(args.runs), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    phases = ["threshold", "rule", "replay"] if args.phase == "all" else [args.phase]
    try:
        for ph in phases:
            if ph == "threshold":
                threshold_phase(runs, args.quick, args.workers)
            elif ph == "rule":
                rule_phase(runs, out, args.quick)
            else:
                replay_phase(Path(args.heldout), out, Path(args.forecasts))
    except simulate.AgentmotifsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

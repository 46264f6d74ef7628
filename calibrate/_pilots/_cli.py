"""The ``pilots`` subcommand of ``python -m calibrate``: pilot runs placed to find the regime
boundary, on the user's own knobs.

Usage::

    python -m calibrate pilots --space box.yaml --budget 1440 --pilot-steps 120 \\
        --motif C1 --gate AND --task math --out runs/pilots

The box is a search-space file (``recommend --space``'s format; only its ``fields`` and
``seed`` matter here). Round 0 trains ``--initial`` settings spread over the box at every
seed of ``--seeds``; each later round fits the pilots so far (``--motif``/``--gate``, every
box field linked on its knob scale) and trains the ``--round-size`` settings whose regime
the fit is least sure of, until ``--budget`` training steps are spent. Each round's design
is stored before its runs (``OUT/round_<k>.json``); a rerun resumes. Writes
``OUT/pilots.json`` (every run with its observed regime by both collapse rules) and
``OUT/pilots.png``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_pilots_parser", "pilots_command", "run_pilots"]


def add_pilots_parser(sub: Any) -> None:
    """Add the ``pilots`` subcommand to the subparsers ``sub``."""
    p = sub.add_parser("pilots", help="pilot runs placed where the regime is uncertain")
    p.add_argument("--space", required=True, help="the pilot box: a search-space YAML/JSON")
    p.add_argument("--budget", type=int, required=True,
                   help="training steps of all pilots together")  # fmt: skip
    p.add_argument("--pilot-steps", dest="pilot_steps", type=int, default=100,
                   help="steps per pilot (default 100)")  # fmt: skip
    p.add_argument("--eval-every", dest="eval_every", type=int, default=10,
                   help="steps between evaluations (default 10)")  # fmt: skip
    p.add_argument("--seeds", default="0,1", help="training seeds of every setting (0,1)")
    p.add_argument("--initial", type=int, default=4, help="settings of round 0 (default 4)")
    p.add_argument("--round-size", dest="round_size", type=int, default=2,
                   help="settings per later round (default 2)")  # fmt: skip
    p.add_argument("--candidates", type=int, default=256,
                   help="settings each round forecasts (default 256)")  # fmt: skip
    p.add_argument("--draws", type=int, default=100, help="posterior draws per forecast")
    p.add_argument("--extrapolation-sd", dest="extrapolation_sd", type=float, default=0.5,
                   help="bend of the links beyond the pilots' range (default 0.5)")  # fmt: skip
    p.add_argument("--motif", default="C1", help="network the pilots are wired as")
    p.add_argument("--gate", default="AND", help="gate of the last agent")
    p.add_argument("--task", default="math", help="task of every agent")
    p.add_argument("--preset", default="tiny", help="base model preset")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="FIELD=VALUE",
                   help="a training-config field every pilot shares (repeatable)")  # fmt: skip
    p.add_argument("--workers", type=int, default=2, help="runs trained at once (one thread each)")
    p.add_argument("--out", required=True, help="pilot folder")
    p.add_argument("--overwrite", action="store_true", help="restart a folder of another design")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run_pilots(
    plan: Any,
    out: Path,
    *,
    train_args: Any,
    fit_args: list[str],
    links: dict[str, Any],
    workers: int = 2,
    overwrite: bool = False,
    progress: bool = True,
    echo: Any = print,
) -> list[dict[str, Any]]:
    """Run the design ``plan`` in ``out`` as its own study (the rounds' fits link as
    ``links``, written to ``out/links.json``) and write ``pilots.json`` and ``pilots.png``;
    returns the labelled runs."""
    from simulate.common import write_json

    from .._study import Study
    from ._loop import label_runs, run_pilot_rounds
    from ._plot import plot_pilots

    design = {"pilots": plan.to_dict(), "fit_args": fit_args, "links": links}
    study = Study(out, design, design_file="design.json",
                  overwrite=overwrite, kind="pilot design", workers=workers,
                  progress=progress, echo=echo)  # fmt: skip
    with study:
        if not (out / "links.json").is_file():
            write_json(out / "links.json", links)
        runs = label_runs(run_pilot_rounds(study, plan, out, train_args=train_args,
                                           fit_args=fit_args))  # fmt: skip
        write_json(out / "pilots.json", {"spent_steps": plan.spent, "rounds": plan.rounds,
                                         "runs": runs})  # fmt: skip
        fields = [f.name for f in plan.space.searched]
        scale = next(f.scale for f in plan.space.searched)
        plot_pilots(runs, fields, out / "pilots.png", log_x=scale == "log")
    return runs


def pilots_command(args: argparse.Namespace) -> int:
    """``python -m calibrate pilots``: exit 0, or 2 with one ``error:`` line (main's)."""
    from llm_runs.knobs import hierarchy_links
    from simulate import parse_int
    from simulate.common import ConfigError

    from .._space import SearchSpace
    from ._design import PilotPlan
    from ._loop import train_args_for

    space = SearchSpace.load(args.space)
    try:
        seeds = [parse_int(t, what="--seeds") for t in str(args.seeds).split(",")]
    except ConfigError:
        msg = f"--seeds must be integers separated by commas, got {args.seeds!r}"
        raise ConfigError(msg) from None
    plan = PilotPlan(
        space=space,
        budget=args.budget,
        pilot_steps=args.pilot_steps,
        seeds=tuple(seeds),
        initial=args.initial,
        round_size=args.round_size,
        eval_every=args.eval_every,
        candidates=args.candidates,
        draws=args.draws,
        extrapolation_sd=args.extrapolation_sd,
    )
    workers = args.workers
    if workers < 1:
        raise ConfigError(f"--workers must be an integer >= 1, got {args.workers!r}")
    out = Path(args.out)
    hier = hierarchy_links(tuple(f.name for f in space.searched))
    fit_args = ["--motif", args.motif, "--gate", args.gate, "--hierarchy",
                str(out / "links.json"), "--method", "laplace"]  # fmt: skip
    targs = train_args_for(args.motif, args.gate, args.task, args.preset, plan.pilot_steps,
                           plan.eval_every, list(args.sets))  # fmt: skip
    runs = run_pilots(plan, out, train_args=targs, fit_args=fit_args, links=hier,
                      workers=workers, overwrite=args.overwrite,
                      progress=not args.no_progress)  # fmt: skip
    counts: dict[str, int] = {}
    for r in runs:
        counts[r["group"]] = counts.get(r["group"], 0) + 1
    print(json.dumps({"runs": len(runs), "rounds": plan.rounds, "spent_steps": plan.spent,
                      "observed": counts, "pilots": str(out / "pilots.json")}))  # fmt: skip
    sys.stdout.flush()
    return 0

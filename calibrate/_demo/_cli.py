"""The ``demo`` subcommand of ``python -m calibrate`` (the main job, ``make demo``)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_demo_parser", "demo_command"]


def add_demo_parser(sub: Any) -> None:
    """Add the ``demo`` subcommand to the subparsers ``sub``."""
    d = sub.add_parser(
        "demo",
        help="the main job: pilots -> fit -> motif selection -> recommendation -> "
        "confirmation run -> report (finished stages are reused)",
    )
    d.add_argument("--out", default="runs/demo", help="demo folder (default runs/demo)")
    d.add_argument("--config", help="demo config JSON/YAML (fields of the demo's config)")
    d.add_argument("--quick", action="store_true", help="tiny sizes: every stage in minutes")
    d.add_argument(
        "--overwrite", action="store_true", help="restart a demo folder made with another config"
    )
    d.add_argument(
        "--horizon",
        type=int,
        default=None,
        help="the launch horizon in optimizer steps (the config's budget_steps): the "
        "recommendation is forecast there and the confirmation run trains that long",
    )
    d.add_argument("--stop-after", dest="stop_after", help="stop after this stage")
    d.add_argument("--no-progress", action="store_true", help="no bars inside the stages")


def demo_command(args: argparse.Namespace) -> int:
    """The demo; Ctrl-C stops its child commands, prints one line on how to resume and
    exits 130 (128 + SIGINT, the shell's status for an interrupted command)."""
    from llm_runs.config import read_config_file
    from simulate.common import ConfigError

    from ._config import QUICK, DemoConfig
    from ._core import DemoInterrupted, run_demo

    if args.config and args.quick:
        raise ConfigError("--config and --quick exclude each other")
    if args.config:
        cfg = DemoConfig.from_dict(read_config_file(args.config))
    else:
        cfg = QUICK if args.quick else DemoConfig()
    if args.horizon is not None:  # checked as the config's own field
        cfg = DemoConfig.from_dict(cfg.to_dict() | {"budget_steps": args.horizon})
    try:
        timing = run_demo(
            args.out,
            cfg,
            overwrite=args.overwrite,
            progress=not args.no_progress,
            stop_after=args.stop_after,
        )
    except KeyboardInterrupt as stop:  # DemoInterrupted once the stages run
        again = ["--out", args.out, *(["--config", args.config] if args.config else [])]
        again += ["--horizon", str(args.horizon)] if args.horizon is not None else []
        again += ["--quick"] if args.quick else []
        stage = stop.stage if isinstance(stop, DemoInterrupted) else "first"
        line = f"interrupted during the {stage} stage (its commands were stopped); "
        print(f"{line}resume with: python -m calibrate demo {shlex.join(again)}", file=sys.stderr)
        return 130
    if "report" in timing:
        print(f"report: {Path(args.out) / 'report.md'}; recommendation: "
              f"{Path(args.out) / 'recommendation.json'}")  # fmt: skip
    return 0

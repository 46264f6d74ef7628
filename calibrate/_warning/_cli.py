"""The ``signal-rule`` subcommand of ``python -m calibrate``: fit the early-warning rule's
thresholds on training runs that the rule will not be scored on.

Usage::

    python -m calibrate signal-rule runs/train/*/ --out rule.json [--false-alert 0.05] \\
        [--window 30] [--persist 3] [--overwrite]

Each run (an llm_runs folder with ``signals.jsonl``, run-log schema 3) is labelled by the
package's collapse rule (:func:`llm_runs.observed_regime`); the non-collapsing runs set each
trigger's threshold (:func:`calibrate._warning._rule.fit_rule`). Writes ``rule.json``
(``rule``: the fitted :class:`~calibrate._warning._rule.SignalRule`, ``report``, ``runs``),
which ``calibrate watch --signal-rule rule.json`` reads.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

__all__ = ["add_signal_rule_parser", "signal_rule_command"]


def add_signal_rule_parser(sub: Any) -> None:
    """Add the ``signal-rule`` subcommand to the subparsers ``sub``."""
    p = sub.add_parser("signal-rule", help="fit the early-warning rule on training signals")
    p.add_argument("runs", nargs="+", help="training run folders (with signals.jsonl)")
    p.add_argument("--out", required=True, help="the rule's JSON file")
    p.add_argument("--false-alert", dest="false_alert", type=float, default=0.05,
                   help="false-alert share the thresholds allow on calm runs")  # fmt: skip
    p.add_argument("--window", type=int, default=30, help="steps behind each indicator (30)")
    p.add_argument("--persist", type=int, default=3, help="steps a trigger must hold (3)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")


def signal_rule_command(args: argparse.Namespace) -> int:
    """Fit and write the rule; 0, or exit 2 with one ``error:`` line (raised as an
    :class:`~simulate.AgentmotifsError`)."""
    from llm_runs import observed_regime
    from llm_runs.runlog import RunLogError, read_run
    from simulate.common import ConfigError, regime_group, write_json

    from ._rule import SignalRule, fit_rule

    out = Path(args.out)
    if out.exists() and not args.overwrite:
        raise ConfigError(f"{out} exists; pass --overwrite to replace it")
    if out.is_dir():
        raise ConfigError(f"--out {out} is a folder; name the rule's JSON file")
    rule = SignalRule(window=args.window, min_points=min(10, args.window),
                      persist=args.persist, false_alert=args.false_alert)  # fmt: skip
    tables, collapsed, names = [], [], []
    for r in args.runs:
        try:
            log = read_run(r)
        except (RunLogError, OSError) as err:
            raise ConfigError(f"{r}: not a run folder ({err})") from None
        table = log.signals()
        if not len(table):
            raise ConfigError(f"{r}: no training signals (signals.jsonl, run-log schema 3)")
        tables.append(table)
        collapsed.append(regime_group(observed_regime(log)["regime"]) == "collapse")
        names.append(str(r))
    fitted, report = fit_rule(tables, collapsed, rule)
    doc = {"rule": fitted.to_dict(), "report": report,
           "runs": [{"run": n, "collapsed": c} for n, c in zip(names, collapsed, strict=True)],
           "collapse_rule": "the package's (simulate.COLLAPSE_RULE)"}  # fmt: skip
    write_json(out, doc)
    print(json.dumps(report, indent=1))
    print(f"rule written to {out} ({sum(not c for c in collapsed)} calm run(s) set it)")
    return 0

"""The ``fit`` command's input options: key mapping of external logs and ``--dry-run``.

Kept out of ``__main__`` so that the CLI module stays about the commands.
"""

from __future__ import annotations

import argparse

from ._curve_data import CurveData
from ._importers import KeyMapping

__all__ = ["add_input_options", "dry_run", "load"]


def add_input_options(p: argparse.ArgumentParser) -> None:
    """Add ``--agent``, ``--agent-regex``, ``--n-eval``, ``--covariate`` and ``--dry-run``."""
    p.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="AGENT=KEY",
        help="a logged key that is an agent's competence, e.g. X=critic/solver/score/mean "
        "(TRL, verl, TensorBoard, MLflow, W&B inputs; repeat)",
    )
    p.add_argument(
        "--agent-regex",
        action="append",
        default=[],
        metavar="REGEX",
        help="logged keys matched in full, the agent named by the group (?P<agent>...), e.g. "
        "'critic/(?P<agent>\\w+)/score/mean' (repeat)",
    )
    p.add_argument(
        "--n-eval",
        action="append",
        default=[],
        metavar="N|AGENT=N",
        help="evaluation size behind the mapped keys' values, which the logs do not record",
    )
    p.add_argument(
        "--covariate",
        action="append",
        default=[],
        metavar="NAME=KEY",
        help="a run config's key as a named covariate, e.g. rl.lr=learning_rate or "
        "seed=data.seed (repeat)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="read and check the inputs, print what they hold, fit and write nothing",
    )


def load(args: argparse.Namespace) -> CurveData:
    """The inputs of ``fit``, read with the mapping and TensorBoard tags its options give."""
    from simulate.common import ConfigError

    from ._data import load_inputs

    mapping = KeyMapping.from_options(args.agent, args.agent_regex, args.n_eval, args.covariate)
    tags = {}
    for item in args.tb_tag:
        agent, _, tag = item.partition("=")
        if not tag:
            raise ConfigError(f"--tb-tag must look like AGENT=TAG, got {item!r}")
        tags[agent] = tag
    return load_inputs(
        args.inputs, strict=args.strict, tb_tags=tags, tb_n_eval=args.tb_n_eval, mapping=mapping
    )


def dry_run(args: argparse.Namespace) -> int:
    """Print what the inputs hold (runs, agents, steps, named covariates); exit status 0."""
    data = load(args)
    t = data.table
    print(f"{len(data.runs)} run(s), agents {data.agents}, {len(t)} evaluations")
    for keys, g in t.groupby(["run", "agent"], sort=True):
        run, agent = keys  # type: ignore[misc]
        print(
            f"  {run} {agent}: {len(g)} evaluations at steps {g['step'].min()}..{g['step'].max()}"
            f", competence {g['competence'].iloc[0]:.3g} -> {g['competence'].iloc[-1]:.3g}"
            f", n_eval {sorted(set(g['n_eval'].tolist()))}"
        )
    names = {"seed", *(item.partition("=")[0].strip() for item in args.covariate)}
    named = [c for c in data.hyper.columns if c in names]
    if named:
        print(data.hyper[named].to_string())
    print(f"{len(data.hyper.columns)} covariate column(s); dry run: nothing fitted or written")
    return 0

"""The ``fit`` command's input options: key mapping of external logs and ``--dry-run``.

Kept out of ``__main__`` so that the CLI module stays about the commands.
"""

from __future__ import annotations

import argparse
from typing import Any

from ._curve_data import CurveData
from ._importers import KeyMapping

__all__ = [
    "add_input_options",
    "check_gates",
    "check_horizon",
    "check_inputs",
    "describe_inputs",
    "dry_run",
    "load",
    "write_inputs",
]


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
        "--force-key",
        action="store_true",
        help="read mapped keys that do not look like a success rate (by name: loss, kl, "
        "entropy, lengths; by behaviour: values or spread beyond the range) anyway",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="read and check the inputs, print what they hold, fit and write nothing",
    )


def load(args: argparse.Namespace, *, describe: bool = False) -> CurveData:
    """The inputs of ``fit``, read with the mapping and TensorBoard tags its options give;
    ``describe``: print :func:`describe_inputs`' lines."""
    from simulate.common import ConfigError

    from ._data import load_inputs

    mapping = KeyMapping.from_options(
        args.agent, args.agent_regex, args.n_eval, args.covariate, force=args.force_key
    )
    tags = {}
    for item in args.tb_tag:
        agent, _, tag = item.partition("=")
        if not tag:
            raise ConfigError(f"--tb-tag must look like AGENT=TAG, got {item!r}")
        tags[agent] = tag
    data = load_inputs(
        args.inputs, strict=args.strict, tb_tags=tags, tb_n_eval=args.tb_n_eval, mapping=mapping
    )
    for line in describe_inputs(data) if describe else []:
        print(line)
    return data


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
    for line in describe_inputs(data):
        print(line)
    names = {"seed", *(item.partition("=")[0].strip() for item in args.covariate)}
    named = [c for c in data.hyper.columns if c in names]
    if named:
        print(data.hyper[named].to_string())
    print(f"{len(data.hyper.columns)} covariate column(s); dry run: nothing fitted or written")
    return 0


def describe_inputs(data: CurveData) -> list[str]:
    """What each imported key means, where its evaluation size came from, what its points
    are, each run's status (with counts) and the training signals read: the lines
    ``fit --dry-run``, ``fit`` and ``watch`` print (issue 70 §1, §2, §4)."""
    from ._importers import status_counts

    lines = []
    if data.sources is not None:
        for r in data.sources.to_dict("records"):
            lines.append(
                f"  {r['run']} {r['agent']} <- {r['key']}: {r['meaning']}; n_eval from "
                f"{r['n_eval_from']}; each value: {r['point']}"
            )
    for run, s in sorted(data.status.items()):
        why = f" ({s['reason']})" if s.get("reason") else ""
        lines.append(f"  {run}: {s['status']}{why}")
    if data.status:
        counts = ", ".join(f"{n} {k}" for k, n in status_counts(data.status).items())
        lines.append(f"run status: {counts}")
    if data.signals is not None:
        names = [c for c in data.signals.columns if c not in ("run", "step", "agent")]
        lines.append(f"training signals: {', '.join(names)}")
    return lines


def write_inputs(out: Any, data: CurveData) -> None:
    """Write ``inputs.json`` into a fit's folder: per run and agent the key, its meaning
    and range, the evaluation size's origin and the point kind, and each run's status (the
    range is stored with the fit, so every later output can show it)."""
    from pathlib import Path

    from simulate import write_json

    from ._importers import status_counts

    if data.sources is None and not data.status:
        return
    sources = [] if data.sources is None else data.sources.to_dict("records")
    write_json(
        Path(out) / "inputs.json",
        {
            "sources": sources,
            "status": {r: dict(s) for r, s in data.status.items()},
            "status_counts": status_counts(data.status),
        },
    )


def check_gates(args: argparse.Namespace) -> None:
    """``--gate``: each gate named is one the networks know (``XOR`` is refused, never
    ignored); ``args.gates`` becomes the gates a selection tries (``--motif auto`` without
    ``--gate``: AND and OR), ``args.gate`` the one gate of a single fit (default AND)."""
    from simulate.spec import GATES

    from ._config import ConfigError

    if args.network is None and not str(args.motif).strip(","):
        raise ConfigError(
            f"--motif {args.motif!r} is empty: give a preset (C1...I4), a comma list or auto"
        )
    if args.network is None and any(not m.strip() for m in str(args.motif).split(",")):
        raise ConfigError(f"--motif {args.motif!r} has an empty item")
    text = args.gate if args.gate is not None else "AND"
    gates = [g.strip().upper() for g in text.split(",")]
    for g in gates:
        if g not in GATES:
            raise ConfigError(f"--gate {args.gate}: unknown gate {g!r}; use one of {GATES}")
    if args.network is not None and args.gate is not None:
        raise ConfigError(f"--gate {args.gate}: only for preset motifs; --network sets its own")
    auto = args.network is None and args.motif == "auto" and args.gate is None
    args.gates = ("AND", "OR") if auto else tuple(gates)
    args.gate = gates[0] if len(gates) == 1 else text


def check_inputs(data: CurveData, cfg: Any) -> None:
    """Everything ``fit`` needs of the inputs, before any solve: the horizon
    (:func:`check_horizon`; steps of 1e15 asked 7 PiB), and, where the config asks for
    them, every run's edge weights, flip pulses and logged regulators (with K, n)."""
    check_horizon(data, cfg)
    if cfg.edge_weights:
        from ._edge_weights import run_edge_weights

        run_edge_weights(data)
    if cfg.pulses:
        from ._pulses import config_pulses

        for run in data.runs:
            config_pulses(run, data.configs.get(run))
    if cfg.logged_regulators:
        from ._regulators import run_regulators

        run_regulators(data, tuple(data.agents))


def check_horizon(data: Any, cfg: Any) -> None:
    """Refuse data whose last step needs more solver steps of ``dt`` than any solve of
    :func:`calibrate.predict` may take (its :data:`MAX_SOLVE_STEPS`), before any work."""
    from ._config import ConfigError
    from ._predict._checks import MAX_SOLVE_STEPS

    last = float(data.table["step"].max())
    n = last / float(cfg.dt)
    if n > MAX_SOLVE_STEPS:
        raise ConfigError(
            f"the data's last step {last:.0f} needs {n:.3g} solver steps of dt {cfg.dt:g} "
            f"(at most {MAX_SOLVE_STEPS:.0e}; about {n * 40 * len(data.agents):.3g} bytes "
            "per draw): fit the runs' steps as logged (not in other units) or raise dt"
        )


def fit_inputs(fit_dir: Any) -> list[dict[str, Any]]:
    """What each fitted agent's competence is (key, meaning and range, evaluation size,
    points), from the fit's ``inputs.json`` (a selection folder: its best fit's, else any
    fit's); ``[]`` for a fit of llm_runs folders, whose competences are probe accuracies."""
    import json
    from pathlib import Path

    root = Path(fit_dir)
    found = [root / "inputs.json", *sorted(root.glob("fits/*/inputs.json"))]
    sel = root / "selection.json"
    if sel.is_file():
        best = json.loads(sel.read_text()).get("best")
        found.insert(1, root / "fits" / str(best) / "inputs.json")
    for f in found:
        if f.is_file():
            seen, out = set(), []
            for r in json.loads(f.read_text()).get("sources", []):
                k = (r.get("agent"), r.get("key"), r.get("meaning"))
                if k not in seen:
                    seen.add(k)
                    out.append({"agent": r.get("agent"), "key": r.get("key"),
                                "meaning": r.get("meaning"),
                                "n_eval_from": r.get("n_eval_from")})  # fmt: skip
            return out
    return []


def input_lines(inputs: list[dict[str, Any]]) -> list[str]:
    """One line per fitted agent's source: ``competence of X <- rewards/acc: range [0, 2]``."""
    return [f"competence of {r['agent']} <- {r['key']}: {r['meaning']}" for r in inputs]

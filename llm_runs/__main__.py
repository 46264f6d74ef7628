"""Command line: ``python -m llm_runs train|sweep|pretrain|figure ...``.

Examples::

    python -m llm_runs train --motif I1 --gate AND --task math --steps 300 --seed 0 \\
        --out runs/i1
    python -m llm_runs train --config cfg.yaml --out runs/x --set rl.algo=grpo --set rl.group=4
    python -m llm_runs train --out runs/i1 --resume          # after a crash / SIGKILL
    python -m llm_runs train --motif my_net.yaml --task math --out runs/mine
    python -m llm_runs train --motif C1 --feedback -1 --feedback-K 0.5 --out runs/c1_fb
    python -m llm_runs sweep --config sweep.yaml --backend ray
    python -m llm_runs figure runs/c1 runs/i1 --out paper/figures/c1_vs_i1.png
    python -m llm_runs pretrain --arch llama --tokenizer bpe --preset micro --out bases/llama
    python -m llm_runs train --base bases/llama --task math --steps 50 --out runs/llama
"""

from __future__ import annotations

import argparse
import copy
import sys
import typing
import warnings
from pathlib import Path
from typing import Any

from simulate.common import AgentmotifsError, check_writable
from simulate.spec import MOTIFS, resolve_spec

from ._cli_pretrain import add_pretrain_parser, run_pretrain
from .config import (
    ConfigError,
    TrainConfig,
    field_type,
    load_config,
    load_sweep,
    set_dotted,
    set_from_text,
)
from .knobs import KNOBS
from .runlog import read_run

_FLAGS = {  # CLI flag -> dotted config field (the knobs' flags come from the knob schema)
    "motif": "network.motif",
    "gate": "network.gate",
    "K": "network.K",
    "n": "network.n",
    "mechanism": "network.default_mechanism",
    "task": "task.name",
    "steps": "steps",
    "seed": "seed",
    "algo": "rl.algo",
    "credit": "rl.credit",
    "device": "device",
    "base": "model.base",
    "base_cache": "model.base_cache",
    "preset": "model.preset",
    "arch": "model.arch",
    "tokenizer": "model.tokenizer",
    "eval_every": "eval_every",
    "ckpt_every": "ckpt_every",
    "threads": "threads",
    "pool_size": "pool_size",
    "warmup_steps": "rl.warmup_steps",
    "name": "name",
} | {k.flag: k.field for k in KNOBS if k.flag is not None}


_HELP = {
    "ckpt_every": "checkpoint period in steps (default 50); 0: no checkpoints, so a killed "
    "run cannot resume (train says so when it starts)",
}


def _motif(data: dict[str, Any], value: str, args: argparse.Namespace) -> None:
    """``--motif``: a preset (``C1``, ``I1-OR``) or a network spec file, as simulate reads
    them (:func:`simulate.spec.resolve_spec`: an unknown name or a bad file fails here)."""
    try:
        spec = resolve_spec(value, args.gate or "AND", what="--motif")
    except AgentmotifsError as err:
        if value in str(err):
            raise
        raise ConfigError(f"--motif {value}: {err}") from None
    head, _, gate = value.partition("-")
    if head.upper() in MOTIFS:  # resolve_spec's rule: a preset name before a file name
        if gate and args.gate is not None and args.gate.upper() != gate.upper():
            raise ConfigError(f"--motif {value} and --gate {args.gate} disagree")
        set_dotted(data, "network.motif", head.upper())
        set_dotted(data, "network.gate", spec.gates[spec.nodes[-1]])
        set_dotted(data, "network.spec", None)
        set_dotted(data, "network.spec_path", None)
        return
    given = [f"--{f}" for f in ("gate", "K", "n") if getattr(args, f) is not None]
    if given:
        raise ConfigError(f"{', '.join(given)}: only for preset motifs; {value} sets its own")
    set_dotted(data, "network.spec", None)
    set_dotted(data, "network.spec_path", value)


def _train_config(args: argparse.Namespace, stored: dict[str, Any] | None = None) -> TrainConfig:
    """The config the flags ask for, over ``--config`` or (resuming) the run's own config."""
    if args.config:
        data = load_config(args.config).to_dict()
    else:
        data = copy.deepcopy(stored) if stored is not None else {}
    flagged: dict[str, str] = {}  # dotted field -> the flag that sets it
    for flag, key in _FLAGS.items():
        v = getattr(args, flag, None)
        if v is None:
            continue
        flagged[key] = f"--{flag.replace('_', '-')} {v}"
        if flag == "motif":
            _motif(data, v, args)
        else:
            set_dotted(data, key, v)
    given: dict[str, str] = {}  # --set key -> its text: a key twice is refused, neither wins
    for item in args.set or []:
        if "=" not in item:
            raise ConfigError(f"--set expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        k = k.strip()
        if k in given:
            raise ConfigError(
                f"--set {k} is given twice ({k}={given[k]} and {k}={v}): give it once"
            )
        if k in flagged:
            raise ConfigError(f"{flagged[k]} and --set {k}={v} both set {k}: give one of them")
        given[k] = v
        set_from_text(data, k, v)
    return _feedback(TrainConfig.from_dict(data), args)


def _feedback(cfg: TrainConfig, args: argparse.Namespace) -> TrainConfig:
    """``--feedback ±1 [--feedback-K K]``: the network with end-to-end edges from its last
    agent to every other one, as simulate's ``--feedback`` adds them
    (:func:`simulate.spec.resolve_spec`), written into ``network.spec``."""
    sign, K = getattr(args, "feedback", None), getattr(args, "feedback_K", None)
    if sign is None:
        if K is not None:
            raise ConfigError("--feedback-K: only with --feedback -1 or 1")
        return cfg
    spec = resolve_spec(
        cfg.network.network_spec(), feedback=sign, feedback_K=0.5 if K is None else K
    )
    data = cfg.to_dict()
    set_dotted(data, "network.spec", spec.to_dict())
    set_dotted(data, "network.spec_path", None)
    return TrainConfig.from_dict(data)


def _resume_config(args: argparse.Namespace) -> TrainConfig | None:
    """``--resume``: the run's own config (None), or the one the flags ask for if any."""
    from ._runfolder import check_resumable, same_run

    stored = check_resumable(args.out)["config"]
    asked = (
        args.config
        or args.set
        or any(getattr(args, f) is not None for f in (*_FLAGS, "feedback", "feedback_K"))
    )
    if not asked:
        return None
    cfg = _train_config(args, stored)
    same_run(TrainConfig.from_dict(stored), cfg, args.out)  # fail before loading torch
    return cfg


def _summary(out: Path) -> str:
    log = read_run(out)
    e2e = log.e2e_rows
    if not e2e or not log.agent_rows:
        return f"run {log.name}: {out} (no evaluations logged)"
    first, last = (
        log.agent_rows[: len(log.manifest["agents"])],
        log.agent_rows[-len(log.manifest["agents"]) :],
    )
    lines = [
        f"run {log.name}: {out}",
        f"  end-to-end accuracy {e2e[0]['accuracy']:.3f} -> {e2e[-1]['accuracy']:.3f} "
        f"(step {e2e[0]['step']} -> {e2e[-1]['step']}, n={e2e[-1]['n_eval']})",
    ]
    for a, b in zip(first, last, strict=True):
        lines.append(f"  {a['agent']}: competence {a['competence']:.3f} -> {b['competence']:.3f}")
    if log.status == "diverged":
        lines.append(
            f"note: the run diverged at step {log.diverged_step} "
            f"({log.manifest.get('diverged_reason')}); training stopped there and the log "
            "keeps its rows (manifest status: diverged)"
        )
    return "\n".join(lines)


def _show_warning(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
    print(f"warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    from simulate import ArgumentParser

    p = ArgumentParser(
        prog="python -m llm_runs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="train one run (or resume it)")
    t.add_argument("--config", help="TrainConfig .json/.yaml (flags override it)")
    t.add_argument("--out", required=True, help="run folder")
    t.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out from its last checkpoint, with the config in its "
        "manifest (options given must agree with it)",
    )
    t.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a previous run in --out (a new run into a non-empty folder is refused)",
    )
    t.add_argument("--set", action="append", metavar="KEY=VALUE", help="dotted override")
    t.add_argument("--no-progress", action="store_true")
    t.add_argument(
        "--feedback",
        type=int,
        choices=(-1, 1),
        help="add end-to-end feedback edges of this sign from the last agent to the others "
        "(as simulate's --feedback; written into network.spec)",
    )
    t.add_argument(
        "--feedback-K", dest="feedback_K", type=float, help="threshold of the feedback edges"
    )
    for flag, key in _FLAGS.items():  # each flag typed as its config field
        kinds = typing.get_args(field_type(key)) or (field_type(key),)
        kind = next((k for k in (int, float) if k in kinds), str)
        extra = {"help": _HELP[flag]} if flag in _HELP else {}
        t.add_argument(f"--{flag.replace('_', '-')}", dest=flag, type=kind, **extra)
    s = sub.add_parser("sweep", help="seeds x grid, local process pool or Ray")
    s.add_argument("--config", required=True, help="SweepConfig .json/.yaml")
    s.add_argument("--backend", choices=["local", "ray"])
    s.add_argument("--address", help="Ray cluster address")
    s.add_argument("--workers", type=int)
    s.add_argument("--out")
    add_pretrain_parser(sub)
    f = sub.add_parser("figure", help="competence curves of runs, one panel per run")
    f.add_argument("runs", nargs="+")
    f.add_argument("--out", required=True, help="the figure (PNG, PDF, SVG...)")
    f.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    f.add_argument("--strict", action="store_true", help="a torn last line is an error")
    args = p.parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return _dispatch(args)
        except AgentmotifsError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2


def _dispatch(args: argparse.Namespace) -> int:
    if args.cmd == "train":
        from ._runfolder import check_device, preflight

        preflight(args.out, resume=args.resume, overwrite=args.overwrite)
        cfg = _resume_config(args) if args.resume else _train_config(args)
        if cfg is not None:
            check_device(cfg.device)
            if cfg.ckpt_every == 0:
                print(
                    "note: ckpt_every 0: no checkpoints are written, so a killed run "
                    "cannot be resumed",
                    file=sys.stderr,
                )
        from ._train import train

        out = train(
            cfg,
            args.out,
            resume=args.resume,
            overwrite=args.overwrite,
            progress=not args.no_progress,
        )
        print(_summary(out))
        return 0
    if args.cmd == "sweep":
        from ._sweep import run_sweep

        sw = load_sweep(args.config)
        for k in ("backend", "address", "workers", "out"):
            if getattr(args, k) is not None:
                setattr(sw, k, getattr(args, k))
        sw.__post_init__()
        check_writable(sw.out)
        res = run_sweep(sw)
        ok = sum(r["ok"] for r in res)
        print(f"sweep: {ok}/{len(res)} runs ok -> {sw.out}")
        for r in res:
            if not r["ok"]:
                print(f"  FAILED {r['name']}: {r['error']}")
        return 0 if ok == len(res) else 1
    if args.cmd == "pretrain":
        return run_pretrain(args)
    from simulate.common import PLOT_SUFFIXES, claim_file

    from ._competence_plot import competence_figure

    # the one output rule: a known figure type, never a folder, an existing file (a user's
    # or a link to one) replaced only with --overwrite
    claim_file(args.out, overwrite=args.overwrite, what="--out", suffixes=PLOT_SUFFIXES)
    print(competence_figure(args.runs, args.out, strict=args.strict))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

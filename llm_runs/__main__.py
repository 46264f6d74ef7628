"""Command line: ``python -m llm_runs train|sweep|pretrain|figure ...``.

Examples::

    python -m llm_runs train --motif I1 --gate AND --task math --steps 300 --seed 0 \\
        --out runs/i1
    python -m llm_runs train --config cfg.yaml --out runs/x --set rl.algo=grpo --set rl.group=4
    python -m llm_runs train --out runs/i1 --resume          # after a crash / SIGKILL
    python -m llm_runs sweep --config sweep.yaml --backend ray
    python -m llm_runs figure runs/c1 runs/i1 --out paper/figures/c1_vs_i1.png
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from .config import ConfigError, TrainConfig, load_config, load_sweep, set_dotted
from .runlog import RunLogError, read_run

_FLAGS = {  # CLI flag -> dotted config field
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
    "eval_every": "eval_every",
    "ckpt_every": "ckpt_every",
    "threads": "threads",
    "pool_size": "pool_size",
    "warmup_steps": "rl.warmup_steps",
    "batch": "rl.batch",
    "group": "rl.group",
    "lr": "rl.lr",
    "name": "name",
}


def _train_config(args: argparse.Namespace) -> TrainConfig:
    data = load_config(args.config).to_dict() if args.config else {}
    for flag, key in _FLAGS.items():
        v = getattr(args, flag, None)
        if v is not None:
            set_dotted(data, key, v)
    for item in args.set or []:
        if "=" not in item:
            raise ConfigError(f"--set expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        set_dotted(data, k, yaml.safe_load(v))
    return TrainConfig.from_dict(data)


def _summary(out: Path) -> str:
    log = read_run(out)
    e2e = log.e2e_rows
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
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    p = argparse.ArgumentParser(
        prog="python -m llm_runs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="train one run (or resume it)")
    t.add_argument("--config", help="TrainConfig .json/.yaml (flags override it)")
    t.add_argument("--out", required=True, help="run folder")
    t.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    t.add_argument("--set", action="append", metavar="KEY=VALUE", help="dotted override")
    t.add_argument("--no-progress", action="store_true")
    for flag in _FLAGS:
        kind = {
            "steps": int,
            "seed": int,
            "eval_every": int,
            "ckpt_every": int,
            "threads": int,
            "pool_size": int,
            "warmup_steps": int,
            "batch": int,
            "group": int,
            "K": float,
            "n": float,
            "lr": float,
        }.get(flag, str)
        t.add_argument(f"--{flag.replace('_', '-')}", dest=flag, type=kind)
    s = sub.add_parser("sweep", help="seeds x grid, local process pool or Ray")
    s.add_argument("--config", required=True, help="SweepConfig .json/.yaml")
    s.add_argument("--backend", choices=["local", "ray"])
    s.add_argument("--address", help="Ray cluster address")
    s.add_argument("--workers", type=int)
    s.add_argument("--out")
    pt = sub.add_parser("pretrain", help="pretrain (or find) the cached base for a task")
    pt.add_argument("--task", default="math")
    pt.add_argument("--preset", default="tiny")
    pt.add_argument("--base-cache", dest="base_cache")
    pt.add_argument("--steps", type=int)
    f = sub.add_parser("figure", help="competence curves of runs, one panel per run")
    f.add_argument("runs", nargs="+")
    f.add_argument("--out", required=True)
    args = p.parse_args(argv)
    try:
        if args.cmd == "train":
            from ._train import train

            cfg = _train_config(args)
            out = train(cfg, args.out, resume=args.resume, progress=not args.no_progress)
            print(_summary(out))
        elif args.cmd == "sweep":
            from ._sweep import run_sweep

            sw = load_sweep(args.config)
            for k in ("backend", "address", "workers", "out"):
                if getattr(args, k) is not None:
                    setattr(sw, k, getattr(args, k))
            sw.__post_init__()
            res = run_sweep(sw)
            ok = sum(r["ok"] for r in res)
            print(f"sweep: {ok}/{len(res)} runs ok -> {sw.out}")
            for r in res:
                if not r["ok"]:
                    print(f"  FAILED {r['name']}: {r['error']}")
            return 0 if ok == len(res) else 1
        elif args.cmd == "pretrain":
            from ._base import get_base
            from ._tasks import get_task

            base = get_base(
                get_task(args.task),
                preset=args.preset,
                cache=args.base_cache,
                steps=args.steps,
                progress=True,
            )
            print(json.dumps({"path": str(base.path), **base.meta}, indent=2))
        else:
            from ._figure import competence_figure

            print(competence_figure(args.runs, args.out))
    except (ConfigError, RunLogError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

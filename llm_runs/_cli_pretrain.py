"""The ``pretrain`` subcommand: the cached base of a task, or a new checkpoint folder
(``--out``) for ``train --base``. CLI code only; the work is :mod:`llm_runs._base_model`'s."""

from __future__ import annotations

import argparse
import json
from typing import Any

from simulate.common import ConfigError, OutputError, check_writable, jsonable

from .config import ARCHS, PRESETS, TOKENIZERS

__all__ = ["add_pretrain_parser", "run_pretrain"]


def add_pretrain_parser(sub: Any) -> None:
    """Add ``pretrain`` to the subcommands ``sub`` (an argparse subparsers object)."""
    pt = sub.add_parser(
        "pretrain",
        help="pretrain (or find) the cached base for a task, or one into --out for --base",
    )
    pt.add_argument("--task", default="math")
    pt.add_argument("--preset", default="tiny", choices=PRESETS)
    pt.add_argument("--arch", default="gpt2", choices=ARCHS, help="architecture (gpt2)")
    pt.add_argument("--tokenizer", default="char", choices=TOKENIZERS, help="char (default) or bpe")
    pt.add_argument("--base-cache", dest="base_cache")
    pt.add_argument(
        "--out", help="checkpoint folder to create (a new folder; default: in the cache)"
    )
    pt.add_argument("--steps", type=int)
    pt.add_argument("--batch", type=int, default=64)
    pt.add_argument("--lr", type=float, default=3e-3)
    pt.add_argument("--seed", type=int, default=0)
    pt.add_argument("--device", default="cpu")


def run_pretrain(args: argparse.Namespace) -> int:
    """``pretrain``: the cached base of these settings (built once), or with ``--out`` a new
    checkpoint folder there, which ``train --base`` loads."""
    from ._runfolder import check_device
    from ._task_registry import get_task

    for flag in ("steps", "batch"):
        v = getattr(args, flag)
        if v is not None and v <= 0:
            raise ConfigError(f"--{flag}: must be a positive int, got {v}")
    if not args.lr > 0:
        raise ConfigError(f"--lr: must be > 0, got {args.lr}")
    check_device(args.device)
    task = get_task(args.task)
    kind: dict[str, Any] = {
        "preset": args.preset,
        "arch": args.arch,
        "tokenizer": args.tokenizer,
        "steps": args.steps,
        "batch": args.batch,
        "lr": args.lr,
        "device": args.device,
        "progress": True,
    }
    if args.out is not None:
        from ._base_model import load_base, pretrain_base

        if args.base_cache is not None:
            raise ConfigError("--out and --base-cache exclude each other")
        out = check_writable(args.out)
        if out.exists() and any(out.iterdir()):
            raise OutputError(f"--out {str(out)!r} is not empty; give a new folder")
        if out.exists():
            out.rmdir()  # pretrain_base renames its finished temp folder into place
        pretrain_base(task, out, seed=args.seed, **kind)
        base = load_base(out)
    else:
        from ._base_model import get_base

        if args.seed != 0:
            raise ConfigError("--seed: cached bases have seed 0; use --out for another seed")
        if args.base_cache is not None:
            check_writable(args.base_cache, what="--base-cache")
        base = get_base(task, cache=args.base_cache, **kind)
    info = jsonable({"path": str(base.path), **base.meta})
    print(json.dumps(info, indent=2, allow_nan=False))
    return 0

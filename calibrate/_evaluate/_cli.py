"""The ``evaluate`` command: forecasts of held-out runs by the motif model and by every
practitioner baseline, scored (``summary.json``, ``table.md``, ``pit.png``,
``reliability.png`` in ``--out``)."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simulate.common import ConfigError

__all__ = ["add_evaluate_parser", "evaluate_command"]

COMMAND = "calibrate evaluate"


def add_evaluate_parser(sub: Any) -> None:
    """Add ``evaluate`` to the subcommands ``sub``."""
    e = sub.add_parser(
        "evaluate",
        help="score the model's forecasts of held-out runs against practitioner baselines",
        description="Forecast held-out runs by the motif model (a saved fit of the pilots, or "
        "one fitted here with --fit-args) and by the baselines (nearest pilot, GP over knobs, "
        "GP classifier, 3-nn, sigmoid on the run's first steps); score them per split "
        "(interpolation / extrapolation: a knob outside the pilots' range).",
    )
    e.add_argument("--pilots", nargs="+", default=[], metavar="RUN", help="pilot run folders")
    e.add_argument("--heldout", nargs="+", default=[], metavar="RUN", help="held-out runs")
    e.add_argument(
        "--loo",
        nargs="+",
        default=[],
        metavar="RUN",
        help="leave one setting out over these runs (instead of --pilots/--heldout)",
    )
    m = e.add_mutually_exclusive_group()
    m.add_argument("--fit", default=None, help="a fit of the pilots (a folder written by fit)")
    m.add_argument(
        "--fit-args",
        default=None,
        metavar="ARGS",
        help="fit the pilots here (every fold with --loo) with these `calibrate fit` options, "
        "e.g. '--motif C1 --method laplace'; without --hierarchy the knobs' default links",
    )
    m.add_argument("--no-model", action="store_true", help="score the baselines only")
    e.add_argument("--knobs", default=None, help="comma list (default: the knobs that vary)")
    e.add_argument(
        "--band",
        choices=["new_run", "mean", "both"],
        default="new_run",
        help="the model's forecast: one new run (default), the mean curve, or both",
    )
    e.add_argument("--draws", type=int, default=400, help="samples per forecast (>= 10)")
    e.add_argument("--prefix", type=int, default=50, help="steps the sigmoid sees (0: no sigmoid)")
    e.add_argument("--n-eval", type=int, default=None, help="probes per evaluation")
    e.add_argument("--extrapolation-sd", type=float, default=0.0, metavar="S")
    e.add_argument("--seed", type=int, default=0, help="seed of every random draw")
    e.add_argument("--out", required=True, help="output folder (new)")
    e.add_argument("--overwrite", action="store_true", help="replace an earlier evaluation")


def _check(args: argparse.Namespace) -> None:
    if args.loo and (args.pilots or args.heldout):
        raise ConfigError("give --loo RUN... or --pilots and --heldout, not both")
    if not args.loo and not (args.pilots and args.heldout):
        raise ConfigError("give --pilots RUN... and --heldout RUN... (or --loo RUN...)")
    if args.fit is None and args.fit_args is None and not args.no_model:
        raise ConfigError("give --fit FIT_DIR, --fit-args '...' or --no-model")
    if args.loo and args.fit is not None:
        raise ConfigError("--fit saw every run: with --loo give --fit-args (one fit per fold)")
    if args.fit_args is not None:
        _split_fit_args(args.fit_args)
    if args.draws < 10 or args.prefix < 0:
        raise ConfigError("--draws must be >= 10 and --prefix >= 0")
    if args.n_eval is not None and args.n_eval < 1:
        raise ConfigError("--n-eval must be >= 1")
    runs = [*args.pilots, *args.heldout, *args.loo]
    missing = [r for r in runs if not (Path(r) / "manifest.json").is_file()]
    if missing:
        raise ConfigError(f"{missing[0]} is not a run folder (no manifest.json)")
    if len(set(map(str, map(Path, runs)))) != len(runs):
        raise ConfigError("a run folder is given twice")


def _split_fit_args(text: str) -> list[str]:
    """``--fit-args`` as a list (checked before any work)."""
    try:
        args = shlex.split(text)
    except ValueError as err:
        raise ConfigError(f"--fit-args: {err}") from None
    if "--out" in args:
        raise ConfigError("--fit-args must not set --out (the fit goes into --out)")
    return args


def _fit_args(text: str, knobs: Sequence[str], where: Path) -> list[str]:
    """``--fit-args`` as a list, with the knobs' default links when it has no hierarchy."""
    from llm_runs.knobs import hierarchy_links
    from simulate.common import write_json

    args = _split_fit_args(text)
    if "--hierarchy" not in args:
        where.mkdir(parents=True, exist_ok=True)
        links = write_json(where / "links.json", hierarchy_links(list(knobs)))
        args += ["--hierarchy", str(links)]
    return args


def _model(args: argparse.Namespace, tmp: Path, knobs: Sequence[str], n_eval: int):
    """A function ``(pilots, heldout) -> forecasts`` of the model, or None."""
    from .._posterior import load_fit
    from .._study import fit_runs
    from ._model import model_forecasts

    if args.no_model:
        return None
    bands = ("new_run", "mean") if args.band == "both" else (args.band,)
    fit_args = None if args.fit_args is None else _fit_args(args.fit_args, knobs, tmp)
    folds = iter(range(10**6))

    def forecast(pilots, heldout):
        if fit_args is None:
            post = load_fit(args.fit)
        else:
            k = next(folds)
            fit_dir = tmp / ("fit" if not args.loo else f"fits/fold{k}")
            fit_dir.parent.mkdir(parents=True, exist_ok=True)
            folders = [p["folder"] for p in pilots]
            print(f"  fitting {len(folders)} pilot runs into {fit_dir.name}", flush=True)
            fit_runs(folders, fit_dir, args=fit_args, log=fit_dir.parent / f"{fit_dir.name}.log")
            post = load_fit(fit_dir)
        horizon = float(max(r["steps"][-1] for r in heldout))
        fs, _ = model_forecasts(post, [r["setting"] for r in heldout], horizon=horizon,
                                n_eval=n_eval, draws=args.draws, bands=bands,
                                extrapolation_sd=args.extrapolation_sd)  # fmt: skip
        return fs

    return forecast


def _command(args: argparse.Namespace, knobs: Sequence[str], n_eval: int) -> str:
    """The command line that repeats this evaluation (every default written out)."""
    parts = ["python", "-m", "calibrate", "evaluate"]
    for flag, runs in (("--pilots", args.pilots), ("--heldout", args.heldout), ("--loo", args.loo)):
        parts += [flag, *map(str, runs)] if runs else []
    if args.fit is not None:
        parts += ["--fit", str(args.fit)]
    elif args.fit_args is not None:
        parts += ["--fit-args", args.fit_args]
    else:
        parts += ["--no-model"]
    opts = {
        "--knobs": ",".join(knobs), "--band": args.band, "--draws": args.draws,
        "--prefix": args.prefix, "--n-eval": n_eval, "--extrapolation-sd": args.extrapolation_sd,
        "--seed": args.seed, "--out": args.out,
    }  # fmt: skip
    for flag, value in opts.items():
        parts += [flag, str(value)]
    return " ".join(map(shlex.quote, parts))


def evaluate_command(args: argparse.Namespace) -> int:
    """``calibrate evaluate`` (exit status; bad input raises an AgentmotifsError: exit 2)."""
    from simulate.common import atomic_dir, claim_folder, mark_output

    from ._core import evaluate_forecasts, evaluate_loo, probe_count, varying_knobs
    from ._report import FILES, evaluation_table, write_evaluation
    from ._runs import run_record

    _check(args)
    out = claim_folder(args.out, command=COMMAND, overwrite=args.overwrite)
    given = [k.strip() for k in args.knobs.split(",") if k.strip()] if args.knobs else None

    from llm_runs.runlog import is_terminal

    def read(folders: list[str]) -> list[dict[str, Any]]:
        return [run_record(f, given) | {"folder": str(f)} for f in folders]

    pilots, heldout, loo = read(args.pilots), read(args.heldout), read(args.loo)
    for r in [*pilots, *heldout, *loo]:
        if not is_terminal(r["status"]):  # the run log's one terminal-status check
            print(f"warning: {r['folder']} is not finished (status {r['status']}): its last "
                  "evaluation is scored as its final", file=sys.stderr)  # fmt: skip
    every = [*pilots, *heldout, *loo]
    knobs = varying_knobs(every, given)
    for r in every:
        r["setting"] = {k: r["setting"][k] for k in knobs}
    n_eval = probe_count(every, args.n_eval)
    kw = {"knobs": knobs, "n_eval": n_eval, "draws": args.draws, "seed": args.seed,
          "prefix": args.prefix or None}  # fmt: skip
    config = {"command": _command(args, knobs, n_eval), "pilots": args.pilots,
              "heldout": args.heldout, "loo": args.loo, "fit": args.fit,
              "fit_args": args.fit_args, "band": args.band}  # fmt: skip
    with atomic_dir(out) as tmp:
        model = _model(args, tmp, knobs, n_eval)
        if loo:
            result = evaluate_loo(loo, model, **kw)
        else:
            result = evaluate_forecasts(pilots, heldout, None if model is None else
                                        model(pilots, heldout), **kw)  # fmt: skip
        write_evaluation(tmp, result, config)
        mark_output(tmp, COMMAND, [p.name for p in tmp.iterdir()], made=True)
    print(evaluation_table(result), end="")
    print(f"evaluation written to {out}/ ({', '.join(FILES)})")
    return 0

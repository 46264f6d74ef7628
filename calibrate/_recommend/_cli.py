"""The ``recommend`` command: sweep one linked ``--param`` of a saved fit, or rank a search
space (``--space``, optionally with ``--objective``), and write ``recommendation.json`` and,
for run-folder data, ``best.yaml``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_recommend_parser", "recommend_command"]


def add_recommend_parser(sub: Any) -> None:
    """Add ``recommend`` to the subcommands ``sub``."""
    r = sub.add_parser("recommend", help="choose a hyperparameter for the next run from a fit")
    r.add_argument(
        "fit_dir",
        help="a folder written by `fit` (with a link in its hierarchy); with --space also a "
        "selection folder (fit --motif auto or a motif list)",
    )
    r.add_argument("--param", default=None, help="linked hyperparameter (default: the first)")
    r.add_argument("--grid", default=None, help="comma list of values (default: log grid)")
    r.add_argument("--steps", type=int, default=None, help="horizon in steps")
    r.add_argument(
        "--out", default=None, help="folder for recommendation.json (default: the fit folder)"
    )
    r.add_argument("--seed", type=int, default=0)
    r.add_argument(
        "--space",
        default=None,
        help="search-space file (YAML/JSON: fields, budget_steps, risk, target, n_candidates):"
        " rank every candidate instead of sweeping one --param",
    )
    r.add_argument("--top", type=int, default=5, help="with --space: candidates reported")
    r.add_argument(
        "--tie",
        type=float,
        default=None,
        help="with --space: smallest objective difference "
        "that is not a tie (default 0.005; larger where the forecast is noisier)",
    )
    r.add_argument(
        "--extrapolation-sd",
        dest="extrapolation_sd",
        type=float,
        default=None,
        help="with --space: bend of the links beyond the pilots' range "
        "(default 0.5, the fifth forecast test's choice; 0: straight)",
    )
    r.add_argument(
        "--horizon",
        type=int,
        default=None,
        help="with --space: the launch horizon in optimizer steps (replaces the space's "
        "budget_steps): the candidates are forecast there, and the pick's margin in time says "
        "until which step it stays converged with P >= 1 - risk (scanned to twice it)",
    )
    r.add_argument(
        "--regime-rule",
        dest="regime_rule",
        choices=["observed", "model"],
        default=None,
        help="with --space: where the risk comes from: observed (default: one simulated new "
        "run per draw, with seed spread and probe noise, labelled by the rule real runs are "
        "labelled with) or model (each draw's smooth curve labelled by simulate.classify)",
    )
    r.add_argument("--draws", type=int, default=200, help="with --space: posterior draws used")
    r.add_argument("--json", action="store_true", help="with --space: print one JSON object")
    r.add_argument(
        "--motif-weights",
        choices=["best", "stacking"],
        default=None,
        help="with --space and a selection folder (fit --motif auto) whose motif the space "
        "does not search: predict with the best fit (best, default) or the stacking-weighted "
        "mixture of the fits (stacking)",
    )
    r.add_argument(
        "--objective",
        default=None,
        help="with --space: what the ranking maximises, replacing the space file's "
        "objective: last (the output node's final competence), an agent's name, or e2e "
        "(the end-to-end accuracy, forecast as the product of the agents' competences)",
    )


def recommend_command(args: argparse.Namespace) -> int:
    """Run ``recommend`` (``--space``: rank a search space; else sweep one ``--param``)."""
    from simulate import output_lock

    from .._config import ConfigError

    if args.space is not None:
        return _recommend_space(args)
    if (args.json or args.top != 5 or args.draws != 200 or args.motif_weights is not None
            or args.objective is not None or args.tie is not None
            or args.extrapolation_sd is not None or args.regime_rule is not None
            or args.horizon is not None):  # fmt: skip
        raise ConfigError("--json, --top, --draws, --motif-weights, --objective, --tie, "
                          "--extrapolation-sd, --regime-rule and --horizon go with "
                          "--space")  # fmt: skip
    from .._cli_args import parse_grid, recommend_out

    grid = parse_grid(args.grid)  # before the work: "" is an error, not the default grid
    out = recommend_out(args.out or args.fit_dir)
    with output_lock(out, command="calibrate recommend"):  # a second one into it: refused
        return _recommend_grid(args, grid, out)


def _recommend_grid(args: argparse.Namespace, grid: list[float] | None, out: Path) -> int:
    """``recommend --param`` after its checks, holding its ``--out``."""
    import jax

    from simulate import mark_output, write_json

    jax.config.update("jax_enable_x64", True)
    if args.steps is not None:  # a horizon no machine holds: refused before any solve
        from .._posterior import load_fit
        from .._predict._checks import check_memory

        n = len(grid) if grid is not None else 15  # the default grid's 15 values
        check_memory(load_fit(args.fit_dir), steps=args.steps, draws=100, band="mean",
                     settings=n, advice="ask for a shorter --steps")  # fmt: skip
    from ._core import recommend_from_dir

    rec = recommend_from_dir(
        args.fit_dir, param=args.param, grid=grid, steps=args.steps, key=jax.random.key(args.seed)
    )
    from .._cli_inputs import fit_inputs

    inputs = fit_inputs(args.fit_dir)  # what each competence is (an imported key's range)
    if inputs:
        rec["inputs"] = inputs
    path = write_json(out / "recommendation.json", rec)
    mark_output(out, "calibrate recommend", [path.name])
    print(path.read_text(encoding="utf-8"), end="")
    print(f"recommendation written to {path}", file=sys.stderr)
    _write_best(rec, out, f"with {rec['param']}={rec['value']:.4g}")
    return 0


def _write_best(rec: dict, out: Path, what: str) -> None:
    """Write the recommendation's training config as ``out/best.yaml`` (when the fit's data
    came from run folders) and say how to train it."""
    if rec["train_config"] is None:
        print("no best.yaml: the fit's data came from tables, not run folders", file=sys.stderr)
        return
    from llm_runs.config import TrainConfig, save_config
    from simulate import mark_output

    best = save_config(TrainConfig.from_dict(rec["train_config"]), out / "best.yaml")
    mark_output(out, "calibrate recommend", [best.name])
    print(
        f"next run's config (run {rec['base_run']}'s {what}) written to {best}; train it "
        f"with: python -m llm_runs train --config {best} --out RUN_FOLDER",
        file=sys.stderr,
    )


def _recommend_space(args: argparse.Namespace) -> int:
    from simulate import output_lock

    from .._cli_args import recommend_out
    from .._config import ConfigError
    from .._objective import check_objective
    from .._space import SearchSpace

    if args.param is not None or args.grid is not None or args.steps is not None:
        raise ConfigError("--space replaces --param, --grid and --steps (budget_steps)")
    space = SearchSpace.load(args.space)  # before the work, as the folder check
    if args.objective is not None:  # a bad value: exit 2 with one error: line
        objective = check_objective(args.objective, "--objective")
        space = dataclasses.replace(space, objective=objective)
    if args.horizon is not None:  # the space's own check of budget_steps
        space = SearchSpace.from_dict(space.to_dict() | {"budget_steps": args.horizon})
    from .._predict._defaults import DEFAULT_EXTRAPOLATION_SD
    from .._predict._knots import check_sd
    from ._margin import TIE

    args.tie = TIE if args.tie is None else args.tie
    if not (math.isfinite(args.tie) and args.tie >= 0):
        raise ConfigError(f"--tie must be a finite number >= 0, got {args.tie!r}")
    sd = DEFAULT_EXTRAPOLATION_SD if args.extrapolation_sd is None else args.extrapolation_sd
    args.extrapolation_sd = check_sd(sd)
    out = recommend_out(args.out or args.fit_dir)
    with output_lock(out, command="calibrate recommend"):  # a second one into it: refused
        return _recommend_space_locked(args, space, out)


def _recommend_space_locked(args: argparse.Namespace, space: Any, out: Path) -> int:
    """``recommend --space`` after its checks, holding its ``--out``."""
    import jax

    from simulate import jsonable, mark_output, write_json

    jax.config.update("jax_enable_x64", True)
    from .._posterior import load_fit
    from .._predict._checks import check_memory
    from ._core import recommend_space_from_dir
    from ._explain import explain_lines
    from ._motif import MotifFits, is_selection_folder
    from ._plot import plot_regime_map, space_table

    if is_selection_folder(args.fit_dir):  # the best fit's size stands for its motifs'
        fits = MotifFits.load(args.fit_dir)
        post = fits.get(fits.best)
    else:
        post = load_fit(args.fit_dir)
    check_memory(
        post,
        steps=space.budget_steps,
        draws=args.draws,
        band="mean",
        settings=2,
        what="budget_steps",
        advice="ask for a shorter budget_steps in the space",
    )
    # (two settings at a time, one per CPU device)

    rec = recommend_space_from_dir(
        args.fit_dir,
        space,
        max_draws=args.draws,
        top=args.top,
        key=jax.random.key(args.seed),
        motif_weights=args.motif_weights or "best",
        tie=args.tie,
        extrapolation_sd=args.extrapolation_sd,
        regime_rule=args.regime_rule or "observed",
    )
    arrays = rec.pop("_arrays")
    from .._cli_inputs import fit_inputs, input_lines

    inputs = fit_inputs(args.fit_dir)  # what each competence is (an imported key's range)
    if inputs:
        rec["inputs"] = inputs
    path = write_json(out / "recommendation.json", rec)
    cand = write_json(out / "candidates.json", jsonable(
        {"settings": arrays["settings"], "objective": arrays["utility"], "risk": arrays["risk"],
         "risk_level": space.risk}), indent=None)  # fmt: skip
    mark_output(out, "calibrate recommend", [path.name, cand.name])
    if args.json:
        print(json.dumps(jsonable(rec), allow_nan=False))
    else:
        print("\n".join(space_table(rec) + explain_lines(rec["explanation"]) + input_lines(inputs)))
    print(f"recommendation written to {path}", file=sys.stderr)
    fig = plot_regime_map(rec, arrays, out / "regime_map.png")
    mark_output(out, "calibrate recommend", [fig.name])
    print(f"regime map written to {fig}", file=sys.stderr)
    _write_best(rec, out, f"with the recommended setting, steps={space.budget_steps}")
    return 0

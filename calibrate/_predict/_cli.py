"""The ``predict`` command: forecast one setting from a saved fit (what one new run will
log by default, or the mean curve with ``--band mean``; see :mod:`calibrate._new_run`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import Any

from ._defaults import DEFAULT_EXTRAPOLATION_SD

__all__ = ["add_predict_parser", "predict_command"]


def add_predict_parser(sub: Any) -> None:
    """Add ``predict`` to the subcommands ``sub``."""
    q = sub.add_parser("predict", help="forecast curves and regimes of settings from a fit")
    q.add_argument("fit_dir", help="a folder written by `fit` (with links in its hierarchy)")
    q.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="a linked training-config field and its value, e.g. rl.lr=3e-4 (repeat)",
    )
    q.add_argument("--steps", type=int, default=None, help="horizon in steps")
    q.add_argument("--draws", type=int, default=200, help="posterior draws used")
    q.add_argument(
        "--band",
        choices=["new_run", "mean"],
        default="new_run",
        help="the interval shown: what one new run will log (new_run: fresh run effects, "
        "seed spread, evaluation noise; default) or the posterior of the mean curve (mean)",
    )
    q.add_argument(
        "--n-eval",
        type=int,
        default=None,
        help="probes per evaluation of the new run (default: each agent's median n_eval in "
        "the pilots' logs)",
    )
    q.add_argument(
        "--extrapolation-sd",
        type=float,
        default=DEFAULT_EXTRAPOLATION_SD,
        metavar="S",
        help="let each link bend beyond the pilots' range by a slope change of sd S (on the "
        "link's scale, e.g. per unit of log lr): wider forecasts there, the same inside "
        "(default 0.5, the fifth forecast test's choice; 0: straight links)",
    )
    q.add_argument("--json", action="store_true", help="print one JSON object")
    q.add_argument("--plot", default=None, help="figure of the predicted curves (PNG, PDF...)")
    q.add_argument("--out", default=None, help="folder for prediction.json")
    q.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --plot or prediction.json (the one rule: a file that "
        "exists is replaced only with --overwrite, whoever wrote it)",
    )
    q.add_argument("--seed", type=int, default=0)


def predict_command(args: argparse.Namespace) -> int:
    """``calibrate predict``: forecast one setting from a saved fit (exit status)."""
    from simulate import output_lock

    from .._cli_args import parse_setting, predict_outputs

    setting = parse_setting(args.set)
    out = predict_outputs(args)  # before the work: writable, a known figure type, not a user's
    with contextlib.ExitStack() as held:  # a second predict into the same outputs: refused
        for path, what in ((out, "--out"), (args.plot, "--plot")):
            if path is not None:
                held.enter_context(output_lock(path, command="calibrate predict", what=what))
        return _predict_locked(args, setting, out)


def _predict_locked(args: argparse.Namespace, setting: dict[str, float], out: Any) -> int:
    """``predict`` after its checks, holding its outputs (see :func:`predict_command`)."""
    import jax

    from simulate import jsonable, mark_output, write_json

    from .._cli_args import check_train_fields

    jax.config.update("jax_enable_x64", True)
    from .._posterior import load_fit
    from ._checks import check_memory
    from ._core import _setting_matrix, predict

    post = load_fit(args.fit_dir)
    _setting_matrix(post, [setting])  # the fit's own checks (links, domains) first
    check_train_fields(setting)  # then the training config's: rl.staleness=2.5 is no lag
    check_memory(post, steps=args.steps, draws=args.draws, band=args.band)  # before a solve
    pred = predict(
        post,
        [setting],
        steps=args.steps,
        max_draws=args.draws,
        key=jax.random.key(args.seed),
        band=args.band,
        n_eval=args.n_eval,
        extrapolation_sd=args.extrapolation_sd,
    )
    from .._cli_inputs import fit_inputs, input_lines

    inputs = fit_inputs(args.fit_dir)  # what each competence is (an imported key's range)
    doc = pred.to_dict() | ({"inputs": inputs} if inputs else {})
    if args.json:
        print(json.dumps(jsonable(doc), allow_nan=False))
    else:
        print("\n".join([*pred.table(), *input_lines(inputs)]))
    if out is not None:
        path = write_json(out / "prediction.json", doc)
        mark_output(out, "calibrate predict", [path.name])
        print(f"prediction written to {path}", file=sys.stderr)
    if args.plot:
        from .._fit_plot import plot_prediction

        print(f"figure written to {plot_prediction(pred, args.plot)}", file=sys.stderr)
    return 0

"""Command line: ``python -m calibrate fit INPUT... --motif C1 --gate AND --out fit/``.

Subcommands:
    fit        Fit a network (``--motif``/``--gate``, ``--network spec.json`` or
               ``--motif auto`` for selection) to competence logs.
    recommend  From a saved fit, choose a hyperparameter value (``--param``) or rank a
               search space (``--space``; also over motifs, from a selection folder)
               for the next run.
    predict    From a saved fit, forecast the curves and regimes of settings not yet run.
    watch      Follow a growing run log: forecast final competences and P(collapse) at
               each new evaluation; exit 3 with an ALERT line past ``--threshold``.
    pilots     Pilot runs placed to find the regime boundary: a space-filling round, then
               rounds where a fit is least sure of the regime, until a step budget.
    evaluate   Score the model's forecasts of held-out runs (or leave one setting out)
               against practitioner baselines: summary.json, table.md, figures.
    demo       The main job (``make demo``): pilots -> fit -> recommendation ->
               confirmation run -> report, on the study loop (:class:`calibrate.Study`).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    from simulate import ArgumentParser

    from ._cli_inputs import add_input_options

    p = ArgumentParser(
        prog="python -m calibrate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fit", help="fit coupling parameters to competence logs")
    f.add_argument("inputs", nargs="+", help="CSV/Parquet tables, run folders, TensorBoard dirs")
    f.add_argument("--motif", default="C1", help="C1..C4, I1..I4, a comma list, or auto")
    f.add_argument(
        "--gate",
        default=None,
        help="AND or OR (default AND; a comma list with a selection; --motif auto without "
        "--gate tries both)",
    )
    f.add_argument("--network", help="network spec JSON/YAML (instead of --motif)")
    f.add_argument("--agents", help="agent names for X,Y,Z of a preset, comma-separated")
    f.add_argument("--out", default="fit", help="output folder")
    f.add_argument("--chains", type=int, default=None, help="NUTS chains (default 4)")
    f.add_argument("--samples", type=int, default=None, help="draws per chain (default 1000)")
    f.add_argument("--warmup", type=int, default=None, help="NUTS warm-up (default 1000)")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--method", choices=["nuts", "svi", "laplace", "map"], default=None)
    f.add_argument("--likelihood", choices=["binomial", "betabinomial"], default=None)
    f.add_argument(
        "--solver",
        choices=["auto", "quad", "rk4", "tsit5"],
        default=None,
        help="ODE solver in the likelihood (default auto: quad on a feed-forward network, "
        "the fastest gradient; rk4 on one with a cycle, smooth; tsit5: adaptive)",
    )
    f.add_argument(
        "--dt", type=float, default=None, help="largest RK4 step / quad cell, training steps"
    )
    f.add_argument(
        "--dynamics",
        choices=["ode", "map"],
        default=None,
        help="ode (default): the competence ODE; map: finite learning steps A <- A + eta F(A) "
        "per training step, eta linked to rl.lr (docs/model.md)",
    )
    f.add_argument(
        "--lag",
        choices=["none", "stale", "erlang"],
        default=None,
        help="policy lag of --dynamics map, linked to rl.staleness: stale (the update of step "
        "t from the state of step t - lag) or erlang (simulate's chain); default none",
    )
    f.add_argument(
        "--pipeline",
        default=None,
        metavar="X->Y,Y->Z",
        help="pipeline gates: each target's learning times an activating Hill occupancy of "
        "its source (Kp[X->Y], m[X->Y] fitted; in every candidate of --motif auto)",
    )
    f.add_argument(
        "--edge-weights",
        action="store_const",
        const=True,
        default=None,
        help="give each run its known edge weights (llm_runs' coupling 1 - w + w G, w read "
        "from the run's config: network.edges / default_weight); needs run folders",
    )
    f.add_argument(
        "--pulses",
        action="store_const",
        const=True,
        default=None,
        help="give each run its known spurious-reward pulses (llm_runs' task.spurious, mode "
        "flip: the roles hit are driven back toward their start level at a fitted share of "
        "their rate while a pulse lasts, after a fitted lag); needs run folders",
    )
    f.add_argument(
        "--regulators",
        choices=["model", "logged", "logged-gates"],
        default=None,
        help="what the edges' Hill terms read: model (default), the fitted upstream "
        "competence; logged, each run's logged training competence of the upstream agent "
        "(llm_runs' ema, what its edges acted on), with K and n from the run's config; "
        "logged-gates, as logged, and the --pipeline gates read it too; needs run folders",
    )
    f.add_argument(
        "--readout",
        choices=["identity", "greedy"],
        default=None,
        help="how a level is observed: identity (default), or greedy, the kinetics describe "
        "a latent skill that a greedy probe reads through a logistic of fitted midpoint and "
        "width per agent (flat far from the midpoint, a jump across it)",
    )
    f.add_argument(
        "--dse-blocks",
        action="store_true",
        help="with --motif auto or a motif list: the se of an elpd difference from its sums "
        "per run and agent (one run's evaluations are not independent), not per evaluation",
    )
    f.add_argument(
        "--dse-replicates",
        action="store_true",
        help="as --dse-blocks, the sums stratified by the run's condition (its config apart "
        "from its seed) and agent: the se from the spread between seeds of one condition; "
        "every run needs a replicate (another seed of its config)",
    )
    f.add_argument("--hierarchy", help="JSON: {random_effects: [...], links: [...]}")
    f.add_argument("--config", help="JSON FitConfig (command-line options override it)")
    f.add_argument(
        "--tb-tag",
        action="append",
        default=[],
        metavar="AGENT=TAG",
        help="TensorBoard scalar tag of an agent (repeat)",
    )
    f.add_argument("--tb-n-eval", type=int, default=100, help="n_eval of TensorBoard scalars")
    add_input_options(f)  # --agent, --agent-regex, --n-eval, --covariate, --dry-run
    f.add_argument(
        "--strict",
        action="store_true",
        help="error on NaN rows; non-zero exit on failed diagnostics",
    )
    f.add_argument("--no-progress", action="store_true", help="no progress bar")
    f.add_argument(
        "--figures",
        choices=["best", "all", "none"],
        default="best",
        help="with --motif auto or a motif list: which saved fits get predictive.png and "
        "keep the pointwise log-likelihood in posterior.nc (best: the fits the data "
        "cannot tell apart, default; all: every fit; none: no figures, the set keeps its "
        "log-likelihood). The other fits are saved without both; their elpd is in "
        "selection.json",
    )
    from ._recommend._cli import add_recommend_parser

    add_recommend_parser(sub)
    from ._predict._cli import add_predict_parser

    add_predict_parser(sub)
    from ._watch._cli import add_watch_parser

    add_watch_parser(sub)
    from ._evaluate._cli import add_evaluate_parser

    add_evaluate_parser(sub)
    from ._demo._cli import add_demo_parser

    add_demo_parser(sub)
    from ._pilots._cli import add_pilots_parser

    add_pilots_parser(sub)
    from ._warning._cli import add_signal_rule_parser

    add_signal_rule_parser(sub)
    return p


def _config(args: argparse.Namespace):
    from simulate.common import read_json_object

    from ._config import FitConfig

    base = FitConfig.load(args.config).to_dict() if args.config else FitConfig().to_dict()
    # only what the command line gives overrides the config file (FitConfig's defaults else)
    given = (("chains", args.chains), ("samples", args.samples), ("warmup", args.warmup),
             ("method", args.method), ("likelihood", args.likelihood), ("solver", args.solver),
             ("dt", args.dt), ("dynamics", args.dynamics))  # fmt: skip
    given += (("lag", args.lag), ("pipeline", args.pipeline), ("edge_weights", args.edge_weights),
              ("pulses", args.pulses), ("regulators", args.regulators),
              ("readout", args.readout))  # fmt: skip
    base.update({k: v for k, v in given if v is not None})
    if args.hierarchy:
        hier = read_json_object(args.hierarchy, what="--hierarchy file")
        h = FitConfig.from_dict({"hierarchy": hier})
        base["hierarchy"] = h.to_dict()["hierarchy"]
    return FitConfig.from_dict(base)


def _proposed_links(cfg, args: argparse.Namespace, data):
    """``fit`` without a hierarchy (no ``--hierarchy``, none in ``--config``): the default
    links of the knob schema for the knobs that vary in the inputs
    (:func:`calibrate.default_links`), one printed line each; a hierarchy file overrides
    them (``{}``: no links)."""
    import dataclasses

    from simulate.common import read_json_object

    from ._knobs import default_links

    if args.hierarchy or (args.config and "hierarchy" in read_json_object(args.config)):
        return cfg
    links = default_links(data.hyper, dynamics=cfg.dynamics, lag=cfg.lag, nodes=data.agents)
    for lk in links:
        on = f"{lk.param}[{','.join(lk.targets)}]" if lk.targets else lk.param
        print(f"link (default for a knob that varies): {on} ~ {lk.covariate} ({lk.transform})")
    if links:
        print("  (a --hierarchy file overrides the default links; {} fits without links)")
    return dataclasses.replace(
        cfg, hierarchy=dataclasses.replace(cfg.hierarchy, links=tuple(links))
    )


def _host_devices(chains: int) -> None:
    """One CPU device per chain, so NUTS runs its chains in parallel (before JAX starts;
    a no-op when the backend is already up or ``XLA_FLAGS`` sets a device count)."""
    try:  # jax has no public "has the backend started" query
        from jax._src.xla_bridge import backends_are_initialized
    except ImportError:
        return
    if (
        chains > 1
        and not backends_are_initialized()
        and "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", "")
    ):
        import numpyro

        numpyro.set_host_device_count(min(chains, 16))


def _fit(args: argparse.Namespace) -> int:
    from ._cli_inputs import check_gates, dry_run
    from ._config import ConfigError
    from ._posterior import check_output_folder

    if args.dry_run:
        return dry_run(args)
    check_gates(args)
    selecting = args.network is None and (args.motif == "auto" or "," in args.motif)
    for flag in ("dse_blocks", "dse_replicates"):
        if getattr(args, flag) and not selecting:
            name = "--" + flag.replace("_", "-")
            raise ConfigError(f"{name} needs a selection: --motif auto or a motif list")
    check_output_folder(args.out)  # before the work, not after it
    from simulate import output_lock

    with output_lock(args.out, command="calibrate fit"):  # a second fit into it is refused
        return _fit_locked(args)


def _fit_locked(args: argparse.Namespace) -> int:
    """``fit`` after its checks, holding its ``--out`` (see :func:`_fit`)."""
    from ._cli_inputs import check_inputs, load, write_inputs

    _host_devices(_config(args).chains)  # the config file's chains unless --chains
    import jax

    jax.config.update("jax_enable_x64", True)
    from ._fit import fit
    from ._select._core import candidates, select

    data = load(args, describe=True)  # and print the keys' meanings, sizes, runs' status
    cfg = _proposed_links(_config(args), args, data)
    check_inputs(data, cfg)  # horizon, weights, pulses, regulators: before any solve
    nodes = tuple(a.strip() for a in args.agents.split(",")) if args.agents else None
    out = Path(args.out)
    key = jax.random.key(args.seed)
    print(f"{len(data.runs)} run(s), agents {data.agents}, {len(data.table)} evaluations")
    motifs = args.motif.split(",")
    if args.network is None and (args.motif == "auto" or len(motifs) > 1):
        gates = args.gates
        sel = select(
            data,
            candidates(args.motif if args.motif == "auto" else motifs, gates),
            cfg,
            key=key,
            nodes=nodes,
            log=print,
            progress=not args.no_progress,
            blocks=args.dse_blocks,
            replicates=args.dse_replicates,
        )
        for w in sel.warnings:
            print(f"WARNING: {w}", file=sys.stderr)
        tm = sel.timing
        kf = len(sel.kfold.get("candidates", []))
        print(
            f"selection: {len(sel.posteriors)} fits"
            + (f" (then K-fold CV of {kf}: {tm['kfold_s']:.1f} s)" if kf else "")
            + f" in {tm['total_s']:.1f} s wall, {tm['cpu_s']:.1f} s CPU, "
            f"{tm['workers']} worker(s)"
        )
        sel.save(out, fits=True, figures=args.figures)
        write_inputs(out, data)  # what the keys mean and the runs' status, with the fits
        n_full = len(sel.complete_fits(args.figures))
        print(
            f"saving: {len(sel.posteriors)} fits ({n_full} complete"
            + (", with figures" if args.figures != "none" else "")
            + f") in {tm['save_s']:.1f} s wall, {tm['save_cpu_s']:.1f} s CPU"
        )
        print("\n".join(sel.report()))
        print(f"selection written to {out / 'selection.json'}")
        diags = sel.fit_diagnostics.values()
        return 1 if args.strict and not all(d["ok"] for d in diags) else 0
    network = args.network or f"{args.motif}-{args.gate}"
    post = fit(data, network, cfg, key=key, nodes=nodes, progress=not args.no_progress, log=print)
    summ = post.summary()
    diag = post.save(out, summary=summ)
    write_inputs(out, data)
    print(f"{'parameter':<16}{'mean':>10}{'q05':>10}{'q95':>10}{'r_hat':>8}{'ess_bulk':>10}")
    for name, s in summ.items():
        print(
            f"{name:<16}{s['mean']:>10.4g}{s['q05']:>10.4g}{s['q95']:>10.4g}"
            f"{s['r_hat']:>8.3f}{s['ess_bulk']:>10.0f}"
        )
    print(
        f"R-hat max {diag['r_hat_max']:.3f}, bulk ESS min {diag['ess_bulk_min']:.0f}, "
        f"divergences {diag['divergences']}, {diag['timing_s'].get('total_s', 0):.1f} s"
    )
    for w in diag["warnings"]:
        print(f"WARNING: {w}", file=sys.stderr)
    print(f"posterior written to {out}/ (posterior.nc, summary.json, predictive.png)")
    return 1 if args.strict and diag["warnings"] and cfg.method == "nuts" else 0


def _show_warning(message: object, category: object, *args: object, **kwargs: object) -> None:
    print(f"warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 with one ``error:`` line for bad input)."""
    import jax

    jax.config.update("jax_enable_x64", True)  # float64 whatever JAX_ENABLE_X64 says
    from simulate import AgentmotifsError

    args = _parser().parse_args(argv)
    if args.cmd != "demo":  # the demo's stages are these commands, each caching its own
        from simulate import enable_compilation_cache

        enable_compilation_cache()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            warnings.showwarning = _show_warning  # one line, not the source line too
            from ._demo._cli import demo_command
            from ._evaluate._cli import evaluate_command
            from ._pilots._cli import pilots_command
            from ._predict._cli import predict_command
            from ._recommend._cli import recommend_command
            from ._watch._cli import watch

            cmds = {"fit": _fit, "recommend": recommend_command, "predict": predict_command,
                    "watch": watch, "demo": demo_command,
                    "pilots": pilots_command}  # fmt: skip
            cmds["evaluate"] = evaluate_command
            from ._warning._cli import signal_rule_command

            cmds["signal-rule"] = signal_rule_command
            run = cmds[args.cmd]
            return run(args)
    except AgentmotifsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""Command line: ``python -m simulate {motifs,trajectory,phase,population,export-sbml,demo}``.

Every command computes in float64 (JAX's 64-bit mode is turned on before any array exists)
unless ``--float32`` is given where offered; numbers are checked before any work, output
paths too; bad input exits 2 with one ``error:`` line.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

import numpy as np

from .._argparse import ArgumentParser
from .._errors import AgentmotifsError
from .._io import atomic_dir, jsonable
from .._outputs import PLOT_SUFFIXES, claim_file, mark_output
from .._sizes import check_memory
from ..spec import FFL_SIGNS, GATES, SpecError, resolve_spec
from ._phase import parse_param

__all__ = ["build_parser", "check_args", "main", "simulate_summary"]


def _network_spec(args: argparse.Namespace):
    source = args.network or args.motif
    if source is None:
        raise SpecError("give --motif NAME (C1…I4) or --network FILE")
    what = "--network" if args.network else "--motif"
    return resolve_spec(
        source, args.gate, feedback=args.feedback, feedback_K=args.feedback_K, what=what
    )


def simulate_summary(
    model, sol, *, name: str = "network", include_trajectory: bool = True
) -> dict[str, Any]:
    """JSON-ready summary of one solution: regime, per-node metrics, stability."""
    from .._analysis import REGIME_NAMES, Regime, classify, metrics, solution_stability

    regime, node_regimes = classify(sol, bounded=model.kinetics.bounded)
    mets = metrics(sol)
    out: dict[str, Any] = {
        "network": name,
        "kinetics": model.kinetics.name,
        "method": sol.method,
        "dtype": str(np.asarray(sol.states).dtype),
        "status": sol.message(),
        "regime": REGIME_NAMES[Regime(int(regime))],
        "node_regimes": {
            n: REGIME_NAMES[Regime(int(r))] for n, r in zip(sol.names, node_regimes, strict=True)
        },
        "metrics": {
            n: {k: np.asarray(v)[i].item() for k, v in mets.items()}
            for i, n in enumerate(sol.names)
        },
    }
    if bool(sol.ok):
        st = solution_stability(model, sol)
        out["stability"] = {
            "steady_state": dict(
                zip(sol.names, np.asarray(st.steady)[: len(sol.names)].tolist(), strict=True)
            ),
            "found": bool(st.found),
            "max_real_eigenvalue": float(st.max_real),
            "leading_imag": float(st.leading_imag),
            "spectral_radius_map": float(st.spectral_radius),
            "eigenvalues": [[float(e.real), float(e.imag)] for e in np.asarray(st.eigenvalues)],
        }
    if include_trajectory:
        out["t"] = np.asarray(sol.t)
        out["states"] = {n: np.asarray(sol.states[:, i]) for i, n in enumerate(sol.names)}
    return jsonable(out)


def _cmd_motifs(args: argparse.Namespace) -> int:
    rows = [
        {
            "motif": m,
            "gate": g,
            "X->Y": s[0],
            "X->Z": s[1],
            "Y->Z": s[2],
            "type": "coherent" if s[0] * s[2] == s[1] else "incoherent",
        }
        for m, s in FFL_SIGNS.items()
        for g in GATES
    ]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    sym = {1: "+", -1: "-"}
    print(f"{'preset':<8} {'X->Y':>5} {'X->Z':>5} {'Y->Z':>5}  type")
    for r in rows:
        print(
            f"{r['motif'] + '-' + r['gate']:<8} {sym[r['X->Y']]:>5} {sym[r['X->Z']]:>5} "
            f"{sym[r['Y->Z']]:>5}  {r['type']}"
        )
    return 0


def _cmd_trajectory(args: argparse.Namespace) -> int:
    import jax

    from .._options import SolveOptions
    from .._params import make_model
    from .._solve import solve
    from .._trajectory_plot import plot_trajectory

    if args.plot:
        claim_file(args.plot, overwrite=args.overwrite, what="--plot", suffixes=PLOT_SUFFIXES)
    spec = _network_spec(args)
    check_memory(  # before any work: ~80 bytes per saved point and node (measured ~73)
        f"--points {args.points}",
        80.0 * args.points * len(spec.nodes),
        detail=f"{float(args.points):.3g} points x {len(spec.nodes)} agents x 80 bytes",
        advice="ask for fewer --points",
    )
    params = dict(parse_param(p) for p in args.param)
    model = make_model(
        spec,
        args.kinetics,
        params,
        delay_stages=args.delay_stages,
        tau=args.tau,
        eta=args.eta,
        sigma=args.sigma,
    )
    sol = solve(
        model,
        args.schedule,
        t1=args.t1,
        t0=args.t0,
        options=SolveOptions(
            n_points=args.points,
            solver=args.solver,
            dtype="float32" if getattr(args, "float32", False) else "float64",
        ),
        method=args.method,
        key=jax.random.key(args.seed),
    )
    if sol.message() != "ok":  # no all-null JSON: say why, exit 2
        raise AgentmotifsError(
            f"the solve from t0={args.t0:g} to t1={args.t1:g} failed ({sol.message()}); "
            "shorten the span (--t1) or try --solver kvaerno5 for a stiff system"
        )
    summary = simulate_summary(model, sol, name=spec.name)
    if args.plot:
        title = f"{spec.name} · {args.kinetics} · {args.method} · {summary['regime']}"
        plot_trajectory(sol, args.plot, title=title)
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"{spec.name}: {summary['regime']} ({summary['status']})")
        for n, m in summary["metrics"].items():
            shown = ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                for k, v in m.items()
                if v is not None
            )
            print(f"  {n}: {summary['node_regimes'][n]}; {shown}")
        if args.plot:
            print(f"figure: {args.plot}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .._demo import run_demo
    from .._phase import check_out_folder

    out = check_out_folder(args.out, overwrite=args.overwrite, command="simulate demo")
    with atomic_dir(out) as tmp:
        run_demo(tmp, shown_as=out)
        mark_output(tmp, "simulate demo", [p.name for p in tmp.iterdir()], made=True)
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from .._params import make_model
    from .._sbml import write_sbml

    claim_file(args.out, overwrite=args.overwrite, what="--out")  # a user's file is kept
    spec = _network_spec(args)
    params = dict(parse_param(p) for p in args.param)
    model = make_model(spec, args.kinetics, params, delay_stages=args.delay_stages, tau=args.tau)
    path = write_sbml(model, args.out, args.schedule)
    print(f"{spec.name}: SBML L3V2 written to {path}")
    return 0


#: (argument, least value, whether the least value itself is allowed) for every command.
_LOWER_BOUNDS = (
    ("points", 2, True),
    ("steps", 1, True),
    ("replicates", 1, True),
    ("chunk", 1, True),
    ("delay_stages", 0, True),
    ("tau", 0.0, False),
    ("eta", 0.0, False),
    ("sigma", 0.0, True),
    ("feedback_K", 0.0, False),
)


def check_args(args: argparse.Namespace) -> None:
    """Reject numbers no computation can honour, before any work (one-line error)."""
    t0 = float(getattr(args, "t0", 0.0))
    t1 = getattr(args, "t1", None)
    for name, v in (("--t0", t0), ("--t1", t1)):
        if v is not None and not math.isfinite(v):
            raise AgentmotifsError(f"{name} must be a finite number, got {v}")
    if t1 is not None and not t1 > t0:
        raise AgentmotifsError(f"--t1 must be greater than --t0 ({t0:g}), got {t1:g}")
    for name, least, inclusive in _LOWER_BOUNDS:
        v = getattr(args, name, None)
        if v is None:
            continue
        flag = "--" + name.replace("_", "-")
        if not math.isfinite(v):
            raise AgentmotifsError(f"{flag} must be a finite number, got {v}")
        if v < least or (not inclusive and v == least):
            rel = ">=" if inclusive else ">"
            raise AgentmotifsError(f"{flag} must be {rel} {least:g}, got {v:g}")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of ``python -m simulate``."""
    p = ArgumentParser(prog="python -m simulate", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    m = sub.add_parser("motifs", help="list the 16 motif/gate presets and their signs")
    m.add_argument("--json", action="store_true", help="print JSON")
    m.set_defaults(func=_cmd_motifs)

    t = sub.add_parser("trajectory", help="simulate one network and report its regime")
    t.add_argument("--motif", help="preset C1…C4, I1…I4, or a network spec file")
    t.add_argument("--network", help="network spec file (JSON/YAML)")
    t.add_argument("--gate", default="AND", choices=GATES, type=str.upper)
    t.add_argument("--kinetics", default="alon", choices=("alon", "competence"))
    t.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="e.g. beta=5, rho[X]=0.3, K[X->Y]=0.5 (repeatable)",
    )
    t.add_argument("--schedule", default="on@0", help="input schedule, e.g. on@0,off@10")
    t.add_argument("--t0", type=float, default=0.0)
    t.add_argument("--t1", type=float, default=20.0, help="end time")
    t.add_argument("--points", type=int, default=1001, help="saved time points")
    t.add_argument("--method", default="ode", choices=("ode", "sde", "map"))
    t.add_argument("--solver", default="tsit5", help="tsit5, dopri5, dopri8, kvaerno5 (stiff)")
    t.add_argument("--delay-stages", type=int, default=0, help="Erlang stages of policy lag")
    t.add_argument("--tau", type=float, default=1.0, help="mean policy lag")
    t.add_argument("--eta", type=float, default=0.1, help="learning-step size (map)")
    t.add_argument("--sigma", type=float, default=0.0, help="gradient noise (sde)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument(
        "--feedback",
        type=int,
        choices=(-1, 1),
        default=None,
        help="add end-to-end reward edges from the last node, with this sign",
    )
    t.add_argument("--feedback-K", type=float, default=0.5, help="threshold of feedback edges")
    t.add_argument("--float32", action="store_true", help="single precision (default float64)")
    t.add_argument("--json", action="store_true", help="print one JSON object")
    t.add_argument("--plot", metavar="FILE.png", help="draw the trajectory")
    t.add_argument("--overwrite", action="store_true", help="replace an existing --plot file")
    t.set_defaults(func=_cmd_trajectory)

    d = sub.add_parser("demo", help="step responses of all 16 presets")
    d.add_argument("--out", default="demo_out", help="output folder")
    d.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    d.set_defaults(func=_cmd_demo)

    from ._phase import add_phase_parser

    add_phase_parser(sub)
    from ._population import add_population_parser

    add_population_parser(sub)
    _add_export_parser(sub)
    return p


def _add_export_parser(sub) -> None:
    e = sub.add_parser("export-sbml", help="write a network + kinetics as SBML L3 (ODE)")
    e.add_argument("--motif", help="preset C1…C4, I1…I4, or a network spec file")
    e.add_argument("--network", help="network spec file (JSON/YAML)")
    e.add_argument("--gate", default="AND", choices=GATES, type=str.upper)
    e.add_argument("--kinetics", default="alon", choices=("alon", "competence"))
    e.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    e.add_argument("--schedule", default="on@0", help="input schedule, e.g. on@0,off@10")
    e.add_argument("--delay-stages", type=int, default=0)
    e.add_argument("--tau", type=float, default=1.0)
    e.add_argument("--feedback", type=int, choices=(-1, 1), default=None)
    e.add_argument("--feedback-K", type=float, default=0.5)
    e.add_argument("--out", required=True, help="output file (.xml)")
    e.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    e.set_defaults(func=_cmd_export)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (2 for bad input).

    JAX's 64-bit mode is on while the command runs (off only with ``--float32``); the
    previous setting is restored afterwards, so calling ``main`` from Python leaves it as
    it was.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    previous = None
    try:
        check_args(args)
        if args.command != "motifs":
            from .._jaxsetup import use_float64

            previous = use_float64(not getattr(args, "float32", False))
        return int(args.func(args))
    except AgentmotifsError as err:
        print("error: " + " ".join(str(err).split()), file=sys.stderr)
        return 2
    finally:
        if previous is not None:
            from .._jaxsetup import use_float64

            use_float64(previous)

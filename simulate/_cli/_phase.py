"""``python -m simulate phase``: a phase diagram into an output folder."""

from __future__ import annotations

import argparse
import json

from .._errors import ConfigError
from .._options import SolveOptions
from .._values import parse_number, parse_value
from ..spec import SpecError

__all__ = ["add_phase_parser", "parse_axis", "parse_param"]


def parse_param(text: str) -> tuple[str, float]:
    """``NAME=VALUE`` of ``--param`` (e.g. ``beta=5``, ``K[X->Y]=0.5``) -> ``(name, value)``,
    the value read by the toolkit's one number rule."""
    if "=" not in text:
        raise SpecError(f"--param {text!r}: write NAME=VALUE, e.g. beta=5 or K[X->Y]=0.5")
    name, value = text.split("=", 1)
    try:  # the toolkit's one value rule: 2e-3, .5, 0x10 numbers; 1_0, yes not
        return name.strip(), parse_number(value, what=f"--param {name.strip()}")
    except ConfigError as err:
        raise SpecError(str(err)) from None


def parse_axis(text: str):
    """``NAME=LO:HI:NUM[:SCALE]`` → :class:`~simulate.Axis`, e.g. ``tau=0.5:20:64:log``
    (``SCALE``: one of :data:`simulate.common.SCALES`, default ``linear``)."""
    from .._sweep import grid

    if "=" not in text:
        raise SpecError(f"axis {text!r}: write NAME=LO:HI:NUM[:log], e.g. beta=0.5:10:64:log")
    name, spec = text.rsplit("=", 1)
    parts = spec.split(":")
    if len(parts) not in (3, 4):
        raise SpecError(f"axis {text!r}: write NAME=LO:HI:NUM[:log|log1p|linear]")
    try:  # the toolkit's one value rule (2e-3, .5 numbers; 1_0 not)
        lo, hi = (parse_number(v, what=f"axis {text!r}") for v in parts[:2])
        num = parse_value(parts[2].strip())
        if isinstance(num, float) and num.is_integer():
            num = int(num)  # an integral number as written: 1e2 is 100
        if isinstance(num, bool) or not isinstance(num, int):
            raise ValueError
    except (ConfigError, ValueError):
        raise SpecError(f"axis {text!r}: LO and HI must be numbers, NUM an integer") from None
    if num >= 1:  # before the grid's own array: 1e9 values are 8 GB already
        _check_cells(f"axis {text!r}", num)
    scale = parts[3].lower() if len(parts) == 4 else "linear"
    return grid(name.strip(), lo, hi, num, scale)


#: Memory one phase cell asks for (its trajectory in a chunk, features, aggregates;
#: measured ~9.6 kB per cell for C1 at 200 points).
CELL_BYTES = 10_000
#: Memory of one saved point of one cell's trajectory while its chunk is solved (the
#: states of up to ~10 nodes, the solver's stages and the features' copies).
POINT_BYTES = 800


def _check_cells(what: str, cells: int) -> None:
    from .._sizes import check_memory

    check_memory(
        what,
        float(cells) * CELL_BYTES,
        detail=f"{float(cells):.3g} cells x {CELL_BYTES // 1000} kB",
        advice="ask for fewer cells (a smaller NUM of --x/--y, fewer panels or --replicates)",
    )


def _cmd_phase(args: argparse.Namespace) -> int:
    from .._jaxsetup import enable_compilation_cache
    from .._phase import check_out_folder, phase_diagram, resolve_panels

    check_out_folder(args.out, overwrite=args.overwrite)  # before any work
    x = parse_axis(args.x)
    y = parse_axis(args.y) if args.y else None
    if y is not None and y.name == x.name:
        raise SpecError(
            f"--x and --y both sweep {x.name}: a phase diagram needs two different parameters"
        )
    motifs = [m.strip() for m in args.motif.split(",")] if args.motif else ["C1"]
    if args.network:
        motifs = [args.network]
    noisy = args.method == "sde" or (args.method is None and args.sigma > 0)
    cells = len(resolve_panels(motifs, args.gate)) * len(x.values)
    cells *= (len(y.values) if y is not None else 1) * (args.replicates if noisy else 1)
    _check_cells(f"{cells} cells (--x {args.x}" + (f", --y {args.y})" if y else ")"), cells)
    from .._sizes import check_memory

    per = max(args.points, args.steps)  # saved points (ode/sde) or map steps per cell
    check_memory(
        f"--points {args.points} / --steps {args.steps} with --chunk {args.chunk}",
        float(min(args.chunk, cells)) * per * POINT_BYTES,
        detail=f"{min(args.chunk, cells)} cells at once x {float(per):.3g} points",
        advice="ask for fewer --points or --steps, or a smaller --chunk",
    )
    if not args.no_cache:
        enable_compilation_cache()
    res = phase_diagram(
        motifs,
        args.gate,
        x,
        y,
        kinetics=args.kinetics,
        params=dict(parse_param(p) for p in args.param),
        feedback=args.feedback,
        feedback_K=args.feedback_K,
        delay_stages=args.delay_stages,
        tau=args.tau,
        eta=args.eta,
        sigma=args.sigma,
        method=args.method,
        schedule=args.schedule,
        t1=args.t1,
        steps=args.steps,
        replicates=args.replicates,
        seed=args.seed,
        options=SolveOptions(n_points=args.points, dtype="float32" if args.float32 else "float64"),
        chunk_size=args.chunk,
        stability=not args.no_stability,
        progress=not args.no_progress,
    )
    out = res.save(args.out, figure=not args.no_figure, overwrite=args.overwrite)
    s = res.summary()
    if args.json:
        print(
            json.dumps(
                {
                    "out": str(out),
                    "n_cells": s["n_cells"],
                    "wall_s": s["wall_s"],
                    "regime_counts": s["regime_counts"],
                    "boundaries": s["boundaries"],
                }
            )
        )
        return 0
    print(
        f"{s['n_cells']} cells ({len(res.panels)} panels, method {s['method']}) in "
        f"{s['wall_s']['total']:.2f} s; failed cells: {s['failed_cells']}"
    )
    for label, counts in s["regime_counts"].items():
        shown = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
        line = f"  {label:<10} {shown}"
        for b in s["boundaries"].get(label, []):
            line += f" | {b['kind']} at {b['param']}={b['value']:.6g}"
        print(line)
    print(f"output: {out}/ (table.parquet, table.csv, arrays.npz, summary.json, phase.png)")
    return 0


def add_phase_parser(sub) -> None:
    """Register ``phase`` on the subparsers of ``python -m simulate``."""
    p = sub.add_parser("phase", help="regime map over one or two parameters (phase diagram)")
    p.add_argument(
        "--motif", default="C1", help="preset(s) C1…I4 (comma-separated), 'all', or a spec file"
    )
    p.add_argument("--network", help="network spec file (JSON/YAML)")
    p.add_argument("--gate", default="AND", help="AND, OR or both")
    p.add_argument(
        "--x",
        required=True,
        metavar="NAME=LO:HI:NUM[:log]",
        help="horizontal axis, e.g. beta=0.5:10:64:log, tau=0.5:20:64, K[X->Y]=…",
    )
    p.add_argument("--y", metavar="NAME=LO:HI:NUM[:log]", help="vertical axis (optional)")
    p.add_argument("--kinetics", default="alon", choices=("alon", "competence"))
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="fixed parameter, e.g. gamma=2 (repeatable)",
    )
    p.add_argument(
        "--feedback",
        type=int,
        choices=(-1, 1),
        default=None,
        help="add end-to-end reward edges from the last node with this sign",
    )
    p.add_argument(
        "--feedback-K",
        type=float,
        default=0.5,
        help="threshold of the feedback edges (sweep as K[Z->X])",
    )
    p.add_argument("--delay-stages", type=int, default=0, help="Erlang stages of policy lag")
    p.add_argument("--tau", type=float, default=1.0, help="mean policy lag (time)")
    p.add_argument("--eta", type=float, default=0.1, help="learning-step size (map)")
    p.add_argument("--sigma", type=float, default=0.0, help="gradient noise (sde)")
    p.add_argument(
        "--method",
        choices=("ode", "sde", "map"),
        default=None,
        help="default: sde if noisy, map if eta is swept, else ode",
    )
    p.add_argument("--replicates", type=int, default=8, help="noise replicates per cell (sde)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--schedule", default="on@0", help="input schedule, e.g. on@0,off@10")
    p.add_argument("--t1", type=float, default=20.0, help="end time")
    p.add_argument("--points", type=int, default=200, help="saved points per trajectory")
    p.add_argument("--steps", type=int, default=400, help="map steps")
    p.add_argument("--chunk", type=int, default=1024, help="cells per shared-step solve")
    p.add_argument("--float32", action="store_true", help="single precision (faster)")
    p.add_argument("--no-stability", action="store_true", help="skip linearisation/boundaries")
    p.add_argument("--no-figure", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-cache", action="store_true", help="no persistent compilation cache")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    p.add_argument("--out", default="phase_out", help="output folder")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty --out")
    p.set_defaults(func=_cmd_phase)

"""``python -m simulate population``: Wright–Fisher / Moran drift and selection vs closed forms."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any, Literal

import numpy as np

from .._errors import ConfigError
from .._io import jsonable

__all__ = ["add_population_parser", "check_population_args", "population_summary"]

#: Trajectories drawn per panel of the figure.
_SHOWN = 40


def check_population_args(args: argparse.Namespace) -> None:
    """Reject out-of-range numbers before any work (one-line :class:`ConfigError`)."""
    if len(set(args.N)) != len(args.N):
        raise ConfigError(f"--N: each population size once, got {args.N}")
    for n in args.N:
        if n < 2:
            raise ConfigError(f"--N: population sizes must be integers >= 2, got {n}")
    if not (math.isfinite(args.p0) and 0.0 <= args.p0 <= 1.0):
        raise ConfigError(f"--p0 must be in [0, 1], got {args.p0:g}")
    if not (math.isfinite(args.s) and args.s > -1.0):
        raise ConfigError(f"--s must be a finite number > -1 (fitness 1 + s > 0), got {args.s:g}")
    if args.generations < 1:
        raise ConfigError(f"--generations must be >= 1, got {args.generations}")
    if args.replicates < 1:
        raise ConfigError(f"--replicates must be >= 1, got {args.replicates}")
    _check_sizes(args)


def _check_sizes(args: argparse.Namespace) -> None:
    """Refuse sizes whose arrays would not fit, before any work: the paths and their keys
    (``replicates x (generations + 1)`` float64 and PRNG keys, ~24 bytes each), and for
    Moran one generation's ``N`` uniforms per replicate."""
    from .._sizes import check_memory

    R, G = args.replicates, args.generations
    paths = 24.0 * R * (G + 1)
    check_memory(
        f"--replicates {R} with --generations {G}",
        paths,
        detail=f"{float(R):.3g} replicates x {float(G + 1):.3g} generations x 24 bytes",
        advice="ask for fewer --replicates or --generations",
    )
    if args.model == "moran":
        for n in args.N:
            check_memory(
                f"--N {n} (moran, --replicates {R})",
                paths + 8.0 * R * n,
                detail=f"{float(R):.3g} replicates x {float(n):.3g} uniforms per generation",
                advice="ask for a smaller --N or fewer --replicates",
            )


def population_summary(
    paths: np.ndarray, *, N: int, p0: float, s: float, model: Literal["wf", "moran"]
) -> dict[str, Any]:
    """JSON-ready statistics of one population size.

    Args:
        paths: Frequencies, shape ``(replicates, generations + 1)``.
        N: Population size.
        p0: Requested initial frequency (the start is ``round(N p0) / N``).
        s: Selection coefficient.
        model: ``"wf"`` or ``"moran"``.

    Returns:
        ``N``, ``p_start``, ``mean`` and ``variance`` (lists over generations, length
        ``generations + 1``; variance across replicates with ``ddof=1``, null for one
        replicate), ``fixed``/``lost`` (fractions of replicates at 1 / 0 at the end),
        ``kimura_fixation``, and ``neutral_variance`` (closed form per generation; null
        when ``s != 0``).
    """
    from .._population import fixation_probability, neutral_variance, start_frequency

    paths = np.asarray(paths)
    R, T = paths.shape
    p_start = start_frequency(N, p0)
    var = paths.var(axis=0, ddof=1) if R > 1 else np.full(T, np.nan)
    neutral = neutral_variance(N, p_start, np.arange(T), model=model) if s == 0 else None
    return jsonable(
        {
            "N": N,
            "p_start": p_start,
            "dtype": str(paths.dtype),
            "mean": paths.mean(axis=0),
            "variance": var,
            "neutral_variance": neutral,
            "fixed": float(np.mean(paths[:, -1] == 1.0)),
            "lost": float(np.mean(paths[:, -1] == 0.0)),
            "kimura_fixation": fixation_probability(N, s, p_start, model=model),
        }
    )


def _plot(results: list[tuple[int, np.ndarray, dict[str, Any]]], args, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .._io import save_figure

    n = len(results)
    fig, axes = plt.subplots(1, n, figsize=(3.6 * n + 0.6, 3.4), sharey=True, squeeze=False)
    for ax, (N, paths, summ) in zip(axes[0], results, strict=True):
        t = np.arange(paths.shape[1])
        ax.plot(t, paths[:_SHOWN].T, color="0.55", lw=0.6, alpha=0.7)
        mean = np.asarray(summ["mean"], dtype=float)
        sd = np.sqrt(np.asarray([v if v is not None else np.nan for v in summ["variance"]]))
        ax.plot(t, mean, color="#d62728", lw=2, label="mean")
        ax.fill_between(t, mean - sd, mean + sd, color="#d62728", alpha=0.18, label="mean ± sd")
        if summ["neutral_variance"] is not None:
            nsd = np.sqrt(np.asarray(summ["neutral_variance"], dtype=float))
            p = summ["p_start"]
            ax.plot(t, p + nsd, "k--", lw=1, label="p0 ± neutral sd (closed form)")
            ax.plot(t, p - nsd, "k--", lw=1)
        ax.set_title(f"N = {N}: fixed {summ['fixed']:.2f}, lost {summ['lost']:.2f}", fontsize=10)
        ax.set_xlabel("generation")
        ax.set_ylim(-0.02, 1.02)
    axes[0][0].set_ylabel("frequency of A")
    axes[0][0].legend(fontsize=7, loc="lower left")
    name = "Wright–Fisher" if args.model == "wf" else "Moran"
    fig.suptitle(f"{name}, s = {args.s:g}, p0 = {args.p0:g}, {args.replicates} replicates")
    fig.tight_layout()
    save_figure(fig, path)


def _cmd_population(args: argparse.Namespace) -> int:
    check_population_args(args)
    if args.plot:
        from .._outputs import PLOT_SUFFIXES, claim_file

        claim_file(args.plot, overwrite=args.overwrite, what="--plot", suffixes=PLOT_SUFFIXES)
    import jax

    from .._population import simulate_population

    key = jax.random.key(args.seed)
    results = []
    for i, N in enumerate(args.N):
        paths = simulate_population(
            N,
            args.p0,
            args.s,
            generations=args.generations,
            replicates=args.replicates,
            model=args.model,
            key=jax.random.fold_in(key, i),
        )
        paths = np.asarray(paths)
        summ = population_summary(paths, N=N, p0=args.p0, s=args.s, model=args.model)
        results.append((N, paths, summ))
    if args.plot:
        _plot(results, args, args.plot)
    if args.json:
        out = {
            "model": args.model,
            "p0": args.p0,
            "s": args.s,
            "generations": args.generations,
            "replicates": args.replicates,
            "seed": args.seed,
            "populations": [r[2] for r in results],
        }
        print(json.dumps(jsonable(out), allow_nan=False))
        return 0
    name = "Wright–Fisher" if args.model == "wf" else "Moran"
    print(
        f"{name}, s = {args.s:g}, p0 = {args.p0:g}, {args.generations} generations, "
        f"{args.replicates} replicates (float64)"
    )
    for N, _, summ in results:
        var = summ["variance"][-1]
        line = f"  N = {N:<6} final mean {summ['mean'][-1]:.4f}, variance "
        line += "n/a (1 replicate)" if var is None else f"{var:.4g}"
        if summ["neutral_variance"] is not None:
            line += f" (neutral closed form {summ['neutral_variance'][-1]:.4g})"
        line += (
            f"; fixed {summ['fixed']:.3f}, lost {summ['lost']:.3f}; "
            f"Kimura fixation {summ['kimura_fixation']:.4f}"
        )
        print(line)
    if args.plot:
        print(f"figure: {args.plot}")
    return 0


def add_population_parser(sub) -> None:
    """Register ``population`` on the subparsers of ``python -m simulate``."""
    p = sub.add_parser(
        "population", help="Wright–Fisher / Moran drift and selection vs closed forms"
    )
    p.add_argument(
        "--N", type=int, nargs="+", default=[20, 200, 2000], help="population sizes (>= 2)"
    )
    p.add_argument("--p0", type=float, default=0.5, help="initial frequency of type A")
    p.add_argument("--s", type=float, default=0.0, help="selection coefficient of A (> -1)")
    p.add_argument("--generations", type=int, default=200)
    p.add_argument("--replicates", type=int, default=200, help="independent populations per N")
    p.add_argument("--model", choices=("wf", "moran"), default="wf")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", metavar="FILE.png", help="draw trajectories per N")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --plot file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_population)

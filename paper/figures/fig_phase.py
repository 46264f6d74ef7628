"""Figure 3: phase diagrams of jointly trained teams with a critic-style reward feedback.

All eight FFLs (AND) with negative end-to-end reward feedback from Z (its threshold
``K[Z->X]`` swept, ``K[Z->Y]`` = 0.3) and an Erlang policy lag ``tau``; competence
kinetics. One panel per motif; regimes coloured, stability boundaries drawn.

    python -m paper.figures.fig_phase --out paper/figures/phase --num 48   # --toy: 8 x 8
"""

from __future__ import annotations

import argparse

import jax

jax.config.update("jax_enable_x64", True)

import simulate as sim  # noqa: E402


def main() -> None:
    """Compute the diagram and save its folder (phase.png, table, summary)."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="paper/figures/phase")
    ap.add_argument("--num", type=int, default=48, help="grid points per axis")
    ap.add_argument("--toy", action="store_true", help="an 8 x 8 grid (tests)")
    args = ap.parse_args()
    num = 8 if args.toy else args.num
    res = sim.phase_diagram(
        "all",
        "AND",
        sim.grid("tau", 0.2, 30.0, num, "log"),
        sim.grid("K[Z->X]", 0.1, 1.0, num, "log"),
        kinetics="competence",
        params={"rho": 1.0, "b": 0.0, "delta": 0.1, "K": 0.3, "n": 4.0},
        feedback=-1,
        feedback_K=0.3,
        delay_stages=4,
        t1=400.0,
        options=sim.SolveOptions(n_points=400),
    )
    res.save(args.out, overwrite=True)  # this script regenerates its own folder
    print(f"figure: {args.out}/phase.png")


if __name__ == "__main__":
    main()

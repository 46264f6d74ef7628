"""Figure 1: step responses of the 16 FFL presets (alon kinetics, beta = 5, gamma = 1).

python -m paper.figures.fig_presets --out paper/figures    # writes presets.png, presets.json

``--toy`` is accepted for symmetry with the other figure scripts; this figure is already small.
"""

from __future__ import annotations

import argparse

import jax

jax.config.update("jax_enable_x64", True)

from simulate import run_demo  # noqa: E402


def main() -> None:
    """Draw the figure (and its JSON summary) into the figures folder."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="paper/figures")
    ap.add_argument("--toy", action="store_true", help="accepted; the figure is already small")
    args = ap.parse_args()
    from pathlib import Path

    run_demo(Path(args.out))


if __name__ == "__main__":
    main()

"""Regenerate every figure of paper/paper.md, each by its own script.

python paper/make_figures.py            # full size (LLM runs: ~10 min on 2 CPU cores)
python paper/make_figures.py --quick    # small grids, short LLM runs (for tests)
python paper/make_figures.py --only presets,oscillation
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def commands(figures: Path, quick: bool) -> dict[str, list[str]]:
    """Figure name -> command line (run from the repository root)."""
    py = sys.executable
    runs = figures / "runs"
    return {
        "presets": [py, str(HERE / "fig_presets.py"), "--out", str(figures)],
        "oscillation": [
            py,
            str(HERE / "fig_oscillation.py"),
            "--out",
            str(figures / "oscillation.png"),
        ],
        "phase": [
            py,
            str(HERE / "fig_phase.py"),
            "--out",
            str(figures / "phase"),
            "--num",
            "12" if quick else "48",
        ],
        "llm": [
            py,
            str(HERE / "llm_c1_vs_i1.py"),
            "--runs",
            str(runs),
            "--steps",
            "20" if quick else "400",
            "--out",
            str(figures / "llm_c1_vs_i1.png"),
        ],
        "calibration": [
            py,
            str(HERE / "fig_calibration.py"),
            "--runs",
            str(runs),
            "--out",
            str(figures / "calibration"),
        ]
        + (["--quick"] if quick else []),
    }


def main() -> int:
    """Run the selected figure scripts in order; stop at the first failure."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=str(HERE / "figures"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated figure names")
    args = ap.parse_args()
    figures = Path(args.out)
    figures.mkdir(parents=True, exist_ok=True)
    cmds = commands(figures, args.quick)
    chosen = [c for c in args.only.split(",") if c] or list(cmds)
    for name in chosen:
        if name not in cmds:
            print(f"error: unknown figure {name!r}; choose from {list(cmds)}", file=sys.stderr)
            return 2
        t0 = time.perf_counter()
        print(f"== {name}: {' '.join(cmds[name][1:])}", flush=True)
        r = subprocess.run(cmds[name], check=False)
        if r.returncode != 0:
            print(f"error: figure {name} failed (exit {r.returncode})", file=sys.stderr)
            return r.returncode
        print(f"   {name} done in {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

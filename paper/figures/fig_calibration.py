"""Figure 5: calibration of the network model on the real C1- and I1-wired LLM runs.

For each run folder (made by paper/llm_c1_vs_i1.py) fits all 16 FFL presets by Laplace +
PSIS and ranks them by PSIS-LOO (``python -m calibrate fit RUN --motif auto``), then
fits the top-ranked structure by NUTS and draws the posterior predictive bands.

    python -m paper.figures.fig_calibration --runs paper/figures/runs \
        --out paper/figures/calibration
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path


def main() -> int:
    """Run the calibrations; their folders hold selection.png and predictive.png."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", default="paper/figures/runs")
    ap.add_argument("--out", default="paper/figures/calibration")
    ap.add_argument("--quick", "--toy", action="store_true", help="fewer draws")
    args = ap.parse_args()
    draws = ["--samples", "200", "--warmup", "200", "--chains", "2"] if args.quick else []
    for run in ("c1_math", "i1_math"):
        folder = Path(args.runs) / run
        if not (folder / "competence.jsonl").exists():
            print(
                f"error: {folder} has no competence log; run paper/llm_c1_vs_i1.py first",
                file=sys.stderr,
            )
            return 2
        out = Path(args.out) / run
        for extra in (
            ["--motif", "auto", "--method", "laplace"],
            ["--motif", run[:2].upper(), "--gate", "AND", *draws],
        ):
            sub = out / ("selection" if "auto" in extra else "fit")
            cmd = [sys.executable, "-m", "calibrate", "fit", str(folder), *extra, "--out", str(sub)]
            print("$", " ".join(cmd), flush=True)
            r = subprocess.run(cmd, check=False)
            if r.returncode not in (0, 1):  # 1 = diagnostics warning, results still written
                return r.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""C1- vs I1-wired joint training on math: competence curves (README figure).

Trains two runs that differ only in the motif (same task, seed, base, mechanism), unless
their run folders already hold a finished log, then draws one panel per run::

    python -m paper.llm_c1_vs_i1                 # runs/c1_math, runs/i1_math -> PNG
    python -m paper.llm_c1_vs_i1 --steps 400 --out paper/figures/llm_c1_vs_i1.png
"""

from __future__ import annotations

from pathlib import Path

import simulate
from llm_runs import competence_figure
from llm_runs.config import TrainConfig
from llm_runs.runlog import RunLogError, read_run


def main() -> None:
    """Train (or reuse) the two runs and write the figure."""
    ap = simulate.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", default="runs")
    ap.add_argument("--mechanism", default="coupling")
    ap.add_argument("--weight", type=float, default=0.9)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="paper/figures/llm_c1_vs_i1.png")
    args = ap.parse_args()
    folders = []
    for motif in ("C1", "I1"):
        out = Path(args.runs) / f"{motif.lower()}_math"
        cfg = TrainConfig.from_dict(
            {
                "network": {
                    "motif": motif,
                    "gate": "AND",
                    "default_mechanism": args.mechanism,
                    "default_weight": args.weight,
                },
                "steps": args.steps,
                "seed": args.seed,
                "threads": args.threads,
                "name": f"{motif}-math-s{args.seed}",
            }
        )
        try:
            done = read_run(out).e2e_rows[-1]["step"] == args.steps
        except (RunLogError, IndexError):
            done = False
        if not done:
            from llm_runs import train

            train(cfg, out, resume=True)
        folders.append(out)
    png = competence_figure(
        folders, args.out, title="Same task, seed and base; only the wiring differs"
    )
    print(png)


if __name__ == "__main__":
    main()

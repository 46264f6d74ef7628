"""The wiring read back from real logs with a reference inside each set (issue 29 §4).

The testbed's first read-back (``paper/testbed_study.py``, sets moved by the learning rate)
and its refit with a pipeline gate (``paper/archive/wiring_pipeline.py``) both failed: in llm_runs
each role's prompt carries its upstream role's output, so Y learns only once X is competent
whatever the designed X->Y sign, and the fit could not tell that data path from the designed
coupling. Here each set moves by the coupling itself: the runs of a set differ only in the
edges' weight ``network.default_weight`` (llm_runs' coupling factor ``1 - w + w G``), and the
set holds its own reference, ``w = 0`` (the data path alone, no designed edge acting). The
fit knows each run's weight (``calibrate fit --edge-weights``) and carries the data path as
pipeline gates (``--pipeline X->Y,Y->Z``).

Design (``config.json``, stored before any run):

- ``wiring_types`` x ``wiring_sets`` sets of runs on the testbed's ``task`` at its default
  configuration (tiny base, coupling edges, ``rl.lr`` ``lr``, ``steps`` steps, evaluations
  every ``eval_every`` on ``n_probe`` probes and ``n_test`` problems), AND gates; in each set
  one run per weight of ``weights`` (seeds ``3000 + 10 set + index``, the same in every type,
  as the testbed's sets; none shared with the testbed's runs).
- Each set fitted once, as soon as its runs have finished: ``calibrate fit --motif auto
  --gate AND --method laplace --edge-weights --pipeline X->Y,Y->Z`` (no hyperparameter
  links: the learning rate is the same in every run); the CLI ranks 16 types (8 x AND/OR),
  as in the first two read-backs.
- Measures and goal as issue 29 §4 states them (``_wiring_read``): for each set the true
  type's rank, whether it is in the indistinguishable set, whether every identified sign is
  right; goal: the truth always first or indistinguishable, no identified sign ever wrong,
  >= 2 of the 3 signs identified in most sets. The first two read-backs' numbers are quoted
  beside these in the summary (``earlier``), read from their committed summaries.

Phases (each resumable): ``restore``, ``wiring`` (training), ``fit``, ``summary``
(``summary.json``, ``table.md``).

Usage: python -m paper.archive.wiring_weights [--phase restore|wiring|fit|summary|all]
       [--runs runs/wiring_weights] [--out paper/results/wiring_weights] [--workers 2]
       [--code DIR] [--quick]

Archived (issue 71 §2): kept as the record of ``paper/results/wiring_weights/``, part of no
live claim; it still runs as ``python -m paper.archive.wiring_weights``, its design and phases
in paper/_wiring_weights.py, on which the live read-backs build.
"""

from __future__ import annotations

from paper._study import study_main
from paper._wiring_weights import QUICK, WeightDesign, run_name


def main(argv: list[str] | None = None) -> int:
    return study_main(
        argv,
        description="The wiring read back with a weight family per set (issue 29 §4).",
        design=WeightDesign,
        quick=QUICK,
        run_name=run_name,
        phases=["restore", "wiring", "fit", "summary"],
        gated=None,
        default_runs="runs/wiring_weights",
        default_out="paper/results/wiring_weights",
        steps={
            "restore": "paper._study_runs:restore_phase",
            "fit": "paper._wiring_weights:fit_phase",
            "summary": "paper._wiring_weights:summary_phase",
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())

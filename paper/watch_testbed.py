"""``calibrate watch`` on runs the first replay never saw: both update methods, one design.

Design (fixed in ``config.json`` before anything is computed; see :func:`design`):

- **fit**: the forecast study's pilots (``paper/results/forecast/``: its 12 pilot runs,
  archived under ``runs/``), refitted with the study's own command (``calibrate fit``,
  C1-AND, Laplace, its ``links.json``: ``rl.lr``, ``rl.staleness``, ``rl.lr_scale.X``)
  into ``<out>/fit`` (the forecast study's fit folder keeps no ``latent.npz``).
- **runs**: the forecast study's 36 held-out runs and the recommendation study's 112 C1
  runs (C1-AND, math, tiny base, 200 steps, evaluation every 10, the same training config
  as the forecast testbed's but for ``rl.lr`` and ``rl.lr_scale.X``; staleness 0), all
  read from their committed logs; none of them is a pilot of this fit.
- **methods**: ``weights`` (watch's importance weights, the first replay's options) and
  ``laplace`` (:mod:`calibrate._watch._update`: the run's parameters refitted at each
  evaluation), each through :func:`calibrate._watch.prepare` and
  :func:`calibrate._watch.forecast` at the run's setting and the study's planned steps.
- **rules**: the first replay's, imported (``paper/_watch_metrics.py``: the one collapse rule,
  :func:`score`, :func:`curve`, :func:`breakdown`; ``_watch_metrics.THRESHOLDS``), lead goal
  20 steps, threshold 0.5; the same runs score both methods.

    python -m paper.watch_testbed [--quick --out /tmp/wt]   # -> paper/results/watch_testbed/

Writes ``config.json`` (first), ``fit/``, ``replay.json``, ``summary.json`` (per method:
``flagged_share``, ``lead_steps``, ``false_alert_share``, ...), ``table.md`` and a figure.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from paper._watch_records import FORECAST, record, split_by_range
from paper._watch_records import KNOBS as KNOBS
from paper._watch_testbed import RECOMMEND, design, driver, label, pilot_folders, replay


def testbed_runs(quick: bool) -> tuple[list[Path], list[dict[str, Any]]]:
    """The pilots' folders and the replayed runs' records."""
    obs = json.loads((FORECAST / "observed.json").read_text())
    pilots = pilot_folders()
    held = [(n, r["split"]) for n, r in sorted(obs.items()) if r["split"] != "pilot"]
    runs = [record(FORECAST / "runs" / n, "forecast") for n, _ in held]
    runs += [record(f, "recommend") for f in sorted((RECOMMEND / "runs").glob("C1_*"))]
    split_by_range(runs)  # the forecast study's split is the same rule on its own grid
    if quick:
        runs = [r for r in runs if r["experiment"] == "forecast"][::12] + [
            r for r in runs if r["experiment"] == "recommend"
        ][::40]
    return pilots, runs


def _labelled(quick: bool) -> list[dict[str, Any]]:
    """The held-out runs, every label computed before any forecast."""
    _, runs = testbed_runs(quick)
    for r in runs:
        r["collapse_step"] = label(r)
    return runs


def main(argv: list[str] | None = None) -> int:
    """Run the held-out replay; writes the results folder."""
    return driver(
        argv, doc=__doc__ or "", name="watch_testbed", design_fn=design, runs_fn=_labelled,
        replay_fn=lambda runs, fit_dir, cfg, out: replay(runs, fit_dir, cfg),
        quick_help="6 runs, few draws, a small fit",
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())

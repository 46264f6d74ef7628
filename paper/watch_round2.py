"""``calibrate watch`` on 84 runs no replay has seen, with links that may bend beyond the
pilots' range.

Design (fixed in ``config.json`` before any forecast is computed; see :func:`design`):

- **fit**: the held-out replay's (``paper/watch_testbed.py``): the forecast study's 12 pilots
  refitted with its command into ``<out>/fit``.
- **runs**: the 84 runs of the forecast's second and third predict-first tests
  (``paper/results/forecast_round2/runs``, 48; ``paper/results/forecast_round3/runs``, 36):
  C1-AND, math, tiny base, 200 steps, evaluations every 10, at settings mostly beyond the
  pilots' range (``rl.lr`` up to 4e-2, ``rl.staleness`` up to 12, ``rl.lr_scale.X`` 0.1 to
  0.45). No watch forecast of them existed before this replay.
- **methods**: the held-out replay's two (``weights``, ``laplace``, same options) and
  ``weights_bent``: the weights update with ``extrapolation_sd`` 0.75, the value the forecast's
  second test chose on the first test's held-out runs before either later test ran.
- **rules**: the held-out replay's (lead goal 20 steps, threshold 0.5, the one collapse rule).

    python -m paper.watch_round2 [--quick --out /tmp/w2]   # -> paper/results/watch_round2/

Writes ``config.json`` (first), ``fit/``, ``replay.json``, ``summary.json`` (per method:
``flagged_share``, ``lead_steps``, ``false_alert_share``, ...), ``table.md`` and a figure.
"""

from __future__ import annotations

import sys

from paper import _watch_testbed as wt
from paper._watch_rounds import SOURCES as SOURCES
from paper._watch_rounds import replay_resumably, round_runs
from paper._watch_rounds import resumable_replay as resumable_replay
from paper._watch_rounds import round2_design as design


def main(argv: list[str] | None = None) -> int:
    """Run the replay; writes the results folder."""
    return wt.driver(
        argv, doc=__doc__ or "", name="watch_round2", design_fn=design, runs_fn=round_runs,
        replay_fn=replay_resumably, quick_help="5 runs, few draws, a small fit",
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())

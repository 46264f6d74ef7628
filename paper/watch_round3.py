"""``calibrate watch`` on the fourth forecast test's 48 new runs: the collapse already in the
evaluations, and X's forgetting linked to its learning-rate scale.

Design (fixed in ``config.json`` before any of these runs was read; see :func:`design`):

- **runs**: ``paper/results/forecast_round4/runs`` (48: ``rl.lr`` {5e-3, 1.2e-2, 3.5e-2} x
  ``rl.staleness`` {0, 3, 5, 10} x ``rl.lr_scale.X`` {0.18, 0.6}, seeds 6-7; C1-AND, math,
  tiny base, 200 steps, evaluations every 10), trained after this design was stored.
- **methods** (the weights update, the held-out replays' options):
  ``weights`` as in both earlier replays (the draws' regimes alone: ``observed`` off);
  ``weights_observed``, the same with watch's new default: an agent that has collapsed by
  the one rule for real runs on the evaluations so far counts as collapsed;
  ``delta_x_bent``: the same on the fourth test's chosen fit (``delta[X] <- log
  rl.lr_scale.X`` added, refitted on the same 12 pilots) with links bent beyond the pilots'
  range at its chosen ``extrapolation_sd`` 0.75.
- **rules**: the held-out replays' (lead goal 20 steps, threshold 0.5, the one collapse rule).

    python -m paper.watch_round3 [--quick --out /tmp/w3]   # -> paper/results/watch_round3/
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from paper._study import refit
from paper._watch_rounds import replay_resumably, round2_design, round_runs
from paper._watch_testbed import driver

ROOT = Path(__file__).resolve().parent / "results"
SOURCES = ("forecast_round4",)
LINKS_FIT = "fit_links"  # the added link's fit, inside the results folder


def delta_x() -> dict[str, Any]:
    """The fourth forecast test's added link (``delta[X] <- rl.lr_scale.X``), as its stored
    design holds it."""
    return json.loads((ROOT / "forecast_round4" / "config.json").read_text())["extra_links"][0]


def design(quick: bool) -> dict[str, Any]:
    """The frozen design (what config.json holds)."""
    base = round2_design(quick)
    weights = base["methods"]["weights"]
    return {
        "question": "on 48 new runs: does the collapse already in the evaluations (watch's "
        "new default) or the fourth forecast test's links (delta[X] <- lr_scale.X, bent "
        "at 0.75) flag collapses >= 20 steps ahead, and with how many false alerts?",
        "expected": "the observed collapse only fires after a collapse's onset (the rule "
        "needs a low tail), so it cannot raise the share flagged >= 20 steps ahead; it "
        "makes P(collapse) end >= 0.5 for every collapse and may add false alerts on runs "
        "with long dips. The added link moves X's forgetting with lr_scale.X, so more "
        "collapses at lr_scale.X 0.6 should be forecast from the first evaluation",
        "fit": base["fit"],
        "links_fit": "the fourth forecast test's chosen fit: the first study's data and "
        "config with " + json.dumps(delta_x()) + " added (paper/forecast_round4.py's refit; "
        f"copied into <out>/{LINKS_FIT} from paper/results/forecast_round4/fit when its draws "
        "are there, else refitted by the same command)",
        "runs": {
            "forecast_round4": "paper/results/forecast_round4/runs (48)",
            "quick": "every 18th run" if quick else None,
            "range": base["runs"]["range"],
            "seen_before": "none: this design was stored while the runs trained, before any "
            "of them was read",
        },
        "methods": {
            "weights": weights,
            "weights_observed": {**weights, "update": "weights", "observed": True},
            "delta_x_bent": {
                **weights,
                "update": "weights",
                "observed": True,
                "extrapolation_sd": 0.75,
                "fit": LINKS_FIT,
            },
        },
        **{k: base[k] for k in ("horizon", "n_eval", "rule", "lead_goal", "threshold")},
        "thresholds": base["thresholds"],
        "reported": base["reported"],
        "quick": quick,
    }


def links_fit(out: Path) -> Path:
    """The added link's fit in ``out`` (copied from the fourth test's when it is there)."""
    folder = out / LINKS_FIT
    there = ROOT / "forecast_round4" / "fit"
    if not (folder / "latent.npz").is_file() and (there / "latent.npz").is_file():
        shutil.copytree(there, folder, dirs_exist_ok=True)
    return refit(ROOT / "forecast", out, folder=LINKS_FIT, links=(delta_x(),))


def _replay(
    runs: list[dict[str, Any]], fit_dir: Path, cfg: dict[str, Any], out: Path
) -> list[dict[str, Any]]:
    """The resumable replay, each method's own fit as a folder of ``out``."""
    run_cfg = json.loads(json.dumps(cfg))
    for o in run_cfg["methods"].values():
        if o.get("fit"):
            o["fit"] = str(links_fit(out))
    return replay_resumably(runs, fit_dir, run_cfg, out)


def main(argv: list[str] | None = None) -> int:
    """Run the replay; writes the results folder."""
    return driver(
        argv, doc=__doc__ or "", name="watch_round3", design_fn=design,
        runs_fn=lambda quick: round_runs(quick, SOURCES), replay_fn=_replay,
        quick_help="3 runs, few draws, a small fit",
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())

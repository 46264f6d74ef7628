"""The recommendation benchmark's best cell ties with an edge cell (issue 71 §5): the summary
says so beside ``best_cell_interior``."""

from __future__ import annotations

import json
from pathlib import Path

from paper._recommend_methods import tied_with_edge

ROOT = Path(__file__).resolve().parents[1]

RESULTS = ROOT / "paper" / "results" / "recommend"


def test_tied_with_edge_by_hand():
    assert tied_with_edge({"lead_over_best_edge_cell": {"difference": 0.0}})
    assert not tied_with_edge({"lead_over_best_edge_cell": {"difference": 0.008}})
    assert not tied_with_edge({"lead_over_best_edge_cell": None})  # the best cell is on the edge
    assert not tied_with_edge({})


def test_the_committed_summary_says_the_best_cell_is_a_tie():
    check = json.loads((RESULTS / "check.json").read_text())
    summary = json.loads((RESULTS / "summary.json").read_text())
    assert summary["best_cell_interior"] is True
    assert summary["best_cell_tied_with_edge"] is tied_with_edge(check) is True
    tied = [c for c in check["cells"] if c["mean"] == check["best"]["mean"]]
    assert sorted(c["interior"] for c in tied) == [False, True]

"""Y's onset against X's competence in the testbed's wiring runs (paper/_testbed_onset.py),
on hand-made curves whose answers are known."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from paper import _testbed_onset as to

ROOT = Path(__file__).resolve().parents[1]


def _curve(name: str, x: list[float], y: list[float]) -> dict:
    steps = np.arange(0, 10 * len(x), 10)
    return {"path": f"/runs/{name}", "steps": steps, "roles": ["X", "Y", "Z"],
            "comp": np.stack([x, y, np.full(len(x), 0.5)], axis=1)}  # fmt: skip


def test_onset_finds_the_first_rise_and_x_before_it():
    c = _curve("a", [0.3, 0.5, 0.91, 0.95, 0.95], [0.47, 0.47, 0.50, 0.53, 0.8])
    assert to.onset(c) == {"y_onset_step": 30, "x_before_onset": 0.91, "x_ready_step": 20}
    flat = _curve("b", [0.3, 0.95, 0.95], [0.47, 0.48, 0.49])
    assert to.onset(flat) == {"y_onset_step": None, "x_before_onset": None, "x_ready_step": 10}


def test_ranges_per_motif():
    curves = {
        ("math", "C1", "", 0, "", 1e-3, 1000): _curve("c1", [0.3, 0.92, 0.95], [0.4, 0.42, 0.7]),
        ("math", "C2", "", 0, "", 1e-3, 1000): _curve("c2", [0.3, 0.9, 0.9, 0.9],
                                                       [0.4, 0.4, 0.4, 0.6]),
        ("math", "C2", "", 0, "", 2e-3, 1001): _curve("c2b", [0.3, 0.5], [0.4, 0.4]),
    }  # fmt: skip
    s = to.y_onsets(curves)
    assert s["by_motif"]["C1"] == {"runs": 1, "y_rose": 1, "x_before_onset": [0.92, 0.92],
                                   "delay_after_x_ready": [10, 10]}  # fmt: skip
    assert s["by_motif"]["C2"] == {"runs": 2, "y_rose": 1, "x_before_onset": [0.9, 0.9],
                                   "delay_after_x_ready": [20, 20]}  # fmt: skip
    assert s["runs"]["c2b"]["y_onset_step"] is None

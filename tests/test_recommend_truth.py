"""The recommendation benchmark's intervals with the cells' noise
(``_recommend_summary.truth_bootstrap``), against the closed form of the bootstrap's variance."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from paper import _recommend_baselines as rb
from paper import _recommend_summary as summ

ROOT = Path(__file__).resolve().parents[1]

KNOBS = (("rl.lr", "log"), ("network.motif", "cat"))
STEPS = np.arange(0, 201, 10)
#: setting -> (mean, sd, seeds): a is the clear best, b second, c far behind
CELLS = {(4e-3, "C1"): (0.80, 0.02, 7), (8e-3, "C1"): (0.70, 0.04, 3),
         (8e-3, "C2"): (0.50, 0.05, 5)}  # fmt: skip


def _table() -> rb.RunTable:
    rng = np.random.default_rng(11)
    curves = {}
    for s, (mu, sd, n) in CELLS.items():
        for seed in range(n):
            v = np.full(STEPS.size, mu + sd * rng.standard_normal())
            curves[(s, seed)] = rb.Curve(STEPS, v, "converged")
    return rb.RunTable(curves, KNOBS)


def _picks(table: rb.RunTable, choice: dict[str, tuple[float, str]]) -> list[dict]:
    return [{"method": m, "seed": r % 3, "rng_seed": r, "setting": table.as_dict(s)}
            for r in range(6) for m, s in choice.items()]  # fmt: skip


def test_paired_difference_matches_the_bootstrap_closed_form():
    table = _table()
    a, b, c = CELLS
    picks = _picks(table, {"A": a, "B": b, "C": c})
    res = summ.truth_bootstrap(picks, table, ["A", "B", "C"], against="A", n_boot=4000)
    assert res["against"] == "A" and set(res["difference"]) == {"B", "C"}
    for m, s in (("B", b), ("C", c)):
        d = res["difference"][m]
        assert d["mean"] == pytest.approx(table.regret(s) - table.regret(a), abs=1e-12)
        # constant picks: the difference is tv(a) - tv(s), whose bootstrap variance is the
        # sum of the plug-in (ddof=0) variances of the two cells' means
        fa = np.array([table.final(a, r) for r in range(CELLS[a][2])])
        fs = np.array([table.final(s, r) for r in range(CELLS[s][2])])
        sd = np.sqrt(fa.var() / fa.size + fs.var() / fs.size)
        lo, hi = d["ci95"]
        assert (hi - lo) / 2 == pytest.approx(1.96 * sd, rel=0.1)
        assert (lo + hi) / 2 == pytest.approx(d["mean"], abs=0.3 * sd)
    # a is the best in every resample (0.1 ahead, sd of its mean < 0.01): A's regret is 0
    assert res["regret"]["A"] == [0.0, 0.0]
    assert res["regret"]["C"][0] > res["regret"]["B"][1]


def test_a_method_without_a_pick_in_a_repetition_is_refused():
    table = _table()
    picks = _picks(table, {"A": next(iter(CELLS)), "B": list(CELLS)[1]})
    with pytest.raises(ValueError, match="every repetition"):
        summ.truth_bootstrap(picks[:-1], table, ["A", "B"], against="A")

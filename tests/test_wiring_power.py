"""paper/wiring_power.py (issue 71 §5): the power to read Y -> Z's sign with a Student-t band,
against a normal-limit closed form and a simulation of the stratified se it models; and its
committed numbers regenerate from the committed read-backs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from paper import wiring_power as wp

ROOT = Path(__file__).resolve().parents[1]

stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize(("ratio", "seeds"), [(1.0, 2), (1.5, 6), (0.5, 20)])
def test_many_degrees_of_freedom_give_the_normal_power(ratio, seeds):
    z = stats.norm.ppf(0.95)
    want = stats.norm.sf(z - math.sqrt(seeds / 2) * ratio)
    assert wp.sign_power(ratio, 1e7, seeds) == pytest.approx(want, abs=1e-4)


@pytest.mark.parametrize(("k", "seeds"), [(2, 2), (2, 5), (3, 4)])
def test_power_matches_a_simulation_of_the_stratified_se(k, seeds):
    """k strata of equal variance, ``seeds`` blocks each: the difference is the sum of the
    blocks, its se ``sqrt(sum_s B_s var_s)`` (ddof 1), its degrees of freedom k (r - 1)."""
    rng = np.random.default_rng(k * 100 + seeds)
    mu, sigma, n = 0.6, 1.0, 40000
    blocks = rng.normal(mu, sigma, size=(n, k, seeds))
    d = blocks.sum(axis=(1, 2))
    se = np.sqrt((seeds * blocks.var(axis=2, ddof=1)).sum(axis=1))
    read = d > stats.t.ppf(0.95, k * (seeds - 1)) * se
    ratio2 = math.sqrt(2 * k) * mu / sigma  # d / se expected at two seeds
    assert read.mean() == pytest.approx(wp.sign_power(ratio2, k, seeds), abs=0.01)


def test_seeds_for_sign_is_the_first_count_that_reaches_the_power():
    r = wp.seeds_for_sign(1.0, 2.0, 0.8)
    assert r is not None and wp.sign_power(1.0, 2.0, r) >= 0.8 > wp.sign_power(1.0, 2.0, r - 1)
    assert wp.seeds_for_sign(0.01, 2.0, 0.8, max_seeds=10) is None
    assert wp.seeds_for_sign(10.0, 2.0, 0.8) == 2
    with pytest.raises(ValueError):
        wp.sign_power(1.0, 2.0, 1)


def test_the_binding_candidate_has_the_other_sign_and_the_smallest_ratio():
    sel = {"ranking": [
        {"label": "C1-AND", "d_elpd": 0.0, "dse": 0.0, "dse_df": None},
        {"label": "I1-AND", "d_elpd": 5.0, "dse": 2.0, "dse_df": 2.0},  # Y -| Z: 2.5
        {"label": "C3-AND", "d_elpd": 30.0, "dse": 15.0, "dse_df": 1.5},  # Y -| Z: 2.0
        {"label": "I3-AND", "d_elpd": 1.0, "dse": 5.0, "dse_df": 1.0},  # Y -> Z, as C1
    ]}  # fmt: skip
    assert wp.binding(sel, "C1-AND") == {"other": "C3-AND", "d": 30.0, "se": 15.0, "df": 1.5}
    assert wp.yz_sign("I2-OR") == -1 and wp.yz_sign("C2-AND") == 1


def test_committed_numbers_regenerate():
    committed = ROOT / "paper" / "results" / "wiring_power" / "summary.json"
    now = json.loads(json.dumps(wp.analyse(ROOT / "paper" / "results")))
    assert now == json.loads(committed.read_text())
    assert (ROOT / "paper" / "results" / "wiring_power" / "table.md").read_text() == wp.table(now)

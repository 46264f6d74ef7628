"""The testbed study (paper/testbed_study.py): its measures against scipy and hand-worked
values, its design (configs that differ only in one edge), the power calculation, the
edge contrasts and the wiring verdicts on synthetic runs with a known answer, and the
driver's refusals."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from paper import _study_runs
from paper import _testbed_analysis as ta
from paper import _testbed_design as td
from paper import testbed_study as tb

ROOT = Path(__file__).resolve().parents[1]


def _run(comp: np.ndarray, e2e: np.ndarray | None = None) -> dict:
    steps = np.arange(len(comp)) * 10
    e2e = np.full(len(comp), 0.5) if e2e is None else e2e
    return {"steps": steps, "comp": comp, "e2e": e2e, "roles": ["X", "Y", "Z"]}


def _cfg(tmp_path: Path, **kw) -> td.StudyConfig:
    cfg = td.StudyConfig(**kw)
    cfg.bind(tmp_path)
    return cfg


def test_t_interval_equals_scipys():
    v = np.array([0.1, 0.3, 0.25, 0.2, 0.4])
    want = stats.t.interval(0.95, v.size - 1, loc=v.mean(), scale=stats.sem(v))
    np.testing.assert_allclose(ta.t_interval(v), want, rtol=1e-12)
    assert ta.t_interval([0.3]) == [None, None]


def test_area_steps_to_level_and_rise_by_hand():
    steps = np.array([0, 10, 20, 30])
    y = np.array([0.2, 0.6, 0.8, 1.0])
    # trapezoid: (0.4 + 0.7 + 0.9) * 10 / 30
    assert ta.auc(steps, y) == pytest.approx(2.0 / 3.0)
    assert ta.steps_to(steps, y, 0.8) == 20 and ta.steps_to(steps, y, 1.1) == 30
    comp = np.column_stack([y, y[::-1], y])
    assert ta.rise(_run(comp), 0) == pytest.approx((0.6 + 0.8 + 1.0) / 3 - 0.2)
    assert ta.rise(_run(comp), 1) == pytest.approx((0.8 + 0.6 + 0.2) / 3 - 1.0)


def test_design_differs_only_in_the_edge():
    from llm_runs.config import TrainConfig

    cfg = td.StudyConfig()
    base = cfg.train_config("math", "C1", "", 1, "coupling", 1e-3, 0)
    for edge, sign, mech in itertools.product(cfg.edges, (1, -1, 0), cfg.mechanisms):
        d = cfg.train_config("math", "C1", edge, sign, mech, 1e-3, 0)
        spec = TrainConfig.from_dict(d).network.network_spec()
        got = {(e.source, e.target): e.sign for e in spec.edges}
        want = {("X", "Y"): 1, ("X", "Z"): 1, ("Y", "Z"): 1}
        key = tuple(edge.split("->"))
        if sign == 0:
            del want[key]
        else:
            want[key] = sign
        assert got == want
        assert {k: v for k, v in d.items() if k not in ("network", "name")} == {
            k: v for k, v in base.items() if k not in ("network", "name")
        }
    # the activating edge through the default mechanism is the default run, trained once
    assert td.canonical(("math", "C1", "X->Z", 1, "coupling", 1e-3, 3)) == (
        "math", "C1", "", 1, "coupling", 1e-3, 3)  # fmt: skip
    assert td.canonical(("math", "C1", "X->Z", 1, "credit", 1e-3, 3))[2] == "X->Z"


def test_later_phases_need_the_power_calculation(tmp_path):
    cfg = _cfg(tmp_path)
    assert len(cfg.jobs("rise")) == 10 and len(cfg.jobs("wiring")) == 24
    with pytest.raises(RuntimeError, match="power"):
        cfg.jobs("edges")
    (tmp_path / "power.json").write_text(json.dumps({"seeds": 5}))
    edges = cfg.jobs("edges")
    # per seed and edge: cut + 3 mechanisms x 2 signs; the default run once per seed
    assert len(edges) == 5 * (3 * 6 + 1) and len(set(edges)) == len(edges)
    assert len(cfg.jobs("types")) == 40


def test_power_follows_the_normal_approximation(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    runs = {("math", "C1", "", 1, "coupling", 1e-3, s): _run(rng.uniform(0.4, 0.9, (21, 3)))
            for s in range(5)}  # fmt: skip
    monkeypatch.setattr(ta, "_curves", lambda cfg, r, phase: runs)
    cfg = _cfg(tmp_path, max_seeds=10_000, min_seeds=1)
    ta.power_phase(cfg, tmp_path, tmp_path)
    got = json.loads((tmp_path / "power.json").read_text())
    sd = max(np.std([ta.auc(c["steps"], c["comp"][:, i]) for c in runs.values()], ddof=1)
             for i in range(3))  # fmt: skip
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert got["sd"] == pytest.approx(sd)
    assert got["seeds"] == int(np.ceil(2 * (z * sd / cfg.effect) ** 2))
    (tmp_path / "power.json").write_text(json.dumps({"seeds": 7}))
    ta.power_phase(cfg, tmp_path, tmp_path)  # fixed once: not recomputed
    assert json.loads((tmp_path / "power.json").read_text())["seeds"] == 7


@pytest.mark.parametrize("gap", [0.1, 0.0])
def test_edge_effects_find_a_known_sign_effect(tmp_path, monkeypatch, gap):
    """Synthetic runs where the activating Y->Z edge raises A_Z by ``gap`` over the
    repressing one (seed noise 0.01): the contrast recovers it; with no gap the interval
    holds 0 and the edge is not said to act."""
    cfg = _cfg(tmp_path, edges=["Y->Z"], mechanisms=["credit"])
    (tmp_path / "power.json").write_text(json.dumps({"seeds": 6}))
    rng = np.random.default_rng(1)
    runs = {}
    for s in range(6):
        for sign, level in ((1, 0.5 + gap), (-1, 0.5), (0, 0.5 + gap / 2)):
            comp = np.full((21, 3), 0.5)
            comp[:, 2] = level + rng.normal(0, 0.01)
            mech = "credit" if sign else "coupling"
            runs[td.canonical(("math", "C1", "Y->Z", sign, mech, 1e-3, s))] = _run(comp)
    monkeypatch.setattr(ta, "_curves", lambda c, r, phase: runs)
    got = ta.edge_effects(cfg, tmp_path)
    row = got["effects"]["Y->Z/credit"]
    assert row["act-rep"]["seeds"] == 6
    assert row["act-rep"]["auc"] == pytest.approx(gap, abs=0.015)
    assert row["act-cut"]["auc"] == pytest.approx(gap / 2, abs=0.015)
    lo, hi = row["act-rep"]["auc_ci95"]
    assert row["acts_with_sign"] is (gap > 0) and (lo <= 0 <= hi) is (gap == 0)
    assert got["every_edge_acts"] is (gap > 0) and got["strongest"] == {"Y->Z": "credit"}


def test_type_separation_p_values_equal_scipys_permutation_test(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    runs = {}
    for m, shift in (("C1", 0.0), ("I1", 0.15), ("C2", 0.0)):
        for s in range(5):
            comp = rng.uniform(0.4, 0.6, (6, 3)) + shift
            runs[("math", m, "", 1, "coupling", 1e-3, s)] = _run(comp, rng.uniform(0.4, 0.6, 6))
    monkeypatch.setattr(ta, "_curves", lambda c, r, phase: runs)
    cfg = _cfg(tmp_path, motifs=["C1", "I1", "C2"], permutations=4000)
    got = ta.motif_separation(cfg, tmp_path)
    vec = {m: np.array([ta._curve_vector(c) for j, c in runs.items() if j[1] == m])
           for m in ("C1", "I1", "C2")}  # fmt: skip

    def stat(a, b, axis):
        return np.linalg.norm(a.mean(axis) - b.mean(axis), axis=-1)

    raw = {}
    for p in got["pairs"]:
        want = stats.permutation_test((vec[p["a"]], vec[p["b"]]), stat, alternative="greater",
                                      n_resamples=np.inf, vectorized=True)  # fmt: skip
        assert p["p"] == pytest.approx(want.pvalue, abs=0.02)
        raw[(p["a"], p["b"])] = p["p"]
    assert raw[("C1", "I1")] < 0.01 and raw[("C1", "C2")] > 0.05
    # Holm: the smallest p times 3, the next times 2 (monotone), the largest times 1
    ps = sorted(raw.values())
    holm = sorted(p["p_holm"] for p in got["pairs"])
    want = np.maximum.accumulate([min(1, 3 * ps[0]), min(1, 2 * ps[1]), min(1, ps[2])])
    np.testing.assert_allclose(holm, want)


def test_wiring_verdicts_on_a_known_selection(tmp_path):
    cfg = _cfg(tmp_path, wiring_types=["I1"], wiring_sets=[0])
    sel = {"best": "C1-AND", "indistinguishable": ["C1-AND", "I1-AND"],
           "identified": {"X->Y": "+", "X->Z": None, "Y->Z": "+", "gate": "AND"},
           "ranking": [{"label": "C1-AND"}, {"label": "I1-AND"}, {"label": "C2-AND"}]}  # fmt: skip
    (tmp_path / "wiring" / "I1_set0").mkdir(parents=True)
    (tmp_path / "wiring" / "I1_set0" / "selection.json").write_text(json.dumps(sel))
    got = ta.wiring_identification(cfg, tmp_path)
    v = got["sets"]["I1_set0"]
    # I1: X->Y +, X->Z +, Y->Z - : the identified Y->Z + is wrong
    assert v["rank"] == 2 and v["in_indistinguishable"]
    assert v["identified_correct"] == {"X->Y": True, "Y->Z": False}
    assert got["truth_first_or_indistinguishable"] and got["no_wrong_sign"] is False
    assert got["share_two_signs"] == 1.0


def test_rise_summary_checks_both_goals(tmp_path, monkeypatch):
    up = np.column_stack([np.linspace(0.3, 0.7, 21)] * 3)
    fast = up.copy()
    fast[2:, 0] = 0.97  # X at its ceiling by step 20
    runs = {("math", "C1", "", 1, "coupling", 1e-3, 0): _run(up),
            ("math", "C1", "", 1, "coupling", 1e-3, 1): _run(fast)}  # fmt: skip
    monkeypatch.setattr(ta, "_curves", lambda c, r, phase: runs)
    got = ta.rise_summary(_cfg(tmp_path, tasks=["math"]), tmp_path)["math"]["roles"]
    assert got["Y"]["meets_rise"] and got["Y"]["meets_early"]
    assert got["X"]["early_max"] == pytest.approx(0.97) and not got["X"]["meets_early"]


def test_edges_before_power_is_one_error_line(tmp_path, capsys):
    rc = tb.main(["--phase", "edges", "--runs", str(tmp_path / "r"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("error: phase edges:")
    assert "power" in err[0]


def test_driver_refuses_another_design(tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    (out / "config.json").write_text(json.dumps({"steps": 1}))
    rc = tb.main(["--phase", "summary", "--runs", str(tmp_path / "r"), "--out", str(out)])
    assert rc == 2 and "another design" in capsys.readouterr().err


@pytest.mark.slow
def test_quick_study_end_to_end(tmp_path):
    """Every phase at toy size (micro base), then a second call that trains nothing."""
    import subprocess

    out, runs = tmp_path / "res", tmp_path / "runs"
    args = [sys.executable, "-m", "paper.testbed_study", "--quick",
            "--runs", str(runs), "--out", str(out), "--workers", "2"]  # fmt: skip
    r = subprocess.run(args, capture_output=True, text=True, timeout=1800, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((out / "summary.json").read_text())
    assert set(s) >= {"role_rise", "edge_effects", "motif_separation", "wiring_identification"}
    assert s["missing_runs"] == {"rise": 0, "edges": 0, "types": 0, "wiring": 0}
    assert s["wiring_identification"]["sets"]["C1_set0"]["rank"] >= 1
    assert (out / "testbed.png").is_file() and (out / "table.md").is_file()
    r2 = subprocess.run(args, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert r2.returncode == 0 and "fitted" not in r2.stdout


def test_archive_and_restore_keep_finished_logs_only(tmp_path):
    runs, out = tmp_path / "runs", tmp_path / "out"
    for name, status in (("a", "finished"), ("b", "running"), ("c", "diverged")):
        (runs / name / "checkpoints").mkdir(parents=True)
        (runs / name / "manifest.json").write_text(json.dumps({"status": status}))
        (runs / name / "competence.jsonl").write_text(f"{name}\n")
    assert _study_runs.archive_runs(runs, out) == 2
    assert sorted(p.name for p in (out / "runs").iterdir()) == ["a", "c"]
    assert not (out / "runs" / "a" / "checkpoints").exists()
    fresh = tmp_path / "fresh"
    (fresh / "c").mkdir(parents=True)
    (fresh / "c" / "manifest.json").write_text(json.dumps({"status": "running"}))
    _study_runs.restore_phase(None, fresh, out)
    assert (fresh / "a" / "competence.jsonl").read_text() == "a\n"
    # a run already there is left as it is
    assert json.loads((fresh / "c" / "manifest.json").read_text())["status"] == "running"


def test_bh_adjustment_equals_scipys_false_discovery_control():
    p = [0.008, 0.03, 0.5, 0.0079, 0.041, 0.2, 0.9]
    np.testing.assert_allclose(ta.bh_adjust(p), stats.false_discovery_control(p), rtol=1e-12)


def test_omnibus_p_value_equals_scipys_k_sample_permutation_test():
    rng = np.random.default_rng(4)
    groups = [rng.normal(mu, 1.0, (5, 3)) for mu in (0.0, 0.0, 2.5)]

    def stat(*samples, axis):
        samples = [np.moveaxis(s, axis, 0) for s in samples]  # (n, ..., d)
        grand = np.concatenate(samples).mean(0)
        return sum(len(s) * np.sum((s.mean(0) - grand) ** 2, axis=-1) for s in samples)

    want = stats.permutation_test(groups, stat, permutation_type="independent",
                                  alternative="greater", n_resamples=4000, vectorized=True,
                                  random_state=0, axis=0)  # fmt: skip
    got = ta.omnibus_test(groups, 4000, np.random.default_rng(1))
    assert got == pytest.approx(want.pvalue, abs=0.01)
    assert got < 0.01  # one group apart: found
    same = [rng.normal(0.0, 1.0, (5, 3)) for _ in range(3)]
    assert ta.omnibus_test(same, 2000, np.random.default_rng(2)) > 0.05

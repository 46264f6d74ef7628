"""paper/relabel.py: the reference rule by hand, and the driver end to end on a tiny temporary
copy of the committed inputs in which planted curves of known answer replace real ones (the
stored labels are inputs here, never the thing checked)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from paper._relabel_data import reference_collapse

PAPER = Path(__file__).resolve().parents[1] / "paper"


def test_reference_rule_by_hand():
    # tail of 21: m = 5, L = 0.1; y0 = 0.8, sd0 = sqrt(0.16/64) = 0.05: 0.1 < 0.4 and < 0.65
    assert reference_collapse([0.8] + [0.1] * 20, 64)
    # a rise then a fall: measured from the start only, 0.2 is not below 0.5 * 0.3
    assert not reference_collapse([0.3, 0.9, 0.9, 0.9] + [0.2] * 17, 64)
    # start below the 0.1 floor: L must be < 0.05 and < y0 - 3 sd0 (sd0 at 1/n_eval clip)
    assert not reference_collapse([0.08] + [0.04] * 20, 32)
    assert reference_collapse([0.5] + [0.1] * 3, 1024)  # T = 4: m = max(2, 1) = 2


def _tiny_root(tmp: Path) -> Path:
    """The committed inputs, trimmed, with planted curves."""
    src = PAPER / "results"
    root = tmp / "results"
    for exp, names in {
        "regime_map": ("config.json", "observed.json", "predictions.json", "summary.json"),
        "pool_old_testbed": ("config.json", "runs.json"),
        "hypotheses_old_testbed": ("config.json", "runs.json", "summary.json"),
    }.items():
        (root / exp).mkdir(parents=True)
        for n in names:
            shutil.copy(src / exp / n, root / exp / n)
    pool = json.loads((root / "pool_old_testbed" / "runs.json").read_text())
    pool = {k: v[:2] for k, v in pool.items() if k in ("stable/grad/K1", "unstable/grad/K1")}
    steps = pool["stable/grad/K1"][0]["steps"]
    fall = np.interp(steps, [0, 20, 60], [0.75, 0.0625, 0.0208])  # k / 48 values
    flat = np.full(len(steps), 0.5)
    pool["stable/grad/K1"][0]["competence"] = np.stack([fall, flat, flat], 1).round(4).tolist()
    pool["stable/grad/K1"][1]["competence"] = np.stack([flat, flat, flat], 1).tolist()
    (root / "pool_old_testbed" / "runs.json").write_text(json.dumps(pool))
    hyp = json.loads((root / "hypotheses_old_testbed" / "runs.json").read_text())
    hyp = {k: v[:1] for k, v in hyp.items() if k in ("lag/math/C1", "lag/math/I1", "shift/rag/C1")}
    (root / "hypotheses_old_testbed" / "runs.json").write_text(json.dumps(hyp))
    (root / "relabel").mkdir()
    shutil.copy(src / "relabel" / "config.json", root / "relabel" / "config.json")
    return root


def test_relabel_end_to_end_on_a_tiny_copy(tmp_path, capsys):
    from paper import relabel

    root = _tiny_root(tmp_path)
    assert relabel.main(["--results", str(root)]) == 0
    out = root / "relabel"
    s = json.loads((out / "summary.json").read_text())
    assert {p.name for p in out.iterdir()} >= {"summary.json", "table.md", "relabel.png"}
    assert s["n_runs"] == 32 + 4 + 3
    assert s["labels"]["pool/stable/grad/K1:stable_grad_K1_s0"]["new"] == "collapse"
    assert s["labels"]["pool/stable/grad/K1:stable_grad_K1_s1"]["new"] == "converged"
    # the agreement is what the listed disagreements say it is
    n_agents = s["n_agent_curves"]
    assert s["agreement_agents"] == pytest.approx(1 - len(s["disagreements"]) / n_agents)
    lo, hi = s["agreement_runs_ci95"]
    assert lo <= s["agreement_runs"] <= hi
    # the planted collapse is counted in the pool's changed section under the new rule
    row = s["changed"]["pool"]["collapsed"]["stable"]["GRPO (single)"]
    assert row["seeds"] == 2 and row["new"] == 1
    assert s["changed"]["regime_map"]["old_reproduces_committed"] is True
    assert "stable_grad_K1_s0" not in capsys.readouterr().err


def test_relabel_refuses_without_a_stated_rule(tmp_path, capsys):
    from paper import relabel

    root = _tiny_root(tmp_path)
    (root / "relabel" / "config.json").unlink()
    assert relabel.main(["--results", str(root)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:")

"""paper/wiring_pipeline.py (issue 29 §4, post hoc): the table, the refusal of another design,
and the whole --quick re-analysis on a toy synthetic testbed (no committed result read)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from paper.archive import wiring_pipeline as wp

ROOT = Path(__file__).resolve().parents[1]


def _verdict(rank, best, ident, correct):
    return {"true": "C2-AND", "rank": rank, "best": best, "in_indistinguishable": rank <= 2,
            "identified": ident, "identified_correct": correct}  # fmt: skip


def test_table_shows_both_models_and_wrong_signs():
    old = {"sets": {"C2_set0": _verdict(10, "I3-AND", {"X->Y": "+"}, {"X->Y": False})},
           "truth_first_or_indistinguishable": False, "no_wrong_sign": False,
           "share_two_signs": 0.0}  # fmt: skip
    new = {"sets": {"C2_set0": _verdict(1, "C2-AND", {"X->Y": "-"}, {"X->Y": True})},
           "truth_first_or_indistinguishable": True, "no_wrong_sign": True,
           "share_two_signs": 0.0}  # fmt: skip
    text = wp.table({"with_pipeline": new, "without_pipeline": old, "command": "cmd"})
    row = next(line for line in text.splitlines() if line.startswith("| C2_set0"))
    assert "| 10 | I3-AND | X->Y + (wrong) | 1 * | C2-AND | X->Y - |" in row
    assert "no_wrong_sign: no gate False, gate True" in text and "`cmd`" in text


def test_another_design_in_out_is_refused(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({"pipeline": "X->Z"}))
    assert wp.main(["--out", str(tmp_path), "--testbed", str(tmp_path / "tb")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "another design" in err[0]


@pytest.mark.slow  # two selections of 16 candidates at reduced sizes
@pytest.mark.timeout(3600)
def test_quick_reanalysis_end_to_end(tmp_path):
    out = tmp_path / "res"
    args = [
        sys.executable,
        "-m",
        "paper.wiring_pipeline",
        "--quick",
        "--out",
        str(out),
    ]
    r = subprocess.run(args, capture_output=True, text=True, timeout=3000, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "C2_set0: fitted" in r.stdout
    s = json.loads((out / "summary.json").read_text())
    assert s["post_hoc"] and json.loads((out / "config.json").read_text())["post_hoc"]
    for side in ("with_pipeline", "without_pipeline"):
        v = s[side]["sets"]["C2_set0"]
        assert v["true"] == "C2-AND" and 1 <= v["rank"] <= 16
        assert set(v) >= {"best", "in_indistinguishable", "identified", "identified_correct"}
        assert set(s[side]) >= {"truth_first_or_indistinguishable", "no_wrong_sign",
                                "share_two_signs"}  # fmt: skip
    fitted = json.loads((out / "wiring" / "C2_set0" / "selection.json").read_text())
    post = json.loads(
        (out / "wiring" / "C2_set0" / "fits" / fitted["best"] / "config.json").read_text()
    )
    assert post["pipeline"] == ["X->Y", "Y->Z"]
    assert (out / "table.md").is_file()
    r2 = subprocess.run(args, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert r2.returncode == 0 and "C2_set0: fitted" not in r2.stdout  # every set kept

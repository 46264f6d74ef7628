"""Writer -> reader contract of a run killed mid-write: llm_runs' RunWriter, calibrate's reader.

A torn last line (and an incomplete last group of rows) is dropped with a warning by default
and is an error under ``strict``; the rest of the log is read as written.
"""

from __future__ import annotations

import pytest

import calibrate as cal
from llm_runs import runlog as rl


def _write_run(folder, steps=(0, 10, 20)):
    manifest = rl.make_manifest(
        run=folder.name,
        seed=1,
        agents=["X", "Y"],
        spec={"nodes": ["X", "Y"], "edges": []},
        config={"steps": 40, "eval_every": 10, "rl": {"lr": 0.002}},
    )
    with rl.RunWriter(folder, manifest) as w:
        for s in steps:
            w.write(
                [
                    {
                        "kind": "agent",
                        "step": s,
                        "agent": a,
                        "competence": 0.1 + s / 100 + k / 10,
                        "n_eval": 20,
                    }
                    for k, a in enumerate("XY")
                ]
            )
    return folder / rl.COMPETENCE_FILE


def test_torn_last_line_is_dropped_with_a_warning(tmp_path):
    log = _write_run(tmp_path / "run1")
    with open(log, "a", encoding="utf-8") as fh:
        fh.write('{"kind": "agent", "step": 30, "agent": "X", "compet')  # killed mid-write
    with pytest.warns(rl.RunLogWarning, match="torn last line"):
        d = cal.read_run_folder(tmp_path / "run1")
    assert sorted(d.table["step"].unique().tolist()) == [0, 10, 20]
    assert len(d.table) == 6
    x20 = d.table[(d.table["agent"] == "X") & (d.table["step"] == 20)]["competence"]
    assert x20.tolist() == pytest.approx([0.3])
    with pytest.warns(rl.RunLogWarning):
        d2 = cal.load_inputs([tmp_path / "run1"])
    assert len(d2.table) == 6


def test_torn_last_line_is_an_error_under_strict(tmp_path):
    log = _write_run(tmp_path / "run1")
    with open(log, "a", encoding="utf-8") as fh:
        fh.write('{"kind": "ag')
    with pytest.raises(cal.DataError, match="torn last line"):
        cal.read_run_folder(tmp_path / "run1", strict=True)
    with pytest.raises(cal.DataError, match="torn last line"):
        cal.load_inputs([tmp_path / "run1"], strict=True)


def test_incomplete_last_group_is_torn_too(tmp_path):
    log = _write_run(tmp_path / "run1")
    with open(log, "a", encoding="utf-8") as fh:
        fh.write('{"kind": "agent", "step": 30, "agent": "X", "competence": 0.4, "n_eval": 20}\n')
    with pytest.warns(rl.RunLogWarning, match="incomplete last group"):
        d = cal.read_run_folder(tmp_path / "run1")
    assert int(d.table["step"].max()) == 20
    with pytest.raises(cal.DataError, match="incomplete last group"):
        cal.read_run_folder(tmp_path / "run1", strict=True)


def test_clean_log_reads_without_warning(tmp_path, recwarn):
    _write_run(tmp_path / "run1")
    d = cal.read_run_folder(tmp_path / "run1", strict=True)
    assert len(d.table) == 6
    assert not [w for w in recwarn if issubclass(w.category, rl.RunLogWarning)]


def test_spliced_log_is_an_error_even_without_strict(tmp_path):
    _write_run(tmp_path / "run1", steps=(0, 10, 30))
    with pytest.raises(cal.DataError, match="step 30 where step 20 is expected"):
        cal.read_run_folder(tmp_path / "run1")


def test_a_diverged_run_is_read_with_a_warning_that_says_collapse(tmp_path):
    _write_run(tmp_path / "run1")
    rl.update_manifest(tmp_path / "run1", status="diverged", diverged_step=20,
                       diverged_reason="loss of agent X became nan")  # fmt: skip
    with pytest.warns(cal.DataWarning, match="diverged at step 20 .a collapse"):
        d = cal.read_run_folder(tmp_path / "run1")
    assert int(d.table["step"].max()) == 20

"""Run-log schema: writer, validating reader, resume truncation, long table."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from llm_runs import runlog as rl


def _manifest(name: str = "r1") -> dict:
    return rl.make_manifest(
        run=name,
        seed=0,
        agents=["X", "Y", "Z"],
        spec={"nodes": ["X", "Y", "Z"]},
        config={"steps": 2},
    )


def _rows(step: int) -> list[dict]:
    rows = [
        {
            "kind": "agent",
            "step": step,
            "agent": a,
            "competence": 0.25 * (i + 1),
            "n_eval": 8,
            "reward": None if step == 0 else 0.5,
            "reward_std": 0.1,
            "entropy": 1.0,
            "kl": 0.0,
            "lr": 1e-3,
            "budget_share": 1.0,
            "loss": 0.3,
        }
        for i, a in enumerate("XYZ")
    ]
    rows.append(
        {
            "kind": "e2e",
            "step": step,
            "accuracy": 0.5,
            "n_eval": 16,
            "reward": None,
            "pulse": False,
            "shifted": False,
        }
    )
    return rows


def test_write_read_roundtrip(tmp_path):
    with rl.RunWriter(tmp_path / "r1", _manifest()) as w:
        for s in (0, 5, 10):
            w.write(_rows(s))
    log = rl.read_run(tmp_path / "r1")
    assert len(log.agent_rows) == 9 and len(log.e2e_rows) == 3
    assert log.manifest["schema_version"] == rl.SCHEMA_VERSION
    assert "git_revision" in log.manifest and "versions" in log.manifest
    wide = log.competence()
    assert list(wide.columns) == ["X", "Y", "Z"] and list(wide.index) == [0, 5, 10]


def test_reader_reports_first_bad_line(tmp_path):
    with rl.RunWriter(tmp_path / "r", _manifest()) as w:
        w.write(_rows(0))
    f = tmp_path / "r" / rl.COMPETENCE_FILE
    lines = f.read_text().splitlines()
    bad = json.loads(lines[1])
    bad["competence"] = 1.5
    lines[1] = json.dumps(bad)
    lines[2] = "{not json"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(rl.RunLogError, match=r"competence.jsonl:2: 'competence'"):
        rl.read_run(tmp_path / "r")


def test_reader_rejects_duplicates_and_torn_tail(tmp_path):
    with rl.RunWriter(tmp_path / "r", _manifest()) as w:
        w.write(_rows(0))
        w.write(_rows(0)[:1])
    with pytest.raises(rl.RunLogError, match=":5: duplicated"):
        rl.read_run(tmp_path / "r")
    with rl.RunWriter(tmp_path / "t", _manifest()) as w:
        w.write(_rows(0))
    with open(tmp_path / "t" / rl.COMPETENCE_FILE, "a") as fh:
        fh.write('{"kind": "agent", "st')
    with pytest.raises(rl.RunLogError, match=":5: not valid JSON"):
        rl.read_run(tmp_path / "t")
    assert len(rl.read_run(tmp_path / "t", strict=False).rows) == 4


def test_resume_truncates_rows_at_and_after_step(tmp_path):
    with rl.RunWriter(tmp_path / "r", _manifest()) as w:
        for s in (0, 5, 10):
            w.write(_rows(s))
    with open(tmp_path / "r" / rl.COMPETENCE_FILE, "a") as fh:
        fh.write('{"kind": "e2e"')  # torn line of a killed writer
    with rl.RunWriter(tmp_path / "r", None, resume_from_step=10) as w:
        w.write(_rows(10))
    steps = [r["step"] for r in rl.read_run(tmp_path / "r").rows]
    assert steps == [0] * 4 + [5] * 4 + [10] * 4


def test_competence_table(tmp_path):
    for name in ("a", "b"):
        with rl.RunWriter(tmp_path / name, _manifest(name)) as w:
            w.write(_rows(0))
            w.write(_rows(3))
    df = rl.competence_table([tmp_path / "a", tmp_path / "b"])
    assert list(df.columns) == ["run", "step", "agent", "competence", "n_eval"]
    assert len(df) == 12 and set(df.run) == {"a", "b"}
    assert df.step.dtype.kind == "i" and df.n_eval.dtype.kind == "i"


def test_bad_manifest_and_rows(tmp_path):
    with pytest.raises(rl.RunLogError, match="missing field"):
        rl.RunWriter(tmp_path / "x", {"schema": rl.SCHEMA})
    with rl.RunWriter(tmp_path / "r", _manifest()) as w:
        with pytest.raises(rl.RunLogError, match="n_eval"):
            w.write([{"kind": "agent", "step": 0, "agent": "X", "competence": 0.1, "n_eval": 0}])
        with pytest.raises(rl.RunLogError, match="kind"):
            w.write([{"step": 0}])


def test_runlog_and_config_import_without_torch():
    code = (
        "import sys, llm_runs, llm_runs.runlog, llm_runs.config;"
        "bad = [m for m in ('torch', 'transformers', 'peft') if m in sys.modules];"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

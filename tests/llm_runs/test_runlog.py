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
        w.write(_rows(1))
    with open(tmp_path / "t" / rl.COMPETENCE_FILE, "a") as fh:
        fh.write('{"kind": "agent", "st')
    with pytest.warns(rl.RunLogWarning, match=":9: torn last line"):
        log = rl.read_run(tmp_path / "t")
    assert [r["step"] for r in log.rows] == [0] * 4 + [1] * 4
    assert log.torn is not None and ":9: torn last line" in log.torn
    with pytest.raises(rl.RunLogError, match=r":9: torn last line.*strict"):
        rl.read_run(tmp_path / "t", strict=True)
    # a torn line that is not the last one is always an error
    f = tmp_path / "t" / rl.COMPETENCE_FILE
    f.write_text(f.read_text() + "\n" + json.dumps(_rows(2)[0]) + "\n")
    with pytest.raises(rl.RunLogError, match=":9: not valid JSON"):
        rl.read_run(tmp_path / "t")


def test_incomplete_last_group_is_a_torn_tail_and_a_middle_one_an_error(tmp_path):
    with rl.RunWriter(tmp_path / "r", _manifest()) as w:
        w.write(_rows(0))
        w.write(_rows(5)[:2])  # killed after two complete lines of step 5
    with pytest.warns(rl.RunLogWarning, match=r":5: incomplete last group \(step 5"):
        log = rl.read_run(tmp_path / "r")
    assert {r["step"] for r in log.rows} == {0}
    with pytest.raises(rl.RunLogError, match="incomplete last group"):
        rl.read_run(tmp_path / "r", strict=True)
    with rl.RunWriter(tmp_path / "m", _manifest()) as w:
        w.write(_rows(0)[1:])  # no row for X at step 0
        w.write(_rows(5))
    with pytest.raises(rl.RunLogError, match=r":1: step 0 has no row for \['X'\]"):
        rl.read_run(tmp_path / "m")


def test_steps_must_increase(tmp_path):
    with rl.RunWriter(tmp_path / "r", _manifest()) as w:
        w.write(_rows(0))
        w.write(_rows(5))
        w.write(_rows(3))
    with pytest.raises(rl.RunLogError, match=r":9: step 3 after step 5 \(steps go backwards"):
        rl.read_run(tmp_path / "r")
    with rl.RunWriter(tmp_path / "a", _manifest()) as w:
        w.write(_rows(0))
        w.write(_rows(5))
        w.write(_rows(0)[:1])
        w.write(_rows(0)[1:])
    with pytest.raises(rl.RunLogError, match=r":9: step 0 again after step 5"):
        rl.read_run(tmp_path / "a")


def _grid_manifest(steps: int = 60, every: int = 10) -> dict:
    m = _manifest()
    m["config"] = {"steps": steps, "eval_every": every}
    return m


def test_steps_follow_the_eval_grid_of_the_manifest(tmp_path):
    # the spliced log of issue 16: a fresh run's steps 0-2, then an older checkpoint's 50-60
    with rl.RunWriter(tmp_path / "s", _grid_manifest(60, 1)) as w:
        for s in (0, 1, 2, *range(50, 61)):
            w.write(_rows(s))
    with pytest.raises(rl.RunLogError, match=r":13: step 50 where step 3 is expected"):
        rl.read_run(tmp_path / "s")
    with rl.RunWriter(tmp_path / "ok", _grid_manifest(25, 10)) as w:
        for s in (0, 10, 20, 25):
            w.write(_rows(s))
    assert [r["step"] for r in rl.read_run(tmp_path / "ok").e2e_rows] == [0, 10, 20, 25]
    with rl.RunWriter(tmp_path / "off", _grid_manifest(25, 10)) as w:
        for s in (0, 10, 15):
            w.write(_rows(s))
    with pytest.raises(rl.RunLogError, match="step 15 where step 20 is expected"):
        rl.read_run(tmp_path / "off")
    with rl.RunWriter(tmp_path / "late", _grid_manifest(20, 10)) as w:
        for s in (0, 10, 20, 30):
            w.write(_rows(s))
    with pytest.raises(rl.RunLogError, match="step 30 after the run's last step 20"):
        rl.read_run(tmp_path / "late")
    with rl.RunWriter(tmp_path / "first", _grid_manifest(20, 10)) as w:
        w.write(_rows(10))
    with pytest.raises(rl.RunLogError, match="step 10 where step 0 is expected"):
        rl.read_run(tmp_path / "first")


def test_diverged_run_status_and_final_step(tmp_path):
    with rl.RunWriter(tmp_path / "d", _grid_manifest(60, 10)) as w:
        for s in (0, 10, 14):
            w.write(_rows(s))
    with pytest.raises(rl.RunLogError, match="step 14 where step 20 is expected"):
        rl.read_run(tmp_path / "d")  # off the grid unless the run diverged there
    assert rl.read_manifest(tmp_path / "d")["status"] == "running"
    with pytest.raises(rl.RunLogError, match="diverged_step"):
        rl.update_manifest(tmp_path / "d", status="diverged")
    rl.update_manifest(tmp_path / "d", status="diverged", diverged_step=14, diverged_reason="x")
    log = rl.read_run(tmp_path / "d")
    assert log.status == "diverged" and log.diverged_step == 14
    assert [r["step"] for r in log.e2e_rows] == [0, 10, 14]
    rl.update_manifest(tmp_path / "d", status="diverged", diverged_step=13)
    with pytest.raises(rl.RunLogError, match="step 14 where step 20"):
        rl.read_run(tmp_path / "d")
    with pytest.raises(rl.RunLogError, match="'status' must be one of"):
        rl.update_manifest(tmp_path / "d", status="done")


def test_writer_never_replaces_a_log(tmp_path):
    with rl.RunWriter(tmp_path / "r", _manifest()) as w:
        w.write(_rows(0))
    with pytest.raises(rl.RunLogError, match="already exists"):
        rl.RunWriter(tmp_path / "r", _manifest())
    assert len(rl.read_run(tmp_path / "r").rows) == 4


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


def test_one_terminal_status_check_in_the_run_log_module():
    """Every driver asks ``runlog.is_terminal`` whether a run trains again; no other module
    spells the terminal statuses (issue 30 §1: one check, in the run-log module)."""
    import re
    from pathlib import Path

    from llm_runs import runlog

    assert runlog.is_terminal("finished") and runlog.is_terminal("diverged")
    assert not any(runlog.is_terminal(s) for s in ("running", None, "FINISHED", ""))
    root = Path(__file__).resolve().parents[2]
    spelled = re.compile(r"""["'](finished|diverged)["']\s*,\s*["'](finished|diverged)["']""")
    offenders = [
        str(p.relative_to(root))
        for d in ("simulate", "llm_runs", "calibrate", "paper")
        for p in sorted((root / d).rglob("*.py"))
        if p.name != "_runlog_schema.py" and spelled.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []

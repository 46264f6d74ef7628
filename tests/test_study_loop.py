"""The study loop every predict-first experiment shares (calibrate.Study, used by the demo
and by paper/_study.py): forecasts stored once, stamped with their time, never overwritten;
a design stored once and checked; runs trained, resumed or kept; stages with timings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calibrate import StageError, Study, StudyInterrupted, train_run, train_runs
from llm_runs import CKPT_FILE
from llm_runs.runlog import make_manifest
from paper import _study
from simulate.common import ConfigError, OutputError, write_json

ROOT = Path(__file__).resolve().parents[1]


def test_forecasts_are_stored_once_with_their_time(tmp_path, capsys):
    path = tmp_path / "predictions.json"
    calls = []

    def make():
        calls.append(1)
        return {"cells": [0.25, 0.5]}

    doc = _study.store_once(path, make)
    assert json.loads(path.read_text()) == doc
    assert doc["cells"] == [0.25, 0.5] and doc["created"].endswith("+00:00")
    assert "git_revision" in doc
    again = _study.store_once(path, lambda: {"cells": [9.0]})
    assert again == doc and calls == [1]  # kept, not remade
    assert "made once" in capsys.readouterr().out
    assert [p.name for p in tmp_path.iterdir()] == ["predictions.json"]  # no temporary left


def test_a_forecast_written_meanwhile_is_never_overwritten(tmp_path):
    path = tmp_path / "predictions.json"

    def make():
        path.write_text('{"theirs": 1}\n')  # another process stored its forecast first
        return {"ours": 2}

    with pytest.raises(OutputError, match="written while"):
        _study.store_once(path, make)
    assert json.loads(path.read_text()) == {"theirs": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["predictions.json"]


def test_the_design_is_stored_once_and_another_one_refused_unless_asked(tmp_path):
    out = tmp_path / "study"
    with Study(out, {"lr": 0.1, "seeds": [0, 1]}):
        pass
    stored = json.loads((out / "design.json").read_text())
    assert stored["lr"] == 0.1 and stored["created"].endswith("+00:00")
    (out / "result.txt").write_text("kept")
    with Study(out, {"lr": 0.1, "seeds": (0, 1)}):  # the same design (JSON-equal): continued
        pass
    assert (out / "result.txt").read_text() == "kept"
    with pytest.raises(ConfigError, match="another design"), Study(out, {"lr": 0.2}):
        pass
    assert (out / "result.txt").is_file()  # refused before anything was touched
    with Study(out, {"lr": 0.2}, overwrite=True):  # asked: started again
        pass
    assert not (out / "result.txt").exists()
    assert json.loads((out / "design.json").read_text())["lr"] == 0.2
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.md").write_text("a user's file")
    with (
        pytest.raises(OutputError, match="holds no study"),
        Study(other, {"lr": 0.1}, overwrite=True),
    ):
        pass
    assert (other / "notes.md").read_text() == "a user's file"  # never deleted


def test_compare_key_compares_one_entry_of_the_design(tmp_path):
    with Study(tmp_path / "s", {"design": {"a": 1}, "runs": "x"}, compare_key="design"):
        pass
    with Study(tmp_path / "s", {"design": {"a": 1}, "runs": "y"}, compare_key="design"):
        pass
    with (
        pytest.raises(ConfigError),
        Study(tmp_path / "s", {"design": {"a": 2}}, compare_key="design"),
    ):
        pass


def test_a_study_folder_in_use_is_refused(tmp_path):
    with Study(tmp_path / "s", {"a": 1}), pytest.raises(OutputError, match="in use"):
        with Study(tmp_path / "s", {"a": 1}):
            pass


def test_stages_run_in_order_with_timings_and_stop_after(tmp_path):
    lines, done = [], []
    stages = [
        ("one", lambda: done.append("one") or ("first", False)),
        ("two", lambda: done.append("two") or ("second", True)),
        ("three", lambda: done.append("three")),
    ]
    with Study(tmp_path / "s", {"a": 1}, echo=lines.append) as st:
        timing = st.run(stages, stop_after="two")
    assert done == ["one", "two"] and list(timing) == ["one", "two"]
    assert lines[0].startswith("[1/3] one") and lines[1].endswith("(reused)")
    stored = json.loads((tmp_path / "s" / "timing.json").read_text())
    assert stored["two"]["reused"] is True and stored["total_s"] >= 0
    with Study(tmp_path / "s", {"a": 1}, echo=lines.append) as st:
        with pytest.raises(ConfigError, match="stop-after"):
            st.run(stages, stop_after="four")
        st.run(stages)
    assert done[-3:] == ["one", "two", "three"]


def test_an_interrupt_names_the_stage_it_stopped(tmp_path):
    def boom():
        raise KeyboardInterrupt

    with Study(tmp_path / "s", {"a": 1}, echo=lambda _: None) as st:
        with pytest.raises(StudyInterrupted) as info:
            st.run([("ok", lambda: None), ("train", boom)])
    assert info.value.stage == "train"


def _fake_llm_runs(tree: Path, rc: int = 0) -> str:
    """A source tree whose ``python -m llm_runs`` records its arguments (the child command)."""
    pkg = tree / "llm_runs"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(
        "import json, sys\n"
        f"open({str(tree / 'calls.jsonl')!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        f"sys.exit({rc})\n"
    )
    return str(tree)


def _manifest(folder: Path, status: str) -> None:
    folder.mkdir(parents=True)
    man = make_manifest(run=folder.name, seed=0, agents=["X"], spec={}, config={})
    extra = {"diverged_step": 5} if status == "diverged" else {}
    write_json(folder / "manifest.json", man | {"status": status} | extra)


def _calls(tree: Path) -> list[list[str]]:
    path = tree / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def test_runs_are_trained_resumed_or_kept_by_their_status(tmp_path):
    code = _fake_llm_runs(tmp_path / "code")
    runs = tmp_path / "runs"
    _manifest(runs / "done", "finished")
    _manifest(runs / "blown", "diverged")
    _manifest(runs / "half", "running")
    (runs / "half" / CKPT_FILE).parent.mkdir()
    (runs / "half" / CKPT_FILE).write_bytes(b"state")
    _manifest(runs / "early", "running")  # killed before its first checkpoint
    new = ["--config", "c.json"]
    assert train_run(runs / "done", new, log=tmp_path / "log", code=code) is True
    assert train_run(runs / "blown", new, log=tmp_path / "log", code=code) is True
    assert _calls(tmp_path / "code") == []  # an ended run is kept: nothing was started
    assert train_run(runs / "half", new, log=tmp_path / "log", code=code) is False
    assert train_run(runs / "fresh", new, log=tmp_path / "log", code=code) is False
    assert train_run(runs / "early", new, log=tmp_path / "log", code=code) is False
    calls = _calls(tmp_path / "code")
    assert calls[0] == ["train", "--out", str((runs / "half").resolve()), "--resume"]
    assert calls[1] == ["train", "--out", str((runs / "fresh").resolve()), *new]
    assert calls[2] == ["train", "--out", str((runs / "early").resolve()), *new, "--overwrite"]


def test_train_runs_reports_each_run_and_a_failure_names_its_log(tmp_path):
    code = _fake_llm_runs(tmp_path / "code")
    lines: list[str] = []
    jobs = [(tmp_path / "runs" / f"r{i}", ["--seed", str(i)]) for i in range(3)]
    kept = train_runs(jobs, workers=2, logs=tmp_path / "logs", desc="edges", code=code,
                      echo=lines.append)  # fmt: skip
    assert kept is False and len(_calls(tmp_path / "code")) == 3
    assert sorted(line.split()[0] for line in lines) == ["[1/3]", "[2/3]", "[3/3]"]
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == [
        "edges_r0.log", "edges_r1.log", "edges_r2.log"]  # fmt: skip
    bad = _fake_llm_runs(tmp_path / "bad", rc=3)
    with pytest.raises(StageError, match="exit 3"):
        train_run(tmp_path / "runs" / "x", [], log=tmp_path / "bad.log", code=bad)

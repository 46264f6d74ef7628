"""Inputs: CSV/Parquet, run folders, TensorBoard; validation errors."""

import json

import numpy as np
import pandas as pd
import pytest

import calibrate as cal


def _table(runs=("a", "b"), steps=(0, 10, 20), agents=("X", "Y")):
    rows = [
        {
            "run": r,
            "step": s,
            "agent": a,
            "competence": 0.1 + 0.01 * s,
            "n_eval": 50,
            "lr": 1e-3 if r == "a" else 3e-3,
            "seed": i,
        }
        for i, r in enumerate(runs)
        for s in steps
        for a in agents
    ]
    return pd.DataFrame(rows)


def test_csv_and_parquet_roundtrip(tmp_path):
    df = _table()
    df.to_csv(tmp_path / "c.csv", index=False)
    df.to_parquet(tmp_path / "c.parquet")
    for name in ("c.csv", "c.parquet"):
        d = cal.read_table(tmp_path / name)
        assert d.runs == ["a", "b"] and d.agents == ["X", "Y"]
        assert len(d.table) == 12
        assert list(d.hyper.columns) == ["lr", "seed"]
        np.testing.assert_allclose(d.hyper_values("lr"), [1e-3, 3e-3])
        np.testing.assert_array_equal(d.successes[:3], [5, 10, 15])


@pytest.mark.parametrize("drop", ["run", "step", "agent", "competence", "n_eval"])
def test_missing_column(drop):
    with pytest.raises(cal.DataError, match=f"missing column.*'{drop}'"):
        cal.CurveData.from_table(_table().drop(columns=drop))


def test_competence_out_of_range():
    df = _table()
    df.loc[3, "competence"] = 1.2
    with pytest.raises(cal.DataError, match=r"competence must lie in \[0, 1\].*rows \[3\]"):
        cal.CurveData.from_table(df)


def test_n_eval_below_one():
    df = _table()
    df.loc[2, "n_eval"] = 0
    with pytest.raises(cal.DataError, match="n_eval must be an integer >= 1"):
        cal.CurveData.from_table(df)


def test_duplicates():
    df = pd.concat([_table(), _table().iloc[[4]]], ignore_index=True)
    with pytest.raises(cal.DataError, match=r"duplicated \(run, step, agent\)"):
        cal.CurveData.from_table(df)


def test_non_monotone_steps():
    df = _table()
    df = pd.concat([df.iloc[[2]], df.drop(index=2)], ignore_index=True)  # step 10 before 0
    with pytest.raises(cal.DataError, match="not increasing"):
        cal.CurveData.from_table(df)


def test_negative_or_fractional_step():
    df = _table()
    df.loc[0, "step"] = -1
    with pytest.raises(cal.DataError, match="non-negative integer"):
        cal.CurveData.from_table(df)


def test_nan_dropped_with_warning_or_strict_error():
    df = _table()
    df.loc[[1, 5], "competence"] = np.nan
    with pytest.warns(cal.DataWarning, match="2 row"):
        d = cal.CurveData.from_table(df)
    assert len(d.table) == 10
    with pytest.raises(cal.DataError, match=r"2 row.*NaN"):
        cal.CurveData.from_table(df, strict=True)


def test_hyperparameter_must_be_constant_per_run():
    df = _table()
    df.loc[0, "lr"] = 5.0
    with pytest.raises(cal.DataError, match="one value per run"):
        cal.CurveData.from_table(df)


def test_unknown_format_and_missing_file(tmp_path):
    (tmp_path / "x.xlsx").write_text("nope")
    with pytest.raises(cal.DataError, match="unknown table format"):
        cal.read_table(tmp_path / "x.xlsx")
    with pytest.raises(cal.DataError, match="not found"):
        cal.read_table(tmp_path / "missing.csv")


def test_run_folder(tmp_path):
    from llm_runs.runlog import RunWriter, make_manifest  # noqa: F401

    run = tmp_path / "run1"
    run.mkdir()
    manifest = {
        "schema": "agentmotifs.runlog",
        "schema_version": 1,
        "run": "run1",
        "seed": 3,
        "agents": ["X", "Y"],
        "spec": {"nodes": ["X", "Y"], "edges": []},
        "config": {"rl": {"lr": 0.002}},
    }
    (run / "manifest.json").write_text(json.dumps(manifest))
    lines = [
        {"kind": "agent", "step": s, "agent": a, "competence": 0.5, "n_eval": 20}
        for s in (0, 5)
        for a in ("X", "Y")
    ]
    (run / "competence.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    d = cal.load_inputs([run])
    assert d.runs == ["run1"] and len(d.table) == 4
    assert d.hyper.loc["run1", "rl.lr"] == pytest.approx(0.002)
    assert d.hyper.loc["run1", "seed"] == 3
    d2 = cal.load_inputs([tmp_path])  # a folder of run folders
    assert d2.runs == ["run1"]


def test_tensorboard(tmp_path):
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    w = EventFileWriter(str(tmp_path / "tb"))
    for step in (0, 10, 20):
        for tag, v in (("comp/solver", 0.1 + step / 100), ("comp/critic", 0.2)):
            s = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=v)])
            w.add_event(event_pb2.Event(step=step, wall_time=0.0, summary=s))
    w.close()
    d = cal.read_tensorboard(tmp_path / "tb", {"X": "comp/solver", "Z": "comp/critic"}, n_eval=40)
    assert d.agents == ["X", "Z"] and len(d.table) == 6
    assert d.table["n_eval"].eq(40).all()
    with pytest.raises(cal.DataError, match="not found"):
        cal.read_tensorboard(tmp_path / "tb", {"X": "nope"})
    d2 = cal.load_inputs([tmp_path / "tb"], tb_tags={"X": "comp/solver"})
    assert d2.agents == ["X"]


def test_concat_rejects_same_run(tmp_path):
    _table(runs=("a",)).to_csv(tmp_path / "1.csv", index=False)
    _table(runs=("a",)).to_csv(tmp_path / "2.csv", index=False)
    with pytest.raises(cal.DataError, match="appears in input"):
        cal.load_inputs([tmp_path / "1.csv", tmp_path / "2.csv"])

"""Importers name every competence cell they cannot read (issue 72 §2): a string or a
boolean in verl JSONL, ``abc``, ``55%`` or ``inf`` in a W&B CSV, the torn last record of a
TensorBoard event file are counted and named by key and step with a warning, and refused
under ``strict``; empty cells (a key not logged at that step) are not values."""

from __future__ import annotations

import json

import pytest

import calibrate as cal
from calibrate._importers._events import torn_tail


def _verl(tmp_path):
    log = tmp_path / "v.jsonl"
    rows = [(0, 0.5), (10, "0.6"), (20, True), (30, 0.7)]
    log.write_text("".join(json.dumps({"step": s, "data": {"val/acc": v, "other": "x"}}) + "\n"
                           for s, v in rows))  # fmt: skip
    return log


def test_verl_strings_and_booleans_are_named_then_dropped_or_refused(tmp_path):
    log, m = _verl(tmp_path), cal.KeyMapping({"X": "val/acc"}, n_eval=100)
    with pytest.warns(cal.DataWarning) as got:
        d = cal.read_verl(log, m)
    msgs = [str(w.message) for w in got]
    hit = [x for x in msgs if "not finite numbers" in x]
    assert len(hit) == 1, msgs
    assert "2 value(s)" in hit[0] and "val/acc at step 10 ('0.6')" in hit[0]
    assert "val/acc at step 20 (True)" in hit[0] and "other" not in hit[0]  # unmapped key
    assert d.table["step"].tolist() == [0, 30]
    with pytest.raises(cal.DataError, match=r"2 value\(s\) that are not finite numbers"):
        cal.read_verl(log, m, strict=True)


def test_wandb_cells_that_are_no_numbers_are_named(tmp_path):
    from calibrate._importers._tracking import read_wandb_csv

    csv = tmp_path / "w.csv"
    csv.write_text("Step,acc\n0,0.5\n10,abc\n20,55%\n30,inf\n40,0.7\n50,\n")
    m = cal.KeyMapping({"X": "acc"}, n_eval=100)
    with pytest.warns(cal.DataWarning, match=r"3 value\(s\).*acc at step 10 \('abc'\), acc at "
                      r"step 20 \('55%'\), acc at step 30 \('inf'\)"):  # fmt: skip
        d = read_wandb_csv(csv, m)
    assert d.table["step"].tolist() == [0, 40]  # the empty cell at 50 is no value
    with pytest.raises(cal.DataError, match="not finite numbers"):
        read_wandb_csv(csv, m, strict=True)


def test_a_torn_tensorboard_record_is_said_or_refused(tmp_path):
    tb = pytest.importorskip("torch.utils.tensorboard")
    w = tb.SummaryWriter(str(tmp_path / "run"))
    for s in range(1, 5):
        w.add_scalar("eval/acc", 0.2 * s, s)
    w.close()
    (f,) = (tmp_path / "run").glob("events.out.tfevents*")
    assert torn_tail(f) == 0
    m = cal.KeyMapping({"X": "eval/acc"}, n_eval=32)
    whole = cal.read_events(tmp_path / "run", m)
    data = f.read_bytes()
    f.write_bytes(data[:-7])  # the writer killed inside its last record
    assert torn_tail(f) > 0
    with pytest.warns(cal.DataWarning, match="torn last record"):
        torn = cal.read_events(tmp_path / "run", m)
    assert len(torn.table) == len(whole.table) - 1
    with pytest.raises(cal.DataError, match="torn last record"):
        cal.read_events(tmp_path / "run", m, strict=True)


def test_trl_strings_and_booleans_are_named(tmp_path):
    out = tmp_path / "trl"
    out.mkdir()
    hist = [{"step": 0, "eval_acc": 0.5}, {"step": 10, "eval_acc": "0.6"},
            {"step": 20, "eval_acc": False}, {"step": 30, "eval_acc": 0.7}]  # fmt: skip
    (out / "trainer_state.json").write_text(json.dumps({"log_history": hist}))
    m = cal.KeyMapping({"X": "eval_acc"}, n_eval=100)
    with pytest.warns(cal.DataWarning, match=r"2 value\(s\).*eval_acc at step 10 \('0.6'\)"):
        d = cal.read_trl(out, m)
    assert d.table["step"].tolist() == [0, 30]
    with pytest.raises(cal.DataError, match="not finite numbers"):
        cal.read_trl(out, m, strict=True)

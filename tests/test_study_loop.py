"""What every predict-first study shares (paper/_study.py): forecasts stored once, stamped
with their time, never overwritten."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "paper"))

import _study  # noqa: E402


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

    with pytest.raises(RuntimeError, match="written while"):
        _study.store_once(path, make)
    assert json.loads(path.read_text()) == {"theirs": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["predictions.json"]

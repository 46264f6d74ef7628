"""A study's runs as one archive (``calibrate.archive_runs`` / ``restore_runs``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import calibrate
from simulate.common import OutputError


def test_archive_keeps_logs_and_designs_and_restores_them_byte_for_byte(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    kept = {
        "design.json": "{}",
        "a/pilots/r0_x_s0/competence.jsonl": '{"step": 0}\n',
        "a/pilots/r0_x_s0/manifest.json": '{"status": "finished"}',
        "a/pilots/round_0.json": '{"round": 0}',
        "heldout/h1/timing.json": "{}",
    }
    dropped = {
        "a/pilots/r0_x_s0/checkpoints/manifest.json": "{}",  # a checkpoint's, not the run's
        "a/fit/fits/C1-AND/summary.json": "{}",
        "heldout/h1/ckpt.pt": "weights",
        "logs/pilot.log": "log",
    }
    for rel, text in {**kept, **dropped}.items():
        (runs / rel).parent.mkdir(parents=True, exist_ok=True)
        (runs / rel).write_text(text)
    path = calibrate.archive_runs(runs, tmp_path / "runs.tar.gz")
    back = calibrate.restore_runs(path, tmp_path / "back")
    got = {str(p.relative_to(back)): p.read_text() for p in back.rglob("*") if p.is_file()}
    assert got == kept
    with pytest.raises(OutputError, match="made once"):
        calibrate.archive_runs(runs, path)
    with pytest.raises(OutputError, match="new folder"):
        calibrate.restore_runs(path, back)

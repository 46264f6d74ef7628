"""The shared output helpers: strict JSON, atomic files and folders, early checks, UTF-8 reads."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest

from simulate import (
    AgentmotifsError,
    OutputError,
    atomic_dir,
    check_writable,
    jsonable,
    read_text,
    write_json,
    write_text,
)


def test_json_is_strict_with_null_for_non_finite(tmp_path):
    obj = {"a": float("nan"), "b": [1.0, float("inf")], "c": np.array([0.5, np.nan]), "d": (1, 2)}
    assert jsonable(obj) == {"a": None, "b": [1.0, None], "c": [0.5, None], "d": [1, 2]}
    path = write_json(tmp_path / "x.json", obj)
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text, parse_constant=lambda c: pytest.fail(c))["c"] == [0.5, None]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = write_text(tmp_path / "f.txt", "old")

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        write_text(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_files_and_folders_get_the_umask_mode(tmp_path):
    old = os.umask(0o022)
    try:
        f = write_text(tmp_path / "f.txt", "x")
        with atomic_dir(tmp_path / "out") as tmp:
            (tmp / "a").write_text("1")
    finally:
        os.umask(old)
    assert stat.S_IMODE(f.stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o755


def test_atomic_dir_swaps_whole_or_keeps_the_old(tmp_path):
    out = tmp_path / "out"
    with atomic_dir(out) as tmp:
        (tmp / "a.json").write_text("1")
        (tmp / "old_only.txt").write_text("x")
    with pytest.raises(RuntimeError), atomic_dir(out) as tmp:
        (tmp / "a.json").write_text("2")
        raise RuntimeError("killed mid-save")
    assert sorted(p.name for p in out.iterdir()) == ["a.json", "old_only.txt"]
    assert (out / "a.json").read_text() == "1"
    with atomic_dir(out) as tmp:
        (tmp / "a.json").write_text("3")
    assert sorted(p.name for p in out.iterdir()) == ["a.json"]  # replaced whole, no mix
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no leftovers


def test_check_writable_names_the_problem(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(OutputError, match="exists and is not a folder"):
        check_writable(f)
    with pytest.raises(OutputError, match="is not a folder"):
        check_writable(f / "sub" / "out")
    assert check_writable(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    assert not (tmp_path / "new").exists()  # checking creates nothing


def test_read_text_errors_are_one_line(tmp_path):
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("nodes: [X, Y] # caf\xe9".encode("latin-1"))
    for path, match in ((bad, "not UTF-8"), (tmp_path / "none.yaml", "does not exist"),
                        (tmp_path, "is a folder")):  # fmt: skip
        with pytest.raises(AgentmotifsError, match=match) as err:
            read_text(path, what="network spec file")
        assert "\n" not in str(err.value) and "network spec file" in str(err.value)
    assert read_text(__file__).startswith('"""The shared output helpers')

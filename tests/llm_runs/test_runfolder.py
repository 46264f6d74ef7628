"""Run folders: never destroyed, spliced or shared; CLI errors before any training (no torch).

Each CLI case here exits before torch is loaded, so these tests run on a core install.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from llm_runs import runlog as rl
from llm_runs._runfolder import CKPT_FILE, LOCK_FILE, RunLock, open_run_folder, same_run
from llm_runs.config import TrainConfig
from simulate.common import OutputError


def _cli(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "llm_runs", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        **kw,
    )


def _one_line_error(res, *words):
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    for w in words:
        assert w in lines[0], lines[0]
    assert "Traceback" not in res.stderr


def _fake_run(folder, steps=60, logged=(0, 10, 20), ckpt=False, status=None):
    """A run folder as train writes it (manifest with the full config, a log)."""
    cfg = TrainConfig.from_dict({"steps": steps, "eval_every": 10, "model": {"preset": "micro"}})
    m = rl.make_manifest(
        run=folder.name,
        seed=0,
        agents=["X", "Y", "Z"],
        spec=cfg.network.network_spec().to_dict(),
        config=cfg.to_dict(),
    )
    with rl.RunWriter(folder, m) as w:
        for s in logged:
            w.write(
                [
                    {"kind": "agent", "step": s, "agent": a, "competence": 0.5, "n_eval": 8}
                    for a in "XYZ"
                ]
            )
    if ckpt:
        (folder / CKPT_FILE).parent.mkdir()
        (folder / CKPT_FILE).write_bytes(b"not a real checkpoint")
    if status:
        rl.update_manifest(folder, status=status)
    return folder


def _snapshot(folder):
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != LOCK_FILE
    }


def test_fresh_train_into_a_run_folder_refuses_without_overwrite(tmp_path):
    run = _fake_run(tmp_path / "r", ckpt=True)
    before = _snapshot(run)
    res = _cli("train", "--out", run, "--steps", "6")
    _one_line_error(res, "not empty", "--resume", "--overwrite")
    assert _snapshot(run) == before  # log and checkpoint untouched


def test_resume_needs_a_manifest_and_a_checkpoint(tmp_path):
    empty = tmp_path / "empty"
    _one_line_error(_cli("train", "--out", empty, "--resume"), "nothing to resume")
    assert not empty.exists()
    run = _fake_run(tmp_path / "r")  # killed before its first checkpoint
    before = _snapshot(run)
    _one_line_error(_cli("train", "--out", run, "--resume"), "no checkpoint", "--overwrite")
    assert _snapshot(run) == before
    (run / rl.MANIFEST_FILE).unlink()
    _one_line_error(_cli("train", "--out", run, "--resume"), "nothing to resume")
    _one_line_error(_cli("train", "--out", run, "--resume", "--overwrite"), "exclude")


def test_resume_keeps_the_manifest_config(tmp_path):
    run = _fake_run(tmp_path / "r", ckpt=True)
    before = _snapshot(run)
    _one_line_error(
        _cli("train", "--out", run, "--resume", "--steps", "600"),
        "steps=600 (run: 60)",
        "keeps the config",
    )
    _one_line_error(_cli("train", "--out", run, "--resume", "--set", "rl.lr=0.5"), "rl.lr=0.5")
    assert _snapshot(run) == before
    stored = TrainConfig.from_dict(rl.read_manifest(run)["config"])
    same = TrainConfig.from_dict({**stored.to_dict(), "threads": 2})
    assert same_run(stored, same, run).threads == 2  # threads may differ
    assert same_run(stored, None, run) is stored


def test_overwrite_replaces_the_whole_folder(tmp_path):
    run = _fake_run(tmp_path / "r", ckpt=True)
    lock, existing = open_run_folder(run, overwrite=True)
    try:
        assert not existing
        assert sorted(p.name for p in run.iterdir()) == [LOCK_FILE]  # no log, no checkpoint
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(".r.old")]
    finally:
        lock.release()
    plain = tmp_path / "notes"
    plain.mkdir()
    (plain / "todo.txt").write_text("keep me")
    with pytest.raises(OutputError, match="not a run folder"):
        open_run_folder(plain, overwrite=True)
    assert (plain / "todo.txt").read_text() == "keep me"


def test_unwritable_out_fails_before_training(tmp_path):
    (tmp_path / "file").write_text("x")
    _one_line_error(_cli("train", "--out", tmp_path / "file" / "run", "--steps", "6"), "--out")
    _one_line_error(_cli("train", "--out", tmp_path / "file", "--steps", "6"), "not a folder")


_HOLD = (
    "import sys, time; from llm_runs._runfolder import RunLock; "
    "RunLock(sys.argv[1]).acquire(); print('locked', flush=True); time.sleep(60)"
)


def test_second_writer_fails_at_once_and_a_stale_lock_is_taken_over(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(run)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert (run / LOCK_FILE).read_text().startswith(f"pid {holder.pid} ")
        with pytest.raises(OutputError, match=f"in use by pid {holder.pid} "):
            RunLock(run).acquire()
        t0 = time.perf_counter()
        res = _cli("train", "--out", run, "--steps", "6")
        _one_line_error(res, f"in use by pid {holder.pid}")
        assert time.perf_counter() - t0 < 60
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    # the killed holder left its PID in run.lock: the next writer takes it over, saying so
    code = (
        "import sys; from llm_runs._runfolder import RunLock; "
        "l = RunLock(sys.argv[1]).acquire(); print(open(l.path).read().split()[1]); l.release()"
    )
    res = subprocess.run([sys.executable, "-c", code, str(run)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert f"taking over the stale lock of pid {holder.pid}" in res.stderr
    assert "no longer running" in res.stderr
    assert res.stdout.strip().isdigit() and res.stdout.strip() != str(holder.pid)
    assert (run / LOCK_FILE).read_text() == ""  # released: no PID left, no message next time


def test_motif_spec_file_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"nodes: [X, Y]\n\xff\xfe edges: []\n")
    _one_line_error(_cli("train", "--motif", bad, "--out", tmp_path / "a"), "UTF-8")
    _one_line_error(_cli("train", "--config", bad, "--out", tmp_path / "a"), "UTF-8", "config")
    _one_line_error(
        _cli("train", "--motif", tmp_path / "missing.yaml", "--out", tmp_path / "b"), "not found"
    )
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"nodes": ["X", "Y"], "edges": [{"source": "X"}]}))
    _one_line_error(_cli("train", "--motif", broken, "--out", tmp_path / "c"), "broken.json")
    _one_line_error(_cli("train", "--motif", "C9", "--out", tmp_path / "d"), "neither a preset")
    ok = tmp_path / "net.yaml"
    ok.write_text("nodes: [X, Y]\nedges: [{source: X, target: Y, sign: 1}]\n")
    _one_line_error(
        _cli("train", "--motif", ok, "--gate", "OR", "--out", tmp_path / "e"), "--gate", "preset"
    )
    assert not any((tmp_path / x).exists() for x in "abcde")


def test_figure_errors_are_one_line(tmp_path):
    run = _fake_run(tmp_path / "r", logged=())
    _one_line_error(_cli("figure", run, "--out", tmp_path / "f.png"), "no evaluation rows")
    _one_line_error(_cli("figure", tmp_path / "nope", "--out", tmp_path / "f.png"), "no manifest")
    torn = _fake_run(tmp_path / "t")
    with open(torn / rl.COMPETENCE_FILE, "a") as fh:
        fh.write('{"kind": "agent", "st')
    _one_line_error(_cli("figure", torn, "--out", tmp_path / "f.png", "--strict"), "torn")
    res = _cli("figure", torn, "--out", tmp_path / "f.png")
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip().startswith("warning: ") and "torn last line" in res.stderr
    assert (tmp_path / "f.png").is_file()


def test_resume_removes_stale_checkpoint_temporaries(tmp_path):
    """A writer SIGKILLed mid-save leaves ``checkpoints/state.tmpPID``; resuming (lock held)
    deletes it and keeps the checkpoint itself (issue 36 §1)."""
    run = _fake_run(tmp_path / "r", ckpt=True)
    ckpt = run / CKPT_FILE
    stale = ckpt.with_suffix(".tmp12345")
    stale.write_bytes(b"half a checkpoint")
    kept = ckpt.read_bytes()
    lock, existing = open_run_folder(run, resume=True)
    try:
        assert existing and not stale.exists() and ckpt.read_bytes() == kept
    finally:
        lock.release()

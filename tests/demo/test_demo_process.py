"""The demo as a process (issue 36): its children die with it, its folder is locked, and
Ctrl-C stops it with one line on how to resume.

The slow tests start ``python -m calibrate demo --quick`` (micro sizes) in a subprocess and
stop it while a training child runs. A process counts as the demo's when its command line or
environment holds the test's temp folder (the demo's ``--out`` and an environment variable
every descendant inherits).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from calibrate._children import Stopped, spawn, stop_all, stop_children_on_interrupt
from llm_runs._runfolder import LOCK_FILE, RunLock

ROOT = Path(__file__).resolve().parents[2]


def _procs_with(marker: str) -> dict[int, str]:
    """pid -> command line of the live processes (not zombies) whose command line or
    environment holds ``marker``."""
    found: dict[int, str] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if not cmd:  # a zombie, or a kernel thread
                continue
            env = (d / "environ").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if marker in cmd or marker in env:
            found[int(d.name)] = cmd
    return found


def _running(pid: int) -> bool:
    """The process exists and is not a zombie (a dead child its new parent has not reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _wait_for(cond, timeout: float, what: str):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        got = cond()
        if got:
            return got
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def _env(tmp: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["AGENTMOTIFS_CACHE"] = str(cache)  # the micro base, pretrained once for the module
    env["AGENTMOTIFS_TEST_MARK"] = str(tmp)
    return env


def _demo(tmp: Path, cache: Path, *args: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "calibrate", "demo", "--quick", "--no-progress"]
    return subprocess.Popen(
        [*argv, "--out", str(tmp / "demo"), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp,
        env=_env(tmp, cache),
    )  # fmt: skip


def _training_child(tmp: Path, demo: subprocess.Popen):
    """Wait until the demo runs a training child (the pilots stage); its pids."""

    def children() -> dict[int, str]:
        assert demo.poll() is None, demo.communicate()
        procs = _procs_with(str(tmp))
        return {p: c for p, c in procs.items() if "llm_runs train" in c and p != demo.pid}

    return _wait_for(children, 900, "a training child of the demo")


def _no_survivor(tmp: Path) -> None:
    left = _wait_for(lambda: not _procs_with(str(tmp)) or None, 30, "the children to end")
    assert left, _procs_with(str(tmp))


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("base_cache")


@pytest.mark.slow
def test_sigkill_takes_the_children_along_and_a_rerun_takes_over_the_lock(tmp_path, cache):
    demo = _demo(tmp_path, cache)
    kids = _training_child(tmp_path, demo)
    demo.send_signal(signal.SIGKILL)
    demo.wait(30)
    _no_survivor(tmp_path)  # no pilot left training (and writing) into the folder
    assert not any(_running(p) for p in kids)
    lock = tmp_path / "demo" / LOCK_FILE
    assert lock.read_text().startswith(f"pid {demo.pid} ")  # left by the killed demo
    again = _demo(tmp_path, cache, "--stop-after", "base")
    out, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    assert f"taking over the stale lock of pid {demo.pid}" in err
    assert out.startswith("[1/6] base")
    assert lock.read_text() == ""  # released at the end
    _no_survivor(tmp_path)


@pytest.mark.slow
def test_ctrl_c_stops_the_children_and_prints_one_line_on_how_to_resume(tmp_path, cache):
    demo = _demo(tmp_path, cache)
    _training_child(tmp_path, demo)
    demo.send_signal(signal.SIGINT)
    out, err = demo.communicate(timeout=120)
    assert demo.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("interrupted during the pilots stage"), err
    assert lines[0].endswith(f"resume with: python -m calibrate demo --out {tmp_path / 'demo'} "
                             "--quick")  # fmt: skip
    assert "Traceback" not in err and "Error" not in err
    assert out.startswith("[1/6] base") and "[2/6]" not in out
    _no_survivor(tmp_path)
    assert (tmp_path / "demo" / LOCK_FILE).read_text() == ""


def test_a_demo_folder_in_use_is_refused_with_one_line(tmp_path):
    out = tmp_path / "demo"
    out.mkdir()
    with RunLock(out, what="demo folder"):
        r = subprocess.run(
            [sys.executable, "-m", "calibrate", "demo", "--quick", "--out", str(out)],
            capture_output=True, text=True, timeout=120, env=_env(tmp_path, tmp_path / "c"),
        )  # fmt: skip
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and lines[0].startswith("error: demo folder"), r.stderr
    assert f"in use by pid {os.getpid()} " in lines[0]
    assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE]  # nothing else written
    assert not (tmp_path / "c").exists()  # no stage ran


def test_spawned_children_die_with_their_parent(tmp_path):
    """A parent killed outright takes its spawned child along (Linux: PR_SET_PDEATHSIG)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux only")
    code = (
        "import sys, time; from calibrate._children import spawn; "
        "p = spawn([sys.executable, '-c', 'import time; time.sleep(300)', sys.argv[1]]); "
        "print(p.pid, flush=True); time.sleep(300)"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True,
        env=_env(tmp_path, tmp_path / "c"),
    )  # fmt: skip
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert child in _procs_with(str(tmp_path))
    parent.kill()
    parent.wait(30)
    _no_survivor(tmp_path)


def test_after_an_interrupt_no_child_is_started_and_the_running_ones_are_stopped():
    with stop_children_on_interrupt():
        p = spawn([sys.executable, "-c", "import time; time.sleep(300)"])
        assert stop_all(timeout=5) == 1
        assert p.returncode == -signal.SIGTERM
        with pytest.raises(Stopped):
            spawn([sys.executable, "-c", "pass"])
    q = spawn([sys.executable, "-c", "pass"])  # the block's end allows new children again
    assert q.wait(30) == 0

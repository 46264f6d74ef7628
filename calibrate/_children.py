"""A study's child commands (plain Python, torch-free): run one with its output in a log
and its progress followed (:func:`run_command`), and make it die with the process that started it.

The demo runs every stage as a child command (training runs, ``calibrate fit``, ...). Each
child is started by :func:`spawn`:

* in a session (process group) of its own, so a Ctrl-C at the terminal reaches only the
  parent, which stops its children in order (:func:`stop_children_on_interrupt`);
* on Linux with ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, so a parent killed outright (SIGKILL,
  out of memory) takes its children with it instead of leaving them running and writing.

Once :func:`stop_all` has run, :func:`spawn` starts nothing more (a thread pool's queued
tasks fail at once instead of starting training after an interrupt).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from simulate.common import AgentmotifsError

__all__ = [
    "Bar",
    "StageError",
    "Stopped",
    "progress_of",
    "run_command",
    "spawn",
    "stop",
    "stop_all",
    "stop_children_on_interrupt",
]

_PR_SET_PDEATHSIG = 1
_lock = threading.RLock()
_live: set[subprocess.Popen] = set()
_stopping = False


class Stopped(RuntimeError):
    """:func:`spawn` was called after :func:`stop_all` (the caller is being interrupted)."""


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()  # looked up here, not in the forked child


def _die_with_parent(parent: int) -> Callable[[], None] | None:
    """The ``preexec_fn`` of a child: SIGKILL when ``parent`` ends (Linux), and exit at once
    if it already ended between the fork and now."""
    prctl = _PRCTL
    if prctl is None:
        return None

    def pre() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return pre


# A child is forked only to call prctl and exec (no JAX runs in it), so JAX's warning at
# every fork of a process that has used JAX (a pilot round's forecast) says nothing here.
warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)


def spawn(args: Sequence[str], **popen: Any) -> subprocess.Popen:
    """Start ``args`` as a child that dies with this process (see the module docstring).

    Raises:
        Stopped: The children are being stopped (:func:`stop_all` ran).
    """
    main = threading.current_thread() is threading.main_thread()
    with _lock:
        if _stopping:
            raise Stopped("stopping: no new child process is started")
        # no Ctrl-C between the fork and the registration: the handler would miss the child
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if main else None
        try:
            proc = subprocess.Popen(
                list(args),
                start_new_session=True,
                preexec_fn=_die_with_parent(os.getpid()),  # the child calls only prctl
                **popen,
            )
            _live.add(proc)
        finally:
            if old is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)
    return proc


def forget(proc: subprocess.Popen) -> None:
    """Drop an ended child from the registry."""
    with _lock:
        _live.discard(proc)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _end(procs: list[subprocess.Popen], timeout: float) -> None:
    for p in procs:
        _signal_group(p, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            _signal_group(p, signal.SIGKILL)
            p.wait()


def stop(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Stop one child and its process group (SIGTERM, then SIGKILL after ``timeout`` s)."""
    _end([proc], timeout)


def stop_all(timeout: float = 10.0) -> int:
    """Stop every live child as :func:`stop` does and start no new one (until the
    :func:`stop_children_on_interrupt` block ends); returns how many were running."""
    global _stopping
    with _lock:
        _stopping = True
        procs = [p for p in _live if p.poll() is None]
    _end(procs, timeout)
    return len(procs)


@contextlib.contextmanager
def stop_children_on_interrupt() -> Iterator[None]:
    """Within the block, SIGINT (Ctrl-C) stops every child first, then raises
    :class:`KeyboardInterrupt` in the main thread; further SIGINTs while it unwinds are
    ignored. Outside the main thread it does nothing (signals go to the main thread)."""
    global _stopping
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired = threading.Event()

    def handler(signum: int, frame: object) -> None:
        if fired.is_set():
            return
        fired.set()
        stop_all()
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        with _lock:
            _stopping = False


#: A tqdm frame ``desc: 45%|####  | 9/20 [...`` (group 1: desc) or a ``[k/n] ...`` line.
_TQDM = re.compile(r"^\s*(.*?):\s*\d+%\|.*?\|\s*(\d+)/(\d+)\s*\[")
_COUNTER = re.compile(r"^\[(\d+)/(\d+)\]")


class StageError(AgentmotifsError):
    """A stage's command failed (its log names the reason)."""


class Bar:
    """One progress bar over the children of a stage (they report ``k/n`` as they go);
    ``total`` None: the children's ``n``."""

    def __init__(self, desc: str, total: int | None, enabled: bool) -> None:
        self._auto = total is None
        self._lock = threading.Lock()
        self.seen = 0
        self._bar = None
        if enabled:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=f"  {desc}", leave=False, dynamic_ncols=True)

    def add(self, n: int, total: int | None = None) -> None:
        self.seen += n
        if self._bar is None:
            return
        with self._lock:
            if self._auto and total is not None and total != self._bar.total:
                self._bar.total = total
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def run_command(
    args: Sequence[str],
    log: Path,
    bar: Bar | None = None,
    *,
    tag: str | None = None,
    cwd: str | None = None,
) -> str:
    """Run one command, its output appended to ``log``, following its progress.

    Args:
        args: The command.
        log: Log file (appended to).
        bar: Advanced by the increase of ``k`` in each ``k/n`` the command prints: the
            frames of its tqdm bar named ``tag`` (other bars, such as a library's, are
            ignored), or without ``tag`` its ``[k/n] ...`` lines (then ``n`` is the bar's
            total).
        tag: Description of the command's own tqdm bar.
        cwd: Working directory of the command (None: this process's).

    Returns:
        The command's standard output.

    Raises:
        StageError: It exited with a non-zero status.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    out_lines: list[str] = []
    state: dict[str, int] = {}
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(args)}\n")
        fh.flush()
        try:
            proc = spawn(
                args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1, cwd=cwd
            )
        except Stopped as err:
            raise StageError(f"`{' '.join(args[1:4])} ...` not started: {err}") from None
        err_thread = threading.Thread(target=_follow, args=(proc.stderr, fh, bar, tag))
        err_thread.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                out_lines.append(line)
                fh.write(line)
                _advance(line, bar, tag, state)
        except BaseException:  # Ctrl-C, or the log cannot be written: the child ends first
            stop(proc)
            raise
        finally:  # the log closes after the child and its stderr reader have ended
            rc = proc.wait()
            err_thread.join()
            forget(proc)
    if rc != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:]
        last = tail[0] if tail else ""
        raise StageError(f"`{' '.join(args[1:4])} ...` failed (exit {rc}): {last} (log: {log})")
    return "".join(out_lines)


def _follow(stream: Any, fh: Any, bar: Bar | None, tag: str | None) -> None:
    """Copy a child's standard error to the log (tqdm's carriage-return frames as lines)
    and follow its progress."""
    state: dict[str, int] = {}
    buf = ""
    while True:
        ch = stream.read(256)
        if not ch:
            break
        buf += ch
        parts = re.split(r"[\r\n]", buf)
        buf = parts.pop()
        for part in parts:
            if part.strip():
                if not _TQDM.search(part):
                    fh.write(part + "\n")
                _advance(part, bar, tag, state)
    if buf.strip():
        fh.write(buf + "\n")


def progress_of(text: str, tag: str | None) -> tuple[int, int] | None:
    """``(k, n)`` of one line of a command's output: a frame of its tqdm bar named ``tag``,
    or (``tag`` None) a ``[k/n] ...`` line; None for anything else."""
    if tag is None:
        m = _COUNTER.match(text)
        return (int(m.group(1)), int(m.group(2))) if m else None
    m = _TQDM.match(text)
    if m is None or m.group(1).strip() != tag:
        return None
    return int(m.group(2)), int(m.group(3))


def _advance(text: str, bar: Bar | None, tag: str | None, state: dict[str, int]) -> None:
    kn = progress_of(text, tag)
    if bar is None or kn is None:
        return
    k, n = kn
    last = state.get("k", 0)
    if k > last:
        bar.add(k - last, n)
        state["k"] = k

"""Run-folder lifecycle (torch-free): one writer at a time, never destroy, never splice.

* :class:`RunLock`: ``run.lock`` in the run folder, held with ``flock`` for the whole run and
  holding the writer's PID. A second writer fails at once naming that PID; a lock left by a
  killed process (its PID no longer running) is taken over with a message.
* :func:`open_run_folder`: create or check the folder and take its lock. A new run needs an
  empty folder (or ``overwrite``, which replaces a previous run folder as a whole).
* :func:`check_resumable`: what ``python -m llm_runs train --resume`` requires;
  :func:`same_run`: a resumed run keeps the config in its manifest.
* :func:`check_device`: a CUDA device that is not there is a config error, before any work.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import socket
import sys
from pathlib import Path
from typing import Any

from simulate import sibling
from simulate.common import ConfigError, OutputError, check_writable

from .config import TrainConfig
from .runlog import COMPETENCE_FILE, MANIFEST_FILE, RunLogError, is_terminal, read_manifest

__all__ = [
    "CKPT_FILE",
    "LOCK_FILE",
    "RunLock",
    "check_device",
    "check_resumable",
    "embed_spec",
    "open_run_folder",
    "preflight",
    "same_run",
]

LOCK_FILE = "run.lock"
CKPT_FILE = "checkpoints/state.pt"
_RUN_MARKERS = (MANIFEST_FILE, COMPETENCE_FILE, "checkpoints")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunLock:
    """Exclusive lock of a run folder (``run.lock``: ``flock`` plus the holder's PID).

    Args:
        folder: The run folder (must exist).
        what: What the folder is, for the messages (the demo locks its folder too).

    Raises:
        OutputError: On :meth:`acquire`, when another process holds the lock.
    """

    def __init__(self, folder: str | Path, what: str = "run folder") -> None:
        self.folder = Path(folder)
        self.what = what
        self.path = self.folder / LOCK_FILE
        self._fd: int | None = None

    def _holder(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return ""

    def acquire(self) -> RunLock:
        """Take the lock now or fail at once; returns self."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            who = self._holder() or "another process"
            raise OutputError(
                f"{self.what} {str(self.folder)!r} is in use by {who} (lock {LOCK_FILE}); "
                "wait for it to end or stop it"
            ) from None
        old = self._holder()
        pid = old.split()[1] if old.startswith("pid ") and len(old.split()) > 1 else ""
        if pid.isdigit() and int(pid) != os.getpid():
            state = "no longer running" if not _alive(int(pid)) else "on another host or stale"
            print(
                f"note: taking over the stale lock of {old} ({state}) in {self.folder}",
                file=sys.stderr,
            )
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        os.fsync(fd)
        self._fd = fd
        return self

    def release(self) -> None:
        """Clear the PID and drop the lock (the empty lock file stays; readers ignore it)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _contents(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != LOCK_FILE)


def _check_new(out: Path, found: list[str], overwrite: bool) -> None:
    is_run = any(m in found for m in _RUN_MARKERS)
    if not overwrite and not is_run:  # advise only what would work: a user's folder stays
        raise OutputError(
            f"--out {str(out)!r} is a folder of other files ({', '.join(found[:4])}), not a "
            "run folder; it is never replaced: choose a new or empty folder"
        )
    if not overwrite:
        raise OutputError(
            f"run folder {str(out)!r} is not empty ({', '.join(found[:4])}); continue it "
            "with --resume, or replace it with --overwrite"
        )
    if not is_run:
        raise OutputError(
            f"--overwrite: {str(out)!r} is not a run folder (no {MANIFEST_FILE}, "
            f"{COMPETENCE_FILE} or checkpoints/); refusing to delete it"
        )


def writer_gone(folder: str | Path) -> str | None:
    """Why the process writing the run in ``folder`` is gone (its ``run.lock`` is held by
    nobody: the writer died without ending the run), or None while a writer holds it (or
    the folder has no lock). Takes no lock: it tests one on a read-only descriptor."""
    path = Path(folder) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return None  # held: the writer lives
        fcntl.flock(fd, fcntl.LOCK_UN)
        holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
    finally:
        os.close(fd)
    return f"its writer ({holder}) is no longer running" if holder else "no process writes it"


def _check_link(out: Path, overwrite: bool) -> None:
    """A run folder given as a symbolic link: a dangling one is refused (nothing to
    create), and ``--overwrite`` would replace the user's link, not the run it points to.

    Raises:
        OutputError: a dangling link, or a link with ``overwrite``.
    """
    if not out.is_symlink():
        return
    target = os.readlink(out)
    if not out.exists():
        raise OutputError(
            f"--out {str(out)!r} is a symbolic link to {target!r}, which does not exist: "
            "create the folder or give a new path"
        )
    if overwrite:
        raise OutputError(
            f"--out {str(out)!r} is a symbolic link (to {target!r}); --overwrite would replace "
            "the link itself: give the folder it points to"
        )


def preflight(out: str | Path, *, resume: bool = False, overwrite: bool = False) -> None:
    """The checks of :func:`open_run_folder` (and :func:`check_resumable` when resuming),
    without creating or locking anything: a CLI fails on them before loading torch."""
    if resume and overwrite:
        raise OutputError("--resume and --overwrite exclude each other")
    _check_link(Path(out), overwrite)
    out = check_writable(out)
    if resume:
        check_resumable(out)
    if not out.is_dir():
        return
    if (out / LOCK_FILE).exists():
        RunLock(out).acquire().release()  # in use: fails now
    found = _contents(out)
    if found and not resume:
        _check_new(out, found, overwrite)


def open_run_folder(
    out: str | Path, *, resume: bool = False, overwrite: bool = False
) -> tuple[RunLock, bool]:
    """Create or check a run folder and take its lock.

    Args:
        out: The run folder.
        resume: The caller continues a run: an existing folder is kept as it is.
        overwrite: A new run may replace a previous run folder (manifest, log, checkpoints and
            all: the old folder is renamed away as a whole, then deleted).

    Returns:
        The held lock, and whether the folder holds a previous run (``resume`` only).

    Raises:
        OutputError: ``out`` not writable; in use by another process; a new run into a
            non-empty folder without ``overwrite``; ``overwrite`` of a folder that is not a
            run folder.
    """
    if resume and overwrite:
        raise OutputError("--resume and --overwrite exclude each other")
    _check_link(Path(out), overwrite)
    out = check_writable(out)
    out.mkdir(parents=True, exist_ok=True)
    lock = RunLock(out).acquire()
    try:
        found = _contents(out)
        if not found:
            return lock, False
        if resume:
            _drop_stale_checkpoints(out)  # a writer killed mid-save left them; we hold the lock
            return lock, True
        _check_new(out, found, overwrite)
        trash = sibling(out, f"old-{os.getpid()}")
        shutil.rmtree(trash, ignore_errors=True)
        os.replace(out, trash)  # the old run disappears as a whole
        old = lock
        try:
            out.mkdir()
            lock = RunLock(out).acquire()
        finally:
            old.release()
            shutil.rmtree(trash, ignore_errors=True)
        return lock, False
    except BaseException:
        lock.release()
        raise


def _drop_stale_checkpoints(out: Path) -> None:
    """Delete ``checkpoints/state.tmpPID`` files of killed writers (the checkpoint is written
    to such a file, then renamed; only the lock holder writes, so none is in use now)."""
    ckpt = out / CKPT_FILE
    for tmp in ckpt.parent.glob(f"{ckpt.stem}.tmp*"):
        with contextlib.suppress(OSError):
            tmp.unlink()


def check_resumable(out: str | Path) -> dict:
    """What ``--resume`` needs: a manifest, and a checkpoint unless the run already ended.

    Returns:
        The manifest.

    Raises:
        RunLogError: One line saying what is missing.
    """
    out = Path(out)
    if not (out / MANIFEST_FILE).is_file():
        raise RunLogError(
            f"--resume: nothing to resume in {str(out)!r} (no {MANIFEST_FILE}); "
            "start a new run without --resume"
        )
    manifest = read_manifest(out)
    if is_terminal(manifest.get("status")):
        return manifest
    if not (out / CKPT_FILE).is_file():
        raise RunLogError(
            f"--resume: {str(out)!r} has no checkpoint ({CKPT_FILE}; the run stopped before "
            "its first one); start it again with --overwrite"
        )
    return manifest


def check_device(device: str) -> None:
    """Fail with a :class:`ConfigError` when ``device`` is a CUDA device torch cannot use."""
    if not device.startswith("cuda"):
        return
    import torch

    if not torch.cuda.is_available():
        build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
        raise ConfigError(
            f"device: {device!r} asked for, but torch ({torch.__version__}, {build}) finds no "
            "CUDA device; use --device cpu"
        )
    _, _, idx = device.partition(":")
    n = torch.cuda.device_count()
    if idx and (not idx.isdigit() or int(idx) >= n):
        raise ConfigError(f"device: {device!r} does not exist ({n} CUDA device(s))")


def embed_spec(cfg: TrainConfig) -> TrainConfig:
    """A config whose network spec file is read into ``network.spec`` (resumable anywhere)."""
    net = cfg.network
    if net.spec is not None or net.spec_path is None:
        return cfg
    spec = net.network_spec().to_dict()
    return dataclasses.replace(cfg, network=dataclasses.replace(net, spec=spec))


def _flat(d: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(d, dict) or not d:
        return {prefix: d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def same_run(stored: TrainConfig, cfg: TrainConfig | None, out: str | Path) -> TrainConfig:
    """The stored config, after checking that ``cfg`` (if given) asks for the same run."""
    if cfg is None:
        return stored
    a = _flat(json.loads(json.dumps(embed_spec(stored).to_dict())))
    b = _flat(json.loads(json.dumps(embed_spec(cfg).to_dict())))
    diff = [k for k in sorted(set(a) | set(b)) if k != "threads" and a.get(k) != b.get(k)]
    if diff:
        shown = ", ".join(f"{k}={b.get(k)!r} (run: {a.get(k)!r})" for k in diff[:4])
        more = f" and {len(diff) - 4} more" if len(diff) > 4 else ""
        raise ConfigError(
            f"resume: the config differs from the run in {str(out)!r}: {shown}{more}; "
            "a resumed run keeps the config in its manifest (drop those options)"
        )
    return dataclasses.replace(stored, threads=cfg.threads)

"""The one overwrite rule of every command that writes (plain Python, no JAX).

A command writes a **new path**, or a path **this same command wrote** (recorded in the
folder's marker file :data:`MARK_FILE`), or, with an explicit ``--overwrite``, replaces a
file or folder — and ``--overwrite`` of a folder replaces only one the same command made. A
user's own file is never replaced without the flag, and a folder of unrelated files never:

* :func:`claim_folder` (a command that writes a whole folder, such as ``simulate phase``):
  new or empty, else the same command's folder and ``overwrite``.
* :func:`claim_files` (a command that adds named files to a folder, such as ``calibrate
  predict --out``): the folder is new or empty, or made by a command in ``into``; each named
  file that exists was written by this command (or ``overwrite``).
* :func:`claim_file` (one file such as ``--plot fig.png``): a new file, or ``overwrite``.
* :func:`mark_output`: record, after writing, which command wrote which files.
* :func:`output_lock`: hold an output (a folder or file) for the whole command, so that a
  second command into the same ``--out`` is refused while the first runs (two fits three
  seconds apart into one folder lost the first).

Every refusal is an :class:`~simulate.OutputError` (the CLIs print ``error: …``, exit 2),
raised before any work. Folders written before markers existed are recognised by their
files (:func:`folder_kind`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from collections.abc import Iterable, Iterator
from pathlib import Path

from ._errors import OutputError
from ._io import check_writable, sibling, write_json

__all__ = [
    "MARK_FILE",
    "PLOT_SUFFIXES",
    "claim_file",
    "claim_files",
    "claim_folder",
    "folder_kind",
    "mark_output",
    "output_lock",
]

MARK_FILE = ".agentmotifs-output.json"
#: the figure formats matplotlib writes (``--plot`` checks the suffix before the work)
PLOT_SUFFIXES = (".png", ".pdf", ".svg", ".svgz", ".eps", ".ps", ".jpg", ".jpeg", ".tif",
                 ".tiff", ".webp", ".pgf")  # fmt: skip

#: command -> files whose presence shows that it made a folder (folders without a marker)
_SIGNS: dict[str, tuple[tuple[str, ...], ...]] = {
    "llm_runs train": (("manifest.json",), ("competence.jsonl",), ("checkpoints",)),
    "calibrate fit": (("config.json", "network.json"), ("selection.json",)),
    "simulate phase": (("summary.json", "arrays.npz"), ("summary.json", "phase.png")),
    "simulate demo": (("presets.json", "presets.png"),),
}
_MAX_NAME = 255  # bytes of one path component on the file systems we meet


def _marker(folder: Path) -> dict:
    try:
        data = json.loads((folder / MARK_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def folder_kind(folder: str | Path) -> str | None:
    """The command that made ``folder`` (its marker, else its files), or None."""
    folder = Path(folder)
    made = _marker(folder).get("made_by")
    if isinstance(made, str):
        return made
    for command, signs in _SIGNS.items():
        if any(all((folder / f).exists() for f in sign) for sign in signs):
            return command
    return None


def _written_by(folder: Path, name: str) -> str | None:
    files = _marker(folder).get("files", {})
    return files.get(name) if isinstance(files, dict) else None


def _check_name(path: Path, what: str) -> None:
    for part in path.parts:
        if len(os.fsencode(part)) > _MAX_NAME:
            raise OutputError(
                f"{what}: the name {part[:40]!r}... is {len(os.fsencode(part))} bytes long; "
                f"a file name may have at most {_MAX_NAME}"
            )


def _user_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != MARK_FILE)


def claim_folder(
    path: str | Path, *, command: str, overwrite: bool = False, what: str = "--out"
) -> Path:
    """Check, before the work, that ``command`` may write the whole folder ``path``.

    Raises:
        OutputError: ``path`` is not writable, holds files without ``overwrite``, or (with
            ``overwrite``) holds files that ``command`` did not make.
    """
    path = Path(path)
    _check_name(path, what)
    path = check_writable(path, what=what)
    if not path.is_dir():
        return path
    found = _user_files(path)
    if not found:
        return path
    kind = folder_kind(path)
    if kind != command:
        made = f"made by {kind}" if kind else f"with other files ({', '.join(found[:3])})"
        raise OutputError(
            f"{what} {str(path)!r} is a folder {made}, not by {command}; it is never "
            "replaced: choose a new or empty folder"
        )
    if not overwrite:
        raise OutputError(
            f"{what} {str(path)!r} holds an earlier {command} output; choose a new folder or "
            "pass --overwrite to replace it"
        )
    return path


def claim_files(
    folder: str | Path,
    names: Iterable[str],
    *,
    command: str,
    into: Iterable[str] = (),
    overwrite: bool | None = False,
    what: str = "--out",
) -> Path:
    """Check, before the work, that ``command`` may write the files ``names`` into ``folder``.

    Args:
        folder: The output folder (need not exist).
        names: The files the command writes there.
        command: This command (``"calibrate predict"``).
        into: The other commands whose folders it may add files to (``"calibrate fit"``).
        overwrite: Replace a named file this command did not write (never a folder's other
            files, and never into a folder made by another command); None: the command
            offers no such flag (``recommend`` never replaces a user's ``best.yaml``).
        what: The flag, for the message.
    """
    folder = Path(folder)
    _check_name(folder, what)
    folder = check_writable(folder, what=what)
    if not folder.is_dir() or not _user_files(folder):
        return folder
    kind = folder_kind(folder)
    if kind != command and kind not in set(into):
        made = (
            f"made by {kind}"
            if kind
            else f"with other files ({', '.join(_user_files(folder)[:3])})"
        )
        raise OutputError(
            f"{what} {str(folder)!r} is a folder {made}; {command} writes only into a new or "
            "empty folder or its own: choose another folder"
        )
    for name in names:
        if (folder / name).exists() and _written_by(folder, name) != command and not overwrite:
            flag = "" if overwrite is None else " or pass --overwrite"
            raise OutputError(
                f"{what} {str(folder)!r} already holds a {name} that {command} did not write; "
                f"it is not replaced: choose another folder{flag}"
            )
    return folder


def claim_file(
    path: str | Path,
    *,
    overwrite: bool = False,
    what: str = "--out",
    suffixes: Iterable[str] | None = None,
) -> Path:
    """Check, before the work, that one output file may be written at ``path``: its folder is
    writable, its suffix is one of ``suffixes`` (when given), and it is new (or ``overwrite``).
    """
    path = Path(path)
    _check_name(path, what)
    allowed = tuple(suffixes) if suffixes is not None else None
    if allowed is not None and path.suffix.lower() not in allowed:
        raise OutputError(
            f"{what} {str(path)!r}: unknown file type {path.suffix or '(none)'!r}; use one of "
            f"{', '.join(allowed)}"
        )
    if path.is_dir():
        raise OutputError(f"{what} {str(path)!r} is a folder, not a file")
    check_writable(path.resolve().parent, what=what)
    if path.exists() and not overwrite:
        raise OutputError(
            f"{what} {str(path)!r} already exists; it is not replaced: choose a new name or "
            "pass --overwrite"
        )
    return path


def mark_output(
    folder: str | Path, command: str, names: Iterable[str] = (), *, made: bool = False
) -> None:
    """Record in ``folder``'s marker that ``command`` wrote the files ``names``; the folder
    counts as made by ``command`` with ``made``, or when it holds nothing else."""
    folder = Path(folder)
    names = list(names)
    data = _marker(folder)
    files = data.get("files")
    files = files if isinstance(files, dict) else {}
    files.update(dict.fromkeys(names, command))
    data["files"] = files
    others = [n for n in _user_files(folder) if n not in set(names)] if folder.is_dir() else []
    if made or ("made_by" not in data and not others):
        data["made_by"] = command
    write_json(folder / MARK_FILE, data)


@contextlib.contextmanager
def output_lock(path: str | Path, *, command: str, what: str = "--out") -> Iterator[Path]:
    """Hold ``path`` (an output folder or file, which need not exist) for the whole command.

    The lock is a hidden file beside the output (``.NAME.lock``, holding ``flock`` and the
    holder's PID), so it survives the output being swapped into place as a whole and leaves
    no file inside it; it is removed on exit (a killed command's lock file is stale and is
    taken over: the kernel drops ``flock`` with the process).

    Raises:
        OutputError: Another process holds the lock (a second command into the same output).
    """
    path = Path(path)
    lock = sibling(path.absolute(), "lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise OutputError(
                f"{what} {str(path)!r} is in use by {holder} (lock {lock.name}); wait for it "
                "to end or choose another output"
            ) from None
        try:  # the file we locked is still the lock's path (not unlinked by its holder)
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{command} pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        yield path
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)

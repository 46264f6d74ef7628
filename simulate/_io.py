"""Atomic, honest file output shared by every package (plain Python, no JAX).

* :func:`jsonable` / :func:`write_json`: JSON with ``null`` for NaN/inf (never bare ``NaN``),
  written atomically (temporary file + rename).
* :func:`check_writable`: fail *before* the work when an output folder cannot be written.
* :func:`atomic_dir`: build an output folder under a temporary name and rename it into place, so
  a killed command leaves either the old folder or the new one, never a mix.
* :func:`read_text`: read a user file as UTF-8 with a one-line error instead of a traceback.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import AgentmotifsError, OutputError
from ._values import load_yaml


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


__all__ = [
    "atomic_dir",
    "check_writable",
    "jsonable",
    "read_json_object",
    "read_structured",
    "read_text",
    "save_figure",
    "sibling",
    "write_json",
    "write_text",
]


def utc_now() -> str:
    """The time in UTC, ISO 8601 to the second (the stamp of stored forecasts and logs)."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def jsonable(value: Any) -> Any:
    """Arrays → lists, NaN/inf → None (JSON has no NaN), tuples → lists, recursively."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "tolist") and not isinstance(value, str):
        return jsonable(np.asarray(value).tolist())
    if isinstance(value, complex):
        return [jsonable(value.real), jsonable(value.imag)]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (same-folder temporary file, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=sibling(path, "").name, suffix=".tmp", dir=path.parent)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the mode a plain open would
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def write_json(path: str | Path, obj: Any, *, indent: int | None = 2) -> Path:
    """Write ``obj`` as strict JSON (NaN/inf → null) atomically; returns the path."""
    text = json.dumps(jsonable(obj), indent=indent, allow_nan=False)
    return write_text(path, text + "\n")


def check_writable(path: str | Path, *, what: str = "--out") -> Path:
    """Fail now (:class:`OutputError`) if a folder cannot be created or written at ``path``.

    Args:
        path: the output folder (need not exist yet).
        what: how the CLI names it, for the message.

    Returns:
        The path as a :class:`~pathlib.Path`.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{what} {str(path)!r} exists and is not a folder")
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise OutputError(f"{what} {str(path)!r}: {str(probe)!r} is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise OutputError(f"{what} {str(path)!r} is not writable (no write permission on {probe})")
    try:  # permissions can lie (root, /proc, a read-only mount): try a nameless file
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as err:
        raise OutputError(
            f"{what} {str(path)!r} is not writable ({err.strerror or err} in {probe})"
        ) from None
    return path


_MAX_NAME = 255  # bytes of one path component on the file systems we meet


def sibling(path: str | Path, tag: str) -> Path:
    """A hidden working name beside ``path`` (``.NAME.TAG``): a temporary folder or the old
    folder a swap moves away. A name too long for the file system (``.NAME.TAG`` over 255
    bytes, as a 250-character ``--out`` is) is shortened to a hash of ``NAME``."""
    path = Path(path)
    name = f".{path.name}.{tag}"
    if len(name.encode()) > _MAX_NAME - 12:  # room for mkdtemp's random suffix
        import hashlib

        name = f".{hashlib.sha1(path.name.encode()).hexdigest()[:16]}.{tag}"
    return path.parent / name


@contextlib.contextmanager
def atomic_dir(path: str | Path, *, what: str = "--out") -> Iterator[Path]:
    """Build the folder ``path`` atomically: yield a temporary sibling, then swap it into place.

    On success the old folder (if any) is replaced as a whole; if the body raises or the process
    dies, ``path`` is untouched (a stale ``.path.tmp-*`` sibling may remain and is harmless).
    """
    path = check_writable(path, what=what)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=sibling(path, "tmp-").name, dir=path.parent))
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; give the mode mkdir would
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if path.exists():
        old = sibling(path, f"old-{os.getpid()}")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(path, old)
    os.replace(tmp, path)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def read_text(path: str | Path, *, what: str = "file") -> str:
    """Read a user-given text file as UTF-8; a missing, unreadable or non-UTF-8 file is an error.

    Raises:
        AgentmotifsError: one line naming the file and the problem.
    """
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AgentmotifsError(f"{what} {str(p)!r} does not exist") from None
    except IsADirectoryError:
        raise AgentmotifsError(f"{what} {str(p)!r} is a folder, not a file") from None
    except UnicodeDecodeError as err:
        raise AgentmotifsError(
            f"{what} {str(p)!r} is not UTF-8 text (byte {err.start}: {err.reason})"
        ) from None
    except OSError as err:
        raise AgentmotifsError(f"{what} {str(p)!r} cannot be read: {err.strerror}") from None


def read_structured(
    path: str | Path, *, what: str, error: type[Exception] = AgentmotifsError
) -> Any:
    """Parse a user-given ``.yaml``/``.yml`` (YAML, with :func:`~simulate.load_yaml`'s
    YAML 1.2 scalars) or other (JSON) file.

    Every problem is one line raised as ``error``: ``"{what} 'PATH' not found: it does
    not exist"``, an unreadable file, or ``"{what} PATH: cannot parse (...)"`` (YAML's
    multi-line messages joined). The config, network-spec and search-space readers use it.
    """
    p = Path(path)
    if not p.exists():
        raise error(f"{what} {str(p)!r} not found: it does not exist")
    try:
        text = read_text(p, what=what)
    except AgentmotifsError as err:
        raise error(str(err)) from None
    try:
        if p.suffix.lower() in (".yaml", ".yml"):
            return load_yaml(text)  # YAML 1.2 scalars: 1e-3 a float, yes a string
        return json.loads(text)
    except Exception as err:  # parse errors of either format
        raise error(f"{what} {p}: cannot parse ({' '.join(str(err).split())})") from None


def read_json_object(path: str | Path, *, what: str = "file") -> dict[str, Any]:
    """Read a user-given UTF-8 JSON file that must hold an object; one-line errors.

    Raises:
        AgentmotifsError: missing, unreadable, not UTF-8, not JSON, or not an object.
    """
    text = read_text(path, what=what)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise AgentmotifsError(f"{what} {str(path)!r} is not JSON ({err})") from None
    if not isinstance(data, dict):
        raise AgentmotifsError(f"{what} {str(path)!r} must hold a JSON object")
    return data


def save_figure(fig: Any, path: str | Path, *, dpi: int = 110) -> Path:
    """Save a matplotlib figure atomically (a same-folder temporary file, then a rename: no
    half-written figure) and close it; returns the path."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = sibling(path, f"tmp{os.getpid()}{path.suffix}")
    try:
        fig.savefig(tmp, dpi=dpi)
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        tmp.unlink(missing_ok=True)
    return path

"""A study's runs as one archive: what its summary reads, without checkpoints (torch-free).

A study commits its run logs so that its summary can be read again without training; one
``.tar.gz`` per study keeps the repository to a few files per study, and
:func:`restore_runs` unpacks it into a new folder that the study's ``--runs`` then names.
"""

from __future__ import annotations

import os
import tarfile
from collections.abc import Sequence
from pathlib import Path

from simulate.common import OutputError

__all__ = ["ARCHIVED", "archive_runs", "restore_runs"]

#: The files an archive keeps (a run's log, training signals, manifest and timing; a study's
#: stored designs, pilot rounds and selections), wherever they lie under the runs folder.
ARCHIVED = ("competence.jsonl", "signals.jsonl", "manifest.json", "timing.json", "pilots.json",
            "demo.json", "links.json", "design.json", "selection.json")  # fmt: skip


def _kept(path: Path, names: Sequence[str]) -> bool:
    if "checkpoints" in path.parts or "fits" in path.parts:
        return False
    return path.name in names or (path.name.startswith("round_") and path.suffix == ".json")


def archive_runs(runs: str | Path, path: str | Path, *, names: Sequence[str] = ARCHIVED) -> Path:
    """Pack the files ``names`` (and pilot rounds ``round_<k>.json``) under ``runs`` into the
    new archive ``path`` (``.tar.gz``), paths relative to ``runs``; written atomically.

    Raises:
        OutputError: ``path`` exists (an archive is made once) or ``runs`` is no folder.
    """
    runs, path = Path(runs), Path(path)
    if path.exists():
        raise OutputError(f"{path} exists (an archive is made once)")
    if not runs.is_dir():
        raise OutputError(f"{runs} is not a folder of runs")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.new")
    with tarfile.open(tmp, "w:gz") as tar:
        for f in sorted(runs.rglob("*")):
            if f.is_file() and _kept(f.relative_to(runs), names):
                tar.add(f, arcname=str(f.relative_to(runs)))
    tmp.rename(path)
    return path


def restore_runs(path: str | Path, runs: str | Path) -> Path:
    """Unpack the archive ``path`` into ``runs``, a folder that does not exist yet.

    Raises:
        OutputError: ``runs`` exists, or ``path`` is no archive.
    """
    runs, path = Path(runs), Path(path)
    if runs.exists():
        raise OutputError(f"{runs} exists: restore into a new folder")
    if not path.is_file():
        raise OutputError(f"{path} is no archive of runs")
    with tarfile.open(path) as tar:
        tar.extractall(runs, filter="data")
    return runs

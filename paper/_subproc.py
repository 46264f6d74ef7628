"""One way the paper's drivers run a command whose output goes to a log file."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["call_logged"]


def call_logged(args: list[str], log: Path, *, cwd: str | None = None, what: str) -> None:
    """Run ``args`` (in ``cwd``), appending its stdout and stderr to ``log``.

    Raises:
        RuntimeError: The command failed; the message names ``what`` and the log.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as fh:
        rc = subprocess.call(args, stdout=fh, stderr=subprocess.STDOUT, cwd=cwd)
    if rc != 0:
        raise RuntimeError(f"{what} failed (exit {rc}); see {log}")

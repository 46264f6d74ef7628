"""Provenance for run manifests: package versions and the git revision (torch-free)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

__all__ = ["git_revision", "package_versions"]


def package_versions(names: Iterable[str] = ()) -> dict[str, str]:
    """Installed versions of the toolkit's key packages (plus ``names``); absent ones skipped."""
    from importlib import metadata

    wanted = ["agentmotifs", "numpy", "jax", "torch", "transformers", "peft", "ray", *names]
    out: dict[str, str] = {}
    for name in wanted:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    import platform

    out["python"] = platform.python_version()
    return out


def git_revision(path: str | Path | None = None) -> str | None:
    """The git commit of the repository holding ``path`` (default: this package), or None."""
    cwd = Path(path) if path is not None else Path(__file__).resolve().parent
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return (rev.stdout.strip() or None) if rev.returncode == 0 else None

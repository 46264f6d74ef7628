"""What the benchmarks print about the machine beside their figures, and the checkouts a
benchmark times against each other."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["checkouts", "load_average"]


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages (figures are only comparable within one run)."""
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "n/a"


def checkouts(ap: argparse.ArgumentParser, against: str | None, root: Path) -> dict[str, Path]:
    """``{"this": root}``, and ``"against"``: the checkout ``against`` when given (an
    ``ap.error``, exit status 2, if it is not a checkout of this project)."""
    out = {"this": root}
    if against:
        other = Path(against).resolve()
        if not (other / "calibrate" / "__main__.py").is_file():
            ap.error(f"--against {against}: not a checkout of this project")
        out["against"] = other
    return out

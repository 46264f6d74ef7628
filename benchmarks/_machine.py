"""What the benchmarks print about the machine beside their figures."""

from __future__ import annotations

__all__ = ["load_average"]


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages (figures are only comparable within one run)."""
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "n/a"

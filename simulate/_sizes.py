"""Sizes no machine can hold, refused before any work (plain Python, no JAX).

A command whose arrays grow with an option (``predict --steps``, ``population
--replicates``, ``trajectory --points``, the cells of ``phase``) estimates the memory it
will ask for from the option's value and refuses, with one line naming the option, its
value and the estimate, when the estimate exceeds :func:`memory_limit`: the smaller of
the machine's physical memory and :data:`MAX_BYTES` (set ``AGENTMOTIFS_MAX_MEMORY``, in
bytes or with a ``G``/``M`` suffix, to allow more on a larger machine).
"""

from __future__ import annotations

import math
import os

from ._errors import ConfigError

__all__ = ["MAX_BYTES", "MEMORY_ENV", "check_memory", "memory_limit", "show_bytes"]

#: The default limit of one command's estimated memory: 16 GiB.
MAX_BYTES = 16 * 2**30
#: The environment variable that changes :data:`MAX_BYTES`.
MEMORY_ENV = "AGENTMOTIFS_MAX_MEMORY"
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _physical() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return math.inf


def memory_limit() -> float:
    """The most memory a command may plan to use, in bytes (see the module docstring).

    Raises:
        ConfigError: ``AGENTMOTIFS_MAX_MEMORY`` is not a size.
    """
    text = os.environ.get(MEMORY_ENV, "").strip().upper().removesuffix("B")
    limit = float(MAX_BYTES)
    if text:
        unit = text[-1] if text[-1] in _UNITS else ""
        try:
            limit = float(text[: len(text) - len(unit)]) * _UNITS[unit]
        except ValueError:
            raise ConfigError(f"{MEMORY_ENV} must be a size such as 64G, got {text!r}") from None
        if not (math.isfinite(limit) and limit > 0):
            raise ConfigError(f"{MEMORY_ENV} must be a size > 0, got {text!r}")
    return min(limit, _physical())


def show_bytes(n: float) -> str:
    """``n`` bytes as a short size (``24 GB``, ``7.1 PB``)."""
    if not math.isfinite(n):
        return "an unbounded amount"
    for unit in ("B", "KB", "MB", "GB", "TB", "PB", "EB"):
        if abs(n) < 1000 or unit == "EB":
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} EB"  # pragma: no cover


def check_memory(what: str, nbytes: float, *, detail: str = "", advice: str = "") -> None:
    """Refuse, before any work, a size whose arrays would not fit.

    Args:
        what: The option and the value given, as the user wrote them (``--steps 1000000``).
        nbytes: The estimated memory, in bytes (``inf`` for a size no estimate holds).
        detail: How the estimate is made (``200 draws x 3 agents x 1e6 solver steps``).
        advice: What to ask for instead (``ask for a shorter --steps``).

    Raises:
        ConfigError: ``nbytes`` exceeds :func:`memory_limit`; one line naming ``what``.
    """
    limit = memory_limit()
    if nbytes <= limit:
        return
    how = f" ({detail})" if detail else ""
    then = f": {advice}" if advice else ""
    raise ConfigError(
        f"{what} needs about {show_bytes(nbytes)} of memory{how}, more than this machine "
        f"allows ({show_bytes(limit)}; {MEMORY_ENV}){then}"
    )

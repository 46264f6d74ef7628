"""Large host arrays without transparent huge pages, while :func:`calibrate.predict` runs.

numpy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every
array of 4 MiB or more. On the 2-core virtual machines this project is measured on (a
Firecracker guest, transparent huge pages in ``madvise`` mode) a fresh array so advised
is slow to fault in: 192 MB took 0.8-1.7 s against 0.10-0.12 s without the advice. At
10^4 settings a forecast writes several such arrays (bands of ``(S, 4, T, N)``), and
interpolating the bands to every step took 2.3 s instead of 0.5 s. :func:`plain_pages`
turns the advice off for the duration of a call and restores numpy's setting after it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

__all__ = ["plain_pages"]


def _switch():
    """numpy's setter of the huge-page advice (returns the previous value), or None."""
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy < 2
        from numpy.core import multiarray  # type: ignore[no-redef]
    return getattr(multiarray, "_set_madvise_hugepage", None)


_LOCK = threading.Lock()
_HELD = [0, True]  # calls inside plain_pages now, and numpy's setting before the first


@contextlib.contextmanager
def plain_pages() -> Iterator[None]:
    """numpy's huge-page advice off inside the block, numpy's previous setting after it
    (also when the block raises). Calls may overlap (threads, nesting): the first turns the
    advice off and the last one out restores the setting found by the first. A no-op where
    numpy has no such switch."""
    switch = _switch()
    if switch is None:
        yield
        return
    with _LOCK:
        if _HELD[0] == 0:
            _HELD[1] = bool(switch(False))
        _HELD[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _HELD[0] -= 1
            if _HELD[0] == 0:
                switch(_HELD[1])

"""The names of the link transforms ``T`` (plain Python; read by the config and the knobs).

Kept apart from :mod:`calibrate._knobs` (which builds :class:`calibrate.Link` records) so
that :mod:`calibrate._config` can check a link's transform without importing the knobs.
"""

from __future__ import annotations

__all__ = ["TRANSFORMS"]

#: Link transforms ``T``, the default first.
TRANSFORMS = ("log", "log1p", "linear")

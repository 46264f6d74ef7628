"""The names of the link transforms ``T``: the shared scales (read by the config and the knobs).

Kept apart from :mod:`calibrate._knobs` (which builds :class:`calibrate.Link` records) so
that :mod:`calibrate._config` can check a link's transform without importing the knobs.
"""

from __future__ import annotations

from simulate.common import SCALES

__all__ = ["TRANSFORMS"]

#: Link transforms ``T`` (:data:`simulate.common.SCALES`), the default first.
TRANSFORMS = SCALES

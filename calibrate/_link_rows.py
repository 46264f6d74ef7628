"""Links of a fit as structured records: one :class:`LinkRow` per slope ``c``.

A fit stores them (``links.json`` in its folder) so that predict and recommend read the
linked parameter, the covariate, its transform and the pilots' centre ``mean T(h)`` from the
fit, never by parsing labels such as ``c[rho[X]~rl.lr]`` or recomputing the centre. A fit
folder written before the records existed has none: :func:`read_link_rows` returns None
and the loader derives them from the fit's data, as the fit did.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from simulate.common import ConfigError, read_json_object, write_json

__all__ = ["LINKS_FILE", "LinkRow", "read_link_rows", "write_link_rows"]

LINKS_FILE = "links.json"


@dataclasses.dataclass(frozen=True)
class LinkRow:
    """One slope of a fitted link ``u = a + c (T(h) - center)``.

    Attributes:
        param: The linked parameter (``rho[X]``, ``K[X->Y]``).
        base: Its base (``rho``).
        target: Its node or edge (``X``, ``X->Y``).
        covariate: The run field (``rl.lr``).
        transform: ``T`` (:data:`simulate.common.SCALES`).
        center: ``mean T(h)`` over the fitted runs.
    """

    param: str
    base: str
    target: str
    covariate: str
    transform: str
    center: float

    @property
    def label(self) -> str:
        """The slope's summary name, ``c[rho[X]~rl.lr]``."""
        return f"c[{self.param}~{self.covariate}]"

    @property
    def reference(self) -> float:
        """The reference value ``T^-1(center)`` (a prediction's value of a field it omits)."""
        c = self.center
        if self.transform == "log":
            return math.exp(c)
        return math.expm1(c) if self.transform == "log1p" else c


def write_link_rows(path: str | Path, rows: tuple[LinkRow, ...]) -> Path:
    """Write ``rows`` as ``{"links": [record, ...]}`` (strict JSON)."""
    return write_json(path, {"links": [dataclasses.asdict(r) for r in rows]})


def read_link_rows(folder: str | Path) -> tuple[LinkRow, ...] | None:
    """The records of a fit folder, or None for a folder written before they existed.

    Raises:
        ConfigError: A malformed ``links.json``.
    """
    path = Path(folder) / LINKS_FILE
    if not path.is_file():
        return None
    data = read_json_object(path, what="links file")
    try:
        rows = tuple(LinkRow(**{**r, "center": float(r["center"])}) for r in data["links"])
    except (KeyError, TypeError, ValueError) as err:
        raise ConfigError(f"{path}: malformed link records ({err})") from None
    return rows

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
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from simulate.common import ConfigError, read_json_object, write_json

__all__ = ["LINKS_FILE", "LinkRow", "build_links", "read_link_rows", "write_link_rows"]

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


def build_links(
    h: Any, layout: Any, data: Any
) -> tuple[list[int], list[np.ndarray], list[LinkRow]]:
    """Per slope of the hierarchy ``h``'s links: its index into the parameter vector, the
    runs' centred transformed covariate and its :class:`LinkRow` (``calibrate.build_model``).

    Raises:
        ConfigError: A link on ``eta``/``lag`` without the dynamics that have them.
        DataError: A linked column with a value outside its transform's domain.
    """
    from ._curve_data import DataError
    from ._knobs import check_values, transform_values

    link_index: list[int] = []
    link_x: list[np.ndarray] = []
    link_rows: list[LinkRow] = []
    for lk in h.links:
        hv = data.hyper_values(lk.covariate, positive=lk.transform == "log")
        x = transform_values(lk.transform, check_values(lk.transform, hv, lk.covariate, DataError))
        if x.size and np.ptp(x) == 0:
            warnings.warn(
                f"link {lk.param} ~ {lk.covariate}: {lk.covariate} = {hv[0]:g} in every run of "
                "the fit, so the data cannot tell its slope; a prediction at another value "
                "follows the prior alone (vary it across the runs or drop the link)",
                UserWarning,
                stacklevel=3,
            )
        center = float(x.mean())
        x = x - x.mean()
        tg = lk.targets or tuple(
            tt for b, tt in zip(layout.bases, layout.targets, strict=True) if b == lk.param
        )
        if not tg and lk.param in ("eta", "lag"):
            need = "dynamics 'map'" if lk.param == "eta" else "a lag ('stale' or 'erlang')"
            raise ConfigError(f"unknown parameter {lk.param!r}: a link on it needs {need}")
        for target in tg:
            pname = f"{lk.param}[{target}]" if target else lk.param  # eta, lag: no target
            link_index.append(layout.index(pname))
            link_x.append(x)
            row = LinkRow(pname, lk.param, target, lk.covariate, lk.transform, center)
            link_rows.append(row)
    return link_index, link_x, link_rows

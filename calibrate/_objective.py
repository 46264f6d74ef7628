"""What ``recommend --space`` maximises: one agent's final competence, or the end-to-end
accuracy (``objective: e2e``).

An objective is a projection of the competence vector (agents last): ``last`` or an agent's
name selects that agent's competence; ``e2e`` is the product of every agent's competence,
``prod_i A_i``, the chance that every role answers right when the roles err independently.
The model has no end-to-end node, so the product is its forecast of the end-to-end accuracy.

Evidence (measured 2026-12-03 on the testbed run folders ``runs/testbed``, 106 runs, 8
motifs, 2,168 (step, run) points where every agent and the end-to-end accuracy were
evaluated): the product of the three agents' logged competences correlates r = 0.971 with
the logged end-to-end accuracy (mean difference e2e - product +0.026, RMS 0.078), against
r = 0.869 (RMS 0.255) for the output node Z alone and r = 0.790 for the solver X.

:func:`objective_values` is the one place that projection is computed (the candidates'
means and quantiles, steps to target, the new runs' finals).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from simulate.common import ConfigError

__all__ = [
    "E2E",
    "E2E_LABEL",
    "check_objective",
    "objective_columns",
    "objective_index",
    "objective_label",
    "objective_values",
]

#: The objective name of the end-to-end accuracy.
E2E = "e2e"
#: How texts name the ``e2e`` objective.
E2E_LABEL = "end-to-end accuracy (product of the agents' competences)"


def check_objective(value: Any, where: str) -> str:
    """``value`` if it can name an objective: ``last``, ``e2e`` or an agent name (a
    non-empty string without any of ``[]->, =``, as node names of a network spec).

    Whether an agent name is an agent of the fit is checked by :func:`objective_index`.

    Raises:
        ConfigError: Anything else, with ``where`` (e.g. ``space``) leading the message.
    """
    if not (isinstance(value, str) and value and not any(c in value for c in "[]->, =")):
        raise ConfigError(f"{where}: objective must be an agent name, 'last' or 'e2e', got "
                          f"{value!r}")  # fmt: skip
    return value


def objective_index(names: Sequence[str], objective: str) -> int | None:
    """The objective's agent index in the fit's agents ``names`` (``last``: the output
    node, the last), or None for ``e2e`` (an agent named ``e2e`` or ``last`` is reached
    by neither name).

    Raises:
        ConfigError: An agent name that is not one of ``names``.
    """
    names = list(names)
    if objective == E2E:
        return None
    if objective == "last":
        return len(names) - 1
    if objective not in names:
        raise ConfigError(f"space: objective {objective!r} is not an agent of the fit {names}"
                          " (or 'last', or 'e2e')")  # fmt: skip
    return names.index(objective)


def objective_columns(n_agents: int, index: int | None) -> list[int]:
    """The agents an objective multiplies: ``[index]``, or every agent for ``e2e``."""
    return list(range(n_agents)) if index is None else [range(n_agents)[index]]


def objective_values(arr: Any, index: int | None) -> np.ndarray:
    """The objective of competences ``arr`` (agents on the last axis): ``arr[..., index]``,
    or for ``e2e`` (``index`` None) ``prod(arr, axis=-1)``; NaN (a failed solve) stays NaN.

    Both are the product over :func:`objective_columns` (a product of one factor is that
    factor exactly).
    """
    a = np.asarray(arr, dtype=np.float64)
    return np.prod(a[..., objective_columns(a.shape[-1], index)], axis=-1)


def objective_label(names: Sequence[str], index: int | None) -> str:
    """How texts name the objective: ``final competence of 'Z'`` or ``final`` + the
    :data:`E2E_LABEL`."""
    return f"final {E2E_LABEL}" if index is None else f"final competence of {names[index]!r}"

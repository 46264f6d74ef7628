"""The greedy readout: how a greedy probe reads an agent's latent skill.

A greedy probe counts the items whose per-sample success probability has crossed one half.
Across items of spread difficulty that count is a sigmoid of the skill the kinetics
describe (the quality of the agent's sampled outputs), so with ``FitConfig.readout ==
"greedy"`` node ``i``'s observed competence, from its latent level ``a`` in [0, 1] and its
start level ``A0_i``, is

    p = A0_i + (1 - A0_i) R(u),   u = (a - A0_i) / (1 - A0_i),
    R(u) = [s((u - mid_i) / width_i) - s(-mid_i / width_i)]
           / [s((1 - mid_i) / width_i) - s(-mid_i / width_i)],

``s`` the logistic function and ``u`` the share of the way from the start to 1 the skill
has come: the probe starts where the skill starts (``R(0) = 0``), reaches 1 with it
(``R(1) = 1``), rises with it, and is flat where ``u`` is far from ``mid_i``. A skill that
starts to rise at once is seen to rise only as it nears ``mid_i``, and then fast: the
delayed jump of greedy probe curves. Below its start (``u < 0``) the probe stays near its
start; a wide readout (``width_i`` >> 1) is nearly the identity.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from ._network import Layout

__all__ = ["greedy_readout", "readout_curves"]


def greedy_readout(
    levels: ArrayLike, start: ArrayLike, mid: ArrayLike, width: ArrayLike
) -> jax.Array:
    """``p`` of ``levels`` (module docstring), elementwise with broadcasting.

    Args:
        levels: Latent levels ``a`` in [0, 1], any shape.
        start: Start levels ``A0`` in (0, 1), broadcastable to ``levels``.
        mid: Midpoints in (0, 1) (share of the way from the start to 1), broadcastable.
        width: Widths > 0 (in the same share), broadcastable.

    Returns:
        The observed competences, the shape of ``levels`` broadcast.
    """
    levels, start, mid, width = (jnp.asarray(x) for x in (levels, start, mid, width))
    u = (levels - start) / (1.0 - start)
    lo = jax.nn.sigmoid(-mid / width)
    hi = jax.nn.sigmoid((1.0 - mid) / width)
    return start + (1.0 - start) * (jax.nn.sigmoid((u - mid) / width) - lo) / (hi - lo)


def readout_curves(
    levels: jax.Array, theta: jax.Array, layout: Layout, *, batch_last: bool = False
) -> jax.Array:
    """The observed curves of latent ``levels`` under each run's readout parameters.

    Args:
        levels: Latent levels, ``(R, T, N)`` (``(T, N, R)`` with ``batch_last``).
        theta: Natural parameters, ``(R, D)`` or ``(1, D)`` (one row for every run), with
            each node's ``A0``, ``mid`` and ``width`` (:func:`make_layout
            <calibrate._network.make_layout>` with ``readout == "greedy"``).
        layout: The parameters' layout.
        batch_last: ``levels`` carries the runs last.

    Returns:
        The observed curves, the shape of ``levels`` (``levels`` itself when the layout has
        no readout parameters: the identity readout).
    """
    if "mid" not in layout.bases:
        return levels
    bases = np.asarray(layout.bases)
    per_node = [theta[:, np.flatnonzero(bases == b)] for b in ("A0", "mid", "width")]  # (R, N)
    if batch_last:
        return greedy_readout(levels, *(x.T[None] for x in per_node))
    return greedy_readout(levels, *(x[:, None, :] for x in per_node))

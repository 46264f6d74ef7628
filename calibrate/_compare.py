"""Ranking of fitted candidates from pointwise elpd: differences with their se, stacking
weights, the set the data cannot tell apart, and the edge signs and gates it identifies.

The statistics follow ArviZ's ``compare`` (``se = sqrt(n var(elpd_i))``, the se of a
difference from the pointwise differences, stacking weights that maximise the summed log
score of the weighted predictive), computed here so that candidates whose elpd comes from
different estimators (PSIS-LOO, or exact K-fold where Pareto k is high) can be ranked
together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

from simulate.common import ConfigError

__all__ = [
    "ELPD_BAND",
    "block_strata",
    "compare_pointwise",
    "identified_structure",
    "replicate_strata",
    "stacking_weights",
    "stratified_se",
]

ELPD_BAND = 2.0  # a candidate within this many se of the difference from the best is kept


def stacking_weights(pointwise: np.ndarray) -> np.ndarray:
    """Stacking weights of ``K`` candidates from their pointwise elpd ``(K, n)``: the
    simplex point maximising ``sum_i log sum_k w_k exp(elpd_ki)`` (Yao et al. 2018)."""
    pw = np.asarray(pointwise, float)
    k = pw.shape[0]
    if k == 1:
        return np.ones(1)
    pw = pw - pw.max(axis=0, keepdims=True)  # per point: the score is shift invariant

    def obj(a):
        la = np.concatenate([[0.0], a])
        lw = la - logsumexp(la)
        s = logsumexp(lw[:, None] + pw, axis=0)  # (n,)
        # gradient through the softmax
        r = np.exp(lw[:, None] + pw - s[None, :])  # responsibilities (K, n)
        g = r.sum(axis=1) - pw.shape[1] * np.exp(lw)
        return -float(s.sum()), -g[1:]

    res = minimize(obj, np.zeros(k - 1), jac=True, method="L-BFGS-B")
    la = np.concatenate([[0.0], res.x])
    return np.exp(la - logsumexp(la))


def compare_pointwise(
    pointwise: Mapping[str, np.ndarray],
    *,
    band: float = ELPD_BAND,
    blocks: np.ndarray | None = None,
    strata: np.ndarray | None = None,
) -> list[dict[str, Any]]:
    """Rank candidates by summed pointwise elpd.

    Args:
        pointwise: Label -> pointwise elpd, each ``(n,)`` over the same observations.
        band: Width, in se of the difference, of the set kept with the best.
        blocks: Block of each observation ``(n,)`` (e.g. one per run and agent), or None.
            With blocks the se of a difference is that of the blocks' summed differences,
            ``sqrt(B var(diff_b))`` over the ``B`` blocks: observations within a block may
            be correlated (one run's misfit at neighbouring steps), which the pointwise se
            takes as independent evidence.
        strata: Stratum of each observation ``(n,)``, the same within a block (e.g. the
            run's configuration apart from its seed, and the agent), or None. With strata
            the se of a difference is that of a stratified sample of blocks,
            ``sqrt(sum_s B_s var_s(diff_b))`` over the strata ``s`` of ``B_s >= 2`` blocks
            each (``var_s`` the unbiased sample variance, ddof 1): the blocks of a stratum
            are replicates, and the differences between strata, fixed by the design, are
            not counted as noise. Needs ``blocks``.

    Returns:
        Rows best first: ``label``, ``elpd``, ``se``, ``d_elpd`` (best minus this),
        ``dse`` (se of that difference: ``sqrt(n var(diff_i))``, by blocks, or by blocks
        within strata), ``dse_points`` (the pointwise one, always), ``dse_blocks`` (by
        blocks, unstratified; with ``blocks`` only), ``dse_df`` (with ``strata``: the
        Satterthwaite degrees of freedom of that se, None where it is 0), ``weight``
        (stacking) and ``indistinguishable`` (``d_elpd <= band * dse``).

    Raises:
        ValueError: Non-finite or ragged elpd, ``blocks`` not one per observation or fewer
            than 2 blocks, or ``strata`` without ``blocks``, not one per observation,
            varying within a block or with a stratum of one block.
    """
    labels = list(pointwise)
    pw = np.stack([np.asarray(pointwise[lb], float) for lb in labels])
    if pw.ndim != 2 or not np.all(np.isfinite(pw)):
        raise ValueError("pointwise elpd must be finite arrays of one length")
    n = pw.shape[1]
    if blocks is not None:
        blocks = np.asarray(blocks)
        if blocks.shape != (n,) or np.unique(blocks).size < 2:
            raise ValueError("blocks must give one block per observation, >= 2 blocks")
        _, block_of = np.unique(blocks, return_inverse=True)
    stratum_of = None
    if strata is not None:
        stratum_of = block_strata(np.asarray(strata), block_of if blocks is not None else None)
    elpd = pw.sum(axis=1)
    se = np.sqrt(n * pw.var(axis=1))
    w = stacking_weights(pw)
    order = np.argsort(-elpd, kind="stable")
    best = order[0]
    rows = []
    for i in order:
        diff = pw[best] - pw[i]
        d, dse_points = float(diff.sum()), float(np.sqrt(n * diff.var()))
        dse, extra = dse_points, {}
        if blocks is not None:
            per_block = np.bincount(block_of, weights=diff)
            dse = float(np.sqrt(per_block.size * per_block.var()))
            extra["dse_blocks"] = dse
        if stratum_of is not None:
            dse, extra["dse_df"] = stratified_se(per_block, stratum_of)
        rows.append(
            {
                "label": labels[i],
                "elpd": float(elpd[i]),
                "se": float(se[i]),
                "d_elpd": d,
                "dse": dse,
                "dse_points": dse_points,
                **extra,
                "weight": float(w[i]),
                "indistinguishable": bool(d <= band * dse),
            }
        )
    return rows


def block_strata(strata: np.ndarray, block_of: np.ndarray | None) -> np.ndarray:
    """The stratum of each block ``(B,)`` from one per observation ``(n,)``.

    Args:
        strata: Stratum of each observation ``(n,)``.
        block_of: Block index of each observation ``(n,)``, ``0..B-1``, or None.

    Raises:
        ValueError: No blocks, ``strata`` not one per observation, a block in two strata,
            or a stratum of one block (no replicate to take its variance from).
    """
    if block_of is None:
        raise ValueError("strata need blocks: the se is stratified over blocks")
    if strata.shape != block_of.shape:
        raise ValueError("strata must give one stratum per observation")
    _, s_of = np.unique(strata, return_inverse=True)
    first = np.zeros(block_of.max() + 1, dtype=int)
    first[block_of] = s_of  # one of each block's strata: all of them, when they agree
    if np.any(first[block_of] != s_of):
        raise ValueError("strata must be the same within a block")
    counts = np.bincount(first)
    if np.any(counts[np.unique(first)] < 2):
        raise ValueError("every stratum needs >= 2 blocks (replicates) for its variance")
    return first


def stratified_se(per_block: np.ndarray, stratum_of: np.ndarray) -> tuple[float, float | None]:
    """The se of the sum of block values ``(B,)`` sampled within strata ``(B,)``,
    ``sqrt(sum_s B_s var_s)`` (``var_s`` with ddof 1), and its Satterthwaite degrees of
    freedom ``(sum_s v_s)^2 / sum_s v_s^2 / (B_s - 1)``, ``v_s = B_s var_s`` (None when the
    se is 0)."""
    v, dof = [], []
    for s in np.unique(stratum_of):
        x = per_block[stratum_of == s]
        v.append(x.size * x.var(ddof=1))
        dof.append(x.size - 1)
    v_arr, total = np.asarray(v), float(np.sum(v))
    df = total**2 / float(np.sum(v_arr**2 / np.asarray(dof))) if total > 0 else None
    return float(np.sqrt(total)), df


def replicate_strata(conditions: Mapping[str, int], cm: Any, groups: np.ndarray) -> np.ndarray:
    """Per observation of a built model ``cm`` (its ``runs``, ``run_idx``, ``node_idx``), its
    stratum: the run's condition (``conditions``, by run) and the agent; checked against the
    blocks ``groups`` (:func:`block_strata`).

    Raises:
        ConfigError: A run with no replicate (no other run of its condition).
    """
    alone = [r for r in cm.runs if sum(c == conditions[r] for c in conditions.values()) < 2]
    if alone:
        raise ConfigError(
            "replicates need >= 2 runs (seeds) of every configuration; without one: "
            + ", ".join(alone)
        )
    run_cond = np.array([conditions[r] for r in cm.runs])[np.asarray(cm.run_idx)]
    strata = run_cond * len(cm.network.names) + np.asarray(cm.node_idx)
    block_strata(strata, np.unique(groups, return_inverse=True)[1])  # raises if not
    return strata


def _sym(sign: float) -> str:
    return "+" if sign > 0 else "-" if sign < 0 else "none"


def identified_structure(networks: Sequence[Any]) -> dict[str, str | None]:
    """Which edge signs and gates the given networks agree on.

    Args:
        networks: ``simulate.Network`` of each indistinguishable candidate.

    Returns:
        ``{"X->Y": "+", "X->Z": None, ..., "gate": "AND"}``: an edge's sign (``+``, ``-``,
        or ``none`` where a network lacks it) if all agree, else None; per node regulated
        by two or more edges in some network, its gate (key ``gate``, or ``gate[NODE]``
        when several nodes have one) if it has two regulators and the same gate in all,
        else None.
    """
    edges = list(dict.fromkeys(e for net in networks for e in net.edge_keys))
    seen: dict[str, set[str]] = {e: set() for e in edges}
    gates: dict[str, set[str]] = {}
    for net in networks:
        sign, is_or = np.asarray(net.sign), np.asarray(net.is_or)
        for e in edges:
            src, _, dst = e.partition("->")
            s = 0.0
            if src in net.names and dst in net.names:
                s = float(sign[net.names.index(dst), net.names.index(src)])
            seen[e].add(_sym(s))
        for i, node in enumerate(net.names):
            if np.count_nonzero(sign[i]) >= 2:
                gates.setdefault(node, set()).add("OR" if is_or[i] > 0.5 else "AND")
    out: dict[str, str | None] = {
        e: next(iter(v)) if len(v) == 1 else None for e, v in seen.items()
    }
    for node, v in gates.items():
        in_all = all(
            node in net.names and np.count_nonzero(np.asarray(net.sign)[net.names.index(node)]) >= 2
            for net in networks
        )
        key = "gate" if len(gates) == 1 else f"gate[{node}]"
        out[key] = next(iter(v)) if len(v) == 1 and in_all else None
    return out

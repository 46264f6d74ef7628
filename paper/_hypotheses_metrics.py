"""The hypotheses study's pre-stated measures and tests (fixed before any test run; used
alike on the simulator's curves, for the stored predictions, and on the real runs).

Curves are sampled at the evaluation steps ``steps`` (shape ``(T,)``); ``y`` is the
end-to-end accuracy of a run (or the simulator's proxy, the product of the competences).

- **Dip** (H1): for each pulse starting at ``s0``, the level at the last evaluation at or
  before ``s0`` minus the lowest level at the evaluations in ``(s0, s0 + length +
  2 eval_every]``; the mean over pulses. Smaller is steadier.
- **Recovery** (H2): the mean level at the evaluations after the shift step minus the level
  at the shift (the first evaluation on the shifted distribution). Larger is faster.
- **Test of H1**: statistic = mean over tasks of (mean dip of the seven other types - mean
  dip of C1); one-sided permutation test (motif labels permuted within each task), holds
  if the statistic > 0 with p < 0.05.
- **Test of H2**: statistic = mean over tasks of (mean recovery of I1 - mean recovery of
  C1); one-sided permutation test within tasks, holds if > 0 with p < 0.05.
- Intervals: 95 % percentile bootstrap of the statistic, seeds resampled within each
  (task, motif) group.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ALPHA = 0.05
N_PERM = 20000
N_BOOT = 5000


def dip(
    steps: np.ndarray, y: np.ndarray, starts: Sequence[int], length: int, eval_every: int
) -> float:
    """Mean over pulses of (level before the pulse - lowest level during and after it)."""
    steps, y = np.asarray(steps), np.asarray(y, dtype=float)
    out = []
    for s0 in starts:
        before = np.flatnonzero(steps <= s0)
        after = np.flatnonzero((steps > s0) & (steps <= s0 + length + 2 * eval_every))
        if before.size == 0 or after.size == 0:
            raise ValueError(f"no evaluation around the pulse at step {s0}")
        out.append(y[before[-1]] - y[after].min())
    return float(np.mean(out))


def recovery(steps: np.ndarray, y: np.ndarray, shift: int) -> float:
    """Mean level after the shift step minus the level at the shift."""
    steps, y = np.asarray(steps), np.asarray(y, dtype=float)
    at = np.flatnonzero(steps >= shift)
    if at.size < 2:
        raise ValueError(f"fewer than 2 evaluations from the shift step {shift} on")
    return float(y[at[1:]].mean() - y[at[0]])


def steps_to_recover(
    steps: np.ndarray, y: np.ndarray, shift: int, eval_every: int, frac: float = 0.9
) -> int | None:
    """Steps after the shift until the level first reaches ``frac`` x the mean of the last two
    evaluations before it; None if it never does (secondary measure)."""
    steps, y = np.asarray(steps), np.asarray(y, dtype=float)
    pre = y[(steps < shift) & (steps >= shift - 2 * eval_every)]
    if pre.size == 0:
        raise ValueError(f"no evaluation before the shift step {shift}")
    hit = np.flatnonzero((steps >= shift) & (y >= frac * pre.mean()))
    return None if hit.size == 0 else int(steps[hit[0]] - shift)


def pulse_recovery(
    steps: np.ndarray,
    y: np.ndarray,
    starts: Sequence[int],
    length: int,
    frac: float = 0.9,
) -> list[int | None]:
    """Per pulse, the steps from its end until the level first reaches ``frac`` x the level
    at the last evaluation at or before its start (before the next pulse starts); None if it
    does not (secondary measure)."""
    steps, y = np.asarray(steps), np.asarray(y, dtype=float)
    out: list[int | None] = []
    bounds = [*sorted(starts)[1:], np.inf]
    for s0, nxt in zip(sorted(starts), bounds, strict=True):
        pre = y[np.flatnonzero(steps <= s0)[-1]]
        end = s0 + length
        hit = np.flatnonzero((steps >= end) & (steps <= nxt) & (y >= frac * pre))
        out.append(None if hit.size == 0 else int(steps[hit[0]] - end))
    return out


def contrast(groups: dict[str, dict[str, np.ndarray]], focus: str, others: Sequence[str]) -> float:
    """Mean over tasks of (mean of the ``others``' values - mean of ``focus``'s values);
    ``groups[task][motif]`` holds one value per seed."""
    diffs = []
    for by_motif in groups.values():
        rest = np.concatenate([np.asarray(by_motif[m], float) for m in others])
        diffs.append(rest.mean() - np.asarray(by_motif[focus], float).mean())
    return float(np.mean(diffs))


def permutation_test(
    groups: dict[str, dict[str, np.ndarray]],
    focus: str,
    others: Sequence[str],
    *,
    seed: int = 0,
    n_perm: int = N_PERM,
) -> tuple[float, float]:
    """One-sided permutation test that ``contrast`` > 0: the labels ``focus``/``others`` are
    permuted among the seeds within each task. Returns ``(statistic, p)`` with the
    ``(1 + #{perm >= observed}) / (1 + n_perm)`` p-value."""
    rng = np.random.default_rng(seed)
    obs = contrast(groups, focus, others)
    diffs = np.zeros(n_perm)
    for by_motif in groups.values():
        nf = len(by_motif[focus])
        v = np.concatenate([np.asarray(by_motif[m], float) for m in [focus, *others]])
        perm = v[np.argsort(rng.random((n_perm, v.size)), axis=1)]
        diffs += perm[:, nf:].mean(axis=1) - perm[:, :nf].mean(axis=1)
    diffs /= len(groups)
    return obs, float((1 + np.sum(diffs >= obs - 1e-12)) / (1 + n_perm))


def bootstrap_ci(
    groups: dict[str, dict[str, np.ndarray]],
    focus: str,
    others: Sequence[str],
    *,
    seed: int = 0,
    n_boot: int = N_BOOT,
) -> list[float]:
    """95 % percentile interval of ``contrast``, seeds resampled within each group."""
    rng = np.random.default_rng(seed)
    stats = np.zeros(n_boot)
    for by_motif in groups.values():
        draws = {}
        for m in [focus, *others]:
            v = np.asarray(by_motif[m], float)
            draws[m] = v[rng.integers(v.size, size=(n_boot, v.size))]
        rest = np.concatenate([draws[m] for m in others], axis=1).mean(axis=1)
        stats += rest - draws[focus].mean(axis=1)
    stats /= len(groups)
    lo, hi = np.percentile(stats, [2.5, 97.5])
    return [float(lo), float(hi)]


def mean_ci(values: Sequence[float], *, seed: int = 0, n_boot: int = N_BOOT) -> list[float]:
    """95 % percentile bootstrap interval of the mean of ``values`` (seeds resampled)."""
    v = np.asarray(values, float)
    boot = v[np.random.default_rng(seed).integers(v.size, size=(n_boot, v.size))].mean(axis=1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return [float(lo), float(hi)]

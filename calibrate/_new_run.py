"""What one new run will log: the generative story behind every new-run interval.

A forecast of one new run at a setting is a draw of the following story, once per
posterior draw (the fitted model, :class:`calibrate.CurveModel`):

1. fresh per-run effects: for a fit with ``hierarchy.random_effects``, the run's
   transformed parameters of each listed base move by ``tau * eps`` with a fresh
   ``eps ~ N(0, 1)`` per node or edge (``tau`` the draw's population sd), never a pilot's
   own effect (:func:`fresh_effects`);
2. seed-to-seed spread beyond the model: for a fit *without* random effects, pilots that
   differ only by their seed (replicates) give a per-agent sd of final competences beyond
   their binomial noise (:func:`replicate_spread`); each new run's curve is offset by one
   ``N(0, sd^2)`` per agent (constant over steps, clipped to [0, 1]). With random effects
   the run effects are the seed-to-seed spread (the replicates informed ``tau``), so
   nothing is added; with neither, the spread is *missing* and the forecast says so;
3. evaluation noise: each logged competence is ``k / n`` with ``k ~ Binomial(n, A(t))``
   (beta-binomial with the draw's ``phi`` for ``likelihood: betabinomial``) at the
   agent's probe count ``n`` (the median ``n_eval`` of its evaluations in the pilots' logs,
   :func:`agent_n_eval`, or a value the user sets) (:func:`evaluation_noise`).

The *mean-curve* band leaves out 1-3: it is the posterior of the population-median run's
expected competence. The fit's figure (``predictive.png``), ``predict``, ``recommend``
and the demo report all draw their noise here. :func:`crps_samples` scores a forecast
given as samples.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from simulate.common import crps_samples as crps_samples

from ._config import ConfigError
from ._model import CurveModel

__all__ = [
    "JITTER_BASES",
    "SeedSpread",
    "agent_n_eval",
    "band_note",
    "crps_samples",
    "draw_phi",
    "evaluation_noise",
    "fresh_effects",
    "noise_probability",
    "replicate_spread",
    "resolve_n_eval",
]

#: Bases whose transformed parameters a ``jitter`` moves (:func:`fresh_effects`).
JITTER_BASES = ("rho", "delta", "A0")

_MEAN_NOTE = (
    "the mean curve (posterior uncertainty of the expected competence of the "
    "population-median run; no seed spread, no evaluation noise)"
)
#: What one new run's interval holds beyond evaluation noise and posterior uncertainty,
#: by :attr:`SeedSpread.source` (None: not known).
_SPREAD_PARTS = {
    None: "fresh run effects or seed spread where the fit has them, ",
    "random_effects": "fresh run effects (its seed spread), ",
    "replicates": "seed spread from pilot replicates, ",
    "jitter": "fresh run effects of a set sd (not learned from the pilots), ",
    "missing": "",
}


def band_note(band: str, spread: str | None = None) -> str:
    """What a band's interval holds, in one phrase (printed with every interval).

    Args:
        band: ``new_run`` or ``mean``.
        spread: For ``new_run``, where its seed spread comes from (a
            :attr:`SeedSpread.source`, or ``jitter`` for :func:`fresh_effects`'s jitter):
            the phrase names only what the interval holds, and says when the seed spread is
            missing. None: a phrase that does not say.

    Raises:
        ConfigError: Another band or source.
    """
    if band == "mean":
        return _MEAN_NOTE
    if band != "new_run" or spread not in _SPREAD_PARTS:
        raise ConfigError(f"no interval note for band {band!r} with seed spread {spread!r}")
    missing = "; the spread between seeds is missing" if spread == "missing" else ""
    return (
        f"one new run's logged competence ({_SPREAD_PARTS[spread]}evaluation noise, "
        f"posterior uncertainty{missing})"
    )


def agent_n_eval(cm: CurveModel) -> np.ndarray:
    """Per agent (node order), the median ``n_eval`` of its evaluations in the fitted
    data (the median over all observations for a node without any), shape ``(N,)``."""
    n = np.full(cm.network.size, float(np.median(cm.n_eval)))
    for i in range(cm.network.size):
        sel = cm.node_idx == i
        if sel.any():
            n[i] = float(np.median(cm.n_eval[sel]))
    return np.maximum(np.rint(n), 1).astype(np.int64)


def resolve_n_eval(cm: CurveModel, n_eval: int | Mapping[str, int] | None) -> np.ndarray:
    """The probe count of each agent: the pilots' (:func:`agent_n_eval`), overridden by
    ``n_eval`` (one integer for every agent, or ``{agent: n}`` for some).

    Raises:
        ConfigError: A count that is not an integer >= 1, or an unknown agent.
    """
    n = agent_n_eval(cm)
    if n_eval is None:
        return n
    names = list(cm.network.names)
    items = n_eval.items() if isinstance(n_eval, Mapping) else [(None, n_eval)]
    for agent, v in items:
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise ConfigError(f"n_eval must be an integer >= 1, got {v!r}")
        if agent is None:
            n[:] = int(v)
        elif agent not in names:
            raise ConfigError(f"n_eval: unknown agent {agent!r} (agents {names})")
        else:
            n[names.index(agent)] = int(v)
    return n


def fresh_effects(
    cm: CurveModel,
    tau_z: np.ndarray | None,
    rng: np.random.Generator,
    *,
    draws: int | None = None,
    jitter: float = 0.0,
) -> np.ndarray:
    """One new run's random effects per draw on the transformed scale ``u``: ``(G, D)``
    zeros except ``tau * eps`` at the random-effect columns (``eps ~ N(0, 1)`` fresh).

    Args:
        cm: The fitted model.
        tau_z: The draws' latent ``tau_z`` ``(G, bases)`` (None: the fit has none).
        rng: Generator of ``eps`` (the random effects' first, then the jitter's).
        draws: ``G`` when ``tau_z`` is None (default 1).
        jitter: Sd of a fresh ``N(0, jitter^2)`` effect on the transformed parameters of
            :data:`JITTER_BASES` that have no random effect: ``watch``'s stand-in for run
            effects a fit lacks (0, predict's: none; its seed spread without random
            effects comes from pilot replicates, :func:`replicate_spread`).
    """
    g = (draws or 1) if tau_z is None else tau_z.shape[0]
    out = np.zeros((g, cm.layout.size))
    has_re = np.zeros(cm.layout.size, bool)
    if tau_z is not None and cm.re_index.size:
        pr = cm.config.priors
        tau = np.exp(np.log(pr.re_median) + pr.re_sd * np.asarray(tau_z, float))[:, cm.re_group]
        out[:, cm.re_index] = tau * rng.standard_normal(tau.shape)
        has_re[cm.re_index] = True
    if jitter > 0:
        jit = np.array([b in JITTER_BASES for b in cm.layout.bases]) & ~has_re
        out[:, jit] = jitter * rng.standard_normal((g, int(jit.sum())))
    return out


def draw_phi(cm: CurveModel, z_phi: np.ndarray | None) -> np.ndarray | None:
    """The beta-binomial concentration ``phi`` of each draw ``(G,)`` from its latent
    ``z_phi``; None for a binomial likelihood (or no ``z_phi``)."""
    if cm.config.likelihood != "betabinomial" or z_phi is None:
        return None
    pr = cm.config.priors
    return np.exp(np.log(pr.phi_median) + pr.phi_sd * np.asarray(z_phi, float))


@dataclasses.dataclass(frozen=True)
class SeedSpread:
    """Where one new run's seed-to-seed spread comes from.

    Attributes:
        source: ``random_effects`` (the fit's per-run effects), ``replicates`` (pilots
            that differ only by seed; added as an offset per agent) or ``missing``.
        sd: Per agent (node order) the replicate sd added to a new run's curve ``(N,)``
            (zeros unless ``source == "replicates"``).
        groups: Replicate groups found among the pilots (sets of >= 2 runs with the same
            hyperparameters).
        note: One sentence for the user.
    """

    source: str
    sd: np.ndarray
    groups: int
    note: str

    def to_dict(self, agents: tuple[str, ...]) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "source": self.source,
            "sd": {a: float(s) for a, s in zip(agents, self.sd, strict=True)},
            "replicate_groups": self.groups,
            "note": self.note,
        }


def replicate_spread(cm: CurveModel, hyper: Mapping[str, np.ndarray] | None) -> SeedSpread:
    """The seed-to-seed spread of a new run (see the module docstring).

    Replicates are runs whose hyperparameters (``hyper``: every non-seed column, per run in
    the model's run order) are all equal. Per agent, the pooled within-group variance of
    the runs' last logged competences, less the mean binomial variance ``p (1 - p) / n``
    of those logs, floored at 0, is the spread's variance.
    """
    n_nodes = cm.network.size
    zero = np.zeros(n_nodes)
    groups = _replicate_groups(cm.n_runs, hyper)
    if cm.re_index.size:
        extra = f"; {len(groups)} replicate group(s) among the pilots informed it" if groups else ""
        return SeedSpread(
            "random_effects",
            zero,
            len(groups),
            f"fresh per-run effects on {', '.join(cm.re_bases)} (sd tau per posterior draw){extra}",
        )
    if not groups:
        return SeedSpread(
            "missing",
            zero,
            0,
            "missing: the fit has no per-run random effects and no pilots are replicates "
            "(same setting, another seed), so seed-to-seed spread is not in the interval "
            "(it holds only evaluation noise and posterior uncertainty)",
        )
    last = _last_logs(cm)  # (R, N) of (y, n) or NaN
    sd = np.zeros(n_nodes)
    for j in range(n_nodes):
        ss, dof, noise = 0.0, 0, []
        for grp in groups:
            y = np.array([last[r][j][0] for r in grp])
            n = np.array([last[r][j][1] for r in grp])
            ok = np.isfinite(y)
            if ok.sum() < 2:
                continue
            ss += float(np.sum((y[ok] - y[ok].mean()) ** 2))
            dof += int(ok.sum()) - 1
            noise += list(y[ok] * (1 - y[ok]) / n[ok])
        if dof:
            sd[j] = np.sqrt(max(0.0, ss / dof - float(np.mean(noise))))
    sds = ", ".join(f"{a} {s:.3f}" for a, s in zip(cm.network.names, sd, strict=True))
    return SeedSpread(
        "replicates",
        sd,
        len(groups),
        f"from {len(groups)} group(s) of pilot replicates: sd beyond binomial noise {sds} "
        "(an offset per agent, constant over steps); the fit has no per-run random effects",
    )


def _replicate_groups(n_runs: int, hyper: Mapping[str, np.ndarray] | None) -> list[list[int]]:
    if hyper is None or n_runs < 2:
        return []
    cols = [np.asarray(v, float) for v in hyper.values()]
    keys: dict[tuple, list[int]] = {}
    for r in range(n_runs):
        key = tuple("nan" if not np.isfinite(c[r]) else float(f"{c[r]:.12g}") for c in cols)
        keys.setdefault(key, []).append(r)
    return [g for g in keys.values() if len(g) >= 2]


def _last_logs(cm: CurveModel) -> list[list[tuple[float, float]]]:
    """Per run and node, the last logged ``(k / n, n)`` (NaN when never logged)."""
    out = [[(np.nan, np.nan)] * cm.network.size for _ in range(cm.n_runs)]
    best = {}
    for i in range(cm.k.size):
        key = (int(cm.run_idx[i]), int(cm.node_idx[i]))
        if key not in best or cm.t_idx[i] >= cm.t_idx[best[key]]:
            best[key] = i
    for (r, j), i in best.items():
        out[r][j] = (float(cm.k[i]) / float(cm.n_eval[i]), float(cm.n_eval[i]))
    return out


def noise_probability(A: np.ndarray, offset: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``(p, finite)``: the success probability ``clip(A + offset, 0, 1)`` (float64) of a
    new run's evaluation at mean competences ``A`` (a non-finite level counts as 0.5, and
    ``finite`` marks the others), ``offset`` broadcastable to ``A`` or None."""
    finite = np.isfinite(A)
    p = np.where(finite, A, 0.5).astype(float)
    if offset is not None:
        p = p + offset
    return np.clip(p, 0.0, 1.0), finite


def evaluation_noise(
    A: np.ndarray,
    n: np.ndarray,
    rng: np.random.Generator,
    *,
    phi: np.ndarray | None = None,
    offset: np.ndarray | None = None,
) -> np.ndarray:
    """Logged competences ``k / n`` of curves ``A`` (agents last): ``k ~ Binomial(n, p)``
    with ``p = clip(A + offset, 0, 1)`` (beta-binomial with concentration ``phi``).

    Args:
        A: Mean competences, any shape ``(..., N)``; NaN (a failed solve) stays NaN.
        n: Probe count per agent ``(N,)``.
        rng: Generator.
        phi: Beta-binomial concentration, broadcastable to ``A`` (None: binomial).
        offset: Seed offset broadcastable to ``A`` (None: none).

    Returns:
        The logged competences, the shape and dtype of ``A``.
    """
    A = np.asarray(A)
    p, finite = noise_probability(A, offset)
    bad = ~finite
    nn = np.broadcast_to(np.asarray(n, np.int64), p.shape)
    if phi is not None:
        ph = np.broadcast_to(np.asarray(phi, float), p.shape)
        p = rng.beta(np.maximum(p * ph, 1e-12), np.maximum((1 - p) * ph, 1e-12))
    y = rng.binomial(nn, p) / nn
    return np.where(bad, np.nan, y).astype(A.dtype if A.dtype.kind == "f" else float)

"""Haploid Wright–Fisher and Moran populations (drift and selection), and their closed forms.

Two types, A (fitness ``1 + s``) and B (fitness 1), in a population of ``N`` haploid
individuals; ``p`` is the frequency of A. Both models start from the count
``round(N p0)`` (so the start frequency is ``round(N p0) / N``; :func:`start_frequency`).

* **Wright–Fisher**: each generation is resampled at once,
  ``N p' ~ Binomial(N, p (1 + s) / (1 + s p))``.
* **Moran**: one birth–death event per time step; the parent is drawn by fitness
  (A with probability ``(1 + s) i / ((1 + s) i + N - i)``), the one who dies uniformly
  (possibly the parent itself, so the count moves by at most one). ``N`` events make one
  generation, and the frequencies are reported once per generation.

Closed forms (diffusion limit unless stated):

* neutral variance (exact for both models, any ``t``):
  WF ``p0 (1 - p0) (1 - (1 - 1/N)^t)``; Moran ``p0 (1 - p0) (1 - (1 - 2/N^2)^(N t))``
  ≈ ``p0 (1 - p0) (1 - exp(-2 t / N))``: per generation Moran drifts twice as fast;
* Kimura's fixation probability ``(1 - exp(-2 N_e s p0)) / (1 - exp(-2 N_e s))`` with
  ``N_e = N`` for Wright–Fisher and ``N_e = N / 2`` for Moran (``p0`` when ``s = 0``).

Every simulation is vmapped over replicates, computes in float64 and takes a keyword-only
PRNG ``key``.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, PRNGKeyArray

from ._jaxsetup import use_float64
from .spec import SpecError

__all__ = [
    "POPULATION_MODELS",
    "fixation_probability",
    "moran",
    "neutral_variance",
    "simulate_population",
    "start_frequency",
    "wright_fisher",
]

#: The population models :func:`simulate_population` knows.
POPULATION_MODELS = ("wf", "moran")


def _check(N: int, p0: float, s: float, generations: int | None, replicates: int | None) -> None:
    if isinstance(N, bool) or int(N) != N or N < 2:
        raise SpecError(f"population size N must be an integer >= 2, got {N!r}")
    if not (math.isfinite(p0) and 0.0 <= p0 <= 1.0):
        raise SpecError(f"p0 must be in [0, 1], got {p0!r}")
    if not (math.isfinite(s) and s > -1.0):
        raise SpecError(f"selection coefficient s must be > -1 (fitness 1 + s > 0), got {s!r}")
    if generations is not None and (int(generations) != generations or generations < 1):
        raise SpecError(f"generations must be an integer >= 1, got {generations!r}")
    if replicates is not None and (int(replicates) != replicates or replicates < 1):
        raise SpecError(f"replicates must be an integer >= 1, got {replicates!r}")


def start_frequency(N: int, p0: float) -> float:
    """The frequency both models start from: ``round(N p0) / N``."""
    return round(N * p0) / N


@partial(jax.jit, static_argnames=("generations",))
def _wf(keys, N, i0, s, generations: int):
    """Counts / N, shape (R, generations + 1); ``N`` traced, so one compile serves every N."""

    def one(key):
        def gen(i, k):
            p = i / N
            p_sel = p * (1.0 + s) / (1.0 + s * p)
            i_next = jax.random.binomial(k, N, p_sel).astype(i.dtype)
            return i_next, i_next

        _, path = jax.lax.scan(gen, i0, jax.random.split(key, generations))
        return jnp.concatenate([i0[None], path]) / N

    return jax.vmap(one)(keys)


@partial(jax.jit, static_argnames=("N", "generations"))
def _moran(keys, N: int, i0, s, generations: int):
    """Counts / N after each generation of N events, shape (R, generations + 1)."""

    def event(i, u):
        w = (1.0 + s) * i + (N - i)
        up = (1.0 + s) * i / w * (N - i) / N  # A born, B dies
        down = (N - i) / w * i / N  # B born, A dies
        step = jnp.where(u < up, 1.0, jnp.where(u < up + down, -1.0, 0.0))
        return i + step, None

    def one(key):
        def gen(i, k):
            u = jax.random.uniform(k, (N,), dtype=i.dtype)
            i_next, _ = jax.lax.scan(event, i, u)
            return i_next, i_next

        _, path = jax.lax.scan(gen, i0, jax.random.split(key, generations))
        return jnp.concatenate([i0[None], path]) / N

    return jax.vmap(one)(keys)


def simulate_population(
    N: int,
    p0: float,
    s: float = 0.0,
    *,
    generations: int,
    replicates: int,
    model: Literal["wf", "moran"] = "wf",
    key: PRNGKeyArray,
) -> Array:
    """Allele-frequency trajectories of ``replicates`` independent populations.

    Args:
        N: Population size (individuals), an integer >= 2.
        p0: Initial frequency of type A in [0, 1] (rounded to a count, see
            :func:`start_frequency`).
        s: Selection coefficient of A (fitness ``1 + s``), > -1.
        generations: Number of generations to simulate, >= 1.
        replicates: Number of independent populations, >= 1 (vmapped).
        model: ``"wf"`` (Wright–Fisher) or ``"moran"`` (N birth–death events per generation).
        key: PRNG key (keyword-only); replicate ``r`` uses ``jax.random.split(key, R)[r]``.

    Returns:
        Frequencies of A, float64, shape ``(replicates, generations + 1)``; column 0 is the
        start frequency, column ``t`` the frequency after ``t`` generations.

    Raises:
        SpecError: An argument out of range or an unknown model.
    """
    _check(N, p0, s, generations, replicates)
    if model not in POPULATION_MODELS:
        raise SpecError(f"unknown population model {model!r}; choose wf or moran")
    use_float64(True)
    i0 = jnp.asarray(float(round(N * p0)), jnp.float64)
    keys = jax.random.split(key, int(replicates))
    s_arr = jnp.asarray(s, jnp.float64)
    if model == "wf":
        return _wf(keys, jnp.asarray(float(N), jnp.float64), i0, s_arr, int(generations))
    return _moran(keys, int(N), i0, s_arr, int(generations))


def wright_fisher(
    N: int, p0: float, s: float = 0.0, *, generations: int, replicates: int, key: PRNGKeyArray
) -> Array:
    """Haploid Wright–Fisher trajectories; see :func:`simulate_population` (``model="wf"``)."""
    return simulate_population(
        N, p0, s, generations=generations, replicates=replicates, model="wf", key=key
    )


def moran(
    N: int, p0: float, s: float = 0.0, *, generations: int, replicates: int, key: PRNGKeyArray
) -> Array:
    """Moran trajectories reported per generation; see :func:`simulate_population`."""
    return simulate_population(
        N, p0, s, generations=generations, replicates=replicates, model="moran", key=key
    )


def neutral_variance(
    N: int, p0: float, t: int | np.ndarray, *, model: Literal["wf", "moran"] = "wf"
) -> np.ndarray:
    """Exact variance of the frequency after ``t`` generations without selection.

    Args:
        N: Population size.
        p0: Start frequency (use :func:`start_frequency` to compare with a simulation).
        t: Generations, scalar or array of shape ``(T,)``.
        model: ``"wf"``: ``p0 (1-p0) (1 - (1 - 1/N)^t)``; ``"moran"``:
            ``p0 (1-p0) (1 - (1 - 2/N^2)^(N t))`` (heterozygosity decays by ``1 - 2/N^2``
            per birth–death event).

    Returns:
        The variance, float64, the shape of ``t``.
    """
    _check(N, p0, 0.0, None, None)
    t = np.asarray(t, dtype=float)
    if model == "wf":
        decay = (1.0 - 1.0 / N) ** t
    elif model == "moran":
        decay = (1.0 - 2.0 / N**2) ** (N * t)
    else:
        raise SpecError(f"unknown population model {model!r}; choose wf or moran")
    return p0 * (1.0 - p0) * (1.0 - decay)


def fixation_probability(
    N: int, s: float, p0: float, *, model: Literal["wf", "moran"] = "wf"
) -> float:
    """Kimura's diffusion fixation probability of type A.

    ``(1 - exp(-2 N_e s p0)) / (1 - exp(-2 N_e s))`` with ``N_e = N`` (Wright–Fisher,
    per-generation variance ``p(1-p)/N``) or ``N_e = N/2`` (Moran, variance ``2 p(1-p)/N``);
    ``p0`` when ``s = 0``. Computed with ``expm1`` so that small ``N s`` stays accurate.

    Args:
        N: Population size.
        s: Selection coefficient of A.
        p0: Start frequency.
        model: ``"wf"`` or ``"moran"``.

    Returns:
        The probability in [0, 1].
    """
    _check(N, p0, s, None, None)
    if model not in POPULATION_MODELS:
        raise SpecError(f"unknown population model {model!r}; choose wf or moran")
    ne = N if model == "wf" else N / 2.0
    a = 2.0 * ne * s
    if a == 0.0:
        return float(p0)
    if a > 700.0:  # exp(-a) underflows harmlessly; keep the ratio finite
        return float(-math.expm1(-a * p0))
    if a < -700.0:  # deleterious and strong: ratio of huge numbers, in logs
        return float(math.exp(-a * p0 + a)) if p0 < 1.0 else 1.0
    return float(math.expm1(-a * p0) / math.expm1(-a))

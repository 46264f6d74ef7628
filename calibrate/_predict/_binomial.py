"""Exact binomial draws from random bits, vectorised (the new run's evaluation noise in
:func:`calibrate.predict`'s compiled program).

``k ~ Binomial(n, p)`` for any ``p`` in [0, 1] in two exact stages, with ``p`` split as
``p_a = floor(p * GRID) / GRID`` (a grid point below it) and the rest:

1. ``X ~ Binomial(n, p_a)`` by Walker's alias method on a table built once per ``n``
   (:func:`alias_tables`: ``GRID`` rows of ``n + 1`` cells): one random cell ``j``, kept
   with its probability ``prob[j]`` or replaced by its alias;
2. thinning: each of the ``n - X`` failures turns into a success with probability
   ``q = (p - p_a) / (1 - p_a)``, so ``Y ~ Binomial(n - X, q)`` (``q < 1 / (GRID (1 - p_a))``,
   ``E[Y] <= n / GRID``), drawn by inversion: :data:`TERMS` terms for every draw, then a
   loop over ``Y`` while some draw of the batch still needs it (:func:`binomial_counts`).

Every trial then succeeds with probability ``p_a + (1 - p_a) q = p``, independently, so
``k = X + Y`` is binomial, not an approximation. One 32-bit word per draw, times ``n + 1``
as a 64-bit product: its high word picks the cell (a bias below ``(n + 1) / 2^32``), its
low word is the uniform of the alias decision (2^-32 apart; in float32 its top 23 bits,
2^-23 apart, so that it is never 1), and what that decision leaves of it is the
inversion's uniform. No transcendental per draw beyond one
``log1p`` and ``exp``, two gathers, where numpy's generator (BTPE, or inversion for small
``n p``) costs ~150-300 ns per draw on this machine class.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .._new_run import noise_probability

__all__ = ["GRID", "MAX_N", "alias_tables", "binomial_counts", "logged_values"]

#: Rows of the alias tables: grid points ``a / GRID``, ``a = 0 .. GRID - 1``.
GRID = 4096

#: Largest probe count the tables are built for (larger ones use numpy's generator).
MAX_N = 256


@functools.lru_cache(maxsize=8)
def _alias_table(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Alias tables of ``Binomial(n, a / GRID)`` for every row ``a``: keep-probabilities
    ``(GRID, n + 1)`` float64 and aliases ``(GRID, n + 1)`` int32.

    Built for all rows at once: ``n + 1`` times, each row's smallest open cell (scaled
    probability <= 1, the open cells averaging 1) is closed with that probability and the
    row's largest open cell as its alias, which gives up what the small one lacks (and
    stays >= 0). Cells still open at the end are kept with probability 1.
    """
    k = np.arange(n + 1)
    log_choose = np.concatenate([[0.0], np.cumsum(np.log((n - k[1:] + 1) / k[1:]))])
    p = np.arange(GRID)[:, None] / GRID
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = log_choose + k * np.log(p) + (n - k) * np.log1p(-p)
    pmf = np.where(p == 0, (k == 0).astype(float), np.exp(np.nan_to_num(logs, nan=-np.inf)))
    scaled = pmf / pmf.sum(axis=1, keepdims=True) * (n + 1)
    prob = np.ones((GRID, n + 1))
    alias = np.tile(k.astype(np.int32), (GRID, 1))
    rows = np.arange(GRID)
    open_ = np.ones((GRID, n + 1), bool)
    for _ in range(n):
        small = np.argmin(np.where(open_, scaled, np.inf), axis=1)
        large = np.argmax(np.where(open_, scaled, -np.inf), axis=1)
        go = (small != large) & (scaled[rows, small] < 1.0)
        r, s, g = rows[go], small[go], large[go]
        prob[r, s], alias[r, s] = scaled[r, s], g
        scaled[r, g] -= 1.0 - scaled[r, s]
        open_[r, s] = False
    return prob, alias


def alias_tables(n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Alias tables for the agents' probe counts (one per distinct count), flattened.

    Args:
        n: Probe count per agent ``(N,)``, each in ``1 .. MAX_N``.

    Returns:
        ``prob`` float64 and ``alias`` int32, each ``(C * GRID, n_max + 1)`` for the ``C``
        distinct counts (table ``c``'s row ``a`` at ``c * GRID + a``), and each agent's
        table ``c`` ``(N,)`` int32.

    Raises:
        ValueError: A probe count outside ``1 .. MAX_N``.
    """
    n = np.asarray(n, dtype=np.int64).reshape(-1)
    if n.size == 0 or n.min() < 1 or n.max() > MAX_N:
        raise ValueError(f"probe counts must be in 1..{MAX_N}, got {n.tolist()}")
    return _tables(tuple(n.tolist()))


@functools.lru_cache(maxsize=8)
def _tables(n: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`alias_tables` of valid probe counts, once per set of counts (a chunked
    forecast asks for them every chunk)."""
    counts, table = np.unique(np.asarray(n), return_inverse=True)
    width = int(max(n)) + 1
    prob = np.ones((counts.size, GRID, width))
    alias = np.zeros((counts.size, GRID, width), dtype=np.int32)
    for i, ni in enumerate(counts.tolist()):
        pr, al = _alias_table(int(ni))
        prob[i, :, : ni + 1], alias[i, :, : ni + 1] = pr, al
    out = (prob.reshape(-1, width), alias.reshape(-1, width), table.astype(np.int32))
    for a in out:  # shared by every caller: read-only
        a.flags.writeable = False
    return out


#: Terms of the thinning's inversion taken for every draw (``Y <= TERMS``); more are
#: needed with ``P(Y > 4) < 1e-8`` at ``n <= 256`` (``E[Y] <= n / GRID``).
TERMS = 4


def binomial_counts(
    bits: jax.Array,
    p: jax.Array,
    n: jax.Array,
    prob: jax.Array,
    alias: jax.Array,
    table: jax.Array,
    *,
    whole: bool = True,
    terms: int | None = None,
) -> jax.Array:
    """``k ~ Binomial(n, p)`` from one random 32-bit word per draw (agents last).

    Computed on the flattened arrays (a last axis of 3 agents vectorises badly on CPU).
    The thinning's inversion (the module docstring) takes its first :data:`TERMS` steps
    for every draw; ``whole`` finishes the few draws that need more (``E[Y] <= n / GRID``:
    ~1e-10 of the draws at ``n = 100``) with a loop, else they come back as ``-1``, for
    the caller to draw the batch again with ``whole`` (the same values elsewhere): a loop,
    or a branch to one, in the compiled program costs as much as the draws themselves.

    Args:
        bits: Uniform random words, uint32, shape ``(..., N)``.
        p: Success probabilities in [0, 1], broadcastable to ``bits``.
        n: Probe count per agent ``(N,)`` (int32), as given to :func:`alias_tables`.
        prob: :func:`alias_tables`' keep-probabilities (any float dtype).
        alias: :func:`alias_tables`' aliases.
        table: :func:`alias_tables`' table per agent ``(N,)``.
        whole: Run the inversion to the end (else ``-1`` where it needs more terms).
        terms: The inversion's terms for every draw (default :data:`TERMS`).

    Returns:
        Counts ``k``, int32, the shape of ``bits``.
    """
    shape = bits.shape
    f = p.dtype if jnp.issubdtype(p.dtype, jnp.floating) else jnp.float32
    k, need = _draw(
        bits.reshape(-1),
        jnp.broadcast_to(jnp.clip(p, 0.0, 1.0), shape).reshape(-1).astype(f),
        jnp.broadcast_to(n.astype(jnp.int32), shape).reshape(-1),
        jnp.broadcast_to(table.astype(jnp.int32), shape).reshape(-1),
        prob.astype(f).reshape(-1),
        alias.reshape(-1),
        alias.shape[-1],
        whole=whole,
        terms=TERMS if terms is None else int(terms),
    )
    return (k if whole else jnp.where(need, -1, k)).reshape(shape)


def _draw(bits, p, n, table, prob, alias, width, whole: bool, terms: int):
    """Flat binomial draws: ``(k, need)``; ``whole=False`` stops the thinning's inversion
    at ``Y = terms`` and flags the draws that need more (``need``), ``whole=True`` runs it
    to the end (the same values elsewhere)."""
    f = p.dtype
    cells = (n + 1).astype(jnp.uint32)
    # the word times the cell count, a 64-bit product from 16-bit halves (no integer
    # division, which the CPU does not vectorise): its high word is the alias cell, its low
    # word what is left of the word's uniform, a uniform in (0, 1)
    hi, lo = bits >> 16, bits & jnp.uint32(0xFFFF)
    a1, a2 = hi * cells, lo * cells  # each < 2^25
    j = (a1 + (a2 >> 16)) >> 16
    rest = (a1 << 16) + a2  # wraps: the product's low word
    if jnp.finfo(f).nmant >= 32:  # float64 holds it whole
        v = (rest.astype(f) + 0.5) * (1.0 / 4294967296.0)
    else:  # its top 23 bits as an odd multiple of 2^-24: exact, never 0 or 1
        v = ((rest >> 9) * 2 + 1).astype(f) * (1.0 / 16777216.0)
    a = jnp.minimum(jnp.floor(p * GRID), GRID - 1).astype(jnp.int32)
    cell = (table * GRID + a) * width + j.astype(jnp.int32)
    keep = prob[cell]
    stay = v < keep
    x = jnp.where(stay, j.astype(jnp.int32), alias[cell])
    w = jnp.where(stay, v / keep, (v - keep) / jnp.maximum(1.0 - keep, 1e-30))
    # thinning: Y ~ Binomial(n - X, q) by inversion with the leftover uniform w
    pa = a.astype(f) / GRID
    q = jnp.clip((p - pa) / (1.0 - pa), 0.0, 1.0)
    m = n - x
    p0 = jnp.exp(m.astype(f) * jnp.log1p(-jnp.minimum(q, 1.0 - 1e-7)))
    p0 = jnp.where(q >= 1.0, (m == 0).astype(f), p0)
    ratio = q / jnp.maximum(1.0 - q, 1e-30)
    # Y = the number of P(Y <= i) that w passes, while that CDF is below 1 by more than
    # rounding: in float32 a CDF whose rest is below 2^-23 stops growing (its rest, ~the
    # chance of getting there, is taken as 0), where the inversion would run on to Y = m
    top = 1.0 - 2.0 * float(jnp.finfo(f).epsneg)
    y, pk, cdf = jnp.zeros_like(m), p0, p0
    for i in range(1, terms + 1):
        y = y + ((w >= cdf) & (cdf < top) & (m >= i)).astype(jnp.int32)
        pk = pk * jnp.maximum(m - i + 1, 0).astype(f) / i * ratio
        cdf = cdf + pk
    need = (w >= cdf) & (cdf < top) & (m > terms)  # Y > terms
    if whole:
        y = jnp.where(need, _invert(w, m, ratio, pk, cdf, terms, top), y)
    return jnp.where(p >= 1.0, n, x + y), need


def _invert(w, m, ratio, pk, cdf, y0: int, top: float) -> jax.Array:
    """Inversion of ``Binomial(m, q)`` from ``Y = y0`` (``pk = P(Y = y0)``, ``cdf = P(Y <=
    y0)``, ``ratio = q / (1 - q)``): the smallest ``Y`` with ``w < P(<= Y)``, at most
    ``m``, or where ``P(<= Y)`` reaches ``top`` (1 to rounding)."""

    def more(c):
        y, _, cdf = c
        return jnp.any((w >= cdf) & (cdf < top) & (y < m))

    def step(c):
        y, pk, cdf = c
        go = (w >= cdf) & (cdf < top) & (y < m)
        nxt = pk * (m - y).astype(pk.dtype) / (y + 1).astype(pk.dtype) * ratio
        return jnp.where(go, y + 1, y), jnp.where(go, nxt, pk), jnp.where(go, cdf + nxt, cdf)

    y, _, _ = jax.lax.while_loop(more, step, (jnp.minimum(jnp.full_like(m, y0), m), pk, cdf))
    return y


#: Settings per call of :func:`logged_values`' compiled program (one shape for any count).
ROWS = 128


@jax.jit
def _counts(bits, p, n, prob, alias, table):
    return binomial_counts(bits, p, n, prob, alias, table, whole=True)


def logged_values(
    A: np.ndarray, n: np.ndarray, offset: np.ndarray, words: np.ndarray
) -> np.ndarray:
    """Logged competences ``k / n`` of a new run: ``k ~ Binomial(n, clip(A + offset))``
    from one random word per value (:func:`binomial_counts`, float64, on the host's CPU
    in blocks of :data:`ROWS` settings: one compiled program for any count), about 10 ns
    per value where numpy's generator takes 150-300 ns.

    Args:
        A: Mean competences ``(S, G, N)`` (NaN: a failed solve, stays NaN).
        n: Probe count per agent ``(N,)``, each in ``1 .. MAX_N``.
        offset: Seed offset per draw and agent ``(G, N)``.
        words: Uniform random words ``(S, G, N)`` uint32.

    Returns:
        ``k / n`` ``(S, G, N)`` in the dtype of ``A`` (float64 for a non-float ``A``).
    """
    A = np.asarray(A)
    prob, alias, table = alias_tables(n)
    p, finite = noise_probability(A, np.asarray(offset, float)[None])
    k = np.empty(A.shape, np.int32)
    with jax.enable_x64(True):
        tables = (jnp.asarray(np.asarray(n, np.int32)), jnp.asarray(prob), jnp.asarray(alias),
                  jnp.asarray(table))  # fmt: skip
        for lo in range(0, A.shape[0], ROWS):
            r = min(ROWS, A.shape[0] - lo)
            pad = ((0, ROWS - r), (0, 0), (0, 0))
            bits = np.pad(words[lo : lo + r], pad)
            k[lo : lo + r] = np.asarray(_counts(bits, np.pad(p[lo : lo + r], pad), *tables))[:r]
    y = k / np.asarray(n, float)
    return np.where(finite, y, np.nan).astype(A.dtype if A.dtype.kind == "f" else float)

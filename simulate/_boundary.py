"""Stability boundaries along a 1-D sweep, located by bisection on the leading eigenvalue.

Continuous time (``ode``): the steady state loses stability where the largest real part of
the Jacobian's eigenvalues crosses 0 — a **Hopf** bifurcation when the leading eigenvalue is a
complex pair, a **fold** (saddle-node) when it is real. Discrete learning steps (``map``,
``A <- A + eta F(A)``): where the spectral radius of ``I + eta J`` crosses 1 — **period
doubling** when the critical multiplier is -1 (``eta |lambda| = 2`` for a real eigenvalue
``lambda < 0``), **Neimark–Sacker** for a complex pair, **fold** at +1.

Theory used by the tests: a cyclic negative-feedback chain of ``n`` stages with equal
rates is unstable when its loop gain exceeds ``sec(pi/n)**n`` (the secant condition,
Tyson & Othmer 1978; Thron 1991), see :func:`secant_threshold`.
"""

from __future__ import annotations

import dataclasses
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._analysis import linear_stability
from ._batch import _solve_batch
from ._kinetics import Model, Schedule
from ._options import SolveOptions
from ._params import set_param
from .spec import SpecError

__all__ = [
    "Boundary",
    "critical_type",
    "find_boundaries",
    "instability_kind",
    "map_threshold",
    "secant_threshold",
    "stability_scan",
]

_IMAG_TOL = 1e-7


@dataclasses.dataclass(frozen=True)
class Boundary:
    """One stability boundary along a swept parameter.

    Attributes:
        param: Swept parameter name.
        value: Critical value (units of the parameter).
        kind: ``"Hopf"``, ``"fold"``, ``"period doubling"`` or ``"Neimark–Sacker"``.
        direction: ``"destabilising"`` if the steady state is stable below ``value``,
            else ``"stabilising"``.
        frequency: |Im| of the critical eigenvalue (rad per time unit; 0 for real ones).
        indicator: ``"max_real"`` (ode) or ``"spectral_radius - 1"`` (map).
    """

    param: str
    value: float
    kind: str
    direction: str
    frequency: float
    indicator: str

    def to_dict(self) -> dict:
        """JSON-ready dict."""
        return dataclasses.asdict(self)


def secant_threshold(n: int) -> float:
    """Critical loop gain ``sec(pi/n)**n`` of a negative-feedback ring of ``n`` equal stages."""
    if int(n) < 3:
        raise SpecError(f"the secant condition needs n >= 3 stages (1, 2 never oscillate), got {n}")
    return 1.0 / math.cos(math.pi / int(n)) ** int(n)


def map_threshold(eigenvalues: np.ndarray) -> float:
    """Critical step ``eta = 2 / max|lambda|`` of the map for real negative eigenvalues."""
    ev = np.asarray(eigenvalues)
    if np.any(np.abs(np.imag(ev)) > _IMAG_TOL) or np.any(np.real(ev) >= 0):
        raise SpecError("map_threshold needs real negative eigenvalues (a stable node)")
    return float(2.0 / np.max(np.abs(np.real(ev))))


@eqx.filter_jit
def _stability(model: Model, y_guess, x):
    return linear_stability(model, y_guess, x)


def _indicator(st, method: str) -> float:
    if not bool(st.found):
        return float("nan")
    return float(st.max_real) if method == "ode" else float(st.spectral_radius) - 1.0


def instability_kind(values: np.ndarray, *, discrete: bool) -> str:
    """The bifurcation the leading eigenvalue heads for: of a Jacobian (``discrete`` False;
    leading = largest real part) ``"Hopf"`` for a complex pair, else ``"fold"``; of a map's
    multipliers (``discrete`` True; leading = largest modulus) ``"Neimark–Sacker"`` for a
    complex pair, ``"period doubling"`` for a real negative one, else ``"fold"``."""
    v = np.asarray(values)
    if not discrete:
        return "Hopf" if abs(v[np.argmax(np.real(v))].imag) > _IMAG_TOL else "fold"
    lead = v[np.argmax(np.abs(v))]
    if abs(lead.imag) > _IMAG_TOL:
        return "Neimark–Sacker"
    return "period doubling" if lead.real < 0 else "fold"


def critical_type(st, model: Model, method: str) -> tuple[str, float]:
    """Bifurcation type and |Im| of the critical eigenvalue at a boundary."""
    ev = np.asarray(st.eigenvalues)
    if method == "ode":
        kind = instability_kind(ev, discrete=False)
        return kind, abs(float(ev[np.argmax(np.real(ev))].imag))
    mu = 1.0 + float(model.eta) * ev
    kind = instability_kind(mu, discrete=True)
    k = int(np.argmax(np.abs(mu)))
    return kind, (abs(float(ev[k].imag)) if kind == "Neimark–Sacker" else 0.0)


def _guesses(model: Model, name: str, values: np.ndarray, schedule: Schedule, t1: float):
    """Steady-state guesses from ODE solves at every grid value, shape ``(num, S)``."""
    models = jax.vmap(lambda v: set_param(model, name, v))(jnp.asarray(values, dtype=float))
    sols = _solve_batch(
        models, schedule, t1=t1, options=SolveOptions(n_points=201), fast_hill=False
    )
    T = sols.states.shape[1]
    A = np.nanmean(np.asarray(sols.states)[:, -max(T // 4, 1) :], axis=1)
    A = np.where(np.isfinite(A), A, 0.5)
    return np.concatenate([A] * (1 + model.delay_stages), axis=1), float(sols.inputs[0, -1])


def stability_scan(
    model: Model,
    name: str,
    values: np.ndarray,
    *,
    method: str = "ode",
    schedule: Schedule | str | None = "on@0",
    t1: float = 50.0,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Stability indicator on a grid.

    Returns:
        (indicator per value — max Re λ for ``ode``, spectral radius − 1 for ``map``;
        NaN where no steady state was found —, steady states ``(num, S)``, input value).
    """
    if method not in ("ode", "map"):
        raise SpecError(f"stability boundaries need method 'ode' or 'map', got {method!r}")
    sched = Schedule.parse(schedule) if isinstance(schedule, str) else (schedule or Schedule.step())
    values = np.asarray(values, dtype=float)
    for v in (values.min(), values.max()):
        set_param(model, name, float(v))  # domain check
    guesses, x = _guesses(model, name, values, sched, t1)
    ind, steady = [], []
    for v, g in zip(values, guesses, strict=True):
        m = set_param(model, name, float(v))
        st = _stability(m, jnp.asarray(g), x)
        ind.append(_indicator(st, method))
        steady.append(np.asarray(st.steady))
    return np.asarray(ind), np.asarray(steady), x


def find_boundaries(
    model: Model,
    name: str,
    values: np.ndarray,
    *,
    method: str = "ode",
    schedule: Schedule | str | None = "on@0",
    t1: float = 50.0,
    xtol: float = 1e-10,
    max_iter: int = 100,
) -> list[Boundary]:
    """Every stability boundary of ``model`` along ``name`` within the grid ``values``.

    Brackets are the sign changes of the indicator on the grid; each is refined by
    bisection, continuing the steady state from the bracket's end (so the same branch is
    followed), until the bracket is narrower than ``xtol * (1 + |value|)``.

    Args:
        model: Base model.
        name: Swept parameter (see :func:`~simulate.set_param`).
        values: Increasing grid, shape ``(num,)``; finer grids resolve close boundaries.
        method: ``"ode"`` (Re λ = 0) or ``"map"`` (spectral radius of I + ηJ = 1).
        schedule: Input schedule; the input value at its end is used.
        t1: Horizon of the ODE solves that provide the steady-state guesses.
        xtol: Relative bracket width at which bisection stops.
        max_iter: Bisection iteration cap per boundary.

    Returns:
        Boundaries in increasing ``value``.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or values.size < 2 or np.any(np.diff(values) <= 0):
        raise SpecError("find_boundaries needs an increasing grid of >= 2 values")
    ind, steady, x = stability_scan(model, name, values, method=method, schedule=schedule, t1=t1)
    label = "max_real" if method == "ode" else "spectral_radius - 1"
    out = []
    for i in range(len(values) - 1):
        fa, fb = ind[i], ind[i + 1]
        if not (np.isfinite(fa) and np.isfinite(fb)) or (fa < 0) == (fb < 0):
            continue
        lo, hi = values[i], values[i + 1]
        g_lo = steady[i]
        for _ in range(max_iter):
            if hi - lo <= xtol * (1.0 + abs(lo)):
                break
            mid = 0.5 * (lo + hi)
            st = _stability(set_param(model, name, mid), jnp.asarray(g_lo), x)
            fm = _indicator(st, method)
            if not np.isfinite(fm):
                break
            if (fm < 0) == (fa < 0):
                lo, g_lo = mid, np.asarray(st.steady)
            else:
                hi = mid
        crit = 0.5 * (lo + hi)
        m = set_param(model, name, crit)
        st = _stability(m, jnp.asarray(g_lo), x)
        kind, freq = critical_type(st, m, method)
        direction = "destabilising" if fa < 0 else "stabilising"
        out.append(Boundary(name, float(crit), kind, direction, freq, label))
    return out

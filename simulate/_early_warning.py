"""Early-warning indicators of the model's instabilities, from its linearised noisy dynamics.

Near a stable fixed point under small noise the fluctuations ``xi = y - y*`` follow a linear
process whose stationary variance and autocorrelation are known in closed form; as the
fixed point nears its stability boundary the variance diverges and the autocorrelation
moves towards the critical eigenvalue ("critical slowing down"). Three linearisations, one
per way the model's dynamics run:

* **continuous time** (``solve(method="ode"/"sde")``; feedback/coupling through the network,
  policy lag through the Erlang delay stages): the Ornstein–Uhlenbeck process
  ``d xi = J xi dt + B dW``, ``J`` the Jacobian at the fixed point
  (:func:`~simulate.linear_stability`, delay stages included), ``B`` the SDE's diffusion
  there (Wright–Fisher ``sigma_i sqrt(A_i (1 - A_i))``). The stationary covariance solves the
  Lyapunov equation ``J S + S J^T + B B^T = 0``; the autocovariance at lag ``D`` is
  ``expm(J D) S``. Distance to the boundary: ``-max Re(lambda)`` (1/time).
* **finite learning steps** (``solve(method="map")``): ``xi' = M xi + sqrt(eta) B eps`` with
  ``M = I + eta J`` (the SDE's Euler–Maruyama step of size ``eta``): ``S = M S M^T +
  eta B B^T``, autocovariance at lag ``k`` steps ``M^k S``. Distance: ``1 - max |mu|``.
* **the delayed map of policy lag and finite steps**, ``x_{t+1} = x_t - g x_{t-tau} +
  sigma eps_t`` (``g = eta lambda``, lag ``tau`` steps): the same with ``M`` its companion
  matrix; stable iff ``g < 2 sin(pi / (2 (2 tau + 1)))`` (:func:`delayed_map_boundary`).

Which sign of the autocorrelation announces which instability is :data:`WARNING_SIGNS`: a
flip (period doubling, finite steps without lag: multiplier -> -1) makes the lag-1
autocorrelation negative, towards -1; a fold (a slow approach, eigenvalue -> 0, multiplier ->
+1) makes it rise towards +1; an oscillation (Hopf; Neimark–Sacker, the lag's oscillation,
a complex pair crossing the unit circle at angle ``theta``) makes the autocorrelation
function oscillate, lag-1 tending to ``cos(theta)`` (to ``cos(omega D)`` in continuous time),
which for the delayed map is ``cos(pi / (2 tau + 1))``: -1 without lag, +0.5 at lag 1. The
variance rises before each of them.

Lyapunov equations are solved in vectorised form (a linear system of ``S^2`` unknowns for
``S`` state variables): fine for the model's tens of variables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import expm
from jaxtyping import Array, ArrayLike

from ._analysis import _dynamic_index, linear_stability
from ._boundary import instability_kind, stability_scan
from ._kinetics import Model, Schedule
from ._params import set_param
from ._solve_core import apply_dtype, is_traced
from .spec import SpecError

__all__ = [
    "WARNING_SIGNS",
    "EarlyWarning",
    "delayed_map_boundary",
    "delayed_map_warning",
    "early_warning",
    "linear_warning",
    "warning_scan",
]

#: Instability (as :func:`~simulate.instability_kind` names it) -> what announces it.
WARNING_SIGNS: Mapping[str, str] = MappingProxyType(
    {
        "fold": "slowing down: a real eigenvalue -> 0 (multiplier -> +1); the lag-1 "
        "autocorrelation rises towards +1 and the variance grows",
        "period doubling": "flip (finite learning steps): a multiplier -> -1; the lag-1 "
        "autocorrelation turns negative, towards -1 (alternating fluctuations), and the "
        "variance grows",
        "Hopf": "oscillation (feedback, lag): a complex pair -> the imaginary axis at "
        "+-i omega; the autocorrelation function oscillates, lag-D tending to cos(omega D) "
        "(its sign depends on omega D, not +-1), and the variance grows",
        "Neimark–Sacker": "oscillation of the stepped dynamics (policy lag): a complex "
        "multiplier pair -> the unit circle at angle theta; lag-k autocorrelation tends to "
        "cos(k theta) (delayed map: theta = pi / (2 tau + 1), lag-1 +0.5 at tau 1), and the "
        "variance grows",
    }
)


class EarlyWarning(eqx.Module):
    """Stationary fluctuation statistics of a stable fixed point under small noise.

    Attributes:
        variance: Stationary variance of each observed variable (an agent's competence),
            shape ``(N,)``, units of the variable squared (NaN where the fixed point is not
            stable; 0 for an agent without noise or dynamics).
        autocorrelation: Autocorrelation at lags ``1..L`` (row ``k - 1``: lag ``k`` times
            ``interval``), shape ``(L, N)``; row 0 is the lag-1 autocorrelation.
        covariance: Stationary covariance of the whole linear state (delay stages and, for
            the delayed map, past values included), shape ``(S, S)``.
        eigenvalues: Of the drift Jacobian ``J`` (continuous time, 1/time) or the
            multipliers of the step map (discrete), shape ``(S,)``, complex.
        distance: Distance to the stability boundary, scalar: ``-max Re(lambda)``
            (continuous, 1/time) or ``1 - max |mu|`` (discrete); > 0 is stable.
        interval: Time one lag spans (continuous: the ``interval`` asked for; discrete: one
            step, in the map's time units where it has them, else 1).
        discrete: Whether the dynamics are a map (static).
    """

    variance: Array
    autocorrelation: Array
    covariance: Array
    eigenvalues: Array
    distance: Array
    interval: Array
    discrete: bool = eqx.field(static=True, default=False)

    @property
    def kind(self) -> str:
        """The instability the leading eigenvalue heads for (``"fold"``, ``"Hopf"``,
        ``"period doubling"``, ``"Neimark–Sacker"``); not under ``jit``/``vmap``."""
        return instability_kind(np.asarray(self.eigenvalues), discrete=self.discrete)

    @property
    def sign(self) -> str:
        """What announces :attr:`kind` (:data:`WARNING_SIGNS`)."""
        return WARNING_SIGNS[self.kind]


def _noise_matrix(noise: Array, n: int) -> Array:
    b = jnp.asarray(noise, dtype=float)
    if b.ndim == 1:
        b = jnp.diag(b)
    if b.shape[0] != n:
        raise SpecError(f"noise has {b.shape[0]} rows, the drift has {n} variables")
    return b @ b.T


def _lyapunov(a: Array, q: Array, discrete: bool) -> Array:
    """``S`` with ``a S + S a^T + q = 0`` (continuous) or ``S = a S a^T + q`` (discrete)."""
    n = a.shape[0]
    eye = jnp.eye(n, dtype=a.dtype)
    if discrete:
        k = jnp.eye(n * n, dtype=a.dtype) - jnp.kron(a, a)
        s = jnp.linalg.solve(k, q.reshape(-1))
    else:
        k = jnp.kron(a, eye) + jnp.kron(eye, a)
        s = jnp.linalg.solve(k, -q.reshape(-1))
    s = s.reshape(n, n)
    return 0.5 * (s + s.T)


def linear_warning(
    *,
    drift: ArrayLike,
    noise: ArrayLike,
    discrete: bool = False,
    interval: float = 1.0,
    n_lags: int = 1,
    observed: np.ndarray | None = None,
) -> EarlyWarning:
    """Stationary variance and autocorrelations of a linear noisy system.

    Continuous time: ``d xi = J xi dt + B dW`` (Ornstein–Uhlenbeck); discrete:
    ``xi_{t+1} = M xi_t + B eps_t``.

    Args:
        drift: ``J`` (1/time) or ``M``, shape ``(S, S)``.
        noise: ``B``: diagonal amplitudes ``(S,)`` or a matrix ``(S, S')`` (per sqrt(time)
            in continuous time, per step in discrete time).
        discrete: A map (``M``) rather than a drift (``J``).
        interval: Time one lag spans (continuous time only; a map's lag is one step).
        n_lags: Number of lags ``L`` of the autocorrelation (static).
        observed: Indices of the variables reported (default: all), static.

    Returns:
        The :class:`EarlyWarning` (NaN statistics where the system is not stable).
    """
    if not is_traced((drift, noise)):
        apply_dtype("float64")
    a = jnp.asarray(drift, dtype=float)
    n = a.shape[0]
    if a.shape != (n, n) or n_lags < 1:
        raise SpecError(f"drift must be square and n_lags >= 1, got {a.shape}, {n_lags}")
    if discrete and interval != 1.0:
        raise SpecError("a map's lag is one step: interval applies to continuous time only")
    idx = np.arange(n) if observed is None else np.asarray(observed, dtype=int)
    ev = jnp.linalg.eigvals(a)
    distance = 1.0 - jnp.max(jnp.abs(ev)) if discrete else -jnp.max(ev.real)
    cov = _lyapunov(a, _noise_matrix(jnp.asarray(noise), n), discrete)
    step = a if discrete else expm(a * interval)

    def lag(c, _):
        c = step @ c
        return c, jnp.diag(c)

    _, acov = jax.lax.scan(lag, cov, None, length=int(n_lags))
    var = jnp.diag(cov)
    stable = distance > 0
    nan = jnp.asarray(jnp.nan, dtype=var.dtype)
    return EarlyWarning(
        variance=jnp.where(stable, var[idx], nan),
        autocorrelation=jnp.where(stable, acov[:, idx] / var[idx], nan),
        covariance=jnp.where(stable, cov, nan),
        eigenvalues=ev,
        distance=distance,
        interval=jnp.asarray(interval, dtype=float),
        discrete=discrete,
    )


def early_warning(
    model: Model,
    *,
    x: ArrayLike,
    y_guess: ArrayLike | None = None,
    method: str = "ode",
    interval: float = 1.0,
    n_lags: int = 1,
    noise: ArrayLike | None = None,
) -> EarlyWarning:
    """The indicators of ``model``'s fixed point at input ``x``, per agent.

    Args:
        model: The model (its ``sigma`` sets the noise unless ``noise`` is given; its lag
            ``delay_stages``/``tau`` and, for ``map``, ``eta`` enter the linearisation).
        x: Input value (e.g. ``model.input_value(level)``).
        y_guess: Newton start for the fixed point, shape ``(S,)`` (default: the initial
            state).
        method: ``"ode"`` (continuous time, the SDE's linearisation) or ``"map"`` (steps of
            size ``eta``: multipliers ``1 + eta lambda``, noise ``eta B B^T`` per step).
        interval: Time one lag spans (``ode``); a ``map`` lag is one step.
        n_lags: Number of autocorrelation lags (static).
        noise: Per-agent noise amplitude at the fixed point, shape ``(N,)`` (default: the
            Wright–Fisher diffusion ``sigma_i sqrt(A_i (1 - A_i))`` of the SDE).

    Returns:
        The :class:`EarlyWarning`: ``variance`` ``(N,)`` and ``autocorrelation`` ``(L, N)``
        of each agent's competence fluctuation (an input node held fixed: variance 0,
        autocorrelation NaN); eigenvalues and distance as the stability analysis gives them.

    Raises:
        SpecError: An unknown method, or no fixed point found from ``y_guess``.
    """
    if method not in ("ode", "map"):
        raise SpecError(f"early warnings need method 'ode' or 'map', got {method!r}")
    if not is_traced(model):
        (model,) = apply_dtype("float64", model)
    guess = model.initial_state() if y_guess is None else jnp.asarray(y_guess, dtype=float)
    st = linear_stability(model, guess, jnp.asarray(x, dtype=float))
    if not is_traced(st.found) and not bool(st.found):
        raise SpecError(f"no fixed point found at x={float(jnp.asarray(x)):g} from the guess")
    dyn = _dynamic_index(model)
    n = model.size
    if noise is None:
        amp = model.diffusion(st.steady)
    else:
        per_node = jnp.broadcast_to(jnp.asarray(noise, dtype=float), (n,))
        amp = jnp.concatenate([per_node, jnp.zeros(model.state_size - n)])
    amp = amp[dyn]
    nodes = np.nonzero(dyn < n)[0]  # positions of the agents' levels in the dynamic state
    if method == "map":
        eta = model.eta
        jac = jnp.eye(len(dyn)) + eta * st.jacobian
        core = linear_warning(
            drift=jac, noise=jnp.sqrt(eta) * amp, discrete=True, n_lags=n_lags, observed=nodes
        )
        core = eqx.tree_at(lambda w: w.interval, core, jnp.asarray(eta, dtype=float))
    else:
        core = linear_warning(
            drift=st.jacobian, noise=amp, interval=interval, n_lags=n_lags, observed=nodes
        )
    var = jnp.zeros(n, dtype=core.variance.dtype).at[dyn[nodes]].set(core.variance)
    ac = jnp.full((n_lags, n), jnp.nan, dtype=var.dtype).at[:, dyn[nodes]].set(core.autocorrelation)
    ac = jnp.where(var > 0, ac, jnp.nan)
    return eqx.tree_at(lambda w: (w.variance, w.autocorrelation), core, (var, ac))


def delayed_map_boundary(lag: int) -> float:
    """Critical gain ``g = eta lambda`` of ``x_{t+1} = x_t - g x_{t-tau}``: ``2 sin(pi /
    (2 (2 tau + 1)))`` (2, 1, 0.618, 0.347, 0.185 for tau 0, 1, 2, 4, 8), where a root
    crosses the unit circle at angle ``pi / (2 tau + 1)`` (-1 for tau 0: a flip)."""
    if int(lag) != lag or lag < 0:
        raise SpecError(f"the lag must be an int >= 0 steps, got {lag!r}")
    return 2.0 * math.sin(math.pi / (2 * (2 * int(lag) + 1)))


def delayed_map_warning(
    *, gain: ArrayLike, lag: int, sigma: float = 1.0, n_lags: int = 1
) -> EarlyWarning:
    """Indicators of ``x_{t+1} = x_t - g x_{t-tau} + sigma eps_t`` (``eps`` standard normal).

    The linearisation of one agent's learning under a step ``eta`` and a policy lag of
    ``tau`` optimizer steps, ``g = eta lambda`` (``lambda``: the curvature of its objective,
    minus its Jacobian eigenvalue). ``tau = 0`` is AR(1) with ``phi = 1 - g``.

    Args:
        gain: ``g``, scalar (vmap over it for a curve).
        lag: ``tau`` >= 0 steps (static).
        sigma: Noise amplitude per step.
        n_lags: Number of autocorrelation lags (static).

    Returns:
        The :class:`EarlyWarning` of ``x`` (``variance`` and ``autocorrelation`` of shape
        ``(1,)`` and ``(L, 1)``; ``eigenvalues``: the ``tau + 1`` roots of
        ``z^(tau+1) - z^tau + g``; ``distance``: ``1 - max |z|``).
    """
    tau = int(lag)
    if tau != lag or tau < 0:
        raise SpecError(f"the lag must be an int >= 0 steps, got {lag!r}")
    if not is_traced(gain):
        apply_dtype("float64")
    g = jnp.asarray(gain, dtype=float)
    m = jnp.zeros((tau + 1, tau + 1), dtype=g.dtype).at[0, 0].set(1.0).at[0, tau].add(-g)
    if tau:
        m = m.at[jnp.arange(1, tau + 1), jnp.arange(tau)].set(1.0)
    noise = jnp.zeros(tau + 1, dtype=g.dtype).at[0].set(sigma)
    return linear_warning(
        drift=m, noise=noise, discrete=True, n_lags=n_lags, observed=np.array([0])
    )


def warning_scan(
    model: Model,
    name: str,
    values: ArrayLike,
    *,
    method: str = "ode",
    schedule: Schedule | str | None = "on@0",
    t1: float = 50.0,
    interval: float = 1.0,
    n_lags: int = 1,
    noise: ArrayLike | None = None,
) -> EarlyWarning:
    """:func:`early_warning` along a sweep of parameter ``name``: the indicators as a
    function of the distance to the boundary :func:`~simulate.find_boundaries` locates.

    The fixed point at each value is the one :func:`~simulate.stability_scan` follows (ODE
    solves to ``t1`` under ``schedule`` for guesses, Newton there; the input at the
    schedule's end).

    Args:
        model: Base model.
        name: Swept parameter (see :func:`~simulate.set_param`).
        values: Grid, shape ``(num,)``.
        method, interval, n_lags, noise: As :func:`early_warning`.
        schedule: Input schedule of the guesses' solves.
        t1: Horizon of those solves.

    Returns:
        The :class:`EarlyWarning` of every value stacked on a leading axis of length
        ``num`` (``variance`` ``(num, N)``, ``autocorrelation`` ``(num, L, N)``, ``distance``
        ``(num,)``, ...); all NaN at a value without a fixed point.
    """
    values = np.asarray(values, dtype=float)
    ind, steady, x = stability_scan(model, name, values, method=method, schedule=schedule, t1=t1)
    out: list[EarlyWarning | None] = []
    for v, ok, guess in zip(values, np.isfinite(ind), steady, strict=True):
        m = set_param(model, name, float(v))
        kw = {"method": method, "interval": interval, "n_lags": n_lags, "noise": noise}
        out.append(early_warning(m, x=x, y_guess=guess, **kw) if ok else None)
    found = next((w for w in out if w is not None), None)
    if found is None:
        raise SpecError(f"no fixed point found anywhere along {name}")
    blank = jax.tree.map(lambda a: jnp.full_like(a, jnp.nan), found)
    return jax.tree.map(lambda *a: jnp.stack(a), *[w if w is not None else blank for w in out])

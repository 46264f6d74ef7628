"""Validated, JSON round-tripping configuration: priors, hierarchy spec, fit options.

Priors (weakly informative, on interpretable scales; every one overridable)::

    rho[i]   log-normal, median rho_median (default 3 / horizon: a curve that rises over
             the observed steps), log-sd 1.5           learning rate, 1/step
    delta[i] log-normal, median delta_median (default 0.1 x rho median), log-sd 1.5
    b[i]     logit-normal, median 0.1, logit-sd 1.5 (only nodes with regulators; b of a
             node without regulators is not identifiable under a constant input, fixed 0)
    A0[i]    logit-normal, median 0.05, logit-sd 1.5     competence at step 0
    K[e]     log-normal, median 0.5, log-sd 0.75          threshold, competence units
    n[e]     log-normal, median 2, log-sd 0.4             Hill coefficient
    Kp[e]    log-normal, median 0.5, log-sd 0.75          pipeline gate threshold (pipeline)
    m[e]     log-normal, median 2, log-sd 0.6             pipeline gate Hill coefficient
    phi      log-normal, median 50, log-sd 1.0            beta-binomial concentration
    tau[p]   log-normal, median 0.1, log-sd 0.75          sd of per-run random effects (log scale)
    c[p]     normal(0, 1)                                 hyperparameter link slopes
    eta      log-normal, median 1, log-sd 0.1             learning-step size (map dynamics)
    lag      log-normal, median 1, log-sd 1.0             policy lag, training steps (lag)
    mid[i]   logit-normal, median 0.5, logit-sd 1.0       greedy readout midpoint (readout)
    width[i] log-normal, median 0.1, log-sd 1.0           greedy readout width (readout)

Every parameter is sampled as a standard normal ``z`` and mapped as
``theta = median-transform + sd * z`` (non-centred), which gives NUTS a unit-scale geometry.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulate.common import AgentmotifsError, read_json_object
from simulate.common import ConfigError as ConfigError

from ._hierarchy import EDGE_PARAMS as EDGE_PARAMS
from ._hierarchy import GLOBAL_PARAMS as GLOBAL_PARAMS
from ._hierarchy import NODE_PARAMS as NODE_PARAMS
from ._hierarchy import PIPELINE_PARAMS as PIPELINE_PARAMS
from ._hierarchy import Hierarchy as Hierarchy
from ._hierarchy import Link as Link
from ._hierarchy import _fields, _hierarchy, _sequence
from ._priors import Priors as Priors
from ._priors import positive as _pos

if TYPE_CHECKING:
    from simulate import SolveOptions

#: Step budget of one adaptive likelihood solve (``FitConfig.solve_options``).
LIKELIHOOD_MAX_STEPS = 4096

__all__ = ["ConfigError", "FitConfig", "Hierarchy", "Link", "Priors"]

_DYNAMICS = ("ode", "map")
_LAGS = ("none", "stale", "erlang")
_LIKELIHOODS = ("binomial", "betabinomial")
_METHODS = ("nuts", "svi", "laplace", "map")
_SOLVERS = ("auto", "quad", "rk4", "tsit5")
_REGULATORS = ("model", "logged", "logged-gates")
_READOUTS = ("identity", "greedy")
_CHAIN_METHODS = ("auto", "parallel", "vectorized", "sequential")


def _pipeline(value: Any) -> tuple[str, ...]:
    """``FitConfig.pipeline`` as ``("X->Y", ...)`` from a list or a comma string (the form
    checked here; the node names when the network is known, :func:`calibrate.build_model`)."""
    from simulate import SpecError, parse_pipeline

    if not isinstance(value, str):
        value = _sequence(value, "pipeline")
    try:
        return tuple(f"{s}->{d}" for s, d in parse_pipeline(value))
    except SpecError as err:
        raise ConfigError(f"pipeline: {err}") from None


@dataclasses.dataclass(frozen=True)
class FitConfig:
    """Options of one fit (all JSON round-trip via :meth:`to_dict`/:meth:`from_dict`).

    Attributes:
        likelihood: ``binomial`` or ``betabinomial`` (over-dispersion).
        method: ``nuts`` (default), ``svi`` (fast approximation), ``laplace`` (Gaussian at
            the MAP; fastest, used for coverage studies and quick selection) or ``map``.
        chains: NUTS chains.
        chain_method: How NUTS runs its chains: ``parallel`` (one JAX device each; on CPU
            expose devices with ``numpyro.set_host_device_count`` before JAX starts, as
            ``python -m calibrate fit`` does), ``vectorized`` (one batched program; each
            step waits for the longest trajectory of all chains) or ``sequential``;
            ``auto`` = parallel when there are at least ``chains`` devices, else vectorized.
        samples: Draws per chain (NUTS) or total draws (SVI).
        warmup: NUTS warm-up steps per chain.
        map_steps: Maximal L-BFGS iterations per start of the MAP warm start (0 = none).
        map_starts: Random restarts of the MAP fit.
        svi_steps: SVI optimisation steps.
        dense_mass: Dense mass matrix (recommended for correlated pairs).
        laplace_mass: Start NUTS adaptation from the Laplace covariance at the MAP.
        reparam: NUTS samples in coordinates that straighten the basal corner, the edge
            thresholds and the learned rates (see :class:`calibrate._reparam.SamplingCoords`);
            exact, the posterior is unchanged.
        pool_adaptation: NUTS warm-up pools the chains' draws for every mass-matrix
            estimate (parallel or vectorised chains; see :mod:`calibrate._sampler`).
        target_accept: NUTS target acceptance probability.
        max_tree_depth: NUTS maximal tree depth.
        forward_mode: Forward-mode derivatives of the ODE solve (``tsit5`` only).
        solver: ``auto`` (default: ``quad`` on a feed-forward network, ``rk4`` on one
            with a cycle; resolved by :func:`calibrate.build_model`), ``tsit5`` (diffrax
            adaptive, tolerances below; a piecewise-smooth likelihood), ``rk4`` (classical
            fixed-step RK4 landing on every observed step: a smooth likelihood, for NUTS on
            any network) or ``quad`` (feed-forward networks only, e.g. every FFL: each
            node's linear equation solved by quadrature on a fixed grid, vectorised over
            time; smooth, stable and the fastest gradient). ``tsit5`` with reverse-mode
            derivatives cannot run NUTS chains in parallel (see :func:`calibrate.fit`):
            ``auto`` chains are then vectorised, and ``chain_method="parallel"`` is an
            error unless ``forward_mode`` is set.
        dt: Largest RK4 step or ``quad`` cell, in training steps. After a fit the curves at
            the MAP are compared with a reference solve (RK4 at 1/8 of the step, or a tight
            adaptive solve) and a warning is raised above 1e-3.
        rtol: ODE relative tolerance (``tsit5``).
        atol: ODE absolute tolerance (``tsit5``).
        priors: The priors.
        hierarchy: Random effects and links.
        dynamics: ``ode`` (default: the competence ODE, solved by ``solver``) or ``map``:
            finite learning steps, simulate's discrete map ``A <- A + eta F(A)`` once per
            training step (``eta`` a fitted parameter, linkable to ``rl.lr``), competences
            kept in [0, 1] with 0 absorbing (see :mod:`calibrate._map`); ``solver`` and
            ``dt`` are then unused.
        lag: Policy lag of the map (a fitted ``lag`` in training steps, linkable to
            ``rl.staleness``): ``none``; ``stale`` (the update at step t uses the state of
            step ``t - lag``, linearly interpolated between whole steps); ``erlang``
            (simulate's Erlang chain of ``lag_stages`` stages on the regulation, mean
            ``lag``).
        lag_stages: Erlang stages of ``lag="erlang"``.
        max_lag: Longest ``stale`` lag in training steps (the history kept; longer lags
            are cut to it).
        pipeline: Pipeline gates ``("X->Y", "Y->Z")`` (default none): each target's whole
            learning term times an activating Hill occupancy of its source's level, with a
            free threshold ``Kp[X->Y]`` and Hill coefficient ``m[X->Y]`` per edge, in every
            candidate network of a selection (see :mod:`simulate._pipeline`). The edges
            must name nodes of the fitted network (after ``--agents``), one source per
            target.
        edge_weights: Give each run its known edge weights (default false): the gated
            regulation ``G_i`` of node ``i`` becomes llm_runs' coupling factor ``1 - w_i +
            w_i G_i``, ``w_i`` the largest weight of the edges into ``i`` in the run's own
            training config (data, not fitted; :mod:`calibrate._edge_weights`). Needs
            inputs that carry their llm_runs config (run folders).
        pulses: Give each run its known spurious-reward pulses (default false): while a
            ``flip`` pulse hits a node it is driven back toward its start level at a
            share ``flip[node]`` (fitted) of its learning rate, ``flip_lag`` steps (fitted)
            after the window; the windows from the run's own training config
            (:mod:`calibrate._pulses`). Needs run folders, the ``quad`` solver (or
            ``auto``) and ODE dynamics.
        regulators: What the edges' Hill terms read (default ``model``): ``model``, the
            fitted competence of each upstream node; ``logged``, each run's logged training
            competence of the upstream agent (llm_runs' per-agent ``ema``, the signal its
            edges acted on), linearly interpolated between evaluations, with each edge's
            threshold ``K`` and Hill coefficient ``n`` read from the run's config (known, so
            not fitted; :mod:`calibrate._regulators`). Needs run folders, the ``quad``
            solver (or ``auto``) and ODE dynamics; such a fit describes the runs it was
            fitted on and cannot forecast a new one. ``logged-gates``: as ``logged``, and
            the pipeline gates (``pipeline``) read the logged training competence of their
            source too, the quality of the sampled outputs it passes on while training.
        readout: How a node's level becomes its observed (probe) competence (default
            ``identity``): ``identity``, the level is observed; ``greedy``, the kinetics
            describe a latent skill in [0, 1] and a greedy probe reads it through a
            logistic of the share of the way from the start to 1, of fitted midpoint
            ``mid[node]`` and width ``width[node]``, rescaled so that the start and 1 map
            to themselves (:mod:`calibrate._readout`).
        rhat_max: Diagnostics threshold for R-hat.
        ess_min: Diagnostics threshold for bulk and tail ESS.
    """

    likelihood: str = "binomial"
    method: str = "nuts"
    chains: int = 4
    chain_method: str = "auto"
    samples: int = 1000
    warmup: int = 1000
    map_steps: int = 200
    map_starts: int = 4
    svi_steps: int = 3000
    dense_mass: bool = True
    laplace_mass: bool = True
    reparam: bool = True
    pool_adaptation: bool = True
    target_accept: float = 0.8
    max_tree_depth: int = 8
    forward_mode: bool = False
    solver: str = "auto"
    dt: float = 1.0
    rtol: float = 1e-5
    atol: float = 1e-7
    priors: Priors = dataclasses.field(default_factory=Priors)
    hierarchy: Hierarchy = dataclasses.field(default_factory=Hierarchy)
    dynamics: str = "ode"
    lag: str = "none"
    lag_stages: int = 1
    max_lag: int = 16
    pipeline: tuple[str, ...] = ()
    edge_weights: bool = False
    pulses: bool = False
    regulators: str = "model"
    readout: str = "identity"
    rhat_max: float = 1.01
    ess_min: float = 400.0

    def __post_init__(self) -> None:
        if self.likelihood not in _LIKELIHOODS:
            raise ConfigError(f"likelihood must be one of {_LIKELIHOODS}, got {self.likelihood!r}")
        if self.method not in _METHODS:
            raise ConfigError(f"method must be one of {_METHODS}, got {self.method!r}")
        for name, lo in (
            ("chains", 1),
            ("samples", 1),
            ("warmup", 0),
            ("map_steps", 0),
            ("map_starts", 1),
            ("svi_steps", 1),
            ("max_tree_depth", 1),
            ("lag_stages", 1),
            ("max_lag", 1),
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ConfigError(f"{name} must be an integer >= {lo}, got {v!r}")
        bools = ("dense_mass", "laplace_mass", "reparam", "pool_adaptation", "forward_mode")
        for name in (*bools, "edge_weights", "pulses"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.chain_method not in _CHAIN_METHODS:
            raise ConfigError(
                f"chain_method must be one of {_CHAIN_METHODS}, got {self.chain_method!r}"
            )
        if self.dynamics not in _DYNAMICS:
            raise ConfigError(f"dynamics must be one of {_DYNAMICS}, got {self.dynamics!r}")
        if self.lag not in _LAGS:
            raise ConfigError(f"lag must be one of {_LAGS}, got {self.lag!r}")
        if self.lag != "none" and self.dynamics != "map":
            raise ConfigError(f"lag {self.lag!r} needs dynamics 'map'")
        if self.solver not in _SOLVERS:
            raise ConfigError(f"solver must be one of {_SOLVERS}, got {self.solver!r}")
        if self.pulses and (self.solver not in ("auto", "quad") or self.dynamics != "ode"):
            raise ConfigError("pulses need solver 'quad' (or 'auto') and dynamics 'ode'")
        if self.regulators not in _REGULATORS:
            raise ConfigError(f"regulators must be one of {_REGULATORS}, got {self.regulators!r}")
        if self.readout not in _READOUTS:
            raise ConfigError(f"readout must be one of {_READOUTS}, got {self.readout!r}")
        if self.regulators == "logged-gates" and not self.pipeline:
            raise ConfigError("regulators 'logged-gates' need pipeline gates (--pipeline)")
        if self.logged_regulators and (
            self.solver not in ("auto", "quad") or self.dynamics != "ode"
        ):
            raise ConfigError(
                f"regulators {self.regulators!r} need solver 'quad' (or 'auto') and dynamics 'ode'"
            )
        if self.solver == "tsit5" and self.chain_method == "parallel" and not self.forward_mode:
            raise ConfigError(
                "chain_method 'parallel' cannot differentiate the 'tsit5' solve in reverse "
                "mode (diffrax's checkpointed adjoint fails under JAX's pmap); use solver "
                "'rk4' or 'quad', chain_method 'vectorized', or forward_mode true"
            )
        if not 0 < float(self.target_accept) < 1:
            raise ConfigError("target_accept must be in (0, 1)")
        for name in ("dt", "rtol", "atol", "rhat_max", "ess_min"):
            _pos(getattr(self, name), name)
        object.__setattr__(self, "pipeline", _pipeline(self.pipeline))
        if isinstance(self.priors, Mapping):
            object.__setattr__(self, "priors", Priors(**self.priors))
        if isinstance(self.hierarchy, Mapping):
            object.__setattr__(self, "hierarchy", Hierarchy(**self.hierarchy))

    @property
    def logged_regulators(self) -> bool:
        """Whether the edges read each run's logged training competence (``regulators``
        ``logged`` or ``logged-gates``)."""
        return self.regulators != "model"

    def solve_options(self) -> SolveOptions:
        """The :class:`simulate.SolveOptions` of the adaptive (``tsit5``) likelihood: this
        config's ``rtol``/``atol``, the forward-mode adjoint if ``forward_mode`` is set,
        and a step budget of :data:`LIKELIHOOD_MAX_STEPS` per solve."""
        from simulate import SolveOptions

        return SolveOptions(
            rtol=self.rtol,
            atol=self.atol,
            solver="tsit5",
            max_steps=LIKELIHOOD_MAX_STEPS,
            adjoint="forward" if self.forward_mode else "recursive",
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    def __hash__(self) -> int:  # static field of a jitted module: hash by content
        return hash(json.dumps(self.to_dict(), sort_keys=True))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FitConfig:
        """Inverse of :meth:`to_dict`; unknown fields raise :class:`ConfigError`."""
        known = {f.name for f in dataclasses.fields(cls)}
        extra = set(data) - known
        if extra:
            raise ConfigError(f"unknown config field(s) {sorted(extra)}")
        d = dict(data)
        if "priors" in d:
            pr = _fields(d["priors"], Priors, "priors")
            if not isinstance(pr.get("overrides", {}), Mapping):
                raise ConfigError("priors.overrides must be an object")
            d["priors"] = Priors(**pr)
        if "hierarchy" in d:
            d["hierarchy"] = _hierarchy(d["hierarchy"])
        return cls(**d)

    @classmethod
    def load(cls, path: str | Path) -> FitConfig:
        """Read from a JSON file."""
        try:
            data = read_json_object(path, what="config file")
        except AgentmotifsError as err:
            raise ConfigError(str(err)) from None
        return cls.from_dict(data)

"""Prior medians and spreads of a fit (:class:`Priors`), and the positive-number check of
every config field (:func:`positive`); re-exported by :mod:`calibrate._config`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from simulate.common import ConfigError

__all__ = ["Priors", "positive"]


def positive(x: Any, field: str, *, allow_none: bool = False) -> Any:
    if x is None and allow_none:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ConfigError(f"{field} must be a number, got {x!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise ConfigError(f"{field} must be a finite number > 0, got {x!r}")
    return v


@dataclasses.dataclass(frozen=True)
class Priors:
    """Prior medians (natural units) and spreads (on the log/logit scale).

    Attributes:
        rho_median: Median learning rate (1/step); None = 3 / horizon of the data.
        rho_sd: Log-sd of rho.
        delta_median: Median forgetting rate; None = 0.1 x the rho median.
        delta_sd: Log-sd of delta.
        b_median: Median basal learning (in (0, 1)).
        b_sd: Logit-sd of b.
        A0_median: Median initial competence (in (0, 1)).
        A0_sd: Logit-sd of A0.
        K_median: Median edge threshold (competence units).
        K_sd: Log-sd of K.
        n_median: Median Hill coefficient.
        n_sd: Log-sd of n.
        Kp_median: Median threshold of a pipeline gate (``FitConfig.pipeline``), competence
            units.
        Kp_sd: Log-sd of Kp.
        m_median: Median Hill coefficient of a pipeline gate.
        m_sd: Log-sd of m.
        phi_median: Median beta-binomial concentration.
        phi_sd: Log-sd of phi.
        re_median: Median sd of per-run random effects (log scale of the parameter).
        re_sd: Log-sd of that sd.
        slope_sd: Sd of the normal prior on link slopes.
        eta_median: Median learning-step size of the ``map`` dynamics (``FitConfig.dynamics``).
            Only ``eta * rho`` and ``eta * delta`` enter the map, so ``eta``'s level trades off
            exactly with the rates: its narrow prior pins it near 1 (rates per training step
            at the pilots' centre) and its link slope on ``rl.lr`` carries the mechanism.
        eta_sd: Log-sd of eta.
        lag_median: Median policy lag in training steps (``FitConfig.lag``).
        lag_sd: Log-sd of the lag.
        flip_median: Median rate of a flip pulse (``FitConfig.pulses``) as a share of a
            node's learning rate (one per node): the pulse drives the node back toward its
            start level.
        flip_sd: Log-sd of that share.
        flip_lag_median: Median delay (training steps) between a pulse's window and its
            effect (one for the network): an optimizer's momentum, and a policy that moves
            only once its samples differ, answer late.
        flip_lag_sd: Log-sd of that delay.
        mid_median: Median midpoint of a node's greedy readout (``FitConfig.readout``): the
            share of the way from its start to 1 its latent skill has come when the
            readout's logistic is at its middle.
        mid_sd: Logit-sd of that midpoint.
        width_median: Median width of a node's greedy readout (in that share).
        width_sd: Log-sd of that width.
        overrides: Per-parameter ``{"rho[X]": [median, sd]}`` overriding the above.
    """

    rho_median: float | None = None
    rho_sd: float = 1.5
    delta_median: float | None = None
    delta_sd: float = 1.5
    b_median: float = 0.1
    b_sd: float = 1.5
    A0_median: float = 0.05
    A0_sd: float = 1.5
    K_median: float = 0.5
    K_sd: float = 0.75
    n_median: float = 2.0
    n_sd: float = 0.4
    Kp_median: float = 0.5
    Kp_sd: float = 0.75
    m_median: float = 2.0
    m_sd: float = 0.6
    phi_median: float = 50.0
    phi_sd: float = 1.0
    re_median: float = 0.1
    re_sd: float = 0.75
    slope_sd: float = 1.0
    eta_median: float = 1.0
    eta_sd: float = 0.1
    lag_median: float = 1.0
    lag_sd: float = 1.0
    flip_median: float = 0.3
    flip_sd: float = 1.0
    flip_lag_median: float = 5.0
    flip_lag_sd: float = 1.0
    mid_median: float = 0.5
    mid_sd: float = 1.0
    width_median: float = 0.1
    width_sd: float = 1.0
    overrides: Mapping[str, tuple[float, float]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.name == "overrides":
                continue
            v = positive(getattr(self, f.name), f"priors.{f.name}", allow_none=True)
            object.__setattr__(self, f.name, v)
        for name in ("b_median", "A0_median", "mid_median"):
            if not getattr(self, name) < 1:
                raise ConfigError(f"priors.{name} must be in (0, 1)")
        ov = {}
        for k, pair in dict(self.overrides).items():
            if not isinstance(pair, list | tuple) or len(pair) != 2:
                raise ConfigError(f"priors.overrides[{k}] must be [median, sd]")
            ov[str(k)] = (
                positive(pair[0], f"priors.overrides[{k}][0]"),
                positive(pair[1], f"priors.overrides[{k}][1]"),
            )
        object.__setattr__(self, "overrides", ov)

    def median_sd(self, base: str, name: str, *, horizon: float) -> tuple[float, float]:
        """(median, sd) of parameter ``name`` (base ``base``) for data spanning ``horizon``."""
        if name in self.overrides:
            return self.overrides[name]
        rho_med = self.rho_median if self.rho_median is not None else 3.0 / max(horizon, 1.0)
        if base == "rho":
            return rho_med, self.rho_sd
        if base == "delta":
            return (self.delta_median or 0.1 * rho_med), self.delta_sd
        return getattr(self, f"{base}_median"), getattr(self, f"{base}_sd")

"""One documented rule for raising an early warning from a run's training signals.

A :class:`SignalRule` is a list of :class:`Trigger` s, each an indicator
(:mod:`calibrate._warning._indicators`) of one signal (a name of
:data:`llm_runs.runlog.SIGNALS`) against a threshold, in a direction. The rule alerts at
the first step at which, for some agent, some trigger's indicator has stayed beyond its
threshold for ``persist`` consecutive steps; the alert names the agent, signal, indicator,
value and threshold. Thresholds are fitted (:func:`fit_rule`) on runs that are not the ones
the rule is scored on: each trigger's threshold is the smallest level that no more than a
``false_alert / len(triggers)`` share of the non-collapsing training runs ever holds for
``persist`` steps (a Bonferroni split, so the rule's false-alert share on those runs is at
most ``false_alert``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._config import ConfigError
from ._indicators import rolling_lag1, rolling_variance, spike_z, trend

__all__ = ["DEFAULT_TRIGGERS", "INDICATORS", "SignalAlert", "SignalRule", "Trigger",
           "first_alert", "fit_rule", "indicator_series"]  # fmt: skip

#: Indicator name -> function of a series (see :mod:`calibrate._warning._indicators`).
INDICATORS = {
    "spike_z": spike_z,
    "rolling_variance": rolling_variance,
    "rolling_lag1": rolling_lag1,
    "trend": trend,
}


@dataclasses.dataclass(frozen=True)
class Trigger:
    """One indicator of one signal against a threshold.

    Attributes:
        signal: A signal name (``grad_norm``, ``policy_kl``, ``entropy`` ...).
        indicator: A name of :data:`INDICATORS`.
        direction: ``above`` (alert when the indicator exceeds the threshold) or ``below``.
        threshold: The level (None until fitted).
    """

    signal: str
    indicator: str
    direction: str = "above"
    threshold: float | None = None

    def __post_init__(self) -> None:
        from llm_runs.runlog import SIGNALS

        if self.signal not in SIGNALS:
            raise ConfigError(f"trigger: unknown signal {self.signal!r}; known: {sorted(SIGNALS)}")
        if self.indicator not in INDICATORS:
            raise ConfigError(f"trigger: unknown indicator {self.indicator!r}; known: "
                              f"{sorted(INDICATORS)}")  # fmt: skip
        if self.direction not in ("above", "below"):
            raise ConfigError(f"trigger: direction must be above or below, got {self.direction!r}")
        t = self.threshold
        if t is not None and not (isinstance(t, int | float) and math.isfinite(t)):
            raise ConfigError(f"trigger: threshold must be a finite number, got {t!r}")

    @property
    def name(self) -> str:
        return f"{self.signal}:{self.indicator}:{self.direction}"


#: The triggers the literature names before an RL collapse: spikes of the gradient norm,
#: the update norm and the policy KL, a fall of the entropy, and critical slowing down of
#: the reward (rising lag-1 autocorrelation and variance).
DEFAULT_TRIGGERS = (
    Trigger("grad_norm", "spike_z"),
    Trigger("update_norm", "spike_z"),
    Trigger("policy_kl", "spike_z"),
    Trigger("entropy", "spike_z", "below"),
    Trigger("reward_mean", "rolling_lag1"),
    Trigger("reward_mean", "rolling_variance"),
)


@dataclasses.dataclass(frozen=True)
class SignalRule:
    """The alert rule (module docstring); round-trips through JSON.

    Attributes:
        triggers: The triggers.
        window: Steps of history behind each indicator.
        min_points: Fewest finite values an indicator needs.
        persist: Consecutive steps a trigger must hold to alert.
        false_alert: The false-alert share the thresholds were fitted to.
    """

    triggers: tuple[Trigger, ...] = DEFAULT_TRIGGERS
    window: int = 30
    min_points: int = 10
    persist: int = 3
    false_alert: float = 0.05

    def __post_init__(self) -> None:
        for k in ("window", "min_points", "persist"):
            v = getattr(self, k)
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
                raise ConfigError(f"signal rule: {k} must be an integer >= 1, got {v!r}")
        if not 2 <= self.min_points <= self.window:
            raise ConfigError("signal rule: min_points must lie in [2, window]")
        if not (isinstance(self.false_alert, int | float) and 0 < self.false_alert < 1):
            raise ConfigError(f"signal rule: false_alert must lie in (0, 1), got "
                              f"{self.false_alert!r}")  # fmt: skip
        if not self.triggers:
            raise ConfigError("signal rule: at least one trigger")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"triggers": [dataclasses.asdict(t)
                                                        for t in self.triggers]}  # fmt: skip

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SignalRule:
        if not isinstance(d, Mapping):
            raise ConfigError("signal rule: a JSON object is expected")
        extra = set(d) - {f.name for f in dataclasses.fields(cls)}
        if extra:
            raise ConfigError(f"signal rule: unknown field(s) {sorted(extra)}")
        trig = d.get("triggers", [dataclasses.asdict(t) for t in DEFAULT_TRIGGERS])
        if not isinstance(trig, list) or not all(isinstance(t, Mapping) for t in trig):
            raise ConfigError("signal rule: triggers must be a list of objects")
        try:
            triggers = tuple(Trigger(**t) for t in trig)
        except TypeError as err:
            raise ConfigError(f"signal rule: a trigger has {err}") from None
        return cls(**{**d, "triggers": triggers})

    @property
    def fitted(self) -> bool:
        return all(t.threshold is not None for t in self.triggers)


@dataclasses.dataclass(frozen=True)
class SignalAlert:
    """The first alert of a run: where, by what, and how far beyond the threshold."""

    step: int
    agent: str
    signal: str
    indicator: str
    direction: str
    value: float
    threshold: float

    def words(self) -> str:
        cmp = ">" if self.direction == "above" else "<"
        return (f"step {self.step}: agent {self.agent}'s {self.signal} {self.indicator} "
                f"{self.value:.3g} {cmp} {self.threshold:.3g}")  # fmt: skip


def indicator_series(table: pd.DataFrame, rule: SignalRule, trigger: Trigger) -> dict[str, Any]:
    """Per agent, ``(steps, held)``: the trigger's indicator held for ``persist`` steps (the
    least extreme of the last ``persist`` values, sign-flipped for ``below``, so that
    "held beyond the threshold" is ``held > threshold`` resp. ``held < threshold``)."""
    out = {}
    if trigger.signal not in table.columns:
        return out
    for agent, g in table.sort_values("step").groupby("agent", sort=False):
        x = g[trigger.signal].to_numpy(float)
        ind = INDICATORS[trigger.indicator](x, window=rule.window, min_points=rule.min_points)
        s = ind if trigger.direction == "above" else -ind
        held = np.full(s.size, np.nan)
        for t in range(rule.persist - 1, s.size):
            w = s[t - rule.persist + 1 : t + 1]
            if np.all(np.isfinite(w)):
                held[t] = float(np.min(w))
        held = held if trigger.direction == "above" else -held
        out[str(agent)] = (g["step"].to_numpy(int), held)
    return out


def first_alert(table: pd.DataFrame, rule: SignalRule, *, upto: int | None = None
                ) -> SignalAlert | None:  # fmt: skip
    """The rule's first alert on one run's signals (wide: ``step``, ``agent``, signals), at
    or before step ``upto`` (None: any), or None.

    Raises:
        ConfigError: The rule's thresholds are not fitted.
    """
    if not rule.fitted:
        raise ConfigError("signal rule: fit the thresholds first (calibrate.fit_rule)")
    best: SignalAlert | None = None
    for trig in rule.triggers:
        thr = float(trig.threshold)  # type: ignore[arg-type]
        for agent, (steps, held) in indicator_series(table, rule, trig).items():
            beyond = held > thr if trig.direction == "above" else held < thr
            beyond &= np.isfinite(held)
            if upto is not None:
                beyond &= steps <= upto
            if beyond.any():
                i = int(np.argmax(beyond))
                if best is None or steps[i] < best.step:
                    best = SignalAlert(int(steps[i]), agent, trig.signal, trig.indicator,
                                       trig.direction, float(held[i]), thr)  # fmt: skip
    return best


def fit_rule(
    tables: Sequence[pd.DataFrame], collapsed: Sequence[bool], rule: SignalRule | None = None
) -> tuple[SignalRule, dict[str, Any]]:
    """Fit every trigger's threshold on training runs (module docstring).

    Args:
        tables: Each training run's signals (wide).
        collapsed: Whether each run collapsed (its non-collapsing runs set the thresholds).
        rule: The triggers and windows (default :class:`SignalRule`'s).

    Returns:
        The fitted rule and a report: per trigger the threshold, the runs it was fitted on,
        and the rule's false-alert share on the training runs.

    Raises:
        ConfigError: No non-collapsing run, or lengths that differ.
    """
    rule = rule or SignalRule()
    if len(tables) != len(collapsed):
        raise ConfigError(f"{len(tables)} signal tables for {len(collapsed)} labels")
    calm = [t for t, c in zip(tables, collapsed, strict=True) if not c]
    if not calm:
        raise ConfigError("fit_rule needs at least one run that did not collapse")
    alpha = rule.false_alert / len(rule.triggers)
    fitted, report = [], {}
    for trig in rule.triggers:
        peaks = []
        for t in calm:
            vals = [h[np.isfinite(h)] for _, h in indicator_series(t, rule, trig).values()]
            vals = [v for v in vals if v.size]
            if vals:
                v = np.concatenate(vals)
                peaks.append(float(v.max() if trig.direction == "above" else v.min()))
        if not peaks:
            fitted.append(dataclasses.replace(trig, threshold=math.inf if trig.direction ==
                                              "above" else -math.inf))  # fmt: skip
            report[trig.name] = {"threshold": None, "runs": 0}
            continue
        if trig.direction == "above":  # at most alpha of the calm runs' peaks exceed it
            thr = float(np.quantile(peaks, 1.0 - alpha, method="higher"))
        else:
            thr = float(np.quantile(peaks, alpha, method="lower"))
        fitted.append(dataclasses.replace(trig, threshold=thr))
        report[trig.name] = {"threshold": thr, "runs": len(peaks)}
    out = dataclasses.replace(rule, triggers=tuple(fitted))
    fa = [first_alert(t, out) is not None for t in calm]
    report["false_alert_share_train"] = float(np.mean(fa))
    return out, report

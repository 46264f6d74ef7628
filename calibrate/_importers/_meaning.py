"""What a logged value means: a success rate, a reward on a known range, or per-sample
rewards above a success threshold (issue 70 §1).

A mapped key is written ``KEY``, ``KEY:rate``, ``KEY:LO:HI`` or ``KEY:>=T`` (also ``>T``):

- ``rate``: the values are success rates in [0, 1] (an accuracy, a mean 0/1 reward);
- ``LO:HI``: a reward known to lie in [LO, HI] (``rewards/correctness:0:2``), read as the
  competence ``(value - LO) / (HI - LO)``;
- ``>=T``: the share of per-sample rewards ``>= T`` where the log holds the samples (a list
  per step), with the number of samples as the evaluation size.

A bare key is read as a rate only when nothing says otherwise. A key whose name says it is
no success rate (a loss, a KL, an entropy, a length, a norm, a learning rate,
``frac_reward_zero_std``) is refused by name; one whose values leave its range, or whose
logged spread (``<key>/std``, ``reward_std``) is wider than any value on that range can
have, is refused by behaviour; ``force`` accepts both.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping

import numpy as np

from simulate.common import ConfigError

from .._curve_data import DataError

__all__ = ["Meaning", "check_behaviour", "check_name", "parse_meaning", "std_key"]

#: Names (a path component, or its tail) that are no success rate.
_NOT_A_RATE = re.compile(
    r"(^|[/_.\-])(loss|kl|ppo_kl|entropy|lengths?|completion_length|mean_length|"
    r"grad_norm|norm|learning_rate|lr|frac_reward_zero_std|std|clip_ratio|clipfrac|"
    r"num_tokens|tokens|epoch|time|throughput|perplexity|advantages?|values?)"
    r"(/mean|/max|/min|/std)?$",
    re.IGNORECASE,
)
_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_RANGE = re.compile(rf"^(?P<key>.+):(?P<lo>{_NUMBER}):(?P<hi>{_NUMBER})$")
_THRESHOLD = re.compile(rf"^(?P<key>.+):(?P<op>>=|>)(?P<t>{_NUMBER})$")


@dataclasses.dataclass(frozen=True)
class Meaning:
    """How one agent's logged values become competences.

    Attributes:
        kind: ``"rate"`` (values in [0, 1]), ``"range"`` (a reward on [lo, hi]) or
            ``"threshold"`` (share of per-sample rewards above ``threshold``).
        lo: Lower end of the values' range (0 for a rate).
        hi: Upper end (1 for a rate).
        threshold: The success threshold of a ``"threshold"`` meaning.
        strict_above: ``>`` rather than ``>=``.
        declared: The user said it (``:rate``, ``:LO:HI``, ``:>=T``); False for a bare key.
    """

    kind: str = "rate"
    lo: float = 0.0
    hi: float = 1.0
    threshold: float | None = None
    strict_above: bool = False
    declared: bool = False

    def label(self) -> str:
        """The meaning in words, as every output shows it (``range [0, 2]``)."""
        if self.kind == "threshold":
            return f"share of samples {'>' if self.strict_above else '>='} {self.threshold:g}"
        if self.kind == "range":
            return f"range [{self.lo:g}, {self.hi:g}]"
        return "rate [0, 1]" + ("" if self.declared else " (assumed)")

    def competence(self, values: np.ndarray) -> np.ndarray:
        """Values on the meaning's range → competences in [0, 1] (a rate: unchanged)."""
        return (np.asarray(values, dtype=float) - self.lo) / (self.hi - self.lo)


def parse_meaning(text: str) -> tuple[str, Meaning]:
    """``KEY[:rate|:LO:HI|:>=T]`` → (key, meaning).

    Raises:
        ConfigError: A range with ``LO >= HI`` or a non-finite bound.
    """
    text = text.strip()
    if text.endswith(":rate"):
        return text[: -len(":rate")], Meaning("rate", declared=True)
    if m := _RANGE.match(text):
        lo, hi = float(m.group("lo")), float(m.group("hi"))
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ConfigError(f"--agent {text!r}: a range LO:HI needs finite LO < HI")
        declared = "rate" if (lo, hi) == (0.0, 1.0) else "range"
        return m.group("key"), Meaning(declared, lo, hi, declared=True)
    if m := _THRESHOLD.match(text):
        t = float(m.group("t"))
        if not math.isfinite(t):
            raise ConfigError(f"--agent {text!r}: the threshold must be a finite number")
        return m.group("key"), Meaning("threshold", 0.0, 1.0, t, m.group("op") == ">", True)
    return text, Meaning()


def check_name(key: str, agent: str, meaning: Meaning, source: str) -> None:
    """Refuse a key whose name says it is no success rate (unless its meaning is declared
    as a range or threshold: a reward's name can say anything).

    Raises:
        DataError: The name of a loss, KL, entropy, length, norm, learning rate, spread.
    """
    if meaning.kind in ("range", "threshold"):
        return
    if _NOT_A_RATE.search(key):
        raise DataError(
            f"{source}: key {key!r} (agent {agent}) is named as no success rate (a loss, KL, "
            "entropy, length, norm, rate of learning or spread); map a success rate or a "
            "reward (KEY:LO:HI, KEY:>=T), or pass --force-key to read it anyway"
        )


def std_key(key: str, keys: set[str]) -> str | None:
    """The key logging the spread of ``key``'s samples, when the log has one:
    ``rewards/f/mean`` → ``rewards/f/std``, ``reward`` → ``reward_std``, ``x`` → ``x/std``."""
    tries = [f"{key}_std", f"{key}/std"]
    if key.endswith("/mean"):
        tries.insert(0, key[: -len("/mean")] + "/std")
    return next((k for k in tries if k in keys), None)


def check_behaviour(
    values: np.ndarray,
    steps: np.ndarray,
    key: str,
    agent: str,
    meaning: Meaning,
    source: str,
    spread: tuple[np.ndarray, np.ndarray] | None = None,
) -> None:
    """Refuse values that no quantity of the meaning can take.

    Args:
        values: The key's finite values.
        steps: Their steps (named in messages).
        key: The logged key.
        agent: Its agent.
        meaning: What the values are said (or assumed) to be.
        source: File named in messages.
        spread: The logged standard deviation of the key's samples and its steps, if any: a
            quantity on [lo, hi] has a spread of at most (hi - lo) / 2.

    Raises:
        DataError: A value outside [lo, hi], or a spread wider than the range allows.
    """
    if meaning.kind == "threshold":
        return
    bad = (values < meaning.lo) | (values > meaning.hi)
    if bad.any():
        k = int(np.argmax(bad))
        what = (
            "is not a success rate in [0, 1]"
            if meaning.kind == "rate"
            else f"leaves its range [{meaning.lo:g}, {meaning.hi:g}]"
        )
        hint = (
            "; say what it means: KEY:LO:HI (a reward's range) or KEY:>=T"
            if meaning.kind == "rate"
            else ""
        )
        raise DataError(
            f"{source}: key {key!r} (agent {agent}) {what}: {values[k]:.6g} at step "
            f"{int(steps[k])}{hint}"
        )
    if spread is None:
        return
    sd, sd_steps = spread
    half = (meaning.hi - meaning.lo) / 2
    wide = np.isfinite(sd) & (sd > half * (1 + 1e-6))
    if wide.any():
        k = int(np.argmax(wide))
        raise DataError(
            f"{source}: key {key!r} (agent {agent}) has a logged spread {sd[k]:.6g} at step "
            f"{int(sd_steps[k])}, wider than any {meaning.label()} allows ({half:g}): it is no "
            "success rate on that range; give its range KEY:LO:HI, or --force-key"
        )


def meanings(agents: Mapping[str, str]) -> tuple[dict[str, str], dict[str, Meaning]]:
    """Split ``--agent`` values into agent → key and agent → meaning."""
    keys, out = {}, {}
    for agent, text in agents.items():
        keys[agent], out[agent] = parse_meaning(text)
    return keys, out

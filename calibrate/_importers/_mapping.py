"""From a framework's logged keys to agents: the key mapping.

A :class:`KeyMapping` says which keys are which agent's competence (exact keys or regular
expressions with a named group ``agent``) and what their values mean, what the evaluation
size is where the log does not say it, and which config keys become named covariates;
:func:`calibrate._importers._curves.curves_from_scalars` applies it to a log's scalars.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from simulate import parse_int
from simulate.common import ConfigError

from .._curve_data import DataError
from ._meaning import Meaning, parse_meaning

__all__ = ["KeyMapping", "flat_numbers", "parse_number"]

_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_SHOWN_KEYS = 25
#: Keys shown first in a "keys:" hint: those that may be success rates or rewards.
_LIKELY = re.compile(r"val|eval|acc|reward|score|pass|correct|success", re.IGNORECASE)


def parse_number(value: Any) -> float | None:
    """A finite number from a config value as a user writes it (``1e-3``, ``.5``, ``3``),
    or None (booleans, non-numeric strings, non-finite values)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str) and _NUMBER.match(value.strip()):
        v = float(value.strip())
        return v if math.isfinite(v) else None
    return None


def flat_numbers(d: Mapping[str, Any], prefix: str = "", sep: str = ".") -> dict[str, float]:
    """The numeric leaves of a nested config, under dotted names (``actor.optim.lr``)."""
    out: dict[str, float] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(flat_numbers(v, f"{prefix}{k}{sep}", sep))
        elif (x := parse_number(v)) is not None:
            out[f"{prefix}{k}"] = x
    return out


def _pairs(items: Iterable[str], option: str) -> list[tuple[str, str]]:
    """``NAME=VALUE`` items; a name given twice with two values is refused (neither wins)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise ConfigError(f"{option} must look like NAME=VALUE, got {item!r}")
        name, value = name.strip(), value.strip()
        if out.setdefault(name, value) != value:
            raise ConfigError(
                f"{option} {name} is given twice ({name}={out[name]} and {name}={value}): "
                "give it once"
            )
    return list(out.items())


@dataclasses.dataclass(frozen=True)
class KeyMapping:
    """Which logged keys are which agent's competence, and what the log lacks.

    Attributes:
        agents: Agent name → exact logged key, e.g. ``{"X": "critic/solver/score/mean"}``.
        patterns: Regular expressions matched in full against every key, each with a named
            group ``agent`` that names the agent, e.g. ``r"critic/(?P<agent>\\w+)/score/mean"``.
        n_eval: Evaluation size behind each value: one number, or per agent (with an optional
            ``"*"`` entry for the others). None: the log must say it (no importer's log does
            today, so a mapping without it is refused).
        covariates: Covariate name → config key, e.g. ``{"rl.lr": "learning_rate"}``: the
            config value becomes a run covariate under the toolkit's name (so the knob links
            of llm_runs' fields apply). ``"seed"`` names the run's seed.
        force: Read keys that do not look like a success rate (by name or behaviour) anyway.

    A key (or pattern) may end in what its values mean (:mod:`._meaning`): ``:rate``,
    ``:LO:HI`` (a reward on a known range, ``rewards/correctness:0:2``) or ``:>=T``.
    """

    agents: Mapping[str, str] = dataclasses.field(default_factory=dict)
    patterns: tuple[str, ...] = ()
    n_eval: int | Mapping[str, int] | None = None
    covariates: Mapping[str, str] = dataclasses.field(default_factory=dict)
    force: bool = False

    def __post_init__(self) -> None:
        for text in self.agents.values():
            parse_meaning(text)  # a range LO >= HI: refused here, before any file is read
        for text in self.patterns:
            p, _ = parse_meaning(text)
            try:
                rx = re.compile(p)
            except re.error as err:
                raise ConfigError(
                    f"--agent-regex {p!r} is not a regular expression ({err})"
                ) from None
            if "agent" not in rx.groupindex:
                raise ConfigError(
                    f"--agent-regex {p!r} needs a named group (?P<agent>...) for the agent name"
                )
        sizes = self.n_eval.values() if isinstance(self.n_eval, Mapping) else [self.n_eval]
        for v in sizes:
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ConfigError(f"--n-eval must be an integer >= 1, got {v!r}")

    @classmethod
    def from_options(
        cls,
        agent: Sequence[str] = (),
        agent_regex: Sequence[str] = (),
        n_eval: Sequence[str] = (),
        covariate: Sequence[str] = (),
        force: bool = False,
    ) -> KeyMapping:
        """Build a mapping from command-line values: ``AGENT=KEY[:MEANING]``, regexes, ``N``
        or ``AGENT=N``, ``NAME=CONFIG_KEY``, and ``--force-key``."""
        agents = dict(_pairs(agent, "--agent"))
        sizes: dict[str, int] = {}
        for item in n_eval:
            name, sep, value = item.rpartition("=")
            key = name.strip() if sep else "*"
            try:  # the toolkit's one integer rule: 1e3 and 64.0 are integers
                size = parse_int(value, what="--n-eval")
            except ConfigError:
                raise ConfigError(f"--n-eval must be N or AGENT=N, got {item!r}") from None
            if sizes.setdefault(key, size) != size:
                who = "" if key == "*" else f"{key}="
                raise ConfigError(
                    f"--n-eval {who}N is given twice ({sizes[key]} and {size}): give it once"
                )
        ne: int | dict[str, int] | None = sizes or None
        if sizes and list(sizes) == ["*"]:
            ne = sizes["*"]
        covs = dict(_pairs(covariate, "--covariate"))
        return cls(
            agents=agents, patterns=tuple(agent_regex), n_eval=ne, covariates=covs, force=force
        )

    @property
    def empty(self) -> bool:
        """True when no key is mapped to an agent."""
        return not self.agents and not self.patterns

    def resolve(self, keys: Iterable[str], source: str) -> dict[str, str]:
        """Agent → key for the keys of one log (see :meth:`resolve_meanings`)."""
        return {a: k for a, (k, _) in self.resolve_meanings(keys, source).items()}

    def resolve_meanings(self, keys: Iterable[str], source: str) -> dict[str, tuple[str, Meaning]]:
        """Agent → (key, what its values mean) for the keys of one log.

        Raises:
            DataError: An exact key absent from the log, no key matching at all, or two keys
                giving one agent.
        """
        keys = sorted(set(keys))
        likely = sorted(keys, key=lambda k: (_LIKELY.search(k) is None, k))  # val-* first
        shown = likely[:_SHOWN_KEYS] + (
            [f"... {len(keys) - _SHOWN_KEYS} more"] if len(keys) > _SHOWN_KEYS else []
        )
        if self.empty:
            raise DataError(
                f"{source}: which keys are competences? give --agent AGENT=KEY or "
                f"--agent-regex with (?P<agent>...); keys: {shown}"
            )
        out: dict[str, tuple[str, Meaning]] = {}
        for agent, text in self.agents.items():
            key, meaning = parse_meaning(text)
            if key not in keys:
                raise DataError(f"{source}: key {key!r} (agent {agent}) not found; keys: {shown}")
            out[agent] = (key, meaning)
        for text in self.patterns:
            p, meaning = parse_meaning(text)
            rx = re.compile(p)
            for key in keys:
                m = rx.fullmatch(key)
                if m is None or not m.group("agent"):
                    continue
                agent = m.group("agent")
                if agent in out and out[agent][0] != key:
                    raise DataError(
                        f"{source}: agent {agent!r} matches two keys, {out[agent][0]!r} and {key!r}"
                    )
                out[agent] = (key, meaning)
        if not out:
            raise DataError(f"{source}: no key matches {list(self.patterns)}; keys: {shown}")
        return out

    def given_size(self, agent: str) -> int | None:
        """The evaluation size ``--n-eval`` gives an agent (None: not given)."""
        ne = self.n_eval
        if isinstance(ne, Mapping):
            ne = ne.get(agent, ne.get("*"))
        return None if ne is None else int(ne)

    def size(self, agent: str, source: str) -> int:
        """The evaluation size of an agent's values, as ``--n-eval`` gives it.

        Raises:
            DataError: Not given.
        """
        ne = self.given_size(agent)
        if ne is None:
            raise DataError(
                f"{source}: the log does not record the evaluation size of agent {agent!r}; "
                "give --n-eval N (or AGENT=N)"
            )
        return ne

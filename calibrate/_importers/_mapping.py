"""From a framework's logged keys to competence curves: the key mapping and the step join.

Every importer first reads its log into *scalars*, a long table ``(run, step, key, value)``
with the framework's own metric names, and the run's configuration as a nested mapping. A
:class:`KeyMapping` then says which keys are which agent's competence (exact keys or regular
expressions with a named group ``agent``), what the evaluation size is, and which config keys
become named covariates. :func:`curves_from_scalars` joins the mapped keys by step (sparse
validation metrics keep only the steps at which they were logged) and returns the
:class:`~calibrate.CurveData` every other importer returns.
"""

from __future__ import annotations

import dataclasses
import math
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from simulate import parse_int
from simulate.common import ConfigError

from .._curve_data import CurveData, DataError, DataWarning

__all__ = [
    "KeyMapping",
    "curves_from_scalars",
    "flat_numbers",
    "parse_number",
    "report_unreadable",
    "scalar_frame",
]

_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_SHOWN_KEYS = 25


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
    """

    agents: Mapping[str, str] = dataclasses.field(default_factory=dict)
    patterns: tuple[str, ...] = ()
    n_eval: int | Mapping[str, int] | None = None
    covariates: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        for p in self.patterns:
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
    ) -> KeyMapping:
        """Build a mapping from command-line values: ``AGENT=KEY``, regexes, ``N`` or
        ``AGENT=N``, and ``NAME=CONFIG_KEY``."""
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
        return cls(agents=agents, patterns=tuple(agent_regex), n_eval=ne, covariates=covs)

    @property
    def empty(self) -> bool:
        """True when no key is mapped to an agent."""
        return not self.agents and not self.patterns

    def resolve(self, keys: Iterable[str], source: str) -> dict[str, str]:
        """Agent → key for the keys of one log.

        Raises:
            DataError: An exact key absent from the log, no key matching at all, or two keys
                giving one agent.
        """
        keys = sorted(set(keys))
        shown = keys[:_SHOWN_KEYS] + (["..."] if len(keys) > _SHOWN_KEYS else [])
        if self.empty:
            raise DataError(
                f"{source}: which keys are competences? give --agent AGENT=KEY or "
                f"--agent-regex with (?P<agent>...); keys: {shown}"
            )
        out: dict[str, str] = {}
        for agent, key in self.agents.items():
            if key not in keys:
                raise DataError(f"{source}: key {key!r} (agent {agent}) not found; keys: {shown}")
            out[agent] = key
        for p in self.patterns:
            rx = re.compile(p)
            for key in keys:
                m = rx.fullmatch(key)
                if m is None or not m.group("agent"):
                    continue
                agent = m.group("agent")
                if agent in out and out[agent] != key:
                    raise DataError(
                        f"{source}: agent {agent!r} matches two keys, {out[agent]!r} and {key!r}"
                    )
                out[agent] = key
        if not out:
            raise DataError(f"{source}: no key matches {list(self.patterns)}; keys: {shown}")
        return out

    def size(self, agent: str, source: str) -> int:
        """The evaluation size of an agent's values."""
        ne = self.n_eval
        if isinstance(ne, Mapping):
            ne = ne.get(agent, ne.get("*"))
        if ne is None:
            raise DataError(
                f"{source}: the log does not record the evaluation size of agent {agent!r}; "
                "give --n-eval N (or AGENT=N)"
            )
        return int(ne)


#: Columns of the long table, never taken from a config.
_RESERVED = frozenset({"run", "step", "agent", "competence", "n_eval", "successes", "seed"})


def _covariates(
    config: Mapping[str, Any], mapping: KeyMapping, source: str, seed_keys: Sequence[str]
) -> dict[str, float]:
    flat = flat_numbers(config)
    hyper = {k: v for k, v in flat.items() if k not in _RESERVED}
    for key in seed_keys:
        if key in flat:
            hyper["seed"] = flat[key]
            break
    for name, key in mapping.covariates.items():
        if key not in flat:
            near = sorted(k for k in flat if k.rsplit(".", 1)[-1] == key.rsplit(".", 1)[-1])
            hint = f" (did you mean {near[:5]}?)" if near else ""
            raise DataError(f"{source}: --covariate {name}: the config has no number {key!r}{hint}")
        hyper[name] = flat[key]
    return hyper


def curves_from_scalars(
    scalars: pd.DataFrame,
    mapping: KeyMapping,
    *,
    source: str,
    configs: Mapping[str, Mapping[str, Any]] | None = None,
    seed_keys: Sequence[str] = ("seed",),
    strict: bool = False,
) -> CurveData:
    """Turn logged scalars into validated competence curves.

    Args:
        scalars: Long table ``run, step, key, value`` in log order; a (run, step, key)
            logged twice keeps its last value (a resumed run logs its steps again).
        mapping: Which keys are competences, and the evaluation sizes.
        source: File or folder named in messages.
        configs: Per run, its configuration (nested): numeric leaves become covariates
            under their dotted names, plus the mapping's named covariates.
        seed_keys: Config keys tried, in order, for the run's seed.
        strict: Raise on NaN values instead of dropping them with a warning.

    Returns:
        The curves: one row per (run, agent, step) at which the agent's key was logged.
    """
    configs = configs or {}
    tables = []
    lost = scalars.attrs.get("unreadable", [])
    for run, grp in scalars.groupby("run", sort=True):
        run = str(run)
        grp = grp.drop_duplicates(["step", "key"], keep="last")
        agents = mapping.resolve(grp["key"].unique(), source)
        report_unreadable(
            [x for x in lost if x[0] == run and x[2] in set(agents.values())], source, strict
        )
        hyper = _covariates(configs.get(run, {}), mapping, source, seed_keys)
        for agent, key in sorted(agents.items()):
            sub = grp.loc[grp["key"] == key].sort_values("step", kind="stable")
            vals = sub["value"].to_numpy(dtype=float)
            bad = np.isfinite(vals) & ((vals < 0) | (vals > 1))
            if bad.any():
                k = int(np.argmax(bad))
                raise DataError(
                    f"{source}: key {key!r} (agent {agent}) is not a success rate in [0, 1]: "
                    f"{vals[k]:.6g} at step {int(sub['step'].iloc[k])}"
                )
            t = pd.DataFrame(
                {
                    "run": run,
                    "step": sub["step"].to_numpy(),
                    "agent": agent,
                    "competence": vals,
                    "n_eval": mapping.size(agent, source),
                }
            )
            tables.append(t.assign(**hyper))
    if not tables:
        raise DataError(f"{source}: no logged values")
    df = pd.concat(tables, ignore_index=True)
    return CurveData.from_table(df, strict=strict, source=source)


def report_unreadable(
    cells: Sequence[tuple[str, Any, str, Any]], source: str, strict: bool
) -> None:
    """Name the competence cells a reader could not read as numbers: a warning that counts
    them and names each (key, step) and value, or, under ``strict``, an error.

    Raises:
        DataError: ``strict`` and any such cell.
    """
    if not cells:
        return
    shown = ", ".join(f"{k} at step {st} ({raw!r})" for _, st, k, raw in cells[:5])
    more = f" and {len(cells) - 5} more" if len(cells) > 5 else ""
    msg = f"{source}: {len(cells)} value(s) that are not finite numbers: {shown}{more}"
    if strict:
        raise DataError(msg + "; fix them or run without --strict to drop them")
    warnings.warn(msg + "; dropped", DataWarning, stacklevel=3)


def scalar_frame(
    rows: Iterable[tuple[str, int, str, float]],
    source: str,
    unreadable: Iterable[tuple[str, Any, str, Any]] = (),
) -> pd.DataFrame:
    """A scalars table from ``(run, step, key, value)`` tuples (steps must be integers).

    ``unreadable`` holds the cells a reader could not read as a number, ``(run, step, key,
    raw)`` (a string ``"0.5"`` or a boolean in JSONL, ``abc``, ``55%`` or ``inf`` in a CSV):
    :func:`curves_from_scalars` names each one of a competence key and drops it with a
    warning, or refuses under ``strict`` (issue 72 §2: they were dropped without a word).
    """
    df = pd.DataFrame(list(rows), columns=["run", "step", "key", "value"])
    df.attrs["unreadable"] = [(str(r), st, str(k), raw) for r, st, k, raw in unreadable]
    if df.empty:
        raise DataError(f"{source}: no numeric values logged")
    step = pd.to_numeric(df["step"], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(step) | (step < 0) | (np.abs(step - np.round(step)) > 1e-9)
    if bad.any():
        raise DataError(
            f"{source}: step {df['step'].iloc[int(np.argmax(bad))]!r} is not an integer >= 0"
        )
    df["step"] = np.round(step).astype(np.int64)
    df["value"] = pd.to_numeric(df["value"], errors="coerce").astype(float)
    return df

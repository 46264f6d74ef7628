"""The run-log schema: manifests, row validation and the step sequence (torch-free).

Kept apart from :mod:`llm_runs.runlog` (which re-exports :func:`validate_row`) so each module
stays small. See :mod:`llm_runs.runlog` for the schema.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from simulate.common import AgentmotifsError, utc_now

from ._provenance import git_revision, package_versions

__all__ = [
    "TERMINAL_STATUSES",
    "RunLogError",
    "RunLogWarning",
    "check_steps",
    "expected_steps",
    "is_terminal",
    "make_manifest",
    "validate_manifest",
    "validate_row",
]

SCHEMA = "agentmotifs.runlog"
#: 2: pool fields (members, pool_spread, pool_fitness); 3: the training signals
#: (``signals.jsonl``, :mod:`llm_runs._signal_log`); 1 and 2 still read.
SCHEMA_VERSION = 3
STATUSES = ("running", "finished", "diverged")
#: The statuses of a run that will not train again: resuming it is a no-op, a study keeps it.
TERMINAL_STATUSES = ("finished", "diverged")

_AGENT_REQUIRED = ("step", "agent", "competence", "n_eval")
_AGENT_OPTIONAL_NUM = ("reward", "reward_std", "entropy", "kl", "lr", "budget_share", "loss", "ema")
_E2E_REQUIRED = ("step", "accuracy", "n_eval")
_MANIFEST_REQUIRED = ("schema", "schema_version", "run", "seed", "agents", "spec", "config")


class RunLogError(AgentmotifsError):
    """A malformed run folder; the message names the file and, for rows, the line number."""


class RunLogWarning(UserWarning):
    """A run log read with a problem that was worked around (a torn tail dropped)."""


def is_num(v: Any) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def is_int(v: Any) -> bool:
    """An int (not a bool)."""
    return isinstance(v, int) and not isinstance(v, bool)


def validate_row(row: Any, where: str = "row") -> dict[str, Any]:
    """Check one ``competence.jsonl`` row against the schema.

    Args:
        row: The parsed JSON value.
        where: Location used in error messages, e.g. ``"competence.jsonl:12"``.

    Returns:
        The row (unchanged) if valid.

    Raises:
        RunLogError: The first problem found.
    """
    if not isinstance(row, dict):
        raise RunLogError(f"{where}: a row must be a JSON object, got {type(row).__name__}")
    kind = row.get("kind")
    if kind == "agent":
        required = _AGENT_REQUIRED
    elif kind == "e2e":
        required = _E2E_REQUIRED
    else:
        raise RunLogError(f"{where}: field 'kind' must be 'agent' or 'e2e', got {kind!r}")
    missing = [k for k in required if k not in row]
    if missing:
        raise RunLogError(f"{where}: missing field(s) {missing}")
    if not is_int(row["step"]) or row["step"] < 0:
        raise RunLogError(f"{where}: 'step' must be an int >= 0, got {row['step']!r}")
    if not is_int(row["n_eval"]) or row["n_eval"] <= 0:
        raise RunLogError(f"{where}: 'n_eval' must be an int > 0, got {row['n_eval']!r}")
    score = "competence" if kind == "agent" else "accuracy"
    if not is_num(row[score]) or not 0.0 <= row[score] <= 1.0:
        raise RunLogError(f"{where}: '{score}' must be a number in [0, 1], got {row[score]!r}")
    if kind == "agent":
        if not isinstance(row["agent"], str) or not row["agent"]:
            raise RunLogError(f"{where}: 'agent' must be a non-empty string")
        for k in _AGENT_OPTIONAL_NUM:
            if row.get(k) is not None and not is_num(row[k]):
                raise RunLogError(f"{where}: '{k}' must be a finite number or null, got {row[k]!r}")
        _check_pool_fields(row, where)
        share = row.get("budget_share")
        if share is not None and not 0.0 <= share <= 1.0:
            raise RunLogError(f"{where}: 'budget_share' must be in [0, 1], got {share!r}")
    elif row.get("reward") is not None and not is_num(row["reward"]):
        raise RunLogError(f"{where}: 'reward' must be a finite number or null")
    return row


def _check_pool_fields(row: dict[str, Any], where: str) -> None:
    """Schema 2's optional Pool-of-Agents fields of an agent row."""
    members = row.get("members")
    if members is not None and not (
        isinstance(members, list) and members and all(is_num(v) and 0 <= v <= 1 for v in members)
    ):
        raise RunLogError(f"{where}: 'members' must be a list of numbers in [0, 1]")
    spread = row.get("pool_spread")
    if spread is not None and not (is_num(spread) and spread >= 0):
        raise RunLogError(f"{where}: 'pool_spread' must be a number >= 0, got {spread!r}")
    fit = row.get("pool_fitness")
    if fit is not None and not (
        isinstance(fit, list) and fit and all(v is None or is_num(v) for v in fit)
    ):
        raise RunLogError(f"{where}: 'pool_fitness' must be a list of numbers or nulls")


def validate_manifest(m: Any, where: str) -> dict[str, Any]:
    """Check a parsed ``manifest.json``; returns it unchanged."""
    if not isinstance(m, dict):
        raise RunLogError(f"{where}: the manifest must be a JSON object")
    missing = [k for k in _MANIFEST_REQUIRED if k not in m]
    if missing:
        raise RunLogError(f"{where}: missing field(s) {missing}")
    if m["schema"] != SCHEMA:
        raise RunLogError(f"{where}: schema is {m['schema']!r}, expected {SCHEMA!r}")
    if not is_int(m["schema_version"]) or m["schema_version"] > SCHEMA_VERSION:
        raise RunLogError(
            f"{where}: schema_version {m['schema_version']!r} not supported (<= {SCHEMA_VERSION})"
        )
    if not isinstance(m["agents"], list) or not all(isinstance(a, str) for a in m["agents"]):
        raise RunLogError(f"{where}: 'agents' must be a list of names")
    status = m.get("status")
    if status is not None and status not in STATUSES:
        raise RunLogError(f"{where}: 'status' must be one of {list(STATUSES)}, got {status!r}")
    if status == "diverged" and not (is_int(m.get("diverged_step")) and m["diverged_step"] > 0):
        raise RunLogError(f"{where}: a diverged run needs 'diverged_step' (an int > 0)")
    return m


def expected_steps(manifest: dict[str, Any]) -> list[int] | None:
    """The evaluation steps a run logs, from its config's ``eval_every`` and ``steps``.

    ``[0, e, 2e, ..., steps]`` (``steps`` always last), or None when the manifest's config
    does not say (a log written by another tool): then only the order of steps is checked.
    """
    cfg = manifest.get("config")
    if not isinstance(cfg, dict):
        return None
    every, steps = cfg.get("eval_every"), cfg.get("steps")
    if not (isinstance(every, int) and isinstance(steps, int)) or min(every, steps) <= 0:
        return None
    return [*range(0, steps, every), steps]


def check_steps(groups: Sequence[tuple[int, str]], manifest: dict[str, Any]) -> None:
    """Check the order of a log's evaluation steps.

    Args:
        groups: ``(step, location of its first row)`` per group of rows sharing a step, in file
            order.
        manifest: The run's manifest.

    Raises:
        RunLogError: A step that goes backwards or repeats after other steps; with an
            ``eval_every`` in the manifest's config, a logged step off that grid, a gap (an
            evaluation step missing between two logged ones), or a first step other than 0.
            A diverged run's last step may be its ``diverged_step``.
    """
    grid = expected_steps(manifest)
    diverged = manifest.get("diverged_step") if manifest.get("status") == "diverged" else None
    for i, (step, loc) in enumerate(groups):
        if i and step <= groups[i - 1][0]:
            prev = groups[i - 1][0]
            again = " again" if step in {s for s, _ in groups[:i]} else ""
            raise RunLogError(f"{loc}: step {step}{again} after step {prev} (steps go backwards)")
        if grid is None:
            continue
        if i == len(groups) - 1 and step == diverged and 0 < i < len(grid) and step < grid[i]:
            continue  # the final evaluation of a run that diverged between two eval steps
        if i >= len(grid) or grid[i] != step:
            want = grid[i] if i < len(grid) else None
            cfg = manifest["config"]
            if want is None:
                raise RunLogError(
                    f"{loc}: step {step} after the run's last step {cfg['steps']} "
                    f"(steps {cfg['steps']} in the manifest)"
                )
            raise RunLogError(
                f"{loc}: step {step} where step {want} is expected (the run evaluates every "
                f"{cfg['eval_every']} steps to {cfg['steps']}; the log skips or splices steps)"
            )


def make_manifest(
    *,
    run: str,
    seed: int,
    agents: Sequence[str],
    spec: Mapping[str, Any],
    config: Mapping[str, Any],
    schedules: Mapping[str, Any] | None = None,
    device: str = "cpu",
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Build a schema-conforming manifest dict (versions, git revision, ``run_id`` and
    ``status: "running"`` filled in)."""
    manifest: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "run": str(run),
        "run_id": uuid.uuid4().hex,
        "status": "running",
        "created": utc_now(),
        "seed": int(seed),
        "agents": list(agents),
        "spec": dict(spec),
        "config": dict(config),
        "schedules": dict(schedules or {"pulses": [], "pulse_mode": None, "shift_step": None}),
        "versions": package_versions(),
        "git_revision": git_revision(),
        "device": device,
    }
    manifest.update(extra or {})
    return manifest


def is_terminal(status: Any) -> bool:
    """True for a run status that ends training (:data:`TERMINAL_STATUSES`: ``finished`` or
    ``diverged``), the one check every driver makes before it resumes or keeps a run."""
    return status in TERMINAL_STATUSES

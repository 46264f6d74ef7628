"""The training-signal file of a run folder (``signals.jsonl``, schema 3): row validation, the
append-only writer and the validating reader (torch-free).

One row per optimizer step and agent::

    {"step": 12, "agent": "X", "phase": "rl", "grad_norm": 0.41, "update_norm": 0.0031,
     "policy_kl": 2.1e-05, "kl": null, "entropy": 1.93, "ess": 0.97, "reward_mean": 0.5,
     "reward_var": 0.25, "response_length": 2.0, "frac_reward_zero_std": null}

``step`` (int >= 1) is the number of optimizer steps done *after* the row's update — the
clock of ``competence.jsonl`` (its evaluation at step ``k`` has seen the updates of signal
rows ``1..k``) and of TRL's and verl's logged steps. ``phase`` is ``"sft"`` (the supervised
warm-up) or ``"rl"``. Every name of :data:`llm_runs._signals.SIGNALS` is a key, a finite
number or null (not measured in that phase, or non-finite: a diverged step's values are
null). Rows come in groups, one per step with one row per manifest agent, steps strictly
increasing; a torn tail (a killed writer) is dropped with a warning as in ``competence.jsonl``.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from simulate.common import write_text

from ._runlog_schema import RunLogError, RunLogWarning, is_int, is_num
from ._signals import SIGNALS, SIGNALS_FILE

__all__ = ["PHASES", "SignalWriter", "read_signals", "signal_row", "validate_signal_row"]

#: The training phases a signal row names.
PHASES = ("sft", "rl")
#: Signals that cannot be negative; ``ess`` and ``frac_reward_zero_std`` lie in [0, 1].
_NONNEG = ("grad_norm", "update_norm", "policy_kl", "reward_var", "response_length")
_UNIT = ("ess", "frac_reward_zero_std")


def signal_row(step: int, agent: str, phase: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """A row with every signal: a measured finite value as a float, anything else null.

    Args:
        step: Optimizer steps done after the row's update (>= 1).
        agent: The agent.
        phase: ``"sft"`` or ``"rl"``.
        values: Signal name -> value (missing names, None, NaN and inf become null).
    """
    unknown = set(values) - set(SIGNALS)
    if unknown:
        raise ValueError(f"unknown signal(s) {sorted(unknown)}; known: {list(SIGNALS)}")
    row: dict[str, Any] = {"step": int(step), "agent": agent, "phase": phase}
    for k in SIGNALS:
        v = values.get(k)
        row[k] = float(v) if v is not None and math.isfinite(float(v)) else None
    return row


def validate_signal_row(row: Any, where: str = "row") -> dict[str, Any]:
    """Check one ``signals.jsonl`` row; returns it unchanged.

    Raises:
        RunLogError: The first problem found (``where`` names the file and line).
    """
    if not isinstance(row, dict):
        raise RunLogError(f"{where}: a row must be a JSON object, got {type(row).__name__}")
    if not is_int(row.get("step")) or row["step"] < 1:
        raise RunLogError(f"{where}: 'step' must be an int >= 1, got {row.get('step')!r}")
    if not isinstance(row.get("agent"), str) or not row["agent"]:
        raise RunLogError(f"{where}: 'agent' must be a non-empty string")
    if row.get("phase") not in PHASES:
        got = row.get("phase")
        raise RunLogError(f"{where}: 'phase' must be one of {list(PHASES)}, got {got!r}")
    for k in SIGNALS:
        v = row.get(k)
        if v is None:
            continue
        if not is_num(v):
            raise RunLogError(f"{where}: '{k}' must be a finite number or null, got {v!r}")
        if k in _NONNEG and v < 0:
            raise RunLogError(f"{where}: '{k}' must be >= 0, got {v!r}")
        if k in _UNIT and not 0.0 <= v <= 1.0:
            raise RunLogError(f"{where}: '{k}' must be in [0, 1], got {v!r}")
    return row


class SignalWriter:
    """Append-only writer of ``signals.jsonl``; each :meth:`write` is flushed to the OS (a
    killed process loses nothing written), :meth:`sync` fsyncs (before every checkpoint).

    Args:
        folder: The run folder.
        resume_from_step: When resuming from a checkpoint taken after ``resume_from_step``
            optimizer steps, rows with ``step > resume_from_step`` (and a torn last line) are
            dropped first: the resumed run regenerates them. None: a new run, whose folder
            must not hold the file yet.
    """

    def __init__(self, folder: str | Path, *, resume_from_step: int | None = None) -> None:
        self.file = Path(folder) / SIGNALS_FILE
        if resume_from_step is None and self.file.exists():
            raise RunLogError(f"{self.file}: already exists; a new run never replaces a log")
        if resume_from_step is not None and self.file.exists():
            keep = [line for _, line, row in _lines(self.file) if row["step"] <= resume_from_step]
            write_text(self.file, "".join(keep))
        self._fh = open(self.file, "a", encoding="utf-8")

    def write(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Validate and append one step's rows, flushed to the OS."""
        lines = []
        for row in rows:
            validate_signal_row(dict(row), "signal row to write")
            lines.append(json.dumps(row, allow_nan=False) + "\n")
        self._fh.write("".join(lines))
        self._fh.flush()

    def sync(self) -> None:
        """fsync what was written (call before a checkpoint that counts on it)."""
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        """fsync and close."""
        if not self._fh.closed:
            self.sync()
            self._fh.close()


def _lines(file: Path) -> list[tuple[int, str, dict[str, Any]]]:
    """``(line number, line, row)`` of the complete, parsable lines before a torn tail."""
    out = []
    for i, line in enumerate(file.read_text(encoding="utf-8").splitlines(keepends=True), 1):
        if not line.endswith("\n"):
            break
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            break
        if isinstance(row, dict) and is_int(row.get("step")):
            out.append((i, line, row))
    return out


def _parse(file: Path, agents: Sequence[str]) -> tuple[list[dict[str, Any]], str | None]:
    """Validated rows in complete step groups, and why a torn tail was dropped (or None)."""
    try:
        lines = file.read_text(encoding="utf-8").splitlines(keepends=True)
    except (OSError, UnicodeDecodeError) as err:
        raise RunLogError(f"{file}: cannot be read ({err})") from None
    groups: list[tuple[int, int, list[dict[str, Any]]]] = []
    torn = None
    for i, line in enumerate(lines, start=1):
        where = f"{file}:{i}"
        try:
            row = validate_signal_row(json.loads(line), where)
        except json.JSONDecodeError as err:
            if i == len(lines) and not line.endswith("\n"):
                torn = f"{where}: torn last line ({err.msg})"
                break
            raise RunLogError(f"{where}: not valid JSON ({err.msg})") from None
        if agents and row["agent"] not in agents:
            raise RunLogError(f"{where}: agent {row['agent']!r} not in manifest agents")
        if groups and row["step"] < groups[-1][0]:
            raise RunLogError(f"{where}: step {row['step']} after step {groups[-1][0]}")
        if not groups or groups[-1][0] != row["step"]:
            groups.append((row["step"], i, []))
        if any(r["agent"] == row["agent"] for r in groups[-1][2]):
            raise RunLogError(f"{where}: duplicated row for step {row['step']}, {row['agent']!r}")
        groups[-1][2].append(row)
    for n, (step, line, rows) in enumerate(groups):
        lack = [a for a in agents if a not in {r["agent"] for r in rows}]
        if lack and n == len(groups) - 1:
            groups.pop()
            tail = f"{file}:{line}: incomplete last step {step} (missing {lack})"
            torn = tail if torn is None else f"{tail}; {torn}"
        elif lack:
            raise RunLogError(f"{file}:{line}: step {step} has no row for {lack}")
    return [r for _, _, g in groups for r in g], torn


def read_signals(
    path: str | Path,
    *,
    agents: Sequence[str] = (),
    strict: bool = False,
    wide: bool = True,
) -> Any:
    """The training signals of a run folder as a pandas table.

    Args:
        path: The run folder (or its ``signals.jsonl``).
        agents: The manifest's agents (rows of others are an error; every step must have a
            row per agent). Empty: not checked.
        strict: A torn tail is an error (by default it is dropped with a
            :class:`~llm_runs.runlog.RunLogWarning`).
        wide: One row per step and agent with a column per signal (``step``, ``agent``,
            ``phase``, then :data:`SIGNALS` in order; null is NaN). False: the long table
            ``step, agent, phase, signal, value`` (measured values only).

    Returns:
        pandas DataFrame sorted by agent, step (an empty one of the same columns when the
        folder has no signal file: logs of schema 1 and 2, or a run with ``signals: false``).

    Raises:
        RunLogError: A malformed row, naming ``signals.jsonl:LINE``.
    """
    import pandas as pd

    p = Path(path)
    file = p / SIGNALS_FILE if p.is_dir() or not p.suffix else p
    rows: list[dict[str, Any]] = []
    if file.exists():
        rows, torn = _parse(file, agents)
        if torn is not None:
            if strict:
                raise RunLogError(f"{torn} (strict: a torn tail is an error)")
            warnings.warn(f"{torn}: dropped", RunLogWarning, stacklevel=2)
    cols = ["step", "agent", "phase", *SIGNALS]
    df = pd.DataFrame(rows, columns=cols)
    df[list(SIGNALS)] = df[list(SIGNALS)].astype(float)
    df = df.astype({"step": int, "agent": str, "phase": str})
    df = df.sort_values(["agent", "step"], kind="stable").reset_index(drop=True)
    if wide:
        return df
    long = df.melt(["step", "agent", "phase"], list(SIGNALS), "signal", "value")
    long = long.dropna(subset=["value"])
    return long.sort_values(["agent", "signal", "step"], kind="stable").reset_index(drop=True)

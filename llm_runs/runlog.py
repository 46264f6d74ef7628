"""Run-log schema, append-only writer and validating reader (torch-free).

A training run writes one folder::

    runs/NAME/
      manifest.json      # written once at start (atomically), see below
      competence.jsonl   # one JSON object per line, appended and flushed per eval step
      signals.jsonl      # schema 3: one row per optimizer step and agent (SIGNALS)
      checkpoints/       # llm_runs only; not part of the schema

Schema ``agentmotifs.runlog`` version 3 (:data:`SCHEMA_VERSION`; 1: no pool fields, 2: no
signals; both still read). Signals: :data:`SIGNALS`, :func:`read_signals`, docs/runlog.md.

``manifest.json`` (a JSON object):
    ``schema`` (str, ``"agentmotifs.runlog"``), ``schema_version`` (int), ``run`` (str, run
    name), ``created`` (ISO-8601 UTC), ``seed`` (int), ``agents`` (list of agent names in
    pipeline order), ``spec`` (the network spec, :meth:`simulate.spec.NetworkSpec.to_dict`),
    ``config`` (the full training config, :meth:`llm_runs.config.TrainConfig.to_dict`),
    ``schedules`` (``{"pulses": [[start, stop], ...], "pulse_mode": str,
    "shift_step": int | null}``; steps are optimizer steps, windows half-open), ``versions``
    (package → version), ``git_revision`` (str or null), ``device`` (str).

``competence.jsonl`` rows, discriminated by ``kind``:

``kind = "agent"`` — one per evaluation step and agent:
    ``step`` (int >= 0, optimizer steps done), ``agent`` (str), ``competence`` (float in
    [0, 1], probe accuracy A_i), ``n_eval`` (int > 0, probe count), ``reward`` (mean training
    reward of the agent since the previous eval, after credit assignment and pulses),
    ``reward_std``, ``entropy`` (mean per-token policy entropy, nats), ``kl`` (mean per-token
    KL to the frozen base, nats), ``lr`` (effective learning rate), ``budget_share`` (fraction
    of the rollout batch the agent trained on, in [0, 1]), ``loss`` (mean policy loss),
    ``ema`` (EMA competence used by the edge controllers), ``regulation`` (gated Hill
    regulation G_i per mechanism, ``{"budget": g, "credit": g, "coupling": g}``).
    Pool-of-Agents runs (``pool_size`` K > 1, schema 2) add ``members`` (per-member probe
    competence, K floats in [0, 1]; ``competence`` is their mean; absent with evolution
    strategies, whose ``competence`` is the centre's), ``pool_spread`` (their standard
    deviation) and ``pool_fitness`` (each member's EMA training reward, K numbers or nulls
    before a member was rewarded). Training metrics are null at step 0. Names follow TRL
    where they overlap (``reward``, ``reward_std``, ``entropy``, ``kl``, ``loss``).

``kind = "e2e"`` — one per evaluation step:
    ``step``, ``accuracy`` (end-to-end exact-match accuracy of the X→Y→Z pipeline on the
    held-out test split, in [0, 1]), ``n_eval`` (test count), ``reward`` (mean training
    end-to-end reward since the previous eval, before pulses; null at step 0),
    ``pulse`` (bool, a spurious-reward pulse was active at this step), ``shifted`` (bool, the
    distribution shift had happened).

Rows come in groups, one per evaluation step, in strictly increasing ``step`` order: a group
holds one row per manifest agent and (if the log has e2e rows at all) one e2e row. When the
manifest's config has ``eval_every`` and ``steps`` (every llm_runs run), the logged steps are
exactly ``0, eval_every, 2*eval_every, ...`` then ``steps``, without gaps; a log that skips or
splices steps is rejected. A diverged run (below) may end with one group at ``diverged_step``.
Unknown extra fields are allowed (forward compatibility) and kept by the reader.

Optional manifest fields written by llm_runs: ``run_id`` (random hex id; checkpoints carry it,
so a checkpoint of another run is never resumed), ``status`` (``"running"`` while written or
stopped early, e.g. killed; ``"finished"``; ``"diverged"``), and for a diverged run
``diverged_step`` (int, optimizer steps done when parameters or training metrics became
non-finite) and ``diverged_reason`` (str). Non-finite training metrics are logged as null.

Torn tails (a run killed mid-write: an unterminated last line, an incomplete last group) are
dropped by the readers with a :class:`RunLogWarning`; with ``strict=True`` (``--strict``)
they are an error. Anything else malformed is always an error.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulate.common import write_json, write_text

from ._provenance import git_revision as git_revision
from ._provenance import package_versions as package_versions
from ._runlog_schema import SCHEMA as SCHEMA
from ._runlog_schema import SCHEMA_VERSION as SCHEMA_VERSION
from ._runlog_schema import TERMINAL_STATUSES as TERMINAL_STATUSES
from ._runlog_schema import RunLogError as RunLogError
from ._runlog_schema import RunLogWarning as RunLogWarning
from ._runlog_schema import check_steps, is_int, validate_manifest
from ._runlog_schema import is_terminal as is_terminal
from ._runlog_schema import make_manifest as make_manifest
from ._runlog_schema import validate_row as validate_row
from ._signal_log import SignalWriter, read_signals, validate_signal_row
from ._signals import SIGNALS, SIGNALS_FILE

__all__ = [
    "COMPETENCE_FILE",
    "MANIFEST_FILE",
    "SCHEMA",
    "SCHEMA_VERSION",
    "SIGNALS",
    "SIGNALS_FILE",
    "TERMINAL_STATUSES",
    "RunLog",
    "RunLogError",
    "RunLogWarning",
    "RunWriter",
    "SignalWriter",
    "competence_table",
    "git_revision",
    "is_terminal",
    "make_manifest",
    "package_versions",
    "read_manifest",
    "read_run",
    "read_signals",
    "update_manifest",
    "validate_row",
    "validate_signal_row",
]

MANIFEST_FILE = "manifest.json"
COMPETENCE_FILE = "competence.jsonl"


def _read_utf8(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise RunLogError(f"{p}: not UTF-8 text (byte {err.start}: {err.reason})") from None
    except OSError as err:
        raise RunLogError(f"{p}: cannot be read ({err.strerror})") from None


def read_manifest(path: str | Path) -> dict[str, Any]:
    """Read and validate ``manifest.json`` of a run folder (or the file itself)."""
    p = Path(path)
    p = p / MANIFEST_FILE if p.is_dir() else p
    if not p.exists():
        raise RunLogError(f"{p}: no manifest")
    try:
        m = json.loads(_read_utf8(p))
    except json.JSONDecodeError as err:
        raise RunLogError(f"{p}: not valid JSON ({err})") from None
    return validate_manifest(m, str(p))


def update_manifest(path: str | Path, **fields: Any) -> dict[str, Any]:
    """Set fields of a run folder's manifest (e.g. ``status``) and rewrite it atomically."""
    m = read_manifest(path)
    m.update(fields)
    p = Path(path)
    validate_manifest(m, str(p / MANIFEST_FILE))
    write_json(p / MANIFEST_FILE, m)
    return m


class RunWriter:
    """Append-only writer of a run folder; every :meth:`write` is flushed and fsynced.

    Args:
        path: The run folder (created if needed).
        manifest: Manifest to write (see :func:`make_manifest`). With ``resume_from_step`` an
            existing manifest is kept and this argument may be None.
        resume_from_step: When resuming, rows with ``step >= resume_from_step`` (and a torn
            last line) are dropped first, so a restarted run neither loses nor duplicates rows.

    Raises:
        RunLogError: A new run (no ``resume_from_step``) into a folder that already has a log:
            the writer never deletes one.
    """

    def __init__(
        self,
        path: str | Path,
        manifest: Mapping[str, Any] | None,
        *,
        resume_from_step: int | None = None,
    ) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        mpath = self.path / MANIFEST_FILE
        self.file = self.path / COMPETENCE_FILE
        if resume_from_step is None and self.file.exists():
            raise RunLogError(f"{self.file}: already exists; a new run never replaces a log")
        if resume_from_step is None or not mpath.exists():
            if manifest is None:
                raise RunLogError(f"{self.path}: a new run needs a manifest")
            validate_manifest(dict(manifest), "manifest")
            write_json(mpath, dict(manifest))
        if resume_from_step is not None and self.file.exists():
            self._truncate(resume_from_step)
        self._fh = open(self.file, "a", encoding="utf-8")

    def _truncate(self, step: int) -> None:
        keep: list[str] = []
        for line in _read_utf8(self.file).splitlines(keepends=True):
            if not line.endswith("\n"):
                break  # torn write of a killed process
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                break
            if isinstance(row, dict) and is_int(row.get("step")) and row["step"] < step:
                keep.append(line)
        write_text(self.file, "".join(keep))

    def write(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Validate and append rows (one eval step's worth), then flush to disk."""
        lines = []
        for row in rows:
            validate_row(dict(row), "row to write")
            lines.append(json.dumps(row, sort_keys=False, allow_nan=False) + "\n")
        self._fh.write("".join(lines))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Close the log file."""
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class RunLog:
    """A validated run folder.

    Attributes:
        path: The run folder.
        manifest: The parsed manifest.
        rows: All rows in file order (agent and e2e), a dropped torn tail excluded.
        torn: Why a torn tail was dropped (None if the log ended cleanly).
    """

    path: Path
    manifest: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)
    torn: str | None = None

    @property
    def name(self) -> str:
        """The run name from the manifest."""
        return str(self.manifest["run"])

    @property
    def status(self) -> str | None:
        """``"running"`` (being written, or stopped early), ``"finished"``, ``"diverged"``,
        or None for a manifest that does not say."""
        return self.manifest.get("status")

    @property
    def diverged_step(self) -> int | None:
        """Optimizer steps done when the run diverged (training stopped there), else None."""
        return self.manifest.get("diverged_step") if self.status == "diverged" else None

    @property
    def agent_rows(self) -> list[dict[str, Any]]:
        """Rows of kind ``agent``."""
        return [r for r in self.rows if r["kind"] == "agent"]

    @property
    def e2e_rows(self) -> list[dict[str, Any]]:
        """Rows of kind ``e2e``."""
        return [r for r in self.rows if r["kind"] == "e2e"]

    def frame(self, kind: str = "agent") -> Any:
        """The rows of one kind as a pandas DataFrame (one row per line)."""
        import pandas as pd

        rows = self.agent_rows if kind == "agent" else self.e2e_rows
        return pd.DataFrame(rows).drop(columns=["kind"], errors="ignore")

    def competence(self) -> Any:
        """Wide table: index ``step``, one column per agent (competence A_i)."""
        df = self.frame("agent")
        return df.pivot(index="step", columns="agent", values="competence")

    def signals(self, *, wide: bool = True, strict: bool = False) -> Any:
        """The training signals as :func:`read_signals` reads them (empty before schema 3)."""
        return read_signals(self.path, agents=self.manifest["agents"], strict=strict, wide=wide)


def _parse(file: Path) -> tuple[list[tuple[int, dict[str, Any]]], str | None]:
    """Rows with their line numbers, and the torn last line's description (if any)."""
    lines = _read_utf8(file).splitlines(keepends=True)
    rows: list[tuple[int, dict[str, Any]]] = []
    for i, line in enumerate(lines, start=1):
        where = f"{file}:{i}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            if i == len(lines) and not line.endswith("\n"):
                return rows, f"{where}: torn last line ({err.msg})"
            raise RunLogError(f"{where}: not valid JSON ({err.msg})") from None
        rows.append((i, validate_row(row, where)))
    return rows, None


def read_run(path: str | Path, *, strict: bool = False) -> RunLog:
    """Read and validate a run folder.

    Args:
        path: The run folder.
        strict: Make a torn tail an error. By default a torn tail (an unterminated,
            unparsable last line, or an incomplete last group of rows: a run killed mid-write
            or still being written) is dropped with a :class:`RunLogWarning`.

    Returns:
        The :class:`RunLog`.

    Raises:
        RunLogError: Naming ``competence.jsonl:LINE`` of the first bad line; see the module
            docstring for the rules (row schema, step order and grid, complete groups).
    """
    folder = Path(path)
    manifest = read_manifest(folder)
    file = folder / COMPETENCE_FILE
    if not file.exists():
        raise RunLogError(f"{file}: missing")
    parsed, torn = _parse(file)
    agents = list(manifest["agents"])
    groups: list[tuple[int, int, list[dict[str, Any]]]] = []  # step, first line, rows
    for i, row in parsed:
        where = f"{file}:{i}"
        if not groups or groups[-1][0] != row["step"]:
            groups.append((row["step"], i, []))
        step, _, rows = groups[-1]
        if row["kind"] == "agent" and agents and row["agent"] not in agents:
            raise RunLogError(f"{where}: agent {row['agent']!r} not in manifest agents")
        key = row["agent"] if row["kind"] == "agent" else None
        if any(r["kind"] == row["kind"] and r.get("agent") == key for r in rows):
            name = "e2e" if key is None else repr(key)
            raise RunLogError(f"{where}: duplicated row for step {step}, {name}")
        rows.append(row)
    with_e2e = any(r["kind"] == "e2e" for _, r in parsed)

    def missing(rows: list[dict[str, Any]]) -> list[str]:
        have = {r["agent"] for r in rows if r["kind"] == "agent"}
        out = [a for a in agents if a not in have]
        if with_e2e and not any(r["kind"] == "e2e" for r in rows):
            out.append("e2e")
        return out

    if groups and missing(groups[-1][2]):
        step, line, rows = groups.pop()
        tail = f"{file}:{line}: incomplete last group (step {step}, missing {missing(rows)})"
        torn = tail if torn is None else f"{tail}; {torn.split(': ', 1)[1]}"
    for step, line, rows in groups:
        if missing(rows):
            raise RunLogError(f"{file}:{line}: step {step} has no row for {missing(rows)}")
    check_steps([(s, f"{file}:{line}") for s, line, _ in groups], manifest)
    if torn is not None:
        if strict:
            raise RunLogError(f"{torn} (strict: a torn tail is an error)")
        warnings.warn(
            f"{torn}: dropped (a run killed mid-write or still being written)",
            RunLogWarning,
            stacklevel=2,
        )
    rows = [r for _, _, g in groups for r in g]
    return RunLog(path=folder, manifest=manifest, rows=rows, torn=torn)


def competence_table(paths: str | Path | Iterable[str | Path], *, strict: bool = False) -> Any:
    """Long table ``run, step, agent, competence, n_eval`` over one or more run folders.

    This is the input of ``calibrate``. ``run`` is the manifest's run name (the folder name
    if two runs share one). ``strict`` as in :func:`read_run`.

    Returns:
        pandas DataFrame with columns ``run`` (str), ``step`` (int), ``agent`` (str),
        ``competence`` (float), ``n_eval`` (int), sorted by run, agent, step.
    """
    import pandas as pd

    if isinstance(paths, str | Path):
        paths = [paths]
    frames = []
    names: set[str] = set()
    for p in paths:
        log = read_run(p, strict=strict)
        name = log.name if log.name not in names else str(Path(p))
        names.add(name)
        df = log.frame("agent")
        cols = ["step", "agent", "competence", "n_eval"]
        if df.empty:
            df = pd.DataFrame(columns=cols)
        df = df[cols].copy()
        df.insert(0, "run", name)
        frames.append(df)
    cols = ["run", "step", "agent", "competence", "n_eval"]
    if not frames:
        return pd.DataFrame(columns=cols)
    out = pd.concat(frames, ignore_index=True)
    out = out.astype({"run": str, "step": int, "agent": str, "competence": float, "n_eval": int})
    return out.sort_values(["run", "agent", "step"], kind="stable").reset_index(drop=True)

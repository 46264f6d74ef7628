"""Run-log schema, append-only writer and validating reader (torch-free).

A training run writes one folder::

    runs/NAME/
      manifest.json      # written once at start (atomically), see below
      competence.jsonl   # one JSON object per line, appended and flushed per eval step
      checkpoints/       # llm_runs only; not part of the schema

Schema ``agentmotifs.runlog``, version 1 (:data:`SCHEMA_VERSION`).

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
    Training metrics are null at step 0. Names follow TRL where they overlap (``reward``,
    ``reward_std``, ``entropy``, ``kl``, ``loss``).

``kind = "e2e"`` — one per evaluation step:
    ``step``, ``accuracy`` (end-to-end exact-match accuracy of the X→Y→Z pipeline on the
    held-out test split, in [0, 1]), ``n_eval`` (test count), ``reward`` (mean training
    end-to-end reward since the previous eval, before pulses; null at step 0),
    ``pulse`` (bool, a spurious-reward pulse was active at this step), ``shifted`` (bool, the
    distribution shift had happened).

Rows are in non-decreasing ``step`` order; each (step, agent) and each e2e step appears once.
Unknown extra fields are allowed (forward compatibility) and kept by the reader.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulate._errors import AgentmotifsError

from ._provenance import git_revision as git_revision
from ._provenance import package_versions as package_versions

__all__ = [
    "COMPETENCE_FILE",
    "MANIFEST_FILE",
    "SCHEMA",
    "SCHEMA_VERSION",
    "RunLog",
    "RunLogError",
    "RunWriter",
    "competence_table",
    "git_revision",
    "make_manifest",
    "package_versions",
    "read_manifest",
    "read_run",
    "validate_row",
]

SCHEMA = "agentmotifs.runlog"
SCHEMA_VERSION = 1
MANIFEST_FILE = "manifest.json"
COMPETENCE_FILE = "competence.jsonl"

_AGENT_REQUIRED = ("step", "agent", "competence", "n_eval")
_AGENT_OPTIONAL_NUM = ("reward", "reward_std", "entropy", "kl", "lr", "budget_share", "loss", "ema")
_E2E_REQUIRED = ("step", "accuracy", "n_eval")
_MANIFEST_REQUIRED = ("schema", "schema_version", "run", "seed", "agents", "spec", "config")


class RunLogError(AgentmotifsError):
    """A malformed run folder; the message names the file and, for rows, the line number."""


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any) -> bool:
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
    if not _is_int(row["step"]) or row["step"] < 0:
        raise RunLogError(f"{where}: 'step' must be an int >= 0, got {row['step']!r}")
    if not _is_int(row["n_eval"]) or row["n_eval"] <= 0:
        raise RunLogError(f"{where}: 'n_eval' must be an int > 0, got {row['n_eval']!r}")
    score = "competence" if kind == "agent" else "accuracy"
    if not _is_num(row[score]) or not 0.0 <= row[score] <= 1.0:
        raise RunLogError(f"{where}: '{score}' must be a number in [0, 1], got {row[score]!r}")
    if kind == "agent":
        if not isinstance(row["agent"], str) or not row["agent"]:
            raise RunLogError(f"{where}: 'agent' must be a non-empty string")
        for k in _AGENT_OPTIONAL_NUM:
            if row.get(k) is not None and not _is_num(row[k]):
                raise RunLogError(f"{where}: '{k}' must be a finite number or null, got {row[k]!r}")
        share = row.get("budget_share")
        if share is not None and not 0.0 <= share <= 1.0:
            raise RunLogError(f"{where}: 'budget_share' must be in [0, 1], got {share!r}")
    elif row.get("reward") is not None and not _is_num(row["reward"]):
        raise RunLogError(f"{where}: 'reward' must be a finite number or null")
    return row


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
    """Build a schema-conforming manifest dict (versions and git revision filled in)."""
    manifest: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "run": str(run),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
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


def _validate_manifest(m: Any, where: str) -> dict[str, Any]:
    if not isinstance(m, dict):
        raise RunLogError(f"{where}: the manifest must be a JSON object")
    missing = [k for k in _MANIFEST_REQUIRED if k not in m]
    if missing:
        raise RunLogError(f"{where}: missing field(s) {missing}")
    if m["schema"] != SCHEMA:
        raise RunLogError(f"{where}: schema is {m['schema']!r}, expected {SCHEMA!r}")
    if not _is_int(m["schema_version"]) or m["schema_version"] > SCHEMA_VERSION:
        raise RunLogError(
            f"{where}: schema_version {m['schema_version']!r} not supported (<= {SCHEMA_VERSION})"
        )
    if not isinstance(m["agents"], list) or not all(isinstance(a, str) for a in m["agents"]):
        raise RunLogError(f"{where}: 'agents' must be a list of names")
    return m


def read_manifest(path: str | Path) -> dict[str, Any]:
    """Read and validate ``manifest.json`` of a run folder (or the file itself)."""
    p = Path(path)
    p = p / MANIFEST_FILE if p.is_dir() else p
    if not p.exists():
        raise RunLogError(f"{p}: no manifest")
    try:
        m = json.loads(p.read_text())
    except json.JSONDecodeError as err:
        raise RunLogError(f"{p}: not valid JSON ({err})") from None
    return _validate_manifest(m, str(p))


class RunWriter:
    """Append-only writer of a run folder; every :meth:`write` is flushed and fsynced.

    Args:
        path: The run folder (created if needed).
        manifest: Manifest to write (see :func:`make_manifest`). With ``resume=True`` an
            existing manifest is kept and this argument may be None.
        resume_from_step: When resuming, rows with ``step >= resume_from_step`` (and a torn
            last line) are dropped first, so a restarted run neither loses nor duplicates rows.
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
        if resume_from_step is None or not mpath.exists():
            if manifest is None:
                raise RunLogError(f"{self.path}: a new run needs a manifest")
            _validate_manifest(dict(manifest), "manifest")
            tmp = mpath.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
            os.replace(tmp, mpath)
        self.file = self.path / COMPETENCE_FILE
        if resume_from_step is not None and self.file.exists():
            self._truncate(resume_from_step)
        elif resume_from_step is None and self.file.exists():
            self.file.unlink()
        self._fh = open(self.file, "a", encoding="utf-8")

    def _truncate(self, step: int) -> None:
        keep: list[str] = []
        for line in self.file.read_text(encoding="utf-8").splitlines(keepends=True):
            if not line.endswith("\n"):
                break  # torn write of a killed process
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                break
            if isinstance(row, dict) and _is_int(row.get("step")) and row["step"] < step:
                keep.append(line)
        tmp = self.file.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(keep), encoding="utf-8")
        os.replace(tmp, self.file)

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
        rows: All rows in file order (agent and e2e).
    """

    path: Path
    manifest: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The run name from the manifest."""
        return str(self.manifest["run"])

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


def read_run(path: str | Path, *, strict: bool = True) -> RunLog:
    """Read and validate a run folder.

    Args:
        path: The run folder.
        strict: If False, a torn (unterminated, unparsable) last line — a run being written
            or killed mid-write — is ignored instead of raising.

    Returns:
        The :class:`RunLog`.

    Raises:
        RunLogError: Naming ``competence.jsonl:LINE`` of the first bad line.
    """
    folder = Path(path)
    manifest = read_manifest(folder)
    file = folder / COMPETENCE_FILE
    if not file.exists():
        raise RunLogError(f"{file}: missing")
    rows: list[dict[str, Any]] = []
    seen: set[tuple[int, str]] = set()
    last_step = -1
    agents = set(manifest["agents"])
    lines = file.read_text(encoding="utf-8").splitlines(keepends=True)
    for i, line in enumerate(lines, start=1):
        where = f"{file}:{i}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            if not strict and i == len(lines) and not line.endswith("\n"):
                break
            raise RunLogError(f"{where}: not valid JSON ({err.msg})") from None
        validate_row(row, where)
        if row["step"] < last_step:
            raise RunLogError(f"{where}: step {row['step']} after step {last_step}")
        last_step = row["step"]
        key = (row["step"], row["agent"] if row["kind"] == "agent" else "\x00e2e")
        if key in seen:
            raise RunLogError(f"{where}: duplicated row for step {key[0]}, {key[1]!r}")
        if row["kind"] == "agent" and agents and row["agent"] not in agents:
            raise RunLogError(f"{where}: agent {row['agent']!r} not in manifest agents")
        seen.add(key)
        rows.append(row)
    return RunLog(path=folder, manifest=manifest, rows=rows)


def competence_table(paths: str | Path | Iterable[str | Path], *, strict: bool = True) -> Any:
    """Long table ``run, step, agent, competence, n_eval`` over one or more run folders.

    This is the input of ``calibrate``. ``run`` is the manifest's run name (the folder name
    if two runs share one).

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

"""Experiment trackers' files: MLflow run folders and Weights & Biases history CSVs.

MLflow's file store (``mlruns/<experiment id>/<run id>/``, read directly, no server and no
mlflow library): ``meta.yaml``; ``metrics/<key>`` with one ``timestamp value step`` line per
logged value (a key with ``/`` is a nested path, ``metrics/critic/score/mean``); ``params/<key>``
holding the value as text; ``tags/mlflow.runName``. An experiment folder (run folders inside)
is read run by run.

W&B: a run's history exported as CSV (``run.history().to_csv(...)`` or ``scan_history``; one
row per logged step, a column per key, empty where a key was not logged at that step) or a
panel's "Export CSV" (a ``Step`` column and ``<run name> - <key>`` columns, each run a run).
The step is ``train/global_step`` when present (TRL logs it, W&B's own ``_step`` counts calls
to ``log``), else ``_step``, ``Step`` or ``step``. A W&B offline run folder needs the wandb
library (not installed here) and is not read.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._curve_data import CurveData, DataError
from ._curves import curves_from_scalars, scalar_frame
from ._mapping import KeyMapping, parse_number

__all__ = [
    "WANDB_STEP_COLUMNS",
    "is_mlflow_input",
    "is_wandb_csv",
    "read_mlflow",
    "read_wandb_csv",
]

#: Step columns of a W&B history CSV, first found is used.
WANDB_STEP_COLUMNS = ("train/global_step", "trainer/global_step", "_step", "Step", "step")
_PANEL = re.compile(r"^(?P<run>.+?) - (?P<key>.+)$")


def _is_mlflow_run(path: Path) -> bool:
    return path.is_dir() and (path / "meta.yaml").is_file() and (path / "metrics").is_dir()


def is_mlflow_input(path: Path) -> bool:
    """True for an MLflow run folder or an experiment folder of them."""
    return _is_mlflow_run(path) or (
        path.is_dir() and any(_is_mlflow_run(d) for d in path.iterdir() if d.is_dir())
    )


def _files(root: Path) -> dict[str, Path]:
    if not root.is_dir():
        return {}
    return {f.relative_to(root).as_posix(): f for f in sorted(root.rglob("*")) if f.is_file()}


def _text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise DataError(f"{file}: not UTF-8") from None


def _mlflow_run(path: Path) -> tuple[str, list[tuple[str, int, str, float]], dict[str, Any]]:
    import yaml

    try:
        meta = yaml.safe_load(_text(path / "meta.yaml")) or {}
    except yaml.YAMLError:
        raise DataError(f"{path / 'meta.yaml'}: not YAML") from None
    if not isinstance(meta, dict):
        raise DataError(f"{path / 'meta.yaml'}: not a YAML mapping")
    tags = _files(path / "tags")
    name = _text(tags["mlflow.runName"]).strip() if "mlflow.runName" in tags else ""
    label = name or str(meta.get("run_name") or meta.get("run_id") or path.name)
    rows = []
    for key, f in _files(path / "metrics").items():
        for n, line in enumerate(_text(f).splitlines(), start=1):
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) not in (2, 3):
                raise DataError(f"{f}:{n}: expected 'timestamp value step', got {line.strip()!r}")
            try:
                value = float(parts[1])
                step = int(parts[2]) if len(parts) == 3 else 0
            except ValueError:
                raise DataError(
                    f"{f}:{n}: expected 'timestamp value step', got {line.strip()!r}"
                ) from None
            rows.append((label, step, key, value))
    params = {k: _text(f).strip() for k, f in _files(path / "params").items()}
    return label, rows, params


def read_mlflow(path: str | Path, mapping: KeyMapping, *, strict: bool = False) -> CurveData:
    """Read an MLflow run folder, or every run of an experiment folder.

    Args:
        path: ``mlruns/<experiment id>/<run id>`` or ``mlruns/<experiment id>``.
        mapping: Metric keys → agents.
        strict: Raise on NaN values instead of dropping them.

    Returns:
        The curves, one run per MLflow run (labelled by its run name); params that are
        numbers become covariates under their keys (verl logs its config as
        ``actor_rollout_ref/actor/optim/lr``), ``seed`` from a ``seed`` param.
    """
    path = Path(path)
    runs = (
        [path] if _is_mlflow_run(path) else sorted(d for d in path.iterdir() if _is_mlflow_run(d))
    )
    if not runs:
        raise DataError(f"{path}: not an MLflow run folder (meta.yaml and metrics/)")
    rows, configs = [], {}
    for r in runs:
        label, run_rows, params = _mlflow_run(r)
        if label in configs:
            raise DataError(f"{r}: run name {label!r} is used by two runs in {path}")
        rows.extend(run_rows)
        configs[label] = params
    if not rows:
        raise DataError(f"{path}: no metric values in metrics/")
    source = str(path)
    return curves_from_scalars(
        scalar_frame(rows, source), mapping, source=source, configs=configs, strict=strict
    )


def _header(path: Path) -> list[str]:
    try:
        return list(pd.read_csv(path, nrows=0).columns)
    except Exception:
        return []


def is_wandb_csv(path: Path) -> bool:
    """True for a CSV with a W&B step column and none of a long table's own columns."""
    if not (path.is_file() and path.suffix.lower() == ".csv"):
        return False
    cols = _header(path)
    if {"agent", "competence", "n_eval"} & set(cols):  # a long table (maybe a broken one)
        return False
    return any(c in cols for c in WANDB_STEP_COLUMNS)


def read_wandb_csv(
    path: str | Path,
    mapping: KeyMapping,
    *,
    run: str | None = None,
    config: dict[str, Any] | None = None,
    strict: bool = False,
) -> CurveData:
    """Read a W&B history CSV or panel export.

    Args:
        path: The CSV file.
        mapping: Column keys → agents (a panel export's keys without the ``<run> - `` part).
        run: Run label of a history CSV (default: the file's stem).
        config: The run's config (e.g. ``run.config``) for covariates; W&B does not export it
            with the history.
        strict: Raise on NaN values instead of dropping them.
    """
    path = Path(path)
    try:
        df = pd.read_csv(path)
    except Exception as err:
        raise DataError(f"{path}: cannot read CSV ({type(err).__name__})") from None
    step_col = next((c for c in WANDB_STEP_COLUMNS if c in df.columns), None)
    if step_col is None:
        raise DataError(f"{path}: no step column; expected one of {list(WANDB_STEP_COLUMNS)}")
    df = df.loc[df[step_col].notna()]
    label = run or path.stem
    panel = step_col == "Step" and any(_PANEL.match(str(c)) for c in df.columns)
    rows, lost = [], []
    for col in df.columns:
        if col == step_col or str(col).endswith(("__MIN", "__MAX")) or col.startswith("Unnamed"):
            continue
        m = _PANEL.match(str(col)) if panel else None
        r, key = (m.group("run"), m.group("key")) if m else (label, str(col))
        vals = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
        keep = np.isfinite(vals)  # an empty cell: the key was not logged at that step
        raw = df[col].to_numpy()
        written = df[col].notna().to_numpy() & ~keep  # abc, 55%, inf: not an empty cell
        lost.extend((r, s, key, v) for s, v in zip(df[step_col].to_numpy()[written],
                                                   raw[written], strict=True))  # fmt: skip
        rows.extend(
            zip(
                [r] * int(keep.sum()),
                df[step_col].to_numpy()[keep],
                [key] * int(keep.sum()),
                vals[keep],
                strict=True,
            )
        )
    if not rows:
        raise DataError(f"{path}: no numeric values besides the step column {step_col!r}")
    cfg = {k: v for k, v in (config or {}).items() if parse_number(v) is not None}
    configs = {r: cfg for r in {row[0] for row in rows}}
    source = str(path)
    return curves_from_scalars(
        scalar_frame(rows, source, lost), mapping, source=source, configs=configs, strict=strict
    )

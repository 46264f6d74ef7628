"""Competence-curve inputs: the readers (CSV/Parquet, llm_runs folders, TensorBoard, and
through :mod:`calibrate._importers` the external training logs) and one loader for all.

Every reader returns a :class:`~calibrate.CurveData` (:mod:`calibrate._curve_data`: the
long table, its validation and errors, re-exported here).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from ._curve_data import REQUIRED_COLUMNS as REQUIRED_COLUMNS
from ._curve_data import CurveData, DataError, DataWarning
from ._curve_data import validate_table as validate_table
from ._importers import KeyMapping, detect, read_events, read_source

__all__ = [
    "REQUIRED_COLUMNS",
    "CurveData",
    "DataError",
    "DataWarning",
    "load_inputs",
    "read_run_folder",
    "read_table",
    "read_tensorboard",
    "validate_table",
]


def read_table(path: str | Path, *, strict: bool = False) -> CurveData:
    """Read a long CSV or Parquet file (``.csv``, ``.tsv``, ``.parquet``, ``.pq``)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"input file not found: {path}")
    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            df = pd.read_parquet(path)
        elif suffix in (".csv", ".tsv", ".txt"):
            df = pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",")
        else:
            raise DataError(f"{path}: unknown table format {suffix!r}; use .csv or .parquet")
    except DataError:
        raise
    except Exception as err:
        raise DataError(f"{path}: cannot read table ({err})") from None
    return CurveData.from_table(df, strict=strict, source=str(path))


def read_run_folder(path: str | Path, *, strict: bool = False) -> CurveData:
    """Read an llm_runs run folder (``manifest.json`` + ``competence.jsonl``).

    Uses :func:`llm_runs.runlog.read_run` (torch-free). Hyperparameters come from the
    manifest's ``config``, flattened to dotted names (``rl.lr``), and ``seed``. A torn last
    line (a run still being written) is ignored unless ``strict``.
    """
    path = Path(path)
    if not (path / "manifest.json").is_file():
        raise DataError(f"{path}: not a run folder (no manifest.json)")
    from llm_runs.runlog import RunLogError, read_run

    try:
        log = read_run(path, strict=strict)
    except RunLogError as err:
        raise DataError(str(err)) from None
    df = log.frame("agent")
    if df.empty:
        raise DataError(f"{path}: the run log has no agent rows")
    if log.status == "diverged":
        warnings.warn(
            f"{path}: the run diverged at step {log.diverged_step} (a collapse: "
            f"{log.manifest.get('diverged_reason', 'non-finite training')}); its curves end there",
            DataWarning,
            stacklevel=2,
        )
    regs = df[["step", "agent", "ema"]].copy() if "ema" in df.columns else None
    df = df[["step", "agent", "competence", "n_eval"]].copy()
    df.insert(0, "run", log.name)
    for k, v in _flat_numbers(log.manifest.get("config", {})).items():
        df[k] = v
    df["seed"] = log.manifest.get("seed")
    data = CurveData.from_table(df, strict=strict, source=str(path))
    return dataclasses.replace(
        data,
        configs={log.name: dict(log.manifest.get("config", {}))},
        regulators={} if regs is None else {log.name: regs.reset_index(drop=True)},
        status={log.name: _folder_status(log)},
    )


def _folder_status(log) -> dict:
    """A run folder's status record, as the importers' (:attr:`CurveData.status`)."""
    step = log.diverged_step if log.status == "diverged" else None
    reason = str(log.manifest.get("diverged_reason", "")) if step is not None else ""
    return {"status": str(log.status), "step": step, "reason": reason}


def _flat_numbers(d: Mapping, prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flat_numbers(v, f"{prefix}{k}."))
        elif isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
            out[f"{prefix}{k}"] = float(v)
    return out


def read_tensorboard(
    path: str | Path,
    tags: Mapping[str, str],
    *,
    n_eval: int | Mapping[str, int] = 100,
    run: str | None = None,
    strict: bool = False,
) -> CurveData:
    """Read scalar competence curves from TensorBoard event files (exact tags; see
    :func:`calibrate.read_events` for regular expressions and covariates).

    Args:
        path: An event file or a folder with ``events.out.tfevents.*`` files (at any depth).
        tags: Agent name → scalar tag, e.g. ``{"X": "competence/solver"}``.
        n_eval: Evaluation sample size behind each scalar (one number or per agent);
            TensorBoard does not record it.
        run: Run label (default: the folder name).
        strict: Raise on NaN values instead of dropping them.
    """
    if not tags:
        raise DataError("read_tensorboard needs tags: agent name -> scalar tag")
    return read_events(path, KeyMapping(dict(tags), n_eval=n_eval), run=run, strict=strict)


def _check_table_columns(path: Path) -> None:
    """A CSV that is neither a long table nor a W&B history: say both (issue 72 §5: a W&B
    CSV without a step column was called "a long table" missing its columns).

    Raises:
        DataError: The CSV holds none of the long table's columns.
    """
    if path.suffix.lower() != ".csv" or not path.is_file():
        return
    from ._importers._tracking import WANDB_STEP_COLUMNS

    try:
        head = pd.read_csv(path, nrows=0).columns.tolist()
    except Exception:
        return  # read_table says what is wrong with it
    if head and not set(REQUIRED_COLUMNS) & set(head):
        raise DataError(
            f"{path}: neither a long table (columns {list(REQUIRED_COLUMNS)}) nor a W&B "
            f"history CSV (a step column: {', '.join(WANDB_STEP_COLUMNS)}); its columns: "
            f"{head[:8]}"
        )


def load_inputs(
    inputs: Sequence[str | Path] | str | Path,
    *,
    strict: bool = False,
    tb_tags: Mapping[str, str] | None = None,
    tb_n_eval: int = 100,
    mapping: KeyMapping | None = None,
) -> CurveData:
    """Load and join inputs of any supported kind.

    Args:
        inputs: Paths: ``.csv``/``.parquet`` tables, llm_runs run folders, TensorBoard event
            files or folders, TRL output folders, verl JSONL logs, MLflow run or experiment
            folders, W&B history CSVs, or a folder of any of these.
        strict: Raise on NaN rows instead of dropping them.
        tb_tags: Agent → scalar tag map for TensorBoard inputs read without ``mapping``.
        tb_n_eval: Evaluation sample size assumed for those TensorBoard scalars.
        mapping: A :class:`calibrate.KeyMapping` for the external logs (keys → agents,
            evaluation size, named covariates); ``tb_tags`` are added to it for TensorBoard.
    """
    if isinstance(inputs, str | Path):
        inputs = [inputs]
    if not inputs:
        raise DataError("no inputs given")
    mapping = mapping if mapping is not None else KeyMapping()

    def external(p: Path, kind: str) -> CurveData:
        if kind == "tensorboard" and tb_tags:
            if mapping.empty:
                return read_tensorboard(p, tb_tags, n_eval=tb_n_eval, strict=strict)
            return read_source(
                p,
                kind,
                dataclasses.replace(mapping, agents={**tb_tags, **mapping.agents}),
                strict=strict,
            )
        return read_source(p, kind, mapping, strict=strict)

    def collect(p: Path, depth: int = 0) -> list[CurveData]:
        if p.is_dir() and (p / "manifest.json").is_file():
            return [read_run_folder(p, strict=strict)]
        if (kind := detect(p)) is not None:
            return [external(p, kind)]
        if p.is_file() and p.suffix == ".jsonl":  # no table: read as verl's, which says why
            return [external(p, "verl")]
        if not p.is_dir():
            _check_table_columns(p)
            return [read_table(p, strict=strict)]
        found = [d for d in sorted(p.iterdir())
                 if d.is_dir() or detect(d) is not None or d.suffix == ".jsonl"]  # fmt: skip
        parts = [x for d in found if depth < 3 for x in collect(d, depth + 1)] if found else []
        if not parts and depth == 0:
            raise DataError(
                f"{p}: folder holds no run folders (manifest.json), event files or other "
                "training logs"
            )
        return parts

    parts = [part for item in inputs for part in collect(Path(item))]
    if len(parts) == 1:
        return parts[0]
    seen: dict[str, int] = {}
    for i, part in enumerate(parts):
        for r in part.runs:
            if r in seen:
                raise DataError(f"run {r!r} appears in input {seen[r]} and input {i}")
            seen[r] = i
    return CurveData.concat(parts, strict=strict)

"""Validated competence curves: the long table every input becomes, and its checks.

Every reader (:mod:`calibrate._data`, :mod:`calibrate._importers`) returns the same long
table, one row per evaluation::

    run (str)  step (int >= 0)  agent (str)  competence (float in [0, 1])  n_eval (int >= 1)

plus an optional ``seed`` column and optional hyperparameter columns (one value per run),
which :class:`CurveData` keeps as a per-run table ``hyper``. This module imports no reader,
so the readers and the rest of calibrate import it one way.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from simulate.common import AgentmotifsError

from ._covariates import factors, is_product

__all__ = [
    "REQUIRED_COLUMNS",
    "CurveData",
    "DataError",
    "DataWarning",
    "validate_table",
]

REQUIRED_COLUMNS = ("run", "step", "agent", "competence", "n_eval")
#: Largest evaluation size a table may hold (binomial counts; 1e30 overflowed int64).
MAX_N_EVAL = 1e9
#: Largest training step a table may hold (integers exact in float64 and int64).
MAX_STEP = 1e15
#: Config fields that say where and as what a run trained, not what it trained.
_NOT_CONDITION = frozenset({"seed", "name", "device", "threads", "signals"})
_META_COLUMNS = {*REQUIRED_COLUMNS, "seed", "successes"}


class DataError(AgentmotifsError):
    """Invalid competence data; the message names the column, rows or file at fault."""


class DataWarning(UserWarning):
    """A recoverable problem in the data (e.g. NaN rows dropped)."""


def _rows(df: pd.DataFrame, mask: np.ndarray, limit: int = 5) -> str:
    idx = list(df.index[mask][:limit])
    more = int(mask.sum()) - len(idx)
    return f"rows {idx}" + (f" and {more} more" if more > 0 else "")


def validate_table(df: pd.DataFrame, *, strict: bool = False, source: str = "data") -> pd.DataFrame:
    """Check a long competence table and return a clean, sorted copy.

    Args:
        df: Table with columns ``run, step, agent, competence, n_eval`` (+ optional ``seed``
            and hyperparameter columns).
        strict: Raise on NaN rows instead of dropping them with a warning.
        source: Name used in messages (file path).

    Returns:
        The table with ``run``/``agent`` as str, ``step``/``n_eval`` as int, sorted by
        (run, agent, step), index reset.

    Raises:
        DataError: Missing columns, competence outside [0, 1], n_eval < 1, non-integer or
            negative steps, duplicated (run, step, agent), steps not increasing in file order
            within a (run, agent) curve, a hyperparameter varying within a run, or NaN
            with ``strict``.
    """
    if not isinstance(df, pd.DataFrame):
        raise DataError(f"{source}: expected a table (pandas DataFrame), got {type(df).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise DataError(
            f"{source}: missing column(s) {missing}; required: {list(REQUIRED_COLUMNS)}"
            f" (found {list(df.columns)})"
        )
    df = df.reset_index(drop=True).copy()
    nan = df[list(REQUIRED_COLUMNS)].isna().any(axis=1).to_numpy()
    if nan.any():
        msg = f"{source}: {int(nan.sum())} row(s) with NaN in a required column ({_rows(df, nan)})"
        if strict:
            raise DataError(msg + "; fix them or run without --strict to drop them")
        warnings.warn(msg + "; dropped", DataWarning, stacklevel=2)
        df = df.loc[~nan].reset_index(drop=True)
    if df.empty:
        raise DataError(f"{source}: no rows left to fit")
    for col in ("step", "competence", "n_eval"):
        try:
            df[col] = pd.to_numeric(df[col], errors="raise")
        except (ValueError, TypeError):
            raise DataError(f"{source}: column {col!r} must be numeric") from None
    step = df["step"].to_numpy(dtype=float)
    bad = (step < 0) | (np.abs(step - np.round(step)) > 1e-9) | ~np.isfinite(step)
    if bad.any():
        raise DataError(f"{source}: step must be a non-negative integer ({_rows(df, bad)})")
    bad = step > MAX_STEP  # past int64's exact range, and past any run
    if bad.any():
        raise DataError(f"{source}: step must be at most {MAX_STEP:.0e} ({_rows(df, bad)})")
    comp = df["competence"].to_numpy(dtype=float)
    bad = ~((comp >= 0) & (comp <= 1))
    if bad.any():
        raise DataError(f"{source}: competence must lie in [0, 1] ({_rows(df, bad)})")
    ne = df["n_eval"].to_numpy(dtype=float)
    bad = ~(ne >= 1) | (np.abs(ne - np.round(ne)) > 1e-9)
    if bad.any():
        raise DataError(f"{source}: n_eval must be an integer >= 1 ({_rows(df, bad)})")
    bad = ne > MAX_N_EVAL  # a binomial count of an int64 table (1e30 overflowed)
    if bad.any():
        raise DataError(f"{source}: n_eval must be at most {MAX_N_EVAL:.0e} ({_rows(df, bad)})")
    df["run"] = df["run"].astype(str)
    df["agent"] = df["agent"].astype(str)
    df["step"] = df["step"].round().astype(np.int64)
    df["n_eval"] = df["n_eval"].round().astype(np.int64)
    dup = df.duplicated(["run", "step", "agent"], keep=False).to_numpy()
    if dup.any():
        raise DataError(f"{source}: duplicated (run, step, agent) ({_rows(df, dup)})")
    for keys, grp in df.groupby(["run", "agent"], sort=False):
        run, agent = keys  # type: ignore[misc]
        s = grp["step"].to_numpy()
        if np.any(np.diff(s) <= 0):
            k = int(np.argmax(np.diff(s) <= 0))
            raise DataError(
                f"{source}: steps of run {run!r}, agent {agent!r} are not increasing "
                f"(step {int(s[k])} is followed by {int(s[k + 1])} at row {int(grp.index[k + 1])})"
            )
    for col in (c for c in df.columns if c not in _META_COLUMNS):
        nun = df.groupby("run")[col].nunique(dropna=False)
        if bool((nun > 1).any()):
            bad_runs = list(nun.index[nun > 1][:5])
            raise DataError(
                f"{source}: hyperparameter column {col!r} must have one value per run; "
                f"runs {bad_runs} have several"
            )
    return df.sort_values(["run", "agent", "step"], kind="stable").reset_index(drop=True)


@dataclasses.dataclass(frozen=True)
class CurveData:
    """Validated competence curves of one or more runs.

    Attributes:
        table: Long table (run, step, agent, competence, n_eval[, seed]), sorted.
        hyper: One row per run (index ``run``): hyperparameter columns and ``seed``.
    """

    table: pd.DataFrame
    hyper: pd.DataFrame
    configs: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    """Per run, the full llm_runs training config (from run folders' manifests; empty for
    tables and TensorBoard inputs): what ``recommend`` turns into the next run's config."""
    regulators: Mapping[str, pd.DataFrame] = dataclasses.field(default_factory=dict)
    """Per run, the training competence its edges acted on (llm_runs' per-agent ``ema``,
    columns ``step, agent, ema``; from run folders only): ``calibrate fit --regulators
    logged`` reads the edges' Hill terms from it."""
    sources: pd.DataFrame | None = None
    """Per run and agent (imported logs): the logged ``key``, what its values mean
    (``meaning``, ``lo``, ``hi``: a reward on [lo, hi] read as ``(value - lo) / (hi - lo)``),
    where the evaluation size came from (``n_eval_from``), and what each point is
    (``point``; ``window``: the steps a training log's value averages over, which the
    likelihood compares at the window's middle, :meth:`model_steps`). None: not imported."""
    status: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    """Per run, how it ended as its log shows it: ``{"status": "finished" | "truncated" |
    "collapsed" | "diverged", "step": ..., "reason": ...}`` (imported logs and run folders)."""
    signals: pd.DataFrame | None = None
    """Training signals (imported logs): columns ``run, step, agent`` and one per signal of
    ``llm_runs.runlog.SIGNALS`` present; ``agent`` ``"*"`` for the whole policy."""

    @classmethod
    def from_table(
        cls, df: pd.DataFrame, *, strict: bool = False, source: str = "data"
    ) -> CurveData:
        """Validate ``df`` (see :func:`validate_table`) and split off per-run columns."""
        df = validate_table(df, strict=strict, source=source)
        extra = [c for c in df.columns if c not in REQUIRED_COLUMNS and c != "successes"]
        hyper = (
            df.groupby("run", sort=True)[extra].first()
            if extra
            else pd.DataFrame(index=pd.Index(sorted(df["run"].unique()), name="run"))
        )
        return cls(table=df[list(REQUIRED_COLUMNS)].copy(), hyper=hyper)

    @property
    def runs(self) -> list[str]:
        """Run labels, sorted."""
        return sorted(self.table["run"].unique())

    @property
    def agents(self) -> list[str]:
        """Agent names present in the data, sorted."""
        return sorted(self.table["agent"].unique())

    @property
    def successes(self) -> np.ndarray:
        """Observed successes ``round(competence * n_eval)`` per row."""
        t = self.table
        return np.round(t["competence"].to_numpy() * t["n_eval"].to_numpy()).astype(np.int64)

    def hyper_values(self, column: str, *, positive: bool = True) -> np.ndarray:
        """Values of a hyperparameter column, one per run (in :attr:`runs` order), all
        finite and, unless ``positive=False``, > 0 (a product ``a*b``: of its columns)."""
        if is_product(column):  # rl.lr*rl.lr_scale.X: the product of its fields' values
            parts = [self.hyper_values(f, positive=positive) for f in factors(column)]
            return np.prod(parts, axis=0)
        if column not in self.hyper.columns:
            raise DataError(
                f"hyperparameter {column!r} is not in the data; columns: {list(self.hyper.columns)}"
            )
        vals = pd.to_numeric(self.hyper.loc[self.runs, column], errors="coerce").to_numpy(float)
        if not np.all(np.isfinite(vals)) or (positive and np.any(vals <= 0)):
            what = "a positive number" if positive else "a number"
            raise DataError(f"hyperparameter {column!r} must be {what} in every run")
        return vals

    def conditions(self) -> dict[str, int]:
        """Each run's condition (an index, in :attr:`runs` order of first appearance): runs
        share one when their training config is the same apart from its seed (and its
        ``name``, ``device`` and ``threads``: where and as what it ran), or, for a run
        without a config (tables, TensorBoard), when their hyperparameter columns apart
        from ``seed`` are. Such runs are replicates: seeds of one design point."""
        keys: dict[str, str] = {}
        cols = [c for c in self.hyper.columns if c != "seed"]
        for r in self.runs:
            if r in self.configs:
                cfg = {k: v for k, v in self.configs[r].items() if k not in _NOT_CONDITION}
                keys[r] = "config:" + json.dumps(cfg, sort_keys=True, default=str)
            else:
                keys[r] = "columns:" + repr([repr(self.hyper.at[r, c]) for c in cols])
        index = {k: i for i, k in enumerate(dict.fromkeys(keys.values()))}
        return {r: index[k] for r, k in keys.items()}

    def model_steps(self) -> np.ndarray:
        """Per row of :attr:`table`, the step the model is compared at: the step itself for
        an evaluation, the middle of the window for a window mean (``step - (window - 1)
        // 2``, at least 0)."""
        steps = self.table["step"].to_numpy(dtype=np.int64)
        src = self.sources
        if src is None or "window" not in src.columns or src.empty:
            return steps
        w = self.table.merge(src[["run", "agent", "window"]], on=["run", "agent"], how="left")
        win = w["window"].fillna(1).to_numpy(dtype=np.int64)
        return np.maximum(steps - (win - 1) // 2, 0)

    def subset(self, runs: Sequence[str]) -> CurveData:
        """The data of some runs only."""
        keep = self.table["run"].isin(list(runs))
        configs = {r: c for r, c in self.configs.items() if r in set(runs)}
        regs = {r: c for r, c in self.regulators.items() if r in set(runs)}
        return CurveData(
            self.table.loc[keep].reset_index(drop=True),
            self.hyper.loc[list(runs)],
            configs,
            regs,
            _rows_of(self.sources, runs),
            {r: s for r, s in self.status.items() if r in set(runs)},
            _rows_of(self.signals, runs),
        )

    @classmethod
    def concat(cls, parts: Sequence[CurveData], *, strict: bool = False) -> CurveData:
        """Join several inputs (runs must be distinct) and re-validate."""
        tables = []
        for p in parts:
            t = p.table.merge(p.hyper, left_on="run", right_index=True, how="left")
            tables.append(t)
        table = pd.concat(tables, ignore_index=True)
        configs = {r: c for p in parts for r, c in p.configs.items()}
        table = _config_defaults(table, set(configs))
        joined = cls.from_table(table, strict=strict, source="inputs")
        regs = {r: c for p in parts for r, c in p.regulators.items()}
        return dataclasses.replace(
            joined,
            configs=configs,
            regulators=regs,
            sources=_joined([p.sources for p in parts]),
            status={r: s for p in parts for r, s in p.status.items()},
            signals=_joined([p.signals for p in parts]),
        )


def _rows_of(df: pd.DataFrame | None, runs: Sequence[str]) -> pd.DataFrame | None:
    if df is None:
        return None
    return df.loc[df["run"].isin(list(runs))].reset_index(drop=True)


def _joined(parts: Sequence[pd.DataFrame | None]) -> pd.DataFrame | None:
    got = [p for p in parts if p is not None and not p.empty]
    return pd.concat(got, ignore_index=True) if got else None


def config_default(name: str) -> float | None:
    """The value a training config holds for the dotted field ``name`` when it leaves the
    field out: ``rl.lr_scale.ROLE`` is 1 (a role without a factor trains at ``rl.lr``),
    another numeric field its :class:`llm_runs.config.TrainConfig` default; None for a
    name that is no numeric config field."""
    from llm_runs.config import TrainConfig
    from llm_runs.knobs import knob

    k = knob(name)
    if k is not None and k.field == "rl.lr_scale.*":
        return 1.0
    value: Any = TrainConfig().to_dict()
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _config_defaults(table: pd.DataFrame, with_config: set[str]) -> pd.DataFrame:
    """Fill a config column's missing values, in runs that have a training config, with the
    field's default (issue 72 §2: ``rl.lr_scale`` ``{}`` in some runs and ``{X: 2}`` in
    others left X's factor NaN, so the fit ignored X's doubled rate)."""
    rows = table["run"].astype(str).isin(with_config).to_numpy()
    if not rows.any():
        return table
    for col in [c for c in table.columns if c not in _META_COLUMNS and "." in str(c)]:
        missing = rows & table[col].isna().to_numpy()
        if missing.any() and (default := config_default(str(col))) is not None:
            table.loc[missing, col] = default
    return table

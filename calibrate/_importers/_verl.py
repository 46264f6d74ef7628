"""verl's file logger: JSONL, one ``{"step": N, "data": {...}}`` per line, and its Hydra
config.

verl's ``trainer.logger=[file]`` writes ``$VERL_FILE_LOGGER_ROOT/<project>/<experiment>.jsonl``
(or ``$VERL_FILE_LOGGER_PATH``): one line per training step with every metric of that step
(``critic/score/mean``, ``actor/entropy``, ...), the validation metrics
(``val-core/<data source>/reward/mean@1``) only on the steps it validated at, step 0 for a
validation before training. Hydra saves the run's resolved config in
``<run dir>/.hydra/config.yaml``; it is read when found in the JSONL's folder or the folder
above it (copy the run's ``.hydra/`` next to the log otherwise), or given explicitly.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

from .._curve_data import CurveData, DataError, DataWarning
from ._curves import Point, RunInfo, curves_from_scalars, scalar_frame
from ._mapping import KeyMapping, parse_number

__all__ = ["VERL_SEED_KEYS", "is_verl_log", "read_verl", "verl_info"]

#: Config keys tried for a verl run's seed (the data loader's, then the actor's).
VERL_SEED_KEYS = ("data.seed", "actor_rollout_ref.actor.data_loader_seed", "seed")


def is_verl_log(path: Path) -> bool:
    """True for a ``.jsonl`` file whose first line looks like ``{"step": .., "data": ..}``,
    or a folder holding exactly one such file."""
    if path.is_dir():
        return len([f for f in path.glob("*.jsonl") if is_verl_log(f)]) == 1
    if not (path.is_file() and path.suffix == ".jsonl"):
        return False
    try:
        with path.open("rb") as fh:
            first = fh.readline()
            while first and not first.strip():  # blank leading lines: the first record
                first = fh.readline()
        obj = json.loads(first)
    except (OSError, ValueError):
        return False
    return isinstance(obj, dict) and "step" in obj and "data" in obj


def _hydra_config(log: Path) -> Path | None:
    for folder in (log.parent, log.parent.parent):
        f = folder / ".hydra" / "config.yaml"
        if f.is_file():
            return f
    return None


def _read_yaml(file: Path) -> dict[str, Any]:
    import yaml

    try:
        cfg = yaml.safe_load(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise DataError(f"{file}: not UTF-8") from None
    except yaml.YAMLError as err:
        where = getattr(err, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        raise DataError(f"{file}: not YAML{at}") from None
    if not isinstance(cfg, dict):
        raise DataError(f"{file}: not a YAML mapping")
    return cfg


def _lines(path: Path, strict: bool) -> list[tuple[int, dict]]:
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text (a binary file, not a verl JSONL log)") from None
    lines = text.split("\n")
    torn = bool(lines) and lines[-1] != ""
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            if torn and n == len(lines) and not strict:  # a log still being written
                warnings.warn(f"{path}:{n}: torn last line ignored", DataWarning, stacklevel=3)
                break
            raise DataError(f"{path}:{n}: not JSON ({err.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("data"), dict):
            raise DataError(f'{path}:{n}: not a verl log line {{"step": N, "data": {{...}}}}')
        step = obj.get("step")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise DataError(f"{path}:{n}: step must be an integer >= 0, got {step!r}")
        out.append((step, obj["data"]))
    return out


def read_verl(
    path: str | Path,
    mapping: KeyMapping,
    *,
    config: str | Path | None = None,
    run: str | None = None,
    strict: bool = False,
) -> CurveData:
    """Read a verl file-logger JSONL log (and its Hydra config).

    Args:
        path: The ``.jsonl`` file, or a folder holding one (and ``.hydra/``).
        mapping: Keys → agents, e.g. ``KeyMapping({"X": "critic/solver/score/mean"})`` or
            ``KeyMapping(patterns=(r"val-core/(?P<agent>\\w+)/reward/mean@1",), n_eval=500)``.
        config: The run's Hydra ``config.yaml`` (default: ``.hydra/config.yaml`` next to the
            log or one folder up, when there).
        run: Run label (default: the file's stem, verl's experiment name).
        strict: Raise on a torn last line and on NaN values instead of dropping them.

    Returns:
        The curves; the config's numbers are covariates under dotted names
        (``actor_rollout_ref.actor.optim.lr``) and ``seed`` (see :data:`VERL_SEED_KEYS`).
    """
    path = Path(path)
    if path.is_dir():
        logs = [f for f in sorted(path.glob("*.jsonl")) if is_verl_log(f)]
        if len(logs) != 1:
            raise DataError(
                f"{path}: expected one verl .jsonl log in the folder, found {len(logs)}"
            )
        path = logs[0]
    if not path.is_file():
        raise DataError(f"verl log not found: {path}")
    label = run or path.stem
    rows, lost = [], []
    lines = _lines(path, strict)
    if not lines:
        raise DataError(f"{path}: an empty verl log (no records)")
    samples = {}
    for step, data in lines:
        for key, value in data.items():
            if value is None:
                rows.append((label, step, key, math.nan))  # orjson writes NaN as null
            elif isinstance(value, int | float) and not isinstance(value, bool):
                rows.append((label, step, key, value))
            elif isinstance(value, list) and _numbers(value):  # per-sample values
                samples[(label, step, key)] = [math.nan if v is None else v for v in value]
            elif not isinstance(value, dict | list):  # "0.5", true: named if a competence
                lost.append((label, step, key, value))
    scalars = scalar_frame(rows, str(path), lost)
    scalars.attrs["samples"] = samples
    cfg_file = Path(config) if config is not None else _hydra_config(path)
    if cfg_file is not None and not cfg_file.is_file():
        raise DataError(f"verl config not found: {cfg_file}")
    cfg = _read_yaml(cfg_file) if cfg_file is not None else {}
    return curves_from_scalars(
        scalars,
        mapping,
        source=str(path),
        configs={label: cfg},
        seed_keys=VERL_SEED_KEYS,
        strict=strict,
        info={label: verl_info(cfg)},
    )


def _numbers(values: list) -> bool:
    return bool(values) and all(
        v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in values
    )


def _positive(cfg: dict[str, Any], dotted: str) -> int | None:
    v: Any = cfg
    for part in dotted.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    x = parse_number(v)
    return int(x) if x is not None and x > 0 and x == int(x) else None


#: Validation keys: evaluations at their step.
_VALIDATION = ("val-core/", "val-aux/", "val/")


def verl_info(cfg: dict[str, Any]) -> RunInfo:
    """What a verl run's Hydra config says about the logged values (issue 70 §2).

    A training metric is the mean over one step's batch: ``data.train_batch_size`` prompts
    × ``actor_rollout_ref.rollout.n`` responses; a validation metric (``val-core/``,
    ``val-aux/``, ``val/``) is an evaluation at its step over ``data.val_max_samples``
    prompts where the config sets it (else ``--n-eval``). ``trainer.total_training_steps``
    is the configured length.
    """
    batch = _positive(cfg, "data.train_batch_size")
    n = _positive(cfg, "actor_rollout_ref.rollout.n") or (1 if batch else None)
    train = (
        Point("window", 1, batch * n, f"data.train_batch_size {batch} × rollout.n {n}")
        if batch and n
        else Point("window", 1, None, "the config lacks data.train_batch_size")
    )
    val_n = _positive(cfg, "data.val_max_samples")
    val = (
        Point("eval", 1, val_n, f"data.val_max_samples {val_n}")
        if val_n
        else Point("eval", 1, None, "verl does not log the validation set's size")
    )

    def point(key: str) -> Point:
        return val if key.startswith(_VALIDATION) else train

    return RunInfo(point=point, max_steps=_positive(cfg, "trainer.total_training_steps"))

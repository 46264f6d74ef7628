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
from ._mapping import KeyMapping, curves_from_scalars, scalar_frame

__all__ = ["VERL_SEED_KEYS", "is_verl_log", "read_verl"]

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
    for step, data in lines:
        for key, value in data.items():
            if value is None:
                rows.append((label, step, key, math.nan))  # orjson writes NaN as null
            elif isinstance(value, int | float) and not isinstance(value, bool):
                rows.append((label, step, key, value))
            elif not isinstance(value, dict | list):  # "0.5", true: named if a competence
                lost.append((label, step, key, value))
    scalars = scalar_frame(rows, str(path), lost)
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
    )

"""TRL (and any transformers ``Trainer``) output folders: ``trainer_state.json`` and the
training arguments.

A TRL trainer is a transformers ``Trainer``: its ``output_dir`` holds ``checkpoint-N/``
folders, each with ``trainer_state.json`` (whose ``log_history`` is the run's log up to step
N: train entries ``{"loss": ..., "learning_rate": ..., "step": N}`` and evaluation entries
with ``eval_`` keys) and ``training_args.bin``; ``trainer.save_state()`` writes one more
``trainer_state.json`` in the folder itself. The histories are joined by step, the latest
file winning (a resumed run logs its steps again).

Training arguments, first found: ``training_args.json`` or ``args.json`` in the folder (e.g.
``TrainingArguments.to_json_string()``), the ``args`` text that the TensorBoard callback
writes under ``runs/``, then ``training_args.bin``. That file is ``torch.save`` of the
arguments dataclass: a zip holding a pickle, which is read here without torch and without
importing or running anything it names (every class becomes an inert record of its fields).
"""

from __future__ import annotations

import io
import json
import pickle
import re
import zipfile
from pathlib import Path
from typing import Any

from .._curve_data import CurveData, DataError
from ._mapping import KeyMapping, curves_from_scalars, scalar_frame

__all__ = ["is_trl_folder", "read_training_args", "read_trl"]

_CHECKPOINT = re.compile(r"checkpoint-(\d+)")
_SKIP = {"step", "epoch"}


def _states(path: Path) -> list[Path]:
    ckpts = [d for d in path.glob("checkpoint-*") if _CHECKPOINT.fullmatch(d.name)]
    ckpts = sorted(ckpts, key=lambda d: int(_CHECKPOINT.fullmatch(d.name).group(1)))  # type: ignore[union-attr]
    files = [d / "trainer_state.json" for d in ckpts if (d / "trainer_state.json").is_file()]
    if (path / "trainer_state.json").is_file():
        files.append(path / "trainer_state.json")
    return files


def is_trl_folder(path: Path) -> bool:
    """True for a folder with ``trainer_state.json`` (its own or a checkpoint's)."""
    return path.is_dir() and bool(_states(path))


def _read_state(file: Path) -> tuple[int, list[dict]]:
    try:
        state = json.loads(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise DataError(f"{file}: not UTF-8") from None
    except json.JSONDecodeError as err:
        raise DataError(f"{file}: not JSON ({err.msg} at line {err.lineno})") from None
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        raise DataError(f"{file}: not a trainer state (no log_history list)")
    for i, entry in enumerate(state["log_history"]):
        if not isinstance(entry, dict) or isinstance(entry.get("step"), bool):
            raise DataError(f"{file}: log_history[{i}] is not an object with a step")
        if not isinstance(entry.get("step"), int) or entry["step"] < 0:
            raise DataError(f"{file}: log_history[{i}] has no integer step >= 0")
    gs = state.get("global_step", 0)
    return (gs if isinstance(gs, int) else 0), state["log_history"]


class _Record:
    """An inert stand-in for any class a pickle names."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._args = args

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (dict, slots)
            state = {**(state[0] or {}), **(state[1] or {})}
        self._state = state


class _InertUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> type:
        return type(name, (_Record,), {})

    def persistent_load(self, pid: Any) -> None:  # tensor storages: none in the arguments
        return None


def _plain(obj: Any, depth: int = 0) -> Any:
    if depth > 20:
        return None
    if isinstance(obj, _Record):
        state = getattr(obj, "_state", None)
        if isinstance(state, dict):
            return {str(k): _plain(v, depth + 1) for k, v in state.items()}
        if obj.__dict__.get("_args"):  # an enum or device: its value
            return _plain(obj._args[0], depth + 1)
        return None
    if isinstance(obj, dict):
        return {str(k): _plain(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v, depth + 1) for v in obj]
    return obj if isinstance(obj, str | int | float | bool) or obj is None else None


def read_training_args(file: str | Path) -> dict[str, Any]:
    """The fields of a ``training_args.bin`` (``torch.save`` of a dataclass) without torch.

    Raises:
        DataError: Not a torch zip file or not a pickled object with fields.
    """
    file = Path(file)
    try:
        with zipfile.ZipFile(file) as z:
            names = [n for n in z.namelist() if n.endswith("data.pkl")]
            if not names:
                raise DataError(f"{file}: no data.pkl inside (not a torch.save file)")
            raw = z.read(names[0])
        obj = _InertUnpickler(io.BytesIO(raw)).load()
    except DataError:
        raise
    except zipfile.BadZipFile:
        raise DataError(
            f"{file}: not a torch.save zip file (legacy torch formats need torch; "
            "save the arguments as training_args.json instead)"
        ) from None
    except Exception as err:
        raise DataError(
            f"{file}: cannot read the pickled arguments ({type(err).__name__})"
        ) from None
    args = _plain(obj)
    if not isinstance(args, dict):
        raise DataError(f"{file}: the pickle holds no object with fields")
    return {k: v for k, v in args.items() if not k.startswith("_")}


def _args_from_tensorboard(path: Path) -> dict[str, Any] | None:
    files = (
        sorted((path / "runs").rglob("events.out.tfevents*")) if (path / "runs").is_dir() else []
    )
    if not files:
        return None
    from ._events import text_summaries

    for f in reversed(files):
        try:
            text = text_summaries(f).get("args")
        except DataError:  # no tensorboard package, or a damaged file: try the others
            continue
        if text:
            try:
                args = json.loads(text)
            except json.JSONDecodeError:
                continue
            if isinstance(args, dict):
                return args
    return None


def _training_args(path: Path, states: list[Path]) -> tuple[dict[str, Any], str | None]:
    for name in ("training_args.json", "args.json"):
        f = path / name
        if f.is_file():
            try:
                args = json.loads(f.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as err:
                raise DataError(f"{f}: not a JSON object ({type(err).__name__})") from None
            if not isinstance(args, dict):
                raise DataError(f"{f}: not a JSON object")
            return args, str(f)
    args = _args_from_tensorboard(path)
    if args is not None:
        return args, str(path / "runs")
    for folder in [path, *(s.parent for s in reversed(states))]:
        f = folder / "training_args.bin"
        if f.is_file():
            return read_training_args(f), str(f)
    return {}, None


def read_trl(
    path: str | Path,
    mapping: KeyMapping,
    *,
    run: str | None = None,
    strict: bool = False,
) -> CurveData:
    """Read a TRL / transformers ``Trainer`` output folder.

    Args:
        path: The ``output_dir`` (or one ``checkpoint-N`` folder).
        mapping: Keys → agents, e.g. ``KeyMapping({"X": "eval_rewards/accuracy/mean"}, n_eval=64)``;
            keys are ``log_history``'s own (``eval_`` prefix for evaluation entries).
        run: Run label (default: the folder name).
        strict: Raise on NaN values instead of dropping them.

    Returns:
        The curves, with the training arguments' numbers as covariates under their own names
        (``learning_rate``, ``per_device_train_batch_size``, …) and ``seed``.
    """
    path = Path(path)
    states = _states(path)
    if not states:
        raise DataError(f"{path}: no trainer_state.json (in the folder or a checkpoint-N/)")
    label = run or path.name
    read = sorted(
        ((*_read_state(f), i, f) for i, f in enumerate(states)), key=lambda t: (t[0], t[2])
    )
    rows, lost = [], []
    for _, history, _, _ in read:
        for entry in history:
            for key, value in entry.items():
                if key in _SKIP:
                    continue
                if isinstance(value, bool) or isinstance(value, str):  # named if a competence
                    lost.append((label, entry["step"], key, value))
                elif isinstance(value, int | float) or value is None:
                    rows.append(
                        (label, entry["step"], key, float("nan") if value is None else value)
                    )
    source = str(read[-1][3])
    scalars = scalar_frame(rows, source, lost)
    args, _ = _training_args(path, states)
    return curves_from_scalars(
        scalars, mapping, source=source, configs={label: args}, strict=strict
    )

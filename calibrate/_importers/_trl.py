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
from ._curves import Point, RunInfo, curves_from_scalars, scalar_frame
from ._mapping import KeyMapping

__all__ = ["is_trl_folder", "read_training_args", "read_trl", "trl_info"]

_CHECKPOINT = re.compile(r"checkpoint-(\d+)")
_SKIP = {"step", "epoch"}


def _states(path: Path) -> list[Path]:
    if path.is_file():
        return [path] if path.name == "trainer_state.json" else []
    ckpts = [d for d in path.glob("checkpoint-*") if _CHECKPOINT.fullmatch(d.name)]
    ckpts = sorted(ckpts, key=lambda d: int(_CHECKPOINT.fullmatch(d.name).group(1)))  # type: ignore[union-attr]
    files = [d / "trainer_state.json" for d in ckpts if (d / "trainer_state.json").is_file()]
    if (path / "trainer_state.json").is_file():
        files.append(path / "trainer_state.json")
    return files


def is_trl_folder(path: Path) -> bool:
    """True for a folder with ``trainer_state.json`` (its own or a checkpoint's), or that
    file itself."""
    return bool(_states(path))


def _run_label(path: Path) -> str:
    """A run's name: its output folder's (a ``checkpoint-N`` folder or a
    ``trainer_state.json`` names the run it belongs to, so two runs' ``checkpoint-500``
    do not collide)."""
    folder = path.parent if path.is_file() else path
    if _CHECKPOINT.fullmatch(folder.name) and folder.parent.name:
        folder = folder.parent
    return folder.resolve().name or str(folder)


def _int_arg(args: dict[str, Any], name: str) -> int | None:
    v = args.get(name)
    if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0 or v != int(v):
        return None
    return int(v)


#: The training arguments whose product is the completions behind one logged value.
_SIZE_ARGS = ("num_generations", "per_device_train_batch_size", "gradient_accumulation_steps")


def trl_info(args: dict[str, Any]) -> RunInfo:
    """What TRL's training arguments say about the logged values (issue 70 §2).

    A training metric (no ``eval_`` prefix) is a mean over the ``logging_steps`` optimizer
    steps ending at its step, over ``num_generations × per_device_train_batch_size ×
    gradient_accumulation_steps × logging_steps`` completions (one device; give
    ``--n-eval`` for more devices or another count); an ``eval_`` metric is an evaluation
    at its step whose size TRL does not log. ``max_steps`` is the configured length.
    """
    max_steps = _int_arg(args, "max_steps")
    log_steps = args.get("logging_steps")
    window = _int_arg(args, "logging_steps") or 1
    if isinstance(log_steps, float) and 0 < log_steps < 1 and max_steps:  # a share of the run
        window = max(1, round(log_steps * max_steps))
    sizes = [_int_arg(args, a) for a in _SIZE_ARGS]
    missing = [a for a, v in zip(_SIZE_ARGS, sizes, strict=True) if v is None]
    if missing:
        train = Point("window", window, None, f"the training arguments lack {missing}")
    else:
        n = window
        for v in sizes:
            n *= v or 1
        words = " × ".join(f"{a} {v}" for a, v in zip(_SIZE_ARGS, sizes, strict=True))
        train = Point("window", window, n, f"{words} × logging_steps {window}")
    evaluation = Point("eval", 1, None, "TRL does not log the evaluation set's size")

    def point(key: str) -> Point:
        return evaluation if key.startswith("eval_") else train

    return RunInfo(point=point, max_steps=max_steps, one_policy=True)


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
        path: The ``output_dir``, one ``checkpoint-N`` folder, or a ``trainer_state.json``.
        mapping: Keys → agents, e.g. ``KeyMapping({"X": "rewards/accuracy/mean:rate"})``;
            keys are ``log_history``'s own (``eval_`` prefix for evaluation entries).
        run: Run label (default: the output folder's name, a checkpoint's run's).
        strict: Raise on NaN values instead of dropping them.

    Returns:
        The curves, with the training arguments' numbers as covariates under their own names
        (``learning_rate``, ``per_device_train_batch_size``, …) and ``seed``; evaluation
        sizes, point kinds and the configured length from them (:func:`trl_info`).
    """
    path = Path(path)
    states = _states(path)
    if not states:
        raise DataError(f"{path}: no trainer_state.json (in the folder or a checkpoint-N/)")
    label = run or _run_label(path)
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
    folder = path.parent if path.is_file() else path
    args, _ = _training_args(folder, states)
    if not args and _CHECKPOINT.fullmatch(folder.name):
        args, _ = _training_args(folder.parent, [])  # the output folder's own arguments
    return curves_from_scalars(
        scalars,
        mapping,
        source=source,
        configs={label: args},
        strict=strict,
        info={label: trl_info(args)},
    )

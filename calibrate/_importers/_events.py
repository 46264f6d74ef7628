"""TensorBoard event folders as TRL, verl and OpenRLHF write them.

All three write with ``torch.utils.tensorboard.SummaryWriter``: TRL (the transformers
``TensorBoardCallback``) under ``output_dir/runs/<date>_<host>/`` with tags ``train/<key>``
and ``eval/<key>`` and the training arguments as the text ``args`` (JSON); verl under
``tensorboard_log/<project>/<experiment>/`` (``$TENSORBOARD_DIR``) with its metric keys as
tags (``critic/score/mean``, ``val-core/<source>/reward/mean@1``); OpenRLHF with
``train/<key>`` and ``eval/<key>``. The folder given is one run: every event file under it
(subfolders too, e.g. a resumed TRL run's second ``runs/<date>/``) is read, in the order of
the time in its name, and a (step, tag) logged twice keeps the later value. Scalars written
as tensors (``tf.summary``, ``tensorboard.summary.v2``) are read as well.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

from .._curve_data import CurveData, DataError, DataWarning
from ._curves import curves_from_scalars, scalar_frame
from ._mapping import KeyMapping

__all__ = ["event_files", "is_event_input", "read_events", "text_summaries"]

_STAMP = re.compile(r"events\.out\.tfevents\.(\d+)")


def event_files(path: Path) -> list[Path]:
    """The event files of a path (itself, or every one under a folder), oldest first."""
    if path.is_file():
        return [path]

    def order(f: Path) -> tuple[int, str]:
        m = _STAMP.match(f.name)
        return (int(m.group(1)) if m else 0, str(f))

    return sorted((f for f in path.rglob("events.out.tfevents*") if f.is_file()), key=order)


def is_event_input(path: Path) -> bool:
    """True for an event file or a folder with event files in it (not only in subfolders:
    a folder of run folders is read run by run)."""
    if path.is_file():
        return "tfevents" in path.name
    return path.is_dir() and any(f.is_file() for f in path.glob("events.out.tfevents*"))


def _accumulator(file: Path) -> Any:
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        raise DataError(
            f"{file}: reading TensorBoard event files needs the tensorboard package "
            "(pip install tensorboard)"
        ) from None

    acc = EventAccumulator(str(file), size_guidance={"scalars": 0, "tensors": 0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            acc.Reload()
        except Exception as err:  # DataLossError and the like, from a damaged file
            raise DataError(f"{file}: not a readable event file ({type(err).__name__})") from None
    return acc


def torn_tail(file: Path) -> int:
    """Bytes of a torn last record of an event file (0: every record is whole).

    An event file is a sequence of TFRecords (8-byte length, 4-byte CRC, the data, a 4-byte
    CRC); a writer killed mid-record leaves a tail that TensorBoard's reader skips without
    a word (issue 72 §2), so its scalars would be dropped silently. A file without one
    whole record is no event file, not a torn one (0).
    """
    try:
        size = file.stat().st_size
        with file.open("rb") as fh:
            pos = 0
            while pos < size:
                head = fh.read(12)
                n = int.from_bytes(head[:8], "little") if len(head) == 12 else size
                if pos + 12 + n + 4 > size:
                    return size - pos if pos > 0 else 0
                fh.seek(n + 4, 1)
                pos += 12 + n + 4
    except OSError:
        return 0
    return 0


def _tensor_tags(acc: Any, plugin: str) -> list[str]:
    out = []
    for tag in acc.Tags().get("tensors", []):
        try:
            name = acc.SummaryMetadata(tag).plugin_data.plugin_name
        except Exception:
            continue
        if name == plugin:
            out.append(tag)
    return out


def _scalars(acc: Any) -> list[tuple[int, str, float]]:
    from tensorboard.util import tensor_util

    rows = [
        (ev.step, tag, ev.value) for tag in acc.Tags().get("scalars", []) for ev in acc.Scalars(tag)
    ]
    for tag in _tensor_tags(acc, "scalars"):
        for ev in acc.Tensors(tag):
            rows.append((ev.step, tag, float(tensor_util.make_ndarray(ev.tensor_proto).item())))
    return rows


def text_summaries(file: Path) -> dict[str, str]:
    """The text summaries of one event file, tag → last text (``args/text_summary`` as
    ``args``)."""
    return _texts(_accumulator(file))


def _texts(acc: Any) -> dict[str, str]:
    from tensorboard.util import tensor_util

    out = {}
    for tag in _tensor_tags(acc, "text"):
        events = acc.Tensors(tag)
        if events:
            v = tensor_util.make_ndarray(events[-1].tensor_proto).reshape(-1)
            if v.size:
                raw = v[0]
                text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
                out[tag.removesuffix("/text_summary")] = text
    return out


def read_events(
    path: str | Path,
    mapping: KeyMapping,
    *,
    run: str | None = None,
    strict: bool = False,
) -> CurveData:
    """Read a TensorBoard event file or folder through a key mapping.

    Args:
        path: An event file, or a run's folder (event files at any depth).
        mapping: Tags → agents, e.g. ``KeyMapping({"X": "eval/accuracy"}, n_eval=200)`` or
            ``KeyMapping(patterns=(r"critic/(?P<agent>\\w+)/score/mean",), n_eval=64)``.
        run: Run label (default: the folder's name).
        strict: Raise on NaN values instead of dropping them.

    Returns:
        The curves; the numbers of a JSON ``args`` text (TRL's training arguments) become
        covariates under their own names, with ``seed``.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"TensorBoard path not found: {path}")
    files = event_files(path)
    if not files:
        raise DataError(f"{path}: no event files (events.out.tfevents.*)")
    label = run or (path.name if path.is_dir() else path.parent.name)
    rows: list[tuple[str, int, str, float]] = []
    config: dict[str, Any] = {}
    for f in files:
        if torn := torn_tail(f):
            msg = f"{f}: a torn last record ({torn} bytes: its writer was killed or still writes)"
            if strict:
                raise DataError(msg + "; run without --strict to read the whole records")
            warnings.warn(msg + "; its values are dropped", DataWarning, stacklevel=2)
        acc = _accumulator(f)
        rows.extend((label, s, tag, v) for s, tag, v in _scalars(acc))
        text = _texts(acc).get("args")
        if text:
            try:
                args = json.loads(text)
            except json.JSONDecodeError:
                args = None
            if isinstance(args, dict):
                config = args
    if not rows:
        raise DataError(f"{path}: no scalar values in {len(files)} event file(s)")
    source = str(path)
    scalars = scalar_frame(rows, source)
    return curves_from_scalars(
        scalars, mapping, source=source, configs={label: config}, strict=strict
    )

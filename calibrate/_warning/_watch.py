"""The signals half of ``calibrate watch``: read a run's training signals as they grow and
apply a fitted :class:`~calibrate._warning._rule.SignalRule`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from .._config import ConfigError
from ._rule import SignalAlert, SignalRule, first_alert

__all__ = ["load_rule", "run_signals", "signal_alert"]


def load_rule(path: str | Path) -> SignalRule:
    """A fitted rule from its JSON file (``calibrate signal-rule``'s output).

    Raises:
        ConfigError: No such file, not JSON, not a rule, or thresholds not fitted.
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"--signal-rule {p}: no such file")
    try:
        doc = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"--signal-rule {p}: not JSON ({err})") from None
    rule = SignalRule.from_dict(doc.get("rule", doc) if isinstance(doc, dict) else doc)
    if not rule.fitted:
        raise ConfigError(f"--signal-rule {p}: thresholds not fitted (calibrate signal-rule)")
    return rule


def run_signals(run: str | Path, data: Any = None) -> pd.DataFrame | None:
    """The run's signals (wide: ``step``, ``agent``, one column per signal): an llm_runs
    folder's ``signals.jsonl``, else an imported log's (``data.signals``); None without."""
    folder = Path(run)
    if (folder / "manifest.json").is_file():
        import warnings

        from llm_runs.runlog import read_run

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a torn tail: a run being written
            table = read_run(folder).signals()
        return table if len(table) else None
    sig = getattr(data, "signals", None)
    return sig if sig is not None and len(sig) else None


def signal_alert(table: pd.DataFrame | None, rule: SignalRule, upto: int) -> SignalAlert | None:
    """The rule's first alert on the signals logged up to step ``upto`` (None: none)."""
    return None if table is None else first_alert(table, rule, upto=upto)

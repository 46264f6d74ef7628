"""Readers of the files of a saved fit folder, each damage one error line (issue 72 §3: a
corrupt ``data.parquet`` was pyarrow's traceback)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

import simulate

from ._config import ConfigError

__all__ = ["read_configs", "read_latent", "read_table"]


def _why(err: Exception) -> str:
    return " ".join(str(err).split())[:200] or type(err).__name__


def read_table(d: Path) -> Any:
    """``d/data.parquet`` as a DataFrame.

    Raises:
        ConfigError: The file cannot be read as Parquet.
    """
    import pandas as pd

    try:
        return pd.read_parquet(d / "data.parquet")
    except Exception as err:  # pyarrow's and pandas' errors alike
        raise ConfigError(f"{str(d)!r}: unreadable data.parquet ({_why(err)})") from None


def read_configs(d: Path) -> dict[str, Any] | None:
    """``d/run_configs.json`` (None when the fit has none).

    Raises:
        ConfigError: The file is not JSON text.
    """
    if not (d / "run_configs.json").is_file():
        return None
    text = simulate.read_text(d / "run_configs.json", what="run configs")
    try:
        return json.loads(text)
    except ValueError as err:
        raise ConfigError(f"{str(d)!r}: unreadable run_configs.json ({_why(err)})") from None


def read_latent(d: Path) -> dict[str, np.ndarray]:
    """The draws of ``d/latent.npz`` by site.

    Raises:
        ConfigError: A damaged or truncated archive.
    """
    try:
        with np.load(d / "latent.npz") as lat:
            return {k: lat[k] for k in lat.files}
    except Exception as err:
        raise ConfigError(f"{str(d)!r}: unreadable latent.npz ({_why(err)})") from None

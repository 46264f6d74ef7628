"""Command-line values of ``python -m calibrate``, read by the toolkit's one value parser
(:func:`simulate.parse_value`: YAML 1.2 scalars, as llm_runs' ``--set`` reads them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simulate import (
    PLOT_SUFFIXES,
    ConfigError,
    OutputError,
    claim_file,
    claim_files,
    parse_number,
)

__all__ = ["check_train_fields", "parse_grid", "parse_setting", "predict_outputs", "recommend_out"]

FIT = "calibrate fit"


def parse_setting(items: list[str]) -> dict[str, float]:
    """``--set FIELD=VALUE`` items → ``{field: number}`` (``2e-3``, ``.5``, ``0x10``)."""
    if not items:
        raise ConfigError("predict needs at least one --set FIELD=VALUE")
    setting: dict[str, float] = {}
    for item in items:
        field, sep, value = item.partition("=")
        if not sep or not field.strip() or not value.strip():
            raise ConfigError(f"--set must look like FIELD=VALUE, got {item!r}")
        name = field.strip()
        if name in setting:  # neither value silently wins
            raise ConfigError(f"--set {name} is given twice: give it once")
        setting[name] = parse_number(value, what=f"--set {name}")
    return setting


def check_train_fields(setting: dict[str, float]) -> None:
    """Validate the training-config fields of a setting with the training config's own rules
    (``rl.staleness=2.5`` fails as ``train`` fails it); other covariates pass unchecked."""
    from llm_runs.config import TrainConfig, field_type, set_dotted
    from llm_runs.knobs import knob

    data: dict[str, Any] = {}
    for name, value in setting.items():
        if field_type(name) is not None or knob(name) is not None:  # rl.lr_scale.X too
            set_dotted(data, name, value)
    if data:
        try:
            TrainConfig.from_dict(data)
        except ConfigError as err:
            raise ConfigError(f"--set: {err} (as llm_runs train checks it)") from None


def parse_grid(text: str | None) -> list[float] | None:
    """``--grid`` → its numbers (None: not given, the default grid); an empty or blank
    value, or an empty item (``1e-3,,2e-3``), is an error, never the default grid."""
    if text is None:
        return None
    items = text.split(",")
    if not text.strip() or any(not v.strip() for v in items):
        raise ConfigError(f"--grid must be a comma list of numbers, got {text!r}")
    return [parse_number(v, what="--grid") for v in items]


RECOMMEND = "calibrate recommend"
PREDICT = "calibrate predict"
RECOMMEND_FILES = ("recommendation.json", "best.yaml", "regime_map.png")


def recommend_out(path: str | Path) -> Path:
    """``recommend --out`` (default: the fit folder), checked before the work by the one
    overwrite rule: a new or empty folder, a fit's folder or recommend's own; its
    ``recommendation.json``, ``best.yaml`` and ``regime_map.png`` are replaced only when
    recommend wrote them (there is no flag: a user's ``best.yaml`` is never replaced)."""
    return claim_files(path, RECOMMEND_FILES, command=RECOMMEND, into=(FIT,), overwrite=None)


def predict_outputs(args: Any) -> Path | None:
    """``predict --out`` and ``--plot`` checked before the work (the one overwrite rule:
    an existing ``prediction.json`` or figure, predict's own included, is replaced only
    with ``--overwrite``, and never a folder of other files); returns the ``--out`` folder."""
    if args.plot:
        claim_file(args.plot, overwrite=args.overwrite, what="--plot", suffixes=PLOT_SUFFIXES)
    if not args.out:
        return None
    out = claim_files(
        args.out,
        ["prediction.json"],
        command=PREDICT,
        into=(FIT, RECOMMEND),
        overwrite=args.overwrite,
    )
    if (out / "prediction.json").exists() and not args.overwrite:  # as --plot: one rule
        raise OutputError(
            f"--out {str(out)!r} already holds a prediction.json (an earlier predict); it is "
            "not replaced: choose another folder or pass --overwrite"
        )
    return out

"""Command-line values of ``python -m calibrate``, read by the toolkit's one value parser
(:func:`simulate.parse_value`: YAML 1.2 scalars, as llm_runs' ``--set`` reads them)."""

from __future__ import annotations

from simulate import ConfigError, parse_value

__all__ = ["parse_grid", "parse_setting"]


def _number(text: str, what: str) -> float:
    value = parse_value(text, what=what)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{what}: {text.strip()!r} is not a number")
    return float(value)


def parse_setting(items: list[str]) -> dict[str, float]:
    """``--set FIELD=VALUE`` items → ``{field: number}`` (``2e-3``, ``.5``, ``0x10``)."""
    if not items:
        raise ConfigError("predict needs at least one --set FIELD=VALUE")
    setting: dict[str, float] = {}
    for item in items:
        field, sep, value = item.partition("=")
        if not sep or not field.strip() or not value.strip():
            raise ConfigError(f"--set must look like FIELD=VALUE, got {item!r}")
        setting[field.strip()] = _number(value, f"--set {field.strip()}")
    return setting


def parse_grid(text: str | None) -> list[float] | None:
    """``--grid`` → its numbers (None: not given, the default grid); an empty or blank
    value, or an empty item (``1e-3,,2e-3``), is an error, never the default grid."""
    if text is None:
        return None
    items = text.split(",")
    if not text.strip() or any(not v.strip() for v in items):
        raise ConfigError(f"--grid must be a comma list of numbers, got {text!r}")
    return [_number(v, "--grid") for v in items]

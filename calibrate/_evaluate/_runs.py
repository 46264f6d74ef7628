"""Run records read from run folders (the shape of :mod:`calibrate._evaluate._forecast`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from simulate.common import ConfigError

from ._forecast import group_of

__all__ = ["run_record"]


def _dotted(config: Mapping[str, Any], name: str) -> Any:
    node: Any = config
    for part in name.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _schema_knobs() -> list[str]:
    from llm_runs.knobs import KNOBS

    return [k.field for k in KNOBS if "*" not in k.field]


def run_record(folder: str | Path, knobs: Sequence[str] | None = None) -> dict[str, Any]:
    """One finished run folder as a run record: its setting (the ``knobs`` from its
    manifest's training config, the config's defaults where it leaves one out; None: every
    knob of :data:`llm_runs.knobs.KNOBS` the config has a number for), regime group
    (:func:`simulate.classify_observed` at the run's probe count; a diverged run is a
    collapse), final competences, curves, ``n_eval`` (the last evaluation's probes) and
    ``status`` (the manifest's: ``finished``, ``diverged``, or ``running`` for a run being
    written or stopped early).

    Raises:
        ConfigError: A knob that is no field of the run's config, or a run whose curves cannot
            be classified (fewer than 4 evaluations).
    """
    import llm_runs
    import simulate

    try:
        log = llm_runs.read_run(folder)
        wide = log.competence()
    except llm_runs.RunLogError as err:
        raise ConfigError(f"{folder}: {err}") from None
    agents = list(wide.columns)
    raw = log.manifest.get("config") or {}
    try:
        full = llm_runs.TrainConfig.from_dict(raw).to_dict()
    except llm_runs.ConfigError:
        full = {}
    setting = {}
    for k in knobs if knobs is not None else _schema_knobs():
        v = _dotted(raw, k)
        v = _dotted(full, k) if v is None else v
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            if knobs is None:
                continue
            raise ConfigError(f"{folder}: its config has no numeric {k}")
        setting[k] = float(v)
    n_eval = int(log.frame("agent")["n_eval"].iloc[-1])
    if log.status == "diverged":
        group = "collapse"
    else:
        if len(wide) < 4:
            raise ConfigError(f"{folder}: {len(wide)} evaluations, a regime needs at least 4")
        curves = wide.ffill().to_numpy(dtype=float)
        regime = simulate.classify_observed(list(wide.index), curves, n_eval, names=tuple(agents))
        group = group_of(regime["regime"])
    return {
        "name": Path(folder).name, "setting": setting, "group": group,
        "final": {a: float(wide[a].dropna().iloc[-1]) for a in agents},
        "steps": [int(s) for s in wide.index],
        "curves": {a: [float(v) for v in wide[a]] for a in agents}, "n_eval": n_eval,
        "status": log.status,
    }  # fmt: skip

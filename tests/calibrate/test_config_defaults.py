"""A field a run's config leaves out is its default, not missing (issue 72 §2): runs whose
``rl.lr_scale`` is ``{}`` joined with runs at ``{X: 2}`` fit X's factor as 1 and 2."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

import calibrate as cal
from calibrate._curve_data import config_default


def _part(run: str, extra: dict[str, float]) -> cal.CurveData:
    rows = [
        {"run": run, "step": s, "agent": a, "competence": 0.5, "n_eval": 100, "rl.lr": 1e-3} | extra
        for s in (0, 10)
        for a in "XY"
    ]
    data = cal.CurveData.from_table(pd.DataFrame(rows))
    return dataclasses.replace(data, configs={run: {"rl": {"lr": 1e-3, "lr_scale": {}}}})


def test_a_role_without_a_factor_trains_at_factor_1():
    joined = cal.CurveData.concat([_part("a", {}), _part("b", {"rl.lr_scale.X": 2.0})])
    assert joined.hyper.loc["a", "rl.lr_scale.X"] == 1.0
    assert joined.hyper.loc["b", "rl.lr_scale.X"] == 2.0


def test_a_table_without_configs_keeps_its_missing_values():
    a, b = _part("a", {}), _part("b", {"rl.lr_scale.X": 2.0})
    a = dataclasses.replace(a, configs={})
    joined = cal.CurveData.concat([a, b])
    assert pd.isna(joined.hyper.loc["a", "rl.lr_scale.X"])


@pytest.mark.parametrize(
    ("name", "value"),
    [("rl.lr_scale.Z", 1.0), ("rl.staleness", 0.0), ("rl.lr", None), ("task.name", None),
     ("no.such", None)],
)  # fmt: skip
def test_config_default(name, value):
    from llm_runs.config import TrainConfig

    if name == "rl.lr":
        value = float(TrainConfig().rl.lr)
    assert config_default(name) == value

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


def test_a_hierarchy_link_without_a_transform_takes_the_knob_schemas_scale():
    """Issue 72 §5: ``rl.staleness`` without ``transform`` refused runs at lag 0 ("must be
    a positive number in every run"); the knob schema says log1p."""
    from calibrate._hierarchy import _hierarchy

    h = _hierarchy({"links": [{"param": "delta", "covariate": "rl.staleness"},
                              {"param": "rho", "covariate": "rl.lr"},
                              {"param": "rho", "covariate": "coupling"}]})  # fmt: skip
    assert [lk.transform for lk in h.links] == ["log1p", "log", "log"]
    h = _hierarchy({"links": [{"param": "delta", "covariate": "rl.staleness",
                               "transform": "linear"}]})  # fmt: skip
    assert h.links[0].transform == "linear"  # as written


def test_a_link_named_as_links_json_names_it_targets_its_node():
    from calibrate._hierarchy import _hierarchy
    from simulate import ConfigError

    (lk,) = _hierarchy({"links": [{"param": "rho[X]", "covariate": "rl.lr"}]}).links
    assert (lk.param, lk.targets) == ("rho", ("X",))
    (lk,) = _hierarchy({"links": [{"param": "K[X->Y]", "covariate": "c"}]}).links
    assert (lk.param, lk.targets) == ("K", ("X->Y",))
    with pytest.raises(ConfigError, match=r"param 'rho\[X\]' names its target"):
        _hierarchy({"links": [{"param": "rho[X]", "covariate": "rl.lr", "targets": ["Y"]}]})

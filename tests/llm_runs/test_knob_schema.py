"""The knob schema (:mod:`llm_runs.knobs`): one declaration per knob, its type and domain
read from the training config, its scale from the one shared vocabulary."""

from __future__ import annotations

import math

import pytest

from llm_runs.config import ConfigError, TrainConfig, set_dotted
from llm_runs.knobs import KNOBS, Knob, hierarchy_links, knob
from simulate.common import SCALES, in_scale_domain

# per knob: values to probe (numbers the config accepts or refuses, and non-numbers)
PROBES = [0, 1, 2, 1e1, 2.5, -1, 1e-3, 0.5, float("nan"), float("inf"), True, "x", None]


def _config_accepts(name: str, value) -> bool:
    data: dict = {}
    set_dotted(data, name, value)
    try:
        TrainConfig.from_dict(data)
    except (ConfigError, TypeError):
        return False
    return True


def _field(k: Knob) -> str:
    return k.field.replace("*", "X")


@pytest.mark.parametrize("k", KNOBS, ids=[k.field for k in KNOBS])
@pytest.mark.parametrize("value", PROBES, ids=repr)
def test_check_agrees_with_the_training_config(k, value):
    name = _field(k)
    if _config_accepts(name, value):
        got = k.check(value, name)
        assert got == value and isinstance(got, k.type)
        assert bool(in_scale_domain(k.scale, got))  # the scale's domain holds the config's
    else:
        with pytest.raises(ConfigError, match=r"rl\."):
            k.check(value, name)


def test_the_declarations():
    assert [k.field for k in KNOBS] == [
        "rl.lr", "rl.staleness", "rl.kl_coef", "rl.weight_decay", "rl.batch", "rl.group",
        "rl.lr_scale.*",
    ]  # fmt: skip
    assert all(k.scale in SCALES for k in KNOBS)
    types = {k.field: k.type for k in KNOBS}
    assert types["rl.staleness"] is int and types["rl.batch"] is int and types["rl.lr"] is float
    assert knob("rl.lr_scale.Y").targets("rl.lr_scale.Y") == ("Y",)
    assert knob("rl.lr").targets("rl.lr") == ()
    assert knob("rl.temperature") is None and knob("rl.lr_scale") is None
    assert knob("rl.lr_scale.X.y") is None
    assert knob("rl.staleness").check(1e1) == 10 and knob("rl.lr").check(2) == 2.0
    assert math.isclose(knob("rl.lr_scale.X").check(1, "rl.lr_scale.X"), 1.0)


def test_a_declaration_is_checked():
    with pytest.raises(ConfigError, match="scale"):
        Knob("rl.lr", "lin", ("rho",), "", "")
    with pytest.raises(ConfigError, match="not a field"):
        Knob("rl.nope", "log", ("rho",), "", "")
    with pytest.raises(ConfigError, match="not the knob"):
        knob("rl.lr").check(1e-3, "rl.batch")


def test_hierarchy_links_give_a_scaled_role_its_own_learning_rate():
    """With the nodes, the hierarchy file links X's rates to rl.lr*rl.lr_scale.X and rl.lr's
    to Y and Z: the same links calibrate's default_links proposes (one rule, one place)."""
    import calibrate

    doc = hierarchy_links(["rl.lr", "rl.lr_scale.X"], nodes="XYZ")
    assert doc["links"] == [
        {"param": "rho", "covariate": "rl.lr", "targets": ["Y", "Z"]},
        {"param": "delta", "covariate": "rl.lr", "targets": ["Y", "Z"]},
        {"param": "rho", "covariate": "rl.lr*rl.lr_scale.X", "targets": ["X"], "transform": "log"},
        {"param": "delta", "covariate": "rl.lr*rl.lr_scale.X", "targets": ["X"],
         "transform": "log"},
    ]  # fmt: skip
    fields = {"rl.lr": [1e-3, 2e-3], "rl.lr_scale.X": [0.5, 0.25]}
    proposed = calibrate.default_links(fields, nodes="XYZ")
    assert [(lk.param, lk.covariate, list(lk.targets)) for lk in proposed] == [
        (d["param"], d["covariate"], d["targets"]) for d in doc["links"]
    ]
    every = hierarchy_links(["rl.lr", "rl.lr_scale.X"], nodes="X")["links"]  # X is every node
    assert [d["covariate"] for d in every] == ["rl.lr*rl.lr_scale.X"] * 2
    plain = hierarchy_links(["rl.lr", "rl.lr_scale.X"])["links"]  # no nodes: separate links
    assert [(d["covariate"], d.get("targets")) for d in plain] == [
        ("rl.lr", None), ("rl.lr", None), ("rl.lr_scale.X", ["X"]), ("rl.lr_scale.X", ["X"])
    ]  # fmt: skip

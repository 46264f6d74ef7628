"""calibrate reads every knob as the training config does: a value ``llm_runs train``
refuses is refused by a search space and by ``predict --set``, one it accepts is accepted
(table-driven over :data:`llm_runs.knobs.KNOBS`); search-space scales come from the schema."""

from __future__ import annotations

import numpy as np
import pytest

import calibrate as cal
from calibrate._cli_args import check_train_fields
from llm_runs.config import ConfigError, TrainConfig, set_dotted
from llm_runs.knobs import KNOBS

PROBES = [0, 1, 3, 1e1, 2.5, -1, 1e-3, 0.5, float("inf")]


def _accepts(name: str, value) -> bool:
    data: dict = {}
    set_dotted(data, name, value)
    try:
        TrainConfig.from_dict(data)
    except ConfigError:
        return False
    return True


CASES = [(k.field.replace("*", "X"), v) for k in KNOBS for v in PROBES]


@pytest.mark.parametrize(("name", "value"), CASES, ids=[f"{n}={v!r}" for n, v in CASES])
def test_space_and_predict_agree_with_the_training_config(name, value):
    entry = {"fields": {name: {"choices": [value]}}, "budget_steps": 10}
    if _accepts(name, value):
        space = cal.SearchSpace.from_dict(entry)
        assert space.fields[0].choices == (value,)
        check_train_fields({name: value})
    else:
        with pytest.raises(ConfigError, match=rf"fields\.{name}"):
            cal.SearchSpace.from_dict(entry)
        with pytest.raises(ConfigError, match="as llm_runs train checks it"):
            check_train_fields({name: value})


def test_range_bounds_are_checked_by_the_config():
    with pytest.raises(ConfigError, match=r"fields\.rl\.batch\.low: rl\.batch"):
        cal.SearchSpace.from_dict(
            {"fields": {"rl.batch": {"low": 0, "high": 8, "scale": "linear"}}, "budget_steps": 5}
        )
    with pytest.raises(ConfigError, match=r"fields\.rl\.weight_decay\.low must be >= 0"):
        cal.SearchSpace.from_dict(
            {"fields": {"rl.weight_decay": {"low": -1, "high": 1}}, "budget_steps": 5}
        )


def test_space_scales_come_from_the_schema_and_lin_is_linear():
    sp = cal.SearchSpace.from_dict(
        {
            "fields": {
                "rl.lr": {"low": 1e-4, "high": 1e-2},
                "rl.kl_coef": {"low": 0.0, "high": 0.5},
                "rl.staleness": {"low": 0, "high": 8},
                "rl.temperature": {"low": 0.5, "high": 2.0},
                "rl.clip": {"low": 0.1, "high": 0.3, "scale": "lin"},
            },
            "budget_steps": 5,
            "n_candidates": 64,
        }
    )
    got = {f.name: (f.scale, f.integer) for f in sp.fields}
    assert got == {
        "rl.lr": ("log", False),
        "rl.kl_coef": ("log1p", False),
        "rl.staleness": ("log1p", True),
        "rl.temperature": ("log", False),  # no knob: log, as before
        "rl.clip": ("linear", False),
    }
    assert sp.to_dict()["fields"]["rl.clip"]["scale"] == "linear"  # written canonically
    kl = sp.fields[1].values(np.array([0.0, 0.5, 1.0 - 1e-12]))
    assert kl[0] == 0.0 and kl[1] == pytest.approx(np.expm1(0.5 * np.log1p(0.5)))
    stale = [c["rl.staleness"] for c in sp.candidates()]
    assert all(isinstance(v, int) and 0 <= v <= 8 for v in stale)

"""``llm_runs train``'s knob options come from the knob schema (one declaration per knob)."""

from __future__ import annotations

import argparse

import pytest

from llm_runs.__main__ import _FLAGS, _train_config
from llm_runs.config import ConfigError
from llm_runs.knobs import KNOBS, knob

VALUES = {"rl.lr": 2e-3, "rl.staleness": 3, "rl.kl_coef": 0.05, "rl.weight_decay": 0.01,
          "rl.batch": 16, "rl.group": 2}  # fmt: skip


def _args(**given) -> argparse.Namespace:
    return argparse.Namespace(config=None, set=[], feedback=None, feedback_K=None,
                              **(dict.fromkeys(_FLAGS) | given))  # fmt: skip


def test_every_knob_with_a_field_is_an_option_that_sets_it() -> None:
    flagged = [k for k in KNOBS if k.flag is not None]
    assert {k.field for k in flagged} == set(VALUES)  # a new knob gets a test value here
    for k in flagged:
        assert _FLAGS[k.flag] == k.field
        cfg = _train_config(_args(**{k.flag: VALUES[k.field]})).to_dict()
        section, name = k.field.split(".")
        assert cfg[section][name] == VALUES[k.field]
    assert knob("rl.lr_scale.X") is not None and knob("rl.lr_scale.X").flag is None


def test_a_knob_option_and_a_set_of_the_same_field_are_refused() -> None:
    args = argparse.Namespace(**(vars(_args(staleness=3)) | {"set": ["rl.staleness=4"]}))
    with pytest.raises(ConfigError, match=r"--staleness 3 and --set rl\.staleness=4"):
        _train_config(args)

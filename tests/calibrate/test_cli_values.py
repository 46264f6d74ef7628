"""calibrate's ``--set``/``--grid`` and space files read values as llm_runs does (issue 36 §3)."""

from __future__ import annotations

import pytest

from calibrate._cli_args import parse_grid, parse_setting
from calibrate._space import SearchSpace
from llm_runs.config import set_from_text
from simulate import ConfigError


@pytest.mark.parametrize(
    ("text", "value"),
    [("2e-3", 0.002), ("2E-3", 0.002), (".5", 0.5), ("1e1", 10.0), ("0x10", 16.0)],
)
def test_set_numbers_as_written_and_as_llm_runs_reads_them(text, value):
    assert parse_setting([f"rl.lr={text}"]) == {"rl.lr": value}
    data: dict = {}
    set_from_text(data, "rl.lr", text)
    assert float(data["rl"]["lr"]) == value


@pytest.mark.parametrize("text", ["1_0e-3", "1_0", "yes", "off", "true", "[1"])
def test_set_non_numbers_are_one_line_errors(text):
    with pytest.raises(ConfigError) as err:
        parse_setting([f"rl.lr={text}"])
    assert str(err.value).startswith("--set rl.lr:") and "\n" not in str(err.value)


def test_grid_reads_numbers_and_refuses_empty():
    assert parse_grid("0.003,1e-2,.5") == [0.003, 0.01, 0.5]
    assert parse_grid(None) is None
    for bad in ("", " ", "1e-3,,2e-3", "1e-3,x"):
        with pytest.raises(ConfigError, match="--grid"):
            parse_grid(bad)


def test_space_file_low_1e_3(tmp_path):
    p = tmp_path / "space.yaml"
    p.write_text("fields:\n  rl.lr: {low: 1e-3, high: 1e-2, scale: log}\nbudget_steps: 100\n")
    space = SearchSpace.load(p)
    (field,) = space.fields
    assert field.low == 0.001 and field.high == 0.01

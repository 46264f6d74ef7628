"""One value parser (YAML 1.2 core-schema scalars) for command lines and every YAML file."""

from __future__ import annotations

import math

import pytest

import simulate
from simulate import ConfigError, load_yaml, parse_scalar, parse_value

# written -> read as: the strings first, then the rest of the core schema
CASES = [
    ("1e-3", 0.001),
    ("2e-3", 0.002),
    ("2E-3", 0.002),
    (".5", 0.5),
    ("1e1", 10.0),
    ("1.5e-2", 0.015),
    ("-1.5", -1.5),
    ("1e300", 1e300),
    ("10", 10),
    ("0x10", 16),
    ("0o17", 15),
    ("yes", "yes"),
    ("no", "no"),
    ("on", "on"),
    ("off", "off"),
    ("true", True),
    ("False", False),
    ("TRUE", True),
    ("2024-01-01", "2024-01-01"),
    ("1_0", "1_0"),
    ("1_0e-3", "1_0e-3"),
    ("0b1", "0b1"),
    ("null", None),
    ("~", None),
    ("math", "math"),
]


@pytest.mark.parametrize(("text", "value"), CASES)
def test_a_scalar_reads_as_written_on_the_command_line_and_in_a_file(text, value):
    for got in (parse_scalar(text), parse_value(text), load_yaml(f"x: {text}")["x"]):
        assert got == value and type(got) is type(value), (text, got)


def test_special_floats():
    assert parse_scalar(".inf") == math.inf and parse_scalar("-.inf") == -math.inf
    assert math.isnan(parse_scalar(".nan"))


def test_flow_syntax_and_quotes_keep_the_scalar_rules():
    assert parse_value("[1e-3, 1.5e-2]") == [0.001, 0.015]
    assert parse_value("{lr: 2e-3, gate: off}") == {"lr": 0.002, "gate": "off"}
    assert parse_value('"1e-3"') == "1e-3"


@pytest.mark.parametrize("text", ["[1", "{a: 1", "'open"])
def test_malformed_syntax_is_one_config_error_line(text):
    with pytest.raises(ConfigError) as err:
        parse_value(text, what="--set rl.lr")
    msg = str(err.value)
    assert msg.startswith("--set rl.lr: cannot parse") and "\n" not in msg


@pytest.mark.parametrize("suffix", [".yaml", ".yml"])
def test_yaml_files_read_with_the_same_rules(tmp_path, suffix):
    p = tmp_path / f"c{suffix}"
    p.write_text(
        "rl: {lr: 1e-3}\nlow: 1e-3\npilot_lrs: [1e-3, 1.5e-2]\nname: yes\nday: 2024-01-01\n"
    )
    data = simulate.read_structured(p, what="config file")
    assert data == {
        "rl": {"lr": 0.001},
        "low": 0.001,
        "pilot_lrs": [0.001, 0.015],
        "name": "yes",
        "day": "2024-01-01",
    }

"""``--set`` and config files of llm_runs read numbers and words as written (issue 36 §3)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from llm_runs.config import ConfigError, TrainConfig, load_config, set_from_text


def _cfg(*items: str) -> TrainConfig:
    data: dict = {}
    for item in items:
        k, v = item.split("=", 1)
        set_from_text(data, k, v)
    return TrainConfig.from_dict(data)


@pytest.mark.parametrize(
    ("item", "field", "value"),
    [
        ("rl.lr=2e-3", ("rl", "lr"), 0.002),
        ("rl.lr=2E-3", ("rl", "lr"), 0.002),
        ("rl.lr=.5", ("rl", "lr"), 0.5),
        ("rl.staleness=1e1", ("rl", "staleness"), 10),  # an integral float: the int 10
        ("rl.batch=0x10", ("rl", "batch"), 16),
        ("name=yes", ("name",), "yes"),
        ("name=2024-01-01", ("name",), "2024-01-01"),
        ("name=123", ("name",), "123"),
        ("task.name=math", ("task", "name"), "math"),
        ("task.name=no", ("task", "name"), "no"),  # a name (tasks register), not False
    ],
)
def test_set_reads_values_as_written(item, field, value):
    obj = _cfg(item)
    for part in field:
        obj = getattr(obj, part)
    assert obj == value and type(obj) is type(value)


@pytest.mark.parametrize(
    ("item", "words"),
    [
        ("rl.staleness=2.5", ["rl.staleness", "int"]),
        ("network.gate=off", ["network", "unknown gate 'off'"]),
        ("rl.batch=1_0", ["rl.batch"]),
        ("rl.lr=[1", ["--set rl.lr", "cannot parse"]),
    ],
)
def test_set_rejects_with_the_configs_own_rule(item, words):
    with pytest.raises(ConfigError) as err:
        _cfg(item)
    assert all(w in str(err.value) for w in words), str(err.value)
    assert "True" not in str(err.value) and "False" not in str(err.value)


def test_a_yaml_config_file_reads_1e_3(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("rl: {lr: 1e-3, staleness: 1e1}\nname: yes\n")
    cfg = load_config(p)
    assert cfg.rl.lr == 0.001 and cfg.rl.staleness == 10 and cfg.name == "yes"


def test_demo_config_pilot_lrs_read_as_floats(tmp_path):
    from calibrate._demo._config import DemoConfig
    from llm_runs.config import read_config_file

    p = tmp_path / "demo.yaml"
    p.write_text("pilot_lrs: [1e-3, 1.5e-2]\n")
    assert tuple(DemoConfig.from_dict(read_config_file(p)).pilot_lrs) == (0.001, 0.015)


def test_cli_set_malformed_value_is_exit_2_one_line(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "llm_runs", "train", "--out", str(tmp_path / "r"),
         "--set", "rl.lr=[1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert res.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert "rl.lr" in lines[0] and "Traceback" not in res.stderr
    assert not (tmp_path / "r").exists()

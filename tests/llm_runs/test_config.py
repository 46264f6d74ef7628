"""Config dataclasses: validation and JSON/YAML round-trips."""

from __future__ import annotations

import pytest

from llm_runs.config import (
    ConfigError,
    EdgeConfig,
    NetworkConfig,
    RLConfig,
    SweepConfig,
    TrainConfig,
    load_config,
    load_sweep,
    save_config,
)


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".yml"])
def test_roundtrip(tmp_path, suffix):
    cfg = TrainConfig(
        network=NetworkConfig(motif="I1", gate="OR", edges={"X->Y": EdgeConfig("budget", 0.5)}),
        rl=RLConfig(algo="grpo", group=4, lr_scale={"X": 0.1, "Z": 5.0}),
        steps=7,
        seed=3,
    )
    cfg.task.spurious.starts = [5]
    cfg.task.spurious.roles = ["X"]
    cfg.task.shift.step = 4
    path = save_config(cfg, tmp_path / f"c{suffix}")
    back = load_config(path)
    assert back == cfg
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg
    assert back.network.network_spec().name == "I1-OR"


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"rl": {"algo": "sac"}}, r"rl\.algo"),
        ({"rl": {"algo": "grpo", "group": 1}}, r"rl\.group"),
        ({"steps": 0}, "steps"),
        ({"network": {"motif": "Z9"}}, "unknown motif"),
        ({"network": {"edges": {"X->Y": {"mechanism": "magic"}}}}, "mechanism"),
        ({"bogus": 1}, "unknown field"),
        ({"task": {"spurious": {"mode": "x"}}}, r"task\.spurious\.mode"),
        ({"task": {"spurious": {"roles": ["X", "X"]}}}, r"task\.spurious\.roles"),
        ({"task": {"spurious": {"roles": "X"}}}, r"task\.spurious\.roles"),
        ({"device": "tpu"}, "device"),
        ({"rl": {"lr_scale": {"X": 0}}}, r"rl\.lr_scale"),
        ({"rl": {"lr_scale": {"X": "fast"}}}, r"rl\.lr_scale"),
    ],
)
def test_validation_errors(data, match):
    with pytest.raises(ConfigError, match=match):
        TrainConfig.from_dict(data)


def test_sweep_expands(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "base: {steps: 3}\ngrid: {network.motif: [C1, I1]}\nseeds: [0, 1]\nworkers: 2\n"
    )
    sw = load_sweep(path)
    cfgs = sw.configs()
    assert len(cfgs) == 4
    assert {c.name for c in cfgs} == {"motif=C1-s0", "motif=C1-s1", "motif=I1-s0", "motif=I1-s1"}
    with pytest.raises(ConfigError, match="backend"):
        SweepConfig(backend="slurm")

"""The main job's driver (``python -m calibrate demo``): config, progress parsing, refusals.

The whole loop at small sizes runs in notebooks/recommend.ipynb (tests/test_notebooks.py),
which also checks that a second call reuses every stage.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from calibrate._demo._config import QUICK, DemoConfig
from calibrate._demo._core import STAGES, progress_of, run_demo
from simulate import ConfigError, OutputError


def test_config_round_trips_json() -> None:
    for cfg in (DemoConfig(), QUICK, DemoConfig(motifs=("C1",), risk=0.3, workers=1)):
        again = DemoConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
        assert again == cfg


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"motifs": ["C9"]}, "motifs"),
        ({"motifs": []}, "motifs"),
        ({"gate": "XOR"}, "gate"),
        ({"lr_range": [1e-2, 1e-3]}, "lr_range"),
        ({"pilot_lrs": [0.0, 1e-3]}, "pilot_lrs"),
        ({"pilot_staleness": [2, 2]}, "pilot_staleness"),
        ({"staleness_choices": [-1]}, "staleness_choices"),
        ({"pilot_steps": 30}, "pilot_steps"),  # < 4 x eval_every (10)
        ({"budget_steps": 10.5}, "budget_steps"),
        ({"risk": 0.0}, "risk"),
        ({"workers": 0}, "workers"),
        ({"seed": -1}, "seed"),
        ({"objective": ""}, "objective"),
        ({"objective": "W"}, "an agent of the motifs"),
        ({"steps": 3}, "unknown field"),
        ({"design": "grid"}, "design"),
        ({"pilot_lr_box": [4e-2, 1e-3]}, "pilot_lr_box"),
        ({"pilot_staleness_box": [3, 3]}, "pilot_staleness_box"),
        ({"pilot_seeds": [0, 0]}, "pilot_seeds"),
        ({"pilot_budget": 100}, "does not cover round 0"),
        ({"initial_pilots": 0}, "initial_pilots"),
    ],
)
def test_config_rejects_bad_values(change: dict, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        DemoConfig.from_dict(DemoConfig().to_dict() | change)


def test_the_default_pilots_are_adaptive_and_span_a_box_wider_than_the_space() -> None:
    cfg = DemoConfig()
    plan = cfg.pilot_plan()
    assert cfg.design == "adaptive" and len(plan.seeds) >= 2  # replicates in every round
    assert plan.rounds >= 2 and plan.spent <= cfg.pilot_budget
    box = {f.name: f for f in plan.space.fields}
    assert box["rl.lr"].low <= cfg.lr_range[0] and box["rl.lr"].high >= 2 * cfg.lr_range[1]
    assert box["rl.staleness"].high > max(cfg.staleness_choices)


def test_pilots_are_the_corners_and_the_space_covers_them() -> None:
    cfg = DemoConfig()
    assert cfg.pilots == [
        {"rl.lr": 1e-3, "rl.staleness": 0},
        {"rl.lr": 1e-3, "rl.staleness": 8},
        {"rl.lr": 1.5e-2, "rl.staleness": 0},
        {"rl.lr": 1.5e-2, "rl.staleness": 8},
    ]
    sp = cfg.space()
    assert sp["fields"]["rl.lr"] == {"low": 1e-3, "high": 1.5e-2}  # scale: the knob schema's
    assert sp["budget_steps"] == cfg.budget_steps
    # the space is one calibrate accepts
    from calibrate import SearchSpace
    from llm_runs.knobs import knob

    space = SearchSpace.from_dict(sp)
    assert {f.name for f in space.fields} == {"rl.lr", "rl.staleness"}
    lr = knob("rl.lr")
    assert lr is not None and space.fields[0].scale == lr.scale == "log"


def test_progress_follows_only_the_named_bar() -> None:
    frame = "pilot_a:  45%|####5     | 9/20 [00:05<00:06,  1.8it/s, e2e=0.50, X=0.61]"
    assert progress_of(frame, "pilot_a") == (9, 20)
    # a library's own bar (transformers loading weights) is not the run's progress
    assert progress_of("Loading weights: 100%|##########| 28/28 [00:00<00:00]", "pilot_a") is None
    assert progress_of(frame, "pilot_b") is None
    assert progress_of("[3/24] I1-AND: 5-fold CV, fold 1", None) == (3, 24)
    assert progress_of("selection: 4 fits in 300 s", None) is None
    assert progress_of("  [3/24] indented", None) is None


def test_refuses_a_folder_of_another_demo_or_of_something_else(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    out.mkdir()
    (out / "demo.json").write_text(json.dumps(QUICK.to_dict()))
    with pytest.raises(ConfigError, match="another config"):
        run_demo(out, DemoConfig(), stop_after="base", progress=False)
    assert json.loads((out / "demo.json").read_text()) == QUICK.to_dict()  # nothing lost
    other = tmp_path / "other"
    other.mkdir()
    (other / "mine.txt").write_text("keep")
    with pytest.raises(OutputError, match="not empty"):
        run_demo(other, QUICK, progress=False)
    assert (other / "mine.txt").read_text() == "keep"
    with pytest.raises(ConfigError, match="stop-after"):
        run_demo(tmp_path / "x", QUICK, stop_after="lunch")
    assert STAGES[0] == "base" and STAGES[-1] == "report"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "calibrate", "demo", *args],
        capture_output=True, text=True, cwd=cwd, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("write", "args", "needle"),
    [
        ("motifs: [C1, Q7]\n", ["--config", "cfg.yaml"], "motifs"),
        ("motifs: [C1\n", ["--config", "cfg.yaml"], "cannot parse"),
        ("gate: AND\n", ["--config", "cfg.yaml", "--quick"], "exclude"),
        (None, ["--config", "missing.yaml"], "missing.yaml"),
        (None, ["--quick", "--stop-after", "lunch"], "stop-after"),
    ],
)
def test_cli_bad_input_is_one_error_line(
    tmp_path: Path, write: str | None, args: list[str], needle: str
) -> None:
    if write is not None:
        (tmp_path / "cfg.yaml").write_text(write)
    r = _cli(*args, "--out", str(tmp_path / "d"), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], r.stderr
    assert "Traceback" not in r.stderr

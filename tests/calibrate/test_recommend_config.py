"""``recommend`` hands back a complete llm_runs training config (``best.yaml``).

The fit's data carry each pilot run's training config (as run folders do); the recommendation
takes the pilot nearest in log to the recommended value, sets the value, and the result must
load with ``llm_runs.config.load_config`` and differ from that pilot only in the knob.
"""

from __future__ import annotations

import dataclasses

import jax
import pytest

import calibrate as cal
from llm_runs.config import TrainConfig, load_config
from tests.calibrate.test_fit import STEPS, TRUTH


@pytest.mark.slow
def test_best_yaml_is_the_nearest_pilot_with_the_recommended_value(tmp_path, capsys):
    lrs = [1e-4, 3e-4, 1e-3]
    run_params = [{f"rho[{n}]": TRUTH[f"rho[{n}]"] * lr / 3e-4 for n in "XYZ"} for lr in lrs]
    data = cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(5), steps=STEPS, runs=3, run_params=run_params,
        hyper={"rl.lr": lrs},
    )  # fmt: skip
    pilots = {
        run: TrainConfig.from_dict(
            {"rl": {"lr": lr}, "steps": 290, "eval_every": 10, "seed": i, "name": run}
        ).to_dict()
        for i, (run, lr) in enumerate(zip(data.runs, lrs, strict=True))
    }
    data = dataclasses.replace(data, configs=pilots)
    cfg = cal.FitConfig(
        method="laplace", chains=1, samples=400,
        hierarchy=cal.Hierarchy(links=(cal.Link("rho", "rl.lr"),)),
    )  # fmt: skip
    post = cal.fit(data, "C1", cfg, key=jax.random.key(0))
    post.save(tmp_path / "fit", figure=False)
    from calibrate.__main__ import main

    grid = [1e-4, 3e-4, 1e-3, 3e-3]
    args = ["recommend", str(tmp_path / "fit"), "--param", "rl.lr", "--out", str(tmp_path / "rec")]
    assert main([*args, "--grid", ",".join(map(str, grid))]) == 0
    err = capsys.readouterr().err
    assert "best.yaml" in err and "python -m llm_runs train --config" in err
    best = load_config(tmp_path / "rec" / "best.yaml")
    assert best.rl.lr == pytest.approx(3e-3)  # faster learning only helps here
    nearest = pilots[data.runs[2]]  # lr 1e-3 is nearest to 3e-3 in log
    expect = dict(nearest, name=None, rl=dict(nearest["rl"], lr=3e-3))
    assert best.to_dict() == TrainConfig.from_dict(expect).to_dict()
    # a value between two pilots takes the nearer one's config (seed 0 for 1.5e-4)
    assert main([*args, "--grid", "1.5e-4", "--out", str(tmp_path / "rec2")]) == 0
    assert load_config(tmp_path / "rec2" / "best.yaml").seed == 0
    # without run configs (a table input), no best.yaml and a message saying why
    plain = cal.fit(dataclasses.replace(data, configs={}), "C1", cfg, key=jax.random.key(0))
    plain.save(tmp_path / "fit_table", figure=False)
    capsys.readouterr()
    assert main(["recommend", str(tmp_path / "fit_table"), "--grid", "1e-3"]) == 0
    assert "no best.yaml" in capsys.readouterr().err
    assert not (tmp_path / "fit_table" / "best.yaml").exists()

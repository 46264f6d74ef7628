"""``recommend --space``: a search space, every candidate predicted in one batched call,
ranked under a risk bound, handed back as a complete llm_runs config (``best.yaml``).

One module-scoped laplace fit of 4 synthetic pilots whose rates follow ``rho ∝ lr`` and whose
upstream forgetting follows ``delta[X] ∝ lr^3``: at high lr X collapses (settles below 0.05)
while Z, with a large basal rate, learns faster and ends higher. So the candidates with the
highest end-to-end proxy are exactly the ones the risk bound must exclude.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
import yaml

import calibrate as cal
from calibrate._recommend._core import rank_candidates, recommend_space
from calibrate._space import SearchSpace
from llm_runs.config import TrainConfig, load_config
from simulate import ConfigError
from tests.calibrate.test_fit import STEPS, TRUTH

ROOT = Path(__file__).resolve().parents[2]
LRS = [1e-4, 3e-4, 1e-3, 3e-3]
HIGH = [1e-2, 3e-2]  # X collapses there (delta[X] / rho[X] ~ 74 and ~2000)
SPACE = {"fields": {"rl.lr": {"choices": [*LRS, *HIGH]}}, "budget_steps": 300, "risk": 0.1}


@pytest.fixture(scope="module")
def fit(tmp_path_factory):
    truth = dict(TRUTH, **{"b[Z]": 0.3})
    run_params = [
        {f"rho[{n}]": TRUTH[f"rho[{n}]"] * lr / 3e-4 for n in "XYZ"}
        | {"delta[X]": 0.002 * (lr / 3e-4) ** 3}
        for lr in LRS
    ]
    data = cal.synthetic_curves(
        "C1", truth, key=jax.random.key(3), steps=STEPS, runs=4, run_params=run_params,
        hyper={"rl.lr": LRS},
    )  # fmt: skip
    pilots = {
        run: TrainConfig.from_dict(
            {"rl": {"lr": lr}, "steps": 290, "eval_every": 10, "seed": i, "name": run}
        ).to_dict()
        for i, (run, lr) in enumerate(zip(data.runs, LRS, strict=True))
    }
    data = dataclasses.replace(data, configs=pilots)
    links = (cal.Link("rho", "rl.lr"), cal.Link("delta", "rl.lr", ("X",)))
    hier = cal.Hierarchy(links=links)
    cfg = cal.FitConfig(method="laplace", chains=1, samples=300, hierarchy=hier)
    post = cal.fit(data, "C1", cfg, key=jax.random.key(0))
    folder = tmp_path_factory.mktemp("space") / "fit"
    post.save(folder, figure=False)
    return post, folder, pilots


def test_risk_bound_excludes_higher_but_collapsing_candidates(fit):
    post, _, _ = fit
    rec = recommend_space(post, SearchSpace.from_dict(SPACE), max_draws=40, top=6)
    rows = {r["setting"]["rl.lr"]: r for r in rec["top"]}
    assert len(rows) == 6 and rec["sampling"] == "grid"
    best = rec["top"][0]
    # the construction holds: both high-lr candidates collapse, or leave [0, 1] (a failed
    # solve, never a forecast), and are too risky
    for lr in HIGH:
        gone = rows[lr]["p_collapse"] + rows[lr].get("p_failed", 0.0)
        assert gone > 0.9 and rows[lr]["risk"] > SPACE["risk"]
        m = rows[lr]["final"]["mean"]
        assert (m is None and rows[lr]["p_failed"] == 1.0) or m > best["final"]["mean"]
        assert not rows[lr]["within_risk"]
    assert best["within_risk"] and best["risk"] <= SPACE["risk"]
    assert best["setting"] == {"rl.lr": 3e-3} == rec["best"]
    assert rec["n_within_risk"] == 4 and "among the 4 candidate(s)" in rec["ranked_by"]
    # the explanation: the bound binds exactly when a collapsing high-lr candidate has a
    # (finite) forecast above the chosen one's
    ex = rec["explanation"]
    above = [lr for lr in HIGH if rows[lr]["final"]["mean"] is not None]
    assert ex["chosen"]["setting"] == rec["best"]
    assert ex["risk_bound"]["binding"] is bool(above)
    if above:
        assert ex["risk_bound"]["best_excluded"]["setting"]["rl.lr"] in above
    assert ex["runner_up"]["setting"] != rec["best"]
    assert [r["rank"] for r in rec["top"]] == list(range(1, 7))
    assert best["final"]["q05"] <= best["final"]["mean"] <= best["final"]["q95"]
    # steps to target: earlier for faster learning; probabilities sum to 1
    steps = [rows[lr]["steps_to_target"] for lr in LRS]
    assert all(s is not None for s in steps) and steps == sorted(steps, reverse=True)
    for r in rec["top"]:
        total = sum(r[f"p_{g}"] for g in ("converged", "oscillating", "collapse", "unsettled"))
        assert total + r["p_failed"] == pytest.approx(1.0, abs=1e-12)
    # none within the bound: said so, ranked by the lowest risk; a space whose every
    # candidate failed is an error, never a recommendation
    only_high = dict(SPACE, fields={"rl.lr": {"choices": HIGH}})
    if all(rows[lr]["p_failed"] == 1.0 for lr in HIGH):
        with pytest.raises(ConfigError, match="every candidate"):
            recommend_space(post, SearchSpace.from_dict(only_high), max_draws=40)
        return
    none = recommend_space(post, SearchSpace.from_dict(only_high), max_draws=40)
    assert none["n_within_risk"] == 0 and none["ranked_by"].startswith("no candidate")
    risks = [r["risk"] for r in none["top"]]
    assert risks == sorted(risks)


@pytest.mark.parametrize("objective", ["last", "X"])
def test_ranking_equals_a_brute_force_loop_over_candidates(fit, objective):
    """Oracle: predict each Sobol candidate on its own (same draws), rank by hand, with the
    output node (``last``) or agent X as the objective."""
    post, _, _ = fit
    space = SearchSpace.from_dict(
        {"fields": {"rl.lr": {"low": 1e-4, "high": 3e-2}}, "budget_steps": 300,
         "risk": 0.2, "n_candidates": 7, "seed": 4, "objective": objective}
    )  # fmt: skip
    j = -1 if objective == "last" else 0
    key = jax.random.key(1)
    rec = recommend_space(post, space, max_draws=30, top=7, key=key)
    assert rec["proxy_agent"] == ("Z" if objective == "last" else "X")
    mean, risk = [], []
    for c in space.candidates():
        p = cal.predict(post, [c], steps=300, max_draws=30, key=key, bands=False)
        _, net = p.groups()
        mean.append(float(p.final[0, :, j].mean()))
        risk.append(float(net["oscillating"][0] + net["collapse"][0] + net["failed"][0]))
    ok = [i for i in range(7) if risk[i] <= 0.2]
    bad = [i for i in range(7) if risk[i] > 0.2]
    oracle = sorted(ok, key=lambda i: -mean[i]) + sorted(bad, key=lambda i: (risk[i], -mean[i]))
    assert ok and bad  # the space straddles the collapse boundary
    cands = space.candidates()
    assert [r["setting"] for r in rec["top"]] == [cands[i] for i in oracle]
    for r, i in zip(rec["top"], oracle, strict=True):
        if np.isnan(mean[i]):  # every draw failed: no forecast
            assert r["final"]["mean"] is None
            continue
        assert r["final"]["mean"] == pytest.approx(mean[i], rel=1e-9)
        assert r["risk"] == pytest.approx(risk[i], abs=1e-12)
    arr = rec["_arrays"]
    assert rank_candidates(arr["utility"], arr["risk"], 0.2) == oracle
    if objective == "X":
        with pytest.raises(cal.ConfigError, match="objective 'W' is not an agent"):
            bad_space = SearchSpace.from_dict(space.to_dict() | {"objective": "W"})
            recommend_space(post, bad_space, max_draws=30, top=1)


def test_space_file_round_trip_sobol_bounds_and_seed():
    data = {
        "fields": {
            "rl.lr": {"low": 1e-4, "high": 1e-2, "scale": "log"},
            "rl.kl_coef": {"low": 0.0, "high": 0.5, "scale": "lin"},
            "rl.batch": {"low": 4, "high": 32, "scale": "log", "integer": True},
            "rl.staleness": {"choices": [0, 2, 4]},
            "pool_size": {"choices": [2]},
        },
        "budget_steps": 500, "risk": 0.05, "target": 0.7, "n_candidates": 300, "seed": 11,
    }  # fmt: skip
    space = SearchSpace.from_dict(data)
    assert SearchSpace.from_dict(json.loads(json.dumps(space.to_dict()))) == space
    assert space.sampling == "sobol"
    cands = space.candidates()
    assert len(cands) == 300 and cands == space.candidates()  # reproducible
    lr = np.array([c["rl.lr"] for c in cands])
    kl = np.array([c["rl.kl_coef"] for c in cands])
    assert np.all((lr >= 1e-4) & (lr <= 1e-2)) and np.all((kl >= 0) & (kl <= 0.5))
    assert all(isinstance(c["rl.batch"], int) and 4 <= c["rl.batch"] <= 32 for c in cands)
    assert {c["rl.staleness"] for c in cands} == {0, 2, 4}
    assert {c["pool_size"] for c in cands} == {2}
    # low-discrepancy in log: every tenth of log10 lr's range holds 30 +- 6 points
    counts = np.histogram(np.log10(lr), bins=10, range=(-4, -2))[0]
    assert np.all(np.abs(counts - 30) <= 6), counts
    other = SearchSpace.from_dict(dict(data, seed=12)).candidates()
    assert other != cands
    grid = SearchSpace.from_dict(
        {"fields": {"rl.lr": {"choices": [1e-3, 2e-3]}, "rl.staleness": {"choices": [0, 2]}},
         "budget_steps": 10}
    )  # fmt: skip
    assert grid.sampling == "grid" and len(grid.candidates()) == 4


@pytest.mark.parametrize(
    ("patch", "match"),
    [
        ({"budget_steps": 0}, "budget_steps must be a positive int"),
        ({"risk": 1.5}, "risk must be a number in"),
        ({"target": 1.0}, "target must be a number in"),
        ({"n_candidates": 0}, "n_candidates must be an int"),
        ({"fields": {"rl.lr": {"low": 1e-2, "high": 1e-3}}}, "fields.rl.lr: high must be > low"),
        ({"fields": {"rl.lr": {"low": 0, "high": 1e-3}}}, "fields.rl.lr.low must be > 0"),
        ({"fields": {"rl.lr": {"low": 1e-4, "high": 1e-3, "scale": "ln"}}}, "fields.rl.lr.scale"),
        ({"fields": {"rl.lr": {"choices": []}}}, "fields.rl.lr.choices must be a non-empty"),
        ({"fields": {"rl.lr": {"lo": 1}}}, r"fields.rl.lr: unknown key\(s\) \['lo'\]"),
        ({"fields": {"steps": {"choices": [5]}}}, "set by budget_steps"),
        ({"budget": 5}, r"unknown key\(s\) \['budget'\]"),
    ],
)
def test_bad_space_values_name_the_field(patch, match):
    base = {"fields": {"rl.lr": {"low": 1e-4, "high": 1e-2}}, "budget_steps": 100}
    with pytest.raises(cal.ConfigError, match=match):
        SearchSpace.from_dict(base | patch)


def test_cli_writes_best_yaml_table_and_regime_map(fit, tmp_path, capsys):
    _, folder, pilots = fit
    space = {
        "fields": {
            "rl.lr": {"low": 1e-4, "high": 3e-2, "scale": "log"},
            "pool_size": {"choices": [2]},  # not linked, fixed: only written into the config
        },
        "budget_steps": 400, "risk": 0.1, "target": 0.9, "n_candidates": 64, "seed": 3,
    }  # fmt: skip
    path = tmp_path / "space.yaml"
    path.write_text(yaml.safe_dump(space))
    from calibrate.__main__ import main

    out = tmp_path / "rec"
    argv = ["recommend", str(folder), "--space", str(path), "--out", str(out), "--draws", "30"]
    assert main([*argv, "--top", "3"]) == 0
    cap = capsys.readouterr()
    assert "64 candidate(s) (sobol)" in cap.out and "steps to target" not in cap.err
    assert len([ln for ln in cap.out.splitlines() if re.match(r" *\d+  \S", ln)]) == 3
    assert "python -m llm_runs train --config" in cap.err
    assert "why: " in cap.out and "nearest pilot" in cap.out and "risk tolerance" in cap.out
    rec = json.loads((out / "recommendation.json").read_text())
    assert len(rec["top"]) == 3 and rec["space"] == SearchSpace.from_dict(space).to_dict()
    best = load_config(out / "best.yaml")
    top = rec["top"][0]["setting"]
    assert top["rl.lr"] < 1e-2 and rec["top"][0]["within_risk"]
    assert best.rl.lr == pytest.approx(top["rl.lr"], rel=1e-12)
    assert best.pool_size == 2 and best.steps == 400 and best.name is None
    base = pilots[rec["base_run"]]
    expect = dict(base, steps=400, pool_size=2, name=None, rl=dict(base["rl"], lr=top["rl.lr"]))
    assert best.to_dict() == TrainConfig.from_dict(expect).to_dict()
    assert (out / "regime_map.png").stat().st_size > 5000
    # --json prints one object; the --param mode still answers as before
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["best"] == rec["best"]


def test_cli_bad_space_files_exit_2_with_one_error_line(fit, tmp_path, capsys):
    _, folder, _ = fit
    from calibrate.__main__ import main

    cases = {
        "unlinked.yaml": (
            {"fields": {"rl.kl_coef": {"low": 0.0, "high": 0.2, "scale": "lin"}},
             "budget_steps": 100},
            "['rl.kl_coef'] have no link in the fit",
        ),
        "broken.yaml": ("fields: {rl.lr: [1, 2", "cannot parse"),
        "nobudget.json": ({"fields": {"rl.lr": {"choices": [1e-3]}}}, "budget_steps is required"),
        "negative.yaml": (
            {"fields": {"rl.lr": {"choices": [-1e-3]}}, "budget_steps": 100},
            "rl.lr value must be a finite number > 0",
        ),
        "missing.yaml": (None, "does not exist"),
    }  # fmt: skip
    for name, (content, match) in cases.items():
        p = tmp_path / name
        if isinstance(content, str):
            p.write_text(content)
        elif content is not None:
            p.write_text(json.dumps(content) if name.endswith(".json") else yaml.safe_dump(content))
        argv = ["recommend", str(folder), "--space", str(p), "--out", str(tmp_path / "o")]
        assert main(argv) == 2, name
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and match in err[0], (name, err)
    assert main(["recommend", str(folder), "--space", str(p), "--param", "rl.lr"]) == 2
    assert "--space replaces --param" in capsys.readouterr().err
    # as a user runs it: a fresh process, JAX_ENABLE_X64 unset
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    bad = tmp_path / "unlinked.yaml"
    cmd = [sys.executable, "-m", "calibrate", "recommend", str(folder), "--space", str(bad)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("error: ")


def test_llm_runs_config_import_is_torch_free():
    code = (
        "import sys; import calibrate._recommend._core, calibrate._space; "
        "from llm_runs.config import TrainConfig; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_docs_example_space_is_valid():
    space = SearchSpace.load(ROOT / "docs" / "examples" / "space.yaml")
    assert space.fields[0].name == "rl.lr"

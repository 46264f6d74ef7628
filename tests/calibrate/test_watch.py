"""``calibrate watch`` on a synthetic growing run log: forecasts update as rows arrive, an
alert and exit 3 on a collapsing run, none on a converging one, and bad inputs exit 2."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

import calibrate as cal
from calibrate.__main__ import main
from llm_runs import runlog as rl

STEPS = np.arange(0, 210, 10)
LRS = [1e-3, 3e-3, 1e-2]
BASE = {
    "rho[X]": 0.04, "rho[Y]": 0.05, "rho[Z]": 0.05, "delta": 0.002, "b[Y]": 0.05,
    "b[Z]": 0.05, "A0": 0.5, "K[X->Y]": 0.4, "K[X->Z]": 0.5, "K[Y->Z]": 0.5, "n": 2.0,
}  # fmt: skip


def _delta(lr: float) -> float:
    """Forgetting grows steeply with the learning rate: lr 1e-2 collapses every agent."""
    return 0.002 * (lr / 1e-3) ** 2.5


def _curves(lr: float, seed: int) -> cal.CurveData:
    d = _delta(lr)
    return cal.synthetic_curves(
        "C1", BASE, key=jax.random.key(seed), steps=STEPS, n_eval=64, runs=1,
        run_params=[{f"delta[{n}]": d for n in "XYZ"}], hyper={"rl.lr": [lr]},
    )  # fmt: skip


@pytest.fixture(scope="module")
def pilots_fit(tmp_path_factory, watch_pilots_post):
    """A Laplace fit of three pilots, rho and delta linked to rl.lr, saved."""
    post = watch_pilots_post
    folder = tmp_path_factory.mktemp("watch") / "fit"
    post.save(folder, figure=False)
    return folder


def _start_run(folder, lr: float):
    manifest = rl.make_manifest(
        run=folder.name, seed=0, agents=["X", "Y", "Z"],
        spec={"nodes": ["X", "Y", "Z"], "edges": []},
        config={"steps": int(STEPS[-1]), "eval_every": 10, "rl": {"lr": lr}},
    )  # fmt: skip
    return rl.RunWriter(folder, manifest)


def _write(writer, data: cal.CurveData, step: int) -> None:
    t = data.table[data.table["step"] == step]
    writer.write(
        {"kind": "agent", "step": int(r["step"]), "agent": r["agent"],
         "competence": float(r["competence"]), "n_eval": int(r["n_eval"])}
        for r in t.to_dict("records")
    )  # fmt: skip


def _watch(capsys, folder, fit, *extra) -> tuple[int, list[dict], str]:
    argv = ["watch", str(folder), "--fit", str(fit), "--once", "--json", "--draws", "60"]
    rc = main([*argv, *extra])
    out, err = capsys.readouterr()
    return rc, [json.loads(line) for line in out.splitlines() if line.strip()], err


def test_watch_alerts_on_a_collapsing_run(tmp_path, pilots_fit, capsys):
    data = _curves(1e-2, 99)
    folder = tmp_path / "hot"
    seen = []
    with _start_run(folder, 1e-2) as w:
        for s in STEPS[:4]:
            _write(w, data, int(s))
            rc, rows, err = _watch(capsys, folder, pilots_fit)
            assert len(rows) == 1 and rows[0]["step"] == s
            seen.append((rc, rows[0], err))
    rc, last, err = seen[-1]
    assert rc == 3 and last["alert"] and last["network"]["p_collapse"] >= 0.5
    assert "ALERT" in err
    assert last["agents"]["X"]["final"]["mean"] < 0.1
    assert len({r["agents"]["X"]["final"]["mean"] for _, r, _ in seen}) > 1  # forecasts move


def test_watch_is_quiet_on_a_converging_run(tmp_path, pilots_fit, capsys):
    data = _curves(1e-3, 98)
    folder = tmp_path / "cool"
    finals = []
    with _start_run(folder, 1e-3) as w:
        for s in STEPS[:6]:
            _write(w, data, int(s))
            rc, rows, err = _watch(capsys, folder, pilots_fit)
            assert rc == 0 and not rows[0]["alert"] and "ALERT" not in err
            finals.append(rows[0]["agents"]["X"]["final"]["mean"])
    assert finals[-1] > 0.5 and len(set(finals)) > 1
    f = rows[0]["agents"]["X"]["final"]
    assert f["q05"] <= f["mean"] <= f["q95"]
    # labelled as predict's: one new run's logged competence; the pilots' fit has no
    # random effects, so its run effects are the --spread jitter, said to be set, not learned
    note = rows[0]["band_note"]
    assert note.startswith("one new run's logged competence") and "not learned" in note
    assert "weighted by the run's evaluations" in note
    assert f"interval: 90 % of {note}" in err


def test_watch_follows_until_finished(tmp_path, pilots_fit, capsys):
    data = _curves(1e-3, 97)
    folder = tmp_path / "done"
    with _start_run(folder, 1e-3) as w:
        for s in STEPS[:3]:
            _write(w, data, int(s))
    rl.update_manifest(folder, status="finished")
    rc = main(["watch", str(folder), "--fit", str(pilots_fit), "--until-finished",
               "--poll", "0.01", "--draws", "40"])  # fmt: skip
    out, _ = capsys.readouterr()
    assert rc == 0
    lines = [ln for ln in out.splitlines() if ln.startswith("step")]
    assert len(lines) == 3  # one forecast per evaluation
    assert "finished: stopping" in out


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["watch", "{tmp}/missing"], "no such run folder"),
        (["watch", "{tmp}", "--threshold", "1.5"], "--threshold"),
        (["watch", "{tmp}", "--threshold", "0"], "--threshold"),
        (["watch", "{tmp}", "--poll", "-1"], "--poll"),
        (["watch", "{tmp}", "--fit", "{tmp}/nofit"], "--fit"),
        (["watch", "{tmp}", "--extrapolation-sd", "-1"], "--extrapolation-sd"),
        (["watch", "{tmp}", "--extrapolation-sd", "nan"], "--extrapolation-sd"),
        (["watch", "{tmp}", "--extrapolation-sd", "0.5"], "needs --fit"),
    ],
)
def test_watch_bad_inputs_exit_2(tmp_path, capsys, argv, match):
    rc = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    _, err = capsys.readouterr()
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and match in lines[0]


def test_forecast_weights_follow_the_evaluations():
    """Hand-made draws: evaluations near one draw's curve give it the weight."""
    import pandas as pd

    from calibrate._watch import WatchDraws, forecast

    t = np.linspace(0, 100, 11)
    low = np.full((11, 1), 0.02)
    high = np.full((11, 1), 0.9)
    wd = WatchDraws(
        agents=("X",), setting={}, t=t, curves=np.stack([low, high]),
        codes=np.array([[4], [0]]), final=np.array([[0.02], [0.9]]), weighted=True,
        source="test",
    )  # fmt: skip
    prior = forecast(wd, pd.DataFrame(columns=["step", "agent", "competence", "n_eval"]))
    assert prior.p_collapse == pytest.approx(0.5)
    obs = pd.DataFrame({"step": [0, 10], "agent": ["X", "X"], "competence": [0.03, 0.0],
                        "n_eval": [64, 64]})  # fmt: skip
    fc = forecast(wd, obs)
    assert fc.p_collapse > 0.99 and fc.agents["X"]["final"]["mean"] < 0.05
    assert fc.step == 10 and fc.evaluations == 2


def test_bent_links_change_nothing_inside_the_pilots_range_and_widen_beyond(watch_pilots_post):
    """``extrapolation_sd``: the same draws inside the pilots' lr range (1e-3..1e-2); below
    it each new run's own bend spreads the finals, and the Laplace update refuses it."""
    from calibrate._watch import prepare

    kw = {"steps": 200.0, "draws": 60, "replicates": 2, "key": jax.random.key(0)}
    inside = [
        prepare(watch_pilots_post, {"rl.lr": 3e-3}, extrapolation_sd=s, **kw) for s in (0.0, 1.0)
    ]
    np.testing.assert_array_equal(inside[0].curves, inside[1].curves)
    below = [
        prepare(watch_pilots_post, {"rl.lr": 2e-4}, extrapolation_sd=s, **kw) for s in (0.0, 1.0)
    ]
    assert not np.array_equal(below[0].curves, below[1].curves)
    spread = [np.std(np.log(w.curves[:, -1, :] / (1 - w.curves[:, -1, :]))) for w in below]
    assert spread[1] > 1.5 * spread[0]
    with pytest.raises(cal.ConfigError, match="update='weights'"):
        prepare(
            watch_pilots_post, {"rl.lr": 2e-4}, steps=200.0, update="laplace", extrapolation_sd=1.0
        )


def _rows(agent: str, ys: list[float], n: int = 64):
    import pandas as pd

    return pd.DataFrame({"step": [10 * i for i in range(len(ys))], "agent": agent,
                         "competence": ys, "n_eval": n})  # fmt: skip


@pytest.mark.parametrize(
    "ys",
    [
        [0.3, 0.8, 0.9, 0.2, 0.05, 0.02, 0.01],  # rose, then fell to 0 and stayed
        [0.3, 0.8, 0.9, 0.2, 0.85, 0.9, 0.92],  # a dip that recovered
        [0.3, 0.8, 0.05],  # too few evaluations to judge
        [0.02, 0.03, 0.01, 0.02, 0.0],  # never learned
        [0.64, 0.3, 0.1, 0.05, 0.04, 0.03, 0.02],  # fell from its start
    ],
)
def test_a_collapse_so_far_agrees_with_the_one_rule_for_real_runs(ys):
    import simulate
    from calibrate._watch._draws import observed_collapse

    got = observed_collapse(_rows("X", ys), ["X", "Y"])
    if len(ys) < 4:
        assert got == ()
        return
    ref = simulate.classify_observed(np.arange(len(ys)) * 10.0, np.array(ys)[:, None], 64,
                                     names=("X",))  # fmt: skip
    assert got == (("X",) if ref["node_regimes"]["X"] == "collapse" else ())


def test_a_collapse_in_the_evaluations_sets_p_collapse_whatever_the_draws_say():
    from calibrate._watch import WatchDraws, forecast

    t = np.linspace(0, 100, 11)
    high = np.full((2, 11, 1), 0.9)  # every draw converges high
    wd = WatchDraws(agents=("X",), setting={}, t=t, curves=high, codes=np.zeros((2, 1), int),
                    final=np.full((2, 1), 0.9), weighted=True, source="test")  # fmt: skip
    obs = _rows("X", [0.3, 0.8, 0.9, 0.2, 0.05, 0.02, 0.01])
    assert forecast(wd, obs, observed=False).p_collapse == 0.0
    fc = forecast(wd, obs)
    assert fc.p_collapse == 1.0 and fc.agents["X"]["p_collapse"] == 1.0
    assert fc.observed_collapse == ("X",) and "collapsed so far: X" in fc.line()
    assert sum(fc.network.values()) == 1.0
    assert forecast(wd, obs[obs["step"] <= 30]).p_collapse == 0.0  # before the fall


def test_watch_alerts_on_a_run_that_collapsed_where_the_pilots_converge(
    tmp_path, pilots_fit, capsys
):
    folder = tmp_path / "fell"
    writer = _start_run(folder, 1e-3)  # the pilots converge at lr 1e-3
    for i, x in enumerate([0.5, 0.8, 0.9, 0.2, 0.05, 0.02, 0.01]):
        ys = {"X": x, "Y": 0.5 + 0.05 * i, "Z": 0.5 + 0.05 * i}
        writer.write([{"kind": "agent", "step": 10 * i, "agent": a, "competence": y,
                       "n_eval": 64} for a, y in ys.items()])  # fmt: skip
    rc, rows, err = _watch(capsys, folder, pilots_fit)
    assert rc == 3, err
    assert rows[-1]["observed_collapse"] == ["X"]
    assert "collapsed so far: X" in err
    rc, rows, _ = _watch(capsys, folder, pilots_fit, "--model-only")
    assert rc == 0 and rows[-1]["network"]["p_collapse"] < 0.5

"""The CLI output rule on a real fit (issue 36): settings far outside the pilots' range.

``calibrate predict`` at ``rl.lr=1``, ``1e300`` or ``rl.staleness=1e6`` exits 0 only with
every forecast in [0, 1] or counted as failed, the failed share in the console table and an
extrapolation note; ``recommend`` never picks (or writes into ``best.yaml``) a value whose
forecasts failed; a value the training config refuses is one ``error:`` line; a link on a
covariate that was constant across the fit's runs is said at fit time and by predict.

Each case runs the real command in a subprocess on the session's ``knob_fit``
(tests/calibrate/conftest.py), as tests/test_cli_contract.py runs its table.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.test_cli_contract import CAL, ROOT, _snapshot

pytestmark = pytest.mark.slow  # one fit per session, then a compile per command

NOTE_FAR = r"note: {f} is [\d.]+ spreads outside the pilots' range \(an extrapolation\)"
NOTE_CONST = "note: rl.kl_coef is constant in the fit: this follows the prior"
WARN_CONST = "warning: link delta ~ rl.kl_coef: rl.kl_coef = 0 in every run of the fit"

# (id, --set, failed share of every agent: "all", "none" or "any", lines stdout must match)
PREDICT_CASES = [
    ("lr-1", "rl.lr=1", "any", [NOTE_FAR.format(f="rl.lr")]),
    ("lr-1e5", "rl.lr=1e5", "any", [NOTE_FAR.format(f="rl.lr")]),
    ("lr-1e300", "rl.lr=1e300", "all",
     [NOTE_FAR.format(f="rl.lr"), r"X +failed \(every draw\)( +0\.00){4} +1\.00"]),
    ("staleness-1e6", "rl.staleness=1e6", "any", [NOTE_FAR.format(f="rl.staleness")]),
    ("kl-coef-constant-in-the-fit", "rl.kl_coef=0.1", "any", [re.escape(NOTE_CONST)]),
]  # fmt: skip


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    import os

    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}  # as a user runs it
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])  # this tree
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=cwd, env=env)


def _numbers(entry: dict) -> list:
    """The numbers of a ``final``/``curve`` entry: its statistics, curves and per-draw
    ``samples`` (its ``band`` key only names which band it is)."""
    out: list = []
    for key, v in entry.items():
        if key != "band":
            out.extend(v if isinstance(v, list) else [v])
    return out


def _in_unit(values: list) -> bool:
    return all(v is None or 0.0 <= v <= 1.0 for v in values)


def _fail_column(stdout: str) -> dict[str, float]:
    """Agent -> the table's ``fail`` share (its last column)."""
    lines = stdout.splitlines()
    head = next(i for i, x in enumerate(lines) if x.startswith("agent"))
    assert lines[head].split()[-1] == "fail", lines[head]
    return {x.split()[0]: float(x.split()[-1]) for x in lines[head + 1 : head + 4]}


@pytest.mark.parametrize(
    ("setting", "failed", "patterns"), [c[1:] for c in PREDICT_CASES],
    ids=[c[0] for c in PREDICT_CASES],
)  # fmt: skip
def test_predict_far_outside_the_pilots_is_in_0_1_or_failed_and_says_so(
    knob_fit, tmp_path, setting, failed, patterns
):
    fit, _ = knob_fit
    out = tmp_path / "pred"
    r = _run([*CAL, "predict", str(fit), "--set", setting, "--draws", "50", "--out", str(out),
              "--extrapolation-sd", "0"], tmp_path)  # straight links: their failures  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    for pat in patterns:
        assert re.search(pat, r.stdout, re.M), (pat, r.stdout)
    assert WARN_CONST in r.stderr and "Traceback" not in r.stderr
    assert "UserWarning" not in r.stderr  # one warning line, not Python's two
    (row,) = json.loads((out / "prediction.json").read_text())["predictions"]
    assert row["extrapolated"] is True
    shown = _fail_column(r.stdout)
    for name, agent in row["agents"].items():
        p = agent["p_failed"]
        assert shown[name] == pytest.approx(p, abs=0.005)  # the table shows the failed share
        assert {"all": p == 1.0, "none": p == 0.0, "any": 0.0 <= p <= 1.0}[failed], (name, p)
        finals = [k for k in agent if k.startswith("final")]  # each band's final competence
        assert "final" in finals and "final_mean_curve" in finals, sorted(agent)
        for key in finals:
            assert _in_unit(_numbers(agent[key])), (key, agent[key])
        assert _in_unit(_numbers(agent["curve"]))
        if p == 1.0:  # nothing but failures: no number is shown as a forecast
            assert set(_numbers(agent["final"])) == {None}, agent["final"]
            assert set(_numbers(agent["final_mean_curve"])) == {None}


def test_predict_a_value_training_refuses_is_one_error_line(knob_fit, tmp_path):
    fit, _ = knob_fit
    before = _snapshot(fit)
    r = _run([*CAL, "predict", str(fit), "--set", "rl.staleness=2.5"], tmp_path)
    lines = [x for x in r.stderr.splitlines() if x.strip() and not x.startswith("warning:")]
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and lines[0].startswith("error: --set: rl.staleness"), r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert _snapshot(fit) == before


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--steps", "100000000"], ["shorter --steps"]),
        (["--steps", "1000000", "--draws", "200"], ["--steps 1000000", "memory", "shorter"]),
        (["--out", "/proc/x"], ["--out"]),
        (["--plot", "/proc/x.png"], ["--plot"]),
        (["--plot", "{t}/x.xyz"], ["--plot", ".xyz"]),
    ],
    ids=["steps-1e8", "steps-1e6-24GB", "out-proc", "plot-proc", "plot-xyz"],
)
def test_predict_refuses_a_size_or_output_before_any_solve(knob_fit, tmp_path, args, words):
    """On a real fit (the trial's crashes came after the solve, or asked 52 GB): exit 2,
    one ``error:`` line, nothing printed or written."""
    fit, _ = knob_fit
    before = _snapshot(fit)
    argv = [*CAL, "predict", str(fit), "--set", "rl.lr=1e-3", "--draws", "50"]
    r = _run([*argv, *(a.format(t=tmp_path) for a in args)], tmp_path)
    lines = [x for x in r.stderr.splitlines() if x.strip() and not x.startswith("warning:")]
    assert r.returncode == 2, r.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert _snapshot(fit) == before and list(tmp_path.iterdir()) == []


def test_recommend_space_never_ranks_a_failed_choice_first(knob_fit, tmp_path):
    """A space with choices up to 1e300 (the trial ranked it above lr = 10 with an interval
    that missed its own mean): the failed candidate ranks last, every interval shown holds
    its own mean, and best.yaml gets a value whose forecasts did not fail."""
    fit, _ = knob_fit
    space = tmp_path / "space.yaml"
    # risk 1: beyond the pilots' range the collapse floor (not this test's subject) is > 0.1
    space.write_text("fields:\n  rl.lr: {choices: [3e-3, 10, 1e300]}\nbudget_steps: 290\n"
                     "risk: 1.0\n")  # fmt: skip
    rec = tmp_path / "rec"
    argv = [*CAL, "recommend", str(fit), "--space", str(space), "--top", "3", "--draws", "50",
            "--extrapolation-sd", "0"]  # straight links: their failures  # fmt: skip
    r = _run([*argv, "--out", str(rec)], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    warned = [x for x in r.stderr.splitlines() if x.startswith("warning:")]
    assert all(x.startswith(WARN_CONST) for x in warned), warned  # not numpy's "empty slice"
    got = json.loads((rec / "recommendation.json").read_text())
    rows = {row["setting"]["rl.lr"]: row for row in got["top"]}
    assert rows[1e300]["p_failed"] == 1.0 and rows[1e300]["final"]["mean"] is None
    shown = re.search(r"^ +3  rl\.lr=1e\+300 .*$", r.stdout, re.M)
    cols = shown[0].split("(")[0].split() if shown else []  # before "(above the risk bound)"
    assert cols[-5:] == ["0.00"] * 4 + ["1.00"], r.stdout  # the fail column says why
    order = [row["setting"]["rl.lr"] for row in got["top"]]
    assert order[-1] == 1e300 and not rows[1e300]["within_risk"]  # last, whatever it "risks"
    for row in got["top"]:
        f = row["final"]
        if f["mean"] is not None:
            assert f["q05"] <= f["mean"] <= f["q95"] and 0.0 <= f["mean"] <= 1.0, row
    top = got["top"][0]
    assert got["best"] == top["setting"] and top["p_failed"] == 0.0 and top["within_risk"]
    best = yaml.safe_load((rec / "best.yaml").read_text())
    assert best["rl"]["lr"] == pytest.approx(top["setting"]["rl.lr"]) and best["steps"] == 290
    assert "e+300" not in (rec / "best.yaml").read_text()


def test_recommend_never_picks_or_writes_a_value_whose_forecasts_failed(knob_fit, tmp_path):
    fit, _ = knob_fit
    rec = tmp_path / "rec"
    argv = [*CAL, "recommend", str(fit), "--param", "rl.lr", "--grid", "0.003,1e300"]
    r = _run([*argv, "--out", str(rec)], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads((rec / "recommendation.json").read_text())
    assert got["value"] == pytest.approx(0.003)
    rows = {row["value"]: row for row in got["table"]}
    assert rows[1e300]["p_failed"] == 1.0 and rows[0.003]["p_failed"] == 0.0
    best = yaml.safe_load((rec / "best.yaml").read_text())
    assert best["rl"]["lr"] == pytest.approx(0.003)
    assert "e+300" not in (rec / "best.yaml").read_text()
    # every value failing is an error line, not a recommendation
    r = _run([*argv[:-1], "1e300,1e299", "--out", str(tmp_path / "rec2")], tmp_path)
    lines = [x for x in r.stderr.splitlines() if x.strip() and not x.startswith("warning:")]
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: every value")
    assert not (tmp_path / "rec2" / "best.yaml").exists()


def test_a_link_on_a_covariate_constant_in_the_fit_warns_at_fit_time(knob_fit):
    _, caught = knob_fit
    const = [m for m in caught if "in every run of the fit" in m]
    assert len(const) == 1, caught  # the kl_coef link only; lr and staleness vary
    assert const[0].startswith("link delta ~ rl.kl_coef: rl.kl_coef = 0 in every run")
    assert "follows the prior alone" in const[0]


def test_recommend_steps_no_machine_holds_is_refused_before_any_solve(knob_fit, tmp_path):
    """Issue 72 §3: a horizon whose forecasts would not fit, named with its size."""
    fit, _ = knob_fit
    before = _snapshot(fit)
    r = _run([*CAL, "recommend", str(fit), "--param", "rl.lr", "--steps", "1e6",
              "--out", str(tmp_path / "rec")], tmp_path)  # fmt: skip
    lines = [x for x in r.stderr.splitlines() if x.strip() and not x.startswith("warning:")]
    assert r.returncode == 2 and len(lines) == 1, r.stderr[-2000:]
    assert lines[0].startswith("error: --steps 1000000 needs about") and "memory" in lines[0]
    assert _snapshot(fit) == before and list(tmp_path.iterdir()) == []


def test_recommend_space_budget_no_machine_holds_is_refused_before_any_solve(knob_fit, tmp_path):
    """Issue 72 §3: ``recommend --space`` with a ``budget_steps`` whose forecasts would not fit
    (it ran out of memory inside XLA), named with its size before any solve."""
    fit, _ = knob_fit
    space = tmp_path / "space.yaml"
    space.write_text("fields:\n  rl.lr: {low: 1.0e-4, high: 1.0e-3}\nbudget_steps: 1000000\n")
    r = _run([*CAL, "recommend", str(fit), "--space", str(space), "--out", str(tmp_path / "rec")],
             tmp_path)  # fmt: skip
    lines = [x for x in r.stderr.splitlines() if x.strip() and not x.startswith("warning:")]
    assert r.returncode == 2 and len(lines) == 1, r.stderr[-2000:]
    assert lines[0].startswith("error: budget_steps 1000000 needs about") and "memory" in lines[0]
    assert not (tmp_path / "rec").exists()


@pytest.mark.parametrize("grid", [None, "0,2,4"], ids=["default-grid", "grid-0-2-4"])
def test_recommend_staleness_with_lag_0_a_candidate(knob_fit, tmp_path, grid):
    """Issue 72 §3: ``recommend --param rl.staleness`` crashed (``ZeroDivisionError``)
    whenever lag 0 was a candidate; the nearest pilot is found on the knob's log1p scale."""
    fit, _ = knob_fit
    rec = tmp_path / "rec"
    argv = [*CAL, "recommend", str(fit), "--param", "rl.staleness"]
    r = _run([*argv, *(["--grid", grid] if grid else []), "--out", str(rec)], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    got = json.loads((rec / "recommendation.json").read_text())
    best = yaml.safe_load((rec / "best.yaml").read_text())
    assert best["rl"]["staleness"] == got["value"] and float(got["value"]).is_integer()
    if grid:
        assert sorted(row["value"] for row in got["table"]) == [0, 2, 4]

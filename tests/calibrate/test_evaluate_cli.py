"""``python -m calibrate evaluate`` (issue 71 §1): docs/cli.md's example, run as written on
tiny synthetic run folders (C1 curves whose rates scale with rl.lr; the pilots are the shared
``lr_family_fit``'s own runs), leave one setting out, and its bad input (exit 2, one line)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import jax
import numpy as np
import pytest

import calibrate as cal
from calibrate.__main__ import main

from .conftest import LR_FAMILY

pytest.importorskip("sklearn")
ROOT = Path(__file__).resolve().parents[2]


def _write_run(folder: Path, table, lr: float) -> None:
    from llm_runs import runlog as rl

    manifest = rl.make_manifest(
        run=folder.name, seed=0, agents=["X", "Y", "Z"],
        spec={"nodes": ["X", "Y", "Z"], "edges": []},
        config={"steps": 290, "eval_every": 10, "rl": {"lr": lr}},
    )  # fmt: skip
    with rl.RunWriter(folder, manifest) as w:
        for step, rows in table.sort_values(["step", "agent"]).groupby("step"):
            cols = zip(rows["agent"], rows["competence"], rows["n_eval"], strict=True)
            w.write([{"kind": "agent", "step": int(step), "agent": str(a),
                      "competence": float(c), "n_eval": int(n)} for a, c, n in cols])  # fmt: skip
    rl.update_manifest(folder, status="finished")


def _runs(root: Path, post) -> None:
    """Pilots p0..p2 (the fit's data, one run per lr of LR_FAMILY) and held-out h0 (inside
    the pilots' lr range) and h1 (beyond it), drawn from the same truth."""
    from tests.calibrate.test_fit import STEPS, TRUTH

    t = post.data_table
    for i, (run, lr) in enumerate(zip(t["run"].unique(), LR_FAMILY, strict=True)):
        _write_run(root / f"p{i}", t[t["run"] == run], lr)
    held = (2e-4, 3e-3)
    rp = [{f"rho[{n}]": TRUTH[f"rho[{n}]"] * lr / 3e-4 for n in "XYZ"} for lr in held]
    data = cal.synthetic_curves("C1", TRUTH, key=jax.random.key(9), steps=STEPS, runs=2,
                                run_params=rp)  # fmt: skip
    for i, (run, lr) in enumerate(zip(data.runs, held, strict=True)):
        _write_run(root / f"h{i}", data.table[data.table["run"] == run], lr)


def _docs_example() -> list[str]:
    """The first ``python -m calibrate evaluate`` command of docs/cli.md's evaluate section."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text[text.index("### calibrate evaluate") :]
    block = re.search(r"```bash\n(python -m calibrate evaluate.*?)```", section, re.S)
    assert block, "docs/cli.md: no example under ### calibrate evaluate"
    argv = shlex.split(block.group(1).replace("\\\n", " "))
    return argv[3:]  # after "python -m calibrate"


@pytest.fixture
def folder(tmp_path, monkeypatch, lr_family_fit):
    import shutil

    post, fit = lr_family_fit
    _runs(tmp_path / "runs", post)
    shutil.copytree(fit, tmp_path / "fit")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_documented_example_runs(folder, capsys):
    argv = _docs_example()
    assert main(argv) == 0
    out = folder / argv[argv.index("--out") + 1]
    assert {p.name for p in out.iterdir()} >= {"summary.json", "table.md", "pit.png",
                                               "reliability.png"}  # fmt: skip
    s = json.loads((out / "summary.json").read_text())
    assert s["knobs"] == ["rl.lr"] and s["n_eval"] == 100
    assert shlex.split(s["config"]["command"])[3:] == [
        *argv[: argv.index("--out")], "--knobs", "rl.lr", "--band", "new_run", "--draws", "400",
        "--prefix", "50", "--n-eval", "100", "--extrapolation-sd", "0.0", "--seed", "0",
        "--out", argv[argv.index("--out") + 1],
    ]  # fmt: skip
    assert s["splits"] == {"h0": "interpolation", "h1": "extrapolation"}
    assert s["methods"][0] == "motif model (new run)"
    assert {"nearest pilot", "GP over knobs", "GP classifier", "3-nn"} <= set(s["methods"])
    for split in ("interpolation", "extrapolation", "all"):
        m = s["summary"][split]["motif model (new run)"]
        assert {"regime_accuracy", "coverage90", "crps", "brier", "reliability"} <= set(m)
        assert 0 <= m["crps"]["all"] < 0.5 and 0 <= m["brier"] <= 1
    printed = capsys.readouterr().out
    assert "| motif model (new run) |" in printed and "evaluation written to" in printed
    # the model saw rates that scale with lr: its forecast of the run inside the range is
    # close (the truth is the fit's own model)
    assert s["per_run"]["motif model (new run)"]["crps"][0][0] < 0.1
    # an existing evaluation is replaced only with --overwrite
    assert main(argv) == 2
    assert "--overwrite" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:  # argparse's own error: --fit with --no-model
        main([*argv, "--overwrite", "--no-model"])
    assert e.value.code == 2
    assert capsys.readouterr().err.startswith("error: argument --no-model: not allowed")


def test_leave_one_setting_out_without_the_model(folder):
    runs = [f"runs/{n}" for n in ("p0", "p1", "p2", "h0", "h1")]
    assert main(["evaluate", "--loo", *runs, "--no-model", "--prefix", "0",
                 "--draws", "50", "--out", "loo"]) == 0  # fmt: skip
    s = json.loads((folder / "loo" / "summary.json").read_text())
    assert len(s["folds"]) == 5 and s["n_runs"]["all"] == 5
    assert s["splits"]["h1"] == "extrapolation" and s["splits"]["p1"] == "interpolation"
    assert not any(m.startswith("sigmoid") for m in s["methods"])


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--pilots", "runs/p0", "--no-model"], "--heldout"),
        (["--loo", "runs/p0", "runs/h0", "--fit", "fit"], "with --loo give --fit-args"),
        (["--pilots", "runs/p0", "--heldout", "runs/h0"], "--fit FIT_DIR, --fit-args"),
        (["--pilots", "fit", "--heldout", "runs/h0", "--no-model"], "is not a run folder"),
        (["--pilots", "runs/p0", "--heldout", "runs/h0", "--fit", "runs"], "not a fit folder"),
        (["--pilots", "runs/p0", "--heldout", "runs/h0", "--no-model", "--draws", "3"], ">= 10"),
        (["--pilots", "runs/p0", "--heldout", "runs/p0", "--no-model"], "given twice"),
        (["--loo", "runs/p0", "runs/h0", "--fit-args", "--out x"], "must not set --out"),
        (["--loo", "runs/p0", "runs/h0", "--fit-args", "--motif 'C1"], "--fit-args: No closing"),
    ],
)
def test_bad_input_exits_2_with_one_error_line(folder, capsys, argv, says):
    assert main(["evaluate", *argv, "--out", "bad"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and says in err[0], err
    assert not (folder / "bad").exists()


def test_a_user_folder_is_never_replaced(folder, capsys):
    (folder / "mine").mkdir()
    (folder / "mine" / "notes.txt").write_text("keep")
    argv = ["evaluate", "--pilots", "runs/p0", "runs/p1", "--heldout", "runs/h0", "--no-model",
            "--out", "mine", "--overwrite"]  # fmt: skip
    assert main(argv) == 2
    assert (folder / "mine" / "notes.txt").read_text() == "keep"
    assert np.all([ln.startswith("error:") for ln in capsys.readouterr().err.splitlines()])


@pytest.mark.slow
def test_leave_one_setting_out_fits_the_model_in_every_fold(folder):
    """``--loo`` with ``--fit-args``: one ``calibrate fit`` (a subprocess) per held-out
    setting, on the other settings' runs only, each kept under ``fits/foldK``."""
    runs = ["runs/p0", "runs/p2", "runs/h1"]
    argv = ["evaluate", "--loo", *runs, "--fit-args", "--motif C1 --method laplace --samples 100",
            "--prefix", "0", "--draws", "50", "--out", "loo_fit"]  # fmt: skip
    assert main(argv) == 0
    out = folder / "loo_fit"
    s = json.loads((out / "summary.json").read_text())
    assert len(s["folds"]) == 3 and s["methods"][0] == "motif model (new run)"
    assert all((out / "fits" / f"fold{k}" / "summary.json").is_file() for k in range(3))
    fitted = [json.loads((out / "fits" / f"fold{k}" / "run_configs.json").read_text())
              for k in range(3)]  # fmt: skip
    for k, held in enumerate(s["folds"]):
        lrs = {c["rl"]["lr"] for c in fitted[k].values()}
        assert held["setting"]["rl.lr"] not in lrs and len(lrs) == 2


def test_run_record_reads_the_setting_group_and_status(folder, capsys):
    from llm_runs import runlog as rl
    from llm_runs.config import TrainConfig

    r = cal.run_record("runs/h1")
    assert r["setting"]["rl.lr"] == 3e-3 and r["status"] == "finished" and r["n_eval"] == 100
    default = TrainConfig.from_dict({}).to_dict()["rl"]["staleness"]
    assert r["setting"]["rl.staleness"] == default  # left out of the config: its default
    assert r["group"] in cal.FORECAST_GROUPS and set(r["final"]) == {"X", "Y", "Z"}
    assert cal.run_record("runs/h1", ["rl.lr"])["setting"] == {"rl.lr": 3e-3}
    with pytest.raises(cal.ConfigError, match=r"no numeric rl\.nope"):
        cal.run_record("runs/h1", ["rl.nope"])
    rl.update_manifest(folder / "runs" / "h1", status="running")  # stopped early
    argv = ["evaluate", "--pilots", "runs/p0", "runs/p1", "runs/p2", "--heldout", "runs/h1",
            "--no-model", "--prefix", "0", "--draws", "20", "--out", "partial"]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["warning: runs/h1 is not finished (status running): its last evaluation "
                   "is scored as its final"]  # fmt: skip

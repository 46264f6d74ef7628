"""The CLI output rule on issue 72's cases (a second new-user trial): each bad command exits
2 with exactly one ``error:`` line on stderr, no traceback, before any work, and leaves
every pre-existing file as it was; sizes no machine can hold are refused by an estimate
naming the option and the size; integers and numbers are read by one parser everywhere.

The table runs as tests/test_cli_contract.py's does (forked from a server that imported the
packages once); :data:`ACCEPTED` holds the other half: values the one parser must accept,
checked by the command failing later, on something else.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.test_cli_contract import CAL, LLM, PNG, PY, SIM, _env, _snapshot
from tests.test_cli_contract import forks as forks  # the shared fork server fixture

CSV_HEAD = "run,step,agent,competence,n_eval\n"


def _csv(rows: list[tuple]) -> str:
    return CSV_HEAD + "".join(",".join(map(str, r)) + "\n" for r in rows)


def _setup(kind: str, t: Path) -> None:
    """The user's files of one case (``t`` is the case's temp folder)."""
    (t / "fig.png").write_bytes(PNG)
    if kind == "csv":
        ok = [("r", s, a, 0.5, 100) for s in (0, 10, 20) for a in "XYZ"]
        (t / "ok.csv").write_text(_csv(ok))
        big = [("r", s, a, 0.5, 100) for s in (0, 10**15, 2 * 10**15) for a in "XYZ"]
        (t / "steps2e15.csv").write_text(_csv(big))
        (t / "steps1e15.csv").write_text(_csv(big[:6]))
        ne = [("r", s, a, 0.5, "1e30" if s == 10 else 100) for s in (0, 10, 20) for a in "XYZ"]
        (t / "neval1e30.csv").write_text(_csv(ne))
    elif kind == "links":
        (t / "nowhere_link").symlink_to(t / "nowhere")
        (t / "to_fig.png").symlink_to(t / "fig.png")
        (t / "dir").mkdir()
        (t / "dir" / "keep.txt").write_text("mine")
    elif kind == "logs":
        (t / "empty.jsonl").write_text("")
        (t / "binary.jsonl").write_bytes(bytes(range(256)))
        (t / "nostep.csv").write_text("acc,loss\n0.5,1\n0.6,2\n")
        (t / "folder").mkdir()
        (t / "folder" / "binary.jsonl").write_bytes(bytes(range(256)))
    elif kind == "space_dup":
        (t / "space.yaml").write_text(
            "fields:\n  rl.lr: {low: 1e-3, high: 1e-2}\n  rl.lr: {low: 2e-2, high: 3e-2}\n"
            "budget_steps: 100\n"
        )
    elif kind == "pred_own":  # a folder predict wrote earlier
        from simulate import mark_output

        (t / "dir").mkdir()
        (t / "dir" / "prediction.json").write_text('{"earlier": 1}')
        mark_output(t / "dir", "calibrate predict", ["prediction.json"])
    elif kind == "fit_bad":  # a fit folder whose data.parquet / latent.npz are damaged
        import json

        import pandas as pd

        from simulate import ffl_spec

        rows = [("r", s, a, 0.5, 100) for s in (0, 10, 20) for a in "XYZ"]
        for name, broken in (("fitp", "data.parquet"), ("fitn", "latent.npz")):
            d = t / name
            d.mkdir()
            (d / "config.json").write_text("{}")
            (d / "network.json").write_text(json.dumps(ffl_spec("C1", "AND").to_dict()))
            pd.DataFrame(rows, columns=CSV_HEAD.strip().split(",")).to_parquet(d / "data.parquet")
            (d / "latent.npz").write_bytes(b"")
            (d / broken).write_bytes(b"not what it says")


#: A study driver (every one shares paper/_study.py's command line).
STUDY = [PY, "-m", "paper.forecast_round5", "--quick"]

# (id, user's files, command, words the error line must hold)
CASES = [
    # §1/§3 study drivers: a folder of the user's files is never written into; --out a file
    ("study-runs-a-users-folder", "files", [*STUDY, "--runs", "{t}", "--out", "{t}/res"],
     ["--runs", "never written into"]),
    ("study-out-a-file", "files", [*STUDY, "--runs", "{t}/r", "--out", "{t}/fig.png"],
     ["--out", "is a file"]),
    # §3 sizes no machine can hold, refused before any work with the option and the size
    ("population-replicates-1e9", "files",
     [*SIM, "population", "--replicates", "1e9"], ["--replicates 1000000000", "memory"]),
    ("population-generations-1e9", "files",
     [*SIM, "population", "--generations", "1e9"], ["--generations 1000000000", "memory"]),
    ("population-moran-N-1e9", "files",
     [*SIM, "population", "--model", "moran", "--N", "1e9"], ["--N 1000000000", "memory"]),
    ("trajectory-points-1e9", "files",
     [*SIM, "trajectory", "--motif", "C1", "--points", "1e9"], ["--points 1000000000", "memory"]),
    ("phase-axis-1e9-cells", "files",
     [*SIM, "phase", "--motif", "C1", "--x", "beta=0.5:5:1e9", "--out", "{t}/ph"],
     ["beta=0.5:5:1e9", "memory"]),
    ("phase-1e9-cells-two-axes", "files",
     [*SIM, "phase", "--motif", "C1", "--x", "beta=0.5:5:1e5", "--y", "K=0.1:0.9:1e4",
      "--out", "{t}/ph"], ["1000000000 cells", "memory"]),
    ("phase-points-1e9", "files",
     [*SIM, "phase", "--motif", "C1", "--x", "beta=0.5:5:3", "--points", "1e9",
      "--out", "{t}/ph"], ["--points 1000000000", "memory"]),
    ("fit-steps-2e15", "csv",
     [*CAL, "fit", "{t}/steps2e15.csv", "--motif", "C1", "--out", "{t}/f"],
     ["step must be at most"]),
    ("fit-steps-1e15", "csv",
     [*CAL, "fit", "{t}/steps1e15.csv", "--motif", "C1", "--out", "{t}/f"],
     ["last step 1000000000000000", "solver steps"]),
    ("fit-n-eval-1e30", "csv",
     [*CAL, "fit", "{t}/neval1e30.csv", "--motif", "C1", "--out", "{t}/f"],
     ["n_eval must be at most"]),
    # §3 tracebacks
    ("train-out-dangling-symlink", "links",
     [*LLM, "train", "--out", "{t}/nowhere_link"], ["symbolic link", "does not exist"]),
    ("train-overwrite-a-symlink", "links",
     [*LLM, "train", "--out", "{t}/nowhere_link", "--overwrite"], ["symbolic link"]),
    ("train-seed-minus-1", "files",
     [*LLM, "train", "--out", "{t}/r", "--set", "seed=-1"], ["seed", "[0, 2^32)"]),
    ("figure-out-xyz", "files",
     [*LLM, "figure", "{t}/run", "--out", "{t}/x.xyz"], ["--out", ".xyz"]),
    ("predict-corrupt-data-parquet", "fit_bad",
     [*CAL, "predict", "{t}/fitp", "--set", "rl.lr=1e-3"], ["data.parquet"]),
    ("predict-corrupt-latent-npz", "fit_bad",
     [*CAL, "predict", "{t}/fitn", "--set", "rl.lr=1e-3"], ["latent.npz"]),
    # §1 nothing lost
    ("figure-out-user-file", "files",
     [*LLM, "figure", "{t}/run", "--out", "{t}/fig.png"], ["--out", "already exists"]),
    ("figure-out-symlink-to-user-file", "links",
     [*LLM, "figure", "{t}/run", "--out", "{t}/to_fig.png"], ["--out", "already exists"]),
    ("figure-out-a-folder", "links",
     [*LLM, "figure", "{t}/run", "--out", "{t}/dir"], ["--out", "unknown file type"]),
    ("predict-out-own-prediction-needs-overwrite", "pred_own",
     [*CAL, "predict", "{t}/nofit", "--set", "rl.lr=1e-3", "--out", "{t}/dir"],
     ["prediction.json", "--overwrite"]),
    # §4 conflicts that one side silently won, values that mean nothing
    ("train-flag-and-set-one-field", "files",
     [*LLM, "train", "--out", "{t}/r", "--lr", "1e-3", "--set", "rl.lr=2e-3"],
     ["--lr 0.001", "rl.lr=2e-3", "give one"]),
    ("train-set-twice", "files",
     [*LLM, "train", "--out", "{t}/r", "--set", "rl.lr=1e-3", "--set", "rl.lr=2e-3"],
     ["rl.lr", "given twice"]),
    ("predict-set-twice", "files",
     [*CAL, "predict", "{t}/nofit", "--set", "rl.lr=1e-3", "--set", "rl.lr=2e-3"],
     ["--set rl.lr", "given twice"]),
    ("fit-agent-twice", "csv",
     [*CAL, "fit", "{t}/ok.csv", "--agent", "X=a", "--agent", "X=b", "--out", "{t}/f"],
     ["--agent X", "given twice"]),
    ("fit-n-eval-twice", "csv",
     [*CAL, "fit", "{t}/ok.csv", "--n-eval", "64", "--n-eval", "65", "--out", "{t}/f"],
     ["--n-eval", "given twice"]),
    ("fit-motif-auto-gate-xor", "csv",
     [*CAL, "fit", "{t}/ok.csv", "--motif", "auto", "--gate", "XOR", "--out", "{t}/f"],
     ["--gate XOR", "unknown gate"]),
    ("trajectory-schedule-negative-time", "files",
     [*SIM, "trajectory", "--motif", "C1", "--schedule", "off@-5"], ["off@-5", ">= 0"]),
    ("phase-x-and-y-one-parameter", "files",
     [*SIM, "phase", "--motif", "C1", "--x", "beta=0.5:5:3", "--y", "beta=1:2:3",
      "--out", "{t}/ph"], ["--x and --y both sweep beta"]),
    # §2 a YAML key twice: neither range silently wins
    ("recommend-space-duplicated-key", "space_dup",
     [*CAL, "recommend", "{t}/nofit", "--space", "{t}/space.yaml"],
     ["space.yaml", "duplicated key 'rl.lr'"]),
    # §5 messages that name what the user wrote
    ("simulate-motif-empty", "files", [*SIM, "trajectory", "--motif", ""],
     ["--motif is empty"]),
    ("train-motif-empty", "files", [*LLM, "train", "--out", "{t}/r", "--motif", ""],
     ["--motif is empty"]),
    ("fit-motif-empty", "csv", [*CAL, "fit", "{t}/ok.csv", "--motif", "", "--out", "{t}/f"],
     ["--motif ''", "empty"]),
    ("map-eta-longer-than-the-span", "files",
     [*SIM, "trajectory", "--motif", "C1", "--method", "map", "--eta", "1e308"],
     ["eta=1e+308", "t1 - t0"]),
    ("train-out-user-folder-no-overwrite-advice", "links",
     [*LLM, "train", "--out", "{t}/dir"], ["not a run folder", "never replaced"]),
    ("fit-empty-verl-log", "logs",
     [*CAL, "fit", "{t}/empty.jsonl", "--agent", "X=a", "--n-eval", "8", "--out", "{t}/f"],
     ["empty.jsonl", "an empty verl log"]),
    ("fit-binary-jsonl", "logs",
     [*CAL, "fit", "{t}/binary.jsonl", "--agent", "X=a", "--n-eval", "8", "--out", "{t}/f"],
     ["binary.jsonl", "not UTF-8 text"]),
    ("fit-folder-of-a-binary-jsonl", "logs",
     [*CAL, "fit", "{t}/folder", "--agent", "X=a", "--n-eval", "8", "--out", "{t}/f"],
     ["folder/binary.jsonl", "not UTF-8 text"]),
    ("fit-csv-without-a-step-column", "logs",
     [*CAL, "fit", "{t}/nostep.csv", "--out", "{t}/f"],
     ["nostep.csv", "neither a long table", "W&B"]),
    # §5 one integer parser: integral numbers as written, a fraction refused
    ("predict-n-eval-2.5", "files",
     [*CAL, "predict", "{t}/nofit", "--set", "rl.lr=1e-3", "--n-eval", "2.5"],
     ["--n-eval", "'2.5' is not an integer"]),
    ("train-steps-2.5", "files",
     [*LLM, "train", "--out", "{t}/r", "--steps", "2.5"], ["--steps", "not an integer"]),
    ("fit-n-eval-word", "csv",
     [*CAL, "fit", "{t}/ok.csv", "--n-eval", "many", "--out", "{t}/f"], ["--n-eval"]),
]  # fmt: skip

# (id, command, words of the later error that shows the value was read as given)
ACCEPTED = [
    ("predict-n-eval-1e3", [*CAL, "predict", "{t}/nofit", "--set", "rl.lr=1e-3",
                            "--n-eval", "1e3"], ["nofit"]),
    ("predict-n-eval-64.0", [*CAL, "predict", "{t}/nofit", "--set", "rl.lr=1e-3",
                             "--n-eval", "64.0"], ["nofit"]),
    ("predict-steps-1e3", [*CAL, "predict", "{t}/nofit", "--set", "rl.lr=1e-3",
                           "--steps", "1e3"], ["nofit"]),
    ("train-steps-1e3", [*LLM, "train", "--out", "{t}/r", "--steps", "1e3",
                         "--set", "rl.lr=yes"], ["rl.lr", "'yes'"]),
    ("trajectory-points-1e3", [*SIM, "trajectory", "--motif", "Q9", "--points", "1e3"],
     ["Q9"]),
    ("population-replicates-1e1", [*SIM, "population", "--replicates", "1e1", "--p0", "2"],
     ["--p0"]),
    ("recommend-grid-negative-first", [*CAL, "recommend", "{t}/nofit", "--param", "rl.lr",
                                       "--grid", "-1e-3,1e-3"], ["nofit"]),
    ("fit-n-eval-1e3", [*CAL, "fit", "{t}/none.csv", "--n-eval", "1e3", "--out", "{t}/f"],
     ["none.csv"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("setup", "argv", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_bad_command_exits_2_with_one_error_line_and_changes_nothing(
    tmp_path, forks, setup, argv, words
):
    _setup(setup, tmp_path)
    before = _snapshot(tmp_path)
    paths = sorted(tmp_path.rglob("*"))
    links = {p.name: os.readlink(p) for p in tmp_path.iterdir() if p.is_symlink()}
    res = forks.run([a.format(t=tmp_path) for a in argv], cwd=tmp_path, timeout=300)
    lines = [x for x in res.stderr.splitlines() if x.strip() and not x.startswith("warning:")]
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr[-2000:]
    assert "Traceback" not in res.stderr and "usage:" not in res.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert _snapshot(tmp_path) == before  # nothing written, nothing replaced
    assert {p.name: os.readlink(p) for p in tmp_path.iterdir() if p.is_symlink()} == links
    assert sorted(tmp_path.rglob("*")) == paths  # no folder, temp or lock left


@pytest.mark.parametrize(("argv", "words"), [c[1:] for c in ACCEPTED],
                         ids=[c[0] for c in ACCEPTED])  # fmt: skip
def test_an_integral_number_as_written_is_accepted(tmp_path, forks, argv, words):
    """The value parses (``1e3``, ``64.0``, ``-1e-3,...``); the command then fails on the
    other thing the case gets wrong, not on the value."""
    res = forks.run([a.format(t=tmp_path) for a in argv], cwd=tmp_path, timeout=300)
    lines = [x for x in res.stderr.splitlines() if x.strip() and not x.startswith("warning:")]
    assert res.returncode == 2 and len(lines) == 1, res.stderr[-2000:]
    assert "integer" not in lines[0] and "expected one argument" not in lines[0], lines[0]
    for w in words:
        assert w in lines[0], (w, lines[0])


def test_the_one_parsers():
    import argparse

    from simulate import ArgumentParser, ConfigError, parse_int

    assert [parse_int(s) for s in ("7", "1e3", "64.0", "0x10", "-3", "1E2")] == [
        7, 1000, 64, 16, -3, 100
    ]  # fmt: skip
    for bad in ("2.5", "inf", "nan", "1_0", "yes", "", "1e400"):
        with pytest.raises(ConfigError):
            parse_int(bad)
    p = ArgumentParser(prog="t")
    group = p.add_argument_group("g")  # groups read numbers by the same rule
    group.add_argument("--n", type=int)
    p.add_argument("--x", type=float)
    p.add_argument("--grid")
    got = p.parse_args(["--n", "1e3", "--x", "2e-3", "--grid", "-1e-3,1e-3"])
    assert (got.n, got.x, got.grid) == (1000, 0.002, "-1e-3,1e-3")
    assert isinstance(got.n, int)
    with pytest.raises(SystemExit):
        p.parse_args(["--x", "1_0"])
    assert isinstance(argparse.ArgumentParser, type)


def test_a_second_command_into_a_held_output_is_refused(tmp_path, forks):
    """Two fits (or predicts, recommends) into one ``--out`` at once: the second is refused
    while the first holds the output (issue 72 §1: the first fit was silently lost)."""
    from simulate import OutputError, output_lock

    (tmp_path / "ok.csv").write_text(_csv([("r", s, a, 0.5, 100) for s in (0, 10) for a in "XYZ"]))
    out = tmp_path / "fit"
    with output_lock(out, command="calibrate fit"):
        lock = next(p for p in tmp_path.iterdir() if p.name.endswith(".lock"))
        assert str(os.getpid()) in lock.read_text()
        with pytest.raises(OutputError, match="in use by calibrate fit pid"):
            with output_lock(out, command="calibrate fit"):
                pass
        for argv in (
            [*CAL, "fit", str(tmp_path / "ok.csv"), "--motif", "C1", "--out", str(out)],
            [*CAL, "predict", str(tmp_path / "nofit"), "--set", "rl.lr=1e-3", "--out", str(out)],
            [*CAL, "recommend", str(tmp_path / "nofit"), "--out", str(out)],
        ):
            res = forks.run(argv, cwd=tmp_path, timeout=300)
            assert res.returncode == 2, res.stderr[-2000:]
            assert "in use by calibrate fit pid" in res.stderr, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.csv"]  # the lock is gone
    with output_lock(out, command="calibrate fit"):  # and can be taken again
        pass


def test_long_names_are_replaced_under_a_short_working_name(tmp_path):
    """``--overwrite`` of a 250-character run folder (issue 72 §3: ``OSError`` on the rename
    to ``.NAME.old-PID``) and an atomic folder of the same name."""
    from llm_runs._runfolder import open_run_folder
    from simulate import atomic_dir, sibling

    out = tmp_path / ("r" * 250)
    assert len(sibling(out, "old-12345").name) <= 255
    out.mkdir()
    (out / "manifest.json").write_text("{}")
    (out / "competence.jsonl").write_text("")
    lock, resumed = open_run_folder(out, overwrite=True)
    lock.release()
    assert not resumed and out.is_dir() and not (out / "manifest.json").exists()
    with atomic_dir(out) as tmp:
        (tmp / "x.txt").write_text("x")
    assert (out / "x.txt").read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]


def test_the_same_from_a_fresh_interpreter(tmp_path):
    """One case per entry point as a user runs it (no fork server)."""
    for argv in ([*SIM, "population", "--replicates", "1e9"],
                 [*LLM, "train", "--out", "r", "--lr", "1e-3", "--set", "rl.lr=2e-3"]):  # fmt: skip
        res = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=_env())
        lines = [x for x in res.stderr.splitlines() if x.strip()]
        assert res.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ")
    assert list(tmp_path.iterdir()) == []


def test_ckpt_every_0_is_documented_where_a_user_looks(forks, tmp_path):
    """``--ckpt-every 0`` (no checkpoints: a killed run cannot resume) is said in the help;
    train also says it when it starts (llm_runs/__main__.py)."""
    res = forks.run([*LLM, "train", "--help"], cwd=tmp_path, timeout=120)
    assert res.returncode == 0
    text = " ".join(res.stdout.split())
    assert "0: no checkpoints, so a killed run cannot resume" in text


def test_a_study_fit_without_runs_says_so() -> None:
    """A study's fit phase with no pilot runs fails with a message (not "fit done (0 s)")."""
    from paper._study import fit_pilots

    with pytest.raises(RuntimeError, match="no runs to fit for the pilots"):
        fit_pilots([], Path("/nonexistent/fit"), what="the pilots")

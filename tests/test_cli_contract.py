"""The CLI output rule (docs/cli.md), one table for the three packages and paper/regime_map.py:
a bad command exits 2 with exactly one ``error:`` line on stderr, no traceback, before any work,
and leaves every pre-existing file as it was (issue 36: the 47 failures of a new-user trial).

Each case runs the real command in a process of its own, in a fresh temp folder that
``setup`` fills with a user's files; the files are compared byte for byte afterwards. The
default suite forks each command from a server that imported the packages once
(``tests/_forkrun.py``: ~2 s of imports per command saved); :data:`REAL` cases also run as
``python -m ...`` from a fresh interpreter, and every case does under ``-m slow``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._forkrun import ForkRunner

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
SIM, CAL, LLM = [PY, "-m", "simulate"], [PY, "-m", "calibrate"], [PY, "-m", "llm_runs"]
REGIME_MAP = [PY, "-m", "paper.regime_map", "--quick"]
PAPER = {n: [PY, "-m", f"paper.{n}"] for n in (
    "hypotheses_study", "pool_study", "testbed_study", "llm_c1_vs_i1", "llm_sign_check",
    "make_figures", "recommend_bench")}  # fmt: skip
PNG = b"\x89PNG\r\n\x1a\n user's figure"


def _fake_fit(d: Path) -> None:
    """A folder that calibrate fit wrote, as far as the output rule sees (not loadable)."""
    d.mkdir(parents=True)
    (d / "config.json").write_text("{}")
    (d / "network.json").write_text("{}")


def _setup(kind: str, t: Path) -> None:
    """The user's files of one case (``t`` is the case's temp folder)."""
    if kind == "keep_dir":
        (t / "dir").mkdir()
        (t / "dir" / "keep.txt").write_text("mine")
    elif kind == "files":
        (t / "mine.xml").write_text("<mine/>")
        (t / "fig.png").write_bytes(PNG)
        (t / "a_file").write_text("not a folder")
    elif kind == "best_dir":
        (t / "dir").mkdir()
        (t / "dir" / "best.yaml").write_text("steps: 7\n")
    elif kind == "fit_with_best":
        _fake_fit(t / "fit")
        (t / "fit" / "best.yaml").write_text("steps: 7\n")
    elif kind == "run_dir":
        (t / "run").mkdir()
        (t / "run" / "manifest.json").write_text("{}")
        (t / "run" / "competence.jsonl").write_text("")
    elif kind == "pred_dir":
        (t / "dir").mkdir()
        (t / "dir" / "prediction.json").write_text('{"mine": 1}')
        (t / "dir" / "notes.txt").write_text("mine")
    elif kind == "bad_config":
        (t / "dir").mkdir()
        (t / "dir" / "config.json").write_text("not json")
        (t / "foreign").mkdir()
        (t / "foreign" / "config.json").write_text('{"lr": 1}')
        (t / "a_file").write_text("not a folder")


# (id, user's files, command, words the error line must hold)
CASES = [
    # §1 nothing a user owns is overwritten
    ("phase-overwrite-foreign", "keep_dir",
     [*SIM, "phase", "--motif", "C1", "--x", "beta=0.5:5:3", "--out", "{t}/dir", "--overwrite",
      "--no-figure", "--no-progress"], ["--out", "never"]),
    ("export-sbml-existing", "files",
     [*SIM, "export-sbml", "--motif", "C1", "--out", "{t}/mine.xml"], ["already exists"]),
    ("trajectory-plot-existing", "files",
     [*SIM, "trajectory", "--motif", "C1", "--plot", "{t}/fig.png"], ["--plot", "exists"]),
    ("recommend-out-user-best", "best_dir",
     [*CAL, "recommend", "{t}/nofit", "--out", "{t}/dir"], ["--out", "other files"]),
    ("recommend-fit-folder-user-best", "fit_with_best",
     [*CAL, "recommend", "{t}/fit"], ["best.yaml", "did not write"]),
    ("recommend-out-run-folder", "run_dir",
     [*CAL, "recommend", "{t}/nofit", "--out", "{t}/run"], ["llm_runs train"]),
    ("predict-plot-existing", "files",
     [*CAL, "predict", "{t}/nofit", "--set", "rl.lr=1e-3", "--plot", "{t}/fig.png"],
     ["--plot", "exists"]),
    ("predict-out-user-prediction", "pred_dir",
     [*CAL, "predict", "{t}/nofit", "--set", "rl.lr=1e-3", "--out", "{t}/dir"], ["--out"]),
    ("predict-out-user-folder-overwrite", "pred_dir",
     [*CAL, "predict", "{t}/nofit", "--set", "rl.lr=1e-3", "--out", "{t}/dir", "--overwrite"],
     ["--out", "other files"]),
    ("fit-out-user-folder", "keep_dir",
     [*CAL, "fit", "{t}/none.csv", "--out", "{t}/dir"], ["--out", "other files", "never"]),
    ("fit-out-run-folder", "run_dir",
     [*CAL, "fit", "{t}/none.csv", "--out", "{t}/run"], ["--out", "llm_runs train"]),
    ("train-overwrite-user-folder", "keep_dir",
     [*LLM, "train", "--out", "{t}/dir", "--overwrite"], ["not a run folder", "refusing"]),
    ("simulate-demo-overwrite-user-folder", "keep_dir",
     [*SIM, "demo", "--out", "{t}/dir", "--overwrite"], ["--out", "never"]),
    ("demo-overwrite-user-folder", "keep_dir",
     [*CAL, "demo", "--quick", "--out", "{t}/dir", "--overwrite"], ["--out", "never"]),
    ("regime-map-out-user-folder", "keep_dir",
     [*REGIME_MAP, "--out", "{t}/dir", "--runs", "{t}/runs"], ["--out", "other files"]),
    ("regime-map-out-a-file", "bad_config",
     [*REGIME_MAP, "--out", "{t}/a_file", "--runs", "{t}/runs"], ["not a folder"]),
    ("regime-map-out-non-json-config", "bad_config",
     [*REGIME_MAP, "--out", "{t}/dir", "--runs", "{t}/runs"], ["--out"]),
    ("regime-map-out-foreign-config", "bad_config",
     [*REGIME_MAP, "--out", "{t}/foreign", "--runs", "{t}/runs"], ["--out"]),
    ("regime-map-runs-a-file", "bad_config",
     [*REGIME_MAP, "--out", "{t}/new", "--runs", "{t}/a_file"], ["--runs", "not a folder"]),
    # §4 exit 2 with one line, before the work
    ("predict-out-proc", "files",
     [*CAL, "predict", "{t}/nofit", "--set", "rl.lr=1e-3", "--out", "/proc/x"], ["--out"]),
    ("predict-plot-proc", "files",
     [*CAL, "predict", "{t}/nofit", "--set", "rl.lr=1e-3", "--plot", "/proc/x.png"], ["--plot"]),
    ("predict-plot-unknown-type", "files",
     [*CAL, "predict", "{t}/nofit", "--set", "rl.lr=1e-3", "--plot", "{t}/x.xyz"],
     ["--plot", ".xyz"]),
    ("fit-out-300-characters", "files",
     [*CAL, "fit", "{t}/none.csv", "--out", "{t}/" + "o" * 300], ["--out", "255"]),
    ("trajectory-t1-1e12", "files",
     [*SIM, "trajectory", "--motif", "C1", "--t1", "1e12", "--json"], ["t1=1e+12"]),
    ("recommend-empty-grid", "files", [*CAL, "recommend", "{t}/nofit", "--grid", ""], ["--grid"]),
    ("argparse-simulate", "files", [*SIM, "trajectory", "--bogus"], ["--bogus"]),
    ("argparse-calibrate", "files", [*CAL, "predict"], ["fit_dir"]),
    ("argparse-llm-runs", "files", [*LLM, "train", "--steps", "x"], ["--steps"]),
    ("argparse-regime-map", "files", [*REGIME_MAP, "--workers", "x"], ["--workers"]),
    ("argparse-hypotheses-study", "files", [*PAPER["hypotheses_study"], "--workers", "x"],
     ["--workers"]),
    ("argparse-pool-study", "files", [*PAPER["pool_study"], "--phase", "lunch"], ["--phase"]),
    ("argparse-testbed-study", "files", [*PAPER["testbed_study"], "--bogus"], ["--bogus"]),
    ("argparse-llm-c1-vs-i1", "files", [*PAPER["llm_c1_vs_i1"], "--steps", "x"], ["--steps"]),
    ("argparse-llm-sign-check", "files", [*PAPER["llm_sign_check"], "--bogus"], ["--bogus"]),
    ("argparse-make-figures", "files", [*PAPER["make_figures"], "--bogus"], ["--bogus"]),
    ("argparse-recommend-bench", "files", [*PAPER["recommend_bench"], "--rng-seeds", "x"],
     ["--rng-seeds"]),
    # §3 numbers and words parse as written
    ("llm-runs-set-unclosed-list", "files",
     [*LLM, "train", "--out", "{t}/r", "--set", "rl.lr=[1"], ["rl.lr", "cannot parse"]),
    ("calibrate-set-1_0e-3", "files",
     [*CAL, "predict", "{t}/nofit", "--set", "rl.lr=1_0e-3"], ["not a number"]),
    ("calibrate-set-task-name-no", "files",
     [*CAL, "predict", "{t}/nofit", "--set", "task.name=no"], ["task.name", "'no'"]),
    ("calibrate-set-gate-off", "files",
     [*CAL, "predict", "{t}/nofit", "--set", "network.gate=off"], ["network.gate", "'off'"]),
    ("calibrate-grid-1_0", "files",
     [*CAL, "recommend", "{t}/nofit", "--param", "rl.lr", "--grid", "1e-3,1_0"],
     ["--grid", "'1_0'"]),
    ("llm-runs-set-lr-yes", "files",
     [*LLM, "train", "--out", "{t}/r", "--set", "rl.lr=yes"], ["rl.lr", "number", "'yes'"]),
    ("llm-runs-set-lr-1_0e-3", "files",
     [*LLM, "train", "--out", "{t}/r", "--set", "rl.lr=1_0e-3"], ["rl.lr", "'1_0e-3'"]),
    ("llm-runs-set-gate-off", "files",
     [*LLM, "train", "--out", "{t}/r", "--set", "network.gate=off"], ["unknown gate 'off'"]),
    ("llm-runs-set-staleness-2.5", "files",
     [*LLM, "train", "--out", "{t}/r", "--set", "rl.staleness=2.5"], ["rl.staleness", "2.5"]),
    ("simulate-param-1_0", "files",
     [*SIM, "trajectory", "--motif", "C1", "--param", "beta=1_0"], ["--param beta", "'1_0'"]),
    ("simulate-axis-1_0", "files",
     [*SIM, "phase", "--motif", "C1", "--x", "beta=1_0:5:3", "--out", "{t}/ph"],
     ["beta=1_0:5:3"]),
]  # fmt: skip


#: Cases that also run from a fresh interpreter in the default suite (one per entry point).
REAL = {"phase-overwrite-foreign", "recommend-out-user-best", "llm-runs-set-lr-1_0e-3",
        "predict-out-user-folder-overwrite", "regime-map-out-user-folder"}  # fmt: skip


def _snapshot(t: Path) -> dict[str, bytes]:
    return {str(p.relative_to(t)): p.read_bytes() for p in sorted(t.rglob("*")) if p.is_file()}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}  # as a user runs it
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])  # this tree
    return env


@pytest.fixture(scope="module")
def forks():
    runner = ForkRunner(_env())
    yield runner
    runner.close()


def _params(real_only: bool) -> list:
    return [
        pytest.param(*c[1:], id=c[0], marks=() if c[0] in REAL or not real_only else
                     pytest.mark.slow)
        for c in CASES
    ]  # fmt: skip


@pytest.mark.parametrize(("setup", "argv", "words"), _params(False))
def test_a_bad_command_exits_2_with_one_error_line_and_changes_nothing(
    tmp_path, forks, setup, argv, words
):
    _check(tmp_path, setup, argv, words, forks.run)


@pytest.mark.parametrize(("setup", "argv", "words"), _params(True))
def test_the_same_from_a_fresh_interpreter(tmp_path, setup, argv, words):
    def run(argv, cwd, timeout):
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=_env()
        )

    _check(tmp_path, setup, argv, words, run)


def _check(tmp_path: Path, setup: str, argv: list[str], words: list[str], run) -> None:
    _setup(setup, tmp_path)
    before = _snapshot(tmp_path)
    res = run([a.format(t=tmp_path) for a in argv], cwd=tmp_path, timeout=300)
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr[-2000:]
    assert "Traceback" not in res.stderr and "usage:" not in res.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert _snapshot(tmp_path) == before  # nothing written, nothing replaced
    assert not any(p.name.startswith(".") for p in tmp_path.rglob("*"))  # no temp or marker


def test_a_command_may_rewrite_what_it_wrote_and_the_marker_says_so(tmp_path, forks):
    """The other half of the rule: a second run into the command's own output is allowed."""
    from simulate import MARK_FILE, folder_kind

    def rc(argv: list[str]) -> int:
        return forks.run(argv, cwd=ROOT).returncode

    out = tmp_path / "n.xml"
    argv = [*SIM, "export-sbml", "--motif", "C1", "--out", str(out)]
    assert rc(argv) == 0
    first = out.read_bytes()
    assert rc(argv) == 2 and out.read_bytes() == first
    assert rc([*argv, "--overwrite"]) == 0
    fig = tmp_path / "t.png"  # trajectory --plot: the same rule for one figure
    argv = [*SIM, "trajectory", "--motif", "C1", "--t1", "2", "--plot", str(fig)]
    assert rc(argv) == 0
    first = fig.read_bytes()
    assert rc(argv) == 2 and fig.read_bytes() == first
    assert rc([*argv, "--overwrite"]) == 0
    d = tmp_path / "d"
    d.mkdir()
    (d / "x.txt").write_text("x")
    assert folder_kind(d) is None
    (tmp_path / "m").mkdir()
    from simulate import mark_output

    mark_output(tmp_path / "m", "calibrate predict", ["prediction.json"])
    assert folder_kind(tmp_path / "m") == "calibrate predict"
    assert json.loads((tmp_path / "m" / MARK_FILE).read_text())["files"] == {
        "prediction.json": "calibrate predict"
    }


def test_the_fork_runner_reports_what_python_would(tmp_path, forks):
    """Exit status, both streams, the folder and a crash's traceback, as from ``python``."""
    script = tmp_path / "s.py"
    script.write_text(
        "import sys, pathlib\n"
        "pathlib.Path('here.txt').write_text(sys.argv[1])\n"
        "print('out'); print('err', file=sys.stderr)\n"
        "if sys.argv[1] == 'crash': raise ValueError('boom')\n"
        "sys.exit(int(sys.argv[1]))\n"
    )
    for arg, code in (("0", 0), ("2", 2), ("crash", 1)):
        res = forks.run([PY, str(script), arg], cwd=tmp_path)
        real = subprocess.run([PY, str(script), arg], capture_output=True, text=True, cwd=tmp_path)
        assert res.returncode == real.returncode == code
        assert res.stdout == real.stdout == "out\n"
        assert res.stderr.splitlines()[0] == "err"
        assert ("Traceback" in res.stderr) == (arg == "crash") == ("Traceback" in real.stderr)
        assert (tmp_path / "here.txt").read_text() == arg
    res = forks.run([PY, "-m", "simulate", "trajectory", "--motif", "Q9"], cwd=tmp_path)
    real = subprocess.run([PY, "-m", "simulate", "trajectory", "--motif", "Q9"], cwd=tmp_path,
                          capture_output=True, text=True, env=_env())  # fmt: skip
    assert (res.returncode, res.stderr) == (real.returncode, real.stderr)
    assert res.returncode == 2

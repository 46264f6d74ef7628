"""``python -m simulate``: JSON output, figures, errors."""

import json
import subprocess
import sys

import pytest

from simulate import MARK_FILE
from simulate._cli._core import main


def _run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_motifs_lists_16_presets(capsys):
    code, out, _ = _run(capsys, "motifs", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 16
    assert {(r["motif"], r["gate"]) for r in rows} >= {("C1", "AND"), ("I4", "OR")}
    i1 = next(r for r in rows if r["motif"] == "I1")
    assert (i1["X->Y"], i1["X->Z"], i1["Y->Z"], i1["type"]) == (1, 1, -1, "incoherent")


def test_trajectory_json_and_plot(capsys, tmp_path):
    png = tmp_path / "c1.png"
    code, out, _ = _run(
        capsys,
        "trajectory",
        "--motif",
        "C1",
        "--gate",
        "AND",
        "--kinetics",
        "alon",
        "--param",
        "beta=5",
        "--param",
        "gamma=1",
        "--schedule",
        "on@0,off@10",
        "--t1",
        "20",
        "--json",
        "--plot",
        str(png),
    )
    data = json.loads(out)
    assert code == 0
    assert len(data["t"]) == 1001 and data["t"][-1] == 20.0
    assert set(data["states"]) == {"X", "Y", "Z"} and len(data["states"]["Z"]) == 1001
    assert data["regime"] == "converged"
    assert data["metrics"]["Z"]["t50_off"] == pytest.approx(0.6931, abs=1e-3)
    assert data["stability"]["max_real_eigenvalue"] == pytest.approx(-1.0, abs=1e-9)
    assert png.stat().st_size > 10_000


def test_trajectory_points_and_spec_file(capsys, tmp_path):
    import simulate as sim

    spec = sim.save_spec(sim.ffl_spec("I1", "OR"), tmp_path / "net.yaml")
    code, out, _ = _run(
        capsys,
        "trajectory",
        "--motif",
        str(spec),
        "--kinetics",
        "competence",
        "--points",
        "51",
        "--t1",
        "50",
        "--json",
    )
    data = json.loads(out)
    assert code == 0 and len(data["t"]) == 51 and data["network"] == "I1-OR"


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--motif", "C9"], "neither a preset"),
        (["--motif", "C1", "--param", "beta"], "NAME=VALUE"),
        (["--motif", "C1", "--param", "beta=abc"], "not a number"),
        (["--motif", "C1", "--param", "zeta=1"], "unknown parameter zeta"),
        (["--motif", "C1", "--param", "K[X->Y]=-2"], "outside its domain"),
        (["--motif", "C1", "--schedule", "on-0"], "schedule item"),
        (["--network", "/no/such/file.json"], "not found"),
        ([], "give --motif"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(capsys, argv, match):
    code, _, err = _run(capsys, "trajectory", *argv)
    assert code == 2 and match in err and err.startswith("error:")


def test_argparse_rejects_bad_choices(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["trajectory", "--motif", "C1", "--method", "rk4"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_module_entry_point_runs():
    r = subprocess.run(
        [sys.executable, "-m", "simulate", "motifs"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0 and "I4-OR" in r.stdout


@pytest.mark.slow  # ~30 s quiet: make test-slow
def test_demo_writes_figure_and_summary(capsys, tmp_path):
    code, out, _ = _run(capsys, "demo", "--out", str(tmp_path))
    data = json.loads((tmp_path / "presets.json").read_text())
    assert code == 0 and len(data["presets"]) == 16
    assert (tmp_path / "presets.png").stat().st_size > 50_000
    c1, c1_or = data["presets"]["C1-AND"], data["presets"]["C1-OR"]
    # sign-sensitive delays: C1-AND slow ON / fast OFF; C1-OR the reverse
    assert c1["z_t50_on"] > 1.2 * c1["z_t50_off"] and c1_or["z_t50_off"] > 2 * c1_or["z_t50_on"]
    assert data["presets"]["I1-AND"]["regime"] == "overshoot/pulse"
    assert "C1-AND" in out


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["phase", "--motif", "C1", "--x", "beta=1:5:4", "--t1", "-1"], "--t1 must be greater"),
        (["phase", "--motif", "C1", "--x", "beta=1:5:4", "--t1", "nan"], "--t1 must be a finite"),
        (["phase", "--motif", "C1", "--x", "beta=1:5:4", "--points", "1"], "--points must be >= 2"),
        (["phase", "--motif", "C1", "--x", "eta=0.1:1:4", "--steps", "0"], "--steps must be >= 1"),
        (["phase", "--motif", "C1", "--x", "beta=1:5:4", "--chunk", "0"], "--chunk must be >= 1"),
        (["phase", "--motif", "C1", "--x", "sigma=0.1:1:4", "--replicates", "0"], "--replicates"),
        (["phase", "--motif", "C1", "--x", "beta=1:5:4", "--tau", "0"], "--tau must be > 0"),
        (["phase", "--motif", "C1", "--x", "beta=1:5:4", "--sigma", "-1"], "--sigma must be >= 0"),
        (["trajectory", "--motif", "C1", "--t0", "5", "--t1", "5"], "--t1 must be greater"),
        (["trajectory", "--motif", "C1", "--eta", "-0.1"], "--eta must be > 0"),
        (["trajectory", "--motif", "C1", "--delay-stages", "-1"], "--delay-stages must be >= 0"),
        (["export-sbml", "--motif", "C1", "--tau", "inf", "--out", "x.xml"], "--tau must be a fin"),
        (["export-sbml", "--motif", "C1", "--feedback-K", "0", "--out", "x.xml"], "--feedback-K"),
    ],
)
def test_bad_numbers_exit_2_before_any_work(capsys, tmp_path, monkeypatch, argv, match):
    """Issue 16 §4: ``phase --t1 -1`` labelled every cell converged; now every command checks."""
    monkeypatch.chdir(tmp_path)
    code, _, err = _run(capsys, *argv, *(["--out", "p"] if argv[0] == "phase" else []))
    assert code == 2 and err.startswith("error:") and match in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "p").exists() and not (tmp_path / "x.xml").exists()


@pytest.mark.parametrize("command", ["trajectory", "phase", "export-sbml"])
def test_non_utf8_spec_file_exits_2_with_one_line(capsys, tmp_path, command):
    spec = tmp_path / "net.yaml"
    spec.write_bytes(b"name: caf\xe9\nnodes: [X, Y]\n")
    extra = {
        "phase": ["--x", "beta=1:5:2", "--out", str(tmp_path / "p")],
        "export-sbml": ["--out", str(tmp_path / "n.xml")],
    }.get(command, [])
    code, _, err = _run(capsys, command, "--motif", str(spec), *extra)
    assert code == 2 and err.startswith("error:") and "not UTF-8" in err
    assert err.count("\n") == 1


def _unwritable(tmp_path, kind):
    """A folder no output can go into: read-only (skipped as root), or below a plain file."""
    import os

    if kind == "file":
        f = tmp_path / "plain_file"
        f.write_text("")
        return f
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    if os.access(ro, os.W_OK):  # running as root: permissions do not bind
        pytest.skip("the file system ignores permissions here")
    return ro


@pytest.mark.parametrize(
    "argv",
    [
        ["phase", "--motif", "C1", "--x", "beta=1:5:2", "--out", "{ro}/p"],
        ["trajectory", "--motif", "C1", "--plot", "{ro}/t.png"],
        ["export-sbml", "--motif", "C1", "--out", "{ro}/n.xml"],
        ["demo", "--out", "{ro}/d"],
    ],
)
@pytest.mark.parametrize("kind", ["file", "read-only"])
def test_unwritable_output_fails_before_computing(capsys, tmp_path, monkeypatch, argv, kind):
    """Issue 16 §3: a traceback came after all the work; now exit 2 before any solve."""
    import simulate._solve as solve_module

    ro = _unwritable(tmp_path, kind)

    def no_solving(*a, **k):
        raise AssertionError("solved before checking the output path")

    monkeypatch.setattr(solve_module, "solve", no_solving)
    code, _, err = _run(capsys, *[a.format(ro=ro) for a in argv])
    assert code == 2 and err.startswith("error:"), err
    assert ("not writable" if kind == "read-only" else "is not a folder") in err, err


def test_phase_refuses_a_non_empty_out_and_writes_strict_json(capsys, tmp_path):
    out = tmp_path / "p"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    argv = [
        "phase",
        "--motif",
        "C1",
        "--x",
        "beta=0.5:5:3",
        "--out",
        str(out),
        "--no-figure",
        "--no-progress",
        "--no-cache",
    ]
    code, _, err = _run(capsys, *argv)
    assert code == 2 and "other files" in err and (out / "mine.txt").read_text() == "keep me"
    # issue 36: --overwrite replaces only a folder phase made, never a user's files
    code, _, err = _run(capsys, *argv, "--overwrite")
    assert code == 2 and "never" in err and (out / "mine.txt").read_text() == "keep me"
    (out / "mine.txt").unlink()
    code, _, err = _run(capsys, *argv)
    assert code == 0, err
    code, _, err = _run(capsys, *argv)  # its own folder: replaced only with --overwrite
    assert code == 2 and "--overwrite" in err, err
    code, _, err = _run(capsys, *argv, "--overwrite")
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == [
        MARK_FILE,
        "arrays.npz",
        "summary.json",
        "table.csv",
        "table.parquet",
    ]
    text = (out / "summary.json").read_text()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in summary.json"))
    assert not list(tmp_path.glob(".p.*"))  # no temporary folder left behind

"""``python -m simulate``: JSON output, figures, errors."""

import json
import subprocess
import sys

import pytest

from simulate._cli import main


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

"""Every ``python -m simulate`` command computes in float64 by itself (issue 16 §5).

Each test runs the CLI in a subprocess whose environment has no ``JAX_ENABLE_X64`` (the test
suite sets it, which once hid float32 CLIs), and checks a number that float32 gets wrong.
"""

import json
import os
import subprocess
import sys

import pytest

HOPF = ["--motif", "C1", "--feedback", "-1", "--feedback-K", "0.3", "--delay-stages", "3"]


def _cli(*argv: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    return subprocess.run(
        [sys.executable, "-m", "simulate", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_phase_finds_the_readme_hopf_point_in_float64(tmp_path):
    """The README's Hopf example: float32 reported no boundary; float64 has tau = 0.98660."""
    out = tmp_path / "hopf"
    r = _cli(
        "phase",
        *HOPF,
        "--param",
        "beta=5",
        "--x",
        "tau=0.1:30:6:log",
        "--t1",
        "100",
        "--out",
        str(out),
        "--no-figure",
        "--no-progress",
        "--no-cache",
    )
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["dtype"] == "float64"
    (b,) = summary["boundaries"]["C1-AND"]
    assert b["kind"] == "Hopf" and b["value"] == pytest.approx(0.98660, abs=2e-4)


def test_trajectory_finds_the_unstable_equilibrium():
    """Past the Hopf point (tau = 2) float32 said ``found: false``; float64 finds the
    equilibrium with max Re lambda = +0.0235 (cross-checked by the 1-D sweep's bisection)."""
    r = _cli(
        "trajectory",
        *HOPF,
        "--param",
        "beta=5",
        "--tau",
        "2",
        "--t1",
        "100",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["dtype"] == "float64"
    st = data["stability"]
    assert st["found"] is True
    assert st["max_real_eigenvalue"] == pytest.approx(0.023498, abs=1e-5)


def test_trajectory_switches_at_exactly_ten():
    """float32 saved t = 9.999999 where the schedule switches at 10."""
    r = _cli("trajectory", "--motif", "C1", "--schedule", "on@0,off@10", "--t1", "20", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["dtype"] == "float64" and data["t"][500] == 10.0
    assert data["metrics"]["Z"]["t50_off"] == pytest.approx(0.693147, abs=1e-3)


def test_trajectory_float32_is_asked_for_and_recorded():
    r = _cli(
        "trajectory",
        "--motif",
        "C1",
        "--schedule",
        "on@0,off@10",
        "--points",
        "101",
        "--float32",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["dtype"] == "float32"


def test_export_sbml_writes_the_numbers_given(tmp_path):
    out = tmp_path / "c1.xml"
    r = _cli(
        "export-sbml",
        "--motif",
        "C1",
        "--param",
        "gamma=0.3",
        "--schedule",
        "on@0,off@10",
        "--out",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    xml = out.read_text()
    assert 'value="0.3"' in xml and "0.300000011920929" not in xml

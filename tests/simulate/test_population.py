"""Wright–Fisher and Moran populations against their closed forms, and the population CLI.

Monte-Carlo tolerances are explicit: 4.5 sampling standard deviations of the statistic
(the sampling sd of a variance estimate from the fourth central moment of the sample).
Every Wright–Fisher call uses the same (replicates, generations) so that it compiles once.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from simulate._cli._core import main
from simulate._cli._population import population_summary
from simulate._population import (
    fixation_probability,
    moran,
    neutral_variance,
    simulate_population,
    start_frequency,
    wright_fisher,
)
from simulate.spec import SpecError

ROOT = Path(__file__).resolve().parents[2]
R, G = 2000, 300  # replicates, generations of every Wright–Fisher run here
GM = 150  # generations of every Moran run (N = 20) here
Z = 4.5


def _var_se(x: np.ndarray) -> tuple[float, float]:
    """Sample variance (ddof=1) and its sampling sd from the fourth central moment."""
    n = len(x)
    v = x.var(ddof=1)
    m4 = np.mean((x - x.mean()) ** 4)
    return v, float(np.sqrt(max(m4 - v**2 * (n - 3) / (n - 1), 0.0) / n))


def test_neutral_wright_fisher_variance_and_mean_match_closed_form():
    N, p0 = 50, 0.3
    paths = np.asarray(wright_fisher(N, p0, generations=G, replicates=R, key=jax.random.key(1)))
    assert paths.shape == (R, G + 1) and paths.dtype == np.float64
    assert np.all(paths[:, 0] == p0)
    for t in (1, 5, 20, 60):
        expected = neutral_variance(N, p0, t)
        v, se = _var_se(paths[:, t])
        assert abs(v - expected) <= Z * se, (t, v, expected, se)
        assert abs(paths[:, t].mean() - p0) <= Z * np.sqrt(expected / R)
    # absorbing states stay absorbed
    fixed = paths[:, 100] == 1.0
    assert fixed.any() and np.all(paths[fixed, 100:] == 1.0)


@pytest.mark.parametrize(("N", "s", "p0"), [(50, 0.02, 0.2), (50, -0.02, 0.5)])
def test_wright_fisher_fixation_matches_kimura(N, s, p0):
    u = fixation_probability(N, s, p0)
    paths = np.asarray(wright_fisher(N, p0, s, generations=G, replicates=R, key=jax.random.key(2)))
    end = paths[:, -1]
    unabsorbed = np.mean((end > 0) & (end < 1))
    assert unabsorbed < 0.01
    # MC sd of a fraction, plus the diffusion approximation's own error (0.0017 and 0.0020
    # for these cases against the exact Wright–Fisher chain) and the unabsorbed fraction
    tol = Z * np.sqrt(u * (1 - u) / R) + 0.0025 + unabsorbed
    assert abs(np.mean(end == 1.0) - u) <= tol, (np.mean(end == 1.0), u, tol)
    neutral = p0  # without selection the fixation probability would be p0: tell them apart
    assert abs(neutral - u) > 2 * tol


def test_moran_drifts_twice_as_fast_per_generation():
    N, p0 = 20, 0.5
    paths = np.asarray(moran(N, p0, generations=GM, replicates=R, key=jax.random.key(3)))
    assert paths.shape == (R, GM + 1)
    # one birth–death event moves the count by at most one
    for t in (1, 3, 8):
        expected = neutral_variance(N, p0, t, model="moran")
        v, se = _var_se(paths[:, t])
        assert abs(v - expected) <= Z * se, (t, v, expected, se)
        assert abs(expected - p0 * (1 - p0) * (1 - np.exp(-2 * t / N))) < 2e-3
    # ...and is told apart from Wright–Fisher's slower drift at t = 3
    v3, se3 = _var_se(paths[:, 3])
    assert abs(v3 - neutral_variance(N, p0, 3, model="wf")) > 2 * Z * se3


def test_moran_fixation_under_selection_matches_kimura_with_half_the_size():
    N, s, p0 = 20, 0.1, 0.25
    u = fixation_probability(N, s, p0, model="moran")
    exact = (1 - (1 + s) ** -(N * p0)) / (1 - (1 + s) ** -N)  # exact Moran chain
    assert abs(u - exact) < 0.012
    paths = np.asarray(moran(N, p0, s, generations=GM, replicates=R, key=jax.random.key(4)))
    end = paths[:, -1]
    assert np.mean((end > 0) & (end < 1)) < 0.005
    assert abs(np.mean(end == 1.0) - exact) <= Z * np.sqrt(exact * (1 - exact) / R)


def test_closed_form_helpers():
    assert fixation_probability(100, 0.0, 0.3) == 0.3
    assert fixation_probability(1000, 1e-7, 0.3) == pytest.approx(0.3, rel=1e-3)
    assert fixation_probability(10**6, 0.5, 0.001) == pytest.approx(1.0)
    assert 0.0 <= fixation_probability(10**6, -0.5, 0.5) < 1e-300
    assert start_frequency(20, 0.33) == 0.35
    assert neutral_variance(20, 0.5, 0) == 0.0
    np.testing.assert_allclose(neutral_variance(10, 0.5, np.arange(3)), [0, 0.025, 0.0475])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"N": 1}, "N must be an integer >= 2"),
        ({"N": 2.5}, "N must be an integer"),
        ({"p0": 1.5}, "p0 must be in"),
        ({"s": -1.0}, "s must be > -1"),
        ({"generations": 0}, "generations"),
        ({"replicates": 0}, "replicates"),
        ({"model": "cannings"}, "unknown population model"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    args = {"N": 10, "p0": 0.5, "s": 0.0, "generations": 5, "replicates": 3, "model": "wf"}
    args.update(kwargs)
    with pytest.raises(SpecError, match=match):
        simulate_population(
            args.pop("N"), args.pop("p0"), args.pop("s"), key=jax.random.key(0), **args
        )


def _cli(*argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    return subprocess.run(
        [sys.executable, "-m", "simulate", "population", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )


def test_cli_json_and_plot_in_float64(tmp_path):
    png = tmp_path / "pop.png"
    res = _cli(
        *("--N", "10", "30", "--generations", "12", "--replicates", "40", "--json"),
        *("--model", "moran"),
        *("--plot", str(png)),
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["model"] == "moran" and out["generations"] == 12
    assert [p["N"] for p in out["populations"]] == [10, 30]
    for p in out["populations"]:
        assert p["dtype"] == "float64"
        assert len(p["mean"]) == len(p["variance"]) == len(p["neutral_variance"]) == 13
        assert {"fixed", "lost", "kimura_fixation", "p_start"} <= set(p)
        assert p["variance"][0] == 0.0 and p["mean"][0] == 0.5
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = _cli("--N", "10", "--generations", "4", "--replicates", "4", "--plot", str(png))
    assert again.returncode == 2 and again.stderr.count("error:") == 1  # the file is kept
    assert _cli("--N", "10", "--generations", "4", "--replicates", "4", "--plot", str(png),
                "--overwrite").returncode == 0  # fmt: skip


def test_cli_text_summary(capsys):
    # this module's (N, replicates, generations): no new compile
    assert main(["population", "--N", "8", "--generations", str(G), "--replicates", str(R)]) == 0
    argv = ["--N", "20", "--generations", str(GM), "--replicates", str(R), "--model", "moran"]
    assert main(["population", *argv, "--s", "0.1"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"Wright–Fisher, s = 0, p0 = 0.5, {G} generations, {R} replicates")
    assert "(float64)" in text and "neutral closed form 0.25" in text
    assert "Moran, s = 0.1" in text and "Kimura fixation 0.5000" in text
    assert f"Kimura fixation {fixation_probability(20, 0.1, 0.5, model='moran'):.4f}" in text


def test_summary_of_one_replicate_has_no_variance():
    summ = population_summary(np.array([[0.5, 0.6, 1.0]]), N=10, p0=0.5, s=0.0, model="wf")
    assert summ["variance"] == [None, None, None] and summ["fixed"] == 1.0
    np.testing.assert_allclose(summ["neutral_variance"], [0.0, 0.025, 0.0475])
    json.dumps(summ, allow_nan=False)


@pytest.mark.parametrize(
    "argv",
    [
        ["--N", "1"],
        ["--N", "5", "5"],
        ["--p0", "-0.1"],
        ["--p0", "nan"],
        ["--s", "-1"],
        ["--generations", "0"],
        ["--replicates", "0"],
    ],
)
def test_cli_bad_input_exits_2_with_one_error_line(argv, capsys):
    assert main(["population", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")


def test_cli_bad_input_subprocess(tmp_path):
    res = _cli("--N", "20", "--plot", str(tmp_path / "missing" / "x" / "p.png"), "--p0", "2")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip().splitlines() == ["error: --p0 must be in [0, 1], got 2"]

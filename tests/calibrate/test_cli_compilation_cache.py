"""A calibrate command turns the persistent compilation cache on (a second call loads the
compiled programs: ``calibrate predict`` for one setting took 12-13 s of CPU cold and 8 s
warm, 2026-12-03, loaded machine)."""

from __future__ import annotations

import jax


def test_a_calibrate_command_turns_the_cache_on(tmp_path, monkeypatch, restore_cache_dir):
    from calibrate.__main__ import main

    monkeypatch.setenv("AGENTMOTIFS_JAX_CACHE", str(tmp_path / "jc"))
    assert main(["predict", str(tmp_path / "no-fit"), "--set", "rl.lr=1e-3"]) == 2  # bad input
    assert jax.config.jax_compilation_cache_dir == str(tmp_path / "jc")


def test_a_forecast_from_the_shell_loads_no_fitting_code(lr_family_fit, tmp_path):
    """``calibrate predict`` from a shell imports only what a forecast needs: not numpyro
    (the density), diffrax or optimistix (adaptive solves, equilibria), or arviz (issue
    33 §2: those imports were ~1.3 s of the ~6 s a one-setting forecast took)."""
    import os
    import subprocess
    import sys

    _, folder = lr_family_fit
    code = (
        "import sys\nfrom calibrate.__main__ import main\n"
        f"rc = main(['predict', {str(folder)!r}, '--set', 'rl.lr=5e-4', '--json'])\n"
        "heavy = sorted(m for m in ('numpyro', 'diffrax', 'optimistix', 'arviz', 'optax')"
        " if m in sys.modules)\nprint('RC', rc, 'HEAVY', heavy)\n"
    )
    env = {"JAX_PLATFORMS": "cpu"}  # the tests' cache (what is imported does not depend on it)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
        env={**os.environ, **env},
    )  # fmt: skip
    last = out.stdout.strip().splitlines()[-1]
    assert last == "RC 0 HEAVY []", out.stdout[-2000:] + out.stderr[-2000:]
    # the same check sees a heavy import when there is one (the fitting code loads numpyro)
    probe = subprocess.run(
        [sys.executable, "-c", "import sys, calibrate; calibrate.fit; print('numpyro' in "
         "sys.modules)"], capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert probe.stdout.strip() == "True", probe.stderr[-2000:]

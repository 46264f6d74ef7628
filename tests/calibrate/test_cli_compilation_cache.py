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

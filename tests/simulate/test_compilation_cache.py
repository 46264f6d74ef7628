"""The persistent compilation cache: where it goes and how it is turned off."""

from __future__ import annotations

import jax

import simulate


def test_the_cache_goes_where_the_environment_says(tmp_path, monkeypatch, restore_cache_dir):
    monkeypatch.setenv("AGENTMOTIFS_JAX_CACHE", str(tmp_path / "jc"))
    assert simulate.enable_compilation_cache() == tmp_path / "jc"
    assert (tmp_path / "jc").is_dir()
    assert jax.config.jax_compilation_cache_dir == str(tmp_path / "jc")
    assert simulate.enable_compilation_cache(tmp_path / "x") == tmp_path / "x"  # explicit


def test_off_leaves_jax_as_it_was(tmp_path, monkeypatch, restore_cache_dir):
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "before"))
    monkeypatch.setenv("AGENTMOTIFS_JAX_CACHE", "off")
    assert simulate.enable_compilation_cache() is None
    assert jax.config.jax_compilation_cache_dir == str(tmp_path / "before")

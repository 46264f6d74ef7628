"""Test-wide settings: float64 JAX and seeded RNGs."""

import os
import random

os.environ.setdefault("JAX_ENABLE_X64", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

import jax
import numpy as np
import pytest

jax.config.update("jax_enable_x64", True)

# JAX's persistent compilation cache, as every command the tests run uses it (off with
# AGENTMOTIFS_JAX_CACHE=off): on from the first test, not from whichever test first calls a
# command's main in this process; a program compiled again after a module dropped its
# caches, or by another group, is loaded instead
from simulate import enable_compilation_cache  # noqa: E402

enable_compilation_cache()


@pytest.fixture(autouse=True)
def _seed_everything():
    random.seed(0)
    np.random.seed(0)
    yield


@pytest.fixture(autouse=True, scope="module")
def _free_compiled_programs():
    """Drop JAX's compiled programs after each test module. One process compiling hundreds of
    programs crashed (SIGSEGV/SIGABRT inside XLA) late in a full run on the 2-core CI
    machine, never in a package run alone; freeing them keeps one run's pile bounded."""
    yield
    import gc

    jax.clear_caches()
    gc.collect()


@pytest.fixture
def restore_cache_dir():
    """JAX's compilation-cache folder as it was before the test (the cache tests change it)."""
    import jax

    before = jax.config.jax_compilation_cache_dir
    yield
    jax.config.update("jax_compilation_cache_dir", before)

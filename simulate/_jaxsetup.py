"""JAX settings every entry point shares: floating-point precision and the compilation cache.

JAX computes in float32 unless 64-bit mode is on, and the switch must be thrown before any
array exists. Every command of ``python -m simulate`` (and :func:`~simulate.phase_diagram`
with its default ``dtype="float64"``) therefore turns it on itself, so results never depend
on whether ``JAX_ENABLE_X64`` happens to be set in the environment.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["enable_compilation_cache", "float_dtype", "use_float64"]


def use_float64(on: bool = True) -> bool:
    """Turn JAX's 64-bit mode on (or off); returns the previous setting.

    Call it before any array is created: arrays made earlier keep their precision.
    """
    import jax

    previous = bool(jax.config.read("jax_enable_x64"))
    if previous != bool(on):
        jax.config.update("jax_enable_x64", bool(on))
    return previous


def float_dtype() -> str:
    """Name of the floating dtype JAX computes in now (``"float64"`` or ``"float32"``)."""
    import jax.numpy as jnp

    return str(jnp.dtype(jnp.result_type(float)))


def enable_compilation_cache(path: str | Path | None = None) -> Path | None:
    """Turn on JAX's persistent compilation cache, so that a command run again loads its
    compiled programs instead of compiling them (``python -m simulate phase``, and
    ``python -m calibrate``'s fit, predict, recommend and watch).

    Args:
        path: The cache folder (default ``$AGENTMOTIFS_JAX_CACHE``, else
            ``~/.cache/agentmotifs/jax``; ``AGENTMOTIFS_JAX_CACHE=off`` turns the cache off).

    Returns:
        The folder, or None when the cache is off.
    """
    import jax

    env = os.environ.get("AGENTMOTIFS_JAX_CACHE", "")
    if path is None and env.lower() == "off":
        return None
    path = Path(path or env or Path.home() / ".cache" / "agentmotifs" / "jax")
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    # every program, the small eager ones too (loading a fit and a one-setting forecast
    # compile ~16 of them: ~0.4 s of each call from a shell, 2026-12-05)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return path

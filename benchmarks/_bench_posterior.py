"""The benchmark posterior's true parameters (no side effects on import, unlike
bench_calibrate.py, which sets XLA_FLAGS): shared by the benchmark and its tests."""

from __future__ import annotations

__all__ = ["TRUTH"]

TRUTH = {
    "rho[X]": 0.03,
    "rho[Y]": 0.03,
    "rho[Z]": 0.03,
    "delta": 0.002,
    "b[Y]": 0.05,
    "b[Z]": 0.05,
    "A0": 0.05,
    "K[X->Y]": 0.4,
    "K[X->Z]": 0.5,
    "K[Y->Z]": 0.5,
    "n": 2.0,
}

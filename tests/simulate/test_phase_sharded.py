"""Sharding over two host devices gives the same phase diagram as one device."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import simulate as sim

SCRIPT = """
import json, sys
import jax
jax.config.update("jax_enable_x64", True)
import numpy as np
import simulate as sim
res = sim.phase_diagram(["C1", "I2"], "both", sim.grid("beta", 0.5, 8, 5, "log"),
                        sim.grid("gamma", 0.2, 5, 3, "log"), chunk_size=8, progress=False)
np.savez(sys.argv[1], regime=res.arrays["regime"], steady=res.arrays["steady"],
         max_real=res.arrays["max_real"])
print(json.dumps({"devices": len(jax.devices())}))
"""


def test_two_host_devices_match_one(tmp_path: Path):
    env = dict(
        os.environ,
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
        JAX_ENABLE_X64="1",
        JAX_PLATFORMS="cpu",
    )
    out = tmp_path / "two.npz"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1])["devices"] == 2
    two = np.load(out)
    one = sim.phase_diagram(
        ["C1", "I2"],
        "both",
        sim.grid("beta", 0.5, 8, 5, "log"),
        sim.grid("gamma", 0.2, 5, 3, "log"),
        chunk_size=8,
        progress=False,
    )
    np.testing.assert_array_equal(two["regime"], one.arrays["regime"])
    # cells share adaptive steps with their shard: results agree to the solver tolerance
    np.testing.assert_allclose(two["steady"], one.arrays["steady"], atol=1e-5)
    np.testing.assert_allclose(two["max_real"], one.arrays["max_real"], atol=1e-7)

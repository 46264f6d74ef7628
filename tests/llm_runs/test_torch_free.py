"""Without torch, only the tests that need it skip: config, task, run-log and run-folder tests
still run (a core install has no torch)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

_BLOCKED = (
    "import sys; sys.modules.update(torch=None, peft=None, transformers=None); "
    "import pytest; sys.exit(pytest.main(sys.argv[1:]))"
)


def test_torch_free_tests_run_without_torch():
    files = [
        "test_config.py",
        "test_tasks.py",
        "test_runlog.py",
        "test_runfolder.py::test_overwrite_replaces_the_whole_folder",
        "test_train.py",
        "test_policy.py",
    ]
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            _BLOCKED,
            "-q",
            "-p",
            "no:cacheprovider",
            "-rs",
            *(str(HERE) + "/" + f for f in files),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=HERE.parents[1],
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "could not import 'torch'" in out  # test_train and test_policy skip as modules
    summary = out.strip().splitlines()[-1]
    passed = int(summary.split(" passed")[0].split()[-1])
    assert passed >= 30, summary

"""Every name the benchmark scripts import from this project's packages exists (a moved module
broke ``benchmarks/bench_predict.py`` once without any test noticing). Checked from the
scripts' source, without running them."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = ("simulate", "calibrate", "llm_runs")
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))


def _our_imports(path: Path) -> list[tuple[str, str | None]]:
    """``(module, name)`` for each ``from <ours> import name`` and ``(module, None)`` for each
    ``import <ours>...`` in the script."""
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in OURS:
                out += [(node.module, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names if a.name.split(".")[0] in OURS]
    return out


def _resolves(module: str, name: str | None) -> bool:
    if importlib.util.find_spec(module) is None:
        return False
    if name is None:
        return True
    if name == "*" or hasattr(importlib.import_module(module), name):
        return True
    try:  # a submodule not yet imported
        return importlib.util.find_spec(f"{module}.{name}") is not None
    except ModuleNotFoundError:  # ``module`` is not a package
        return False


def test_the_check_sees_a_missing_name(tmp_path):
    bad = tmp_path / "b.py"
    bad.write_text(
        "from calibrate import _no_such_module\nfrom calibrate._predict import _fast\n"
        "def f():\n    from llm_runs._policy import _no_such_name\n"
    )
    res = {(m, n): _resolves(m, n) for m, n in _our_imports(bad)}
    assert res == {("calibrate", "_no_such_module"): False, ("calibrate._predict", "_fast"): True,
                   ("llm_runs._policy", "_no_such_name"): False}  # fmt: skip


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_every_project_import_of_a_benchmark_resolves(script):
    missing = [f"{m}.{n}" if n else m for m, n in _our_imports(script) if not _resolves(m, n)]
    assert not missing, f"{script.name} imports what does not exist: {missing}"

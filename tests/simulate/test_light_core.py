"""The shared core is light: the spec, the parameter-name grammar, the regulation functions,
errors and file helpers import without JAX (and llm_runs' edge controllers with them), so the
torch side never pays for JAX. Checked in a fresh interpreter, as the torch-free import is."""

from __future__ import annotations

import subprocess
import sys

import pytest

CODE = """
import sys
import simulate, simulate.spec, llm_runs, llm_runs._edges, llm_runs.config, llm_runs.runlog
from simulate import (AgentmotifsError, NetworkSpec, check_param_value, ffl_spec,
                      parse_param_name, resolve_spec, write_json)
from simulate._regulation import edge_term, gate_and, gate_or
assert parse_param_name("K[X->Y]") == ("K", "X->Y")
assert resolve_spec("I1-OR").name == "I1-OR"
heavy = ("jax", "jaxlib", "diffrax", "equinox", "optimistix", "torch")
heavy = [m for m in heavy if m in sys.modules]
print("HEAVY", heavy)
sys.exit(1 if heavy else 0)
"""


def test_spec_grammar_and_regulation_import_without_jax():
    r = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_grammar_and_domains():
    from simulate import SpecError, check_param_value, parse_param_name

    assert parse_param_name(" rho [ X ] ") == ("rho", "X")
    assert parse_param_name("beta") == ("beta", None)
    with pytest.raises(SpecError, match="cannot read parameter name"):
        parse_param_name("K[X->Y")
    check_param_value("b[Y]", "b", 1.0, bounded=True)
    for base, bad in (("b", 1.5), ("K", 0.0), ("rho", -1e-3), ("A0", 1.2), ("n", float("nan"))):
        with pytest.raises(SpecError):
            check_param_value(f"{base}[X]", base, bad, bounded=True)
    check_param_value("x0", "x0", 3.0, bounded=False)  # alon input level, unbounded above

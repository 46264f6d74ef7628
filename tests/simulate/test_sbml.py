"""SBML export: valid L3 documents that libRoadRunner (CVODE) runs like diffrax."""

from __future__ import annotations

import numpy as np
import pytest

import simulate as sim
from simulate._cli._core import main

libsbml = pytest.importorskip("libsbml")
roadrunner = pytest.importorskip("roadrunner")

SCHEDULE = "on@0,off@10"


def _roadrunner(text: str, names, t1=20.0, n=201):
    rr = roadrunner.RoadRunner(text)
    rr.integrator.absolute_tolerance = 1e-12  # CVODE; its default is 1e-12 only in some builds
    rr.integrator.relative_tolerance = 1e-10
    return np.asarray(rr.simulate(0.0, t1, n, ["time", *names]))


@pytest.mark.parametrize(
    ("preset", "kinetics", "params", "delay"),
    [
        ("C1", "alon", {"beta": 3.0, "gamma": 0.7}, 0),
        ("I1", "alon", {"beta": 3.0, "gamma": 2.0}, 0),
        ("I1-OR", "alon", {"beta": 2.0}, 0),
        ("C2", "competence", {"rho": 0.4}, 2),
    ],
)
def test_roadrunner_matches_diffrax(preset, kinetics, params, delay):
    model = sim.make_model(preset, kinetics, params, delay_stages=delay, tau=1.5)
    text = sim.to_sbml(model, SCHEDULE)
    res = _roadrunner(text, model.network.names)
    sol = sim.solve(
        model, SCHEDULE, t1=20.0, options=sim.SolveOptions(n_points=201, rtol=1e-10, atol=1e-12)
    )
    np.testing.assert_allclose(res[:, 0], sol.t, atol=1e-12)
    assert np.max(np.abs(res[:, 1:] - np.asarray(sol.states))) < 1e-5


def test_document_is_valid_level3():
    doc = libsbml.readSBMLFromString(sim.to_sbml(sim.make_model("C1", "alon"), SCHEDULE))
    assert doc.getLevel() == 3
    doc.setConsistencyChecks(libsbml.LIBSBML_CAT_UNITS_CONSISTENCY, False)
    doc.checkConsistency()
    assert doc.getNumErrors(libsbml.LIBSBML_SEV_ERROR) == 0
    assert doc.getNumErrors(libsbml.LIBSBML_SEV_FATAL) == 0
    assert doc.getModel().getNumEvents() == 1  # the OFF switch


def test_export_errors_and_cli(tmp_path):
    batch = sim.stack_models([sim.make_model("C1", "alon")] * 2)
    with pytest.raises(sim.SpecError):
        sim.to_sbml(batch)
    out = tmp_path / "i1.xml"
    assert main(["export-sbml", "--motif", "I1", "--param", "beta=2", "--out", str(out)]) == 0
    rr = roadrunner.RoadRunner(out.read_text())
    assert rr.model.getNumFloatingSpecies() >= 2

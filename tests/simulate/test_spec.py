"""Network specs: presets, round trips, validation errors that name the field."""

import json

import pytest

import simulate as sim
from simulate.spec import EdgeSpec, NetworkSpec, SpecError


def test_sign_table_of_the_eight_ffls():
    expected = {
        "C1": (1, 1, 1),
        "C2": (-1, -1, 1),
        "C3": (1, -1, -1),
        "C4": (-1, 1, -1),
        "I1": (1, 1, -1),
        "I2": (-1, -1, -1),
        "I3": (1, -1, 1),
        "I4": (-1, 1, 1),
    }
    for motif, signs in expected.items():
        for gate in ("AND", "OR"):
            spec = sim.ffl_spec(motif, gate)
            got = tuple(spec.edge(a, b).sign for a, b in (("X", "Y"), ("X", "Z"), ("Y", "Z")))
            assert got == signs
            assert spec.gate("Z") == gate
            assert spec.inputs == ("X",)
            # coherent iff the direct sign equals the product of the indirect path's signs
            assert (signs[0] * signs[2] == signs[1]) == motif.startswith("C")


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_round_trip_through_files(tmp_path, suffix):
    spec = sim.add_feedback(sim.ffl_spec("I1", "OR", K=0.5, n=3.0), "Z", sign=-1, K=0.3)
    path = sim.save_spec(spec, tmp_path / f"net{suffix}")
    back = sim.load_spec(path)
    assert back == spec
    assert back.edge("Z", "X").feedback and back.edge("Z", "X").sign == -1
    again = sim.Network.from_spec(back).to_spec(spec.name)
    assert set(again.edges) == set(spec.edges)
    assert (again.nodes, again.gates, again.inputs) == (spec.nodes, spec.gates, spec.inputs)


def test_feedback_closure_adds_reward_edges():
    spec = sim.add_feedback(sim.ffl_spec("C1"), "Z")
    assert {(e.source, e.target) for e in spec.edges if e.feedback} == {("Z", "X"), ("Z", "Y")}
    assert spec.gate("Y") == "AND"  # Y now has X and Z as regulators
    with pytest.raises(SpecError, match=r"Z->X.*already"):
        sim.add_feedback(spec, "Z", ["X"])


def _spec_dict(**changes):
    d = sim.ffl_spec("C1").to_dict()
    d.update(changes)
    return d


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (
            _spec_dict(edges=[{"source": "X", "target": "W", "sign": 1}]),
            r"target: unknown node 'W'",
        ),
        (_spec_dict(edges=[{"source": "X", "target": "Y", "sign": 2}]), r"X->Y\]\.sign"),
        (_spec_dict(edges=[{"source": "X", "target": "Y", "sign": 1, "K": 0}]), r"X->Y\]\.K"),
        (_spec_dict(edges=[{"source": "X", "target": "Y", "sign": 1, "n": -1}]), r"X->Y\]\.n"),
        (_spec_dict(edges=[{"source": "X", "target": "Y", "sign": 1, "K": "nan"}]), r"\.K"),
        (_spec_dict(gates={"Y": "AND"}), r"gates\[Y\].*>= 2 regulators"),
        (_spec_dict(gates={"Z": "XOR"}), r"gates\[Z\] must be AND or OR"),
        (_spec_dict(gates={"Q": "AND"}), r"gates\[Q\]: unknown node"),
        (_spec_dict(nodes=["X", "X", "Z"]), r"duplicated node"),
        (_spec_dict(inputs=["Q"]), r"inputs: unknown node 'Q'"),
        (_spec_dict(colour="red"), r"unknown top-level field"),
        ({"edges": []}, r"missing field 'nodes'"),
        (_spec_dict(edges=[{"source": "X", "target": "Y"}]), r"edges\[0\] is missing.*sign"),
        (
            _spec_dict(edges=[{"source": "X", "target": "Y", "sign": 1}] * 2),
            r"X->Y\]: duplicated edge",
        ),
    ],
)
def test_invalid_specs_name_the_field(data, match):
    with pytest.raises(SpecError, match=match):
        NetworkSpec.from_dict(data)


def test_bad_files_and_presets(tmp_path):
    with pytest.raises(SpecError, match="not found"):
        sim.load_spec(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SpecError, match="cannot parse"):
        sim.load_spec(bad)
    with pytest.raises(SpecError, match="unknown motif"):
        sim.ffl_spec("C9")
    with pytest.raises(SpecError, match="unknown gate"):
        sim.ffl_spec("C1", "NAND")
    with pytest.raises(SpecError, match="sign"):
        EdgeSpec("X", "Y", True)  # booleans are not signs


def test_spec_is_plain_json():
    d = sim.add_feedback(sim.ffl_spec("C2", "OR"), "Z").to_dict()
    assert NetworkSpec.from_dict(json.loads(json.dumps(d))).to_dict() == d


def test_resolve_spec_is_the_one_way_from_a_name_or_file(tmp_path):
    """Presets, preset-gate names, spec files and specs, with feedback, in one function."""
    from simulate.spec import resolve_spec

    assert resolve_spec("c1").name == "C1-AND"
    assert resolve_spec("I1", "or").gate("Z") == "OR"
    assert resolve_spec("I1-OR").name == "I1-OR"
    path = sim.save_spec(sim.ffl_spec("C3", "OR"), tmp_path / "net.json")
    assert resolve_spec(str(path)) == resolve_spec(path) == sim.ffl_spec("C3", "OR")
    fb = resolve_spec("C1", feedback=-1, feedback_K=0.3)
    assert {(e.source, e.target, e.sign, e.K) for e in fb.edges if e.feedback} == {
        ("Z", "X", -1, 0.3),
        ("Z", "Y", -1, 0.3),
    }
    with pytest.raises(SpecError, match="neither a preset"):
        resolve_spec("C9")
    with pytest.raises(SpecError, match="not found"):
        resolve_spec(tmp_path / "missing.yaml")
    with pytest.raises(SpecError, match="feedback sign"):
        resolve_spec("C1", feedback=2)

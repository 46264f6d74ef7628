"""SBML Level 3 export of a :class:`~simulate.Model` (ODE part), for libRoadRunner/COPASI.

Every node level is a species with a rate rule (or, for algebraic input nodes of ``alon``
kinetics, an assignment rule ``= x0 * s``); the input schedule is a parameter ``s`` switched
by events at the schedule's times; Hill occupancies ``(max(A, 0)/K)^n`` are assignment-rule
parameters ``occ_<src>_<dst>``; Erlang delay stages are extra species. Noise (``sigma``) and
the discrete map (``eta``) are not part of an ODE model and are not exported.

Run it, e.g.::

    import roadrunner
    rr = roadrunner.RoadRunner(to_sbml(model, "on@0,off@10"))
    rr.integrator.absolute_tolerance = 1e-12   # CVODE; do not use rr45 (wrong in 2.10)
    rr.integrator.relative_tolerance = 1e-10
    res = rr.simulate(0, 20, 201, ["time", "X", "Y", "Z"])
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from ._io import write_text
from ._kinetics import Model, Schedule
from .spec import SpecError

__all__ = ["to_sbml", "write_sbml"]


def _sid(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return s if re.match(r"[A-Za-z_]", s) else f"n_{s}"


def _value(value) -> float:
    """A parameter as a Python float; a float32 one by its shortest decimal (0.3, not
    0.300000011920929), the number the user wrote."""
    arr = np.asarray(value)
    if arr.dtype == np.float32:
        return float(str(arr[()]))  # numpy prints a float32 by its shortest round-trip digits
    return float(arr)


def _check(value: int, what: str) -> None:
    import libsbml

    if value != libsbml.LIBSBML_OPERATION_SUCCESS:
        msg = libsbml.OperationReturnValue_toString(value)
        raise SpecError(f"SBML export failed at {what}: {msg}")


def to_sbml(
    model: Model,
    schedule: Schedule | str | None = "on@0",
    *,
    t0: float = 0.0,
    model_id: str = "agentmotifs",
) -> str:
    """SBML L3V2 text of ``model``'s ODE under ``schedule`` (valid; consistency-checked).

    Args:
        model: An unbatched model (concrete parameters).
        schedule: Input schedule (``"on@0,off@10"``); default on from ``t0``.
        t0: Start time of the simulation the document is meant for (sets ``s(t0)``).
        model_id: SBML model id.

    Returns:
        The SBML document as an XML string.

    Raises:
        SpecError: On a batched model or if libsbml reports an inconsistent document.
    """
    import libsbml

    if np.ndim(np.asarray(model.tau)) != 0:
        raise SpecError("to_sbml exports one model; index a batched model first")
    if isinstance(schedule, str):
        schedule = Schedule.parse(schedule)
    sched = schedule or Schedule.step(t0)
    net, kin = model.network, model.kinetics
    if getattr(kin, "pipeline", None) is not None:
        raise SpecError("SBML export does not write pipeline gates; export the model without")
    if getattr(kin, "weight", None) is not None:
        raise SpecError("SBML export does not write edge weights; export the model without")
    N, k = model.size, model.delay_stages
    ids = [_sid(n) for n in net.names]
    if len(set(ids)) != N:
        raise SpecError(f"node names {net.names} collide after SBML id sanitising")
    doc = libsbml.SBMLDocument(3, 2)
    m = doc.createModel()
    _check(m.setId(_sid(model_id)), "model id")
    comp = m.createCompartment()
    comp.setId("cell")
    comp.setSize(1.0)
    comp.setConstant(True)
    comp.setSpatialDimensions(3)

    def param(pid: str, value: Any, constant: bool = True) -> None:
        p = m.createParameter()
        _check(p.setId(pid), pid)
        p.setValue(_value(value))
        p.setConstant(constant)

    def species(sid: str, value: float, name: str | None = None) -> None:
        sp = m.createSpecies()
        _check(sp.setId(sid), sid)
        sp.setName(name or sid)
        sp.setCompartment("cell")
        sp.setInitialAmount(_value(value))
        sp.setHasOnlySubstanceUnits(True)
        sp.setBoundaryCondition(False)
        sp.setConstant(False)

    def rule(kind: str, var: str, formula: str) -> None:
        r = m.createRateRule() if kind == "rate" else m.createAssignmentRule()
        r.setVariable(var)
        ast = libsbml.parseL3Formula(formula)
        if ast is None:
            err = libsbml.getLastParseL3Error()
            raise SpecError(f"SBML export: cannot parse {formula!r}: {err}")
        _check(r.setMath(ast), f"rule for {var}")

    # input schedule: s switched by events, u = x0 * s
    times = np.asarray([_value(v) for v in np.asarray(sched.times)], float)
    levels = np.asarray([_value(v) for v in np.asarray(sched.levels)], float)
    s0 = float(levels[times <= t0][-1]) if np.any(times <= t0) else 0.0
    param("s", s0, constant=False)
    param("x0", _value(kin.x0))
    param("u_input", _value(kin.x0) * s0, constant=False)
    rule("assign", "u_input", "x0 * s")
    for i, (t_sw, lev) in enumerate(zip(times, levels, strict=True)):
        if t_sw <= t0:
            continue
        ev = m.createEvent()
        ev.setId(f"switch_{i}")
        ev.setUseValuesFromTriggerTime(True)
        trig = ev.createTrigger()
        trig.setInitialValue(True)
        trig.setPersistent(True)
        _check(trig.setMath(libsbml.parseL3Formula(f"time >= {float(t_sw)!r}")), "trigger")
        ea = ev.createEventAssignment()
        ea.setVariable("s")
        _check(ea.setMath(libsbml.parseL3Formula(repr(float(lev)))), "event assignment")

    A0 = np.asarray(kin.A0)
    algebraic = np.asarray(net.pure_sources) & kin.algebraic_sources
    for i, sid in enumerate(ids):
        species(sid, _value(kin.x0) * s0 if algebraic[i] else A0[i], net.names[i])
        for p_name in kin.node_params:
            if p_name != "A0":
                param(f"{p_name}_{sid}", np.asarray(getattr(kin, p_name))[i])
    if k > 0:
        param("tau", model.tau)
        for i, sid in enumerate(ids):
            for st in range(k):
                species(f"{sid}_lag{st + 1}", A0[i])
    reg_id = [f"{sid}_lag{k}" if k > 0 else sid for sid in ids]
    sign, K, n = np.asarray(net.sign), np.asarray(net.K), np.asarray(net.n)
    is_or = np.asarray(net.is_or) > 0.5
    for i, sid in enumerate(ids):
        if algebraic[i]:
            rule("assign", sid, "u_input")
            continue
        acts, reps, terms = [], [], []
        for j, wired in enumerate(net.wiring[i]):
            if not wired:
                continue
            occ = f"occ_{ids[j]}_{sid}"
            param(f"K_{ids[j]}_{sid}", K[i, j])
            param(f"n_{ids[j]}_{sid}", n[i, j])
            param(occ, 0.0, constant=False)
            a = reg_id[j]
            rule(
                "assign",
                occ,
                f"pow(piecewise({a}, {a} > 0, 0) / K_{ids[j]}_{sid}, n_{ids[j]}_{sid})",
            )
            if sign[i, j] > 0:
                acts.append(occ)
                terms.append(f"{occ} / (1 + {occ})")
            elif sign[i, j] < 0:
                reps.append(occ)
                terms.append(f"1 / (1 + {occ})")
        if not any(net.wiring[i]):
            G = "1"
        elif is_or[i]:
            act = " + ".join(acts) if acts else "0"
            rep = " * ".join(reps)
            G = f"(1 + {act}) / (1 + {act} + {rep})" if reps else f"({act}) / (1 + {act})"
        else:
            G = " * ".join(f"({t})" for t in terms) if terms else "1"
        drive = "u_input" if net.inputs[i] else "1"
        if kin.name == "alon":
            rate = f"gamma_{sid} * (beta_{sid} * {drive} * ({G}) - {sid})"
        elif kin.name == "competence":
            rate = (
                f"rho_{sid} * (b_{sid} + (1 - b_{sid}) * {drive} * ({G})) * (1 - {sid})"
                f" - delta_{sid} * {sid}"
            )
        else:
            raise SpecError(f"SBML export does not know kinetics {kin.name!r}")
        rule("rate", sid, rate)
    for sid in ids:
        for st in range(k):
            up = sid if st == 0 else f"{sid}_lag{st}"
            rule("rate", f"{sid}_lag{st + 1}", f"{k} / tau * ({up} - {sid}_lag{st + 1})")
    doc.setConsistencyChecks(libsbml.LIBSBML_CAT_UNITS_CONSISTENCY, False)
    if doc.checkConsistency() and doc.getNumErrors(libsbml.LIBSBML_SEV_ERROR):
        raise SpecError(f"SBML export is inconsistent: {doc.getErrorLog().toString()}")
    return libsbml.writeSBMLToString(doc)


def write_sbml(model: Model, path: str | Path, schedule: Schedule | str | None = "on@0") -> Path:
    """Write :func:`to_sbml` of ``model`` to ``path`` (``.xml``/``.sbml``), atomically."""
    return write_text(path, to_sbml(model, schedule))

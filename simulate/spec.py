"""Network specifications: nodes, signed edges, Hill parameters, gates; FFL presets.

Plain Python (no JAX, no torch) so that every package — the simulator, the training
side and the calibration side — reads the same spec. A spec is a JSON/YAML document::

    {
      "name": "C1-AND",
      "nodes": ["X", "Y", "Z"],
      "edges": [
        {"source": "X", "target": "Y", "sign": 1, "K": 1.0, "n": 2.0},
        {"source": "X", "target": "Z", "sign": 1, "K": 1.0, "n": 2.0},
        {"source": "Y", "target": "Z", "sign": 1, "K": 1.0, "n": 2.0}
      ],
      "gates": {"Z": "AND"},
      "inputs": ["X"]
    }

``sign`` is +1 (activation), -1 (repression) or 0 (no influence; kept so a sweep can
switch an edge off). ``K`` is the edge's threshold (in units of the upstream node's
level) and ``n`` its Hill coefficient. ``gates`` sets how a node with two or more
regulators combines them (``AND`` default, ``OR``). ``inputs`` are the nodes driven by the
external input schedule; by default the nodes without incoming edges.
"""

from __future__ import annotations

from ._presets import SINGLE as SINGLE
from ._presets import add_feedback as add_feedback
from ._presets import ffl_spec as ffl_spec
from ._presets import preset_names as preset_names
from ._presets import resolve_spec as resolve_spec
from ._presets import ring_spec as ring_spec
from ._presets import single_spec as single_spec
from ._spec import FFL_SIGNS as FFL_SIGNS
from ._spec import GATES as GATES
from ._spec import MOTIFS as MOTIFS
from ._spec import EdgeSpec as EdgeSpec
from ._spec import NetworkSpec as NetworkSpec
from ._spec import SpecError as SpecError
from ._spec import load_spec as load_spec
from ._spec import save_spec as save_spec

__all__ = [
    "FFL_SIGNS",
    "GATES",
    "MOTIFS",
    "SINGLE",
    "EdgeSpec",
    "NetworkSpec",
    "SpecError",
    "add_feedback",
    "ffl_spec",
    "load_spec",
    "preset_names",
    "resolve_spec",
    "ring_spec",
    "save_spec",
    "single_spec",
]

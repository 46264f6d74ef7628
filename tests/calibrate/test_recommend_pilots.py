"""``recommend``'s nearest pilot on each knob's own scale (issue 72 §3): ``rl.staleness``
0 is an ordinary lag on its ``log1p`` scale (the trial's ``ZeroDivisionError`` came from
comparing every knob in ``log``), for every knob of the schema and its domain's edges."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from calibrate._recommend._pilots import nearest_pilot, next_run_config, pilot_scale
from llm_runs.config import TrainConfig
from llm_runs.knobs import KNOBS
from simulate import ConfigError

#: Candidate edge values; each knob keeps those its config accepts (domain edges and beyond).
EDGES = (0, 5e-324, 1e-300, 1e-3, 1, 2, 3, 1e6, 1e300)


def _field(k) -> str:
    return k.field.replace("*", "X")


def _accepted(k) -> list[float]:
    out = []
    for v in EDGES:
        try:
            out.append(k.check(v, _field(k)))
        except ConfigError:
            continue
    return out


def _configs(name: str, values: list) -> dict[str, dict]:
    from llm_runs.config import set_dotted

    out = {}
    for i, v in enumerate(values):
        data: dict = {"seed": i, "name": f"p{i}"}
        set_dotted(data, name, v)
        out[f"p{i}"] = TrainConfig.from_dict(data).to_dict()
    return out


@pytest.mark.parametrize("k", KNOBS, ids=[k.field for k in KNOBS])
def test_every_knob_finds_the_pilot_at_each_edge_value(k):
    name, values = _field(k), _accepted(k)
    assert len(values) >= 3, (name, values)
    if k.scale == "log1p":
        assert values[0] == 0  # 0 is inside the domain of a log1p knob
    assert pilot_scale(name) == k.scale
    configs = _configs(name, values)
    post = SimpleNamespace(
        run_configs=configs,
        model=SimpleNamespace(config=SimpleNamespace(hierarchy=SimpleNamespace(transforms={}))),
    )
    for i, v in enumerate(values):
        assert nearest_pilot(configs, name, v, k.scale) == f"p{i}", (name, v)
        got = next_run_config(post, name, v)  # pyright: ignore[reportArgumentType]
        assert got is not None and got[0] == f"p{i}" and got[1]["seed"] == i
    for a, b in itertools.pairwise(values):  # between two pilots: the nearer on the scale
        if k.scale == "log1p" and a == 0 and b >= 1:
            assert nearest_pilot(configs, name, b * 0.9, k.scale) == f"p{values.index(b)}"


def test_staleness_zero_is_the_nearest_lag_to_zero_not_a_division():
    configs = _configs("rl.staleness", [0, 4, 2])
    assert nearest_pilot(configs, "rl.staleness", 0, "log1p") == "p0"
    assert nearest_pilot(configs, "rl.staleness", 1, "log1p") == "p2"  # |0.69-1.10| < 0.69
    wide = _configs("rl.staleness", [0, 8])
    assert nearest_pilot(wide, "rl.staleness", 3, "log1p") == "p1"  # linear would say p0
    with pytest.raises(ConfigError, match=r"rl.staleness=-1 must be a finite number >= 0"):
        nearest_pilot(configs, "rl.staleness", -1, "log1p")


def test_a_field_no_knob_names_takes_the_fits_transform_else_linear():
    assert pilot_scale("rl.max_new_tokens") == "linear"
    assert pilot_scale("rl.max_new_tokens", {"rl.max_new_tokens": "log"}) == "log"

"""Issue 36 §3, one table: each string the trial found misread is read the same way through
every channel a value reaches the toolkit by — llm_runs' ``--set``, calibrate's ``--set``,
a training config file, a search-space file, a demo config file, a network spec file and
simulate's ``--param`` — as a number, as the text written, or as one error line that
quotes the text (never ``True``/``False``, a date, or a misleading range message).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from calibrate import SearchSpace
from calibrate._cli_args import check_train_fields, parse_setting
from calibrate._demo._config import DemoConfig
from llm_runs.config import TrainConfig, load_config, read_config_file, set_from_text
from simulate import AgentmotifsError, load_spec

ERR = object()  # the channel refuses the text, in one line quoting it
NUMERIC_ONLY = ("calibrate --set",)  # a predict setting: every value a float


def _dotted(obj, key: str):
    for part in key.split("."):
        obj = getattr(obj, part)
    return obj


def _llm_set(key: str, text: str, tmp: Path):
    data: dict = {}
    set_from_text(data, key, text)
    return _dotted(TrainConfig.from_dict(data), key)


def _calibrate_set(key: str, text: str, tmp: Path):
    setting = parse_setting([f"{key}={text}"])
    check_train_fields(setting)  # predict's check: the training config's own rules
    return setting[key]


def _config_file(key: str, text: str, tmp: Path):
    head, _, tail = key.partition(".")
    body = f"{head}: {{{tail}: {text}}}\n" if tail else f"{head}: {text}\n"
    (tmp / "c.yaml").write_text(body)
    return _dotted(load_config(tmp / "c.yaml"), key)


def _space_file(key: str, text: str, tmp: Path):
    (tmp / "s.yaml").write_text(f"fields:\n  {key}: {{choices: [{text}]}}\nbudget_steps: 1e2\n")
    space = SearchSpace.load(tmp / "s.yaml")
    assert space.budget_steps == 100 and type(space.budget_steps) is int
    choices = space.fields[0].choices
    assert choices is not None
    return choices[0]


def _space_low(key: str, text: str, tmp: Path):
    (tmp / "s.yaml").write_text(f"fields:\n  {key}: {{low: {text}, high: 1e3}}\nbudget_steps: 9\n")
    return SearchSpace.load(tmp / "s.yaml").fields[0].low


def _demo_file(key: str, text: str, tmp: Path):
    name = {"rl.lr": "pilot_lrs", "rl.staleness": "pilot_staleness"}.get(key, key)
    value = f"[{text}, 1e3]" if name in ("pilot_lrs", "pilot_staleness") else text
    (tmp / "d.yaml").write_text(f"{name}: {value}\n")
    return getattr(DemoConfig.from_dict(read_config_file(tmp / "d.yaml")), name)[0]


def _network_file(key: str, text: str, tmp: Path):
    edges = ", ".join(f"{{source: {a}, target: {b}, sign: 1}}" for a, b in ("XY", "XZ", "YZ"))
    body = f"nodes: [X, Y, Z]\nedges: [{edges}]\n"
    body += f"gates: {{Z: {text}}}\n" if key == "network.gate" else f"name: {text}\n"
    (tmp / "n.yaml").write_text(body)
    spec = load_spec(tmp / "n.yaml")
    return spec.gates["Z"] if key == "network.gate" else spec.name


CHANNELS = {
    "llm_runs --set": _llm_set,
    "calibrate --set": _calibrate_set,
    "config file": _config_file,
    "space file": _space_file,
    "space low": _space_low,
    "demo config": _demo_file,
    "network file": _network_file,
}

# (field, written, {channel: read as}); a channel left out does not carry that field
CASES = [
    ("rl.lr", "1e-3", dict.fromkeys(
        ["llm_runs --set", "calibrate --set", "config file", "space file", "space low",
         "demo config"], 0.001)),
    ("rl.lr", "2E-3", dict.fromkeys(
        ["llm_runs --set", "calibrate --set", "config file", "space file", "space low",
         "demo config"], 0.002)),
    ("rl.lr", ".5", dict.fromkeys(
        ["llm_runs --set", "calibrate --set", "config file", "space file", "space low",
         "demo config"], 0.5)),
    ("rl.lr", "0x10", dict.fromkeys(
        ["llm_runs --set", "calibrate --set", "config file", "space file", "space low",
         "demo config"], 16.0)),
    *[("rl.lr", bad, dict.fromkeys(
        ["llm_runs --set", "calibrate --set", "config file", "space file", "space low",
         "demo config"], ERR)) for bad in ("1_0e-3", "1_0", "yes", "off", "2024-01-01")],
    ("rl.staleness", "1e1", dict.fromkeys(
        ["llm_runs --set", "calibrate --set", "config file", "space file", "demo config"], 10)),
    ("rl.staleness", "0x10", dict.fromkeys(
        ["llm_runs --set", "calibrate --set", "config file", "space file", "demo config"], 16)),
    ("rl.staleness", "1_0", dict.fromkeys(
        ["llm_runs --set", "calibrate --set", "config file", "space file", "demo config"], ERR)),
    ("rl.staleness", "2.5", dict.fromkeys(
        ["llm_runs --set", "calibrate --set", "config file", "demo config"], ERR)),
    ("task.name", "no", {"llm_runs --set": "no", "calibrate --set": ERR, "config file": "no",
                         "space file": "no"}),
    ("name", "yes", {"llm_runs --set": "yes", "calibrate --set": ERR, "config file": "yes",
                     "network file": "yes"}),
    ("name", "2024-01-01", {"llm_runs --set": "2024-01-01", "calibrate --set": ERR,
                            "config file": "2024-01-01", "network file": "2024-01-01"}),
    ("network.gate", "off", {"llm_runs --set": ERR, "calibrate --set": ERR,
                             "config file": ERR, "network file": ERR}),
    ("network.gate", "OR", {"llm_runs --set": "OR", "config file": "OR", "space file": "OR",
                            "network file": "OR"}),
]  # fmt: skip

ROWS = [(f, t, ch, want) for f, t, by in CASES for ch, want in by.items()]


@pytest.mark.parametrize(
    ("field", "text", "channel", "want"), ROWS, ids=[f"{r[2]}:{r[0]}={r[1]}" for r in ROWS]
)
def test_a_value_reads_as_written_through_every_channel(tmp_path, field, text, channel, want):
    read = CHANNELS[channel]
    if want is ERR:
        with pytest.raises(AgentmotifsError) as err:
            read(field, text, tmp_path)
        msg = str(err.value)
        assert "\n" not in msg and text in msg, msg  # the text as written, in one line
        assert "True" not in msg and "False" not in msg and "datetime" not in msg, msg
        assert "must be > 0" not in msg, msg  # not the range message of a misread word
        return
    got = read(field, text, tmp_path)
    if channel in NUMERIC_ONLY or isinstance(want, float):  # an int is as good a number
        assert isinstance(got, int | float) and not isinstance(got, bool), got
        assert float(got) == want, (channel, field, text, got)
    else:  # an int field gets an int, a text field the text
        assert got == want and type(got) is type(want), (channel, field, text, got)


@pytest.mark.parametrize(
    ("text", "want"), [("1e-3", 0.001), ("2E-3", 0.002), (".5", 0.5), ("0x10", 16.0),
                       ("1_0", None), ("1_0e-3", None), ("yes", None), ("off", None)]
)  # fmt: skip
def test_simulate_param_reads_numbers_as_the_other_packages_do(text, want):
    from simulate._cli._phase import parse_param as _parse_param
    from simulate.spec import SpecError

    if want is None:
        with pytest.raises(SpecError, match=f"--param beta: '{text}' is not a number"):
            _parse_param(f"beta={text}")
    else:
        assert _parse_param(f"beta={text}") == ("beta", want)

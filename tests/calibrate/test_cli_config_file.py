"""`calibrate fit --config FILE`: the file's sampler settings hold unless the command line gives
them (the command line used to override the file with its own defaults: a file asking for a
Laplace fit silently ran NUTS)."""

from __future__ import annotations

import json

from calibrate.__main__ import _config, _parser


def _cfg(tmp_path, *extra):
    path = tmp_path / "fit.json"
    path.write_text(json.dumps({"method": "laplace", "chains": 2, "samples": 300,
                                "warmup": 50, "likelihood": "betabinomial"}))  # fmt: skip
    return _config(_parser().parse_args(["fit", "x.csv", "--config", str(path), *extra]))


def test_config_file_settings_hold(tmp_path):
    cfg = _cfg(tmp_path)
    assert (cfg.method, cfg.chains, cfg.samples, cfg.warmup, cfg.likelihood) == (
        "laplace", 2, 300, 50, "betabinomial")  # fmt: skip


def test_command_line_overrides_the_file(tmp_path):
    cfg = _cfg(tmp_path, "--method", "nuts", "--samples", "20", "--likelihood", "binomial")
    assert (cfg.method, cfg.samples, cfg.likelihood, cfg.chains) == ("nuts", 20, "binomial", 2)


def test_defaults_without_a_file():
    cfg = _config(_parser().parse_args(["fit", "x.csv"]))
    assert (cfg.method, cfg.chains, cfg.samples, cfg.warmup) == ("nuts", 4, 1000, 1000)

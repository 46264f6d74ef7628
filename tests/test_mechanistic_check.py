"""paper/mechanistic_check.py: every model fitted by the one method asked for, and the
per-staleness breakdown of the shared scores by hand."""

from __future__ import annotations

import numpy as np
import pytest

from paper import mechanistic_check as mc


@pytest.mark.parametrize("method", ["nuts", "laplace"])
def test_every_model_is_fitted_by_the_method_asked_for(method):
    cfgs = mc._configs(123, method)
    assert set(cfgs) == set(mc.MODELS)
    assert {c.method for c in cfgs.values()} == {method}
    if method == "laplace":
        assert {c.samples for c in cfgs.values()} == {123}
    else:
        assert {(c.chains, c.warmup, c.samples) for c in cfgs.values()} == {
            (mc.NUTS["chains"], mc.NUTS["warmup"], mc.NUTS["samples"])
        }
    links = {m: {(lk.param, lk.covariate) for lk in c.hierarchy.links} for m, c in cfgs.items()}
    assert links["map"] == {("eta", "rl.lr"), ("lag", "rl.staleness")}
    assert links["map+links"] == links["ode"] | links["map"]
    assert cfgs["map"].dynamics == "map" and cfgs["ode"].dynamics != "map"


def test_by_staleness_pools_agents_then_runs_per_row():
    held = [
        {"setting": {"rl.staleness": 0}, "group": "converged"},
        {"setting": {"rl.staleness": 0}, "group": "collapse"},
        {"setting": {"rl.staleness": 8}, "group": "collapse"},
    ]
    scores = {
        "labels": ["converged", "converged", "collapse"],
        "per_run": {"crps": [[0.1, 0.3], [0.2, np.nan], [0.5, 0.7]]},
    }
    got = mc._by_staleness(held, scores)
    assert got["regime_accuracy"] == {"0": 0.5, "8": 1.0}
    assert got["crps"]["0"] == pytest.approx((0.2 + 0.2) / 2)
    assert got["crps"]["8"] == pytest.approx(0.6)


def test_another_design_in_out_is_refused_with_one_error_line(tmp_path, capsys):
    (tmp_path / "config.json").write_text('{"compare": {"method": "other"}}')
    assert mc.main(["--out", str(tmp_path), "--method", "laplace"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "another design" in err[0]
    assert (tmp_path / "config.json").read_text() == '{"compare": {"method": "other"}}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json"]

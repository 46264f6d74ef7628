"""``calibrate fit`` proposes the knob schema's default links for the knobs that vary in
its inputs (one printed line each); a hierarchy file overrides them."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

import calibrate as cal
from calibrate.__main__ import main

from .test_fit import TRUTH

QUICK = {"map_starts": 1, "map_steps": 5, "max_tree_depth": 3}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("links")
    hyper = {"rl.lr": [1e-3, 2e-3, 4e-3], "rl.kl_coef": [0.1, 0.1, 0.1], "lr": [1.0, 2.0, 3.0]}
    data = cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(3), steps=np.arange(0, 100, 25), runs=3, hyper=hyper
    )
    table = data.table.merge(data.hyper, left_on="run", right_index=True)
    table.to_csv(d / "runs.csv", index=False)
    (d / "quick.json").write_text(json.dumps(QUICK))
    (d / "none.json").write_text("{}")
    return d


def _fit(inputs, out, *extra):
    return main(["fit", str(inputs / "runs.csv"), "--motif", "C1", "--method", "map",
                 "--config", str(inputs / "quick.json"), "--no-progress", "--out", str(out),
                 *extra])  # fmt: skip


def test_varying_knobs_get_their_default_links(inputs, tmp_path, capsys):
    assert _fit(inputs, tmp_path / "fit") == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.startswith("link (default")]
    assert lines == [  # rl.lr varies; rl.kl_coef is constant; lr is no knob
        "link (default for a knob that varies): rho ~ rl.lr (log)",
        "link (default for a knob that varies): delta ~ rl.lr (log)",
    ]
    cfg = json.loads((tmp_path / "fit" / "config.json").read_text())
    got = [(lk["param"], lk["covariate"], lk["transform"]) for lk in cfg["hierarchy"]["links"]]
    assert got == [("rho", "rl.lr", "log"), ("delta", "rl.lr", "log")]


def test_a_hierarchy_file_overrides_them(inputs, tmp_path, capsys):
    assert _fit(inputs, tmp_path / "fit", "--hierarchy", str(inputs / "none.json")) == 0
    assert "link (default" not in capsys.readouterr().out
    cfg = json.loads((tmp_path / "fit" / "config.json").read_text())
    assert cfg["hierarchy"]["links"] == []


def test_a_scaled_role_gets_its_own_learning_rate(tmp_path, capsys):
    """``rl.lr`` and ``rl.lr_scale.X`` both vary: X's rates link ``rl.lr*rl.lr_scale.X`` and
    ``rl.lr``'s the other nodes; the fit predicts from the two fields (forecast round 5)."""
    hyper = {"rl.lr": [1e-3, 2e-3, 4e-3], "rl.lr_scale.X": [0.5, 0.25, 1.0]}
    data = cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(4), steps=np.arange(0, 100, 25), runs=3, hyper=hyper
    )
    table = data.table.merge(data.hyper, left_on="run", right_index=True)
    table.to_csv(tmp_path / "r.csv", index=False)
    (tmp_path / "quick.json").write_text(json.dumps(QUICK))
    assert main(["fit", str(tmp_path / "r.csv"), "--motif", "C1", "--method", "map",
                 "--config", str(tmp_path / "quick.json"), "--no-progress",
                 "--out", str(tmp_path / "fit")]) == 0  # fmt: skip
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("link (default")]
    assert lines == [
        "link (default for a knob that varies): rho[Y,Z] ~ rl.lr (log)",
        "link (default for a knob that varies): delta[Y,Z] ~ rl.lr (log)",
        "link (default for a knob that varies): rho[X] ~ rl.lr*rl.lr_scale.X (log)",
        "link (default for a knob that varies): delta[X] ~ rl.lr*rl.lr_scale.X (log)",
    ]
    post = cal.load_fit(tmp_path / "fit")
    a = cal.predict(post, [{"rl.lr": 2e-3, "rl.lr_scale.X": 0.5}], max_draws=4, n_points=10)
    b = cal.predict(post, [{"rl.lr": 2e-3, "rl.lr*rl.lr_scale.X": 1e-3}], max_draws=4, n_points=10)
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-12)

"""The se of an elpd difference from replicates (``--dse-replicates``): the stratified
sample's se against a direct computation, what it is for, the runs' conditions and the
refusals."""

import json

import numpy as np
import pandas as pd
import pytest

import calibrate as cal
from calibrate.__main__ import main
from calibrate._compare import compare_pointwise, replicate_strata
from calibrate._config import ConfigError


def _stratified_se(diff, blocks, strata):
    """sqrt(sum_s B_s var_s) of the blocks' summed differences (unbiased variances), and
    its Satterthwaite degrees of freedom, by pandas."""
    df = pd.DataFrame({"d": diff, "b": blocks, "s": strata})
    sums = df.groupby(["s", "b"])["d"].sum().reset_index()
    v = sums.groupby("s")["d"].agg(lambda x: len(x) * x.var(ddof=1))
    dof = sums.groupby("s")["d"].size() - 1
    return float(np.sqrt(v.sum())), float(v.sum() ** 2 / (v**2 / dof).sum())


def _design(rng, consistent: bool):
    """4 conditions x 3 agents = 12 strata, 2 replicate blocks (runs) each, 10 points a
    block; model b loses 0.3 nats a point on one stratum: in both replicates, or in one."""
    per, strata_n = 10, 12
    blocks = np.repeat(np.arange(2 * strata_n), per)
    strata = blocks // 2
    base = rng.normal(-2.0, 0.3, blocks.size)
    loss = np.zeros(blocks.size)
    loss[(strata == 5) & ((blocks % 2 == 0) | consistent)] = 0.3
    b = base - loss + rng.normal(0, 0.01, blocks.size)
    return {"a": base, "b": b}, blocks, strata


def test_stratified_se_is_the_stratified_samples_and_counts_replicates_not_designs():
    rng = np.random.default_rng(1)
    pw, blocks, strata = _design(rng, consistent=True)
    rows = {r["label"]: r for r in compare_pointwise(pw, blocks=blocks, strata=strata)}
    diff = pw["a"] - pw["b"]
    assert rows["a"]["d_elpd"] == 0 and rows["b"]["d_elpd"] == pytest.approx(diff.sum())
    se, dof = _stratified_se(diff, blocks, strata)
    assert rows["b"]["dse"] == pytest.approx(se, rel=1e-12)
    assert rows["b"]["dse_df"] == pytest.approx(dof, rel=1e-12)
    assert rows["a"]["dse"] == 0 and rows["a"]["dse_df"] is None
    sums = np.bincount(blocks, weights=diff)
    assert rows["b"]["dse_blocks"] == pytest.approx(np.sqrt(sums.size * sums.var()), rel=1e-12)
    # one stratum's loss, repeated by both its replicates: the unstratified se takes the
    # designed difference between strata for noise and keeps b; the stratified one does not
    assert rows["b"]["dse_blocks"] > 5 * rows["b"]["dse"]
    assert not rows["b"]["indistinguishable"]
    assert next(r for r in compare_pointwise(pw, blocks=blocks) if r["label"] == "b")[
        "indistinguishable"
    ]
    # the loss in one replicate only: the replicates disagree and b stays
    pw1, _, _ = _design(np.random.default_rng(1), consistent=False)
    b1 = next(r for r in compare_pointwise(pw1, blocks=blocks, strata=strata) if r["d_elpd"])
    assert b1["label"] == "b" and b1["indistinguishable"]
    se1, dof1 = _stratified_se(pw1["a"] - pw1["b"], blocks, strata)
    assert b1["dse"] == pytest.approx(se1, rel=1e-12)
    # one stratum's disagreeing replicates carry nearly all of the variance: about 1 dof
    assert b1["dse_df"] == pytest.approx(dof1, rel=1e-12) and b1["dse_df"] < 1.5


def test_strata_are_refused_unless_each_holds_replicate_blocks():
    pw, blocks, strata = _design(np.random.default_rng(2), consistent=True)
    with pytest.raises(ValueError, match="need blocks"):
        compare_pointwise(pw, strata=strata)
    with pytest.raises(ValueError, match="one stratum per observation"):
        compare_pointwise(pw, blocks=blocks, strata=strata[:-1])
    mixed = strata.copy()
    mixed[0] = 7  # block 0's first point in another stratum
    with pytest.raises(ValueError, match="same within a block"):
        compare_pointwise(pw, blocks=blocks, strata=mixed)
    with pytest.raises(ValueError, match=">= 2 blocks"):
        compare_pointwise(pw, blocks=blocks, strata=blocks)  # every block its own stratum


def _run(root, name, seed, lr, **extra):
    d = root / name
    d.mkdir()
    cfg = {"network": {"motif": "C1", "gate": "AND"}, "rl": {"lr": lr}, "seed": seed,
           "name": name, **extra}  # fmt: skip
    manifest = {"schema": "agentmotifs.runlog", "schema_version": 1, "run": name,
                "seed": seed, "agents": ["X", "Y", "Z"],
                "spec": {"nodes": ["X", "Y", "Z"], "edges": []}, "config": cfg}  # fmt: skip
    (d / "manifest.json").write_text(json.dumps(manifest))
    rows = [{"kind": "agent", "step": s, "agent": a, "competence": 0.3 + 0.002 * s,
             "n_eval": 64} for s in range(0, 101, 10) for a in "XYZ"]  # fmt: skip
    (d / "competence.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(d)


def test_a_runs_condition_is_its_config_apart_from_its_seed(tmp_path):
    paths = [_run(tmp_path, "a1", 1, 1e-3), _run(tmp_path, "a2", 2, 1e-3, threads=4),
             _run(tmp_path, "b1", 1, 2e-3),  # a run logged before the signals' switch existed
             _run(tmp_path, "b2", 3, 2e-3, signals=False)]  # fmt: skip
    cond = cal.load_inputs(paths).conditions()
    assert cond["a1"] == cond["a2"] != cond["b1"] == cond["b2"]
    # a table: its hyperparameter columns apart from the seed
    t = pd.DataFrame({"run": ["p", "q", "r"], "step": 0, "agent": "X", "competence": 0.5,
                      "n_eval": 8, "seed": [1, 2, 1], "lr": [0.1, 0.1, 0.2]})  # fmt: skip
    c = cal.CurveData.from_table(t).conditions()
    assert c["p"] == c["q"] != c["r"]


def test_a_run_without_a_replicate_is_refused(tmp_path):
    paths = [_run(tmp_path, "a1", 1, 1e-3), _run(tmp_path, "a2", 2, 1e-3),
             _run(tmp_path, "b1", 1, 2e-3)]  # fmt: skip
    data = cal.load_inputs(paths)

    class Built:  # the fields of a built model that replicate_strata reads
        runs = tuple(data.runs)
        run_idx = np.repeat(np.arange(3), 33)
        node_idx = np.tile(np.arange(3), 33)
        network = type("N", (), {"names": ("X", "Y", "Z")})

    groups = Built.run_idx * 3 + Built.node_idx
    with pytest.raises(ConfigError, match="without one: b1"):
        replicate_strata(data.conditions(), Built, groups)
    ok = {"a1": 0, "a2": 0, "b1": 1, "b2": 1}
    Built.runs = ("a1", "a2", "b1", "b2")
    Built.run_idx, Built.node_idx = np.repeat(np.arange(4), 3), np.tile(np.arange(3), 4)
    strata = replicate_strata(ok, Built, Built.run_idx * 3 + Built.node_idx)
    assert list(strata) == [0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5]


def test_the_command_line_refuses_replicates_it_cannot_use(tmp_path, capsys):
    paths = [_run(tmp_path, "a1", 1, 1e-3), _run(tmp_path, "a2", 2, 1e-3),
             _run(tmp_path, "b1", 1, 2e-3)]  # fmt: skip
    out = tmp_path / "fit"
    code = main(["fit", *paths, "--motif", "C1,I1", "--method", "laplace", "--dse-replicates",
                 "--no-progress", "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error:")
    assert "without one: b1" in err[0] and not out.exists()
    code = main(["fit", *paths[:2], "--motif", "C1", "--dse-replicates", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--dse-replicates needs a selection" in err[0]

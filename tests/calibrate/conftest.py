"""Calibrate tests run in float64 with fixed seeds."""

import warnings

import jax
import numpy as np
import pytest

jax.config.update("jax_enable_x64", True)


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)


LR_FAMILY = [1e-4, 3e-4, 1e-3]


def _family_fit(tmp_path_factory, name, hyper, links, configs=None):
    """A laplace fit (400 draws) of C1 runs, one per lr of :data:`LR_FAMILY`, with
    ``log rho = a + c log(lr / lr_ref)`` (truth c = 1), saved under a temp folder."""
    import dataclasses

    import calibrate as cal
    from tests.calibrate.test_fit import STEPS, TRUTH

    run_params = [{f"rho[{n}]": TRUTH[f"rho[{n}]"] * lr / 3e-4 for n in "XYZ"} for lr in LR_FAMILY]
    data = cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(5), steps=STEPS, runs=3, run_params=run_params,
        hyper=hyper,
    )  # fmt: skip
    if configs is not None:
        data = dataclasses.replace(data, configs=dict(zip(data.runs, configs, strict=True)))
    cfg = cal.FitConfig(
        method="laplace", chains=1, samples=400, hierarchy=cal.Hierarchy(links=links)
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        post = cal.fit(data, "C1", cfg, key=jax.random.key(0))
    folder = tmp_path_factory.mktemp(name) / "fit"
    post.save(folder, figure=False)
    return post, folder, [str(w.message) for w in caught]


@pytest.fixture(scope="session")
def lr_family_fit(tmp_path_factory):
    """The fit of :func:`_family_fit` with the one link ``rho ~ rl.lr`` and its saved
    folder; shared by the predict tests (one fit per session)."""
    import calibrate as cal

    links = (cal.Link("rho", "rl.lr"),)
    post, folder, _ = _family_fit(tmp_path_factory, "lr_family", {"rl.lr": LR_FAMILY}, links)
    return post, folder


#: the knob fit's pilots: lr and staleness vary, kl_coef is 0 in every run
KNOB_PILOTS = {
    "rl.lr": LR_FAMILY,
    "rl.staleness": [0, 4, 2],
    "rl.kl_coef": [0.0, 0.0, 0.0],
}


@pytest.fixture(scope="session")
def knob_fit(tmp_path_factory):
    """The fit of :func:`_family_fit` from run configs (so recommend writes a best.yaml) with
    links ``rho ~ rl.lr`` (log), ``delta ~ rl.staleness`` and ``delta ~ rl.kl_coef`` (log1p;
    kl_coef constant across the runs): the end-to-end CLI cases' fit. Returns the saved
    folder and the warnings the fit gave."""
    import calibrate as cal
    from llm_runs.config import TrainConfig

    links = (
        cal.Link("rho", "rl.lr"),
        cal.Link("delta", "rl.staleness", transform="log1p"),
        cal.Link("delta", "rl.kl_coef", transform="log1p"),
    )
    configs = [
        TrainConfig.from_dict(
            {"rl": {"lr": lr, "staleness": k, "kl_coef": kl}, "steps": 290, "eval_every": 10,
             "seed": i, "name": f"r{i}"}
        ).to_dict()
        for i, (lr, k, kl) in enumerate(zip(*KNOB_PILOTS.values(), strict=True))
    ]  # fmt: skip
    _, folder, caught = _family_fit(tmp_path_factory, "knob_fit", KNOB_PILOTS, links, configs)
    return folder, caught


@pytest.fixture(scope="session")
def watch_pilots_post():
    """One Laplace fit of watch's three synthetic pilots (``tests/calibrate/test_watch.py``'s
    model: rho and delta linked to rl.lr), shared by the watch tests."""
    import calibrate as cal

    from .test_watch import LRS, _curves

    parts = []
    for i, lr in enumerate(LRS):
        d = _curves(lr, 10 + i)
        parts.append(cal.CurveData.from_table(d.table.assign(run=f"p{i}", **{"rl.lr": lr})))
    cfg = cal.FitConfig(
        method="laplace", chains=1, samples=400,
        hierarchy=cal.Hierarchy(links=(cal.Link("rho", "rl.lr"), cal.Link("delta", "rl.lr"))),
    )  # fmt: skip
    return cal.fit(cal.CurveData.concat(parts), "C1", cfg, key=jax.random.key(0))

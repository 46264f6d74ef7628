"""Calibrate tests run in float64 with fixed seeds."""

import jax
import numpy as np
import pytest

jax.config.update("jax_enable_x64", True)


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)


LR_FAMILY = [1e-4, 3e-4, 1e-3]


@pytest.fixture(scope="session")
def lr_family_fit(tmp_path_factory):
    """A laplace fit (400 draws) of a 3-lr family with ``log rho = a + c log(lr / lr_ref)``
    (truth c = 1) and its saved folder; shared by the predict tests (one fit per session)."""
    import calibrate as cal
    from tests.calibrate.test_fit import STEPS, TRUTH

    run_params = [{f"rho[{n}]": TRUTH[f"rho[{n}]"] * lr / 3e-4 for n in "XYZ"} for lr in LR_FAMILY]
    data = cal.synthetic_curves(
        "C1", TRUTH, key=jax.random.key(5), steps=STEPS, runs=3, run_params=run_params,
        hyper={"rl.lr": LR_FAMILY},
    )  # fmt: skip
    cfg = cal.FitConfig(
        method="laplace", chains=1, samples=400,
        hierarchy=cal.Hierarchy(links=(cal.Link("rho", "rl.lr"),)),
    )  # fmt: skip
    post = cal.fit(data, "C1", cfg, key=jax.random.key(0))
    folder = tmp_path_factory.mktemp("lr_family") / "fit"
    post.save(folder, figure=False)
    return post, folder

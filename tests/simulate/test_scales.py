"""The one scale vocabulary (``simulate.common.SCALES``) and ``simulate.grid`` on it."""

from __future__ import annotations

import numpy as np
import pytest

from simulate.common import (
    SCALES,
    ConfigError,
    from_scale,
    in_scale_domain,
    scale_name,
    to_scale,
)


def test_names_and_the_old_spelling():
    assert SCALES == ("log", "log1p", "linear")
    assert [scale_name(s) for s in ("log", "log1p", "linear", "lin")] == [
        "log", "log1p", "linear", "linear",
    ]  # fmt: skip
    for bad in ("ln", "Log", None, 1):
        with pytest.raises(ConfigError, match="must be one of"):
            scale_name(bad)


@pytest.mark.parametrize("scale", SCALES)
def test_inverse_and_domain(scale):
    h = np.array([0.0, 0.5, 3.0, 1e3])
    ok = in_scale_domain(scale, h)
    np.testing.assert_allclose(from_scale(scale, to_scale(scale, h[ok])), h[ok], rtol=1e-12)
    assert not in_scale_domain(scale, np.nan) and not in_scale_domain(scale, np.inf)
    assert bool(in_scale_domain(scale, 0.0)) == (scale != "log")
    assert bool(in_scale_domain(scale, -1.0)) == (scale == "linear")


def test_grid_on_every_scale():
    import simulate

    assert simulate.grid("tau", 1, 100, 3, "log").values.tolist() == pytest.approx([1, 10, 100])
    lin = simulate.grid("tau", 0, 2, 3, "lin")  # the old spelling reads as linear
    assert lin.scale == "linear" and lin.values.tolist() == [0, 1, 2]
    lp = simulate.grid("tau", 0, 15, 3, "log1p")
    assert lp.values.tolist() == pytest.approx([0, 3, 15])
    with pytest.raises(simulate.SpecError, match="grid scale"):
        simulate.grid("tau", 1, 2, 3, "ln")
    with pytest.raises(simulate.SpecError, match="lo a finite number > 0"):
        simulate.grid("tau", 0, 2, 3, "log")
    with pytest.raises(simulate.SpecError, match=">= 0"):
        simulate.grid("tau", -1, 2, 3, "log1p")

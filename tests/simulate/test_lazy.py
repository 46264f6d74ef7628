"""``simulate.common.lazy_exports``: names of a package namespace load on first use."""

import pytest

from simulate.common import lazy_exports


def test_a_name_loads_once_from_its_module_and_unknown_names_raise():
    import simulate._scales as scales

    ns: dict = {"kept": 1}
    get, names = lazy_exports("simulate", {"scale_name": "_scales", "to_scale": "._scales"}, ns)
    assert "scale_name" not in ns
    assert get("scale_name") is scales.scale_name and ns["scale_name"] is scales.scale_name
    assert get("to_scale") is scales.to_scale  # a leading dot is allowed
    assert names() == ["kept", "scale_name", "to_scale"]
    with pytest.raises(AttributeError, match="'simulate' has no attribute 'nope'"):
        get("nope")


def test_the_packages_list_their_lazy_names():
    import calibrate
    import simulate

    assert "fit" in dir(calibrate) and "classify" in dir(simulate)
    with pytest.raises(AttributeError, match="calibrate"):
        _ = calibrate.no_such_name  # pyright: ignore[reportAttributeAccessIssue]

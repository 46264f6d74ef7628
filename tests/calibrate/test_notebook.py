"""The calibration notebook executes at small size."""

from pathlib import Path

import pytest

NB = Path(__file__).parents[2] / "notebooks" / "calibration.ipynb"


def test_notebook_executes(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("CALIBRATE_NB_SIZE", "small")
    nb = nbformat.read(NB, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "strip outputs"
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "rho[X]" in text
    assert (tmp_path / "predictive.png").exists()

"""The planner-based free-play notebooks run top to bottom in a real kernel without errors."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient


REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = {
    "explore_data_parallel": 2,  # widget views expected: scaling explorer, efficiency plot
    "explore_3d_parallelism": 2,  # configurator, map
    "explore_pipeline": 2,  # timeline, bubble chart
    "explore_sync": 1,
}

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_explorer_notebook_executes(tmp_path, name):
    nb = nbformat.read(REPO / "notebooks" / f"{name}.ipynb", as_version=4)
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code"), "commit without outputs"
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    views = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(views) >= NOTEBOOKS[name]
    state = json.dumps(nb.metadata.get("widgets", {}))
    assert "course-card" in state
    assert "course-failure-instrument_error" not in state and "course-failure-invalid_input" not in state

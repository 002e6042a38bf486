"""The free-play notebook runs top to bottom in a real kernel without errors or failure banners."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "explore_collectives.ipynb"

pytestmark = pytest.mark.slow


def test_explore_collectives_executes(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code"), "commit without outputs"
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    views = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(views) >= 3  # comparator, dashboard, ring view
    times = next(o for o in outputs if o.output_type == "execute_result" and "text/plain" in o.data
                 and "ring" in o.data["text/plain"])
    assert "naive" in times.data["text/plain"]
    state = json.dumps(nb.metadata.get("widgets", {}))
    assert "course-card" in state  # widget state was saved, so the next line means something
    assert "course-failure-instrument_error" not in state and "course-failure-invalid_input" not in state

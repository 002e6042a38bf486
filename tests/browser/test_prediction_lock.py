"""A prediction lock in real JupyterLab: gates an instrument, locks on click, survives a kernel restart."""

from __future__ import annotations

import json

import nbformat
import pytest

from .conftest import ARTIFACTS, run_all_cells

pytestmark = pytest.mark.browser

CELLS = [
    "import os\nos.environ.pop('COURSE_AUTOPREDICT', None)  # a person answers this one",
    "from course.prediction import PredictionLock\nfrom course.instruments import AllreduceComparator\n"
    "lock = PredictionLock('browser/act1', 'Naive / ring time at 128 GPUs?',\n"
    "                      options={'A': 'about 2x', 'B': 'about 14x', 'C': 'about 128x', 'D': 'about 1000x'},\n"
    "                      correct='C')\nlock",
    "comparator = lock.gate(AllreduceComparator())\ncomparator",
]


def test_lock_gates_freezes_and_survives_restart(lab_notebook, jupyterlab, tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "lock_in_browser.ipynb"
    nbformat.write(nb, path)
    (jupyterlab.root / "predictions.json").unlink(missing_ok=True)
    page = lab_notebook(path)

    lock = page.locator(".course-prediction-lock").first
    lock.wait_for(timeout=60_000)
    gate_note = page.get_by_text("Lock your prediction above to unlock this instrument.")
    gate_note.wait_for(timeout=30_000)
    assert not page.locator(".course-instrument .bqplot").first.is_visible()
    button = lock.get_by_role("button", name="Lock prediction")
    assert button.is_disabled()  # nothing chosen yet

    lock.get_by_text("C) about 128x").click()
    button.click()
    # the kernel locks, then shows the instrument; bqplot sizes a figure once it is scrolled to
    lock.get_by_text("Your prediction:").wait_for(timeout=30_000)
    page.locator(".course-instrument").first.scroll_into_view_if_needed()
    page.locator(".course-instrument .bqplot").first.wait_for(state="visible", timeout=30_000)
    assert lock.locator("input[type=radio]").first.is_disabled()
    saved = json.loads((jupyterlab.root / "predictions.json").read_text())
    assert saved["browser/act1"]["value"] == "C"
    ARTIFACTS.mkdir(exist_ok=True)
    lock.screenshot(path=str(ARTIFACTS / "jupyterlab_prediction_lock.png"))

    # restart the kernel (clearing outputs) and run everything again: the lock comes back locked, the instrument visible
    page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Restart Kernel and Clear Outputs").first.click()
    dialog_accept = page.locator(".jp-Dialog .jp-mod-accept")
    if dialog_accept.count():
        dialog_accept.first.click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]"
        ".every(p => !/\\[\\d+\\]/.test(p.textContent))", timeout=60_000)
    run_all_cells(page)
    relocked = page.locator(".course-prediction-lock").last
    relocked.get_by_text("restored from predictions.json").wait_for(timeout=30_000)
    assert relocked.get_by_role("button", name="Locked").is_disabled()
    page.locator(".course-instrument").last.scroll_into_view_if_needed()
    page.locator(".course-instrument .bqplot").last.wait_for(state="visible", timeout=30_000)

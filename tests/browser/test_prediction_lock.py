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


def open_cells(lab_notebook, jupyterlab, path, cells: list[str]):
    """Write a notebook of code ``cells`` to ``path`` and open it (all cells run) with no prediction saved yet
    in the server's root, where the locks of a notebook opened there keep ``predictions.json``."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    (jupyterlab.root / "predictions.json").unlink(missing_ok=True)
    return lab_notebook(path)


def restart_clear_and_run_all(page) -> None:
    """Kernel > Restart Kernel and Clear Outputs (confirmed when asked), every prompt cleared, then Run All."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Restart Kernel and Clear Outputs").first.click()
    accept = page.locator(".jp-Dialog .jp-mod-accept")
    if accept.count():
        accept.first.click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]"
        ".every(p => !/\\[\\d+\\]/.test(p.textContent))", timeout=60_000)
    run_all_cells(page)


def test_lock_gates_freezes_and_survives_restart(lab_notebook, jupyterlab, tmp_path):
    page = open_cells(lab_notebook, jupyterlab, tmp_path / "lock_in_browser.ipynb", CELLS)

    lock = page.locator(".course-prediction-lock").first
    lock.wait_for(timeout=60_000)
    gate_note = page.get_by_text("Lock your prediction above to unlock this instrument.")
    gate_note.wait_for(timeout=30_000)
    assert not page.locator(".course-instrument .bqplot").first.is_visible()
    button = lock.get_by_role("button", name="Lock prediction")
    button.click()  # nothing chosen yet: the lock says so and stays open
    lock.get_by_text("Pick an option first.").wait_for(timeout=30_000)
    assert not lock.locator("input[type=radio]").first.is_disabled()

    lock.get_by_text("about 128x").click()
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
    restart_clear_and_run_all(page)
    relocked = page.locator(".course-prediction-lock").last
    relocked.get_by_text("restored from predictions.json").wait_for(timeout=30_000)
    assert relocked.get_by_role("button", name="Locked").is_disabled()
    page.locator(".course-instrument").last.scroll_into_view_if_needed()
    page.locator(".course-instrument .bqplot").last.wait_for(state="visible", timeout=30_000)


GROUP_CELLS = [
    "import os\nos.environ.pop('COURSE_AUTOPREDICT', None)  # a person answers this one\n"
    "import ipywidgets as widgets\nwidgets.Button(description='before the lock')",
    "from course.prediction import PredictionLock\n"
    "lock = PredictionLock('browser/group', 'Which all-reduce moves the least data per GPU?',\n"
    "                      options={'A': 'naive', 'B': 'ring', 'C': 'binomial tree', 'D': 'recursive doubling'},\n"
    "                      correct='B')\nlock",
    "widgets.Button(description='after the lock')",
]

#: where the keyboard focus is: inside the lock's radio group (and which option), or the button's label
FOCUS = """() => { const a = document.activeElement;
    const group = a && a.closest('[role=radiogroup]');
    return group ? 'radio ' + a.value : (a && a.closest('button') ? a.closest('button').textContent.trim() : a && a.tagName); }"""
ACTIVE_CELL = "() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].findIndex(c => c.classList.contains('jp-mod-active'))"
CHECKED = "() => document.querySelector('.course-prediction-lock input[type=radio]:checked')?.value ?? null"


def test_a_lock_is_one_labelled_radio_group_the_arrow_keys_move_through(lab_notebook, jupyterlab, tmp_path):
    """One Tab stop, a name (the question), arrows that choose inside the group and leave JupyterLab's cell alone."""
    from playwright.sync_api import expect

    from .test_accessibility import UNCLIP, axe_violations

    page = open_cells(lab_notebook, jupyterlab, tmp_path / "lock_radio_group.ipynb", GROUP_CELLS)
    lock = page.locator(".course-prediction-lock").first
    lock.wait_for(timeout=60_000)

    group = lock.get_by_role("radiogroup", name="Which all-reduce moves the least data per GPU?")
    expect(group).to_have_count(1)
    expect(group.get_by_role("radio")).to_have_count(4)
    button = lock.get_by_role("button", name="Lock prediction")
    expect(button).to_be_enabled()  # a Tab stop from the start

    # Tab from the button before the lock to the one after: the group is exactly one stop
    page.get_by_role("button", name="before the lock").focus()
    stops = []
    for _ in range(12):
        page.keyboard.press("Tab")
        stops.append(page.evaluate(FOCUS))
        if stops[-1] == "after the lock":
            break
    assert stops[-1] == "after the lock", stops
    assert [s for s in stops if s.startswith("radio")] == ["radio A"], stops  # nothing chosen: the first option

    page.get_by_role("button", name="before the lock").focus()
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUS) == "radio A"
    cell = page.evaluate(ACTIVE_CELL)
    for key, expected in [("ArrowDown", "B"), ("ArrowDown", "C"), ("ArrowUp", "B"), ("ArrowRight", "C"),
                          ("ArrowLeft", "B")]:
        page.keyboard.press(key)
        assert page.evaluate(CHECKED) == expected, key
        assert page.evaluate(FOCUS) == f"radio {expected}", key  # focus stays in the group
        assert page.evaluate(ACTIVE_CELL) == cell, f"{key} moved JupyterLab to another cell"
    # Tab from the group lands on the button at once, choice made or not
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUS) == "Lock prediction", page.evaluate(FOCUS)

    page.add_style_tag(content=UNCLIP)
    found = axe_violations(page)
    assert not found, found

    button.click()
    lock.get_by_text("Your prediction:").wait_for(timeout=30_000)
    saved = json.loads((jupyterlab.root / "predictions.json").read_text())
    assert saved["browser/group"]["value"] == "B"
    expect(group.get_by_role("radio").nth(1)).to_be_checked()
    expect(group.get_by_role("radio").first).to_be_disabled()


#: anywidget (0.11) gives a model's front-end module two seconds (``AbortSignal.timeout(2000)`` in its Runtime)
#: and then drops every update the kernel sends to that model; a loaded machine reaches it during Run All.
#: This page script makes that timer fire at once, as if the module had loaded late, every time.
ANYWIDGET_LATE = """
const timeout = AbortSignal.timeout.bind(AbortSignal);
AbortSignal.timeout = (ms) => timeout(ms === 2000 ? 1 : ms);
"""
ANYWIDGET_TIMEOUT = "[anywidget] Failed to initialize model."


def test_a_lock_whose_widget_module_loads_late_still_locks_and_restores_locked(jupyterlab, browser, tmp_path):
    """The radio group is an anywidget; when its module loads after anywidget's two-second timeout (a busy
    browser), the kernel's later updates to it are dropped. Locking (and restoring a lock) therefore creates a
    new, disabled group instead of updating the old one: the state travels with the group's creation."""
    from .conftest import open_notebook_page, shutdown_kernels

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, jupyterlab.root / "lock_late_module.ipynb")
    (jupyterlab.root / "predictions.json").unlink(missing_ok=True)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(ANYWIDGET_LATE)
    errors: list = []
    context.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    context.on("weberror", lambda err: errors.append(str(err.error)))
    try:
        page = open_notebook_page(jupyterlab, context, "lock_late_module.ipynb")
        run_all_cells(page)
        lock = page.locator(".course-prediction-lock").first
        lock.get_by_text("about 128x").click()
        lock.get_by_role("button", name="Lock prediction").click()
        lock.get_by_text("Your prediction:").wait_for(timeout=30_000)
        radios = lock.locator("input[type=radio]")
        page.wait_for_function("() => { const r = [...document.querySelectorAll('.course-prediction-lock "
                               "input[type=radio]')]; return r.length === 4 && r.every(x => x.disabled); }",
                               timeout=30_000)
        assert radios.nth(2).is_checked() and json.loads((jupyterlab.root / "predictions.json").read_text())[
            "browser/act1"]["value"] == "C"
        assert any(ANYWIDGET_TIMEOUT in e for e in errors), "the late module was not simulated"

        restart_clear_and_run_all(page)
        relocked = page.locator(".course-prediction-lock").last
        relocked.get_by_text("restored from predictions.json").wait_for(timeout=30_000)
        page.wait_for_function("() => { const r = [...document.querySelectorAll('.course-prediction-lock "
                               "input[type=radio]')]; return r.length === 4 && r.every(x => x.disabled) "
                               "&& r[2].checked; }", timeout=30_000)
        # nothing but anywidget's own timeout reaches the console (no update lost on its way to a group)
        assert [e for e in errors if ANYWIDGET_TIMEOUT not in e] == [], errors
    finally:
        context.close()
        shutdown_kernels(jupyterlab)

"""A student's path through the labs in real JupyterLab (issue 4, "done when").

Each test copies a *release* notebook (what a student receives) into its own
student folder of a JupyterLab server whose kernels have no
``COURSE_AUTOPREDICT`` (every lock waits for a click) and a temporary
``COURSE_LEDGER``, runs all cells from the menu, and then behaves like a
student in the page: sees each instrument hidden behind its lock, picks an
option, presses the lock button, sees the instrument appear, and moves the
instrument's own controls (toggle buttons, slider handles, dropdowns) into
the act's failure states. The autograded answer cells are filled in the copy
before it is opened (the student typed them); everything else is the release
notebook as shipped.

Expected numbers are hand computations with the α-β model, not output of the
code under test: naive / ring all-reduce time = N (the root's port carries
2(N−1)M, a ring port 2(N−1)/N·M); the 280 GB all-reduce on 128 GPUs over NDR
takes 2·127/128·280 GB / 50 GB/s = 11.1 s, so with 1 s of compute it is 92 %
of the step, and with 100 s only 10 %.

A failing test leaves a full-page screenshot in ``test-artifacts/``.
"""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from .conftest import ARTIFACTS, CHROMIUM, REPO, open_notebook_page, run_all_cells, shutdown_kernels, start_lab_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

GATE_NOTE = "Lock your prediction above to unlock this instrument."
TRACEBACK_OUTPUT = '.jp-RenderedText[data-mime-type="application/vnd.jupyter.stderr"]'


@pytest.fixture(scope="module")
def student_server(tmp_path_factory):
    """One JupyterLab for this module, as a student has it: no autopredict, its own ledger."""
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is missing (apt-get install -y chromium; .ci/run installs it in CI)")
    with start_lab_server(tmp_path_factory.mktemp("student"), autopredict=False) as server:
        yield server


@pytest.fixture
def open_release(student_server, browser):
    """``open_release(assignment, answers)`` -> (page, student folder), all cells run."""
    contexts = []

    def open_(assignment: str, answers: dict[str, str]):
        folder = Path(tempfile.mkdtemp(prefix=f"student_{assignment}_", dir=student_server.root))
        notebook = _student_copy(assignment, answers)
        nbformat.write(notebook, folder / f"{assignment}.ipynb")
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        contexts.append(context)
        page = open_notebook_page(student_server, context, f"{folder.name}/{assignment}.ipynb")
        run_all_cells(page)
        return page, folder

    yield open_
    for context in contexts:
        context.close()
    shutdown_kernels(student_server)


def _student_copy(assignment: str, answers: dict[str, str]) -> nbformat.NotebookNode:
    notebook = nbformat.read(REPO / "release" / assignment / f"{assignment}.ipynb", as_version=4)
    filled = set()
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            assert "raise NotImplementedError()" in cell.source, f"{grade_id} is not an answer stub in the release"
            cell.source = answers[grade_id]
            filled.add(grade_id)
    assert filled == set(answers), f"answer cells missing from the release notebook: {set(answers) - filled}"
    return notebook


@contextlib.contextmanager
def screenshot_on_failure(page, name: str):
    try:
        yield
    except BaseException:
        ARTIFACTS.mkdir(exist_ok=True)
        try:
            page.screenshot(path=str(ARTIFACTS / f"FAILED_{name}.png"), full_page=True)
        except Exception as exc:  # noqa: BLE001 - keep the original failure
            print(f"[browser] could not take the failure screenshot: {exc}")
        raise


# -- what a student sees and does ------------------------------------------------------------------

def lock_box(page, question: str):
    return page.locator(".course-prediction-lock", has_text=question)


def instrument(page, title: str):
    return page.locator(".course-instrument", has_text=title)


def expect_gated(inst) -> None:
    """The instrument's title and gate note show; its controls and charts do not."""
    from playwright.sync_api import expect

    inst.scroll_into_view_if_needed()
    expect(inst.get_by_text(GATE_NOTE)).to_be_visible(timeout=60_000)
    expect(inst.locator(".bqplot").first).to_be_hidden()
    expect(inst.locator(".course-card").first).to_be_hidden()


def lock_prediction(page, lock, option: str, gated_instrument) -> None:
    """Pick ``option`` (its label starts with it, e.g. "C) about 128x"), check it alone unlocks nothing, lock."""
    from playwright.sync_api import expect

    lock.scroll_into_view_if_needed()
    button = lock.get_by_role("button", name="Lock prediction")
    expect(button).to_be_disabled(timeout=30_000)  # nothing chosen yet
    lock.locator("label", has_text=option).first.click()
    # the kernel saw the choice (it enables the button); the instrument must still be gated
    expect(button).to_be_enabled(timeout=30_000)
    expect(gated_instrument.get_by_text(GATE_NOTE)).to_be_visible()
    expect(gated_instrument.locator(".bqplot").first).to_be_hidden()
    button.click()
    expect(lock.get_by_text("Your prediction:")).to_be_visible(timeout=30_000)
    expect(lock.get_by_role("button", name="Locked")).to_be_disabled()
    expect(lock.locator("input[type=radio]").first).to_be_disabled()
    gated_instrument.scroll_into_view_if_needed()
    expect(gated_instrument.locator(".bqplot").first).to_be_visible(timeout=30_000)
    expect(gated_instrument.get_by_text(GATE_NOTE)).to_be_hidden()


def rerun_cell(page, source: str):
    """Select the code cell whose source is ``source`` and run it with Shift+Enter, as a student would."""
    cell = page.locator(".jp-CodeCell", has=page.locator(".jp-InputArea-editor", has_text=source)).first
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputArea-prompt").click()
    page.keyboard.press("Shift+Enter")
    return cell


def drag_slider_to(page, inst, control: str, fraction: float) -> None:
    """Drag the handle of slider ``control`` to ``fraction`` (0 = left end, 1 = right end) of its track."""
    track = inst.locator(f".course-control-{control} .noUi-target").first
    handle = inst.locator(f".course-control-{control} .noUi-handle").first
    track.scroll_into_view_if_needed()
    tbox, hbox = track.bounding_box(), handle.bounding_box()
    y = hbox["y"] + hbox["height"] / 2
    page.mouse.move(hbox["x"] + hbox["width"] / 2, y)
    page.mouse.down()
    # past the end clamps to the end
    target = tbox["x"] + fraction * tbox["width"] + (20 if fraction >= 1 else -20 if fraction <= 0 else 0)
    page.mouse.move(target, y, steps=8)
    page.mouse.up()


def card_number(inst, card: str) -> float:
    """The number on an instrument's metric card ("128.0×" -> 128.0, "91.7 %" -> 91.7)."""
    text = inst.locator(f".course-card-{card} .course-card-value").first.inner_text()
    match = re.search(r"\d[\d,]*\.?\d*", text)
    assert match, f"no number on card {card}: {text!r}"
    return float(match.group(0).replace(",", ""))


def wait_until(page, condition, what: str, timeout_s: float = 30) -> None:
    """Poll ``condition()`` (reads the page) until true; the wait is on page state, never the check."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        page.wait_for_timeout(200)


def expect_no_traceback(page) -> None:
    stderr = page.locator(TRACEBACK_OUTPUT)
    texts = [stderr.nth(i).inner_text() for i in range(stderr.count())]
    assert not [t for t in texts if "Traceback" in t or "Error" in t], f"a traceback shows in the page: {texts}"
    assert page.locator(".course-failure-instrument_error").count() == 0, "an instrument shows instrument_error"


def read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


# -- Lab 06 ---------------------------------------------------------------------------------------

LAB06 = "lab06_bandwidth_invariant"
LAB06_ANSWERS = {
    "lab06_act1_ratio_answer": "naive_over_ring = comparator.result['times']['naive'] / comparator.result['times']['ring']",
    "lab06_act2_small_answer": "small_update_algorithm = 'rabenseifner'",
}


def test_lab06_locks_gate_each_act_and_the_dashboard_reaches_comm_bound(open_release, student_server):
    from playwright.sync_api import expect

    page, folder = open_release(LAB06, LAB06_ANSWERS)
    with screenshot_on_failure(page, LAB06):
        expect_no_traceback(page)
        assert not (folder / "predictions.json").exists(), "a lock locked itself without a click"
        act1 = lock_box(page, "how many times longer does the naive all-reduce take")
        act2 = lock_box(page, "For the 0.5 MB update on 128 GPUs")
        comparator = instrument(page, "All-reduce comparator")
        dashboard = instrument(page, "Algorithm selection dashboard")
        expect_gated(comparator)
        expect_gated(dashboard)

        # Act I: lock, the comparator appears; naive / ring = N (hand computation), also after a drag of N
        lock_prediction(page, act1, "C) about 128x", comparator)
        expect_gated(dashboard)  # the Act II lock still holds its instrument back
        saved = read_json(folder / "predictions.json")
        assert saved["lab06/act1"]["value"] == "C" and saved["lab06/act1"]["locked"] is True
        assert "lab06/act2" not in saved
        ratio = comparator.locator(".course-card-ratio")
        expect(ratio).to_contain_text("×", timeout=30_000)
        assert card_number(comparator, "ratio") == pytest.approx(128, rel=0.01)
        readout = comparator.locator(".course-control-gpus .widget-readout").first
        before = ratio.inner_text()
        drag_slider_to(page, comparator, "gpus", 0.3)
        expect(ratio).not_to_have_text(before, timeout=30_000)
        # continuous update: intermediate N values reach the kernel first; wait for the card to match the readout
        wait_until(page, lambda: abs(card_number(comparator, "ratio") / float(readout.inner_text()) - 1) < 0.02,
                   "the ratio card to settle on the slider's N")
        gpus = float(readout.inner_text().replace(",", ""))
        assert gpus != 128
        assert card_number(comparator, "ratio") == pytest.approx(gpus, rel=0.02)
        rerun_cell(page, "lock_act1.reveal()").locator(".course-reveal").get_by_text(
            "Your prediction holds").wait_for(timeout=60_000)

        # Act II: lock, the dashboard appears; presets move it out of and into the comm > 50 % failure
        lock_prediction(page, act2, "C) a log-step", dashboard)
        saved = read_json(folder / "predictions.json")
        assert saved["lab06/act2"]["value"] == "C" and saved["lab06/act1"]["value"] == "C"
        banner = dashboard.locator(".course-failure-comm_bound")
        expect(banner).to_be_visible(timeout=30_000)  # 280 GB preset, 1 s compute: 92 %
        dashboard.locator(".course-control-workload button", has_text="small update").click()
        expect(banner).to_have_count(0, timeout=30_000)
        expect(dashboard.locator(".course-card-best")).to_contain_text("rabenseifner", timeout=30_000)
        dashboard.locator(".course-control-workload button", has_text="175B gradients").click()
        expect(banner).to_be_visible(timeout=30_000)
        expect(banner).to_contain_text("Failure state: comm bound")
        assert card_number(dashboard, "share") == pytest.approx(100 * 11.1 / 12.1, abs=0.5)
        drag_slider_to(page, dashboard, "compute_s", 1.0)  # 100 s of compute per step: 10 %
        expect(banner).to_have_count(0, timeout=30_000)
        assert card_number(dashboard, "share") == pytest.approx(100 * 11.1 / 111.1, abs=0.3)
        drag_slider_to(page, dashboard, "compute_s", 0.0)  # 1 ms of compute: communication is everything
        expect(banner).to_be_visible(timeout=30_000)

        ledger = read_json(student_server.root.parent / "ledger.json")
        assert ledger["lab06/act1"]["prediction"] == "C" and ledger["lab06/act2"]["prediction"] == "C"
        expect_no_traceback(page)
        ARTIFACTS.mkdir(exist_ok=True)
        dashboard.screenshot(path=str(ARTIFACTS / "jupyterlab_lab06_dashboard_comm_bound.png"))
        page.screenshot(path=str(ARTIFACTS / "jupyterlab_lab06.png"), full_page=True)

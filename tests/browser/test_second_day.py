"""What a student meets on the second day, in real JupyterLab (issue 36, "done when").

* A workbook chapter: a wrong answer, then three Run Alls with no edit, count one attempt and show no
  worked derivation; ``course student grace`` (what the setup cell tells students to run) and a restart
  start grace at attempt 0: her first check is her attempt 1, and nothing she did not do is "passed".
* Lab 05: the first Run All saves nothing for instruments still locked; after the student hits four
  failure states and saves, Restart + Run All keeps every one of them in the ledger and in the HUD, and
  the configurator shows the design the student left, not its defaults.

The server runs with its own ``HOME`` (``course student`` writes ``~/.course/student``) and its own
ledger, and without ``COURSE_AUTOPREDICT`` (every lock waits for a click). Screenshots go to
``test-artifacts/second_day_*.png``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from .conftest import ARTIFACTS, CHROMIUM, REPO, dismiss_dialogs, open_notebook_page, shutdown_kernels, start_lab_server
from .conftest import wait_idle
from .test_labs_browser import (BUBBLES, CONFIGURATOR, LAB05, PROMPT_NUMBERS, RUN_ALL_STATE, RUN_STARTED,
                                drag_slider_to, expect_gated, expect_no_traceback, instrument, lock_box,
                                lock_prediction, press_on_slider, readout, run_all_or_fail,
                                screenshot_on_failure, toggle)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CH00 = "ch00_ring_allreduce"


@pytest.fixture(scope="module")
def second_day(tmp_path_factory):
    """A JupyterLab whose kernels have their own HOME, no student id and no autopredict; yields (server, home)."""
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is missing (apt-get install -y chromium; .ci/run installs it in CI)")
    base = tmp_path_factory.mktemp("second_day")
    home = base / "home"
    home.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        for name in ("COURSE_STUDENT", "JUPYTERHUB_USER"):
            patch.delenv(name, raising=False)
        with start_lab_server(base, autopredict=False) as server:
            yield server, home


@pytest.fixture
def open_copy(second_day, browser):
    server, _home = second_day
    contexts = []

    def open_(assignment: str, answers: dict[str, str], widgets: bool = True):
        notebook = nbformat.read(REPO / "release" / assignment / f"{assignment}.ipynb", as_version=4)
        for cell in notebook.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in answers:
                cell.source = answers[grade_id]
        folder = Path(tempfile.mkdtemp(prefix=f"day2_{assignment}_", dir=server.root))
        nbformat.write(notebook, folder / f"{assignment}.ipynb")
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        contexts.append(context)
        page = open_notebook_page(server, context, f"{folder.name}/{assignment}.ipynb")
        with screenshot_on_failure(page, f"second_day_{assignment}_run_all"):
            run_all(page, widgets)
        return page, folder

    yield open_
    for context in contexts:
        context.close()
    shutdown_kernels(server)


def run_all(page, widgets: bool) -> None:
    """Run > Run All Cells until every code cell has run again (a notebook with widgets: until they show)."""
    if widgets:
        run_all_or_fail(page)
        return
    for attempt in range(3):
        base = max(page.evaluate(PROMPT_NUMBERS), default=0)
        dismiss_dialogs(page)
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        try:
            page.wait_for_function(RUN_STARTED, arg=base, timeout=30_000, polling=250)
        except Exception:  # the menu click landed before the menu was ready: click again
            continue
        state = page.wait_for_function(RUN_ALL_STATE, arg=base, timeout=240_000, polling=250).json_value()
        assert state == "ran", state
        wait_idle(page)
        return
    raise AssertionError("Run All Cells did not start in three attempts")


def restart_clear_and_run_all(page, widgets: bool = True) -> None:
    """Kernel > Restart Kernel and Clear Outputs of All Cells (confirmed), then Run All, as a student does."""
    dismiss_dialogs(page)
    page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Restart Kernel and Clear Outputs of All Cells").first.click()
    page.locator(".jp-Dialog .jp-mod-accept").first.click(timeout=30_000)
    page.wait_for_function("() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]"
                           ".every(p => !/\\[\\d+\\]/.test(p.textContent))", timeout=60_000, polling=250)
    page.wait_for_function("() => document.querySelector('.jp-Notebook-ExecutionIndicator')"
                           "?.getAttribute('data-status') === 'idle'", timeout=60_000, polling=250)
    page.wait_for_timeout(1500)
    run_all(page, widgets)
    numbers = page.evaluate(PROMPT_NUMBERS)
    assert max(numbers) <= len(numbers), f"the kernel did not restart: execution counts up to {max(numbers)}"


def run_in_place(page, source: str) -> None:
    """Run the code cell whose source contains ``source`` with Ctrl+Enter (Shift+Enter on the last cell would
    add an empty cell, which no Run All numbers)."""
    cell = page.locator(".jp-CodeCell", has=page.locator(".jp-InputArea-editor", has_text=source)).first
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputArea-prompt").click()
    page.keyboard.press("Control+Enter")


def output_of(page, source: str) -> str:
    """The output text of the code cell whose source contains ``source``."""
    cell = page.locator(".jp-CodeCell", has=page.locator(".jp-InputArea-editor", has_text=source)).first
    return cell.locator(".jp-OutputArea").first.inner_text()


def ledger(server) -> dict:
    path = server.root.parent / "ledger.json"
    return json.loads(path.read_text()) if path.exists() else {}


def test_run_all_is_not_an_attempt_and_a_new_identity_starts_fresh(open_copy, second_day):
    server, home = second_day
    page, _folder = open_copy(CH00, {"ch00_ex0_1_answer": "volume_gb = 0.001"}, widgets=False)  # wrong for all
    with screenshot_on_failure(page, "second_day_ch00"):
        expect_no_traceback(page)
        first = output_of(page, "check('0.1'")
        assert "not yet (attempt 1)" in first, first
        for run in (2, 3):  # Run All twice more with no edit: the same answer, no attempt, no key
            run_all(page, widgets=False)
            out = output_of(page, "check('0.1'")
            assert "not yet (attempt 1: this answer was checked before" in out, (run, out)
            assert "Worked derivation" not in page.locator(".jp-Notebook").inner_text(), run
        records = ledger(server)["ch00/ex0_1"]["by_identity"]
        assert [r["attempts"] for r in records.values()] == [1], records
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator(".jp-CodeCell", has=page.locator(".jp-InputArea-editor", has_text="check('0.1'")
                     ).first.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "second_day_third_run_all.png"))

        # `course student grace` in a terminal (the setup cell says so), then Restart + Run All
        course = Path(sys.executable).with_name("course")
        subprocess.run([str(course), "student", "grace"], check=True, env={**os.environ, "HOME": str(home)})
        restart_clear_and_run_all(page, widgets=False)
        setup = output_of(page, "whoami")
        assert "numbers for student 'grace'" in setup, setup
        out = output_of(page, "check('0.1'")
        assert "not yet (attempt 1)" in out and "Worked derivation" not in out, out  # grace's first attempt
        records = ledger(server)["ch00/ex0_1"]["by_identity"]
        grace = [r for who, r in records.items() if who.startswith("grace@")]
        assert len(grace) == 1 and grace[0]["attempts"] == 1 and grace[0]["passed"] is False, records
        assert re.search(r"attempt [2-9]", out) is None
        expect_no_traceback(page)
        page.screenshot(path=str(ARTIFACTS / "second_day_new_identity.png"))


FOUR = ("tp_crosses_node", "out_of_memory", "gpus_mismatch", "too_few_microbatches")


def hud_text(page) -> str:
    hud = page.locator(".course-hud").last
    hud.scroll_into_view_if_needed()
    return hud.inner_text()


def test_restart_and_run_all_keep_every_failure_state_and_the_design(open_copy, second_day):
    from playwright.sync_api import expect

    server, _home = second_day
    page, folder = open_copy(LAB05, {})
    with screenshot_on_failure(page, "second_day_lab05"):
        expect_no_traceback(page)
        assert " 0 saved " in hud_text(page), hud_text(page)  # every instrument is locked: nothing saved
        assert not [k for k in ledger(server) if k.startswith("lab05/")]
        configurator, bubbles = instrument(page, CONFIGURATOR), instrument(page, BUBBLES)
        expect_gated(configurator)
        lock_prediction(page, lock_box(page, "Which layout balances memory, compute and communication best?"),
                        "TP=8, PP=4, DP=32", configurator)
        # four failure states, each shown and then left
        press_on_slider(page, configurator, "tp", "ArrowRight", 2)  # TP 16 crosses the 8-GPU node
        expect(configurator.locator(".course-failure-tp_crosses_node")).to_be_visible(timeout=30_000)
        press_on_slider(page, configurator, "tp", "ArrowLeft", 2)
        toggle(configurator, "zero_stage", "0")
        toggle(configurator, "recompute", "none")
        expect(configurator.locator(".course-failure-out_of_memory")).to_be_visible(timeout=30_000)
        toggle(configurator, "zero_stage", "1")
        toggle(configurator, "recompute", "selective")
        press_on_slider(page, configurator, "pp", "ArrowLeft")  # PP 7: 1,024 / (4 x 7) is not whole
        expect(configurator.locator(".course-failure-gpus_mismatch")).to_be_visible(timeout=30_000)
        press_on_slider(page, configurator, "pp", "ArrowRight")
        drag_slider_to(page, bubbles, "microbatches", 0.0)  # m = 1 < 8 stages
        expect(configurator.locator(".course-failure-too_few_microbatches")).to_be_visible(timeout=30_000)
        press_on_slider(page, configurator, "tp", "ArrowRight")  # the design the student leaves: TP 8, m = 1
        expect(readout(configurator, "tp")).to_have_text("8", timeout=30_000)
        run_in_place(page, "hud.refresh()")  # save, as the notebook's last cell says
        page.wait_for_timeout(1000)
        wait_idle(page)
        saved = hud_text(page)
        assert all(code in saved for code in FOUR), saved
        design = ledger(server)["lab05/design"]
        assert set(FOUR) <= set(design["failures_hit"]) and design["configuration"]["tp"] == 8

        restart_clear_and_run_all(page)
        expect_no_traceback(page)
        after = hud_text(page)
        assert all(code in after for code in FOUR), after  # the HUD shows what the ledger holds
        design = ledger(server)["lab05/design"]
        assert set(FOUR) <= set(design["failures_hit"]), design
        assert design["configuration"]["tp"] == 8 and design["configuration"]["microbatches"] == 1, design
        expect(readout(configurator, "tp")).to_have_text("8", timeout=30_000)  # the design, not the defaults
        assert {k for k in ledger(server) if k.startswith("lab05/")} >= {"lab05/act2", "lab05/design"}
        # Act I and Part 3 are still locked: their instruments saved nothing
        assert not {"lab05/explorer", "lab05/fleet", "lab05/audit"} & set(ledger(server)), sorted(ledger(server))
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator(".course-hud").last.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "second_day_lab05_hud_after_restart.png"))
        configurator.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "second_day_lab05_configurator_after_restart.png"))

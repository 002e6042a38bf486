"""Grading on submit on the real JupyterHub (issue 37): a student submits in the browser and fetches
feedback, and the instructor does nothing after opting the chapter in and releasing it.

The hub of ``python3 dev.py hub`` runs the ``autograde-on-submit`` service as the instructor
(``hub/jupyterhub_config.py``); it grades the submission in the course's sandbox and releases the
chapter's feedback at once. The queue (``grades/<assignment>/queue.json``) shows it released, and the
grade is in the assignment's own ``grades.json`` and in the gradebook.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import time

import nbformat
import pytest

from tests.autograder.course_dir import solution
from tests.progress import Stalled, wait_until

from .conftest import ARTIFACTS, REPO, STUDENTS
from .test_term_on_hub import COURSE_ID, as_instructor, course_root, login, nbgrader_menu

pytestmark = [pytest.mark.slow, pytest.mark.browser]
CHAPTER = "ch03_lr_scaling"
ALICE = STUDENTS[0]


def _row(page, listing: str):
    return page.locator(f"#{listing} .list_item", has_text=CHAPTER).filter(has_text=COURSE_ID).first


def test_a_submission_is_graded_and_its_feedback_fetched_with_no_instructor_action(hub, browser):
    # the instructor's setup, before any student works: the chapter, opted in to grading on submit, released
    as_instructor(hub, ".venv/bin/nbgrader", "generate_assignment", CHAPTER, "--force")
    enabled = as_instructor(hub, ".venv/bin/course-autograde", "on-submit", "enable", CHAPTER).stdout
    assert "released as soon as it is graded" in enabled
    as_instructor(hub, ".venv/bin/nbgrader", "release_assignment", CHAPTER)

    # the student fetches, answers and submits from the Assignments list
    page = login(browser, hub, ALICE)
    assert "Assignment List" in nbgrader_menu(page)
    page.locator("#jp-mainmenu-nbgrader .lm-Menu-itemLabel", has_text="Assignment List").click()
    page.locator("#released_assignments_list").wait_for()
    page.locator("#course_list_dropdown:not([disabled])").wait_for()
    page.locator("#course_list_dropdown").click()
    page.locator("#course_list a", has_text=COURSE_ID).click()
    _row(page, "released_assignments_list").locator("button", has_text="Fetch").first.click()
    _row(page, "fetched_assignments_list").wait_for()
    target = hub.home(ALICE) / CHAPTER / f"{CHAPTER}.ipynb"
    nbformat.write(solution(REPO, CHAPTER, student=ALICE), str(target))
    account = pwd.getpwnam(ALICE)
    os.chown(target, account.pw_uid, account.pw_gid)
    _row(page, "fetched_assignments_list").locator("button", has_text="Submit").first.click()
    _row(page, "submitted_assignments_list").wait_for()
    submitted_at = time.monotonic()

    # ... and, with nobody else doing anything, fetches feedback once the service released it
    queue = course_root(hub) / "grades" / CHAPTER / "queue.json"
    states = {}

    def settled() -> bool:  # grading one notebook in the sandbox: as long as the service works on it
        if queue.is_file():
            states.update({e["student"]: e["state"] for e in json.loads(queue.read_text()).values()})
        return states.get(ALICE) in ("released", "failed")

    with contextlib.suppress(Stalled):
        wait_until(settled, "grading on submit", poll=2)
    assert states.get(ALICE) == "released", (states, hub.log.read_text()[-3000:])
    graded_in = time.monotonic() - submitted_at
    page.locator("#refresh_assignments_list").click()
    row = _row(page, "submitted_assignments_list")
    row.locator("button", has_text="Fetch Feedback").first.click()
    page.locator("#submitted_assignments_list .list_item", has_text="view feedback").first.wait_for()
    feedback = list((hub.home(ALICE) / CHAPTER / "feedback").rglob(f"{CHAPTER}.html"))
    assert len(feedback) == 1
    page.goto(f"{hub.url}/user/{ALICE}/files/{feedback[0].relative_to(hub.home(ALICE))}")
    text = page.locator("body").inner_text()
    page.screenshot(path=str(ARTIFACTS / "on_submit_feedback.png"))
    grades = json.loads((course_root(hub) / "grades" / CHAPTER / "grades.json").read_text())
    row = next(r for r in grades["students"] if r["student"] == ALICE)
    assert grades["isolation"] == "bwrap+rlimits" and grades["shard"] == "on-submit"
    # every autograded part earned in full; the chapter's two reflections wait for the instructor
    assert all(p["points"] == p["max_points"] for p in row["parts"] if p["status"] == "judged"), row["parts"]
    assert sorted(p["part"] for p in row["parts"] if p["status"] == "manual") == ["ch03_ex3_4_why", "ch03_ex3_5_why"]
    # the total counts what was graded; the reflections say they wait for the instructor, never 0
    waiting = sum(p["max_points"] for p in row["parts"] if p["status"] == "manual")
    assert row["score"] == 4.0 and f"{CHAPTER} (Score: 4.0 / {row['max_score'] - waiting:.1f})" in text
    assert "Waiting for your instructor" in text and "Score: 0.0 / 2.0" not in text
    assert "BEGIN HIDDEN TESTS" not in text
    print(f"\n[hub on-submit] graded and released {graded_in:.0f} s after submitting")

"""A whole term on the real JupyterHub of ``python3 dev.py hub``, driven in Chromium.

The instructor generates and releases ch02 from the Formgrader; each student logs in,
fetches it from the Assignments list, answers (alice right, bob with one part wrong) and
submits there; the instructor collects from the Formgrader, grades each student with the
Formgrader's Autograde button (sandboxed, nbgrader_config.py) and the class with
``course-autograde`` and releases feedback (the README's commands, as the instructor's Unix
user, as in a hub terminal); each student fetches feedback from the Assignments list and
opens it; the instructor exports grades. Every step is checked in the page or on disk.
A second course on the same hub and exchange, taken by alice only, is listed for her and
not for bob (nbgrader's JupyterHubAuthPlugin and the hub's ``nbgrader-<course>`` groups).
"""

from __future__ import annotations

import csv
import os
import pwd
import subprocess
import time

import nbformat
import pytest

from hub.users import as_user
from tests.autograder.course_dir import CHAPTER, solution, with_wrong_first_answer

from tests.progress import _playwright_timeout, wait_for_locator, wait_for_url, wait_until

from .conftest import ARTIFACTS, INSTRUCTOR, OTHER_COURSE, REPO, STUDENTS

pytestmark = [pytest.mark.slow, pytest.mark.browser]
COURSE_ID = "distributed-training"
ALICE, BOB = STUDENTS
#: ch02 has four 1-point parts and two 2-point parts; bob's first answer (1 point) ignores dp
EXPECTED = {ALICE: 8.0, BOB: 7.0}
#: Playwright's own bound for one quick step (a click, a read); the slow steps (a server spawning,
#: JupyterLab loading its extensions, grading in the sandbox) wait on progress (tests/progress.py)
STEP_MS = 120_000


def answers() -> dict:
    """Each student's notebook with their own numbers (variants are on); bob's 1-point first
    answer forgets the data-parallel GPUs."""
    return {ALICE: solution(REPO, student=ALICE),
            BOB: with_wrong_first_answer(solution(REPO, student=BOB))}


def login(browser, hub, user: str):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(STEP_MS)
    page = context.new_page()
    page.goto(f"{hub.url}/hub/login", wait_until="domcontentloaded")
    page.fill("#username_input", user)
    page.fill("#password_input", hub.password)
    page.click("#login_submit")
    # the spawn, then JupyterLab loading every extension: minutes on a loaded machine, so these wait
    # as long as the hub, the user's server and the browser are working, and fail once they stop
    wait_for_url(page, f"**/user/{user}/lab**", f"{user}'s server spawning")
    wait_for_locator(page.locator(".jp-LabShell"), f"JupyterLab's shell for {user}")
    wait_for_locator(page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader"), f"the Nbgrader menu for {user}")
    return page


def nbgrader_menu(page) -> list[str]:
    """The Nbgrader menu's item labels, the menu left open. Clicking the menu bar's label while the
    menu is still open (an Escape not yet handled on a loaded machine) would close it again."""
    menu = page.locator("#jp-mainmenu-nbgrader")
    if not menu.is_visible():
        page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").first.click()
    menu.wait_for()
    # items whose command is not registered (plugin disabled) stay in the menu, hidden and empty
    return [t.strip() for t in menu.locator(".lm-Menu-itemLabel").all_inner_texts() if t.strip()]


def close_menu(page) -> None:
    """Close the open Nbgrader menu as a person does: Escape, and if the menu stays (the key went to
    no element of the menu on a loaded machine: seen in CI, the menu open for two minutes), a click on
    the menu bar's label, which toggles it shut."""
    timeout = _playwright_timeout()
    menu = page.locator("#jp-mainmenu-nbgrader")
    for attempt in range(3):
        if not menu.is_visible():
            return
        if attempt == 0:
            page.keyboard.press("Escape")
        else:
            page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").first.click()
        try:
            menu.wait_for(state="hidden", timeout=15_000)
            return
        except timeout:
            continue
    menu.wait_for(state="hidden")


def open_from_menu(page, item: str, opened) -> None:
    """Nbgrader > ``item``, clicked, until ``opened`` (a locator of what the item opens) shows.

    On a loaded machine a click that lands while the menu is still being laid out opens nothing
    (seen once in CI: no request for the Formgrader reached the server in two minutes); a person
    who sees nothing open clicks again, and so does this, three times at most."""
    timeout = _playwright_timeout()
    for attempt in range(3):
        assert item in nbgrader_menu(page), item
        page.locator("#jp-mainmenu-nbgrader .lm-Menu-itemLabel", has_text=item).first.click()
        try:
            opened.wait_for(timeout=30_000 if attempt < 2 else STEP_MS)
            return
        except timeout:
            if attempt == 2:
                raise
            close_menu(page)


def csp_of(page, url: str) -> str:
    """The Content-Security-Policy a page of ``url`` is served with (this person's cookies)."""
    return page.request.get(url).headers.get("content-security-policy", "")


def open_assignments(page):
    if "Assignment List" in nbgrader_menu(page):
        page.locator("#jp-mainmenu-nbgrader .lm-Menu-itemLabel", has_text="Assignment List").click()
    page.locator("#released_assignments_list").wait_for()


def assignment_row(page, listing: str):
    # a fetched assignment's row holds nested rows (one per notebook): the outer one comes first
    return page.locator(f"#{listing} .list_item", has_text=CHAPTER).filter(has_text=COURSE_ID).first


def click_in_row(page, listing: str, button: str, then_listing: str, then_text: str = CHAPTER):
    row = assignment_row(page, listing)
    row.wait_for()
    row.locator("button", has_text=button).first.click()
    # this chapter's row (the hub's other tests leave rows of other assignments, e.g. ch03 with feedback)
    page.locator(f"#{then_listing} .list_item", has_text=then_text).filter(has_text=CHAPTER).first.wait_for()


def formgrader_action(page, hub, action: str) -> str:
    """Click ``action`` (assign/release/collect) in ch02's row of Manage Assignments; the modal's text."""
    page.goto(f"{hub.url}/user/{INSTRUCTOR}/formgrader/manage_assignments")
    row = page.locator("tr", has_text=CHAPTER).first
    row.locator(f".{action} a").first.click()
    modal = page.locator("#success-modal, #error-modal").first
    modal.wait_for()
    text = modal.inner_text()
    assert modal.get_attribute("id") == "success-modal", text
    return text


def formgrader_autograde(page, hub, student: str) -> str:
    """Click the Autograde button (the flash icon) in ``student``'s row of ch02's Manage Submissions;
    wait for the success modal and return its log."""
    page.goto(f"{hub.url}/user/{INSTRUCTOR}/formgrader/manage_submissions/{CHAPTER}")
    row = page.locator("tr", has_text=student).first
    row.locator(".autograde a").first.click()
    modal = page.locator("#success-modal, #error-modal").first
    wait_for_locator(modal, f"the Formgrader's Autograde of {student}")  # grading in the sandbox
    text = modal.inner_text()
    assert modal.get_attribute("id") == "success-modal", text
    return text


def gradebook_scores(hub) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course_root(hub) / 'gradebook.db'}") as gb:
        return {s: gb.find_submission(CHAPTER, s).score for s in STUDENTS}


def as_instructor(hub, *argv: str) -> subprocess.CompletedProcess:
    """A README command typed by the instructor in a terminal of their server (same user, same environment)."""
    account = pwd.getpwnam(INSTRUCTOR)
    env = {"PATH": f"{REPO / '.venv' / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": account.pw_dir,
           "USER": INSTRUCTOR, "LOGNAME": INSTRUCTOR, "LANG": "C.UTF-8", "NBGRADER_EXCHANGE": str(hub.exchange)}
    proc = subprocess.run([*as_user(INSTRUCTOR), *argv], cwd=course_root(hub), env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, f"{argv}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def course_root(hub):
    return hub.home(INSTRUCTOR) / COURSE_ID


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def test_whole_term_on_the_hub(hub, browser):
    started = time.monotonic()
    instructor = login(browser, hub, INSTRUCTOR)
    assert {"Assignment List", "Course List", "Formgrader"} <= set(nbgrader_menu(instructor))
    close_menu(instructor)

    # 0. the instructor's tools open from the Nbgrader menu, as a person opens them (issue 26):
    # the Formgrader in a JupyterLab tab (its frame is allowed on the instructor's server only) ...
    open_from_menu(instructor, "Formgrader",
                   instructor.frame_locator("#formgrader-iframe iframe").locator("text=Manage Assignments").first)
    shot(instructor, "0_formgrader_from_menu")
    # ... and the Course List lists the course (its token may list the hub's services)
    open_from_menu(instructor, "Course List", instructor.locator("#formgrader_list .list_item", has_text=COURSE_ID).first)
    assert "frame-ancestors 'self'" in csp_of(instructor, f"{hub.url}/user/{INSTRUCTOR}/lab")

    # 1. the instructor generates the student version and releases it from the Formgrader
    formgrader = instructor.context.new_page()
    assert CHAPTER in formgrader_action(formgrader, hub, "assign")
    assert (course_root(hub) / "gradebook.db").is_file()
    formgrader_action(formgrader, hub, "release")
    shot(formgrader, "1_released")
    assert (hub.exchange / COURSE_ID / "outbound" / CHAPTER / f"{CHAPTER}.ipynb").is_file()
    # the same chapter in a second course on the same hub and exchange, which only alice takes
    as_instructor(hub, ".venv/bin/nbgrader", "release_assignment", CHAPTER, f"--course={OTHER_COURSE}")
    assert (hub.exchange / OTHER_COURSE / "outbound" / CHAPTER / f"{CHAPTER}.ipynb").is_file()

    # 2. each student fetches, answers and submits from the Assignments list
    pages = {}
    for student, notebook in answers().items():
        page = pages[student] = login(browser, hub, student)
        # every server shares the hub's origin: a student's server must not be framed by anyone's page
        assert "frame-ancestors 'none'" in csp_of(page, f"{hub.url}/user/{student}/lab")
        assert nbgrader_menu(page) == ["Assignment List"], "students must not see the Formgrader"
        page.locator("#jp-mainmenu-nbgrader .lm-Menu-itemLabel", has_text="Assignment List").click()
        page.locator("#released_assignments_list").wait_for()
        page.locator("#course_list_dropdown:not([disabled])").wait_for()
        courses = page.locator("#course_list").text_content()  # the Assignments list's course menu
        assert COURSE_ID in courses and (OTHER_COURSE in courses) == (student == ALICE), f"{student}: {courses}"
        page.locator("#course_list_dropdown").click()
        page.locator("#course_list a", has_text=COURSE_ID).click()
        click_in_row(page, "released_assignments_list", "Fetch", "fetched_assignments_list")
        home = hub.home(student)
        target = home / CHAPTER / f"{CHAPTER}.ipynb"
        assert target.is_file(), "fetched into the student's home"
        account = pwd.getpwnam(student)
        nbformat.write(notebook, str(target))  # the student's answers, saved as they would save them
        os.chown(target, account.pw_uid, account.pw_gid)
        click_in_row(page, "fetched_assignments_list", "Submit", "submitted_assignments_list")
        shot(page, f"2_submitted_{student}")
        inbound = [p.name for p in (hub.exchange / COURSE_ID / "inbound").iterdir()]
        assert any(name.startswith(f"{student}+{CHAPTER}+") for name in inbound), inbound

    # 3. the instructor collects (Formgrader), grades with course-autograde, releases feedback
    formgrader_action(formgrader, hub, "collect")
    submitted = course_root(hub) / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == sorted(STUDENTS)
    # 3a. the Formgrader's Autograde button, one student at a time as a person clicks it: it grades
    # in the course's sandbox with the trusted judge (nbgrader_config.py), and says so in its log
    for student in STUDENTS:
        log = formgrader_autograde(formgrader, hub, student)
        assert f"{EXPECTED[student]} of 8.0 points (bwrap+rlimits" in log, log
    shot(formgrader, "3_autograded_by_button")
    assert gradebook_scores(hub) == EXPECTED
    as_instructor(hub, ".venv/bin/course-autograde", "class", CHAPTER, "--no-progress")
    with open(course_root(hub) / "grades" / CHAPTER / "grades.csv") as fh:
        totals = {}
        for row in csv.DictReader(fh):
            totals[row["student"]] = totals.get(row["student"], 0.0) + float(row["points"] or 0)
    assert totals == EXPECTED
    as_instructor(hub, ".venv/bin/nbgrader", "release_feedback", CHAPTER)

    # 4. each student fetches feedback in the Assignments list and opens it
    for student, page in pages.items():
        page.locator("#refresh_assignments_list").click()
        click_in_row(page, "submitted_assignments_list", "Fetch Feedback", "submitted_assignments_list",
                     "view feedback")
        # the link shows once nbgrader listed the fetched feedback; the file is then on disk, or about to be
        feedback = []

        def fetched() -> bool:
            feedback[:] = (hub.home(student) / CHAPTER / "feedback").rglob(f"{CHAPTER}.html")
            return bool(feedback)

        wait_until(fetched, f"{student}'s feedback on disk", poll=0.5)
        assert len(feedback) == 1, student
        relative = feedback[0].relative_to(hub.home(student))
        page.goto(f"{hub.url}/user/{student}/files/{relative}")
        body = page.locator("body")
        body.wait_for()
        text = body.inner_text()
        shot(page, f"4_feedback_{student}")
        assert "Worked derivation" in text and "BEGIN HIDDEN TESTS" not in text
        assert f"{CHAPTER} (Score: {EXPECTED[student]:.1f} / 8.0)" in text

    # 5. the instructor exports grades
    as_instructor(hub, ".venv/bin/nbgrader", "export", "--to=nbgrader_grades.csv")
    with open(course_root(hub) / "nbgrader_grades.csv") as fh:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(fh)
                  if row["assignment"] == CHAPTER}
    assert scores == EXPECTED
    print(f"\n[hub term] whole term on the hub took {time.monotonic() - started:.0f} s (hub start not included)")

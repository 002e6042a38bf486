"""Fixtures shared by the browser tests of JupyterLab (tests/browser) and of JupyterHub (tests/hub),
and the grouping that lets ``python3 dev.py test`` run the suite on several pytest-xdist workers.

With ``--dist loadgroup`` (what ``dev.py test`` passes) each group below goes to one worker,
whole, so tests that share state never run at the same time and an expensive module or session
fixture is built once per run, not once per worker:

* ``browser``: tests/browser, which share one JupyterLab server and one Chromium (session fixtures).
* ``hub``: tests/hub (Unix users, JupyterHub, its proxy and its own Chromium).
* every other test module (and every module's doctests) is a group of its own. Modules that grade
  in the sandbox as root may run side by side: each grader claims slot user ids no other grader
  holds (``autograder.isolation.sandbox.slot_uid``).

The groups come from the test's path (:func:`xdist_group_of`), through a scheduler of our own
(``pytest_xdist_make_scheduler``): pytest-xdist 3.8's own ``loadgroup`` reads
``@pytest.mark.xdist_group`` by rewriting ``item._nodeid``, which pytest 9 no longer reads, so
with the pinned versions it would silently run every test as a group of one. Groups are queued
longest first (``_FIRST``), so a long one does not start last and leave the other worker idle.
"""

from __future__ import annotations

import os

import pytest


def _allow_grading_without_the_sandbox_here():
    """On a machine without a working bubblewrap (a laptop, this dev box) the suite still grades, with
    rlimits only, because it says so: ``COURSE_ALLOW_UNSANDBOXED=1``, which every route honours
    (autograder/isolation/unsandboxed.py). Where bubblewrap works (CI installs it) nothing is set and every test
    grades in the sandbox. Tests of the refusal clear the variable themselves."""
    from autograder.isolation import sandbox
    from autograder.isolation import unsandboxed as isolation

    why = sandbox.probe()
    if why is not None and isolation.ENV not in os.environ:
        os.environ[isolation.ENV] = "1"
        return f"no sandbox here ({why}): the tests grade with rlimits only ({isolation.ENV}=1)"
    return "grading sandbox: bubblewrap" if why is None else f"no sandbox here ({why}); {isolation.ENV} given"


_SANDBOX_NOTE = _allow_grading_without_the_sandbox_here()


def pytest_report_header(config):
    return _SANDBOX_NOTE

#: groups queued first, longest first (wall seconds per group in the comments: a 2-worker run of
#: ``python3 dev.py test``, 2026-11-26, load average 4-5 from other work); the rest, each under
#: 8 s, keep collection order. The browser group is the longest by far: queued first, the other
#: worker works through the rest meanwhile and both end within seconds of each other.
_FIRST = (
    "browser",                                              # 334
    "tests/notebooks/test_labs.py",                         # 114
    "tests/assignments/test_validate.py",                   # 98
    "tests/autograder/test_red_team.py",                    # 82
    "hub",                                                  # 80
    "tests/autograder/test_grading_modes.py",               # 70
    "tests/autograder/test_instructor_cycle.py",            # 67
    "tests/assignments/test_ch05_09_nbgrader.py",           # 65
    "tests/assignments/test_check_agrees_with_grading.py",  # 54
    # real MPI ranks (Lab 08): 150, 90 and 50 s at load average 12 on 2 cores (2026-12-02); guessed
    # at about a third of that at the load 4-5 of the other figures
    "tests/instruments/test_measured.py",                   # ~50
    "tests/autograder/test_gradescope.py",                  # 47
    "tests/assignments/test_workbook_ch00_04.py",           # 45
    "tests/autograder/test_one_release.py",                 # 45
    "tests/autograder/test_class_report.py",                # 42
    "tests/assignments/test_lab_variants_graders.py",       # 40
    "tests/autograder/test_runaway_cells.py",               # 30
    "tests/autograder/test_ci_template.py",                 # 29
    "tests/launch/test_bench.py",                           # ~30
    "tests/assignments/test_unix_student_cycle.py",         # 26
    "tests/autograder/test_feedback_paths.py",              # 25
    "tests/autograder/test_formgrader_autograde.py",        # 21
    "tests/autograder/test_k8s.py",                         # 21
    "tests/autograder/test_single_mode.py",                 # 21
    "tests/assignments/test_release_run_all.py",            # 20
    "tests/assignments/test_variants_graders.py",           # 19
    "tests/autograder/test_hand_grading.py",                # 19
    "tests/launch/test_launch.py",                          # ~17
    "tests/autograder/test_lms_late.py",                    # 15
    "tests/autograder/test_shards_and_layouts.py",          # 13
    "tests/autograder/test_kernel.py",                      # 12
    "tests/exercises/test_variants.py",                     # 11
    "tests/instruments/test_explore_planner_notebooks.py",  # 9
    # 8 s in that run, 18 s and 9 s in a later one where they ran last and ended 10 s after the other worker
    "tests/exercises/test_lab_variants.py",
    "tests/test_dev_lab.py",
)


def xdist_group_of(nodeid: str) -> str:
    """The group of a test: ``browser``, ``hub`` or its module's path.

    >>> xdist_group_of("tests/browser/test_jupyterlab.py::test_a"), xdist_group_of("tests/core/test_lr.py::t[1]")
    ('browser', 'tests/core/test_lr.py')
    """
    path = nodeid.split("::", 1)[0]
    if path.startswith("tests/browser/"):
        return "browser"
    if path.startswith("tests/hub/"):
        return "hub"
    return path


def pytest_collection_modifyitems(config, items):
    """Queue the groups longest first (``_FIRST``), each group's tests together, otherwise in collection order.

    Every worker sorts the same collection the same way, as pytest-xdist requires.
    """
    first_seen: dict[str, int] = {}
    for item in items:
        first_seen.setdefault(xdist_group_of(item.nodeid), len(first_seen))
    rank = {group: i for i, group in enumerate(_FIRST)}

    def key(item):
        group = xdist_group_of(item.nodeid)
        return rank.get(group, len(rank)), first_seen[group]

    items.sort(key=key)


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup``: whole groups of :func:`xdist_group_of` per worker, in collection order."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group_of(nodeid)

    return GroupScheduling(config, log)


@pytest.fixture(scope="module")
def browser():
    """One headless Debian Chromium per test module: Playwright's sync API allows one instance
    per thread at a time (a second one fails with "using Playwright Sync API inside the asyncio
    loop"), and module scope closes it before the next module starts one. It also keeps the
    Playwright event loop from outliving the browser tests: on a parallel worker the same
    process runs other tests afterwards, and ``asyncio.run`` refuses to start inside a running loop."""
    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is missing (apt-get install -y chromium; .ci/run installs it in CI)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()

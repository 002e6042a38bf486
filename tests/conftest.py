"""Fixtures shared by the browser tests of JupyterLab (tests/browser) and of JupyterHub (tests/hub),
and the grouping that lets ``python3 dev.py test`` run the suite on several pytest-xdist workers.

With ``--dist loadgroup`` (what ``dev.py test`` passes) each group below goes to one worker,
whole, so tests that share state never run at the same time and an expensive module or session
fixture is built once per run, not once per worker:

* ``browser``: tests/browser, which share one JupyterLab server and one Chromium (session fixtures).
* ``hub``: tests/hub (Unix users, JupyterHub, its proxy and its own Chromium).
* every other test module (and every module's doctests) is a group of its own. Modules that grade
  in the sandbox as root may run side by side: each grader claims slot user ids no other grader
  holds (``autograder.sandbox.slot_uid``).

The groups come from the test's path (:func:`xdist_group_of`), through a scheduler of our own
(``pytest_xdist_make_scheduler``): pytest-xdist 3.8's own ``loadgroup`` reads
``@pytest.mark.xdist_group`` by rewriting ``item._nodeid``, which pytest 9 no longer reads, so
with the pinned versions it would silently run every test as a group of one. Groups are queued
longest first (``_FIRST``), so a long one does not start last and leave the other worker idle.
"""

from __future__ import annotations

import pytest

#: groups queued first, longest first (``--durations`` of a 2-worker run, 2026-11-26: seconds per
#: group in the comments); the rest, each under 10 s, keep collection order
_FIRST = (
    "browser",                                              # 530
    "tests/assignments/test_lab_variants_graders.py",       # 515
    "tests/assignments/test_workbook_ch00_04.py",           # 480
    "tests/assignments/test_ch05_09_nbgrader.py",           # 400
    "hub",                                                  # 360
    "tests/autograder/test_instructor_cycle.py",            # 300
    "tests/notebooks/test_labs.py",                         # 230
    "tests/autograder/test_red_team.py",                    # 200
    "tests/exercises/test_lab_variants.py",                 # 130
    "tests/autograder/test_shards_and_layouts.py",          # 110
    "tests/assignments/test_variants_graders.py",           # 100
    "tests/autograder/test_lms_late.py",                    # 75
    "tests/autograder/test_single_mode.py",                 # 40
    "tests/exercises/test_variants.py",                     # 35
    "tests/test_dev_lab.py",                                # 15
    "tests/instruments/test_explore_planner_notebooks.py",  # 15
    "tests/autograder/test_kernel.py",                      # 15
    "tests/autograder/test_cleanroom.py",                   # 10
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

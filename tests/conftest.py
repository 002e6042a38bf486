"""Fixtures shared by the browser tests of JupyterLab (tests/browser) and of JupyterHub (tests/hub),
and the grouping that lets ``python3 dev.py test`` run the suite on several pytest-xdist workers.

With ``--dist loadgroup`` (what ``dev.py test`` passes) each group below goes to one worker,
whole, so tests that share state never run at the same time and an expensive module or session
fixture is built once per run, not once per worker:

* ``sandbox``: everything that runs the autograder's sandbox as root. Its worker slots run as fixed
  user ids (``autograder.sandbox.FIRST_SLOT_UID`` + slot), and a uid's process limit is machine-wide:
  a fork bomb graded on one worker would starve an honest submission graded at the same moment on
  another.
* ``browser``: tests/browser, which share one JupyterLab server and one Chromium (session fixtures).
* ``hub``: tests/hub (Unix users, JupyterHub, its proxy and its own Chromium).
* every other test module (and every module's doctests) is a group of its own.

The groups come from the test's path (:func:`xdist_group_of`), through a scheduler of our own
(``pytest_xdist_make_scheduler``): pytest-xdist 3.8's own ``loadgroup`` reads
``@pytest.mark.xdist_group`` by rewriting ``item._nodeid``, which pytest 9 no longer reads, so
with the pinned versions it would silently run every test as a group of one. Groups are queued
longest first (``_FIRST``), so a long one does not start last and leave the other worker idle.
"""

from __future__ import annotations

import pytest

#: modules (paths from the repository root, prefix match) that run the sandbox as root
_SANDBOX = ("tests/autograder/", "tests/assignments/test_lab_variants_graders.py",
            "tests/assignments/test_variants_graders.py", "tests/notebooks/test_labs.py")
#: groups queued first, longest first (measured with --durations); the rest keep collection order
_FIRST = ("hub", "browser", "sandbox", "tests/assignments/test_workbook_ch00_04.py",
          "tests/assignments/test_ch05_09_nbgrader.py", "tests/notebooks/test_lab05_tracks.py",
          "tests/notebooks/test_index_errata.py", "tests/notebooks/test_validation_notebook.py",
          "tests/assignments/test_ch05_09_keys.py", "tests/test_dev_lab.py")


def xdist_group_of(nodeid: str) -> str:
    """The group of a test: ``sandbox``, ``browser``, ``hub`` or its module's path.

    >>> xdist_group_of("tests/autograder/test_red_team.py::test_fork_bomb"), xdist_group_of("tests/core/test_lr.py::t[1]")
    ('sandbox', 'tests/core/test_lr.py')
    """
    path = nodeid.split("::", 1)[0]
    if path.startswith(_SANDBOX):
        return "sandbox"
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


@pytest.fixture(scope="session")
def browser():
    """One headless Debian Chromium for the whole session: Playwright's sync API allows one
    instance per thread, so the browser and hub tests must share it (a second one fails with
    "using Playwright Sync API inside the asyncio loop")."""
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

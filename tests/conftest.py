"""Fixtures shared by the browser tests of JupyterLab (tests/browser) and of JupyterHub (tests/hub)."""

from __future__ import annotations

import pytest


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

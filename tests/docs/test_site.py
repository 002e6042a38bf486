"""The documentation site as a reader meets it: built (``python3 dev.py docs``), served, opened in
Chromium in light and dark, its pages, search and executed tutorial found, and the questions of
the front page answered within two clicks.

The site in ``build/docs/html`` is the one CI's "docs" phase built (``.ci/run``); when it is
missing or older than a file of ``docs/``, this module builds it first with the same command.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import importlib.util
import subprocess
import threading
from pathlib import Path

import pytest

from tests.browser.conftest import ARTIFACTS, CONTRAST_JS

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def _dev():
    spec = importlib.util.spec_from_file_location("dev", ROOT / "dev.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stale(html: Path) -> bool:
    index = html / "index.html"
    if not index.exists():
        return True
    built = index.stat().st_mtime
    return any(path.stat().st_mtime > built for path in (ROOT / "docs").rglob("*") if path.is_file())


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def site():
    """The built site served over HTTP on a free local port (search needs a server, not file://)."""
    dev = _dev()
    html = dev.DOCS_OUT / "html"
    if _stale(html):
        done = subprocess.run(dev.docs_command([]), cwd=ROOT, capture_output=True, text=True, timeout=1200,
                              check=False)
        assert done.returncode == 0, f"python3 dev.py docs failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    handler = functools.partial(_QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(params=["light", "dark"])
def page(request, browser, site):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=request.param)
    page = context.new_page()
    page.scheme = request.param
    page.site = site
    yield page
    context.close()


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"docs-{name}-{page.scheme}.png"))


def _body_contrast(page) -> float:
    """WCAG contrast of the main text against what is behind it."""
    return page.evaluate("() => {" + CONTRAST_JS + """
        const p = document.querySelector('main p') || document.querySelector('article p');
        const fg = parse(getComputedStyle(p).color);
        return ratio(over(fg, background(p)), background(p));
    }""")


#: the front page's questions, each answered by a page one click away
QUESTIONS = {
    "grade a class": ("instructors/grading-a-class.html", "Grade a class"),
    "add a chapter or a lab": ("authors/adding-an-activity.html", "Add a chapter or a lab"),
    "run the hub": ("admins/jupyterhub.html", "JupyterHub"),
    "every course-autograde option": ("reference/course-autograde.html", "course-autograde"),
}


def test_front_page_answers_each_question_in_one_click(page):
    page.goto(page.site + "/index.html")
    assert page.evaluate("() => document.documentElement.dataset.theme") == page.scheme
    assert _body_contrast(page) >= 4.5
    nav = page.locator("nav.bd-docs-nav").inner_text()
    for audience in ("Students", "Instructors", "Course authors", "Course admins", "Reference"):
        assert audience in nav, f"the sidebar has no {audience!r}"
    _shot(page, "front")
    for question, (href, title) in QUESTIONS.items():
        page.goto(page.site + "/index.html")
        page.locator(f"main a[href='{href}']").first.click()
        page.wait_for_load_state()
        assert page.url.endswith(href), question
        assert title in page.locator("main h1").first.inner_text(), question


def test_search_finds_the_isolation_page(page):
    page.goto(page.site + "/search.html?q=bubblewrap")
    results = page.locator("#search-results ul.search li a")
    results.first.wait_for(timeout=30_000)
    hrefs = [results.nth(i).get_attribute("href") for i in range(results.count())]
    assert any("admins/isolation" in href for href in hrefs), hrefs
    _shot(page, "search")


def test_tutorial_shows_what_its_commands_printed(page):
    """The tutorial ran at build time: its outputs are the grader's, for honest, wrong, blank and
    hostile work."""
    page.goto(page.site + "/instructors/tutorial.html")
    main = page.locator("main")
    text = main.inner_text()
    assert "graded 4 submissions of ch02_gradient_accumulation" in text
    assert "ended the grading run" in text  # eve's killer cell, named in her row
    assert "got an object of type Anything" in text  # eve's always-equal object earns nothing
    assert "is not answered" in text  # cy's blank notebook
    table = main.locator("table.dataframe").first
    table.wait_for()
    assert table.locator("tr").count() > 20  # a row per student and part
    assert _body_contrast(page) >= 4.5
    _shot(page, "tutorial")


def test_course_autograde_reference_lists_every_option(page):
    """Generated from the parser: every option of every mode appears on the page."""
    from autograder.engines.cli import build_parser

    page.goto(page.site + "/reference/course-autograde.html")
    text = page.locator("main").inner_text()
    parser = build_parser()
    modes = next(a for a in parser._actions if a.choices and isinstance(a.choices, dict)).choices
    missing = [f"{mode} {option}" for mode, sub in modes.items() for action in sub._actions
               if not isinstance(action, argparse._HelpAction)
               for option in action.option_strings if option not in text]
    assert not missing, missing
    assert _body_contrast(page) >= 4.5
    _shot(page, "reference")


def test_validation_notebook_is_a_page(page):
    """The validation notebook, executed at build time: its comparison with published runs reads
    offline, and its chart is a note rather than an empty box (no widget JavaScript is loaded)."""
    page.goto(page.site + "/validation.html")
    main = page.locator("main")
    text = main.inner_text()
    assert "Megatron-LM" in text and "Llama 3 405B" in text
    assert main.locator("table").count() >= 1
    assert main.locator("p.widget-note").count() >= 1
    assert main.locator("script[type='application/vnd.jupyter.widget-view+json']").count() == 0

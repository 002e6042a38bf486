"""A hostile student's markup is inert on every page an instructor or a student opens (issue 45).

Mallory hands in ch03 with every payload of ``tests/autograder/xss_payloads.py``: in her written
answer and in cells of her own (markdown, raw HTML, hostile metadata and attachments), and code
that makes hostile outputs when the grader runs it (HTML with scripts, JavaScript, SVG, markdown,
LaTeX, a PNG that breaks out of its tag, an isolated frame, a widget). The course grades her as an
instructor does (``course-autograde class`` in the sandbox, then ``report``), and Chromium opens:

* her feedback HTML (what grading on submit releases to her, too), from disk;
* the class report and every page it links;
* the formgrader's Manual Grading page of her submission, from a real Jupyter server with
  nbgrader's formgrader and the course's configuration, as the instructor's logged-in session;
* the formgrader's page of her notebook *as handed in* (every stored output and every malformed
  field the JSON can carry, which grading would have replaced), rendered by the same exporter;
* the second walls alone: her feedback page and the Manual Grading page as the server sends it (its own
  header), each with her ``<style>`` and ``style=`` payloads put back, as if the sanitizer had missed them.

On each: no payload's script runs (``window.__xss``, ``alert`` dialogs), nothing is fetched from the
beacon (meta refresh, ``<base>``, stylesheets, frames, remote images), no element is painted with
the student's colour and no student element is fixed over the page, no ``javascript:`` URL is left
to click; and on the pages that show her answer, what she wrote is readable as characters.
Screenshots go to ``test-artifacts/student_markup_*.png``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.autograder import xss_payloads as corpus
from tests.autograder.course_dir import formgrader_page, make_course, nbgrader_env, solution

from .conftest import ARTIFACTS, CHROMIUM, REPO, _free_port, jupyter_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ASSIGNMENT = "ch03_lr_scaling"
ANSWER = "ch03_ex3_4_why"
STUDENT = "mallory"
#: payloads whose JSON breaks nbformat's schema: a grader refuses such a notebook outright, so they go
#: only into the page of the notebook as handed in
SCHEMA_BREAKING = {"out_unknown_type", "out_execution_count", "cell_execution_count", "cell_id"}

#: run in each page after load: what ran, what is painted, what is left to click
PROBE = """() => {
    const colour = %r;
    const painted = [], fixed = [];
    for (const el of document.querySelectorAll('body *')) {
        const s = getComputedStyle(el);
        if (s.color === colour || s.backgroundColor === colour || s.fill === colour) painted.push(el.tagName);
        if (s.position === 'fixed' && el.closest('#notebook-container, .cell, .rendered_html')) fixed.push(el.tagName);
    }
    // the grader's own page stays visible: not hidden by a student's style, not covered by a student element
    const pageOwn = [...document.querySelectorAll('h1, h4, #toc, .panel-heading, .course-removed-markup')];
    const hidden = pageOwn.filter(el => { const s = getComputedStyle(el);
        return s.display === 'none' || s.visibility === 'hidden' || parseFloat(s.opacity) === 0
               || parseFloat(s.fontSize) === 0; }).map(el => el.tagName + '.' + el.className);
    const covered = pageOwn.filter(el => { const r = el.getBoundingClientRect();
        if (!r.width || !r.height || r.top < 0 || r.top + 2 > innerHeight) return false;
        const hit = document.elementFromPoint(r.left + 2, r.top + 2);
        return hit && !el.contains(hit) && !hit.contains(el)
               && hit.closest('.text_cell_render, .output_area, .rendered_html') !== null;
    }).map(el => el.tagName + '.' + el.className);
    const body = getComputedStyle(document.body);
    const clickable = [...document.querySelectorAll('[href], [src], [action], [formaction], [srcdoc]')]
        .map(el => el.getAttribute('href') || el.getAttribute('src') || el.getAttribute('action')
                   || el.getAttribute('formaction') || (el.hasAttribute('srcdoc') ? 'srcdoc' : ''))
        .filter(u => /^\\s*(javascript|vbscript|data:text)|srcdoc/i.test(u));
    const own = {jquery: typeof window.jQuery, submission: typeof window.submission_id,
                 tooltips: document.querySelectorAll('span.glyphicon.name-hidden[data-original-title]').length};
    return {xss: window.__xss || [], painted, fixed, hidden, covered, clickable, title: document.title, own,
            bodyBackground: body.backgroundColor, bodyColor: body.color, bodyFont: body.fontFamily,
            bars: [...document.querySelectorAll('.bar[style]')].map(e => [e.style.width, getComputedStyle(e).width]),
            policy: [...document.querySelectorAll('meta[http-equiv="Content-Security-Policy"]')].map(m => m.content),
            text: document.body ? document.body.innerText : ''};
}""" % corpus.STUDENT_COLOUR


def _run(root: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, *args], cwd=root, env=nbgrader_env(), capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    return proc


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A course root where mallory's hostile ch03 was graded, fed back and reported."""
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is missing (apt-get install -y chromium; .ci/run installs it in CI)")
    base = tmp_path_factory.mktemp("student_markup")
    root = make_course(base / "course", ASSIGNMENT)
    handed_in = corpus.hostile(solution(root, ASSIGNMENT, student=STUDENT), ANSWER)
    gradable = corpus.hostile(solution(root, ASSIGNMENT, student=STUDENT), ANSWER,
                              [p for p in corpus.ALL if p.name not in SCHEMA_BREAKING])
    folder = root / "submitted" / STUDENT / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / f"{ASSIGNMENT}.ipynb").write_text(json.dumps(gradable))
    _run(root, "-m", "autograder", "class", ASSIGNMENT, "--course-root", str(root), "--out", str(root / "out"),
         "--no-progress", "--seed", "3", "--cell-timeout", "60")
    _run(root, "-m", "autograder", "report", ASSIGNMENT, "--course-root", str(root), "--grades", str(root / "out"),
         "--out", str(root / "report"))
    (base / f"{ASSIGNMENT}.ipynb").write_text(json.dumps(handed_in))
    return root, base


@pytest.fixture(scope="module")
def formgrader(graded):
    """A Jupyter server in the course root with nbgrader's formgrader, configured as the course's
    instructors' servers are (the course's server extensions from ``.venv``'s Jupyter config)."""
    root, base = graded
    port, token = _free_port(), uuid.uuid4().hex
    config = base / "jupyter-config"
    config.mkdir()
    env = dict(nbgrader_env(), JUPYTER_CONFIG_DIR=str(config), JUPYTER_RUNTIME_DIR=str(base / "runtime"),
               JUPYTER_DATA_DIR=str(base / "data"), PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "jupyter", "server", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = base / "formgrader.log"
    with jupyter_server(cmd, port, token, log, env=env, cwd=root):
        yield f"http://127.0.0.1:{port}", token, root, log


def _submission_id(root: Path) -> str:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        return gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, STUDENT).id


def visit(browser, url: str, shot: str, *, cookies_from: str = None):
    """Open ``url`` in a fresh context, offline but for 127.0.0.1 and files; return what the page did."""
    context = browser.new_context(viewport={"width": 1300, "height": 1000})
    dialogs, beacons, console = [], [], []

    def route(r):
        target = r.request.url
        if "xss-beacon" in target:
            beacons.append(target)
            return r.abort()
        if target.startswith(("file:", "http://127.0.0.1", "data:", "about:")):
            return r.continue_()
        return r.abort()  # no network: the CDN's MathJax does not load here either

    context.route("**/*", route)
    page = context.new_page()
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("console", lambda m: console.append(m.text))
    response = page.goto(url, wait_until="load", timeout=120_000)
    page.wait_for_timeout(1500)  # timers, frames, late loads
    seen = page.evaluate(PROBE)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"student_markup_{shot}.png"), full_page=False)
    note = page.locator(".course-removed-markup")
    if note.count():  # what a grader sees of a payload: the note and the characters as written
        note.first.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"student_markup_{shot}_removed.png"), full_page=False)
    links = page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)")
    headers = response.all_headers() if response is not None else {}
    context.close()
    return dict(seen, dialogs=dialogs, beacons=beacons, console=console, links=links, headers=headers)


def assert_inert(seen: dict, where: str, readable: bool = True) -> None:
    assert seen["xss"] == [] and seen["dialogs"] == [], f"{where}: student script ran: {seen['xss']} {seen['dialogs']}"
    assert seen["beacons"] == [], f"{where}: the page fetched for the student: {seen['beacons']}"
    assert seen["painted"] == [] and seen["fixed"] == [], \
        f"{where}: student style applied: {seen['painted'][:5]} {seen['fixed'][:5]}"
    assert seen["hidden"] == [] and seen["covered"] == [], \
        f"{where}: student style hides or covers the page: {seen['hidden'][:5]} {seen['covered'][:5]}"
    assert seen["clickable"] == [], f"{where}: links that run script: {seen['clickable'][:5]}"
    assert seen["bodyBackground"] != corpus.STUDENT_COLOUR and "XSS" not in seen["title"]
    if readable:
        missing = [p.name for p in corpus.MARKDOWN if p.visible and p.visible not in seen["text"]]
        assert missing == [], f"{where}: what the student wrote is not readable: {missing}"


def test_feedback_is_inert(graded, browser):
    root, _ = graded
    feedback = root / "feedback" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.html"
    assert feedback.is_file(), sorted(str(p.relative_to(root)) for p in (root / "feedback").rglob("*"))
    seen = visit(browser, feedback.as_uri(), "feedback")
    assert_inert(seen, "feedback")
    assert seen["policy"] and "script-src 'none'" in seen["policy"][0], seen["policy"]


def test_feedback_policy_stops_a_student_style_the_sanitizer_missed(graded, browser):
    """The second wall on its own: the feedback page with a student's ``<style>`` and ``style`` put back
    into its body (as if the sanitizer had missed them) still paints, hides and covers nothing, while
    the page's own styles (in its head, allowed by hash) still apply."""
    root, base = graded
    page = (root / "feedback" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    own = visit(browser, (root / "feedback" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.html").as_uri(), "feedback_own")
    missed = "".join(p.value for p in corpus.MARKDOWN if p.name.startswith("md_style"))
    at = page.index("<body") + page[page.index("<body"):].index(">") + 1
    missed = f"<div class='text_cell_render rendered_html'>{missed}</div>"  # where a student's answer sits
    (base / "missed.html").write_text(page[:at] + missed + page[at:])
    seen = visit(browser, (base / "missed.html").as_uri(), "feedback_missed")
    assert seen["painted"] == [] and seen["fixed"] == [] and seen["hidden"] == [] and seen["covered"] == [], seen
    assert seen["bodyFont"] == own["bodyFont"] and "Times" not in own["bodyFont"], (seen["bodyFont"], own["bodyFont"])
    assert any("Content Security Policy" in line for line in seen["console"]), seen["console"][:5]


def test_class_report_and_its_links_are_inert(graded, browser):
    root, _ = graded
    report = root / "report" / "report.html"
    seen = visit(browser, report.as_uri(), "report")
    assert_inert(seen, "report", readable=False)
    assert seen["policy"] and "script-src 'none'" in seen["policy"][0], seen["policy"]
    # the report's own style still applies under it, its bars' widths (style attributes, by hash) too
    assert "system-ui" in seen["bodyFont"], seen["bodyFont"]
    assert seen["bars"] and all(want == got for want, got in seen["bars"]), seen["bars"]
    linked = [u for u in seen["links"] if u.startswith("file:") and "#" not in u.split("/")[-1][:1]]
    pages = sorted({u.split("#")[0] for u in linked} - {report.as_uri()})
    assert pages, "the report links no student's page"
    for i, link in enumerate(pages):
        assert_inert(visit(browser, link, f"report_link_{i}"), f"report link {link}")


def test_formgrader_manual_grading_page_is_inert(formgrader, browser):
    url, token, root, log = formgrader
    page = f"{url}/formgrader/submissions/{_submission_id(root)}/?token={token}"
    seen = visit(browser, page, "formgrader")
    assert "Student's answer" in seen["text"], seen["text"][:500]
    assert_inert(seen, "formgrader")
    # the second wall: the course's header policy (autograder/engines/formgrader_csp.py, enabled from .venv's config)
    policy = seen["headers"].get("content-security-policy", "")
    script_src = next((d for d in policy.replace("\n", ";").split(";") if d.strip().startswith("script-src")), "")
    assert script_src and "'unsafe-inline'" not in script_src, policy
    assert "base-uri 'none'" in policy and "object-src 'none'" in policy
    # nbgrader's own page still works under it: its scripts from the server, its inline scripts (by hash)
    assert seen["own"]["jquery"] == "function" and seen["own"]["submission"] == "string", seen["own"]
    assert seen["own"]["tooltips"] >= 1, seen["own"]
    assert not any("Content Security Policy" in line for line in seen["console"] if "xss" not in line.lower()), \
        [line for line in seen["console"] if "Content Security Policy" in line][:3]


#: run in the formgrader's page: a ``<style>`` a script creates (as MathJax 2 adds its own while it typesets)
#: applies; one parsed from markup at run time (``innerHTML``, as a library would insert a student's HTML)
#: does not; nbgrader's own ``style=`` (the score box's 4em) still applies
OWN_STYLES = """() => {
    const probe = document.createElement('span'); probe.textContent = 'probe'; probe.id = 'csp-probe';
    document.body.appendChild(probe);
    const made = document.createElement('style'); made.textContent = '#csp-probe { letter-spacing: 7px }';
    document.head.appendChild(made);
    const holder = document.createElement('div');
    holder.innerHTML = '<style>#csp-probe { word-spacing: 9px }</style>';
    document.body.appendChild(holder);
    const score = document.querySelector('input.score');
    const s = score ? getComputedStyle(score) : null;
    return {scripted: getComputedStyle(probe).letterSpacing, parsed: getComputedStyle(probe).wordSpacing,
            scoreEm: s ? parseFloat(s.width) / parseFloat(s.fontSize) : null};
}"""


def test_formgrader_policy_stops_a_student_style_the_sanitizer_missed(formgrader, browser):
    """The second wall on its own, on the real server's page and header: the Manual Grading page with the
    corpus's ``<style>`` elements and ``style=`` attributes put back into the notebook part (as if the
    sanitizer had missed them) paints, hides and covers nothing, and Chromium reports the refusal; the
    page's own styles still apply: its head's ``<style>``, nbgrader's score widths (by hash), and a
    ``<style>`` a script of the page creates (MathJax's way of adding its styles: the nonce)."""
    url, token, root, log = formgrader
    page = f"{url}/formgrader/submissions/{_submission_id(root)}/?token={token}"
    missed = "".join(p.value for p in corpus.MARKDOWN if p.name.startswith("md_style"))
    missed = f"<div class='text_cell_render rendered_html'>{missed}</div>"  # where a student's answer sits
    context = browser.new_context(viewport={"width": 1300, "height": 1000})
    console = []

    def route(r):
        if r.request.url == page:  # the server's own response, headers and all, with the student's style put back
            served = r.fetch()
            html = served.text()
            at = html.index('id="notebook-container"')
            at = html.index(">", at) + 1
            return r.fulfill(response=served, body=html[:at] + missed + html[at:])
        return r.continue_() if r.request.url.startswith("http://127.0.0.1") else r.abort()

    context.route("**/*", route)
    tab = context.new_page()
    tab.on("console", lambda m: console.append(m.text))
    response = tab.goto(page, wait_until="load", timeout=120_000)
    tab.wait_for_timeout(1500)
    seen, own = tab.evaluate(PROBE), tab.evaluate(OWN_STYLES)
    tab.screenshot(path=str(ARTIFACTS / "student_markup_formgrader_missed.png"), full_page=False)
    policy = response.all_headers().get("content-security-policy", "")
    context.close()
    assert seen["painted"] == [] and seen["fixed"] == [] and seen["hidden"] == [] and seen["covered"] == [], \
        {k: seen[k] for k in ("painted", "fixed", "hidden", "covered")}
    assert seen["bodyBackground"] != corpus.STUDENT_COLOUR
    assert any("Content Security Policy" in line and "style" in line for line in console), console[:5]
    assert own == {"scripted": "7px", "parsed": "0px", "scoreEm": 4.0}, own
    directives = {d.split()[0]: d for d in (x.strip() for x in policy.replace("\n", ";").split(";")) if d}
    assert "'nonce-" in directives["style-src-elem"] and "'unsafe-inline'" not in directives["style-src-elem"], policy
    assert "'unsafe-inline'" not in directives["style-src-attr"], policy


def test_formgrader_page_of_the_notebook_as_handed_in_is_inert(graded, browser):
    root, base = graded
    (base / "handed_in.html").write_text(formgrader_page(root, ASSIGNMENT, base / f"{ASSIGNMENT}.ipynb"))
    assert_inert(visit(browser, (base / "handed_in.html").as_uri(), "handed_in"), "notebook as handed in")

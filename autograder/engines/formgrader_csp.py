"""A Content-Security-Policy header on the formgrader's submission pages (a Jupyter server extension).

The formgrader's Manual Grading page (``/formgrader/submissions/<id>/``) shows a student's notebook
inside the instructor's logged-in Jupyter server, where a script could call the server's REST API,
open a terminal and run anything as the grader. :mod:`autograder.grading.sanitize` makes the notebook
inert before it is rendered; this header is the second wall, so that markup the sanitizer missed still
cannot run or restyle the page. It allows what nbgrader's page itself needs and nothing the notebook
part can add:

* scripts from the server itself and nbconvert's MathJax CDN, plus, by hash, the inline scripts and
  event-handler attributes of the page *above the notebook* (nbgrader's template: the submission's
  ids, the student-name toggle); ``'unsafe-eval'`` because MathJax 2 evaluates its configuration;
* ``<style>`` elements and style sheets: from the server and the CDN, the page's own ``<style>``
  elements above the notebook by hash, and those a script of the page creates while it runs (MathJax 2
  writes about eight while it typesets: they are not known in advance, so no hash can name them) by a
  nonce drawn for each response. :data:`STYLE_NONCE_SCRIPT`, put first in the page's ``<head>``,
  gives that nonce to every ``<style>`` element a script creates with ``document.createElement``; markup
  parsed from the notebook (a ``<style>`` the sanitizer missed) has no nonce and is refused;
* ``style=`` attributes: only the few nbgrader's template writes (the score boxes' widths), by hash
  (``'unsafe-hashes'``), read from nbgrader's installed template and from the page above the notebook;
  a student's ``style=`` (a box fixed over the page) is refused. Scripts that set styles through the
  CSSOM (``element.style``, as MathJax, jQuery and Bootstrap do) are not governed by any policy;
* requests to the server only; images from the server or inline ``data:``; no frames, plugins,
  ``<base>``, or form posts elsewhere.

Checked in Chromium (``tests/browser/test_student_markup.py``, with MathJax 2.7.7 served in place of
the CDN): a student's math is typeset as under the looser policy, and a ``<style>`` element or ``style=``
attribute put back into the notebook part (as if the sanitizer had missed it) applies nothing. With
hashes alone (no nonce), MathJax's own style elements are refused and it typesets nothing.

JupyterLab and every other page of the server keep their own headers: a policy this strict would
break JupyterLab, so it is set per response, by a tornado output transform, only on these pages.
``dev.py`` enables the extension for every Jupyter server run from ``.venv``
(``.venv/etc/jupyter/jupyter_server_config.d/course-autograder.json``); the hub's instructors get
it from :mod:`hub.setup`.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
import secrets
from pathlib import Path

from tornado.web import OutputTransform

#: the pages that show a student's notebook
SUBMISSION_PAGE = re.compile(r"/formgrader/submissions/[^/]+/?$")
#: where nbgrader's formgrade template starts the notebook: everything above it is the template's own
NOTEBOOK_START = b'id="notebook-container"'
#: nbconvert's default MathJax (``HTMLExporter.mathjax_url``)
MATHJAX_CDN = "https://cdnjs.cloudflare.com"

_INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"text/x-mathjax-config\")[^>]*>(.*?)</script>",
                            re.S | re.I)
_HANDLER = re.compile(r"\son[a-z]+=\"([^\"]*)\"", re.I)
_STYLE_ELEMENT = re.compile(r"<style\b[^>]*>(.*?)</style>", re.S | re.I)
_STYLE_ATTRIBUTE = re.compile(r"\sstyle=\"([^\"{}]*)\"", re.I)
_HEAD = re.compile(rb"<head\b[^>]*>", re.I)

#: put first in the page's ``<head>`` with the response's nonce: every ``<style>`` element a script of the page
#: creates (MathJax's, while it typesets) carries the nonce the policy allows; parsed markup gets none
STYLE_NONCE_SCRIPT = ("(function(){var n=document.currentScript.nonce,c=Document.prototype.createElement;"
                      "Document.prototype.createElement=function(t){var e=c.apply(this,arguments);"
                      "if(String(t).toLowerCase()==='style'){e.nonce=n}return e}})();")


def _hashes(items) -> str:
    return " ".join(sorted({"'sha256-%s'" % base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()
                            for s in items}))


@functools.lru_cache(maxsize=None)
def template_style_attributes() -> frozenset:
    """The ``style=`` attributes nbgrader's formgrade template writes itself, also inside the notebook part
    (the score and extra-credit boxes' widths): read from the installed template, so an nbgrader that
    changes them is followed."""
    from nbgrader.server_extensions.formgrader import handlers

    folder = Path(handlers.template_path) / "formgrade"
    return frozenset(value for template in sorted(folder.glob("*.j2"))
                     for value in _STYLE_ATTRIBUTE.findall(template.read_text(encoding="utf-8")))


def submission_page_policy(own_html: str, nonce: str = None) -> str:
    """The policy for a submission page whose template part (above the notebook) is ``own_html``; ``nonce``
    (drawn per response) allows the ``<style>`` elements the page's scripts create (:data:`STYLE_NONCE_SCRIPT`)."""
    scripts = _hashes(_INLINE_SCRIPT.findall(own_html))
    handlers = _hashes(_HANDLER.findall(own_html))
    elements = " ".join(filter(None, ["'self'", MATHJAX_CDN, _hashes(_STYLE_ELEMENT.findall(own_html)),
                                      f"'nonce-{nonce}'" if nonce else ""]))
    attributes = _hashes(set(_STYLE_ATTRIBUTE.findall(own_html)) | template_style_attributes())
    attributes = f"'unsafe-hashes' {attributes}" if attributes else "'none'"
    return "; ".join([
        "default-src 'self'",
        " ".join(filter(None, ["script-src 'self'", MATHJAX_CDN, "'unsafe-eval'", scripts,
                               "'unsafe-hashes' " + handlers if handlers else ""])),
        # style-src for a browser without the two below (both: elements and attributes alike)
        f"style-src {elements} {attributes}" if attributes != "'none'" else f"style-src {elements}",
        f"style-src-elem {elements}",
        f"style-src-attr {attributes}",
        "img-src 'self' data:",
        f"font-src 'self' data: {MATHJAX_CDN}",
        "connect-src 'self'",
        "frame-src 'none'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
    ])


def with_style_nonce(page: bytes, nonce: str) -> bytes:
    """``page`` with :data:`STYLE_NONCE_SCRIPT` first in its ``<head>`` (unchanged without one)."""
    head = _HEAD.search(page)
    if head is None:
        return page
    script = f'<script nonce="{nonce}">{STYLE_NONCE_SCRIPT}</script>'.encode()
    return page[:head.end()] + script + page[head.end():]


class SubmissionPagePolicy(OutputTransform):
    """Adds :func:`submission_page_policy` to an HTML response of a submission page (a second
    ``Content-Security-Policy`` header beside Jupyter's own ``frame-ancestors`` one: both apply)."""

    def __init__(self, request):
        super().__init__(request)
        self._applies = bool(SUBMISSION_PAGE.search(request.path))

    def transform_first_chunk(self, status_code, headers, chunk, finishing):
        if self._applies and headers.get("Content-Type", "").startswith("text/html"):
            # nbgrader writes the page in one piece; were it streamed, the policy would allow only
            # what the first piece holds above the notebook (stricter, never looser)
            nonce = secrets.token_urlsafe(18)
            chunk = with_style_nonce(chunk, nonce)
            if "Content-Length" in headers:
                headers["Content-Length"] = str(len(chunk))
            own = chunk.split(NOTEBOOK_START, 1)[0].decode("utf-8", "replace")
            headers.add("Content-Security-Policy", submission_page_policy(own, nonce))
        return status_code, headers, chunk


def _jupyter_server_extension_points():
    return [{"module": "autograder.engines.formgrader_csp"}]


def _load_jupyter_server_extension(serverapp):
    # first, so that it sees the page as written (before any compressing transform)
    serverapp.web_app.transforms.insert(0, SubmissionPagePolicy)
    serverapp.log.info("autograder.engines.formgrader_csp: Content-Security-Policy on the formgrader's "
                       "submission pages")


#: the Jupyter configuration that enables this extension (written by dev.py and hub/setup.py)
SERVER_CONFIG = {"ServerApp": {"jpserver_extensions": {"autograder.engines.formgrader_csp": True}}}

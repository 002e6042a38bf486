"""A Content-Security-Policy header on the formgrader's submission pages (a Jupyter server extension).

The formgrader's Manual Grading page (``/formgrader/submissions/<id>/``) shows a student's notebook
inside the instructor's logged-in Jupyter server, where a script could call the server's REST API,
open a terminal and run anything as the grader. :mod:`autograder.sanitize` makes the notebook inert
before it is rendered; this header is the second wall, so that markup the sanitizer missed still
cannot run. It allows what nbgrader's page itself needs and nothing the notebook part can add:

* scripts from the server itself and nbconvert's MathJax CDN, plus, by hash, the inline scripts and
  event-handler attributes of the page *above the notebook* (nbgrader's template: the submission's
  ids, the student-name toggle); ``'unsafe-eval'`` because MathJax 2 evaluates its configuration;
* requests to the server only; images from the server or inline ``data:``; no frames, plugins,
  ``<base>``, or form posts elsewhere.

Styles stay ``'unsafe-inline'`` here (nbgrader's page and MathJax write style attributes), so on
this page a student's style is kept out by the sanitizer alone.

JupyterLab and every other page of the server keep their own headers: a policy this strict would
break JupyterLab, so it is set per response, by a tornado output transform, only on these pages.
``dev.py`` enables the extension for every Jupyter server run from ``.venv``
(``.venv/etc/jupyter/jupyter_server_config.d/course-autograder.json``); the hub's instructors get
it from :mod:`hub.setup`.
"""

from __future__ import annotations

import base64
import hashlib
import re

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


def _hashes(items) -> str:
    return " ".join(sorted({"'sha256-%s'" % base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()
                            for s in items}))


def submission_page_policy(own_html: str) -> str:
    """The policy for a submission page whose template part (above the notebook) is ``own_html``."""
    scripts = _hashes(_INLINE_SCRIPT.findall(own_html))
    handlers = _hashes(_HANDLER.findall(own_html))
    return "; ".join([
        "default-src 'self'",
        " ".join(filter(None, ["script-src 'self'", MATHJAX_CDN, "'unsafe-eval'", scripts,
                               "'unsafe-hashes' " + handlers if handlers else ""])),
        f"style-src 'self' 'unsafe-inline' {MATHJAX_CDN}",
        "img-src 'self' data:",
        f"font-src 'self' data: {MATHJAX_CDN}",
        "connect-src 'self'",
        "frame-src 'none'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
    ])


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
            own = chunk.split(NOTEBOOK_START, 1)[0].decode("utf-8", "replace")
            headers.add("Content-Security-Policy", submission_page_policy(own))
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

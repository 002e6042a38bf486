"""The formgrader's submission-page policy (``autograder/engines/formgrader_csp.py``) without a browser:
what it allows of styles, and the nonce it draws for each response. Chromium's side is in
``tests/browser/test_student_markup.py``."""

from __future__ import annotations

import types

from tornado.httputil import HTTPHeaders

from autograder.engines import formgrader_csp as csp

PAGE = (b'<!DOCTYPE html><html><head><script>var submission_id = "x";</script>'
        b'<style type="text/css">body { margin: 0 }</style></head><body><span style="margin-left: 1em;">own</span>'
        b'<div class="container" id="notebook-container"><style>body { background: red }</style>'
        b'<div style="position:fixed">student</div></div></body></html>')


def _directives(policy: str) -> dict:
    return {d.split()[0]: d.split()[1:] for d in policy.split("; ")}


def _served(path="/formgrader/submissions/abc/"):
    headers = HTTPHeaders({"Content-Type": "text/html; charset=UTF-8", "Content-Length": str(len(PAGE))})
    transform = csp.SubmissionPagePolicy(types.SimpleNamespace(path=path))
    return transform.transform_first_chunk(200, headers, PAGE, True)


def test_each_response_gets_its_own_style_nonce():
    (_, headers, body), (_, again, _) = _served(), _served()
    policy = headers.get_list("Content-Security-Policy")[0]
    nonce = _directives(policy)["style-src-elem"][-1]
    assert nonce.startswith("'nonce-") and nonce not in again.get_list("Content-Security-Policy")[0]
    # the script that hands the nonce to the styles scripts create comes first in <head>, allowed by hash
    script = f'<script nonce="{nonce[7:-1]}">{csp.STYLE_NONCE_SCRIPT}</script>'.encode()
    assert body.startswith(b"<!DOCTYPE html><html><head>" + script)
    assert headers["Content-Length"] == str(len(body))
    assert csp._hashes([csp.STYLE_NONCE_SCRIPT]) in _directives(policy)["script-src"]


def test_styles_only_from_the_page_itself():
    _, headers, _ = _served()
    d = _directives(headers.get_list("Content-Security-Policy")[0])
    for name in ("style-src", "style-src-elem", "style-src-attr", "script-src"):
        assert "'unsafe-inline'" not in d[name], name
    # the head's own <style> and nbgrader's own style= (above the notebook, and its template's score widths)
    assert csp._hashes(["body { margin: 0 }"]) in d["style-src-elem"]
    assert csp._hashes(["body { background: red }"]) not in d["style-src-elem"]
    assert {"width: 4em;", "width: 3em;", "margin-left: 1em;"} <= csp.template_style_attributes()
    own = csp._hashes(sorted(csp.template_style_attributes() | {"margin-left: 1em;"})).split()
    assert d["style-src-attr"] == ["'unsafe-hashes'", *own]
    assert csp._hashes(["position:fixed"]) not in d["style-src-attr"]


def test_other_pages_keep_their_headers():
    status, headers, body = _served("/lab/tree/x.ipynb")
    assert body == PAGE and "Content-Security-Policy" not in headers

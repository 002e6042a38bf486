"""Maths as MathML (``html_math_renderer = "mathml"`` in ``conf.py``), drawn by the browser itself: the site loads no MathJax from a CDN, so it reads
offline (the same choice as the course's feedback, :mod:`autograder.grading.offline_maths`).

A formula latex2mathml cannot convert is shown as its TeX source in ``<code>`` and reported as a
warning, so a CI build with ``-W`` names it.
"""

from __future__ import annotations

from docutils import nodes
from latex2mathml.converter import convert
from sphinx.util import logging

logger = logging.getLogger(__name__)


def _mathml(self, node, tex: str, display: str) -> str:
    try:
        return convert(tex.strip(), display=display)
    except Exception as error:  # noqa: BLE001 (latex2mathml raises many kinds; the page still builds)
        logger.warning("formula not converted to MathML (%s): %s", error, tex, location=node)
        return f"<code>{self.encode(tex)}</code>"


def visit_math(self, node) -> None:
    self.body.append(_mathml(self, node, node.astext(), "inline"))
    raise nodes.SkipNode


def visit_math_block(self, node) -> None:
    self.body.append(f'<div class="math-block">{_mathml(self, node, node.astext(), "block")}</div>')
    raise nodes.SkipNode


def setup(app):
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_math_block, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}

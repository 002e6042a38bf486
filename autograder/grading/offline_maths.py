"""Feedback maths that reads offline: LaTeX in markdown becomes MathML, which browsers draw
themselves, instead of waiting for MathJax from a CDN (a student reading feedback on a train).

:class:`MathToMathML` is one of the feedback preprocessors (``autograder.grading.feedback``); the
feedback template loads no MathJax (``autograder/templates/feedback/mathjax.html.j2``).
"""

from __future__ import annotations

import re

from ..compat import NbGraderStep

#: ``$$...$$`` (display) or ``$...$`` (inline; not ``\\$``, not spanning blank lines)
MATH = re.compile(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<![\\$])\$(?!\s)((?:[^$\n]|\n(?!\n))+?)(?<![\s\\])\$(?!\d)", re.S)


def to_mathml(text: str) -> str:
    """``text`` with each TeX formula replaced by MathML; a formula that does not convert stays.

    >>> to_mathml("costs $N-1$ steps")
    'costs <math xmlns="http://www.w3.org/1998/Math/MathML" display="inline"><mrow><mi>N</mi><mo>&#x02212;</mo><mn>1</mn></mrow></math> steps'
    """
    from latex2mathml.converter import convert

    def one(match: re.Match) -> str:
        display, inline = match.group(1), match.group(2)
        try:
            return convert(display if display is not None else inline,
                           display="block" if display is not None else "inline")
        except Exception:  # not TeX after all (prices, shell variables): leave it as written
            return match.group(0)

    return MATH.sub(one, text)


class MathToMathML(NbGraderStep):
    """Markdown cells' TeX as MathML (outputs are left alone)."""

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            if cell.get("cell_type") == "markdown" and "$" in cell.get("source", ""):
                cell.source = to_mathml(cell.source)
        return nb, resources

"""Prompts and derivations render as written: currency is escaped (``\\$``) so Markdown and the
feedback's maths step never read a price as maths, and no float prints as ``8e+09`` outside code.

For 30 students and every workbook exercise, after removing code spans and well-formed maths
(``$...$`` on one line, ``$$...$$``), no unescaped ``$``, no ``^`` and no e-notation is left; and
the feedback's maths step (:mod:`autograder.grading.offline_maths`) turns no currency into MathML.
"""

from __future__ import annotations

import re

import pytest

from course.activities import SYLLABUS
from course.assess.spec import derivation_markdown, spec_for
from course.assess.variants import variant_of

STUDENTS = [f"r{i:02d}" for i in range(30)]
CHAPTERS = [a for a in SYLLABUS.by_name.values() if getattr(a, "exercises", ())]
CODE = re.compile(r"`[^`]*`")
MATHS = re.compile(r"\$\$.+?\$\$|(?<![\\$])\$(?!\s)[^$\n]+?(?<![\s\\])\$(?!\d)", re.S)


def _texts(activity):
    for ex in activity.exercises:
        for student in STUDENTS:
            variant = variant_of(activity.name, student)
            yield ex.number, derivation_markdown(ex, variant)
            if ex.prompt:
                yield ex.number, ex.prompt(spec_for(ex, variant))


@pytest.mark.parametrize("activity", CHAPTERS, ids=lambda a: a.name)
def test_nothing_outside_maths_reads_as_maths_or_e_notation(activity):
    for number, text in _texts(activity):
        plain = MATHS.sub("M", CODE.sub("C", text))
        assert not re.search(r"(?<!\\)\$", plain), (number, text)
        assert not re.search(r"\d[eE][+-]?\d", plain), (number, text)
        assert "^" not in plain, (number, text)


def test_currency_stays_text_in_the_feedback_maths_step():
    from autograder.grading.offline_maths import to_mathml

    for activity in CHAPTERS:
        for number, text in _texts(activity):
            for price in re.findall(r"\\\$[0-9][0-9,.]*", text):
                assert price in to_mathml(text), (number, price)

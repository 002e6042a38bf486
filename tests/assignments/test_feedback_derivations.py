"""Feedback never misleads: each worked derivation appears once, and it renders as written.

A notebook run as a student's Run All shows each derivation in its check's output once the answer is
right; feedback inserts the derivation after the exercise. Feedback must hold it once. The 9.9
derivation's dollar signs are currency: rendered with the course's feedback template they stay
dollar signs around bold text, not maths.
"""

from __future__ import annotations

import re

import nbformat
import pytest
from nbformat.v4 import new_markdown_cell, new_notebook

from . import student_notebooks as sn

pytestmark = pytest.mark.slow

NAME = "ch09_capstone"
STUDENT = "lin"


def test_each_derivation_appears_once_in_feedback(tmp_path):
    from course.activities import SYLLABUS
    from course.assess.feedback import insert_derivations

    nb = sn.notebook(NAME, STUDENT, "honest")
    path = sn.write(nb, tmp_path / f"{NAME}.ipynb")
    said = sn.run_visible(nb, path.parent, sn.kernel_env(STUDENT, tmp_path / "ledger.json"))
    assert set(said.values()) == {"right"}
    text = lambda n: "".join(str(o.get("data", {}).get("text/markdown", "")) for c in n.cells  # noqa: E731 -- a one-line helper local to this function
                             for o in c.get("outputs", [])) + "".join(c.source for c in n.cells
                                                                      if c.cell_type == "markdown")
    # the student saw each derivation in the check's output ...
    assert len(re.findall(r"Worked derivation, exercise 9\.1\b", text(nb))) == 1
    fed = insert_derivations(nbformat.from_dict(nb), SYLLABUS, STUDENT)
    for ex in SYLLABUS.by_name[NAME].exercises:  # ... and feedback holds it once
        assert len(re.findall(rf"Worked derivation, exercise {re.escape(ex.number)}\b", text(fed))) == 1, ex.number


def test_currency_renders_as_dollars_not_maths():
    from nbconvert import HTMLExporter

    from autograder.grading.offline_maths import MathToMathML
    from course.activities import SYLLABUS
    from course.assess.spec import derivation_markdown, spec_for
    from course.assess.variants import variant_of

    ex = SYLLABUS.exercise("9.9")
    variant = variant_of(NAME, STUDENT)
    markdown = derivation_markdown(ex, variant)
    prompt = ex.prompt(spec_for(ex, variant))
    nb, _ = MathToMathML().preprocess(new_notebook(cells=[new_markdown_cell(prompt), new_markdown_cell(markdown)]), {})
    html, _ = HTMLExporter(template_name="basic").from_notebook_node(nb)  # what feedback's template renders
    body = html
    assert "<math" not in body and "\\$" not in body
    assert re.search(r"<strong>\$[0-9][0-9,]*</strong>", body), body[-3000:]
    assert re.search(r"costs \$0\.\d+ per kWh", body) and "GPU rental at $2/GPU-h" in body

"""Feedback HTML for one student: scores and derivations in, hidden tests out.

Steps, all nbgrader/nbconvert preprocessors or plain notebook edits:

1. nbgrader's ``GetGrades`` puts the gradebook's scores on the cells;
2. nbgrader's ``ClearHiddenTests`` removes ``### BEGIN/END HIDDEN TESTS`` regions;
3. every graded test cell's outputs (tracebacks of hidden tests may name hidden
   inputs or keys) are replaced by one line: the trusted judge's reason for a
   registered part, or only pass/fail and the error's type for other cells;
4. the workbook's worked derivations are inserted after each exercise
   (``course.exercises.feedback.insert_derivations``, skipped if absent);
5. nbconvert's HTMLExporter with nbgrader's ``feedback`` template renders it.
"""

from __future__ import annotations

import copy
import os
import threading
from typing import Dict

import nbformat
from nbformat.v4 import new_output


def _template_config():
    from traitlets.config import Config

    import nbgrader

    base = os.path.dirname(nbgrader.__file__)
    c = Config()
    c.HTMLExporter.template_name = "feedback"
    c.HTMLExporter.extra_template_basedirs = [
        os.path.join(base, "server_extensions", "formgrader", "templates")]
    c.HTMLExporter.extra_template_paths = [
        os.path.join(base, "server_extensions", "formgrader", "static", "node_modules",
                     "bootstrap", "dist", "css")]
    return c


def scrub_test_outputs(nb, verdicts: Dict[str, tuple]):
    """Replace the outputs of graded test cells by a one-line result (in place)."""
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade") or meta.get("solution"):
            continue
        gid = meta.get("grade_id")
        if gid in verdicts:
            score, reason = verdicts[gid]
            text = f"{'passed' if score >= 1 else 'not passed'}: {reason}\n"
        else:
            errors = [o.get("ename", "error") for o in cell.get("outputs", [])
                      if o.get("output_type") == "error"]
            text = f"not passed ({errors[0]})\n" if errors else "passed\n"
        cell.outputs = [new_output("stream", name="stdout", text=text)]
    return nb


def _insert_derivations(nb, student=None):
    try:
        from course.exercises.feedback import insert_derivations
    except ImportError:  # the workbook's hook is optional
        return nb
    return insert_derivations(nb, student)  # the student's own numbers (their variant)


def feedback_notebook(nb, resources: dict, verdicts: Dict[str, tuple]):
    """The feedback notebook (a copy); needs the gradebook (``resources['nbgrader']``)."""
    from nbgrader.preprocessors import ClearHiddenTests, GetGrades

    nb = copy.deepcopy(nb)
    resources = copy.deepcopy(resources)
    nb, resources = GetGrades().preprocess(nb, resources)
    nb, resources = ClearHiddenTests().preprocess(nb, resources)
    scrub_test_outputs(nb, verdicts)
    _insert_derivations(nb, resources.get("nbgrader", {}).get("student"))
    return nb, resources


_exporters = threading.local()


def _exporter():
    """This thread's HTMLExporter: building one loads the templates, so each worker keeps its own."""
    exporter = getattr(_exporters, "html", None)
    if exporter is None:
        from nbconvert import HTMLExporter
        from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor

        exporter = HTMLExporter(config=_template_config())
        exporter.register_preprocessor(CSSHTMLHeaderPreprocessor(), enabled=True)
        _exporters.html = exporter
    return exporter


def render_feedback(nb, resources: dict) -> str:
    """HTML of a feedback notebook (no gradebook access, so no lock needed)."""
    html, _ = _exporter().from_notebook_node(nb, resources=copy.deepcopy(resources))
    return html


def write_feedback(nb, resources: dict, verdicts: Dict[str, tuple]) -> str:
    """Render the feedback HTML for one graded notebook."""
    nb, resources = feedback_notebook(nb, resources, verdicts)
    return render_feedback(nb, resources)

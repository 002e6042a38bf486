"""Feedback HTML for one student: scores and derivations in, hidden tests out.

Steps 1-4 are :data:`FEEDBACK_PREPROCESSORS`, the list ``nbgrader_config.py`` gives nbgrader,
so plain ``nbgrader generate_feedback`` and the formgrader's button run them too:

1. nbgrader's ``GetGrades`` puts the gradebook's scores on the cells;
2. nbgrader's ``ClearHiddenTests`` removes ``### BEGIN/END HIDDEN TESTS`` regions;
3. :class:`ScrubTestOutputs` replaces every graded test cell's outputs (tracebacks of
   hidden tests name their code, the grader's paths and the judge's call) by the summary
   ``course-autograde`` left in ``autograded/`` (:func:`annotate_summaries`: for a
   registered part its points, the trusted judge's reason, each partial-credit check and
   what the visible check covered versus what was graded), else by the score and
   pass/fail with the error's type;
4. the workbook's worked derivations are inserted after each exercise
   (``course.notebook_api.feedback.InsertDerivations``, skipped if absent);
5. nbconvert's HTMLExporter with nbgrader's ``feedback`` template renders it.
"""

from __future__ import annotations

import copy
import os
import threading
from typing import TYPE_CHECKING, Dict

from nbformat.v4 import new_output

if TYPE_CHECKING:
    from course.assess.registry import Verdict


def template_basedirs():
    """nbgrader's templates, then the course's: its ``feedback/mathjax.html.j2`` loads no MathJax
    from a CDN, since :mod:`autograder.grading.offline_maths` has made the maths MathML already."""
    import nbgrader

    return [os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions", "formgrader", "templates"),
            os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates")]


def _template_config():
    from traitlets.config import Config

    import nbgrader

    base = os.path.dirname(nbgrader.__file__)
    c = Config()
    c.HTMLExporter.template_name = "feedback"
    # nbconvert validates the whole notebook against the schema after each of its own preprocessors (a
    # check on preprocessors, not on the notebook, which was validated when read): a sixth of a render.
    # Its own setting makes that one validation after the last one.
    c.HTMLExporter.optimistic_validation = True
    c.HTMLExporter.extra_template_basedirs = template_basedirs()
    c.HTMLExporter.extra_template_paths = [
        os.path.join(base, "server_extensions", "formgrader", "static", "node_modules",
                     "bootstrap", "dist", "css")]
    from .sanitize import configure

    configure(c)  # the student's notebook as inert data (autograder/grading/sanitize.py), as nbgrader_config.py does
    return c


#: ``GenerateFeedback.preprocessors`` for plain ``nbgrader generate_feedback`` (nbgrader_config.py
#: points at this name); :func:`feedback_notebook` runs the same list, except the CSS step, which
#: the HTML exporter of :func:`render_feedback` runs itself
FEEDBACK_PREPROCESSORS = [
    "autograder.grading.feedback.GetGrades",
    "autograder.grading.feedback.ClearHiddenTests",
    "autograder.grading.feedback.ScrubTestOutputs",
    "autograder.grading.handgrading.WidgetNote",
    "autograder.grading.handgrading.NotAnswered",
    "autograder.grading.awaiting.AwaitingInstructor",
    "course.notebook_api.feedback.InsertDerivations",
    "autograder.grading.offline_maths.MathToMathML",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
#: cell metadata key where ``course-autograde`` leaves each graded test cell's summary in
#: ``autograded/`` (so feedback made later by nbgrader itself shows the same text)
SUMMARY_KEY = "autograder"
_RENDER_ONLY = {"nbconvert.preprocessors.CSSHTMLHeaderPreprocessor"}


def _coverage(grade_id: str) -> str:
    """What the visible check covered versus what was graded, for a registered part."""
    try:
        from course.notebook_api import REGISTRY
    except ImportError:
        return ""
    part = REGISTRY.get(grade_id)
    if part is None:
        return ""
    if part.function is not None:
        return ("The visible check ran only the worked example shown in the notebook. Grading called "
                f"`{part.function.name}` again, in a fresh process, on the worked example, edge "
                "cases, random inputs and invalid inputs (which must raise ValueError); their values "
                "are not shown.")
    from course.assess.variants import exam_mode

    if part.judged_in == "kernel":
        return ""  # a lab answer or a lock: no visible check ran on it
    if exam_mode(part.assignment):
        return ("The visible check looked at type and units only (exam mode). Grading compared the "
                "value with the key for your numbers.")
    return ("The visible check compared your value with the key for your own numbers, within the "
            "stated tolerance. Grading compared it again, from a fresh run of your notebook's code.")


def part_summary(grade_id: str, max_points: float, verdict) -> str:
    """Text a student can act on: points, the reason, each check's points and reason, coverage
    (``verdict``: the judge's :class:`~course.assess.registry.Verdict`)."""
    lines = [f"{verdict.score * max_points:g} of {max_points:g} points: {verdict.reason}"]
    for check in verdict.checks:
        lines.append(f"  - {check.name}: {check.earned * max_points:g} of {check.share * max_points:g} "
                     f"points ({check.reason})")
    coverage = _coverage(grade_id)
    if coverage:
        lines.append(coverage)
    return "\n".join(lines) + "\n"


def scrub_test_outputs(nb, verdicts: Dict[str, "Verdict"]):
    """Replace the outputs of graded test cells by the trusted judge's summary (in place).

    Registered parts get :func:`part_summary`; other graded cells only pass or
    fail and the error's type (a hidden test's traceback may name hidden inputs).
    """
    for cell in nb.cells:
        if _is_test_cell(cell):
            cell.outputs = [new_output("stream", name="stdout", text=_summary_text(cell, verdicts))]
    return nb


def _is_test_cell(cell) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def annotate_summaries(nb, verdicts: Dict[str, "Verdict"]):
    """Leave each graded test cell's :func:`part_summary` (or pass/fail) in its metadata, for
    :class:`ScrubTestOutputs`; any such metadata the submission carried is dropped first (in place)."""
    for cell in nb.cells:
        cell.get("metadata", {}).pop(SUMMARY_KEY, None)
    for cell in nb.cells:
        if _is_test_cell(cell):
            cell.metadata[SUMMARY_KEY] = {"summary": _summary_text(cell, verdicts)}
    return nb


def _summary_text(cell, verdicts: Dict[str, "Verdict"]) -> str:
    meta = cell.metadata.get("nbgrader", {})
    gid = meta.get("grade_id")
    if gid in verdicts:
        points = meta.get("points")
        max_points = float(points) if type(points) in (int, float) and points > 0 else 1.0
        return part_summary(gid, max_points, verdicts[gid])
    recorded = cell.metadata.get(SUMMARY_KEY, {})
    if isinstance(recorded, dict) and isinstance(recorded.get("summary"), str):
        return recorded["summary"][:20000]
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    score, points = meta.get("score"), meta.get("points")
    scored = (f"{score:g} of {points:g} points: " if type(score) in (int, float) and type(points) in (int, float)
              else "")
    if not errors:
        return scored + "test cell passed\n"
    ename = str(errors[0].get("ename", "error"))[:80]
    if ename == "AssertionError" and _is_registered(gid):
        # plain nbgrader: the course's hidden test raised the judge's reason, which names what is
        # wrong and never the key (the judge's contract); the traceback itself stays hidden
        return scored + f"test cell failed: {str(errors[0].get('evalue', ''))[:500]}\n"
    # only the error's type: a hidden test's traceback names its code, inputs and the grader's paths
    return scored + f"test cell failed ({ename})\n"


def _is_registered(grade_id) -> bool:
    """Whether ``grade_id`` is a part of the course's activity list (its test cell calls the judge)."""
    try:
        from course.activities import REGISTRY
    except ImportError:  # feedback rendered where the course package is not installed
        return False
    return isinstance(grade_id, str) and grade_id in REGISTRY


import nbgrader.preprocessors  # noqa: E402 -- below the list that names its steps

from .. import compat  # noqa: E402 -- beside the nbgrader import

# nbgrader's own feedback steps, accepting display_data_priority as configuration (compat.NbGraderStep):
# no "display_data_priority not recognized" warnings on Generate Feedback
GetGrades = compat.accepting_display_priority(nbgrader.preprocessors.GetGrades, __name__)
ClearHiddenTests = compat.accepting_display_priority(nbgrader.preprocessors.ClearHiddenTests, __name__)


class ScrubTestOutputs(compat.NbGraderStep):  # an nbgrader step: enabled by default, unlike nbconvert's
    """nbgrader feedback preprocessor: each graded test cell's outputs become its summary.

    The summary is the one ``course-autograde`` left in the cell's metadata (points, the trusted
    judge's reason, each check), else the gradebook's score and pass/fail with the error's type.
    Tracebacks of hidden tests (their code, the grader's paths, the judge's call) never reach the
    feedback, whichever command or button made it.
    """

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            if _is_test_cell(cell):
                cell.outputs = [new_output("stream", name="stdout", text=_summary_text(cell, {}))]
            cell.get("metadata", {}).pop(SUMMARY_KEY, None)
        return nb, resources


def _course_config(course_root):
    """The course's configuration (:mod:`autograder.grading.course_settings`), read once per process and root."""
    from .course_settings import CourseSettings

    key = str(course_root)
    if key not in _CONFIGS:
        _CONFIGS[key] = CourseSettings(course_root).config
    return _CONFIGS[key]


_CONFIGS: dict = {}


def _preprocessors(course_root=None):
    """The feedback steps, each built with the course's configuration (``c.ClearHiddenTests.*``,
    ``c.GetGrades.*``, ...): ``c.GenerateFeedback.preprocessors`` of its ``nbgrader_config.py``, as
    ``nbgrader generate_feedback`` runs them, else :data:`FEEDBACK_PREPROCESSORS`."""
    from traitlets.config import Config
    from traitlets.utils.importstring import import_item

    config = _course_config(course_root) if course_root is not None else Config()
    listed = config.GenerateFeedback.get("preprocessors") if "GenerateFeedback" in config else None
    found = []
    for step in listed or FEEDBACK_PREPROCESSORS:
        dotted = step if isinstance(step, str) else f"{step.__module__}.{step.__name__}"
        if dotted in _RENDER_ONLY:
            continue
        try:
            cls = import_item(step) if isinstance(step, str) else step
        except ImportError:  # the workbook's derivation hook is optional
            continue
        found.append(cls(config=config))
    return found


def feedback_notebook(nb, resources: dict, verdicts: Dict[str, "Verdict"], gradebook_lock=None):
    """The feedback notebook (a copy); needs the gradebook (``resources['nbgrader']``; its ``course_root``,
    when given, configures the steps).

    Only ``GetGrades`` reads the gradebook, so only it runs under ``gradebook_lock``
    (when given); the other steps run in parallel with other workers.
    """
    nb = copy.deepcopy(nb)
    resources = copy.deepcopy(resources)
    for pp in _preprocessors(resources.get("nbgrader", {}).get("course_root")):
        if type(pp).__name__ in _READS_GRADEBOOK and gradebook_lock is not None:
            with gradebook_lock:
                nb, resources = pp.preprocess(nb, resources)
        else:
            nb, resources = pp.preprocess(nb, resources)
    scrub_test_outputs(nb, verdicts)
    return nb, resources


#: the steps that read the gradebook (run under the grader's gradebook lock)
_READS_GRADEBOOK = {"GetGrades", "AwaitingInstructor"}
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
    """HTML of a feedback notebook (no gradebook access, so no lock needed), its styles pinned by hash
    (:func:`autograder.grading.sanitize.pin_page_styles`)."""
    from .sanitize import pin_page_styles

    html, _ = _exporter().from_notebook_node(nb, resources=copy.deepcopy(resources))
    return pin_page_styles(html)

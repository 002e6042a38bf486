"""What notebooks, hidden tests and the autograder call: the assessment engine
(:mod:`course.assess`) bound to the one activity list (:mod:`course.activities`).

Notebooks import it by its older name, ``course.exercises`` (an alias: ``course._moved``); the lab
session is :mod:`course.notebook_api.lab_session` (old name ``course.labs.activity``).

Contract for the autograder
---------------------------
``REGISTRY`` maps every autograded nbgrader ``grade_id`` to a
:class:`~course.assess.registry.Part` (``exercise``, ``kind``, ``points``,
``names``, ``assignment``, ``ledger_key``, ``harvest``, ``judge``, ``probes``
and its typed ``item``: :mod:`course.assess.items`).

1. Harvest: plain values only, never a judgement. The autograder reads function
   results and assigned names in a clean room without the course package
   (``autograder/judging/sandboxed_cleanroom.py``) for the parts whose ``judged_in`` is
   ``"clean room"``, and builds each value part's harvest with ``part.harvest``
   on those plain values; the others (a lab answer, a locked prediction) are
   harvested in the student's kernel by ``harvest_json(grade_id, globals(), seed)``.
   In-kernel harvests of Build parts (plain nbgrader, tests) call the student's
   function on ``part.probes(seed)`` with ``course.core`` poisoned.
2. In a trusted process: ``judge_json(grade_id, text, seed)`` returns a
   :class:`Verdict` (``score`` in [0, 1], ``reason`` a student may read: it
   names what is wrong, never the hidden inputs or the key); the points are
   ``score * REGISTRY[grade_id].points``. Use the same ``seed`` for both:
   ``course.assess.variants.student_seed(assignment, student, probe_seed)``
   (it carries the student's variant as well as the probe seed).
   Function parts give partial credit: ``Verdict.checks`` lists each
   :class:`Check` (worked example, edge cases, random inputs, invalid inputs).
3. Hidden test cells in the notebooks call ``grade_in_kernel(grade_id,
   globals())``, which harvests and judges in the kernel and raises
   ``AssertionError(reason)`` unless the score is 1, so plain ``nbgrader
   autograde`` grades honest submissions correctly (all or nothing per cell).

Grade ids: ``chNN_exN_M`` (``ch00_ex0_1``); Debug parts add ``_line`` and
``_fix``; a second Build function adds ``_<function>``. They are formatted once,
by the declarations (``Exercise.grade_id``, ``Lab.grade_id``), and never
parsed back: what a cell is comes from :meth:`Syllabus.role_of`.

Adding a chapter: write ``course/chapters/chNN.py`` (``ACTIVITY = CH = Chapter(...)``
and exercises declared through :mod:`course.assess.authoring`), add one line to
``course.activities.ACTIVITIES``; then ``course build-sources`` and
``course build-release <assignment>``.
"""

from course.activities import REGISTRY, SYLLABUS  # noqa: F401 -- re-exported: the API notebooks and hidden tests import from here
from course.assess import codes
from course.assess.checks import (  # noqa: F401 -- re-exported: the API notebooks and hidden tests import from here
    check_exercise, show_exercise, validate_answered as _validate_answered, validate_exercise, whoami,
)
from course.assess.registry import (  # noqa: F401 -- re-exported: the API notebooks and hidden tests import from here
    KINDS, Check, NotPlain, Part, Verdict, judge_plain, plain_number, roundtrip, safe_judge, to_plain,
)


def check(exercise: str, namespace: dict) -> None:
    """Visible check of exercise ``exercise`` (its number, e.g. ``"0.1"``) against this student's numbers."""
    check_exercise(SYLLABUS.exercise(exercise), namespace)


def validate(exercise: str, namespace: dict) -> None:
    """A test cell's visible part: under ``nbgrader validate``, fail naming what is unanswered or not yet
    right by exercise ``exercise``'s visible check; elsewhere nothing (no attempt, no derivation)."""
    __tracebackhide__ = True  # noqa: F841 -- pytest reads it to hide this frame from a student's traceback
    validate_exercise(SYLLABUS.exercise(exercise), namespace)


def validate_answered(grade_id: str, namespace: dict) -> None:
    """A lab test cell's visible part: under ``nbgrader validate``, fail if part ``grade_id`` is not
    answered (or its prediction not locked); elsewhere nothing."""
    __tracebackhide__ = True  # noqa: F841 -- pytest reads it to hide this frame from a student's traceback
    _validate_answered(REGISTRY[grade_id], namespace)


def show(exercise: str) -> None:
    """Render exercise ``exercise``'s prompt with this student's numbers (read-only prompt cells)."""
    show_exercise(SYLLABUS.exercise(exercise))


def harvest_json(grade_id: str, namespace: dict, seed: int = 0) -> str:
    """Harvest ``grade_id`` from ``namespace`` (in the kernel) and return JSON text."""
    import json
    import warnings

    part = REGISTRY[grade_id]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            harvested = part.harvest(namespace, part.probes(seed))
    except Exception as exc:  # a broken answer must still produce a row
        harvested = {"__harvest_error__": type(exc).__name__}
    return json.dumps(to_plain(harvested), allow_nan=True)


def judge_json(grade_id: str, text: str, seed: int = 0, adjust=None) -> Verdict:
    """Judge harvested JSON ``text`` for ``grade_id`` (in a trusted process); ``adjust(harvested)``,
    if given, returns the harvest to judge (the grader adds what it knows from the notebook's text)."""
    import json

    part = REGISTRY.get(grade_id)
    if part is None:
        return Verdict(0.0, f"unknown exercise {grade_id!r}", code=codes.JUDGE_ERROR)
    try:
        harvested = json.loads(text)
    except (TypeError, ValueError):
        return Verdict(0.0, "the answer could not be read back from the notebook", code=codes.UNREADABLE)
    return safe_judge(part, adjust(harvested) if adjust else harvested, seed)


def grade_in_kernel(grade_id: str, namespace: dict, seed: "int | None" = None) -> None:
    """Hidden-test entry point: raise AssertionError with the reason unless fully correct.

    Without ``seed`` the variant is that of the student this kernel grades
    (under ``nbgrader autograde``: the ``autograded/<student>/`` folder).
    """
    import warnings

    from course.assess.variants import current_variant, grading_seed

    if seed is None:
        seed = grading_seed(0, current_variant(REGISTRY[grade_id].assignment))

    # nbgrader gives a cell zero points for any stderr output: keep the student's warnings out of it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        verdict = REGISTRY[grade_id].grade(namespace, seed)
    if not verdict.passed:
        raise AssertionError(verdict.reason)
    print(f"{grade_id}: {verdict.reason}")


def student(student_id=None):
    """Show who this kernel is, with a box to save your id; ``student("ada")`` saves it at once (then restart
    the kernel): ``course.notebook_api.identity``. Imported here lazily: checking and grading never load
    the widget stack."""
    from course.notebook_api.identity import student as panel

    return panel(student_id)

"""Visible checks: run in the student's kernel, say right or not yet, record mastery.

``check("0.1", globals())`` (:func:`course.notebook_api.check`, which finds the
exercise in the activity list and calls :func:`check_exercise`) looks at what the student defined for exercise 0.1
and prints one line per finding, against **this student's own numbers**
(:mod:`course.assess.variants`):

* Derive / Trace / Design values: missing name, wrong type, non-finite value;
  then **right** (within the tolerance the prompt states) or **not yet**,
  with a unit-slip hint when the value is off by a recognisable factor
  (10^3, 10^6, 10^9, a percent written as a fraction, GiB for GB...). A value
  within a factor of 3 that is outside the tolerance is *not yet*.
* Choices: whether the value is one of the allowed options, then right or not yet.
* Build / Debug functions: the worked example(s), then the hidden tests'
  own judge on this student's inputs (right or not yet).

In a kernel, what is judged is what grading will read: the notebook's code cells run again from
the top by the clean room's own program without the course package
(:mod:`course.assess.cleanroom_protocol`); a name only this kernel has (computed with ``course.core``, or in a
cell that fails there) is *not yet*, naming the cell and its error. ``validate_exercise`` is the same
check in a test cell, acting only under ``nbgrader validate``; under grading
(``NBGRADER_EXECUTION``) a check counts nothing and shows no derivation.

Exam mode (``feedback: "exam"`` in :data:`course.assess.variants.SETTINGS`)
falls back to type and unit checks and offers no derivation.

After a right answer, or after :data:`~course.assess.variants.DERIVATION_AFTER_ATTEMPTS`
*different* wrong answers, the check prints the worked derivation for the student's numbers.

A check counts an attempt only for a new answer: one that differs from every answer this student
already checked for the exercise on these numbers (:mod:`course.assess.attempts`). Re-running the
cell, Run All and a restart count nothing. The exercise's ledger entry (``"ch00/ex0_1"``) keeps,
per student and variant (``by_identity``), ``attempts``, ``wrong``, ``passed`` and ``last_passed``,
and at its top level ``days`` (the local dates with activity, for the streak). A ledger failure
never breaks the check.
"""

from __future__ import annotations

import datetime as _dt
import dis
import math
import os
from typing import Any, Dict, List, Optional, Tuple

from . import variants
from .attempts import answer_fingerprint, count_answer, identity
from .kinds import call_plain
from .items import CLEAN_ROOM
from .ranks import RANKS, check_lines as rank_check_lines
from .registry import (
    RAISED, Part, is_number_type, judge_plain, order_hint, roundtrip, safe_judge, to_plain, unit_hint,
)
from .spec import Exercise, derivation_markdown, spec_for

OK, BAD = "\u2714", "\u2718"
#: what the setup cell prints in a kernel that knows no student (feedback looks for it)
NO_STUDENT = "no student id found"

def whoami(assignment: str, source: str = "workbook") -> None:
    """Print whose numbers this kernel shows for ``assignment`` (the setup cell calls it).

    ``source`` names where the default numbers come from ("workbook", "lab").
    """
    from .cleanroom_protocol import record_cells

    record_cells()  # the visible checks run again the cells this kernel runs, as grading will
    student, found_in = variants.current_student()
    if not variants.variants_on(assignment):
        print(f"{assignment}: everyone has the {source}'s numbers.")
    elif student is None:
        print(f"{assignment}: {NO_STUDENT}, so these are the {source}'s numbers. Run, in a cell, "
              "`from course.exercises import student; student('<your nbgrader id>')` (or `course student "
              "<your nbgrader id>` in a Terminal) and restart the kernel: you are graded on the numbers of your id.")
    elif os.environ.get("NBGRADER_EXECUTION") == "autograde":
        # the grader's kernel: its COURSE_STUDENT is the grader's doing, and feedback shows this line
        print(f"{assignment}: numbers for student {student!r} (this is the grading run: the grader "
              "names the student whose submission it grades).")
    else:
        print(f"{assignment}: numbers for student {student!r} (identity from: {found_in}; "
              f"{variants.IDENTITY_SOURCES.get(found_in, '')}). You are graded on the numbers of "
              "the id nbgrader records for your submission.")
    if variants.exam_mode(assignment):
        print("Exam mode: the checks test type and units only.")


def show_exercise(ex: Exercise) -> None:
    """Render ``ex``'s prompt with this student's numbers (read-only prompt cells call it)."""
    variant = variants.current_variant(ex.assignment)
    display_markdown(ex.prompt(spec_for(ex, variant)) if ex.prompt else "")


def display_markdown(text: str) -> None:
    """Rendered Markdown in a Jupyter kernel, plain text anywhere else (a script, a test)."""
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
    except ImportError:  # pragma: no cover - the kernel always has IPython
        get_ipython = None
    if get_ipython is not None and get_ipython() is not None:
        display(Markdown(text))
    else:
        print(text)


def check_exercise(ex: Exercise, namespace: dict) -> None:
    """Visible check of exercise ``ex``; prints findings, records an attempt."""
    if not _answered(ex, namespace):  # nothing assigned yet: say what to do, count no attempt
        print(f"{BAD} Exercise {ex.number}: {_unanswered(ex)}, run it, "
              "then run this check (an unanswered check counts no attempt).")
        return
    import os

    if os.environ.get(VALIDATING[0]) == "autograde":
        # grading (nbgrader's or course-autograde's kernel) judges from a fresh run of the notebook
        # itself: a check here would cost a second run and could only repeat or contradict that grade
        print(f"Exercise {ex.number}: graded from a fresh run of your notebook's code; "
              "the points and the reason are in the graded cell below.")
        return
    if os.environ.get(VALIDATING[0]) == VALIDATING[1]:
        return  # Validate: the test cell below runs the same check and reports it, counting nothing
    variant = variants.current_variant(ex.assignment)
    exam = variants.exam_mode(ex.assignment)
    lines, shaped, right = assess(ex, namespace, variant, exam)
    for line in lines:
        print(line)
    missing = _missing_answers(ex, namespace)
    if missing:
        # the same rule as a blank check: an answer is an attempt only once every part of it is given
        print(f"{BAD} Exercise {ex.number}: not complete yet: {'; '.join(missing)}, then check again "
              "(a check with an answer missing counts no attempt, as an unanswered one does).")
        return

    # nbgrader's Validate or autograde (course-autograde's kernel too) runs the notebook: no attempt
    # is counted and no derivation shown (feedback inserts each derivation once, after the exercise)
    grading = bool(os.environ.get(VALIDATING[0]))
    counted = None if grading else _record(ex, right, variant, answer_fingerprint(_answer_names(ex), namespace))
    record, new = counted if counted else ({"attempts": 1, "wrong": 0 if right else 1}, True)
    if exam:
        if shaped:
            print(f"{OK} Exercise {ex.number}: types and units look fine (exam mode: graded after submission).")
        return
    if right:
        print(f"{OK} Exercise {ex.number}: right.")
    elif grading:
        print(f"{BAD} Exercise {ex.number}: not yet.")
    else:
        attempts = int(record.get("attempts", 1))
        print(f"{BAD} Exercise {ex.number}: not yet (attempt {attempts}" + (
            ")." if new else ": this answer was checked before, so running it again counts no new attempt)."))
    # the worked derivation: after a right answer, or after enough *different* wrong answers (re-runs,
    # Run All and restarts check the same answer again and bring it no closer)
    if not grading and (right or int(record.get("wrong", 0)) >= variants.DERIVATION_AFTER_ATTEMPTS):
        _offer_derivation(ex, variant)


#: what nbgrader sets in the environment of the kernel it runs for Validate
VALIDATING = ("NBGRADER_EXECUTION", "validate")


class ValidateFinding(AssertionError):
    """What Validate reports for a test cell: the verdict lines first, then the exercise's line, and no
    traceback (IPython shows ``_render_traceback_`` in its place, so no frame and no path of the
    course package reaches the student: nbgrader's Validate prints the error output as it is).

    >>> ValidateFinding(["\u2718 `x`: not yet.", "Exercise 0.1 not yet right."])._render_traceback_()
    ['\u2718 `x`: not yet.', 'Exercise 0.1 not yet right.']
    """

    def __init__(self, lines: List[str]):
        super().__init__("\n".join(lines))
        self.lines = list(lines)

    def _render_traceback_(self) -> List[str]:
        return list(self.lines)


def validate_exercise(ex: Exercise, namespace: dict) -> None:
    """The test cell's visible part: under ``nbgrader validate`` (the Validate button, the Assignments
    list, the command), raise ``AssertionError`` naming what is unanswered or not yet right by the
    visible check, so Validate reports it; elsewhere (an interactive kernel's Run All, grading) do
    nothing. Never records an attempt or shows a derivation."""
    import os

    __tracebackhide__ = True  # noqa: F841 (IPython shows Validate the message, not this frame)
    if os.environ.get(VALIDATING[0]) != VALIDATING[1]:
        return
    if not _answered(ex, namespace):
        raise ValidateFinding(_to_answer(ex) + [f"Exercise {ex.number} not answered: "
                                                "answer it in its answer cell."])
    variant = variants.current_variant(ex.assignment)
    exam = variants.exam_mode(ex.assignment)
    lines, shaped, right = assess(ex, namespace, variant, exam)
    if not shaped or (not exam and not right):
        wrong = [line for line in lines if line.startswith(BAD)] or lines
        raise ValidateFinding(wrong + [f"Exercise {ex.number} not yet right by the visible check."])
    print(f"{OK} Exercise {ex.number}: {'types and units look fine' if exam else 'right'} by the visible check.")


def validate_answered(part: Part, namespace: dict) -> None:
    """A lab test cell's visible part: under ``nbgrader validate``, fail if ``part`` is not answered
    (its name undefined) or, for a prediction lock, not locked; never judges the answer (labs are
    graded on submission) and records nothing. Elsewhere nothing."""
    import os

    __tracebackhide__ = True  # noqa: F841 -- pytest reads it to hide this frame from a student's traceback
    if os.environ.get(VALIDATING[0]) != VALIDATING[1]:
        return
    if part.kind == "lock":
        if not part.harvest(namespace, None).get("locked"):
            raise ValidateFinding([f"{part.title}: not yet: lock your prediction ({part.ledger_key})."])
    else:
        missing = [n for n in part.names if n not in namespace]
        if missing:
            raise ValidateFinding([f"define `{n}`" for n in missing] + [f"{part.title} not answered."])
    print(f"{OK} {part.title}: answered (graded on submission).")


def _unanswered(ex: Exercise) -> str:
    return f"not answered yet: {'; '.join(_to_answer(ex))} in the answer cell"


def _to_answer(ex: Exercise) -> List[str]:
    """What answering ``ex`` takes, one line per name: a value to define, or a function whose
    body (the release's stub, ``pass``) is still to be written."""
    functions = {part.function.name for part in ex.parts if part.function is not None}
    return [f"write the body of `{n}`" if n in functions else f"define `{n}`"
            for n in _answer_names(ex)]


def assess(ex: Exercise, namespace: dict, variant: Optional[int], exam: bool) -> Tuple[List[str], bool, bool]:
    """``(lines, shaped, right)`` of exercise ``ex`` by the grader's rule.

    In a kernel the answers judged are those the notebook's code gives when run again from the
    top by the clean room's own program without the course package (:mod:`course.assess.cleanroom_protocol`),
    as grading reads them; a name this kernel has that the re-run lacks is *not yet*, with the cell
    that failed. Outside a kernel (a script) the namespace is judged as it is.
    """
    view = _grader_view(ex, variant)
    lines: List[str] = []
    judged = dict(namespace)
    missing: Dict[str, str] = {}
    if view is not None and view.get("error"):
        lines.append(f"{BAD} {view['error']}")
    elif view is not None:
        for part in ex.parts:
            if part.judged_in != CLEAN_ROOM:
                continue
            for name in part.names:
                present = name in view["values"] or (part.function is not None and view["functions"].get(name))
                if present and part.function is None:
                    value = view["values"][name]
                    if name in namespace and _plain_or_none(namespace[name]) != value:
                        lines.append(f"   (`{name}` is graded as {value!r}, what your notebook gives run again "
                                     f"from the top; this kernel has {namespace[name]!r})")
                    judged[name] = value
                elif not present:
                    if part.function is None:
                        judged.pop(name, None)
                    if name in namespace:
                        missing[name] = _missing_line(name, view)
    shaped = True
    for part in ex.parts:
        if part.function is not None:
            if part.function.name in missing:
                ok, found = False, [missing[part.function.name]]
            elif part.judged_in == RANKS:  # a collective: its examples on simulated ranks
                ok, found = rank_check_lines(part, namespace, OK, BAD, variant)
            else:
                ok, found = _check_function(part, namespace, _examples(ex, part, variant),
                                            _prompt_shows_own_example(ex, part, variant))
        else:
            ok, found = _check_values(ex, part, judged, variant, exam, missing)
        shaped = shaped and ok
        lines.extend(found)
    right = shaped and not exam and not (view is not None and view.get("error"))
    if right:  # the hidden tests' own judge, on this student's numbers, on what grading reads
        for part in ex.parts:
            if view is not None and part.grade_id in view["verdicts"]:
                verdict = view["verdicts"][part.grade_id]
            else:
                verdict = part.grade(namespace, variants.grading_seed(0, variant))
            if not verdict.passed:
                right = False
                if part.function is not None:
                    lines.append(f"{BAD} `{part.function.name}`: {verdict.reason}.")
    return lines, shaped, right


def _plain_or_none(value: Any) -> Any:
    try:
        return roundtrip(to_plain(value))
    except Exception:
        return None


def _grader_view(ex: Exercise, variant: Optional[int]) -> Optional[dict]:
    """What grading will read for ``ex``: ``{"values", "functions" (name: found), "verdicts", "failed",
    "sources"}``, ``{"error": reason}`` if the notebook could not be run again, ``None`` outside a kernel."""
    from . import cleanroom_protocol as cleanroom

    found = cleanroom.student_cells(ex.grade_id("_check"))
    if found is None:
        return None
    sources, _ = found
    fparts = [p for p in ex.parts if p.judged_in == CLEAN_ROOM and p.function is not None]
    vparts = [p for p in ex.parts if p.judged_in == CLEAN_ROOM and p.function is None]
    seed = variants.grading_seed(0, variant)
    try:
        data = cleanroom.rerun(sources, cleanroom.request_for_parts(fparts, vparts, seed))
    except OSError as exc:
        data, reason = None, f"{type(exc).__name__}: {exc}"
    else:
        reason = f"it gave no answer within {cleanroom.CHECK_TIMEOUT} s"
    if data is None:
        return {"error": f"Exercise {ex.number}: your notebook's code could not be run again from the top "
                         f"without the course package, as grading runs it ({reason}): not yet."}
    harvested = cleanroom.harvests_for_parts(data, fparts, vparts)
    verdicts = {p.grade_id: safe_judge(p, _plain_or_none(harvested[p.grade_id]), seed) for p in fparts + vparts}
    functions = {p.function.name: data["functions"].get(p.grade_id) != {"missing": True} for p in fparts}
    return {"values": data["values"], "functions": functions, "verdicts": verdicts,
            "failed": data.get("failed", []), "sources": sources}


def _missing_line(name: str, view: dict) -> str:
    """``name`` is in this kernel but not in the re-run: say so, with the cells that failed there."""
    import re

    sources, failed = view["sources"], [f for f in view["failed"] if type(f) is list and len(f) == 2]
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    named = [(i, err) for i, err in failed if i < len(sources) and pattern.search(sources[i])]
    shown = named or [(i, err) for i, err in failed if "NotImplementedError" not in str(err)]
    cells = "; ".join(f"the cell starting `{_first_line(sources[i])}` raised {err}" for i, err in shown[:2]
                      if i < len(sources))
    where = (f": {cells}" if cells else ": no cell there assigns it (was it defined in a cell you have "
             "deleted, or changed and not saved?)")
    return (f"{BAD} `{name}` is defined in this kernel, but not when your notebook's code is run again from "
            f"the top without the course package, as grading runs it{where}. Compute it in plain Python "
            "(math is fine), save the notebook and check again: not yet.")


def _first_line(source: str) -> str:
    for line in str(source).splitlines():
        if line.strip() and not line.strip().startswith("#"):
            return line.strip()[:60] + ("\u2026" if len(line.strip()) > 60 else "")
    return "(empty)"


def _answer_names(ex: Exercise) -> List[str]:
    """The names the student defines for ``ex``: its values and functions, in declaration order."""
    names: List[str] = []
    for part in ex.parts:
        if part.function is not None:
            names.append(part.function.name)
        elif part.value is not None:
            names.extend(part.value.units)
    return names


def _answered(ex: Exercise, namespace: dict) -> bool:
    """Whether the student has defined any of ``ex``'s answers (then the check shows its findings; it
    counts an attempt only once every answer is given: :func:`_missing_answers`); a function still
    holding the release's stub body (``pass``) is not an answer."""
    return any(name in namespace and not _stub_function(namespace[name]) for name in _answer_names(ex))


def _missing_answers(ex: Exercise, namespace: dict) -> List[str]:
    """What ``ex`` still lacks, one line per name: undefined, ``None``, or a function still the release's
    stub. Empty once every answer is given (only then does a check count an attempt)."""
    functions = {part.function.name for part in ex.parts if part.function is not None}
    return [f"write the body of `{n}`" if n in functions else f"define `{n}`" for n in _answer_names(ex)
            if n not in namespace or namespace[n] is None or _stub_function(namespace[n])]


def _stub_function(value: Any) -> bool:
    """Whether ``value`` is a function whose body does nothing but return None (the release stub ``pass``).

    >>> def f(x):
    ...     \"\"\"Doc.\"\"\"
    ...     # YOUR CODE HERE
    ...     pass
    >>> def g(x):
    ...     return x
    >>> _stub_function(f), _stub_function(g), _stub_function(3)
    (True, False, False)
    """
    code = getattr(value, "__code__", None)
    if code is None:
        return False
    ops = [(i.opname, i.argval) for i in dis.get_instructions(code) if i.opname not in ("RESUME", "NOP")]
    return ops in ([("RETURN_CONST", None)], [("LOAD_CONST", None), ("RETURN_VALUE", None)])


def _offer_derivation(ex: Exercise, variant: Optional[int]) -> None:
    display_markdown(derivation_markdown(ex, variant))


def _check_values(ex: Exercise, part: Part, namespace: dict, variant: Optional[int],
                  exam: bool, missing: Optional[Dict[str, str]] = None) -> Tuple[bool, List[str]]:
    """Type and shape of every answer (``ok``) and, unless in exam mode, right / not yet per name."""
    item = part.value
    keys = item.key(spec_for(ex, variant))
    units = item.units
    options = item.options
    ok, lines = True, []
    for name, unit in units.items():
        key = keys[name]
        if name not in namespace:
            ok = False
            if name in (missing or {}):
                lines.append(missing[name])
                continue
            lines.append(f"{BAD} `{name}` is not defined yet: assign it in the answer cell and run that cell.")
            continue
        value = namespace[name]
        if name in options:
            allowed = list(options[name])
            if isinstance(value, str):
                good = value.strip().casefold() in [str(o).casefold() for o in allowed]
            else:
                good = is_number_type(value) and any(value == o for o in allowed if not isinstance(o, str))
            if not good:
                ok = False
                lines.append(f"{BAD} `{name}` must be one of {allowed}; got {value!r}.")
            elif exam:
                lines.append(f"{OK} `{name}` is one of the allowed options.")
            else:
                lines.append(_right_or_not(name, unit, value, key, 0.0))
            continue
        if isinstance(key, (list, tuple)):
            if not isinstance(value, (list, tuple)) or len(value) != len(key):
                ok = False
                lines.append(f"{BAD} `{name}` must be a list of {len(key)} items.")
            elif exam:
                lines.append(f"{OK} `{name}` has the right shape.")
            else:
                lines.append(_right_or_not(name, unit, value, key, item.tolerances.get(name, item.rtol)))
            continue
        if isinstance(key, str):
            if not isinstance(value, str):
                ok = False
                lines.append(f"{BAD} `{name}` must be a string.")
            elif not exam:
                lines.append(_right_or_not(name, unit, value, key, 0.0))
            continue
        if not is_number_type(value):
            ok = False
            lines.append(f"{BAD} `{name}` must be a number (int or float), got {type(value).__name__}.")
            continue
        if not math.isfinite(float(value)):
            ok = False
            lines.append(f"{BAD} `{name}` must be finite, got {value}.")
            continue
        if exam:
            lines.append(f"{OK} `{name}` is a number; give it in {unit}.")
            continue
        rtol = item.tolerances.get(name, item.rtol)
        lines.append(_right_or_not(name, unit, value, key, rtol))
    return ok, lines


def _right_or_not(name: str, unit: str, value: Any, key: Any, rtol: float) -> str:
    """One line: right (the judge's own comparison) or not yet, with a unit-slip hint for numbers."""
    if judge_plain(to_plain(value), key, rtol=rtol, name=name).passed:
        return f"{OK} `{name}` ({unit}): right."
    if type(key) in (int, float) and is_number_type(value):
        return f"{BAD} `{name}` ({unit}): {unit_hint(float(value), float(key), unit)[1]}."
    hint = order_hint(to_plain(value), key) if isinstance(key, (list, tuple)) else None
    return f"{BAD} `{name}`: not yet: {hint}." if hint else f"{BAD} `{name}`: not yet."


def _examples(ex: Exercise, part: Part, variant: Optional[int]) -> List[list]:
    """The worked examples the check runs: the student's own first, when the exercise varies it."""
    from .authoring import student_example

    own = student_example(ex, variant) if part.grade_id in (ex.grade_id(), ex.grade_id("_fix")) else None
    return ([own] if own is not None else []) + [a for a in part.function.examples if a != own]


def _prompt_shows_own_example(ex: Exercise, part: Part, variant: Optional[int]) -> bool:
    """Whether the prompt shows this student a worked example of their own (the check's first)."""
    from .authoring import student_example

    return part.grade_id in (ex.grade_id(), ex.grade_id("_fix")) and student_example(ex, variant) is not None


def _check_function(part: Part, namespace: dict, examples: List[list],
                    own_first: bool = False) -> Tuple[bool, List[str]]:
    """Run ``examples``; only the one the prompt shows is called "the worked example" (with ``own_first``
    the first is the student's own, and the workbook's that follow are "a fixed example")."""
    item = part.function
    name = item.name
    fn = namespace.get(name)
    if not callable(fn):
        return False, [f"{BAD} define a function named `{name}` and run its cell."]
    ok, lines = True, []
    for position, args in enumerate(examples):
        the = "the worked example" if position == 0 or not own_first else "a fixed example"
        expected = item.reference(*args)
        got = call_plain(fn, args)
        shown = f"{name}({', '.join(map(repr, args))})"
        if item.returns == "numbers":  # a tuple of numbers: compare element-wise
            good = (type(got) is list and len(got) == len(expected)
                    and all(type(g) in (int, float) for g in got)
                    and all(math.isclose(g, e, rel_tol=1e-6, abs_tol=1e-9) for g, e in zip(got, expected)))
            ok = ok and good
            want = ", ".join(f"{e:.6g}" for e in expected)
            lines.append(f"{OK} {shown} matches {the} ({want})." if good else
                         f"{BAD} {shown} returned {got!r}; {the} gives ({want}).")
            continue
        if isinstance(got, dict) and RAISED in got:
            ok = False
            lines.append(f"{BAD} {shown} raised {got[RAISED]}; expected {expected:.6g}.")
        elif type(got) not in (int, float) or (item.returns == "int" and type(got) is not int):
            ok = False
            lines.append(f"{BAD} {shown} must return a plain {'int' if item.returns == 'int' else 'number'}.")
        elif not math.isclose(got, expected, rel_tol=1e-6, abs_tol=1e-9):
            ok = False
            lines.append(f"{BAD} {shown} returned {got:.6g}; {the} gives {expected:.6g}.")
        else:
            lines.append(f"{OK} {shown} = {got:.6g} matches {the}.")
    good, bad = [], []
    for args in item.invalid_examples:  # inputs outside the prompt's ranges: the prompt asks for a ValueError
        got = call_plain(fn, args)
        shown = f"{name}({', '.join(map(repr, args))})"
        raised = isinstance(got, dict) and got.get(RAISED)
        (good if raised == "ValueError" else bad).append(
            shown if raised == "ValueError" else f"{shown} " + (f"raised {raised}" if raised else f"returned {got!r}"))
    if bad:
        ok = False
        lines += [f"{BAD} {line}; input outside the prompt's ranges must raise ValueError." for line in bad[:3]]
        if len(bad) > 3:
            lines.append(f"{BAD} ... and {len(bad) - 3} more invalid inputs that do not raise ValueError.")
    elif good:
        lines.append(f"{OK} raises ValueError for each of the {len(good)} invalid inputs tried "
                     f"(such as {good[0]}), as the prompt asks.")
    return ok, lines


def _record(ex: Exercise, right: bool, variant: Optional[int], fingerprint: str) -> Optional[Tuple[dict, bool]]:
    """Count the answer with ``fingerprint`` in the ledger for this student on these numbers
    (:mod:`course.assess.attempts`); return ``(record, new)`` (None if the ledger failed)."""
    try:
        from course.ledger import Ledger

        today = _dt.date.today().isoformat()
        who = identity(variants.current_student()[0], variant)
        counted: dict = {}

        def change(before: dict) -> dict:
            days = [d for d in before.get("days", []) if isinstance(d, str)]
            record, new = count_answer(before, who, fingerprint, right)
            counted.update(record=record, new=new)
            records = dict(before.get("by_identity") or {})
            records[who] = record
            latest = {k: record[k] for k in ("attempts", "passed", "last_passed")}
            return {"chapter": ex.chapter, "exercise": ex.number, "kind": ex.kind.lower(),
                    "by_identity": records, "identity": who, **latest, "attempted": True,
                    "days": sorted(set(days) | {today})[-400:]}

        # one locked read-modify-write, so two kernels checking at once both count
        Ledger().update(ex.ledger_key, change)
        return counted["record"], counted["new"]
    except Exception:  # mastery is a convenience: never break the exercise
        return None

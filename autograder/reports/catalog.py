"""The one adapter between the class report and the course's activity declarations.

Everything else in :mod:`autograder.reports` works on plain data (``grades.json`` rows,
``predictions.json``, ledger exports). What exists (assignments, acts, locks and their options,
correct option and explanation, graded parts and their kind, chapter and act) and how a wrong
answer is classified is read here, and only here, from today's declarations:
:data:`course.activities.ACTIVITIES` (titles; a lab's acts, locks and answers),
:data:`course.activities.REGISTRY` (graded parts), the codes of :mod:`course.assess.codes` and the
feedback hints of :data:`course.assess.registry.NUMBER_HINTS`. When the activity model changes, this
file changes.

Every function returns plain dicts, lists and strings.
"""

from __future__ import annotations

from typing import Dict, List, Optional

#: classes of a wrong part that is not a number off by a recognisable factor
NOT_ANSWERED = "not answered"
NOT_PLAIN = "not a plain value of the asked type"
NOT_ACCEPTED = "not an accepted answer"
OTHER = "other"


def _labs() -> dict:
    from course.activities import ACTIVITIES
    from course.assess.lab import Lab

    return {a.name: a for a in ACTIVITIES if isinstance(a, Lab)}


def assignment_info(assignment: str) -> dict:
    """``{"assignment", "title", "chapter", "type"}``; ``type`` is ``lab`` or ``workbook``
    (``other`` for an assignment the package does not declare)."""
    lab = _labs().get(assignment)
    if lab is not None:
        return {"assignment": assignment, "title": lab.title, "chapter": lab.prefix, "type": "lab"}
    from course.activities import SYLLABUS

    listed = SYLLABUS.by_name.get(assignment)
    if listed is not None:
        return {"assignment": assignment, "title": listed.title, "chapter": listed.prefix, "type": "workbook"}
    return {"assignment": assignment, "title": assignment, "chapter": assignment, "type": "other"}


def locks(assignment: str) -> List[dict]:
    """The prediction locks of ``assignment`` in act order.

    Each: ``key`` (as in ``predictions.json`` and the ledger), ``act``, ``act_title``,
    ``grade_id`` (its completion part), ``question``, ``options`` ``{option id: text}`` (each
    student saw them in their own order: an id names the content, never a place), ``correct``
    (an id), ``letters`` (``{letter: id}``: what a ``predictions.json`` written before option ids
    stored) and ``explanation``. Empty for an assignment without locks.
    """
    lab = _labs().get(assignment)
    if lab is None:
        return []
    return [{"key": lab.lock_key(act.id), "act": act.id, "act_title": act.title,
             "grade_id": lab.lock_grade_id(act.id), "question": act.lock.question,
             "options": dict(act.lock.options), "correct": act.lock.correct, "letters": act.lock.letters,
             "explanation": act.lock.explanation}
            for act in lab.acts if act.lock is not None]


def parts(assignment: str) -> Dict[str, dict]:
    """Every declared graded part of ``assignment`` by grade id.

    Each: ``title``, ``kind`` (``derive``, ``build``, ``lock``, ``choice``... or ``written``
    for a hand-graded reflection), ``act`` (a lab's act id; a workbook exercise number),
    ``act_title``, ``chapter`` (``ch02``, ``lab06``), ``ledger_key`` and ``lock`` (true for a
    lock's completion point).
    """
    from course.activities import REGISTRY

    info = assignment_info(assignment)
    out: Dict[str, dict] = {}
    lab = _labs().get(assignment)
    if lab is not None:
        for act in lab.acts:
            common = {"act": act.id, "act_title": act.title, "chapter": lab.prefix}
            if act.lock is not None:
                gid = lab.lock_grade_id(act.id)
                out[gid] = {**common, "title": f"{act.title}: prediction locked", "kind": "lock",
                            "ledger_key": lab.lock_key(act.id), "lock": True}
            for answer in act.answers:
                gid = lab.grade_id(answer.id)
                out[gid] = {**common, "title": answer.title, "kind": answer.kind,
                            "ledger_key": REGISTRY[gid].ledger_key if gid in REGISTRY else "", "lock": False}
            for reflection in act.reflections:
                out[lab.grade_id(reflection.id)] = {**common, "title": f"{act.title}: written reflection",
                                                    "kind": "written", "ledger_key": "", "lock": False}
        return out
    for gid, part in REGISTRY.items():
        if part.assignment == assignment:
            out[gid] = {"act": part.exercise, "act_title": part.title, "chapter": info["chapter"],
                        "title": part.title, "kind": part.kind, "ledger_key": part.ledger_key,
                        "lock": part.kind == "lock"}
    return out


def part_info(assignment: str, grade_id: str, row: Optional[dict] = None) -> dict:
    """:func:`parts`' entry for ``grade_id``; for a cell the package does not declare (a
    hand-graded workbook answer, say), one made from the ``grades.json`` row."""
    known = parts(assignment).get(grade_id)
    if known is not None:
        return known
    row = row or {}
    info = assignment_info(assignment)
    kind = row.get("kind") or ("written" if row.get("status") == "manual" else "other")
    act = row.get("exercise") or grade_id
    return {"act": act, "act_title": act, "chapter": info["chapter"], "title": grade_id, "kind": kind,
            "ledger_key": "", "lock": False}


# ---------------------------------------------------------------------------
# wrong answers, by the codes the grader wrote (course.assess.codes), in the feedback hints' words
# ---------------------------------------------------------------------------

def class_labels() -> Dict[str, str]:
    """``{code: class}``: the class of a wrong answer in the report, by its code.

    A wrong number's class is the head of the hint a student reads for its code
    (:data:`course.assess.registry.NUMBER_HINTS`, e.g. ``a factor of 2 off``), so a new slip
    there is a new class here; the other codes are grouped as the report has always shown them.
    """
    from course.assess import codes
    from course.assess.registry import NUMBER_HINTS, ORDER_HINTS

    labels = {code: hint.split(":")[0].strip() for code, hint in {**NUMBER_HINTS, **ORDER_HINTS}.items()}
    for code in (codes.NOT_ANSWERED, codes.ERROR_IN_CELL, codes.UNREADABLE, codes.NOT_GRADED, codes.ENDED_RUN):
        labels[code] = NOT_ANSWERED
    labels.update({codes.NOT_PLAIN: NOT_PLAIN, codes.NOT_ACCEPTED: NOT_ACCEPTED,
                   codes.WRONG_VALUE: "does not match",
                   codes.RETURNS_WRONG_VALUE: "returns a wrong value", codes.RAISES: "raises an exception",
                   codes.RETURNS_NOT_PLAIN: "does not return a plain number",
                   codes.NO_VALUE_ERROR: "does not raise ValueError"})
    return labels


def classify_wrong(row: dict) -> List[str]:
    """The classes of what is wrong in one ``grades.json`` part row that lost points.

    Read from the row's codes, never its English: a value part's ``findings`` (one code per
    wrong name), a function part's failed ``checks`` (each with the ``codes`` of what failed).
    A row without codes (graded before they existed) is ``other``.
    """
    labels = class_labels()
    if row.get("checks"):
        return [f"{c['check']}: " + ", ".join(labels.get(code, OTHER) for code in c.get("codes") or ("",))
                for c in row["checks"] if (c.get("points") or 0) < (c.get("max_points") or 0)] or [OTHER]
    found = row.get("findings") or [row.get("code")]
    return [labels.get(code, OTHER) for code in found]

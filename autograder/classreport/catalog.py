"""The one adapter between the class report and the course's activity declarations.

Everything else in :mod:`autograder.classreport` works on plain data (``grades.json`` rows,
``predictions.json``, ledger exports). What exists (assignments, acts, locks and their options,
correct option and explanation, graded parts and their kind, chapter and act) and how a wrong
answer is classified is read here, and only here, from today's declarations:
:data:`course.activities.ACTIVITIES` (titles; a lab's acts, locks and answers),
:data:`course.activities.REGISTRY` (graded parts) and the feedback hints of
:func:`course.assess.registry.unit_hint`. When the activity model changes, this file changes.

Every function returns plain dicts, lists and strings.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

#: class of a wrong part that is not a number off by a recognisable factor
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
    ``grade_id`` (its completion part), ``question``, ``options`` ``{letter: text}``,
    ``correct`` and ``explanation``. Empty for an assignment without locks.
    """
    lab = _labs().get(assignment)
    if lab is None:
        return []
    return [{"key": lab.lock_key(act.id), "act": act.id, "act_title": act.title,
             "grade_id": lab.lock_grade_id(act.id), "question": act.lock.question,
             "options": dict(act.lock.options), "correct": act.lock.correct,
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
# wrong answers, in the classes the feedback hints use
# ---------------------------------------------------------------------------

def hint_classes() -> List[dict]:
    """The classes of a wrong number, as :func:`course.assess.registry.unit_hint` words them.

    Each: ``label`` (the hint's head, e.g. ``a factor of 2 off``) and ``hint`` (its text as a
    student reads it in feedback). The texts come from calling the classifier itself, so a
    new factor there is a new class here.
    """
    from course.assess.registry import _UNIT_SLIPS, unit_hint

    texts = [unit_hint(factor, 1.0)[1] for factor, _ in _UNIT_SLIPS]
    # the three hints for a number that is no recognisable slip: sign or zero, close, far off
    texts += [unit_hint(-1.0, 1.0)[1], unit_hint(1.5, 1.0)[1], unit_hint(50.0, 1.0)[1]]
    texts.append(unit_hint(7.0, 8.0, "stages")[1])  # a count one off (the hint for counts)
    out, seen = [], set()
    for text in texts:
        hint = text.removeprefix("not yet: ")
        if hint not in seen:
            seen.add(hint)
            out.append({"label": hint.split(":")[0].strip(), "hint": hint})
    return out


_ACCEPTED = re.compile(r"`[^`]*` = ('.*'|\".*\") is not an accepted answer")


def classify_wrong(row: dict) -> List[str]:
    """The classes of what is wrong in one ``grades.json`` part row that lost points.

    A value part's ``reason`` carries the feedback hint of each wrong name (joined by
    ``; ``); a function part's ``checks`` say which checks failed. Never a key: the
    reasons name what is wrong, not the expected value (the grader's contract).
    """
    if row.get("checks"):
        return [f"{c['check']}: {_failure_kinds(c.get('reason', ''))}" for c in row["checks"]
                if (c.get("points") or 0) < (c.get("max_points") or 0)] or [OTHER]
    reason = row.get("reason") or ""
    classes = []
    hints = hint_classes()
    for fragment in reason.split("; "):
        matched = next((h["label"] for h in hints if fragment.endswith(h["hint"])), None)
        if matched is None:
            accepted = _ACCEPTED.search(fragment)
            if accepted:
                matched = f"{NOT_ACCEPTED}: {accepted.group(1)}"
            elif ("is not defined" in fragment or "could not be read" in fragment or "define a function" in fragment
                  or "is not written yet" in fragment or "is not answered" in fragment
                  or "no locked prediction" in fragment or "see the submission note" in fragment):
                matched = NOT_ANSWERED
            elif "must be" in fragment or "expected a plain" in fragment or "raised" in fragment:
                matched = NOT_PLAIN
            elif "does not match the expected value" in fragment:
                matched = "does not match"
            else:
                matched = OTHER
        classes.append(matched)
    return classes


def _failure_kinds(reason: str) -> str:
    """``"returns a wrong value for 3 of 5 random inputs"`` -> ``"returns a wrong value"``."""
    head = re.split(r" for \d+ of \d+ ", reason)[0]
    return head.split(" (not counted")[0] if head else "wrong"

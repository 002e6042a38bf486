"""Registry parts of the labs, generated from their declarations (:mod:`course.labs.activity`).

Same contract as the workbook (:mod:`course.exercises.registry`): ``harvest``
runs in the student's kernel and only reads plain values; ``judge`` recomputes
the key from the lab's declared inputs with :mod:`course.core` in a trusted
process. Grade ids and ledger keys come from the declaration
(:meth:`Lab.lock_grade_id`, :meth:`Lab.grade_id`, :meth:`Lab.lock_key`).

Three kinds of part:

* ``lock`` -- completion point for a locked prediction. The harvest reads
  ``predictions.json`` in the notebook's folder (it travels with the nbgrader
  submission), never widget state; any locked value earns the point.
* ``derive`` -- a number the student assigns, compared with the key for the
  graded student's own numbers (the variant carried by ``seed``:
  :func:`course.exercises.variants.split_seed`, then :meth:`Lab.spec_for`).
* ``choice`` -- a name; any of the accepted names scores (for Lab 06, every
  algorithm within 1 % of the fastest, the dashboard's tie rule).
"""

from __future__ import annotations

from typing import Any, Dict

from course.labs.activity import Answer, Lab, labs

from .registry import RAISED, Part, Verdict, judge_plain, register, to_plain
from .variants import split_seed


def lock_part(lab: Lab, act_id: str) -> Part:
    """Completion point for the locked prediction of ``act_id`` (read from predictions.json)."""
    key = lab.lock_key(act_id)

    def harvest(namespace: dict, probes: Any) -> dict:
        from course.prediction import read_predictions
        return {"locked": read_predictions(".").get(key) is not None}

    def judge(harvested: dict, seed: int = 0) -> Verdict:
        if harvested.get("locked") is True:
            return Verdict(1.0, f"prediction {key} is locked (completion point)")
        return Verdict(0.0, f"no locked prediction {key} in predictions.json: lock it before exploring")

    return register(Part(grade_id=lab.lock_grade_id(act_id), exercise=key, kind="lock", points=1.0, names=(),
                         harvest=harvest, judge=judge, assignment=lab.name, ledger_key=key,
                         title=f"{lab.act(act_id).title}: prediction locked"))


def answer_part(lab: Lab, answer: Answer) -> Part:
    """A value the student assigns to ``answer.name``, judged against the key of the student's variant."""
    name = answer.name

    def harvest(namespace: dict, probes: Any) -> dict:
        return {"value": to_plain(namespace[name]) if name in namespace else {RAISED: "NameError"}}

    def judge(harvested: dict, seed: int = 0) -> Verdict:
        value = harvested.get("value")
        spec = lab.spec_for(split_seed(seed)[1])  # this student's numbers
        if answer.kind == "derive":
            if type(value) is dict:
                return Verdict(0.0, f"`{name}` is not defined")
            return judge_plain(value, answer.key(spec), rtol=answer.rtol, name=f"`{name}`")
        if type(value) is not str:
            return Verdict(0.0, f"`{name}` must be a str")
        if value.strip().lower() in [a.lower() for a in answer.key(spec)]:
            return Verdict(1.0, "correct")
        return Verdict(0.0, f"`{name}` = {value!r} is not an accepted answer")

    gid = lab.grade_id(answer.id)
    return register(Part(grade_id=gid, exercise=gid, kind=answer.kind, points=answer.points, names=(name,),
                         harvest=harvest, judge=judge, assignment=lab.name,
                         ledger_key=f"{lab.prefix}/{answer.id}", title=answer.title))


def register_lab(lab: Lab) -> Dict[str, Part]:
    """Register every graded part of ``lab``; returns them by grade id."""
    parts = {}
    for act in lab.acts:
        if act.lock is not None:
            part = lock_part(lab, act.id)
            parts[part.grade_id] = part
        for answer in act.answers:
            part = answer_part(lab, answer)
            parts[part.grade_id] = part
    return parts


LAB_PARTS: Dict[str, Dict[str, Part]] = {lab.name: register_lab(lab) for lab in labs().values()}

"""The labs in a student's kernel: :class:`LabSession` hands out a lab's locks by act id.

A lab's setup cell runs ``lab = LabSession('lab05')``; the declarations come from the one
activity list (:mod:`course.activities`).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from course.assess.checks import display_markdown, whoami
from course.assess.items import Lock
from course.assess.lab import Lab, Spec
from course.assess.lock_order import option_orders, widened
from course.predictions_file import read_predictions
from course.assess.variants import current_student, variant_of


#: what a reflection that presumes a prediction shows until that prediction is locked
QUESTION_BEFORE_LOCK = ("**Your numbers.** This question appears here once you have locked your prediction "
                        "above: it would give the prediction away.")
REFLECTION_BEFORE_LOCK = ("**Reflection (graded by hand).** The question appears here once you have locked "
                          "your prediction above: it presumes the answer.")


def course_locks() -> List[Tuple[str, Lock]]:
    """Every prediction lock of the course as ``(ledger key, lock)``, in the activity list's order
    (the walk :func:`~course.assess.lock_order.option_orders` balances over)."""
    return [(lab.lock_key(act.id), act.lock) for lab in labs().values() for act in lab.acts if act.lock is not None]


def lock_orders(student: Optional[str]) -> Dict[str, Tuple[str, ...]]:
    """``{lock key: option ids in the order student sees them}``: the same in their kernel, after a
    restart and in the grader's (:mod:`course.assess.lock_order`)."""
    return option_orders(course_locks(), student)


def labs() -> Dict[str, Lab]:
    """Every listed lab by ledger prefix (``lab05``, ``lab06``, ``tutorial``)."""
    from course.activities import ACTIVITIES

    return {a.prefix: a for a in ACTIVITIES if isinstance(a, Lab)}


class LabSession:
    """The locks of one lab in a student's kernel, by act id.

    ``lab.lock('act1')`` builds the act's :class:`~course.prediction.PredictionLock`
    from the declaration (once per kernel; a locked prediction is restored from
    ``predictions.json``); ``lab.gate('act1', instrument)`` hides an instrument
    until it is locked; ``lab.reveal('act1')`` shows the correct option, the
    explanation and the lock's ``reveal`` text once locked (updated in place);
    ``lab.ask('act1_why')`` the prompt of a reflection that presumes the answer.

    ``spec`` holds this student's numbers (their variant, from who runs the
    kernel: :func:`course.assess.variants.current_student`); ``lab.show(id)``
    renders a question with them.
    """

    def __init__(self, prefix: str, *, folder=None, ledger=None):
        declared = labs()
        if prefix not in declared:
            raise ValueError(f"prefix must be one of {sorted(declared)}, got {prefix!r}")
        self.declaration = declared[prefix]
        self._folder, self._ledger = folder, ledger
        self._locks: Dict[str, Any] = {}
        self.student, self.identity = current_student()
        self.variant = variant_of(self.declaration.name, self.student)
        self.spec: Spec = self.declaration.spec_for(self.variant)

    def whoami(self) -> None:
        """Print whose numbers this kernel shows (the setup cell calls it)."""
        whoami(self.declaration.name, source="lab")

    def show(self, answer_id: str):
        """Render the question ``answer_id`` with this student's numbers (read-only prompt cells).

        A question declared ``after_lock`` gives its act's lock away: its act's lock renders it once
        locked (a ``course.prediction.LockedView``, returned for the cell to show)."""
        text = self.declaration.question_markdown(answer_id, self.spec)
        if not self.declaration.answer(answer_id).after_lock:
            display_markdown(text)
            return None
        act = self.declaration.act_of(answer_id)
        return self.lock(act.id).after_lock(text, before=QUESTION_BEFORE_LOCK)

    def lock(self, act_id: str):
        from course.prediction import PredictionLock

        if act_id not in self._locks:
            spec = self.declaration.lock_of(act_id)
            key = self.declaration.lock_key(act_id)
            order = lock_orders(self.student)[key]  # this student's order; ids are what is stored
            kept = spec.option_id(read_predictions(self._folder or ".").get(key, {}).get("value"))
            if spec.ordered and kept is not None and kept not in order:  # locked when its window showed it
                order = widened(spec, order, kept)
            self._locks[act_id] = PredictionLock(
                key, spec.question, options={i: spec.options[i] for i in order}, correct=spec.correct,
                explanations=spec.explanation, after_reveal=spec.reveal,
                folder=self._folder, ledger=self._ledger, aliases=spec.letters)
        return self._locks[act_id]

    def gate(self, act_id: str, *targets: Any) -> Any:
        return self.lock(act_id).gate(*targets)

    def reveal(self, act_id: str):
        """The act's reveal, rendered by its lock once locked and updated in place
        (``course.prediction.RevealView``; ``.correct``, ``.message``... read its current result)."""
        return self.lock(act_id).reveal_view()

    def caption(self, name: str):
        """An instrument caption that would point at its act's answer, rendered by the act's lock once
        locked (``course.assess.lab.Act.captions``); nothing until then."""
        act = self.declaration.act_of(name)
        return self.lock(act.id).after_lock(act.captions[name], before="")

    def ask(self, reflection_id: str):
        """The prompt of a reflection in an act with a lock: it presumes the lock's answer, so the
        lock renders it once locked (:meth:`~course.prediction.PredictionLock.after_lock`)."""
        declaration = self.declaration
        act = declaration.act_of(reflection_id)
        return self.lock(act.id).after_lock(declaration.reflection_markdown(reflection_id),
                                            before=REFLECTION_BEFORE_LOCK)

"""Labs as declared activities: acts, locks, graded answers and reflections, written once.

A lab module (:mod:`course.labs.lab05`, ``lab06``, ``tutorial``) declares one
:class:`Lab`: its numeric inputs (``spec``), its acts, and per act at most one
prediction :class:`Lock` (question, options, correct option, explanation and
the text that gives the answer away, shown only after the reveal), graded
:class:`Answer` parts (the key is a function of ``spec``, so per-student
variants only need another spec) and hand-graded :class:`Reflection` parts.
Everything else is generated from that declaration:

* the source notebook cells (:meth:`Lab.lock_cells`, :meth:`Lab.answer_cells`,
  ... used by the lab module's ``layout``);
* the registry parts that grade the lab (:func:`course.exercises.labs.register_lab`);
* the ledger keys (:meth:`Lab.lock_key`) and the progress view (:mod:`course.progress`).

Per-student variants (:mod:`course.exercises.variants`): a lab's ``vary(spec,
rng)`` draws a student's own inputs for its graded questions, while the story
around them (the lead's 7B job, the 128-GPU comparator, the locks) stays the
same for everyone. :meth:`Lab.spec_for` gives a variant's inputs; an answer
whose prompt changes with them gets a read-only prompt cell
(``lab.show('act1_allreduce')``) instead of markdown, so no markdown holds a
number that varies. The judge recomputes the key for the graded student's
variant (:mod:`course.exercises.labs`).

In the student's kernel a :class:`LabSession` hands out the locks by id, so a
release notebook's lock cell is ``lab.lock('act1')``: the correct option and
the explanation stay in this package until the student has locked and runs
``lab.reveal('act1')``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from course.exercises.authoring import hidden_test
from course.exercises.spec import Cell
from course.exercises.variants import vary_spec

Spec = Dict[str, Any]
Vary = Callable[[Spec, random.Random], Spec]

#: how many variants :meth:`Lab.varies` compares with the lab's own inputs
VARIANT_PROBES = 24

ANSWER_KINDS = ("derive", "choice")


def cases(table: Dict[Any, Tuple[Any, ...]]) -> Tuple[Tuple[Any, Any], ...]:
    """The (first, second) pairs of a ``{first: (second, ...)}`` table: the cases a ``vary`` draws from.

    >>> cases({"a": (1, 2), "b": (3,)})
    (('a', 1), ('a', 2), ('b', 3))
    """
    return tuple((first, second) for first, seconds in table.items() for second in seconds)


@dataclass(frozen=True)
class Lock:
    """A prediction asked before an act's instruments appear.

    ``after_reveal`` is markdown that would give the answer away (a correction
    to the source lab, say); it appears in the reveal, never before locking.
    """

    question: str
    options: Dict[str, str]
    correct: str
    explanation: str
    after_reveal: str = ""

    def __post_init__(self):
        if self.correct not in self.options:
            raise ValueError(f"correct must be one of {list(self.options)}, got {self.correct!r}")


@dataclass(frozen=True)
class Answer:
    """A value the student assigns to ``name``; graded against ``key(spec)``.

    ``kind`` is ``derive`` (a number within ``rtol``) or ``choice`` (a name;
    ``key`` returns every accepted name). ``prompt`` and ``solution`` receive
    the spec, so the numbers in the question, the reference solution and the
    key come from the same inputs.
    """

    id: str
    name: str
    title: str
    unit: str
    prompt: Callable[[Spec], str]
    key: Callable[[Spec], Any]
    solution: Callable[[Spec], str]
    kind: str = "derive"
    rtol: float = 0.02
    points: float = 1.0
    graded: str = "within 2 % of the key"

    def __post_init__(self):
        if self.kind not in ANSWER_KINDS:
            raise ValueError(f"kind must be one of {ANSWER_KINDS}, got {self.kind!r}")


@dataclass(frozen=True)
class Reflection:
    """A written answer graded by hand (the model answer is removed from the release)."""

    id: str
    prompt: str
    model_answer: str
    mark_scheme: str
    points: float = 2.0


@dataclass(frozen=True)
class Act:
    id: str
    title: str
    lock: Optional[Lock] = None
    answers: Tuple[Answer, ...] = ()
    reflections: Tuple[Reflection, ...] = ()


@dataclass
class Lab:
    """One lab: assignment name, ledger prefix, inputs and acts; ``layout`` orders the cells."""

    name: str
    prefix: str
    title: str
    spec: Spec
    acts: Tuple[Act, ...]
    layout: Callable[["Lab", Spec], List[Cell]] = field(repr=False, default=lambda lab, spec: [])
    vary: Optional[Vary] = field(repr=False, default=None)

    def __post_init__(self):
        ids = [a.id for a in self.acts]
        answer_ids = [x.id for a in self.acts for x in a.answers + a.reflections]
        for what, seq in (("act", ids), ("answer/reflection", answer_ids)):
            if len(set(seq)) != len(seq):
                raise ValueError(f"{self.name}: {what} ids must be unique, got {seq}")

    # -- lookups ---------------------------------------------------------------------------
    def act(self, act_id: str) -> Act:
        for act in self.acts:
            if act.id == act_id:
                return act
        raise ValueError(f"act must be one of {[a.id for a in self.acts]}, got {act_id!r}")

    def lock_of(self, act_id: str) -> Lock:
        lock = self.act(act_id).lock
        if lock is None:
            raise ValueError(f"act {act_id!r} of {self.name} has no prediction lock")
        return lock

    def answer(self, answer_id: str) -> Answer:
        for act in self.acts:
            for answer in act.answers:
                if answer.id == answer_id:
                    return answer
        raise ValueError(f"answer must be one of {[x.id for a in self.acts for x in a.answers]}, got {answer_id!r}")

    def reflection(self, reflection_id: str) -> Reflection:
        for act in self.acts:
            for reflection in act.reflections:
                if reflection.id == reflection_id:
                    return reflection
        raise ValueError(f"reflection {reflection_id!r} is not declared in {self.name}")

    def key(self, answer_id: str, spec: Optional[Spec] = None) -> Any:
        """The key of an answer for ``spec`` (default: the lab's declared inputs)."""
        return self.answer(answer_id).key(self.spec if spec is None else spec)

    # -- variants --------------------------------------------------------------------------
    def spec_for(self, variant: Optional[int]) -> Spec:
        """The inputs of ``variant`` (``None``: the lab's own, as declared)."""
        return vary_spec(self.name, self.spec, self.vary, variant)

    def varies(self, answer_id: str) -> bool:
        """Whether the prompt of ``answer_id`` changes from variant to variant (then it is
        rendered in the kernel, never written into markdown)."""
        answer = self.answer(answer_id)
        own = answer.prompt(self.spec)
        return self.vary is not None and any(answer.prompt(self.spec_for(v)) != own
                                             for v in range(VARIANT_PROBES))

    def prompt_markdown(self, answer_id: str, spec: Optional[Spec] = None) -> str:
        """The question of ``answer_id`` for ``spec``, with the tolerance it is graded to."""
        answer = self.answer(answer_id)
        return f"{answer.prompt(self.spec if spec is None else spec)}\n\n*Graded: {answer.graded}.*"

    def worked_markdown(self, answer_id: str, spec: Optional[Spec] = None) -> str:
        """The reference solution and key of ``answer_id`` for ``spec`` (feedback and the instructor's CLI)."""
        spec = self.spec if spec is None else spec
        answer = self.answer(answer_id)
        key = answer.key(spec)
        shown = (f"{key:,.4g} ({answer.unit})" if isinstance(key, float)
                 else " or ".join(f"`{k}`" for k in key) if isinstance(key, (list, tuple)) else f"{key}")
        return (f"**Worked answer for your numbers: {answer.title}.**\n\n```python\n{answer.solution(spec)}\n```\n\n"
                f"`{answer.name}` = {shown}")

    # -- names generated from the declaration ----------------------------------------------
    def lock_key(self, act_id: str) -> str:
        """Ledger and predictions.json key of an act's lock, e.g. ``lab05/act1``."""
        return f"{self.prefix}/{act_id}"

    def lock_grade_id(self, act_id: str) -> str:
        return f"{self.prefix}_{act_id}_lock"

    def grade_id(self, part_id: str) -> str:
        return f"{self.prefix}_{part_id}"

    # -- cells -----------------------------------------------------------------------------
    def setup_source(self, imports: str) -> str:
        """The setup cell: the lab's imports, then the session that hands out its locks and
        this student's numbers (it says whose)."""
        return (f"{imports}\nfrom course.labs.activity import LabSession\n"
                f"lab = LabSession({self.prefix!r})\nlab.whoami()")

    def lock_cells(self, act_id: str) -> List[Cell]:
        """The lock widget (one call by id) and its completion point."""
        self.lock_of(act_id)
        return [Cell("code", f"lab.lock({act_id!r})", f"{self.prefix}_{act_id}_lock_cell"),
                Cell("test", hidden_test(self.lock_grade_id(act_id),
                                         f"a locked prediction {self.lock_key(act_id)} in predictions.json "
                                         "(completion point)"),
                     self.lock_grade_id(act_id), 1.0)]

    def reveal_cell(self, act_id: str) -> Cell:
        self.lock_of(act_id)
        return Cell("code", f"lab.reveal({act_id!r})", f"{self.prefix}_{act_id}_reveal")

    def prompt_grade_id(self, answer_id: str) -> str:
        return self.grade_id(self.answer(answer_id).id) + "_prompt"

    def answer_cells(self, answer_id: str, spec: Optional[Spec] = None) -> List[Cell]:
        """Prompt, answer cell and graded cell of an answer.

        A prompt that varies is a read-only cell, ``lab.show(answer_id)``, that
        renders it with the student's numbers; one that does not is markdown.
        The answer cell's solution region becomes nbgrader's stub in the
        release; the lab release stub raises nothing (:data:`RELEASE_CODE_STUB`),
        so Run All goes on past an unanswered cell, and the hidden test still
        gives it 0 (the name is not defined).
        """
        spec = self.spec if spec is None else spec
        answer = self.answer(answer_id)
        gid = self.grade_id(answer.id)
        prompt = (Cell("code", f"# Your numbers: this cell shows the question for you (run it)\n"
                               f"lab.show({answer.id!r})", self.prompt_grade_id(answer.id))
                  if self.varies(answer.id) else Cell("markdown", self.prompt_markdown(answer.id, spec)))
        return [prompt,
                Cell("answer", f"# {answer.name} = ...   ({answer.unit})\n"
                               f"### BEGIN SOLUTION\n{answer.solution(spec)}\n### END SOLUTION", gid + "_answer"),
                Cell("test", hidden_test(gid, answer.graded), gid, answer.points)]

    def reflection_cells(self, reflection_id: str) -> List[Cell]:
        r = self.reflection(reflection_id)
        return [Cell("markdown", f"**Reflection (graded by hand).** {r.prompt}"),
                Cell("manual", f"**Model answer.** {r.model_answer}\n\n"
                               f"**Mark scheme ({r.points:g} points).** {r.mark_scheme}",
                     self.grade_id(r.id), r.points)]

    def cells(self, spec: Optional[Spec] = None) -> List[Cell]:
        return self.layout(self, self.spec if spec is None else spec)


#: What nbgrader writes in place of a lab's solution region: a comment, so "Run All" does not
#: stop at the first unanswered cell (the default stub raises NotImplementedError). The hidden
#: test still scores 0, as the name stays undefined.
RELEASE_CODE_STUB = "# YOUR CODE HERE"


def release_options(assignment: str) -> List[str]:
    """Extra ``nbgrader generate_assignment`` options for ``assignment``: the lab stub for labs.

    (nbgrader turns this plain-string ``code_stub`` into ``{"python": ...}`` with a
    deprecation warning; its command line cannot spell a dict.)
    """
    if assignment in {lab.name for lab in labs().values()}:
        return [f"--ClearSolutions.code_stub={RELEASE_CODE_STUB}"]
    return []


def labs() -> Dict[str, Lab]:
    """Every declared lab by ledger prefix (``lab05``, ``lab06``, ``tutorial``)."""
    from . import lab05, lab06, tutorial

    return {lab.prefix: lab for lab in (lab05.LAB, lab06.LAB, tutorial.LAB)}


class LabSession:
    """The locks of one lab in a student's kernel, by act id.

    ``lab.lock('act1')`` builds the act's :class:`~course.prediction.PredictionLock`
    from the declaration (once per kernel; a locked prediction is restored from
    ``predictions.json``); ``lab.gate('act1', instrument)`` hides an instrument
    until it is locked; ``lab.reveal('act1')`` shows the correct option, the
    explanation and the act's ``after_reveal`` text.

    ``spec`` holds this student's numbers (their variant, from who runs the
    kernel: :func:`course.exercises.variants.current_student`); ``lab.show(id)``
    renders a question with them.
    """

    def __init__(self, prefix: str, *, folder=None, ledger=None):
        from course.exercises.variants import current_student, variant_of

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
        from course.exercises.checks import whoami
        whoami(self.declaration.name, source="lab")

    def show(self, answer_id: str) -> None:
        """Render the question ``answer_id`` with this student's numbers (read-only prompt cells)."""
        from course.exercises.checks import display_markdown
        display_markdown(self.declaration.prompt_markdown(answer_id, self.spec))

    def lock(self, act_id: str):
        from course.prediction import PredictionLock

        if act_id not in self._locks:
            spec = self.declaration.lock_of(act_id)
            self._locks[act_id] = PredictionLock(
                self.declaration.lock_key(act_id), spec.question, options=spec.options, correct=spec.correct,
                explanations=spec.explanation, after_reveal=spec.after_reveal,
                folder=self._folder, ledger=self._ledger)
        return self._locks[act_id]

    def gate(self, act_id: str, *targets: Any) -> Any:
        return self.lock(act_id).gate(*targets)

    def reveal(self, act_id: str):
        return self.lock(act_id).reveal()

"""Labs as declared activities: acts, locks, graded answers and reflections, written once.

A lab module (``course.labs.lab05``, ``lab06``, ``tutorial``) declares one
:class:`Lab`: its numeric inputs (``spec``), its acts, and per act at most one
prediction :class:`Lock` (question, options, correct option, explanation and
the text that gives the answer away, shown only after the reveal), graded
:class:`Answer` parts (the key is a function of ``spec``, so per-student
variants only need another spec) and hand-graded :class:`Reflection` parts.
Everything else is generated from that declaration:

* the source notebook cells (:meth:`Lab.lock_cells`, :meth:`Lab.answer_cells`,
  ... used by the lab module's ``layout``);
* the graded parts (:meth:`Lab.parts`: a completion point per lock, read from
  ``predictions.json``; a value per answer, read in the kernel);
* the ledger keys (:meth:`Lab.lock_key`) and the progress view (``Lab.progress``).

Per-student variants (:mod:`course.assess.variants`): a lab's ``vary(spec,
rng)`` draws a student's own inputs for its graded questions, while the story
around them (the lead's 7B job, the 128-GPU comparator, the locks) stays the
same for everyone. :meth:`Lab.spec_for` gives a variant's inputs; an answer
whose prompt changes with them gets a read-only prompt cell
(``lab.show('act1_allreduce')``) instead of markdown, so no markdown holds a
number that varies. The judge recomputes the key for the graded student's
variant (:meth:`Lab.parts`).

In the student's kernel a :class:`course.notebook_api.lab_session.LabSession` hands out the
locks by id, so a release notebook's lock cell is ``lab.lock('act1')``: the
correct option, the explanation and the lock's reveal stay in this package
until the student has locked.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from .activity import Activity, _points
from .authoring import hidden_test
from .items import KERNEL, Lock, Value, Written
from . import codes
from .registry import RAISED, Part, Verdict, judge_plain, to_plain, unanswered_reason
from .spec import Cell
from .variants import split_seed, vary_spec

Spec = Dict[str, Any]
#: a lab's written answer graded by hand is the engine's :class:`~course.assess.items.Written` item
Reflection = Written
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
    #: the question gives its act's lock away (it names the right option, or computing it settles the
    #: prediction): the lab shows it only once that lock is locked, as a reflection
    after_lock: bool = False

    def __post_init__(self):
        if self.kind not in ANSWER_KINDS:
            raise ValueError(f"kind must be one of {ANSWER_KINDS}, got {self.kind!r}")


@dataclass(frozen=True)
class Act:
    """One act: its title (a setting, never a conclusion: it stands above the lock), its lock, answers
    and reflections. ``captions`` are the act's instrument captions that would point at the lock's
    answer (what the instrument splits a quantity into, what to look for): the lock renders each,
    by name, once locked (``lab.caption(name)``), never as markdown."""

    id: str
    title: str
    lock: Optional[Lock] = None
    answers: Tuple[Answer, ...] = ()
    reflections: Tuple[Reflection, ...] = ()
    captions: Dict[str, str] = field(default_factory=dict)


#: What nbgrader writes in place of a lab's solution region: a comment, so "Run All" does not
#: stop at the first unanswered cell (the default stub raises NotImplementedError). The hidden
#: test still scores 0, as the name stays undefined.
RELEASE_CODE_STUB = "# YOUR CODE HERE"


@dataclass(eq=False)
class Lab(Activity):
    """One lab: assignment name, ledger prefix, inputs and acts; ``layout`` orders the cells."""

    name: str
    prefix: str
    title: str
    spec: Spec
    acts: Tuple[Act, ...]
    layout: Callable[["Lab", Spec], List[Cell]] = field(repr=False, default=lambda lab, spec: [])
    vary: Optional[Vary] = field(repr=False, default=None)
    code_stub = RELEASE_CODE_STUB

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

    def act_of(self, item_id: str) -> Act:
        """The act that declares answer, reflection or caption ``item_id``."""
        for act in self.acts:
            if item_id in act.captions:
                return act
            if any(x.id == item_id for x in act.answers + act.reflections):
                return act
        raise ValueError(f"{item_id!r} is no answer or reflection of {self.name}")

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

    def question_markdown(self, answer_id: str, spec: Optional[Spec] = None) -> str:
        """The question of ``answer_id`` for ``spec``, with the tolerance it is graded to."""
        answer = self.answer(answer_id)
        return f"{answer.prompt(self.spec if spec is None else spec)}\n\n*Graded: {answer.graded}.*"

    def prompt_markdown(self, item: str, variant: Optional[int] = None) -> str:
        """The question of answer ``item`` with ``variant``'s numbers (:class:`Activity`)."""
        return self.question_markdown(item, self.spec_for(variant))

    def worked_markdown(self, item: str, variant: Optional[int] = None) -> str:
        """The reference solution and key of answer ``item`` for ``variant`` (feedback, the instructor's CLI);
        empty for a reflection, whose model answer stays with the grader."""
        if item not in {a.id for act in self.acts for a in act.answers}:
            return ""
        spec = self.spec_for(variant)
        answer = self.answer(item)
        key = answer.key(spec)
        shown = (f"{key:,.4g} ({answer.unit})" if isinstance(key, float)
                 else " or ".join(f"`{k}`" for k in key) if isinstance(key, (list, tuple)) else f"{key}")
        return (f"**Worked answer for your numbers: {answer.title}.**\n\n```python\n{answer.solution(spec)}\n```\n\n"
                f"`{answer.name}` = {shown}")

    def worked_mark(self, item: str) -> str:
        return self.grade_id(item)

    def variant_report(self, variant: Optional[int], derivations: bool = False, keys: bool = True) -> List[str]:
        spec = self.spec_for(variant)
        lines = ["numbers: " + json.dumps(spec, default=str), ""] if keys else []
        for act in self.acts:
            for answer in act.answers:
                lines.append(f"## {answer.title}" + ("" if self.varies(answer.id) else "  (same for everyone)"))
                lines.append(self.question_markdown(answer.id, spec))
                if not keys:
                    lines.append("")
                    continue
                lines.append(f"key {self.grade_id(answer.id)}: " + json.dumps(answer.key(spec), default=str))
                if derivations:
                    lines.append(self.worked_markdown(answer.id, variant))
                lines.append("")
        return lines

    # -- graded parts ----------------------------------------------------------------------
    def parts(self) -> List[Part]:
        """The lock parts (a completion point each) and the answer parts, in act order."""
        found = []
        for act in self.acts:
            if act.lock is not None:
                found.append(self._lock_part(act))
            found += [self._answer_part(answer) for answer in act.answers]
        return found

    def _lock_part(self, act: Act) -> Part:
        """Completion point for the locked prediction of ``act``: the harvest reads
        ``predictions.json`` in the notebook's folder (it travels with the submission), never
        widget state; any locked value earns the point."""
        key = self.lock_key(act.id)

        def harvest(namespace: dict, probes: Any) -> dict:
            from course.predictions_file import read_predictions
            return {"locked": read_predictions(".").get(key) is not None}

        def judge(harvested: dict, seed: int = 0) -> Verdict:
            if harvested.get("locked") is True:
                return Verdict(1.0, f"prediction {key} is locked (completion point)", code=codes.CORRECT)
            return Verdict(0.0, f"no locked prediction {key} in predictions.json: lock it before exploring",
                           code=codes.NOT_ANSWERED)

        return Part(grade_id=self.lock_grade_id(act.id), exercise=act.id, kind="lock", points=1.0, names=(),
                    harvest=harvest, judge=judge, assignment=self.name, ledger_key=key,
                    title=f"{act.title}: prediction locked", item=act.lock)

    def _answer_part(self, answer: Answer) -> Part:
        """A value the student assigns to ``answer.name``, judged against the key of the graded
        student's own numbers (the variant carried by ``seed``); read in the kernel, since a lab
        answer is computed with the course's instruments."""
        name = answer.name

        def harvest(namespace: dict, probes: Any) -> dict:
            return {"value": to_plain(namespace[name]) if name in namespace else {RAISED: "NameError"}}

        def judge(harvested: dict, seed: int = 0) -> Verdict:
            value = harvested.get("value")
            spec = self.spec_for(split_seed(seed)[1])  # this student's numbers
            blank = unanswered_reason(name, value, harvested)
            if blank:  # the release's stub (nothing assigned) or `name = None`: a blank answer
                return Verdict(0.0, blank, code=codes.NOT_ANSWERED)
            if answer.kind == "derive":
                if type(value) is dict:
                    return Verdict(0.0, f"`{name}` is not defined", code=codes.ERROR_IN_CELL)
                return judge_plain(value, answer.key(spec), rtol=answer.rtol, name=f"`{name}`", unit=answer.unit)
            if type(value) is not str:
                return Verdict(0.0, f"`{name}` must be a str", code=codes.NOT_PLAIN)
            if value.strip().lower() in [a.lower() for a in answer.key(spec)]:
                return Verdict(1.0, "correct", code=codes.CORRECT)
            return Verdict(0.0, f"`{name}` = {value!r} is not an accepted answer", code=codes.NOT_ACCEPTED)

        item = Value(units={name: answer.unit}, key=lambda spec: {name: answer.key(spec)}, rtol=answer.rtol,
                     judged_in=KERNEL)
        return Part(grade_id=self.grade_id(answer.id), exercise=answer.id, kind=answer.kind, points=answer.points,
                    names=(name,), harvest=harvest, judge=judge, assignment=self.name,
                    ledger_key=f"{self.prefix}/{answer.id}", title=answer.title, item=item)

    def progress(self, entries: Dict[str, dict]) -> dict:
        parts = {part.grade_id: part for part in self.parts()}
        acts = []
        for act in self.acts:
            lock = None
            if act.lock is not None:
                entry = entries.get(self.lock_key(act.id), {})
                lock = {"key": self.lock_key(act.id), "locked": "prediction" in entry,
                        "revealed": "correct" in entry, "correct": entry.get("correct") is True}
            rows = []
            for answer in act.answers:
                part = parts[self.grade_id(answer.id)]
                rows.append({"grade_id": part.grade_id, "title": part.title, "max_points": part.points,
                             "points": _points(entries.get(part.ledger_key, {}))})
            acts.append({"id": act.id, "title": act.title, "lock": lock, "parts": rows})
        locks = [a["lock"] for a in acts if a["lock"]]
        return {"kind": "lab", "title": self.title, "assignment": self.name, "acts": acts,
                "locks_total": len(locks), "locked": sum(x["locked"] for x in locks),
                "revealed": sum(x["revealed"] for x in locks), "correct": sum(x["correct"] for x in locks)}

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
                                         "(completion point)", answered=True),
                     self.lock_grade_id(act_id), 1.0)]

    def caption_cell(self, name: str) -> Cell:
        """A caption its act's lock renders once locked (``Act.captions``)."""
        act = self.act_of(name)
        self.lock_of(act.id)
        return Cell("code", f"lab.caption({name!r})", f"{self.prefix}_{name}_caption")

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
        prompt = (Cell("prompt", f"# Your numbers: this cell shows the question for you (run it)\n"
                                 f"lab.show({answer.id!r})", self.prompt_grade_id(answer.id), item=answer.id)
                  if self.varies(answer.id) else Cell("markdown", self.question_markdown(answer.id, spec)))
        return [prompt,
                Cell("answer", f"# {answer.name} = ...   ({answer.unit})\n"
                               f"### BEGIN SOLUTION\n{answer.solution(spec)}\n### END SOLUTION", gid + "_answer",
                     item=answer.id),
                Cell("test", hidden_test(gid, answer.graded, answered=True), gid, answer.points, item=answer.id)]

    def reflection_markdown(self, reflection_id: str) -> str:
        return f"**Reflection (graded by hand).** {self.reflection(reflection_id).prompt}"

    def reflection_cells(self, reflection_id: str) -> List[Cell]:
        """The prompt and the hand-graded answer cell. In an act with a lock the prompt presumes the
        prediction's answer, so the lock renders it once locked (``lab.ask(id)``), never markdown."""
        r = self.reflection(reflection_id)
        prompt = (Cell("code", f"lab.ask({r.id!r})", self.grade_id(r.id) + "_question", item=r.id)
                  if self.act_of(r.id).lock is not None else Cell("markdown", self.reflection_markdown(r.id)))
        return [prompt,
                Cell("manual", f"**Model answer.** {r.model_answer}\n\n"
                               f"**Mark scheme ({r.points:g} points).** {r.mark_scheme}",
                     self.grade_id(r.id), r.points, item=r.id)]

    def cells(self, variant: Optional[int] = None) -> List[Cell]:
        """The notebook's cells with ``variant``'s numbers (``None``: the lab's own)."""
        return self.layout(self, self.spec_for(variant))

    def cell_id_prefix(self) -> str:
        return self.name[:5]

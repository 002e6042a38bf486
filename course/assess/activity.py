"""One activity model: a workbook chapter and a lab are both an :class:`Activity`.

An activity is declared once, as data, by a content module (``course/chapters/chNN.py``,
``course/labs/labNN.py``) and listed in :mod:`course.activities`. Everything a consumer needs is
a method of the activity, so no consumer asks whether it holds a lab or a chapter:

* ``cells(variant)`` -- the source notebook's cells (:class:`~course.assess.spec.Cell`, each with
  its role and the item it belongs to); the notebook builder, the honest reference solutions
  (:meth:`Activity.answer_sources`) and the cell-role index (:class:`Syllabus`) read them;
* ``parts()`` -- the graded :class:`~course.assess.registry.Part` s, each carrying its typed item
  (:mod:`course.assess.items`), its ledger key and where it is judged;
* ``prompt_markdown(item, variant)`` / ``worked_markdown(item, variant)`` -- a question and its
  worked answer with a student's numbers (read-only prompt cells, feedback, the variant CLI);
* ``variant_report(variant)`` -- what ``course variant`` prints for a student;
* ``progress(entries)`` -- the progress view's rows from the design ledger.

:class:`Syllabus` indexes a list of activities (grade ids, cells, items); the engine takes it as
an argument and never imports the list.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .registry import Part, index_parts
from .spec import DISPLAY_KINDS, Cell, Exercise, derivation_markdown, spec_for

SETUP = ("# Run this cell first: it loads the visible checks and shows whose numbers this notebook uses.\n"
         "from course.exercises import check, show, whoami\n"
         "whoami({assignment!r})")


#: What nbgrader writes in place of a workbook solution: a comment and ``pass`` (a statement), so
#: "Run All" runs every exercise (nbgrader's default stub raises NotImplementedError and stops it)
#: and a Build exercise's function body stays valid Python (``...`` would too, but as a cell's last
#: line it prints ``Ellipsis``). An unanswered value stays undefined and a stub function returns None:
#: the visible check says "not answered yet", the hidden test scores 0.
CHAPTER_CODE_STUB = "# YOUR CODE HERE\npass"


class Activity:
    """What every activity provides (see the module docstring). ``name`` is the nbgrader
    assignment, ``prefix`` the ledger prefix and cell-id stem, ``title`` one line."""

    name: str
    prefix: str
    title: str
    #: what nbgrader writes in place of a solution (``None``: nbgrader's default, which raises
    #: NotImplementedError); ``nbgrader_config.py`` reads it, so every release path agrees
    code_stub: Optional[str] = None

    @property
    def release_options(self) -> Tuple[str, ...]:
        """``nbgrader generate_assignment`` options of this activity (its code stub, if any)."""
        return () if self.code_stub is None else (f"--ClearSolutions.code_stub={self.code_stub}",)
    #: whether exercise cells carry ``metadata.course.exercise`` (the workbook's notebooks do)
    marks_items: bool = False
    #: the workbook exercises it holds (mastery counts these)
    exercises: Sequence[Exercise] = ()

    def cells(self, variant: Optional[int] = None) -> List[Cell]:
        raise NotImplementedError

    def parts(self) -> List[Part]:
        raise NotImplementedError

    def cell_id_prefix(self) -> str:
        return self.prefix

    def prompt_markdown(self, item: str, variant: Optional[int] = None) -> str:
        raise NotImplementedError

    def worked_markdown(self, item: str, variant: Optional[int] = None) -> str:
        raise NotImplementedError

    def worked_mark(self, item: str) -> str:
        """The mark feedback puts on ``item``'s worked-answer cell (so inserting it is idempotent)."""
        return item

    def variant_report(self, variant: Optional[int], derivations: bool = False, keys: bool = True) -> List[str]:
        """Markdown lines: each question for ``variant``; with ``keys``, its numbers and keys too
        (and with ``derivations`` the worked answers)."""
        raise NotImplementedError

    def progress(self, entries: Dict[str, dict]) -> dict:
        raise NotImplementedError

    def answer_sources(self, variant: Optional[int] = None) -> Dict[str, str]:
        """``{answer grade_id: source}``: the reference solution written with ``variant``'s numbers."""
        return {cell.grade_id: cell.source for cell in self.cells(variant) if cell.role == "answer"}


def _points(entry: dict) -> Optional[Tuple[float, float]]:
    if isinstance(entry.get("points"), (int, float)) and isinstance(entry.get("max_points"), (int, float)):
        return float(entry["points"]), float(entry["max_points"])
    return None


@dataclass(eq=False)
class Chapter(Activity):
    """A workbook chapter: intro and concept markdown, then its exercises in order.

    A chapter module creates it (``ACTIVITY = CH = Chapter("ch00", "ch00_ring_allreduce",
    **CHAPTER)``) and declares exercises with :mod:`course.assess.authoring`, which add them here.
    """

    prefix: str
    name: str
    title: str
    intro: str
    concept: Sequence[str] = ()
    exercises: List[Exercise] = field(default_factory=list)
    marks_items = True
    code_stub = CHAPTER_CODE_STUB

    def add(self, exercise: Exercise) -> Exercise:
        if exercise.kind not in DISPLAY_KINDS:
            raise ValueError(f"kind must be one of {DISPLAY_KINDS}, got {exercise.kind!r}")
        if any(ex.number == exercise.number for ex in self.exercises):
            raise ValueError(f"exercise {exercise.number} is already defined in {self.prefix}")
        self.exercises.append(exercise)
        self.exercises.sort(key=lambda ex: tuple(int(x) for x in ex.number.split(".")))
        return exercise

    def exercise(self, number: str) -> Exercise:
        for ex in self.exercises:
            if ex.number == number:
                return ex
        raise ValueError(f"exercise must be one of {[ex.number for ex in self.exercises]}, got {number!r}")

    def parts(self) -> List[Part]:
        return [part for ex in self.exercises for part in ex.parts]

    def cells(self, variant: Optional[int] = None) -> List[Cell]:
        out = [Cell("markdown", f"# {self.title}\n\n{self.intro}")]
        out += [Cell("markdown", text) for text in self.concept]
        out.append(Cell("setup", SETUP.format(assignment=self.name), f"{self.prefix}_setup"))
        for ex in self.exercises:
            for cell in ex.cells(spec_for(ex, variant)):
                cell.item = ex.number
                out.append(cell)
        return out

    def prompt_markdown(self, item: str, variant: Optional[int] = None) -> str:
        ex = self.exercise(item)
        return ex.prompt(spec_for(ex, variant)) if ex.prompt else ""

    def worked_markdown(self, item: str, variant: Optional[int] = None) -> str:
        return derivation_markdown(self.exercise(item), variant)

    def variant_report(self, variant: Optional[int], derivations: bool = False, keys: bool = True) -> List[str]:
        lines = []
        for ex in self.exercises:
            spec = spec_for(ex, variant)
            lines.append(f"## {ex.number} {ex.kind} \u00b7 {ex.title}" + ("" if ex.varies else "  (same for everyone)"))
            lines.append(self.prompt_markdown(ex.number, variant))
            if not keys:  # a student's own prompt only: the spec may hold numbers the key derives
                lines.append("")
                continue
            lines.append("numbers: " + json.dumps(spec, default=str))
            for part in ex.parts:
                if part.value is not None:
                    lines.append(f"key {part.grade_id}: " + json.dumps(part.value.key(spec), default=str))
            if derivations:
                lines.append(derivation_markdown(ex, variant))
            lines.append("")
        return lines

    def progress(self, entries: Dict[str, dict]) -> dict:
        from .attempts import current_identity, record_of

        done = [entries.get(ex.ledger_key, {}) for ex in self.exercises]
        graded = [p for p in (_points(e) for e in done) if p is not None]
        who = current_identity(self.name)  # attempts and passes of this student on their own numbers
        mine = [record_of(e, who) for e in done]
        return {"kind": "chapter", "title": self.title, "assignment": self.name,
                "exercises_total": len(self.exercises),
                "attempted": sum(int(r.get("attempts", 0)) > 0 for r in mine),
                "attempts": sum(int(r.get("attempts", 0)) for r in mine),
                "visible_passed": sum(r.get("passed") is True for r in mine),
                "points": sum(p for p, _ in graded) if graded else None,
                "max_points": sum(m for _, m in graded) if graded else None}


@dataclass(frozen=True)
class CellRole:
    """What a notebook cell is: its ``role`` (:data:`course.assess.spec.CELL_ROLES`), the ``item``
    it belongs to ("" for none) and the ``activity`` that declared it (``None`` if unknown)."""

    role: str
    item: str = ""
    activity: Optional[Activity] = None


class Syllabus:
    """An index of ``activities`` (the list in :mod:`course.activities`): parts by grade id,
    activities by assignment, what each declared cell is (:meth:`role_of`)."""

    def __init__(self, activities: Iterable[Activity]):
        self.activities: Tuple[Activity, ...] = tuple(activities)
        names = [a.name for a in self.activities]
        if len(set(names)) != len(names):
            raise ValueError(f"activities must have distinct names, got {names}")
        self.by_name: Dict[str, Activity] = {a.name: a for a in self.activities}
        self.parts: Dict[str, Part] = index_parts(p for a in self.activities for p in a.parts())

    def activity(self, assignment: str) -> Activity:
        if assignment not in self.by_name:
            raise ValueError(f"assignment must be one of {sorted(self.by_name)}, got {assignment!r}")
        return self.by_name[assignment]

    def activity_of(self, grade_id: str) -> Optional[Activity]:
        part = self.parts.get(grade_id)
        return self.by_name.get(part.assignment) if part is not None else None

    def exercise(self, number: str) -> Exercise:
        for activity in self.activities:
            for ex in activity.exercises:
                if ex.number == number:
                    return ex
        raise ValueError(f"no exercise {number!r} is declared")

    def activity_of_exercise(self, number: str) -> Activity:
        return self.by_name[self.exercise(number).assignment]

    @cached_property
    def _cells(self) -> Dict[str, CellRole]:
        found = {}
        for activity in self.activities:
            for cell in activity.cells():
                if cell.grade_id:
                    found[cell.grade_id] = CellRole(cell.role, cell.item, activity)
        return found

    def role_of(self, cell: Any) -> CellRole:
        """What notebook ``cell`` is, from its nbgrader grade id (the one id a student's editor
        keeps) looked up in the declarations; ``markdown``/``code`` for an undeclared cell."""
        meta = cell.get("metadata", {}) if hasattr(cell, "get") else {}
        nbgrader = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
        grade_id = nbgrader.get("grade_id", "") if isinstance(nbgrader, dict) else ""
        if isinstance(grade_id, str) and grade_id in self._cells:
            return self._cells[grade_id]
        return CellRole("markdown" if cell.get("cell_type") == "markdown" else "code")

"""Exercises as plain data: parameter specs, cells, derivations, variants.

An :class:`Exercise` holds one workbook exercise: its number, kind, the
parameter spec its numbers come from (default: the workbook's numbers), the
markdown and code cells the notebook builder writes, a derivation rendered
from the spec (computed with ``course.core``) and the registry parts that
grade it. Prompts, solutions, keys and derivations all read the *same* spec,
so a per-student variant only needs :func:`spec_for` to return another one.

``spec_for(exercise, variant)`` returns the default spec for ``variant=None``
and ``exercise.vary(spec, rng)`` seeded by the variant otherwise; who gets
which variant, and whether an assignment has variants at all, is decided in
:mod:`course.assess.variants`. ``prompt(spec)`` is kept on the exercise so
a read-only cell can render it with the student's numbers in the kernel.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from .items import Written
from .registry import Part
from .variants import vary_spec

DISPLAY_KINDS = ("Derive", "Trace", "Build", "Debug", "Design")


#: what a cell is for; ``markdown`` and ``manual`` are markdown cells, the others code cells
CELL_ROLES = ("markdown", "code", "prompt", "setup", "answer", "check", "test", "manual")


@dataclass
class Cell:
    """One notebook cell as the builder writes it.

    ``role`` is one of :data:`CELL_ROLES`: ``markdown``, ``code`` (plain,
    read-only with a grade id), ``prompt`` (read-only, renders a question with
    the student's numbers), ``setup`` (the first code cell: imports, whose
    numbers), ``answer`` (solution code cell), ``check`` (visible check,
    read-only), ``test`` (autograded cell with hidden tests), ``manual``
    (manually graded markdown answer). ``grade_id`` and ``points`` matter for
    every role but markdown; ``item`` is the id of the activity item the cell
    belongs to (an exercise number, a lab answer id), so feedback finds the
    worked answer of the item the cell belongs to through :meth:`course.assess.activity.Syllabus.role_of`.
    """

    role: str
    source: str
    grade_id: str = ""
    points: float = 0.0
    item: str = ""

    def __post_init__(self):
        if self.role not in CELL_ROLES:
            raise ValueError(f"role must be one of {CELL_ROLES}, got {self.role!r}")


@dataclass
class Exercise:
    """One workbook exercise; its chapter (an :class:`~course.assess.activity.Chapter`) gives
    ``chapter`` and ``assignment``."""

    chapter: str                      # "ch00"
    assignment: str                   # "ch00_ring_allreduce"
    number: str                       # "0.1"
    kind: str                         # one of DISPLAY_KINDS
    title: str
    spec: Dict[str, Any]
    cells: Callable[[Dict[str, Any]], List[Cell]]
    derivation: Callable[[Dict[str, Any]], str]
    parts: List[Part] = field(default_factory=list)
    vary: Optional[Callable[[Dict[str, Any], random.Random], Dict[str, Any]]] = None
    prompt: Optional[Callable[[Dict[str, Any]], str]] = None
    #: its answers graded by hand (an open Trace, a Derive's "why"), typed as the labs' reflections
    written: List[Written] = field(default_factory=list)
    #: where this exercise departs from the source workbook (markdown): for instructors, on the
    #: errata page (``notebooks/errata.ipynb``), never in the student's notebook
    correction: Optional[str] = None

    @property
    def varies(self) -> bool:
        return self.vary is not None

    @property
    def slug(self) -> str:
        return "ex" + self.number.replace(".", "_")

    @property
    def ledger_key(self) -> str:
        return f"{self.chapter}/{self.slug}"

    def grade_id(self, suffix: str = "") -> str:
        return f"{self.chapter}_{self.slug}{suffix}"


def spec_for(exercise: Exercise, variant: Optional[int] = None) -> Dict[str, Any]:
    """The parameters of ``exercise`` for ``variant`` (see :mod:`course.assess.variants`).

    ``None`` (variants off, or no student known) gives the workbook's own numbers.
    """
    return vary_spec(exercise.number, exercise.spec, exercise.vary, variant)


def derivation_markdown(ex: Exercise, variant: Optional[int] = None) -> str:
    """The worked derivation of exercise ``ex`` with the numbers of ``variant`` (None: the workbook's)."""
    try:
        body = ex.derivation(spec_for(ex, variant))
    except Exception as exc:  # feedback must still render
        body = f"(the derivation could not be computed: {type(exc).__name__})"
    return f"**Worked derivation, exercise {ex.number} ({ex.kind}).** {body}"

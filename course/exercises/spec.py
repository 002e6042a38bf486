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
:mod:`course.exercises.variants`. ``prompt(spec)`` is kept on the exercise so
a read-only cell can render it with the student's numbers in the kernel.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from .registry import Part

DISPLAY_KINDS = ("Derive", "Trace", "Build", "Debug", "Design")


@dataclass
class Cell:
    """One notebook cell as the builder writes it.

    ``role`` is one of ``markdown``, ``code`` (plain, read-only), ``answer``
    (solution code cell), ``check`` (visible check, read-only), ``test``
    (autograded cell with hidden tests), ``manual`` (manually graded markdown
    answer). ``grade_id`` and ``points`` matter for answer/check/test/manual.
    """

    role: str
    source: str
    grade_id: str = ""
    points: float = 0.0


@dataclass
class Exercise:
    chapter: str                      # "ch00"
    number: str                       # "0.1"
    kind: str                         # one of DISPLAY_KINDS
    title: str
    spec: Dict[str, Any]
    cells: Callable[[Dict[str, Any]], List[Cell]]
    derivation: Callable[[Dict[str, Any]], str]
    parts: List[Part] = field(default_factory=list)
    vary: Optional[Callable[[Dict[str, Any], random.Random], Dict[str, Any]]] = None
    prompt: Optional[Callable[[Dict[str, Any]], str]] = None

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


#: exercise number -> Exercise, filled by the chapter modules
EXERCISES: Dict[str, Exercise] = {}


def add_exercise(exercise: Exercise) -> Exercise:
    if exercise.kind not in DISPLAY_KINDS:
        raise ValueError(f"kind must be one of {DISPLAY_KINDS}, got {exercise.kind!r}")
    existing = EXERCISES.get(exercise.number)
    if existing is not None and existing is not exercise:
        raise ValueError(f"exercise {exercise.number} is already defined")
    EXERCISES[exercise.number] = exercise
    return exercise


def spec_for(exercise: Exercise, variant: Optional[int] = None) -> Dict[str, Any]:
    """The parameters of ``exercise`` for ``variant`` (see :mod:`course.exercises.variants`).

    ``None`` (variants off, or no student known) gives the workbook's own numbers.
    """
    from .variants import vary_spec
    return vary_spec(exercise.number, exercise.spec, exercise.vary, variant)


def chapter_exercises(chapter: str) -> List[Exercise]:
    """Exercises of ``chapter`` (e.g. ``"ch00"``) in workbook order."""
    def order(ex: Exercise):
        return tuple(int(x) for x in ex.number.split("."))
    return sorted((e for e in EXERCISES.values() if e.chapter == chapter), key=order)


def derivation_markdown(number: str, variant: Optional[int] = None) -> str:
    """The worked derivation of exercise ``number`` with the numbers of ``variant`` (None: the workbook's)."""
    ex = EXERCISES[number]
    try:
        body = ex.derivation(spec_for(ex, variant))
    except Exception as exc:  # feedback must still render
        body = f"(the derivation could not be computed: {type(exc).__name__})"
    return f"**Worked derivation, exercise {number} ({ex.kind}).** {body}"

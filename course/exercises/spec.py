"""Exercises as plain data: parameter specs, cells, derivations, variants.

An :class:`Exercise` holds one workbook exercise: its number, kind, the
parameter spec its numbers come from (default: the workbook's numbers), the
markdown and code cells the notebook builder writes, a derivation rendered
from the spec (computed with ``course.core``) and the registry parts that
grade it. Prompts, solutions, keys and derivations all read the *same* spec,
so per-student variants only need :func:`spec_for` to return another one.

Variants are off by default. Switch them on with ``COURSE_VARIANTS=1``; an
exercise that defines ``vary(spec, rng) -> spec`` (0.1 and 2.1 do) then gets
a reproducible variant per student seed from ``spec_for(exercise, seed)``.
Still to do when variants are wanted: build one release notebook per seed
and pass the student's seed to the judges (they use the default spec now).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from .registry import Part

DISPLAY_KINDS = ("Derive", "Trace", "Build", "Debug", "Design")


def variants_enabled() -> bool:
    return os.environ.get("COURSE_VARIANTS", "0") not in ("", "0", "false", "no")


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


def spec_for(exercise: Exercise, seed: Optional[int] = None) -> Dict[str, Any]:
    """The parameters of ``exercise`` for a student seed (the default spec unless variants are on)."""
    if seed is None or exercise.vary is None or not variants_enabled():
        return dict(exercise.spec)
    rng = random.Random(f"{exercise.number}:{seed}")
    return exercise.vary(dict(exercise.spec), rng)


def chapter_exercises(chapter: str) -> List[Exercise]:
    """Exercises of ``chapter`` (e.g. ``"ch00"``) in workbook order."""
    def order(ex: Exercise):
        return tuple(int(x) for x in ex.number.split("."))
    return sorted((e for e in EXERCISES.values() if e.chapter == chapter), key=order)

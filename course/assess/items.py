"""The typed items of an activity: what a student answers and how it is judged.

An :class:`~course.assess.activity.Activity` (a workbook chapter or a lab) is a
sequence of items. Each graded item becomes one or more
:class:`~course.assess.registry.Part` s, and the part carries its item, so
every consumer (clean room, feedback, visible checks, the variant CLI) reads
typed attributes instead of conventions:

:class:`Value`
    Names the student assigns (Derive, Trace, Design, the line of a Debug
    exercise, a lab's numeric or named answer); ``key(spec)`` gives their
    keys. ``judged_in`` says where the values are read: ``"clean room"``
    (a workbook answer computed by hand, re-run without the course package) or
    ``"kernel"`` (a lab answer read from the course's instruments).
:class:`Function`
    A function the student writes (Build, Debug's fix), called in the clean
    room on probe inputs and compared with ``reference``; a collective
    (:class:`~course.assess.ranks.RankFunction`) is called on several ranks.
:class:`Written`
    A written answer graded by hand (a reflection, an open Trace); its model
    answer is the worked answer feedback shows.
:class:`Lock`
    A prediction locked before an act's instruments appear. It owns its
    reveal: everything written for after the prediction is in ``reveal`` and
    is rendered by the lock widget once the student locks, never as markdown
    before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Sequence

#: where a part's answer is read: a fresh sandboxed process without the course package, the kernel, or
#: (a collective, :mod:`course.assess.ranks`) real MPI ranks in a sandbox of their own
CLEAN_ROOM, KERNEL, RANKS = "clean room", "kernel", "ranks"
JUDGED_IN = (CLEAN_ROOM, KERNEL, RANKS)

#: how a lock letters its options on a student's screen, by position (never stored)
LETTERS = "ABCDEFGH"


@dataclass(frozen=True)
class Value:
    """Named values graded against ``key(spec) -> {name: key}``.

    ``units`` maps each name to the unit or description shown in messages;
    numbers are compared within ``tolerances.get(name, rtol)``; ``options``
    lists the allowed values of a choice.
    """

    units: Dict[str, str]
    key: Callable[[Dict[str, Any]], Dict[str, Any]]
    rtol: float = 0.01
    tolerances: Dict[str, float] = field(default_factory=dict)
    options: Dict[str, Sequence[Any]] = field(default_factory=dict)
    judged_in: str = CLEAN_ROOM

    def __post_init__(self):
        if self.judged_in not in JUDGED_IN:
            raise ValueError(f"judged_in must be one of {JUDGED_IN}, got {self.judged_in!r}")


@dataclass(frozen=True)
class Function:
    """A function named ``name`` graded on probe inputs against ``reference(*args)``.

    ``examples`` are the worked examples the visible check runs; ``invalid_examples`` the inputs
    outside the prompt's ranges it runs too, each of which must raise ``ValueError`` (the hidden
    tests' fixed invalid inputs: a behaviour graded is a behaviour checked); ``returns`` is
    ``"number"``, ``"int"`` or ``"numbers"`` (a tuple compared element-wise).
    """

    name: str
    reference: Callable[..., Any]
    examples: Sequence[Sequence[Any]] = ()
    invalid_examples: Sequence[Sequence[Any]] = ()
    returns: str = "number"
    rtol: float = 1e-6
    atol: float = 1e-9
    judged_in: str = CLEAN_ROOM


@dataclass(frozen=True)
class Written:
    """A written answer graded by hand; ``model_answer`` and ``mark_scheme`` never reach the release."""

    id: str
    prompt: str
    model_answer: str
    mark_scheme: str
    points: float = 2.0


@dataclass(frozen=True)
class Lock:
    """A prediction asked before an act's instruments appear.

    ``options`` maps a stable *option id* (a short slug naming the option's content, e.g.
    ``"network-jump"``) to its text; ``correct`` is an id. What a student locks, what the reveal,
    grading, feedback and the class report speak of, is that id, never a letter: each student sees
    the options in an order drawn from their own seed (:mod:`course.assess.lock_order`), lettered by
    position on their screen only.

    ``ordered`` declares a scale ("falls / stays / rises", "2x / 7x / 128x") whose options cannot be
    shuffled: they are shown in declaration order or reversed, so the right one still moves.
    ``shown`` (a scale only) is how many neighbouring options of the scale a student sees: a scale
    declared with more options than that is shown as a window of ``shown`` of them, so that the right
    option can sit at either end as well as in the middle (a scale of four shown whole, declared
    right in its middle, would otherwise never have its answer at A or D). 0 shows every option.
    ``banned`` lists phrases that would give the right option away: no text a student can read
    before locking (the notebook, the student docs, the captions) may contain them (a test reads
    them all). ``legacy`` lists the ids in the order of the letters ``A, B, C...`` that ledgers
    written before option ids stored (default: declaration order), so an old ``"B"`` still reads.

    ``explanation`` says why the correct option is right; ``reveal`` is every word written for
    after the prediction (what the instruments show, a correction to the source, the framing of
    what comes next that presumes the answer). Both are rendered by the lock once the student locks
    (and again after a restart once locked), in place of the old static markdown.
    """

    question: str
    options: Dict[str, str]
    correct: str
    explanation: str
    reveal: str = ""
    ordered: bool = False
    shown: int = 0
    banned: Sequence[str] = ()
    legacy: Sequence[str] = ()
    judged_in: str = KERNEL

    def __post_init__(self):
        if self.correct not in self.options:
            raise ValueError(f"correct must be one of {list(self.options)}, got {self.correct!r}")
        if self.legacy and sorted(self.legacy) != sorted(self.options):
            raise ValueError(f"legacy must list every option id once, got {list(self.legacy)}")
        if not 2 <= len(self.options) <= len(LETTERS):
            raise ValueError(f"options must have 2 to {len(LETTERS)} entries, got {len(self.options)}")
        if self.shown and not (self.ordered and 2 <= self.shown <= len(self.options)):
            raise ValueError(f"shown must be 0, or 2 to {len(self.options)} for an ordered scale, got {self.shown!r}")

    @property
    def letters(self) -> Dict[str, str]:
        """The letter an old ledger stored for each option id (``{"A": id, ...}``)."""
        return dict(zip(LETTERS, self.legacy or tuple(self.options)))

    def option_id(self, value: Any) -> Optional[str]:
        """The option id ``value`` stands for: an id as stored now, or a letter an older ledger stored
        (:attr:`letters`); ``None`` for anything else.

        >>> lock = Lock("?", {"two": "2x", "four": "4x"}, "four", "")
        >>> lock.option_id("four"), lock.option_id("B"), lock.option_id("Z")
        ('four', 'four', None)
        """
        if not isinstance(value, str):
            return None
        if value in self.options:
            return value
        return self.letters.get(value)

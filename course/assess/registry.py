"""Graded parts: every autograded nbgrader test cell, its verdict, and plain values.

A :class:`Part` is one autograded cell. Grading a part is split in two so
that a hostile kernel cannot award itself points:

``harvest(namespace, probes) -> dict``
    Runs in the student's kernel. It only *produces values*: it reads the
    names the student defined, calls Build functions on probe inputs, and
    converts every result to plain JSON types (``int``, ``float``, ``str``,
    ``bool``, ``None``, ``list``, ``dict``). Anything else is recorded as
    ``{"__unplain__": "<type name>"}`` so the judge can say what was wrong.

``judge(harvested) -> Verdict``
    Runs in a trusted process that the student's code never ran in (the
    autograder parses the harvested JSON there). It compares the values with
    keys that ``course.core`` computes from the exercise's parameter spec and
    rejects anything that is not of a plain type, so an object whose ``==``
    always returns True earns nothing.

``probes(seed) -> JSON-able``
    For Build and Debug parts: the inputs the function is called on. The
    trusted side makes them (seeded), the kernel only evaluates them.
"""

from __future__ import annotations

import math
import re
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Optional, Sequence, Tuple, Union

from . import codes
from .items import Function, Lock, Value

KINDS = ("derive", "trace", "build", "debug", "design", "lock", "choice")

#: marker for a value that was not of a plain JSON type when harvested
UNPLAIN = "__unplain__"
#: marker for a call that raised; the value is the exception's class name
RAISED = "__raised__"
#: key the trusted grader adds to a value part's harvest: the part's names that no code cell of the
#: submitted notebook assigns (its answer cell is still the release's blank stub), computed from the
#: notebook's text (:func:`course.assess.cleanroom_protocol.bound_names`), never read from the student's process
UNBOUND = "__unbound__"


def unanswered_reason(name: str, value: Any, harvested: dict) -> Optional[str]:
    """Why the answer ``name`` counts as not answered, or ``None`` if it was answered (rightly or not).

    ``value`` is what was read for ``name``: ``None`` (the student left ``name = None``) is no answer;
    a name that is missing is not answered if no cell assigns it (``harvested[UNBOUND]``).
    A missing name that some cell assigns is *not defined* instead (that cell failed): not this.

    >>> unanswered_reason("x", None, {})
    '`x` is not answered: it is None'
    >>> unanswered_reason("x", {"__missing__": "x"}, {UNBOUND: ["x"]})
    '`x` is not answered: no cell of your notebook assigns it'
    >>> unanswered_reason("x", {"__missing__": "x"}, {UNBOUND: []}) is None, unanswered_reason("x", 3.0, {})
    (True, None)
    """
    if value is None:
        return f"`{name}` is not answered: it is None"
    unbound = harvested.get(UNBOUND)
    missing = type(value) is dict and ("__missing__" in value or RAISED in value)
    if missing and type(unbound) is list and name in unbound:
        return f"`{name}` is not answered: no cell of your notebook assigns it"
    return None


@dataclass(frozen=True)
class Check:
    """One graded aspect of a part (partial credit): its share of the part and a one-line reason.

    ``earned`` and ``share`` are fractions of the part's points; the reason names
    what is right or wrong, never the hidden inputs or the key; ``codes`` the kinds of failure
    (:mod:`course.assess.codes`, one per kind, sorted), empty when the check is right.
    """

    name: str
    earned: float
    share: float
    reason: str
    codes: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """The judgement of one part: ``score`` in [0, 1], a reason a student understands, its ``code``
    (:mod:`course.assess.codes`: what the class report, feedback and tests read, never the reason)
    and, for parts with partial credit, the :class:`Check` s whose ``earned`` add up to ``score``.

    ``findings`` holds one code per thing the reason names, in its order (a value part with two
    wrong names has two); it defaults to ``(code,)``. Without a ``code``, a verdict that passed is
    ``course.assess.codes.CORRECT`` and one that did not is
    :data:`~course.assess.codes.WRONG_VALUE`.
    """

    score: float
    reason: str
    checks: Tuple[Check, ...] = ()
    code: str = ""
    findings: Tuple[str, ...] = ()

    def __post_init__(self):
        if type(self.score) not in (int, float) or not 0.0 <= self.score <= 1.0:
            raise ValueError(f"score must be a number in [0, 1], got {self.score!r}")
        if self.checks and not math.isclose(sum(c.earned for c in self.checks), self.score, abs_tol=1e-9):
            raise ValueError(f"checks must add up to score {self.score!r}")
        code = self.code or (self.findings[0] if self.findings else
                             codes.CORRECT if self.score >= 1.0 else codes.WRONG_VALUE)
        unknown = [c for c in (code, *self.findings) if c not in codes.MEANING]
        if unknown:
            raise ValueError(f"code must be one of course.assess.codes.MEANING, got {unknown[0]!r}")
        object.__setattr__(self, "code", code)
        object.__setattr__(self, "findings", tuple(self.findings) or (code,))

    @property
    def passed(self) -> bool:
        return self.score >= 1.0


def _no_probes(seed: int) -> None:
    return None


@dataclass(frozen=True)
class Part:
    """One autograded cell of an assignment.

    Attributes
    ----------
    grade_id : str
        nbgrader ``grade_id`` of the test cell, e.g. ``"ch00_ex0_1"``.
    exercise : str
        Id of the graded item within its activity: an exercise number (``"0.1"``), a lab
        answer id (``"act1_allreduce"``) or the act of a lock (``"act1"``).
    kind : str
        One of ``KINDS``.
    points : float
        Points of the test cell (also written into the notebook metadata).
    names : tuple of str
        The names the student defines (variables or functions).
    harvest : callable
        ``harvest(namespace, probes) -> dict`` of plain values (runs in the kernel).
    judge : callable
        ``judge(harvested, seed=0) -> Verdict`` (runs in a trusted process;
        ``seed`` must be the one the probes were made with).
    probes : callable
        ``probes(seed) -> JSON-able`` probe inputs (``None`` for parts without).
    assignment : str
        nbgrader assignment name, e.g. ``"ch00_ring_allreduce"``.
    ledger_key : str
        Key of the design-ledger entry, e.g. ``"ch00/ex0_1"``.
    title : str
        One line shown in feedback and grade tables.
    item : Value, Function or Lock
        The typed item this part grades (:mod:`course.assess.items`): what the
        clean room calls or reads, the key, the visible check's examples.
    """

    grade_id: str
    exercise: str
    kind: str
    points: float
    names: Tuple[str, ...]
    harvest: Callable[[dict, Any], dict]
    judge: Callable[[dict], Verdict]
    probes: Callable[[int], Any] = _no_probes
    assignment: str = ""
    ledger_key: str = ""
    title: str = ""
    item: Union[Value, Function, Lock, None] = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if type(self.points) not in (int, float) or self.points <= 0:
            raise ValueError(f"points must be > 0, got {self.points!r}")

    @property
    def judged_in(self) -> str:
        """Where the answer is read: ``"clean room"`` or ``"kernel"`` (``course.assess.items.JUDGED_IN``)."""
        return self.item.judged_in if self.item is not None else "kernel"

    @property
    def function(self) -> Optional[Function]:
        """The function item of a Build part or a Debug fix, else ``None``."""
        return self.item if isinstance(self.item, Function) else None

    @property
    def value(self) -> Optional[Value]:
        """The value item of a part graded on assigned names, else ``None``."""
        return self.item if isinstance(self.item, Value) else None

    def grade(self, namespace: dict, seed: int = 0) -> Verdict:
        """Harvest and judge in one process (used by in-kernel hidden tests and tests)."""
        harvested = self.harvest(namespace, self.probes(seed))
        return safe_judge(self, roundtrip(to_plain(harvested)), seed)


def index_parts(parts: Iterable[Part]) -> Dict[str, Part]:
    """``{grade_id: part}`` of ``parts``; a grade_id may appear once only."""
    found: Dict[str, Part] = {}
    for part in parts:
        existing = found.get(part.grade_id)
        if existing is not None and existing is not part:
            raise ValueError(f"grade_id {part.grade_id!r} is declared twice")
        found[part.grade_id] = part
    return found


def safe_judge(part: Part, harvested: Any, seed: int = 0) -> Verdict:
    """Run ``part.judge(harvested, seed)`` and turn any crash into a zero with a reason."""
    if type(harvested) is not dict:
        return Verdict(0.0, "nothing could be read from the notebook for this exercise", code=codes.UNREADABLE)
    try:
        verdict = part.judge(harvested, seed)
    except Exception as exc:  # a malformed harvest must not crash grading
        return Verdict(0.0, f"answer could not be checked ({type(exc).__name__})", code=codes.JUDGE_ERROR)
    if type(verdict) is not Verdict:
        return Verdict(0.0, "internal error: judge returned no verdict", code=codes.JUDGE_ERROR)
    if verdict.checks and not verdict.passed and part.points:
        # partial credit, said in the units the cell is graded in ("earns 2.25 of 3 points"), not in checks
        points = verdict.score * part.points
        verdict = Verdict(verdict.score, f"{verdict.reason}. It earns {points:.3g} of {part.points:g} "
                          f"point{'' if part.points == 1 else 's'}", verdict.checks,
                          code=verdict.code, findings=verdict.findings)
    return verdict


# ---------------------------------------------------------------------------
# plain values: produced in the kernel, checked again in the trusted process
# ---------------------------------------------------------------------------

class NotPlain(ValueError):
    """A value is not of a plain JSON type."""


def to_plain(value: Any, depth: int = 0) -> Any:
    """Convert ``value`` to plain JSON types or return an UNPLAIN marker.

    Exact types only: a subclass of ``float`` or ``str`` (which could override
    ``__eq__``) is not plain. NumPy scalars and 0-d arrays are converted
    explicitly with ``.item()``; other arrays become lists.

    >>> import numpy as np
    >>> to_plain(np.float64(2.5)), to_plain([1, (2, 3)]), to_plain(object())
    (2.5, [1, [2, 3]], {'__unplain__': 'object'})
    """
    if depth > 20:
        return {UNPLAIN: "nested too deeply"}
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if kind in (list, tuple):
        return [to_plain(v, depth + 1) for v in value[:10_000]]
    if kind is dict:
        if all(type(k) is str for k in value):
            return {k: to_plain(v, depth + 1) for k, v in value.items()}
        return {UNPLAIN: "dict with non-string keys"}
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a dependency
        np = None
    if np is not None and kind.__module__ == "numpy":
        if isinstance(value, np.generic):
            item = value.item()
            if type(item) in (bool, int, float, str):
                return item
        elif isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            if value.ndim == 0:
                return value.item()
            return to_plain(value.tolist(), depth + 1)
    return {UNPLAIN: kind.__name__}


def roundtrip(harvested: Any) -> Any:
    """Pass ``harvested`` through JSON, as the autograder does between processes."""
    import json

    try:
        return json.loads(json.dumps(harvested, allow_nan=True))
    except (TypeError, ValueError):
        return None


def describe_unplain(value: Any) -> Optional[str]:
    """Return why ``value`` is not plain, or ``None`` if it is."""
    if type(value) is dict and UNPLAIN in value:
        return f"got an object of type {value[UNPLAIN]}, expected a plain Python value"
    if type(value) is dict and RAISED in value:
        return f"raised {value[RAISED]}"
    return None


def plain_number(value: Any, name: str = "answer") -> float:
    """Return ``value`` as float if it is a plain finite int/float, else raise NotPlain.

    ``bool`` is not a number here (``True == 1`` would otherwise pass).

    >>> plain_number(3)
    3.0
    >>> plain_number(True)
    Traceback (most recent call last):
    ...
    course.assess.registry.NotPlain: answer must be a number (int or float), got bool
    """
    why = describe_unplain(value)
    if why:
        raise NotPlain(f"{name}: {why}")
    if type(value) not in (int, float):
        raise NotPlain(f"{name} must be a number (int or float), got {type(value).__name__}")
    result = float(value)
    if not math.isfinite(result):
        raise NotPlain(f"{name} must be finite, got {value!r}")
    return result


#: (factor, code) pairs tried in order when a value is off by a recognisable factor
_UNIT_SLIPS = [
    (1e3, codes.FACTOR_OF_1000),
    (1e6, codes.FACTOR_OF_1E6),
    (1e9, codes.FACTOR_OF_1E9),
    (1e12, codes.FACTOR_OF_1E12),
    (100.0, codes.FACTOR_OF_100),
    (1.073741824, codes.GIB_FOR_GB),
    (60.0, codes.FACTOR_OF_60),
    (3600.0, codes.FACTOR_OF_3600),
    (8.0, codes.FACTOR_OF_8),
    (2.0, codes.FACTOR_OF_2),
]


#: what a number is, from the unit its item declares (:func:`quantity_of`)
QUANTITIES = ("bytes", "time", "percent", "count", "money", "other")
_BYTES_UNIT = re.compile(r"(?<![A-Za-z])(?:[KMGTP]i?B|bytes?)(?![A-Za-z])")
_TIME_UNIT = re.compile(r"^(?:ms|\u00b5s|us|s|min|minutes?|h|hours?|days?)(?![A-Za-z-])")
_MONEY_UNIT = re.compile(r"^(?:\$|USD|dollars?)(?![A-Za-z])")
_COUNT_UNIT = re.compile(r"^(?:GPUs|layers|heads|micro-batches|(?:optimizer )?steps|stages|columns|count)\b")
#: the slips that only make sense for some quantities; any other slip applies to every number
_SLIP_QUANTITIES = {1.073741824: ("bytes",), 8.0: ("bytes",), 60.0: ("time",), 3600.0: ("time",),
                    100.0: ("percent", "other"),
                    # phases and directions double bytes, times and counts; a price has neither
                    2.0: ("bytes", "time", "percent", "count", "other")}
#: a whole count one off: every count the workbook asks for is a quotient rounded to a whole number (steps,
#: tokens of a capacity, heads or layers per GPU), so the slip to name is the rounding, not a fencepost
OFF_BY_ONE = "off by one: check where you round to a whole number (up or down?) and count again"
#: what a student reads for each code of a wrong number (after "not yet: ")
NUMBER_HINTS = {
    codes.FACTOR_OF_1000: "a factor of 1000 off: check the unit prefix (e.g. ms vs s, MB vs GB)",
    codes.FACTOR_OF_1E6: "a factor of 10^6 off: check the unit prefix",
    codes.FACTOR_OF_1E9: "a factor of 10^9 off: check the unit (bytes vs GB, FLOP vs GFLOP)",
    codes.FACTOR_OF_1E12: "a factor of 10^12 off: check the unit (e.g. FLOP vs TFLOP)",
    codes.FACTOR_OF_100: "a factor of 100 off: a percent written as a fraction (or the reverse)?",
    codes.GIB_FOR_GB: "about 7 % off: GiB instead of GB? This course uses decimal GB = 10^9 bytes",
    codes.FACTOR_OF_60: "a factor of 60 off: seconds vs minutes, or minutes vs hours?",
    codes.FACTOR_OF_3600: "a factor of 3600 off: seconds vs hours?",
    codes.FACTOR_OF_8: "a factor of 8 off: bits instead of bytes?",
    codes.FACTOR_OF_2: "a factor of 2 off: count the phases / directions again",
    codes.OFF_BY_ONE: OFF_BY_ONE,
    codes.WRONG_SIGN: "wrong sign or zero, check the formula",
    codes.CLOSE: "check the formula and the numbers you used",
    codes.ORDER_OF_MAGNITUDE: "wrong order of magnitude",
}
#: what a student reads for each code of a wrong ordering
ORDER_HINTS = {
    codes.REVERSED_ORDER: "the reverse order: check which end comes first",
    codes.TWO_SWAPPED: "all but two are in place: two of them are swapped",
    codes.OTHER_ORDER: "the right items, in another order",
}


def quantity_of(unit: Optional[str]) -> Optional[str]:
    """What an answer with ``unit`` measures, one of :data:`QUANTITIES`; None when unknown.

    >>> [quantity_of(u) for u in ("GB per GPU", "ms", "% of peak", "micro-batches", "$", "ratio", None)]
    ['bytes', 'time', 'percent', 'count', 'money', 'other', None]
    """
    if unit is None:
        return None
    if "%" in unit:
        return "percent"
    if _BYTES_UNIT.search(unit):
        return "bytes"
    if _TIME_UNIT.match(unit):
        return "time"
    if _COUNT_UNIT.match(unit):
        return "count"
    if _MONEY_UNIT.match(unit):
        return "money"
    return "other"


def unit_hint(value: float, key: float, unit: Optional[str] = None) -> Tuple[bool, str]:
    """A hint for a value that is not right, without revealing the key.

    Returns ``(is_a_unit_slip, hint)``; a value within a factor of 3 that is
    not right is *not yet*, never "plausible". ``unit`` (the item's declared unit)
    says what the number is (:func:`quantity_of`): a GiB-for-GB or bits-for-bytes
    hint only for bytes, seconds-for-minutes only for times, a percent-as-fraction
    hint never for bytes, times or counts, and a count one off is *off by one*.
    Without ``unit`` every slip is tried.

    >>> unit_hint(1750.0, 1.75)[1].startswith("not yet: a factor of 1000")
    True
    >>> unit_hint(2.0, 1.75)
    (False, 'not yet: check the formula and the numbers you used')
    >>> unit_hint(5.1 * 1.073741824, 5.1, "%")[1], unit_hint(7, 8, "stages")[1]
    ('not yet: check the formula and the numbers you used', 'not yet: off by one: check where you round to a whole number (up or down?) and count again')
    """
    code = number_code(value, key, unit)
    return code in _SLIP_CODES, "not yet: " + NUMBER_HINTS[code]


_SLIP_CODES = frozenset(code for _, code in _UNIT_SLIPS)


def number_code(value: float, key: float, unit: Optional[str] = None) -> str:
    """The code (:mod:`course.assess.codes`) of a number ``value`` that is not the right ``key``: the
    slip :func:`unit_hint` names to the student, for an answer in ``unit``.

    >>> number_code(1750.0, 1.75), number_code(2.0, 1.75), number_code(7, 8, "stages")
    ('factor_of_1000', 'close', 'off_by_one')
    """
    quantity = quantity_of(unit)
    if key == 0 or value == 0 or (value > 0) != (key > 0):
        if quantity == "count" and float(key).is_integer() and abs(value - key) == 1:
            return codes.OFF_BY_ONE
        return codes.WRONG_SIGN
    if quantity == "count" and float(key).is_integer() and abs(value - key) == 1:
        return codes.OFF_BY_ONE
    ratio = abs(value / key)
    for factor, code in _UNIT_SLIPS:
        if quantity is not None and quantity not in _SLIP_QUANTITIES.get(factor, QUANTITIES):
            continue
        for r in (factor, 1.0 / factor):
            if math.isclose(ratio, r, rel_tol=0.02):
                return code
    if 1 / 3 <= ratio <= 3:
        return codes.CLOSE
    return codes.ORDER_OF_MAGNITUDE


def judge_plain(value: Any, key: Any, *, rtol: float = 0.01, atol: float = 0.0,
                name: str = "answer", unit: Optional[str] = None) -> Verdict:
    """Compare a harvested plain value with a trusted key.

    Numbers are compared with relative tolerance ``rtol`` (1 % by default) and
    absolute tolerance ``atol`` (a wrong one gets :func:`unit_hint` for the item's ``unit``); strings exactly after stripping and
    case-folding; bools exactly; lists element by element (same length).
    Anything not of a plain type scores zero.

    >>> judge_plain(99.5, 100.0).score, judge_plain(90.0, 100.0).score
    (1.0, 0.0)
    >>> judge_plain({"__unplain__": "AlwaysEqual"}, 1.0).score
    0.0
    >>> judge_plain(1750.0, 1.75, name="t").reason
    't does not match the expected value: a factor of 1000 off: check the unit prefix (e.g. ms vs s, MB vs GB)'
    """
    try:
        ok = _matches(value, key, rtol, atol, name)
    except NotPlain as exc:
        return Verdict(0.0, str(exc), code=codes.NOT_PLAIN)
    if ok:
        return Verdict(1.0, f"{name} is correct", code=codes.CORRECT)
    if type(key) in (int, float) and type(key) is not bool:
        # a graded number that is wrong says how (a unit slip, a factor of 2, the magnitude), never the key
        code = number_code(float(value), float(key), unit)
        return Verdict(0.0, f"{name} does not match the expected value: {NUMBER_HINTS[code]}", code=code)
    code = order_code(value, key) if type(key) in (list, tuple) else None
    if code:
        return Verdict(0.0, f"{name} does not match the expected value: {ORDER_HINTS[code]}", code=code)
    return Verdict(0.0, f"{name} does not match the expected value", code=codes.WRONG_VALUE)


def order_hint(value: Any, key: Sequence[Any]) -> Optional[str]:
    """A hint for a wrong order (a list of the key's items), without revealing the key.

    >>> order_hint(["c", "b", "a"], ["a", "b", "c"])
    'the reverse order: check which end comes first'
    >>> order_hint(["b", "a", "c", "d"], ["a", "b", "c", "d"])
    'all but two are in place: two of them are swapped'
    >>> order_hint(["b", "c", "a"], ["a", "b", "c"])
    'the right items, in another order'
    >>> order_hint(["a", "x"], ["a", "b"]) is None
    True
    """
    code = order_code(value, key)
    return ORDER_HINTS[code] if code else None


def order_code(value: Any, key: Sequence[Any]) -> Optional[str]:
    """The code of a wrong order (:func:`order_hint` words it), or ``None`` if it is no reordering of the key.

    >>> order_code(["c", "b", "a"], ["a", "b", "c"]), order_code(["a", "x"], ["a", "b"])
    ('reversed_order', None)
    """
    if type(value) not in (list, tuple) or len(value) != len(key) or len(key) < 2:
        return None
    norm = [str(v).strip().casefold() for v in value]
    want = [str(k).strip().casefold() for k in key]
    if sorted(norm) != sorted(want) or norm == want:
        return None
    if norm == want[::-1]:
        return codes.REVERSED_ORDER
    if sum(a != b for a, b in zip(norm, want)) == 2:
        return codes.TWO_SWAPPED
    return codes.OTHER_ORDER


def _matches(value: Any, key: Any, rtol: float, atol: float, name: str) -> bool:
    if type(key) is bool:
        if type(value) is not bool:
            raise NotPlain(describe_unplain(value) or f"{name} must be True or False, got {type(value).__name__}")
        return value is key
    if type(key) in (int, float):
        number = plain_number(value, name)
        return math.isclose(number, float(key), rel_tol=rtol, abs_tol=atol)
    if type(key) is str:
        if type(value) is not str:
            raise NotPlain(describe_unplain(value) or f"{name} must be a string, got {type(value).__name__}")
        return value.strip().casefold() == key.strip().casefold()
    if type(key) in (list, tuple):
        if type(value) is not list:
            raise NotPlain(describe_unplain(value) or f"{name} must be a list, got {type(value).__name__}")
        if len(value) != len(key):
            return False
        return all(_matches(v, k, rtol, atol, f"{name}[{i}]") for i, (v, k) in enumerate(zip(value, key)))
    raise TypeError(f"unsupported key type {type(key).__name__}")


def is_number_type(value: Any) -> bool:
    """True for a Python or NumPy real number (not bool) - used by visible checks in the kernel."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    try:
        import numpy as np
        return isinstance(value, np.generic) and np.issubdtype(type(value), np.number) \
            and not np.issubdtype(type(value), np.complexfloating)
    except ImportError:  # pragma: no cover
        return isinstance(value, numbers.Real)

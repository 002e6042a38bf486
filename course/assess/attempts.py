"""Attempts at an exercise: a student's *new* answers, kept per student and per variant.

A visible check counts an attempt only when the answer differs from every answer already checked for
that exercise by the same student on the same numbers: re-running a cell, Run All and a restart run
the same answer again and count nothing. What a check records lives in the exercise's ledger entry
(``"ch04/ex4_1"``) under ``by_identity[<student>@<variant>]``:

``attempts``
    distinct answers checked;
``wrong``
    distinct answers checked that were not right (the derivation is offered after
    :data:`~course.assess.variants.DERIVATION_AFTER_ATTEMPTS` of them, or after a right one);
``answers``
    fingerprints of the answers checked (:func:`answer_fingerprint`: a hash, never the answer);
``passed`` / ``last_passed``
    right at least once / right the last time, for these numbers only.

A new identity (``course student NAME``) or other numbers start from nothing, and an answer that was
right for other numbers is not "passed" for these. The entry's top level keeps what is not tied to an
identity (``chapter``, ``exercise``, ``kind``, ``days`` for the streak), the graded points, and a copy of
the record of the identity that checked last (``identity``, ``attempts``, ``passed``, ``last_passed``:
what an instructor's class report reads from a student's own ledger); mastery and progress read
``by_identity`` only.

>>> entry = {}
>>> record, new = count_answer(entry, "ada@7", "f1", right=False)
>>> new, record["attempts"], record["wrong"], record["passed"]
(True, 1, 1, False)
>>> entry = {"by_identity": {"ada@7": record}}
>>> count_answer(entry, "ada@7", "f1", right=False)[1]  # the same answer again: no attempt
False
>>> count_answer(entry, "bob@3", "f1", right=False)[0]["attempts"]  # another student starts fresh
1
"""

from __future__ import annotations

import hashlib
import json
import re
import types
from typing import Any, Optional, Tuple

#: how many fingerprints an identity keeps (older ones are dropped: an answer that old counts again)
MAX_ANSWERS = 200


def identity(student: Optional[str], variant: Optional[int]) -> str:
    """The key of one student on one set of numbers.

    >>> identity("ada", 12), identity(None, None)
    ('ada@12', 'nobody@workbook')
    """
    return f"{student or 'nobody'}@{'workbook' if variant is None else variant}"


def current_identity(assignment: str) -> str:
    """The identity this kernel checks ``assignment`` as: its student and that student's variant."""
    from .variants import current_student, current_variant

    return identity(current_student()[0], current_variant(assignment))


def record_of(entry: Optional[dict], who: str) -> dict:
    """What ``entry`` holds for identity ``who`` (empty if nothing)."""
    records = (entry or {}).get("by_identity")
    record = records.get(who) if isinstance(records, dict) else None
    return record if isinstance(record, dict) else {}


def count_answer(entry: dict, who: str, fingerprint: str, right: bool) -> Tuple[dict, bool]:
    """``(record, new)``: identity ``who``'s record after checking an answer with ``fingerprint``;
    ``new`` is whether it was an answer not checked before (only then is it an attempt)."""
    before = record_of(entry, who)
    answers = [a for a in before.get("answers", []) if isinstance(a, str)]
    new = fingerprint not in answers
    record = {
        "attempts": int(before.get("attempts", 0)) + new,
        "wrong": int(before.get("wrong", 0)) + (new and not right),
        "answers": (answers + [fingerprint])[-MAX_ANSWERS:] if new else answers,
        "passed": bool(before.get("passed", False) or right),
        "last_passed": bool(right),
    }
    return record, new


# CPython's default repr names the object's memory address ("<Foo object at 0x7f...>"), which differs on every
# run: without it, re-running the same answer would count as a new attempt.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _stable_repr(value: Any) -> str:
    return _ADDRESS.sub("", repr(value))


def _code_parts(code: types.CodeType) -> list:
    """What a function's code is (bytecode, constants, names), nested functions included; no line
    numbers, so moving a function down the notebook is not a new answer."""
    consts = [_code_parts(c) if isinstance(c, types.CodeType) else _stable_repr(c) for c in code.co_consts]
    return [code.co_code.hex(), consts, list(code.co_names), list(code.co_varnames), code.co_argcount]


def _answer_part(value: Any) -> Any:
    code = getattr(value, "__code__", None)
    if isinstance(code, types.CodeType):
        return {"code": _code_parts(code), "defaults": _stable_repr(getattr(value, "__defaults__", None))}
    from course.assess.registry import to_plain

    try:
        return to_plain(value)
    except Exception:  # noqa: BLE001 - an unreadable value is still one answer
        return {"type": type(value).__name__, "repr": _stable_repr(value)[:200]}


def answer_fingerprint(names, namespace: dict) -> str:
    """A short hash of the answers ``names`` hold in ``namespace`` (values, and functions by their code).

    >>> a = answer_fingerprint(["x"], {"x": 1.5})
    >>> a == answer_fingerprint(["x"], {"x": 1.5}), a == answer_fingerprint(["x"], {"x": 2.0})
    (True, False)
    """
    parts = {name: _answer_part(namespace[name]) if name in namespace else None for name in names}
    text = json.dumps(parts, sort_keys=True, default=_stable_repr, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]

"""Visible checks: run in the student's kernel, teach without giving the answer, record mastery.

``check("0.1", globals())`` looks at what the student defined for exercise 0.1
and prints one line per finding:

* Derive / Trace values: missing name, wrong type, non-finite value, a unit
  slip (off by 10^3, 10^6, 10^9, a percent written as a fraction, GiB for GB)
  or a wrong order of magnitude. A value within a factor of 3 of the key only
  gets "plausible": the exact comparison is the hidden test's job.
* Choices: whether the value is one of the allowed options.
* Build / Debug functions: the worked example(s) of the workbook, with the
  expected value shown (the workbook prints it too).

Every call records an attempt in the design ledger under the exercise's key
(``"ch00/ex0_1"``): ``attempted``, ``attempts``, ``passed`` (visible check
passed at least once) and ``last_passed``. A ledger failure never breaks the
check.
"""

from __future__ import annotations

import math
from typing import Any, List, Tuple

from .kinds import call_plain
from .registry import RAISED, Part, is_number_type
from .spec import EXERCISES, Exercise, spec_for

OK, BAD = "\u2714", "\u2718"

#: (factor, hint) pairs tried in order when a value is off by a recognisable factor
_UNIT_SLIPS = [
    (1e3, "a factor of 1000 off: check the unit prefix (e.g. ms vs s, MB vs GB)"),
    (1e6, "a factor of 10^6 off: check the unit prefix"),
    (1e9, "a factor of 10^9 off: check the unit (bytes vs GB, FLOP vs GFLOP)"),
    (1e12, "a factor of 10^12 off: check the unit (e.g. FLOP vs TFLOP)"),
    (100.0, "a factor of 100 off: a percent written as a fraction (or the reverse)?"),
    (1.073741824, "about 7 % off: GiB instead of GB? This course uses decimal GB = 10^9 bytes"),
    (60.0, "a factor of 60 off: seconds vs minutes, or minutes vs hours?"),
    (3600.0, "a factor of 3600 off: seconds vs hours?"),
    (8.0, "a factor of 8 off: bits instead of bytes?"),
    (2.0, "a factor of 2 off: count the phases / directions again"),
]


def unit_hint(value: float, key: float) -> Tuple[bool, str]:
    """Classify ``value`` against ``key`` without revealing the key.

    >>> unit_hint(1750.0, 1.75)[1].startswith("a factor of 1000")
    True
    >>> unit_hint(1.8, 1.75)
    (True, 'plausible magnitude')
    """
    if key == 0:
        return (abs(value) < 1e-9, "plausible magnitude" if abs(value) < 1e-9 else "wrong order of magnitude")
    if value == 0 or (value > 0) != (key > 0):
        return False, "wrong sign or zero: check the formula"
    ratio = abs(value / key)
    for factor, hint in _UNIT_SLIPS:
        for r in (factor, 1.0 / factor):
            if math.isclose(ratio, r, rel_tol=0.02):
                return False, hint
    if 1 / 3 <= ratio <= 3:
        return True, "plausible magnitude"
    return False, "wrong order of magnitude"


def check(exercise: str, namespace: dict) -> None:
    """Visible check of ``exercise`` (its number, e.g. ``"0.1"``); prints findings, records an attempt."""
    ex = EXERCISES[exercise]
    lines: List[str] = []
    passed = True
    for part in ex.parts:
        if "function" in part.extra:
            ok, found = _check_function(part, namespace)
        else:
            ok, found = _check_values(ex, part, namespace)
        passed = passed and ok
        lines.extend(found)
    for line in lines:
        print(line)
    if passed:
        print(f"{OK} Exercise {ex.number}: the visible check passed. The hidden tests grade it after submission.")
    _record(ex, passed)


def _check_values(ex: Exercise, part: Part, namespace: dict) -> Tuple[bool, List[str]]:
    keys = part.extra["key"](spec_for(ex))
    units = part.extra["units"]
    options = part.extra["options"]
    ok, lines = True, []
    for name, unit in units.items():
        key = keys[name]
        if name not in namespace:
            ok = False
            lines.append(f"{BAD} `{name}` is not defined yet: assign it in the answer cell and run that cell.")
            continue
        value = namespace[name]
        if name in options:
            allowed = list(options[name])
            if isinstance(value, str):
                good = value.strip().casefold() in [str(o).casefold() for o in allowed]
            else:
                good = is_number_type(value) and any(value == o for o in allowed if not isinstance(o, str))
            if not good:
                ok = False
                lines.append(f"{BAD} `{name}` must be one of {allowed}; got {value!r}.")
            else:
                lines.append(f"{OK} `{name}` is one of the allowed options.")
            continue
        if isinstance(key, (list, tuple)):
            if not isinstance(value, (list, tuple)) or len(value) != len(key):
                ok = False
                lines.append(f"{BAD} `{name}` must be a list of {len(key)} items.")
            else:
                lines.append(f"{OK} `{name}` has the right shape.")
            continue
        if isinstance(key, str):
            if not isinstance(value, str):
                ok = False
                lines.append(f"{BAD} `{name}` must be a string.")
            continue
        if not is_number_type(value):
            ok = False
            lines.append(f"{BAD} `{name}` must be a number (int or float), got {type(value).__name__}.")
            continue
        value = float(value)
        if not math.isfinite(value):
            ok = False
            lines.append(f"{BAD} `{name}` must be finite, got {value}.")
            continue
        good, hint = unit_hint(value, float(key))
        ok = ok and good
        lines.append(f"{OK if good else BAD} `{name}` ({unit}): {hint}.")
    return ok, lines


def _check_function(part: Part, namespace: dict) -> Tuple[bool, List[str]]:
    name = part.extra["function"]
    fn = namespace.get(name)
    if not callable(fn):
        return False, [f"{BAD} define a function named `{name}` and run its cell."]
    ok, lines = True, []
    for args in part.extra["examples"]:
        expected = part.extra["reference"](*args)
        got = call_plain(fn, args)
        shown = f"{name}({', '.join(map(repr, args))})"
        if part.extra["returns"] == "numbers":  # a tuple of numbers: compare element-wise
            good = (type(got) is list and len(got) == len(expected)
                    and all(type(g) in (int, float) for g in got)
                    and all(math.isclose(g, e, rel_tol=1e-6, abs_tol=1e-9) for g, e in zip(got, expected)))
            ok = ok and good
            want = ", ".join(f"{e:.6g}" for e in expected)
            lines.append(f"{OK} {shown} matches the worked example ({want})." if good else
                         f"{BAD} {shown} returned {got!r}; the worked example gives ({want}).")
            continue
        if isinstance(got, dict) and RAISED in got:
            ok = False
            lines.append(f"{BAD} {shown} raised {got[RAISED]}; expected {expected:.6g}.")
        elif type(got) not in (int, float) or (part.extra["returns"] == "int" and type(got) is not int):
            ok = False
            lines.append(f"{BAD} {shown} must return a plain {'int' if part.extra['returns'] == 'int' else 'number'}.")
        elif not math.isclose(got, expected, rel_tol=1e-6, abs_tol=1e-9):
            ok = False
            lines.append(f"{BAD} {shown} returned {got:.6g}; the worked example gives {expected:.6g}.")
        else:
            lines.append(f"{OK} {shown} = {got:.6g} matches the worked example.")
    return ok, lines


def _record(ex: Exercise, passed: bool) -> None:
    try:
        from course.ledger import Ledger

        # one locked read-modify-write, so two kernels checking at once both count
        Ledger().update(ex.ledger_key, lambda before: {
            "chapter": ex.chapter, "exercise": ex.number, "kind": ex.kind.lower(),
            "attempted": True, "attempts": int(before.get("attempts", 0)) + 1,
            "passed": bool(before.get("passed", False) or passed), "last_passed": passed,
        })
    except Exception:  # mastery is a convenience: never break the exercise
        pass

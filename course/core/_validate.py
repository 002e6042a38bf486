"""Input checks shared by every core function.

Each check converts its argument to a NumPy array (so functions broadcast) and
raises ``ValueError`` naming the parameter and the allowed range when any
element is outside it. NaN never passes a check: the core never returns a
silent NaN for bad input.
"""

from __future__ import annotations

import contextvars
import math
from typing import Iterable

import numpy as np


_MAX_EXACT_INTEGER = 2.0**53
_smallest, _largest = np.minimum.reduce, np.maximum.reduce


# Speed: the instruments evaluate whole curves on every slider move, and these
# checks run several times per core call (about 80 per 256-point planner curve).
# The checks below therefore reduce with the ufuncs themselves (``_any``,
# ``_all_finite``, ``_smallest``) instead of ``np.any(arr)`` or ``arr.any()``,
# whose Python wrappers cost more than the reduction on a 256-point curve (and
# on a 0-d array give a NumPy scalar whose ``.any()`` is slower still), and give
# plain Python numbers (the commonest argument) a path without array reductions.
# Semantics and messages are the same on every path.
# Inside :func:`inputs_checked` the checks only convert: the planner's ``Config`` checks every input
# once, and the term functions it then calls pass those arrays (and numbers derived from them) to core
# functions whose checks would repeat the same reductions about 150 times per pass. The conversions
# (dtype, int64) are the same, so no result changes; only the redundant ``ValueError`` paths are skipped.
_CHECKED = contextvars.ContextVar("course_core_inputs_checked", default=False)


class inputs_checked:
    """Within this block the checks convert their argument but skip re-checking it.

    For callers that have checked every input already (``plan_terms.Config``); a public
    call made outside the block checks as always. (A class, not ``contextlib.contextmanager``:
    it is entered twice per planner pass, and a generator costs more than the checks it saves.)

    >>> with inputs_checked():
    ...     positive("x", -1.0)   # not re-checked inside the block
    array(-1.)
    >>> positive("x", -1.0)
    Traceback (most recent call last):
    ...
    ValueError: x must be > 0, got -1.0
    """

    __slots__ = ("_token",)

    def __enter__(self):
        self._token = _CHECKED.set(True)
        return self

    def __exit__(self, *exc):
        _CHECKED.reset(self._token)
        return False


def _any(mask) -> bool:
    """Whether any element of a boolean array (or NumPy bool scalar) is set."""
    if type(mask) is np.bool_:
        return bool(mask)
    return bool(np.logical_or.reduce(mask, axis=None))


def any_true(mask) -> bool:
    """``bool(np.any(mask))`` without ``np.any``'s Python wrapper (a third of its cost on small arrays)."""
    return _any(mask)


def all_true(mask) -> bool:
    """``bool(np.all(mask))`` without ``np.all``'s Python wrapper."""
    if type(mask) is np.bool_:
        return bool(mask)
    return bool(np.logical_and.reduce(mask, axis=None))


def _all_finite(arr: np.ndarray) -> bool:
    finite = np.isfinite(arr)
    if type(finite) is np.bool_:
        return bool(finite)
    return bool(np.logical_and.reduce(finite, axis=None))


def _as_array(name: str, value) -> np.ndarray:
    kind = type(value)  # exact type: bool and NumPy scalars take the general path
    if kind is float:
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value!r}")
        return np.asarray(value, dtype=float)
    if kind is int and -_MAX_EXACT_INTEGER <= value <= _MAX_EXACT_INTEGER:
        return np.asarray(value, dtype=float)
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a number or an array of numbers, got {value!r}") from None
    if not _all_finite(arr):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return arr


def finite(name: str, value) -> np.ndarray:
    """Any finite real number(s)."""
    if _CHECKED.get():
        return np.asarray(value, dtype=float)
    return _as_array(name, value)


def positive(name: str, value) -> np.ndarray:
    """Strictly positive finite number(s): ``value > 0``."""
    if _CHECKED.get():
        return np.asarray(value, dtype=float)
    arr = _as_array(name, value)
    if _any(arr <= 0):
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return arr


def non_negative(name: str, value) -> np.ndarray:
    """Finite number(s) with ``value >= 0``."""
    if _CHECKED.get():
        return np.asarray(value, dtype=float)
    arr = _as_array(name, value)
    if _any(arr < 0):
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return arr


def fraction(name: str, value, *, low_open: bool = False, high_open: bool = False) -> np.ndarray:
    """Number(s) in [0, 1]; either end may be made open."""
    if _CHECKED.get():
        return np.asarray(value, dtype=float)
    arr = _as_array(name, value)
    lo_bad = arr <= 0 if low_open else arr < 0
    hi_bad = arr >= 1 if high_open else arr > 1
    if _any(lo_bad | hi_bad):
        lo = "(0" if low_open else "[0"
        hi = "1)" if high_open else "1]"
        raise ValueError(f"{name} must lie in {lo}, {hi}, got {value!r}")
    return arr


def integer(name: str, value, minimum: int = 1) -> np.ndarray:
    """Whole number(s) ``>= minimum`` (floats equal to an integer are accepted)."""
    if _CHECKED.get():
        if type(value) is np.ndarray and value.dtype == np.int64:
            return value
        return np.asarray(value).astype(np.int64, copy=False)
    if type(value) is int:  # a Python int is whole already: only the range is left to check
        if value < minimum:
            raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
        if abs(value) > _MAX_EXACT_INTEGER:
            raise ValueError(f"{name} must be <= 2**53, got {value!r}")
        return np.asarray(value, dtype=np.int64)
    raw = np.asarray(value) if isinstance(value, np.ndarray) else None
    if raw is not None and raw.dtype.kind in "iu" and raw.size:
        # an integer array (a sweep's grid, a rank axis) is whole and finite by construction;
        # one reduction each for the smallest and largest element (the ufuncs' own, no wrapper)
        low, high = int(_smallest(raw, axis=None)), int(_largest(raw, axis=None))
        if low < minimum:
            raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
        if max(-low, high) > _MAX_EXACT_INTEGER:
            raise ValueError(f"{name} must be <= 2**53, got {value!r}")
        return raw.astype(np.int64, copy=False)
    arr = _as_array(name, value)
    if _any(arr != np.round(arr)):
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if _any(arr < minimum):
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    # Beyond 2**53 a float no longer holds every whole number, and beyond 2**63
    # the int64 cast wraps around: reject instead of computing with garbage.
    if _any(np.abs(arr) > _MAX_EXACT_INTEGER):
        raise ValueError(f"{name} must be <= 2**53, got {value!r}")
    return arr.astype(np.int64)


def choice(name: str, value: str, allowed: Iterable[str]) -> str:
    """One of a fixed set of names."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return value


def scalar_or_array(result: np.ndarray):
    """Return a Python float for 0-d results, the array otherwise."""
    result = np.asarray(result)
    return float(result) if result.ndim == 0 else result

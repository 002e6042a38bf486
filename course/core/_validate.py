"""Input checks shared by every core function.

Each check converts its argument to a NumPy array (so functions broadcast) and
raises ``ValueError`` naming the parameter and the allowed range when any
element is outside it. NaN never passes a check: the core never returns a
silent NaN for bad input.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np


_MAX_EXACT_INTEGER = 2.0**53


def _as_array(name: str, value) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number or an array of numbers, got {value!r}") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return arr


def finite(name: str, value) -> np.ndarray:
    """Any finite real number(s)."""
    return _as_array(name, value)


def positive(name: str, value) -> np.ndarray:
    """Strictly positive finite number(s): ``value > 0``."""
    arr = _as_array(name, value)
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return arr


def non_negative(name: str, value) -> np.ndarray:
    """Finite number(s) with ``value >= 0``."""
    arr = _as_array(name, value)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return arr


def fraction(name: str, value, *, low_open: bool = False, high_open: bool = False) -> np.ndarray:
    """Number(s) in [0, 1]; either end may be made open."""
    arr = _as_array(name, value)
    lo_bad = arr <= 0 if low_open else arr < 0
    hi_bad = arr >= 1 if high_open else arr > 1
    if np.any(lo_bad | hi_bad):
        lo = "(0" if low_open else "[0"
        hi = "1)" if high_open else "1]"
        raise ValueError(f"{name} must lie in {lo}, {hi}, got {value!r}")
    return arr


def integer(name: str, value, minimum: int = 1) -> np.ndarray:
    """Whole number(s) ``>= minimum`` (floats equal to an integer are accepted)."""
    arr = _as_array(name, value)
    if np.any(arr != np.round(arr)):
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if np.any(arr < minimum):
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    # Beyond 2**53 a float no longer holds every whole number, and beyond 2**63
    # the int64 cast wraps around: reject instead of computing with garbage.
    if np.any(np.abs(arr) > _MAX_EXACT_INTEGER):
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

"""Shared checks for instrument tests (used by every instrument's test module)."""

from __future__ import annotations

import json

import numpy as np


def mark_arrays(inst) -> list:
    """Snapshot (copies) of the data arrays of every mark of every figure."""
    snap = []
    for fig in inst.figures:
        for mark in fig.marks:
            for trait in ("x", "y", "color", "base"):
                if trait in mark.trait_names():
                    snap.append(np.array(getattr(mark, trait), dtype=object, copy=True))
    return snap


def same_figures(inst, figures_before, marks_before) -> bool:
    """The Figure and Mark objects are the very same objects (never rebuilt)."""
    return all(a is b for a, b in zip(inst.figures, figures_before)) and all(
        a is b for a, b in zip((m for f in inst.figures for m in f.marks), marks_before)
    )


def _same(x, y) -> bool:
    """Equal values; NaN equals NaN (the gaps of a NaN-broken series, ``charts.segments``, never change)."""
    try:
        return bool(np.array_equal(x, y, equal_nan=True))
    except TypeError:  # text: no NaN to compare
        return bool(np.array_equal(x, y))


def changed(before: list, after: list) -> bool:
    return any(a.shape != b.shape or not all(_same(x, y) for x, y in zip(a.ravel(), b.ravel()))
               for a, b in zip(before, after))


def assert_alive(inst) -> None:
    """After any control setting: no escaped exception, a plain JSON-able result, banner iff failures."""
    json.dumps(inst.result)
    json.dumps(inst.failures)
    assert "instrument_error" not in inst.failures, inst.last_traceback
    if inst.failures:
        assert "course-failure" in inst.banner.value
    else:
        assert inst.banner.value == ""

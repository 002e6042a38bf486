"""Item statistics on plain numbers: share right, points distribution, discrimination.

Item discrimination follows PrairieLearn's question statistics: the Pearson correlation,
over the students who took the assessment, between a question's score and the assessment
score (PrairieLearn, ``sprocs/assessment_questions_calculate_stats.sql``:
``corr(question score_perc, assessment score_perc)``; its docs: "the correlation coefficient
between the scores on the question and the total assessment scores", shown as a percentage
that should be above 20 %). Here the other score is the *rest* of the assignment (the
assignment's points without the part's own), the corrected item-total correlation: with a
handful of parts per assignment, a part's own points would otherwise make up much of the total
and raise its correlation with it. :func:`discrimination` returns the corrected value;
:func:`item_total` PrairieLearn's uncorrected one, for comparison.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence


def pearson(x: Sequence[float], y: Sequence[float]) -> Optional[float]:
    """Pearson's r of two equally long sequences; ``None`` when either has no variance
    (everyone scored the same: the part tells nobody apart) or fewer than 2 values.

    >>> pearson([0, 1, 1, 0], [1, 3, 4, 2])
    0.8944271909999159
    >>> pearson([1, 1, 1], [0, 1, 2]) is None
    True
    """
    if len(x) != len(y):
        raise ValueError(f"x and y must be equally long, got {len(x)} and {len(y)}")
    n = len(x)
    if n < 2:
        return None
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx <= 1e-15 or syy <= 1e-15:
        return None
    return sxy / math.sqrt(sxx * syy)


def discrimination(part: Sequence[float], totals: Sequence[float]) -> Optional[float]:
    """Correlation of a part's points with the rest of each student's assignment points
    (``totals`` minus ``part``), the corrected item-total correlation.

    >>> round(discrimination([1, 1, 0, 0], [5, 4, 1, 2]), 4)
    0.8944
    """
    return pearson(part, [t - p for p, t in zip(part, totals)])


def item_total(part: Sequence[float], totals: Sequence[float]) -> Optional[float]:
    """PrairieLearn's uncorrected discrimination: correlation of a part with the whole total."""
    return pearson(part, totals)


def distribution(points: Sequence[float]) -> Dict[str, int]:
    """How many students earned each number of points, keyed by the points as text, ascending.

    >>> distribution([0, 3, 0.75, 3, 0])
    {'0': 2, '0.75': 1, '3': 2}
    """
    counts: Dict[float, int] = {}
    for p in points:
        counts[round(float(p), 6)] = counts.get(round(float(p), 6), 0) + 1
    return {f"{p:g}": counts[p] for p in sorted(counts)}


def mean(values: Sequence[float]) -> Optional[float]:
    """The mean, ``None`` for no values."""
    return sum(values) / len(values) if values else None


def share(flags: List[bool]) -> Optional[float]:
    """The fraction of true flags, ``None`` for none."""
    return sum(bool(f) for f in flags) / len(flags) if flags else None

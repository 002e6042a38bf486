"""A late policy from submission timestamps: per-day penalty, grace period, cap.

The policy takes a fraction of the points a student earned for every started day
past the due date, after a grace period that forgives small delays (an upload that
finished a minute late), never more than the cap. nbgrader itself knows only "no
penalty" or "zero after the deadline"; this is applied after grading and recorded per
student in ``grades.json`` (``late``) without changing the graded points.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Dict, Iterable, List, Optional

DAY_SECONDS = 86_400


@dataclass(frozen=True)
class LatePolicy:
    """``per_day``: fraction of the earned score lost per started day late (0.1 = 10 %).

    ``grace_minutes``: a submission at most this late is on time.
    ``cap``: the largest fraction ever taken (1.0: a late submission can drop to 0).

    >>> LatePolicy(per_day=0.1, grace_minutes=15, cap=0.5).fraction(2 * DAY_SECONDS + 1)
    (3, 0.3)
    """

    per_day: float = 0.0
    grace_minutes: float = 0.0
    cap: float = 1.0

    def __post_init__(self):
        for name, low, high in (("per_day", 0.0, 1.0), ("grace_minutes", 0.0, math.inf), ("cap", 0.0, 1.0)):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not low <= value <= high:
                raise ValueError(f"{name} must be a number in [{low}, {high}], got {value!r}")

    def fraction(self, late_seconds: float):
        """``(days charged, fraction of the score taken)`` for a submission ``late_seconds`` after the due date."""
        if late_seconds <= self.grace_minutes * 60:
            return 0, 0.0
        days = math.ceil(late_seconds / DAY_SECONDS)
        return days, min(self.cap, round(self.per_day * days, 10))


def parse_time(text: str) -> datetime:
    """A timestamp as nbgrader writes it (``2026-11-23 16:40:12.123456 UTC``) or ISO 8601, as aware UTC.

    A time without a zone is taken as UTC (nbgrader's convention).

    >>> parse_time("2026-11-30 23:59:00 UTC").isoformat()
    '2026-11-30T23:59:00+00:00'
    """
    from nbgrader.utils import parse_utc

    try:
        value = parse_utc(str(text).strip())
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"timestamp must be a date and time, got {text!r}") from exc
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def apply(results: Iterable[dict], timestamps: Dict[str, Optional[str]], due: Optional[datetime],
          policy: LatePolicy, extensions: Optional[dict] = None) -> List[dict]:
    """Add ``late`` to each result: submitted/due times, days charged, points taken, ``final_score``.

    With no due date every ``final_score`` is the graded score; a submission without a
    timestamp (a plain folder of notebooks) is not penalised and says so. ``extensions``
    (``{student: autograder.records.term.Extension}``) gives a student their own due date, recorded as
    ``late.extension`` with the assignment's ``late.class_due``.
    """
    out = []
    for res in results:
        res = dict(res)
        extension = (extensions or {}).get(res["student"])
        own_due = extension.due_for(due) if extension is not None else due
        info = {"policy": asdict(policy), "due": own_due.isoformat() if own_due else None, "submitted": None,
                "late_seconds": 0.0, "days_charged": 0, "fraction": 0.0, "points_deducted": 0.0,
                "final_score": res["score"], "note": ""}
        if extension is not None:
            info["class_due"] = due.isoformat() if due else None
            info["extension"] = extension.describe(due)
        stamp = timestamps.get(res["student"])
        if own_due is None:
            info["note"] = "no due date"
            try:  # the submission time is still worth keeping
                info["submitted"] = parse_time(stamp).isoformat() if stamp else None
            except ValueError:
                pass
        elif not stamp:
            info["note"] = "no submission timestamp: not penalised"
        else:
            try:
                submitted = parse_time(stamp)
            except ValueError:
                submitted = None
                info["note"] = f"unreadable submission timestamp {stamp[:40]!r}: not penalised"
            if submitted is not None:
                late = max(0.0, (submitted - own_due).total_seconds())
                days, fraction = policy.fraction(late)
                deducted = round(res["score"] * fraction, 4)
                info.update(submitted=submitted.isoformat(), late_seconds=round(late, 1), days_charged=days,
                            fraction=fraction, points_deducted=deducted,
                            final_score=round(res["score"] - deducted, 4),
                            note="on time" if late == 0 else ("within the grace period" if days == 0
                                                              else f"{days} day(s) late"))
        if extension is not None:
            info["note"] = f"{info['note']}; {info['extension']}" if info["note"] else info["extension"]
        res["late"] = info
        out.append(res)
    return out

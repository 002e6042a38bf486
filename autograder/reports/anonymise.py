"""An anonymised copy of a class report, for teaching research (opt-in: ``--anonymise --salt``).

Student ids become salted SHA-256 hashes (the same student gets the same hash across the
assignments of one export, so a term can be followed; another salt gives unlinkable
hashes). Everything else that could identify or re-identify a student goes:

* feedback links (their paths hold the id) and the course root's path;
* submission times (a quasi-identifier), the grader's free-text reasons (they may quote a
  file name);
* the variant: it is SHA-256 of (course, assignment, student), so anyone with the class list
  could recompute every student's variant and match it to a row.

Students are listed in hash order, never in the order of their ids. The salt is not written.
"""

from __future__ import annotations

import copy
import hashlib

#: a shorter salt could be found by trying every salt against a known class list
MIN_SALT_CHARS = 16


def pseudonym(student: str, salt: str) -> str:
    """``student``'s salted hash (16 hex digits).

    >>> pseudonym("ada", "a-long-random-salt") == pseudonym("ada", "a-long-random-salt")
    True
    >>> pseudonym("ada", "a-long-random-salt") != pseudonym("bob", "a-long-random-salt")
    True
    """
    return hashlib.sha256(f"{salt}\0{student}".encode()).hexdigest()[:16]


def anonymise(report: dict, salt: str) -> dict:
    """A copy of ``report`` with student ids replaced by :func:`pseudonym` and nothing else identifying."""
    if not isinstance(salt, str) or len(salt) < MIN_SALT_CHARS:
        raise ValueError(f"salt must be a secret string of at least {MIN_SALT_CHARS} characters "
                         "(e.g. `openssl rand -hex 16`), kept apart from the export")
    out = copy.deepcopy(report)
    out["anonymised"] = True
    out["course_root"] = None
    for rep in out["assignments"]:
        students = []
        for s in rep["students"]:
            students.append({"student": pseudonym(s["student"], salt), "status": s["status"],
                             "counted": s["counted"], "score": s["score"], "max_score": s["max_score"],
                             "final_score": s["final_score"], "late_days": s["late_days"],
                             "points_deducted": s["points_deducted"], "locks": s["locks"], "parts": s["parts"],
                             "feedback": None})
        rep["students"] = sorted(students, key=lambda s: s["student"])
    return out

"""The codes of a verdict: what a judgement found, machine-readable and stable.

A :class:`~course.assess.registry.Verdict` carries a ``reason`` a student reads (worded for them, and
reworded freely) and a ``code`` from this module (never reworded: ``grades.json``, the class report,
feedback and tests read it). A verdict that joins several findings (a value part with several wrong
names) lists each one's code in ``findings``; a function part's :class:`~course.assess.registry.Check`
lists the codes of what failed in ``codes``. :data:`MEANING` says what each code means; a new code is
added here and nowhere else.
"""

from __future__ import annotations

from typing import Dict

# -- a whole answer --------------------------------------------------------------------------------
CORRECT = "correct"
#: blank: ``None``, the release's stub left as it was, no such function, no locked prediction
NOT_ANSWERED = "not_answered"
#: the name is not defined although a cell assigns it: that cell (or one before it) failed
ERROR_IN_CELL = "error_in_cell"
#: nothing could be read back from the notebook for this part
UNREADABLE = "unreadable"
#: not a plain value of the type asked (an object, a raised exception, a wrong type)
NOT_PLAIN = "not_plain"
#: a word or choice that is none of the accepted answers
NOT_ACCEPTED = "not_accepted"
#: wrong, and no recognisable slip
WRONG_VALUE = "wrong_value"
#: a Build function that uses or imports the course package instead of its own formula
USES_COURSE = "uses_course"
#: a Build function earns some of its checks (see each check's codes)
PARTIAL = "partial"
#: the grader could not judge: an unknown part, or the judge failed
JUDGE_ERROR = "judge_error"

# -- a wrong number: the slip :func:`~course.assess.registry.unit_hint` names ------------------------
FACTOR_OF_2 = "factor_of_2"
FACTOR_OF_8 = "bits_for_bytes"
FACTOR_OF_60 = "seconds_for_minutes"
FACTOR_OF_100 = "percent_as_fraction"
FACTOR_OF_1000 = "factor_of_1000"
FACTOR_OF_3600 = "seconds_for_hours"
FACTOR_OF_1E6 = "factor_of_1e6"
FACTOR_OF_1E9 = "factor_of_1e9"
FACTOR_OF_1E12 = "factor_of_1e12"
GIB_FOR_GB = "gib_for_gb"
OFF_BY_ONE = "off_by_one"
WRONG_SIGN = "wrong_sign_or_zero"
#: within a factor of 3, no recognisable slip
CLOSE = "close"
ORDER_OF_MAGNITUDE = "order_of_magnitude"

# -- a wrong ordering (Design) ---------------------------------------------------------------------
REVERSED_ORDER = "reversed_order"
TWO_SWAPPED = "two_swapped"
OTHER_ORDER = "other_order"

# -- what a Build function's check found wrong -----------------------------------------------------
RETURNS_WRONG_VALUE = "returns_wrong_value"
RAISES = "raises"
RETURNS_NOT_PLAIN = "returns_not_plain"
NO_VALUE_ERROR = "no_value_error"
#: a function run on several ranks deadlocked (every rank waits) or never finished
DEADLOCK = "deadlock"
#: a function run on several ranks: a rank raised, exited or crashed and the others could not finish
RANKS_FAILED = "ranks_failed"

# -- a part the grader did not judge (``grades.json`` rows) -----------------------------------------
#: the submission was missing or could not be graded (its note says why)
NOT_GRADED = "not_graded"
#: waits for the instructor's hand grade
AWAITING_HAND_GRADE = "awaiting_hand_grade"
#: graded by the instructor
GRADED_BY_HAND = "graded_by_hand"
#: plain nbgrader's test cell failed (a cell the course does not judge itself)
TEST_CELL_FAILED = "test_cell_failed"
#: the code or a function of this part ended the grading run (killed or stopped its processes)
ENDED_RUN = "ended_run"

#: every code and what it means (the documentation's table; tests check each code is used)
MEANING: Dict[str, str] = {
    CORRECT: "fully right",
    NOT_ANSWERED: "blank: None, the release's stub, no such function or no locked prediction",
    ERROR_IN_CELL: "not defined although a cell assigns it: that cell or one before it failed",
    UNREADABLE: "nothing could be read back from the notebook for this part",
    NOT_PLAIN: "not a plain value of the type asked",
    NOT_ACCEPTED: "none of the accepted answers",
    WRONG_VALUE: "wrong, with no recognisable slip",
    USES_COURSE: "the function uses or imports the course package",
    PARTIAL: "the function earns some of its checks",
    JUDGE_ERROR: "the grader could not judge this part",
    FACTOR_OF_2: "a factor of 2 off",
    FACTOR_OF_8: "a factor of 8 off: bits for bytes",
    FACTOR_OF_60: "a factor of 60 off: seconds for minutes, or minutes for hours",
    FACTOR_OF_100: "a factor of 100 off: a percent as a fraction or the reverse",
    FACTOR_OF_1000: "a factor of 1000 off: a unit prefix",
    FACTOR_OF_3600: "a factor of 3600 off: seconds for hours",
    FACTOR_OF_1E6: "a factor of 10^6 off: a unit prefix",
    FACTOR_OF_1E9: "a factor of 10^9 off: bytes for GB, FLOP for GFLOP",
    FACTOR_OF_1E12: "a factor of 10^12 off: FLOP for TFLOP",
    GIB_FOR_GB: "about 7 % off: GiB for GB",
    OFF_BY_ONE: "a count one off",
    WRONG_SIGN: "the wrong sign, or zero",
    CLOSE: "within a factor of 3, no recognisable slip",
    ORDER_OF_MAGNITUDE: "more than a factor of 3 off, no recognisable slip",
    REVERSED_ORDER: "the reverse order",
    TWO_SWAPPED: "all but two in place",
    OTHER_ORDER: "the right items in another order",
    RETURNS_WRONG_VALUE: "the function returns a wrong value",
    RAISES: "the function raises an exception on a valid input",
    RETURNS_NOT_PLAIN: "the function returns no plain number (or tuple of numbers)",
    NO_VALUE_ERROR: "the function does not raise ValueError on an invalid input",
    DEADLOCK: "the function, run on several ranks, deadlocked or never finished",
    RANKS_FAILED: "the function, run on several ranks, lost a rank (it raised, exited or crashed)",
    NOT_GRADED: "the submission was missing or could not be graded",
    AWAITING_HAND_GRADE: "waits for a grade by hand",
    GRADED_BY_HAND: "graded by hand",
    TEST_CELL_FAILED: "plain nbgrader's test cell failed",
    ENDED_RUN: "the part's code ended the grading run",
}

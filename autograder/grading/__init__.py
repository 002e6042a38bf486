"""Grading one assignment: nbgrader's steps around a sandboxed kernel and a trusted judge.

* :mod:`~autograder.grading.grader`: the per-submission pipeline on nbgrader's preprocessors
* :mod:`~autograder.grading.submissions`: finding submissions, sharding
* :mod:`~autograder.grading.feedback`: feedback HTML without hidden tests
  (:mod:`~autograder.grading.offline_maths`: its maths as MathML)
* :mod:`~autograder.grading.handgrading`: what the formgrader shows a hand grader, and the refresh
"""

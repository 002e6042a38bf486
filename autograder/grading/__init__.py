"""Grading one assignment: nbgrader's steps around a sandboxed kernel and a trusted judge.

* :mod:`~autograder.grading.grader`: the per-submission pipeline (``c.Grader.steps``, the configurable step
  classes of :mod:`~autograder.grading.steps`) on nbgrader's preprocessors,
  composed of :mod:`~autograder.grading.gradebook_steps`, :mod:`~autograder.grading.execution`,
  :mod:`~autograder.grading.judge_step` and :mod:`~autograder.grading.feedback_workers`
* :mod:`~autograder.grading.course_settings`: the instructor's ``nbgrader_config.py`` (folders, gradebook, steps)
* :mod:`~autograder.grading.submissions`: finding submissions, sharding
* :mod:`~autograder.grading.feedback`: feedback HTML without hidden tests
  (:mod:`~autograder.grading.offline_maths`: its maths as MathML)
* :mod:`~autograder.grading.handgrading`: what the formgrader shows a hand grader, and the refresh
"""

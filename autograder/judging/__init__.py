"""Judging: the values judged are computed in a clean room that the student's kernel never touched.

* :mod:`~autograder.judging.sandboxed_cleanroom`: grading's run of the clean room's program
  (:mod:`course.assess.cleanroom_protocol`) in a fresh sandbox, and the plain values it answers
"""

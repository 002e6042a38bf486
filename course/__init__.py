"""Distributed training systems: a course package.

Layers (arrows point from user to used)::

    course.core  <-  course.instruments  <-  notebooks/, source/ (labs)
    course.core  <-  course.exercises    <-  source/ (workbook), hidden tests
    nbgrader     <-  autograder          <-  CI, instructors
"""

__version__ = "0.1.0"

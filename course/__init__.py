"""Distributed training systems: a course package.

Layers (arrows point from user to used; a package may import what its arrows reach, directly or
through other packages, and nothing else)::

    course                  ->  course._moved
    course.instruments      ->  course.core, course.theme, course.ledger, course.launch
    course.prediction       ->  course.theme, course.ledger, course.predictions_file
    course.predictions_file ->
    course.assess           ->  course.predictions_file, course.ledger
    course.chapters         ->  course.assess, course.core
    course.labs             ->  course.assess, course.instruments
    course.activities       ->  course.chapters, course.labs
    course.notebook_api     ->  course.activities, course.prediction
    course.labs.__main__    ->  course.activities
    course.progress         ->  course.activities
    course.cli              ->  course.notebook_api
    course.lab_server       ->
    course.launch           ->
    autograder              ->  autograder._moved
    autograder._moved       ->  course._moved
    autograder.__main__     ->  autograder.engines
    autograder.engines      ->  autograder.reports, autograder.records
    autograder.reports      ->  autograder.grading
    autograder.records      ->  autograder.grading
    autograder.grading      ->  autograder.judging, course.notebook_api
    autograder.judging      ->  autograder.isolation, course.notebook_api
    autograder.isolation    ->  autograder.compat, autograder.course_config, course, course.instruments
    autograder.course_config  ->
    autograder.compat       ->
    hub                     ->

``course.core`` is the numerical core (it imports nothing of the course); ``course.instruments``
the ipywidgets/bqplot views over it; ``course.assess`` the assessment engine, which knows no
content; ``course.chapters`` and ``course.labs`` the content (one declaration per activity), listed
once in ``course.activities``; ``course.notebook_api`` what notebooks and hidden tests call (the
engine bound to the list, and the lab session); ``autograder`` grades with nbgrader in a sandbox.
tests/test_import_graph.py parses this diagram and fails if the import graph (lazy imports
included) has an import no arrow allows, an arrow no import uses, or a package the diagram omits.
"""

__version__ = "0.1.0"

from course import _moved  # noqa: E402 -- after the docstring and __version__, which tools read first

_moved.install()  # old import paths (course.exercises, course.labs.activity) keep working

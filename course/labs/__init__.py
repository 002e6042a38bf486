"""Lab notebooks (Lab 06, the 3D-parallelism tutorial): cell lists and the source-notebook writer.

No physics here: numbers come from :mod:`course.core`, views from
:mod:`course.instruments`, keys from :mod:`course.exercises.labs`.
Regenerate with ``python -m course.labs`` then ``course build-release <name>``.
"""

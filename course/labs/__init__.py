"""Lab notebooks (Lab 05, Lab 06, the 3D-parallelism tutorial): cell lists and the source-notebook writer.

No physics here: numbers come from :mod:`course.core`, views from
:mod:`course.instruments`, keys from :mod:`course.exercises.labs`.
:mod:`course.labs.tracks` holds Lab 05's per-track wording (Cloud, Edge,
Mobile, Tiny) and the card that follows the track selector at run time.
Regenerate with ``python -m course.labs`` then ``course build-release <name>``.
"""

"""Labs (Lab 05, Lab 06, the 3D-parallelism tutorial) as declared activities.

Each lab module declares one :class:`~course.labs.activity.Lab` (inputs, acts,
locks, graded answers, reflections) and the order of its cells; the source
notebook (:mod:`course.labs.build`), the registry parts
(:mod:`course.exercises.labs`) and the progress view (:mod:`course.progress`)
are generated from it. No physics here: numbers come from :mod:`course.core`,
views from :mod:`course.instruments`. :mod:`course.labs.tracks` holds Lab 05's
per-track wording (Cloud, Edge, Mobile, Tiny).
Regenerate with ``python -m course.labs`` then ``course build-release <name>``.
"""

# The registry parts of the labs are generated from these declarations when course.exercises is
# imported, and the declarations use course.exercises' Cell: importing it first makes either
# import order work (course.exercises -> course.labs.activity, or course.labs.* -> course.exercises).
import course.exercises  # noqa: E402,F401

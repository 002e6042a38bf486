"""Labs (Lab 05, Lab 06, the 3D-parallelism tutorial, Lab 07 on mixtures of experts) as declared activities.

Each lab module declares one :class:`~course.assess.lab.Lab` (``ACTIVITY``: inputs, acts,
locks, graded answers, reflections) and the order of its cells; :mod:`course.activities`
lists it, and the source notebook, the graded parts and the progress view are generated
from that list. No physics here: numbers come from :mod:`course.core`, views from
:mod:`course.instruments`. :mod:`course.labs.tracks` holds Lab 05's per-track wording
(Cloud, Edge, Mobile, Tiny); :mod:`course.notebook_api.lab_session` the kernel's :class:`LabSession`.
Regenerate with ``course build-sources`` then ``course build-release <name>``.
"""

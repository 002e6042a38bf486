"""Ways to run grading: the command line, nbgrader's formgrader, grading on submit, Gradescope, CI.

* :mod:`~autograder.engines.cli`: ``course-autograde`` (also ``python -m autograder``)
* :mod:`~autograder.engines.options`: what every engine shares (limit options, throw-away course root)
* :mod:`~autograder.engines.formgrader`: nbgrader's own autograde, sandboxed
* :mod:`~autograder.engines.nbgrader_feedback`: nbgrader's own Generate Feedback, with the late-policy note
* :mod:`~autograder.engines.on_submit`: grading each submission as it arrives
* :mod:`~autograder.engines.gradescope`: an ``autograder.zip`` for Gradescope, and its runner
* :mod:`~autograder.engines.ci_template`: a CI matrix (and the Kubernetes Jobs' scripts) that grade in shards
"""

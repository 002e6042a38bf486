"""Safe, parallel grading of nbgrader assignments (``course-autograde`` / ``python -m autograder``).

* :mod:`autograder.grader`: the per-submission pipeline on nbgrader's preprocessors
* :mod:`autograder.sandbox`: bubblewrap + rlimits isolation
* :mod:`autograder.kernel`: the sandboxed kernel, driven from the grader (execute, harvest)
* :mod:`autograder.submissions`: finding submissions, sharding
* :mod:`autograder.report`: grades.csv / grades.json, merging shards
* :mod:`autograder.feedback`: feedback HTML without hidden tests
"""

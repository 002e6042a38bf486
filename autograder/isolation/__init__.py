"""Isolation of a submission's code: the sandbox, the warm kernels forked into it, and its limits.

* :mod:`~autograder.isolation.sandbox`: bubblewrap namespaces plus rlimits
* :mod:`~autograder.isolation.warm`: pre-warmed kernels forked into a sandbox built in the child
* :mod:`~autograder.isolation.kernel`: the sandboxed kernel the grader drives (execute, harvest)
* :mod:`~autograder.isolation.limits`: the grading limits of one submission, declared once
"""

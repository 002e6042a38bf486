"""Chapter modules: ``chNN.py`` defines chapter NN's spec, exercises and parts.

Discovery: importing this package imports every module named ``ch<digits>``
in it, so a new chapter only needs its file. A chapter module defines
``CHAPTER = {"title": ..., "concept": [markdown, ...]}`` and declares its
exercises with :mod:`course.exercises.authoring`.
"""

import importlib
import pkgutil
import re

#: chapter prefix -> nbgrader assignment name (folder in source/ and release/)
ASSIGNMENTS = {
    "ch00": "ch00_ring_allreduce",
    "ch01": "ch01_zero",
    "ch02": "ch02_gradient_accumulation",
    "ch03": "ch03_lr_scaling",
    "ch04": "ch04_comm_overhead",
    "ch05": "ch05_pipeline",
    "ch06": "ch06_tensor_parallel",
    "ch07": "ch07_checkpointing",
    "ch08": "ch08_mixed_precision",
    "ch09": "ch09_capstone",
}

MODULES = {}
for _info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
    if re.fullmatch(r"ch\d+", _info.name):
        MODULES[_info.name] = importlib.import_module(f"{__name__}.{_info.name}")


def chapter_of(assignment: str) -> str:
    """``"ch00_ring_allreduce"`` -> ``"ch00"``."""
    for prefix, name in ASSIGNMENTS.items():
        if name == assignment:
            return prefix
    raise ValueError(f"assignment must be one of {sorted(ASSIGNMENTS.values())}, got {assignment!r}")

"""Shared, session-scoped nbgrader runs for the workbook chapters 0-4 (kept few: they are slow)."""

from __future__ import annotations

import pytest

from course.notebook_api import REGISTRY

from .nbgrader_course import NbgraderCourse, solution_submission

WORKBOOK_0_4 = ["ch00_ring_allreduce", "ch01_zero", "ch02_gradient_accumulation", "ch03_lr_scaling",
                "ch04_comm_overhead"]
WORKBOOK_5_9 = ["ch05_pipeline", "ch06_tensor_parallel", "ch07_checkpointing", "ch08_mixed_precision",
                "ch09_capstone"]

#: exercise kinds whose wrong-but-well-formed answer must lose exactly their points
MUTATED_KINDS = ("derive", "build")


def wrong_submission(course, name, student="wrong"):
    """``student``'s honest solution with every Derive value and Build result made wrong but well-formed."""
    nb = solution_submission(course, name, student)
    mutated = set()
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        part = REGISTRY.get(gid[: -len("_answer")]) if gid.endswith("_answer") else None
        if part is None or part.kind not in MUTATED_KINDS:
            continue
        if part.kind == "derive":
            cell.source += "".join(f"\n{n} = {n} * 1.5 + 1" for n in part.names)
        else:
            fn = part.names[0]
            cell.source += f"\n{fn} = (lambda _f: lambda *a: _f(*a) + 1)({fn})"
        mutated.add(part.grade_id)
    return nb, mutated


@pytest.fixture(scope="session")
def graded_workbook(tmp_path_factory):
    """One course dir: chapters 0-4 generated, three students submitted and autograded once."""
    root = tmp_path_factory.mktemp("course")
    course = NbgraderCourse(root, WORKBOOK_0_4, ledger=root / "ledger.json")
    mutated = {}
    for name in WORKBOOK_0_4:
        course.submit("reference", name, solution_submission(course, name, "reference"))
        course.submit("untouched", name, course.release_notebook(name))
        nb, mutated[name] = wrong_submission(course, name)
        course.submit("wrong", name, nb)
    course.autograde()  # every chapter and student in one nbgrader process
    course.mutated = mutated
    return course

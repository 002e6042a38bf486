"""A runaway cell costs only what it touches (issue 26): a cell that ignores interrupts, or forks and
sleeps, is killed in the clean room and the other parts are graded; the reason names the cell."""

from __future__ import annotations

import copy

import pytest
from nbformat.v4 import new_code_cell

from autograder.isolation import sandbox
from autograder.grading.grader import Grader
from autograder.grading.submissions import discover

from .course_dir import CHAPTER, grade_id, make_course, solution, submit

pytestmark = pytest.mark.slow

#: a beginner's loop: the bare except swallows every interrupt and alarm
BARE_EXCEPT_LOOP = "import time\nwhile True:\n    try:\n        time.sleep(0.01)\n    except:\n        continue\n"
#: forks, and both copies sleep through every interrupt
FORK_AND_SLEEP = "import os\nos.fork()\n" + BARE_EXCEPT_LOOP


def _with_extra_cell_after(nb, answer_id: str, code: str):
    nb = copy.deepcopy(nb)
    index = next(i for i, c in enumerate(nb.cells) if grade_id(c) == answer_id)
    nb.cells.insert(index + 1, new_code_cell(code))
    return nb, index + 2  # the new cell's number in the notebook, counting from 1


def _appended_to(nb, answer_id: str, code: str):
    nb = copy.deepcopy(nb)
    index = next(i for i, c in enumerate(nb.cells) if grade_id(c) == answer_id)
    nb.cells[index].source += "\n" + code
    return nb, index + 1


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("runaway") / "course")
    first_answer = next(grade_id(c) for c in solution(root).cells if grade_id(c).endswith("_answer"))
    cells = {}
    submit(root, "honest", solution(root, student="honest"))
    nb, cells["bare_extra"] = _with_extra_cell_after(solution(root, student="bare_extra"), first_answer,
                                                     BARE_EXCEPT_LOOP)
    submit(root, "bare_extra", nb)
    nb, cells["fork_in_answer"] = _appended_to(solution(root, student="fork_in_answer"), first_answer,
                                               FORK_AND_SLEEP)
    submit(root, "fork_in_answer", nb)
    grader = Grader(root, CHAPTER, workers=1, feedback=False, seed=3,
                    limits=sandbox.Limits(cell_timeout=3, submission_timeout=120), log=lambda m: None)
    rows = {r["student"]: r for r in grader.grade_all(discover(root / "submitted", CHAPTER), progress=False)}
    return rows, cells, first_answer.replace("_answer", "")


def test_an_extra_cell_that_ignores_interrupts_costs_nothing(graded):
    rows, cells, _ = graded
    assert rows["honest"]["score"] == rows["honest"]["max_score"] == 8.0, rows["honest"]
    row = rows["bare_extra"]
    assert row["score"] == rows["honest"]["score"], row
    assert f"cell {cells['bare_extra']} never finished" in row["reason"], row["reason"]
    assert "score 0" not in row["reason"]


def test_a_forking_runaway_in_an_answer_costs_that_answer_only(graded):
    rows, cells, part = graded
    honest = {p["part"]: p["points"] for p in rows["honest"]["parts"]}
    row = rows["fork_in_answer"]
    got = {p["part"]: p["points"] for p in row["parts"]}
    assert got[part] == 0 and honest[part] > 0
    assert {k: v for k, v in got.items() if k != part} == {k: v for k, v in honest.items() if k != part}
    assert row["score"] == rows["honest"]["score"] - honest[part]
    assert f"cell {cells['fork_in_answer']} never finished" in row["reason"], row["reason"]
    broken = next(p for p in row["parts"] if p["part"] == part)
    assert f"cell {cells['fork_in_answer']}" in broken["reason"], broken


# -- a lab: its answers and locks are read from the kernel, where the runaway cell also runs --------
LAB = "lab05_parallelism_paradox"
LOCKED = {"act1": "A", "act2": "B", "part3": "C"}


@pytest.fixture(scope="module")
def lab_graded(tmp_path_factory):
    from course.notebook_api.lab_session import LabSession
    from course.ledger import Ledger

    base = tmp_path_factory.mktemp("runaway_lab")
    root = make_course(base / "course", LAB)
    honest = solution(root, LAB, student="honest")
    first_answer, second_answer = [grade_id(c) for c in honest.cells if grade_id(c).endswith("_answer")][:2]
    cells = {}
    submit(root, "honest", honest, assignment=LAB)
    nb, cells["bare_extra"] = _with_extra_cell_after(solution(root, LAB, student="bare_extra"), first_answer,
                                                     BARE_EXCEPT_LOOP)
    submit(root, "bare_extra", nb, assignment=LAB)
    nb, cells["bare_in_answer"] = _appended_to(solution(root, LAB, student="bare_in_answer"), second_answer,
                                               FORK_AND_SLEEP)
    submit(root, "bare_in_answer", nb, assignment=LAB)
    nb, cells["exit_extra"] = _with_extra_cell_after(solution(root, LAB, student="exit_extra"), first_answer,
                                                     "import os\nos._exit(0)\n")
    submit(root, "exit_extra", nb, assignment=LAB)
    for student in cells.keys() | {"honest"}:
        session = LabSession("lab05", folder=root / "submitted" / student / LAB,
                             ledger=Ledger(base / f"{student}.json"))
        for act, option in LOCKED.items():
            session.lock(act).answer(option)
    grader = Grader(root, LAB, workers=2, feedback=False, seed=3,
                    limits=sandbox.Limits(cell_timeout=5, submission_timeout=150), log=lambda m: None)
    rows = {r["student"]: r for r in grader.grade_all(discover(root / "submitted", LAB), progress=False)}
    return rows, cells, second_answer.replace("_answer", "")


def test_lab_runaway_cell_costs_no_kernel_read_part(lab_graded):
    """A hung kernel used to cost every lock and lab answer; now only the cell is lost."""
    rows, cells, _ = lab_graded
    honest = {p["part"]: p["points"] for p in rows["honest"]["parts"]}
    assert all(honest[p] > 0 for p in honest if p.endswith("_lock")), rows["honest"]
    row = rows["bare_extra"]
    assert {p["part"]: p["points"] for p in row["parts"]} == honest, row
    assert f"cell {cells['bare_extra']} never finished" in row["reason"], row["reason"]
    assert "score 0" not in row["reason"]


def test_lab_runaway_in_an_answer_costs_that_answer_only(lab_graded):
    rows, cells, part = lab_graded
    honest = {p["part"]: p["points"] for p in rows["honest"]["parts"]}
    row = rows["bare_in_answer"]
    got = {p["part"]: p["points"] for p in row["parts"]}
    assert got[part] == 0 and honest[part] > 0, row
    assert {k: v for k, v in got.items() if k != part} == {k: v for k, v in honest.items() if k != part}, row
    broken = next(p for p in row["parts"] if p["part"] == part)
    assert f"cell {cells['bare_in_answer']}" in broken["reason"], broken
    assert f"cell {cells['bare_in_answer']} never finished" in row["reason"], row["reason"]


def test_lab_cell_that_ends_the_kernel_costs_no_kernel_read_part(lab_graded):
    """A cell that ends the kernel (os._exit) used to cost every lock and lab answer; now the
    notebook runs again without it and the row names it."""
    rows, cells, _ = lab_graded
    honest = {p["part"]: p["points"] for p in rows["honest"]["parts"]}
    row = rows["exit_extra"]
    assert {p["part"]: p["points"] for p in row["parts"]} == honest, row
    assert f"cell {cells['exit_extra']} ended the Python kernel" in row["reason"], row["reason"]
    assert "score 0" not in row["reason"]

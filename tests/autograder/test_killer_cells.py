"""A cell that ends the run it is graded in costs that cell only, and the student's row names it.

The clean room runs each cell in a forked copy of the process that ran the cells before it; a cell
that kills or stops those processes (its parent, every process it may signal) used to end the run
without an answer and zero every part with a reason naming no cell. The kernel's run names the
cell that ended the kernel (``os._exit``, a signal, closing its channels). A cell Python cannot
compile is named with Python's message, read by the grader from the text.
"""

from __future__ import annotations

import copy

import pytest
from nbformat.v4 import new_code_cell

from autograder.isolation import sandbox
from autograder.grading.grader import Grader
from autograder.grading.submissions import discover

from .course_dir import CHAPTER, grade_id, make_course, solution, submit

pytestmark = pytest.mark.slow

#: extra cells a student adds after the first answer; each ends (or tries to end) the grading run
AFTER_FIRST_ANSWER = {
    "kill_parent": "import os\nos.kill(os.getppid(), 9)\n",
    "kill_all": "import os\nos.kill(-1, 9)\n",
    # the process the parent descends from (the run goes on in the parent: it must not hide the cell)
    "kill_grandparent": "import os\nwith open(f'/proc/{os.getppid()}/stat') as fh:\n"
                        "    os.kill(int(fh.read().rsplit(')', 1)[1].split()[1]), 9)\n",
    "kill_first": "import os\nos.kill(2, 9)\n",  # under bwrap, the clean room's first process
    "stop_all": "import os, signal\nos.kill(-1, signal.SIGSTOP)\nos.kill(os.getpid(), signal.SIGSTOP)\n",
    "os_exit": "import os\nos._exit(0)\n",
    "close_channels": "import os\nfor fd in range(3, 1024):\n    try:\n        os.close(fd)\n    except OSError:\n"
                      "        pass\n",
    "syntax": "x = = 1\n",
}
#: a last cell that redefines the Build function: calling it kills the process that calls it
KILLING_FUNCTION = "def effective_batch(*args):\n    import os\n    os.kill(os.getppid(), 9)\n"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("killers") / "course")
    submit(root, "honest", solution(root, student="honest"))
    numbers = {}
    for student, code in AFTER_FIRST_ANSWER.items():
        nb = copy.deepcopy(solution(root, student=student))
        index = next(i for i, c in enumerate(nb.cells) if grade_id(c).endswith("_answer"))
        nb.cells.insert(index + 1, new_code_cell(code))
        numbers[student] = index + 2
        submit(root, student, nb)
    # the killer is the answer cell itself: what it defines is lost, and the part says so
    nb = copy.deepcopy(solution(root, student="kill_in_answer"))
    index = next(i for i, c in enumerate(nb.cells) if grade_id(c).endswith("_answer"))
    nb.cells[index].source += "\nimport os\nos.kill(os.getppid(), 9)\n"
    numbers["kill_in_answer"] = index + 1
    submit(root, "kill_in_answer", nb)
    # a killer that defines nothing, and a later answer lost for another reason (it imports course.core,
    # which the clean room does not have): that part's reason must not blame the killer
    nb = copy.deepcopy(solution(root, student="kill_and_core"))
    answers = [i for i, c in enumerate(nb.cells) if grade_id(c).endswith("_answer")]
    nb.cells[answers[1]].source = "import course.core\n" + nb.cells[answers[1]].source
    nb.cells.insert(answers[0] + 1, new_code_cell(AFTER_FIRST_ANSWER["kill_parent"]))
    numbers["kill_and_core"] = answers[0] + 2
    submit(root, "kill_and_core", nb)
    nb = copy.deepcopy(solution(root, student="kill_in_call"))
    nb.cells.append(new_code_cell(KILLING_FUNCTION))
    submit(root, "kill_in_call", nb)
    grader = Grader(root, CHAPTER, workers=2, feedback=False, seed=3,
                    limits=sandbox.Limits(cell_timeout=3, submission_timeout=90), log=lambda m: None)
    rows = {r["student"]: r for r in grader.grade_all(discover(root / "submitted", CHAPTER), progress=False)}
    return rows, numbers, root


@pytest.mark.parametrize("student", ["kill_parent", "kill_all", "stop_all", "kill_grandparent", "kill_first"])
def test_a_cell_that_ends_the_clean_room_is_named_and_the_rest_is_graded(graded, student):
    rows, numbers, _ = graded
    assert rows["honest"]["score"] == rows["honest"]["max_score"] == 8.0, rows["honest"]
    row = rows[student]
    assert f"cell {numbers[student]} ended the grading run" in row["reason"], row["reason"]
    assert row["score"] == 8.0, row  # the cell defines nothing that is graded: nothing is lost
    assert "could not be read" not in row["reason"]


@pytest.mark.parametrize("student", ["os_exit", "close_channels"])
def test_a_cell_that_ends_the_kernel_is_named(graded, student):
    rows, numbers, _ = graded
    row = rows[student]
    assert row["status"] == "kernel_died", row
    assert f"kernel stopped while running cell {numbers[student]} " in row["reason"], row["reason"]
    assert f"cell {numbers[student]} ended its own process when your code was run again" in row["reason"]
    assert row["score"] == 8.0, row  # the answers are read from the clean room, which went on without it


def test_a_function_that_kills_its_caller_costs_its_own_part_only(graded):
    rows, _, _ = graded
    row = rows["kill_in_call"]
    parts = {p["part"]: p for p in row["parts"]}
    assert parts["ch02_ex2_4"]["points"] == 0
    assert "calling your function `effective_batch` ended the grading run" in parts["ch02_ex2_4"]["reason"]
    assert row["score"] == 8.0 - parts["ch02_ex2_4"]["max_points"], row


def test_a_syntax_error_is_named_with_pythons_message(graded):
    rows, numbers, _ = graded
    row = rows["syntax"]
    assert f"cell {numbers['syntax']} has a syntax error (line 1: invalid syntax), so none of it ran" in row["reason"]
    assert row["score"] == 8.0
    assert "syntax error" not in rows["honest"]["reason"]


@pytest.mark.parametrize("student, words", [("kill_parent", "this cell ended the run"),
                                            ("os_exit", "the Python kernel stopped while this cell ran")])
def test_the_student_reads_it_under_the_cell(graded, student, words):
    """The row is the instructor's; the student reads the autograded notebook's feedback."""
    import nbformat

    _, numbers, root = graded
    nb = nbformat.read(str(root / "autograded" / student / CHAPTER / f"{CHAPTER}.ipynb"), 4)
    texts = [o.get("text", "") for o in nb.cells[numbers[student] - 1].outputs]
    assert any(words in t for t in texts), texts


def test_a_part_blames_only_a_left_out_cell_that_could_define_what_it_misses(graded):
    rows, numbers, _ = graded
    lost = [p for p in rows["kill_in_answer"]["parts"] if p["points"] < p["max_points"]]
    assert len(lost) == 1, rows["kill_in_answer"]
    assert f"cell {numbers['kill_in_answer']} ended its run and was left out, so what it defines is missing" \
        in lost[0]["reason"], lost[0]["reason"]
    other = [p for p in rows["kill_and_core"]["parts"] if p["points"] < p["max_points"]]
    assert len(other) == 1, rows["kill_and_core"]
    assert f"cell {numbers['kill_and_core']}" not in other[0]["reason"], other[0]["reason"]
    assert "without the course package" in other[0]["reason"], other[0]["reason"]

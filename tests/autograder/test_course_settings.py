"""Grading reads the instructor's ``nbgrader_config.py``: nbgrader's folders and gradebook, and nbgrader's
own steps built with its configuration (``autograder/grading/course_settings.py``)."""

from __future__ import annotations

import json

import nbformat
import pytest
from nbgrader.plugins import LateSubmissionPlugin
from nbgrader.preprocessors import AssignLatePenalties, ClearOutput, LimitOutput

from autograder.grading.course_settings import CourseSettings
from autograder.grading.grader import Grader
from autograder.grading.submissions import discover
from autograder.isolation import sandbox

from .course_dir import CHAPTER, grade_id, make_course, solution, submit


class HalfOffLate(LateSubmissionPlugin):
    """A late-submission plugin an instructor might write: half the score off when late."""

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        return score / 2 if total_seconds_late > 0 else 0


def write_config(root, *lines):
    (root / "nbgrader_config.py").write_text("c = get_config()  # noqa: F821\n" + "\n".join(lines) + "\n")


def test_nbgraders_defaults_without_a_config_file(tmp_path):
    settings = CourseSettings(tmp_path)
    assert settings.db_url == f"sqlite:///{tmp_path.resolve() / 'gradebook.db'}"
    assert settings.gradebook_file == tmp_path.resolve() / "gradebook.db"
    assert settings.folder("autograded", "ada", "ch01") == tmp_path.resolve() / "autograded" / "ada" / "ch01"
    assert settings.folder("source", ".", "ch01") == tmp_path.resolve() / "source" / "." / "ch01"
    assert settings.step(LimitOutput).max_lines == LimitOutput().max_lines


def test_the_instructors_folders_gradebook_and_steps(tmp_path):
    write_config(tmp_path,
                 "c.CourseDirectory.root = '/somewhere/else'",  # the root grading was given wins
                 "c.CourseDirectory.autograded_directory = 'graded_copies'",
                 "c.CourseDirectory.feedback_directory = 'returned'",
                 "c.CourseDirectory.db_url = 'postgresql://grader@db/course'",
                 "c.LimitOutput.max_lines = 3",
                 "c.ClearOutput.remove_metadata_fields = ['collapsed']",
                 f"c.AssignLatePenalties.plugin_class = '{__name__}.HalfOffLate'")
    settings = CourseSettings(tmp_path)
    root = tmp_path.resolve()
    assert settings.root == root and settings.coursedir.root == str(root)
    assert settings.folder("autograded", "ada", "ch01") == root / "graded_copies" / "ada" / "ch01"
    assert settings.folder("feedback", "ada", "ch01") == root / "returned" / "ada" / "ch01"
    assert settings.db_url == "postgresql://grader@db/course" and settings.gradebook_file is None
    assert settings.step(LimitOutput).max_lines == 3
    assert settings.step(ClearOutput).remove_metadata_fields == {"collapsed"}
    assert settings.step(AssignLatePenalties).plugin_class is HalfOffLate


@pytest.fixture(scope="module")
def configured_run(tmp_path_factory):
    """One honest submission whose answer cell prints ten lines, graded in a course whose
    nbgrader_config.py moves autograded/ and feedback/ and limits outputs to two lines."""
    root = make_course(tmp_path_factory.mktemp("configured") / "course")
    with open(root / "nbgrader_config.py", "a") as fh:
        fh.write("\nc.CourseDirectory.autograded_directory = 'graded_copies'\n"
                 "c.CourseDirectory.feedback_directory = 'returned'\n"
                 "c.LimitOutput.max_lines = 2\n")
    nb = solution(root, student="ada")
    answer = next(c for c in nb.cells if grade_id(c).endswith("_answer"))
    answer.source += "\nfor line in range(10):\n    print('line', line)\n"
    submit(root, "ada", nb)
    grader = Grader(root, CHAPTER, workers=1, feedback=True, seed=3, limits=sandbox.Limits(cell_timeout=30),
                    log=lambda message: None)
    rows = grader.grade_all(discover(root / "submitted", CHAPTER), progress=False)
    return root, rows, grade_id(answer)


def test_grading_writes_where_the_instructor_configured(configured_run):
    root, rows, _ = configured_run
    assert [row["student"] for row in rows] == ["ada"] and rows[0]["score"] == rows[0]["max_score"], rows
    assert (root / "graded_copies" / "ada" / CHAPTER / f"{CHAPTER}.ipynb").is_file()
    assert (root / "returned" / "ada" / CHAPTER / f"{CHAPTER}.html").is_file()
    assert not (root / "autograded").exists() and not (root / "feedback").exists()


def test_nbgraders_limit_output_takes_the_instructors_setting(configured_run):
    root, _, answer_id = configured_run
    nb = nbformat.read(str(root / "graded_copies" / "ada" / CHAPTER / f"{CHAPTER}.ipynb"), 4)
    cell = next(c for c in nb.cells if grade_id(c) == answer_id)
    text = "".join(out.get("text", "") for out in cell.outputs if out.get("output_type") == "stream")
    assert "line 0" in text and "line 9" not in text, json.dumps(cell.outputs)[:500]

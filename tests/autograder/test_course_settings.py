"""Grading reads the instructor's ``nbgrader_config.py``: nbgrader's folders and gradebook, and nbgrader's
own steps built with its configuration (``autograder/grading/course_settings.py``)."""

from __future__ import annotations

import json
from pathlib import Path

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


# ---------------------------------------------------------------------------- every route reads it
#: an instructor's nbgrader_config.py that renames every folder grading writes or reads, limits
#: outputs and brings its own late-submission plugin
RENAMED = ("c.CourseDirectory.submitted_directory = 'handins'",
           "c.CourseDirectory.autograded_directory = 'graded_copies'",
           "c.CourseDirectory.feedback_directory = 'returned'",
           "c.LimitOutput.max_lines = 2",
           f"c.AssignLatePenalties.plugin_class = '{__name__}.HalfOffLate'")


@pytest.fixture(scope="module")
def renamed_course(tmp_path_factory):
    """A late, chatty honest submission in ``handins/``, graded by ``course-autograde class`` (in this
    process: the plugin is this module's) under a late policy set on that command line."""
    from autograder.engines import cli

    root = make_course(tmp_path_factory.mktemp("renamed") / "course")
    with open(root / "nbgrader_config.py", "a") as fh:
        fh.write("\n" + "\n".join(RENAMED) + "\n")
    nb = solution(root, student="ada")
    answer = next(c for c in nb.cells if grade_id(c).endswith("_answer"))
    answer.source += "\nfor line in range(10):\n    print('line', line)\n"
    submit(root, "ada", nb)
    (root / "submitted").rename(root / "handins")  # where this course's nbgrader collects
    (root / "handins" / "ada" / CHAPTER / "timestamp.txt").write_text("2026-12-02 10:00:00.000000 UTC")
    code = cli.main(["class", CHAPTER, "--course-root", str(root), "--due", "2026-11-30 23:59 UTC",
                     "--late-per-day", "0.25", "--no-progress", "--seed", "5", "--cell-timeout", "30"])
    assert code == 0
    return root, grade_id(answer)


def test_class_grades_the_configured_folders_into_the_gradebook(renamed_course):
    """``class`` without a folder grades what this course's nbgrader collected (``handins/``) and records it
    as the course's own; everything it writes lands in the configured folders, none in nbgrader's defaults."""
    root, _ = renamed_course
    data = json.loads((root / "grades" / CHAPTER / "grades.json").read_text())
    assert [(r["student"], r["score"], r["late"]["final_score"]) for r in data["students"]] == [("ada", 8.0, 4.0)]
    assert (root / "graded_copies" / "ada" / CHAPTER / f"{CHAPTER}.ipynb").is_file()
    assert not [name for name in ("submitted", "autograded", "feedback") if (root / name).exists()]
    assert not list((root / "grades" / CHAPTER).glob("unrecorded-*"))


def test_class_runs_nbgraders_steps_with_the_instructors_settings(renamed_course):
    from nbgrader.api import Gradebook

    root, answer_id = renamed_course
    nb = nbformat.read(str(root / "graded_copies" / "ada" / CHAPTER / f"{CHAPTER}.ipynb"), 4)
    cell = next(c for c in nb.cells if grade_id(c) == answer_id)
    text = "".join(out.get("text", "") for out in cell.outputs if out.get("output_type") == "stream")
    assert "line 0" in text and "line 9" not in text  # c.LimitOutput.max_lines
    with Gradebook(CourseSettings(root).db_url) as gb:  # c.AssignLatePenalties.plugin_class: half off when late
        assert gb.find_submission(CHAPTER, "ada").late_submission_penalty == 4.0


def test_the_late_note_goes_into_the_configured_feedback_folder(renamed_course):
    root, _ = renamed_course
    page = (root / "returned" / "ada" / CHAPTER / f"{CHAPTER}.html").read_text()
    assert page.count("class='course-late'") == 1 and "Late by 2 started day(s): 4 points (50%) taken" in page


def test_refresh_and_single_read_the_configured_course(renamed_course, tmp_path):
    """``refresh`` reads the configured gradebook and remakes feedback there (nbgrader's own Generate
    Feedback, its late note included); ``single`` knows a notebook in ``handins/<student>/`` by its folder."""
    from autograder.engines import cli

    root, _ = renamed_course
    page = root / "returned" / "ada" / CHAPTER / f"{CHAPTER}.html"
    page.unlink()
    assert cli.main(["refresh", CHAPTER, "--course-root", str(root)]) == 0
    assert page.read_text().count("class='course-late'") == 1
    notebook = root / "handins" / "ada" / CHAPTER / f"{CHAPTER}.ipynb"
    assert cli.single_student(notebook, CHAPTER, steps=("handins", "graded_copies")) == (
        "ada", f"the folder handins/ada/{CHAPTER}")


def test_a_scratch_copy_keeps_the_settings_but_never_the_gradebook(tmp_path):
    """Grading outside the gradebook (``class FOLDER``, ``single``) copies the course: its folders and steps,
    a gradebook of its own, even where the instructor's file names the course's gradebook by an absolute URL."""
    write_config(tmp_path, "c.CourseDirectory.source_directory = 'authoring'", "c.LimitOutput.max_lines = 3",
                 f"c.CourseDirectory.db_url = 'sqlite:///{tmp_path / 'live.db'}'")
    scratch_root = tmp_path / "scratch"
    scratch_root.mkdir()
    scratch = CourseSettings(tmp_path).scratch(scratch_root)
    assert scratch.db_url == f"sqlite:///{scratch_root.resolve() / 'gradebook.db'}"
    assert scratch.folder("source", ".", "ch01") == scratch_root.resolve() / "authoring" / "." / "ch01"
    assert scratch.step(LimitOutput).max_lines == 3


def test_feedback_steps_are_built_with_the_instructors_settings(tmp_path):
    """The course's feedback renderer (and its worker processes) build nbgrader's feedback steps with the
    course's configuration: hidden tests marked with the instructor's own delimiters never reach a student."""
    from nbformat.v4 import new_code_cell, new_notebook

    from autograder.grading import feedback

    write_config(tmp_path, "c.ClearHiddenTests.begin_test_delimeter = 'BEGIN SECRET CHECKS'",
                 "c.ClearHiddenTests.end_test_delimeter = 'END SECRET CHECKS'")
    steps = {type(step).__name__: step for step in feedback._preprocessors(tmp_path)}
    assert steps["ClearHiddenTests"].begin_test_delimeter == "BEGIN SECRET CHECKS"
    cell = new_code_cell("assert f(1) == 2\n### BEGIN SECRET CHECKS\nassert f(7) == 49\n### END SECRET CHECKS\n",
                         metadata={"nbgrader": {"grade": True, "solution": False, "grade_id": "t1", "points": 1,
                                                "locked": True, "schema_version": 3}})
    cleared, _ = steps["ClearHiddenTests"].preprocess(new_notebook(cells=[cell]), {})
    assert "f(7)" not in cleared.cells[0].source and "f(1)" in cleared.cells[0].source
    default = {type(step).__name__: step for step in feedback._preprocessors(None)}["ClearHiddenTests"]
    assert default.begin_test_delimeter == "BEGIN HIDDEN TESTS"  # without a course: nbgrader's own


def test_one_loader_of_nbgrader_config():
    """``nbgrader_config.py`` is read in one place (``autograder/course_config.py``, below isolation and
    grading): no other module of the package builds traitlets' file loader itself."""
    from autograder import course_config
    from autograder.grading import course_settings
    from autograder.isolation import unsandboxed

    root = Path(__file__).resolve().parents[2]
    loaders = sorted(str(p.relative_to(root)) for package in ("autograder", "course", "hub")
                     for p in (root / package).rglob("*.py") if "PyFileConfigLoader" in p.read_text())
    assert loaders == ["autograder/course_config.py"]
    assert course_settings.course_config is unsandboxed.course_config is course_config.course_config


def test_the_sandbox_policy_reads_the_course_file(tmp_path, monkeypatch):
    from autograder.isolation import unsandboxed

    monkeypatch.delenv(unsandboxed.ENV, raising=False)
    assert unsandboxed.allowed(tmp_path) is None
    write_config(tmp_path, "c.Isolation.allow_unsandboxed = True")
    assert unsandboxed.allowed(tmp_path) == "c.Isolation.allow_unsandboxed in nbgrader_config.py"

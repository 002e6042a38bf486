"""Grading's steps are configurable classes an instructor sets in ``nbgrader_config.py``, as nbgrader's own
(``autograder/grading/steps.py``): the grader composes them from ``c.Grader.steps``."""

from __future__ import annotations

import nbformat
import pytest
from traitlets.config import Config, Configurable

from autograder.grading import steps
from autograder.grading.grader import Grader
from autograder.grading.submissions import discover
from autograder.isolation import sandbox

from .course_dir import CHAPTER, make_course, solution, submit


def _built(**sections):
    config = Config()
    for section, values in sections.items():
        for name, value in values.items():
            config[section][name] = value
    parent = Configurable(config=config)
    return steps.build_steps(config.Grader.get("steps", steps.DEFAULT_STEPS), parent=parent)


def test_each_step_reads_its_own_settings_from_the_configuration():
    built = {type(step).__name__: step for step in _built(SandboxStep={"max_kernel_reruns": 1},
                                                          ReadNotebookStep={"max_notebook_bytes": 4096})}
    assert list(built) == steps.DEFAULT_STEPS
    assert built["SandboxStep"].max_kernel_reruns == 1
    assert built["ReadNotebookStep"].max_notebook_bytes == 4096
    default = {type(step).__name__: step for step in _built()}
    assert default["SandboxStep"].max_kernel_reruns == 2
    assert default["ReadNotebookStep"].max_notebook_bytes == 50 * 2**20


def test_a_disabled_optional_step_leaves_the_pipeline():
    names = [type(step).__name__ for step in _built(FeedbackStep={"enabled": False})]
    assert "FeedbackStep" not in names and names[-1] == "ResultStep"


@pytest.mark.parametrize("sections, message", [
    ({"SanitizeStep": {"enabled": False}}, "c.SanitizeStep.enabled = False"),
    ({"Grader": {"steps": [n for n in steps.DEFAULT_STEPS if n != "SandboxStep"]}}, "leaves out SandboxStep"),
    ({"Grader": {"steps": steps.DEFAULT_STEPS + ["NoSuchStep"]}}, "'NoSuchStep'"),
    ({"Grader": {"steps": steps.DEFAULT_STEPS + ["collections.OrderedDict"]}}, "not a GradingStep"),
    ({"Grader": {"steps": steps.DEFAULT_STEPS[:-1] + ["FeedbackStep", "ResultStep"][::-1]}}, "end with ResultStep"),
])
def test_a_configuration_that_would_lose_a_row_or_its_safety_is_refused(sections, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[")):
        _built(**sections)


NOTE_STEP = '''
from autograder.grading.steps import GradingStep
from traitlets import Unicode


class NoteStep(GradingStep):
    """A course's own step: one more note on every graded submission."""

    note = Unicode("checked by the course's own step").tag(config=True)

    def run(self, grader, work):
        work.notes.append(self.note)
'''


def test_the_instructors_configuration_composes_the_grading_of_a_real_course(tmp_path, monkeypatch):
    """A course step added by name with its own setting, feedback switched off and a smaller notebook
    limit, all in ``nbgrader_config.py``: every route that builds a Grader reads them there."""
    (tmp_path / "course_steps.py").write_text(NOTE_STEP)
    monkeypatch.syspath_prepend(str(tmp_path))
    root = make_course(tmp_path / "course")
    ada = solution(root, student="ada")
    submit(root, "ada", ada)
    limit = len(nbformat.writes(ada).encode()) + 4096
    big = solution(root, student="bob")
    big.cells.append(nbformat.v4.new_markdown_cell("x" * (limit + 1)))
    submit(root, "bob", big)
    with open(root / "nbgrader_config.py", "a") as fh:
        fh.write("\nfrom autograder.grading.steps import DEFAULT_STEPS\n"
                 "c.Grader.steps = DEFAULT_STEPS[:-1] + ['course_steps.NoteStep', 'ResultStep']\n"
                 "c.NoteStep.note = 'seen by the teaching assistants'\n"
                 "c.FeedbackStep.enabled = False\n"
                 f"c.ReadNotebookStep.max_notebook_bytes = {limit}\n")
    grader = Grader(root, CHAPTER, workers=1, feedback=True, seed=3, limits=sandbox.Limits(cell_timeout=30),
                    log=lambda message: None)
    assert [type(step).__name__ for step in grader.pipeline][-2:] == ["NoteStep", "ResultStep"]
    assert grader.feedback is False
    rows = {row["student"]: row for row in grader.grade_all(discover(root / "submitted", CHAPTER), progress=False)}
    assert rows["ada"]["status"] == "graded" and rows["ada"]["score"] == rows["ada"]["max_score"] > 0
    assert "seen by the teaching assistants" in rows["ada"]["reason"]
    assert rows["bob"]["status"] == "unreadable" and rows["bob"]["score"] == 0
    assert f"larger than {limit} bytes" in rows["bob"]["reason"]
    assert not (root / "feedback").exists()
    assert (root / "autograded" / "ada" / CHAPTER / f"{CHAPTER}.ipynb").is_file()

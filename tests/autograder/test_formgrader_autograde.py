"""The formgrader's Autograde button grades in the sandbox (issue 26).

The button calls ``NbGraderAPI.autograde(assignment, student)`` in the instructor's Jupyter
server; ``nbgrader_config.py`` makes nbgrader's Autograde converter grade with the course's
sandboxed grader (:mod:`autograder.engines.formgrader`). Here the API is called the way the button calls
it (one process, the course's configuration, one student at a time) for honest, wrong and hostile
submissions; then ``course-autograde class`` grades the same submissions and every part must score
the same. A submission that reports who runs it and writes into the course root shows that its
code ran as a sandbox uid that cannot see the course.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from autograder.isolation import sandbox

from . import attacks
from .conftest import _with_answer
from .course_dir import CHAPTER, make_course, nbgrader_env, release, solution, submit, with_first_answer, \
    with_wrong_first_answer

pytestmark = pytest.mark.slow
LIMITS = ["--cell-timeout", "20", "--timeout", "90", "--max-processes", "64"]

#: what the submission's own code reports: its uid, and whether it could write into the course root
WHO_AM_I = """import os
print("UID", os.getuid())
try:
    with open({marker!r}, "w") as fh:
        fh.write("written by student code")
    print("WROTE THE MARKER")
except OSError as exc:
    print("MARKER REFUSED", type(exc).__name__)
"""


def _api_autograde(root: Path, students) -> dict:
    """What the formgrader's Autograde button does, once per student, in one server-like process."""
    code = ("import json, sys\nfrom nbgrader.apps import NbGrader\nfrom nbgrader.apps.api import NbGraderAPI\n"
            "from nbgrader.coursedir import CourseDirectory\n"
            "app = NbGrader()\napp.load_config_file()\n"
            "api = NbGraderAPI(CourseDirectory(config=app.config), config=app.config)\n"
            "results = {s: api.autograde(sys.argv[1], s) for s in sys.argv[2:]}\n"
            # what of autograder/compat.py's patches this server still has once its button ran (none)
            "import importlib, jsonschema, nbgrader.api\nfrom nbgrader.nbgraderformat import common\n"
            "from autograder import compat\n"
            "left = [m for m in compat.GRADEBOOK_USERS if importlib.import_module("
            "'nbgrader.preprocessors.' + m).Gradebook is not nbgrader.api.Gradebook]\n"
            "left += ['jsonschema'] * (common.jsonschema is not jsonschema)\n"
            "print(json.dumps({'results': results, 'left_patched': left}))\n")
    env = {k: v for k, v in nbgrader_env().items() if k != "COURSE_STUDENT"}
    proc = subprocess.run([sys.executable, "-c", code, CHAPTER, *students], cwd=root, env=env,
                          capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    assert answer["left_patched"] == [], "the formgrader's server keeps autograder/compat.py's patches"
    return answer["results"]


def _gradebook_points(root: Path, student: str) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        nb = gb.find_submission_notebook(CHAPTER, CHAPTER, student)
        return {g.name: float(g.score) for g in nb.grades}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("formgrader") / "course")
    outside = [root / "pwned.txt", root / "source" / "pwned.txt", root / "gradebook.db.pwned"]
    marker = root / "marker-from-student-code.txt"
    rel = release(root)
    honest_who = solution(root, student="u_who")
    honest_who.cells.append(new_code_cell(WHO_AM_I.format(marker=str(marker))))
    subs = {
        "ada": solution(root, student="ada"),
        "bo": with_wrong_first_answer(solution(root, student="bo")),
        "c_monkeypatch": with_first_answer(rel, attacks.MONKEYPATCH),
        "c_alwayseq": with_first_answer(rel, attacks.ALWAYS_EQUAL),
        "c_transformer": with_first_answer(rel, attacks.INPUT_TRANSFORMER),
        "d_osexit": with_first_answer(rel, attacks.OS_EXIT),
        "f_write_outside": with_first_answer(rel, attacks.write_outside(outside)),
        "i_harvest_replaced": _with_answer(rel, "ch02_ex2_4_required_accum_steps_answer",
                                           attacks.HARVEST_REPLACED),
        "u_who": honest_who,
    }
    for student, nb in subs.items():
        submit(root, student, nb)
    results = _api_autograde(root, list(subs))
    by_button = {s: _gradebook_points(root, s) for s in subs}
    graded = {s: root / "autograded" / s / CHAPTER / f"{CHAPTER}.ipynb" for s in subs}
    autograded = {s: nbformat.read(str(path), 4) if path.is_file() else None for s, path in graded.items()}
    out = root / "out"
    proc = subprocess.run([sys.executable, "-m", "autograder", "class", CHAPTER, "--course-root", str(root),
                           "--out", str(out), "--no-progress", "--no-feedback", "--seed", "11", *LIMITS],
                          cwd=root, env=nbgrader_env(), capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["student"]: r for r in json.loads((out / "grades.json").read_text())["students"]}
    return {"root": root, "results": results, "by_button": by_button, "rows": rows, "autograded": autograded,
            "outside": outside, "marker": marker, "students": list(subs)}


def test_the_button_succeeds_for_every_submission(course):
    for student, result in course["results"].items():
        assert result["success"], (student, result.get("error"), result.get("log"))


def test_the_button_scores_every_part_as_course_autograde_does(course):
    for student in course["students"]:
        cli = {p["part"]: p["points"] for p in course["rows"][student]["parts"]}
        assert course["by_button"][student] == cli, student


def test_honest_wrong_and_hostile_scores(course):
    button = {s: sum(points.values()) for s, points in course["by_button"].items()}
    assert button["ada"] == button["u_who"] == 8.0
    wrong = course["by_button"]["bo"]
    assert 0 < button["bo"] < 8.0 and wrong["ch02_ex2_1"] == 0
    for student in course["students"]:
        if student[0] in "cdfi":
            assert button[student] == 0, (student, course["by_button"][student])


def test_judge_not_the_kernel_scores_a_monkeypatched_grader(course):
    """Plain nbgrader's in-kernel test cells are fooled by these; the gradebook shows the judge."""
    for student in ("c_monkeypatch", "c_transformer"):
        parts = course["rows"][student]["parts"]
        assert any((p["kernel_points"] or 0) > 0 for p in parts), student
        assert all(v == 0 for v in course["by_button"][student].values()), student


def test_student_code_runs_as_a_sandbox_uid_that_cannot_see_the_course(course):
    outputs = "".join(o.get("text", "") for c in course["autograded"]["u_who"].cells
                      if c.cell_type == "code" for o in c.outputs)
    assert "MARKER REFUSED" in outputs and "WROTE THE MARKER" not in outputs, outputs
    uid = int(outputs.split("UID", 1)[1].split()[0])
    assert uid != os.getuid()
    if os.geteuid() == 0:  # a root grader hands each slot a uid of its own
        assert sandbox.FIRST_SLOT_UID <= uid < sandbox.FIRST_SLOT_UID + sandbox.SLOT_UIDS, uid
    assert not course["marker"].exists()
    for path in course["outside"]:
        assert not path.exists(), path


def test_honest_submissions_log_no_checksum_warnings(course):
    for student in ("ada", "bo", "u_who"):
        log = course["results"][student].get("log") or ""
        assert "has changed" not in log, (student, log[-2000:])
        assert "8.0 points" in log or student == "bo", log[-2000:]


def test_the_button_writes_the_judges_summaries_for_feedback(course):
    """autograded/ carries the trusted judge's summary, so Generate Feedback shows its reason."""
    from autograder.grading.feedback import SUMMARY_KEY

    cells = [c for c in course["autograded"]["bo"].cells if SUMMARY_KEY in c.get("metadata", {})]
    assert cells and any("does not match" in json.dumps(c.metadata[SUMMARY_KEY]) for c in cells)


def test_the_button_refuses_to_run_student_code_without_the_sandbox(monkeypatch, tmp_path):
    """Without bubblewrap the student's code would run in the instructor's account: no grading."""
    from types import SimpleNamespace

    from nbgrader.converters.base import NbGraderException

    import autograder.grading.grader
    from autograder.engines.formgrader import SandboxedAutograde

    def must_not_grade(*args, **kwargs):
        raise AssertionError("graded without a sandbox")

    monkeypatch.setattr(sandbox, "probe", lambda: "bubblewrap (bwrap) is not installed")
    monkeypatch.delenv("COURSE_ALLOW_UNSANDBOXED", raising=False)  # tests/conftest.py sets it without bwrap
    monkeypatch.setattr(autograder.grading.grader, "Grader", must_not_grade)
    step = SandboxedAutograde()
    step._coursedir = lambda: SimpleNamespace(root=str(tmp_path), submitted_directory="submitted",
                                              format_path=lambda *parts: str(tmp_path.joinpath(*parts)))
    resources = {"nbgrader": {"student": "ada", "assignment": CHAPTER, "notebook": CHAPTER}}
    with pytest.raises(NbGraderException, match="unsandboxed.*bwrap.*require_sandbox"):
        step.preprocess(nbformat.v4.new_notebook(), resources)

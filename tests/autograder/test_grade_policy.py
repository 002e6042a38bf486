"""A grade's policy lives with its assignment (issue 45): set once, applied by every route that grades.

The acceptance: a late penalty set once survives a whole-class regrade without flags, the formgrader's
route (``nbgrader autograde A --student X --force``, what its Autograde button runs) and a policy
change is said, with the scores it changes in a ``canvas.csv`` already written; checked by reading
``grades.json`` and ``canvas.csv``. Grading on submit is checked in ``test_on_submit.py``.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from autograder.records import policy

from .course_dir import CHAPTER, make_course, nbgrader_env, run_nbgrader, solution, submit, \
    with_wrong_first_answer

LIMITS = ["--cell-timeout", "20", "--timeout", "90", "--max-processes", "64"]


def _cli(root, *args) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "autograder", *args, "--course-root", str(root)], cwd=root,
                          env=nbgrader_env(), capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def _finals(root) -> dict:
    data = json.loads((root / "grades" / CHAPTER / "grades.json").read_text())
    return {r["student"]: (r["score"], r["late"]["final_score"]) for r in data["students"]}


def _canvas(root) -> dict:
    with open(root / "grades" / CHAPTER / "canvas.csv", newline="") as fh:
        return {row[3]: row[-1] for row in list(csv.reader(fh))[2:]}


# ---------------------------------------------------------------------------- the stored policy
def test_policy_is_set_once_changed_only_by_a_command_that_says_so(tmp_path):
    assert policy.load(tmp_path, CHAPTER).late.per_day == 0.0 and policy.load(tmp_path, CHAPTER).due is None
    said = policy.change(tmp_path, CHAPTER, due="2026-11-30 23:59 UTC", per_day=0.1)
    assert said == ["per day: 0 -> 0.1", "due date: none -> 2026-11-30 23:59 UTC"]
    assert policy.change(tmp_path, CHAPTER, per_day=0.1) == []  # the same setting again changes nothing
    current = policy.load(tmp_path, CHAPTER)
    assert (current.late.per_day, current.due.isoformat(), current.due_from) == (0.1, "2026-11-30T23:59:00+00:00",
                                                                                 "policy")
    assert policy.change(tmp_path, CHAPTER, cap=0.5) == ["cap: 1 -> 0.5"]
    stored = json.loads(policy.path(tmp_path, CHAPTER).read_text())
    assert stored["late"] == {"per_day": 0.1, "grace_minutes": 0.0, "cap": 0.5}
    assert [h["changed"] for h in stored["history"]] == [said, ["cap: 1 -> 0.5"]]
    with pytest.raises(ValueError, match="per_day"):
        policy.change(tmp_path, CHAPTER, per_day=1.5)
    assert policy.load(tmp_path, CHAPTER).late.per_day == 0.1  # a refused change leaves it as it was


def test_policy_an_older_run_kept_in_grades_json_is_adopted(tmp_path):
    folder = tmp_path / "grades" / CHAPTER
    folder.mkdir(parents=True)
    (folder / "grades.json").write_text(json.dumps({
        "assignment": CHAPTER, "students": [],
        "late_policy": {"policy": {"per_day": 0.25, "grace_minutes": 0.0, "cap": 0.5},
                        "due": "2026-11-30T23:59:00+00:00"}}))
    said = []
    adopted = policy.adopt(tmp_path, CHAPTER, log=said.append)
    assert (adopted.late.per_day, adopted.late.cap, adopted.due.day) == (0.25, 0.5, 30)
    assert policy.path(tmp_path, CHAPTER).is_file() and "now kept in" in said[0]
    (folder / "grades.json").unlink()  # from now on the policy does not depend on a grades.json
    assert policy.load(tmp_path, CHAPTER).late.per_day == 0.25


def test_apply_uses_the_policy_and_the_students_extension(tmp_path):
    from autograder.records import term

    policy.change(tmp_path, CHAPTER, due="2026-11-30 00:00 UTC", per_day=0.5)
    term.set_extension(tmp_path, CHAPTER, "bo", extra_days=3)
    rows = [{"student": "ada", "score": 8.0}, {"student": "bo", "score": 8.0}]
    stamps = {"ada": "2026-12-01 10:00:00 UTC", "bo": "2026-12-01 10:00:00 UTC"}
    out = {r["student"]: r["late"] for r in policy.apply(tmp_path, CHAPTER, rows, stamps)}
    assert (out["ada"]["days_charged"], out["ada"]["final_score"]) == (2, 0.0)
    assert (out["bo"]["days_charged"], out["bo"]["final_score"]) == (0, 8.0) and "extension" in out["bo"]


def test_a_changed_score_in_an_exported_canvas_csv_is_named(tmp_path):
    from autograder.records import lms

    folder = tmp_path / "grades" / CHAPTER
    rows = [{"student": "ada", "score": 8.0, "max_score": 8.0}, {"student": "bo", "score": 7.0, "max_score": 8.0}]
    lms.write_canvas(rows, folder / "canvas.csv", CHAPTER)
    regraded = [{"student": "ada", "score": 8.0, "max_score": 8.0},
                {"student": "bo", "score": 7.0, "max_score": 8.0, "late": {"final_score": 3.5}}]
    lines = policy.changed_exports(tmp_path, CHAPTER, folder, regraded)
    assert len(lines) == 1 and lines[0].startswith("bo: 7 in ") and "now 3.5" in lines[0]


# ---------------------------------------------------------------------------- every route applies it
@pytest.mark.slow
def test_a_late_penalty_set_once_survives_every_regrade_route(tmp_path):
    root = make_course(tmp_path / "course")
    submit(root, "ada", solution(root, student="ada"))
    submit(root, "bo", with_wrong_first_answer(solution(root, student="bo")))
    (root / "submitted" / "ada" / CHAPTER / "timestamp.txt").write_text("2026-11-30 12:00:00.000000 UTC")
    (root / "submitted" / "bo" / CHAPTER / "timestamp.txt").write_text("2026-12-02 10:00:00.000000 UTC")
    first = _cli(root, "class", CHAPTER, "--due", "2026-11-30 23:59 UTC", "--late-per-day", "0.25",
                 "--late-cap", "0.5", "--seed", "3", "--no-progress", "--no-feedback", *LIMITS)
    assert "the grade policy changed (per day: 0 -> 0.25; cap: 1 -> 0.5; due date: none -> 2026-11-30 23:59 UTC)" \
        in first.stdout
    assert _finals(root) == {"ada": (8.0, 8.0), "bo": (7.0, 3.5)}  # bo: 34 h late, 2 started days x 25 %
    assert _canvas(root) == {"ada": "8", "bo": "3.5"}

    # the whole class graded again, no flag: the policy stands and nothing exported changes
    again = _cli(root, "class", CHAPTER, "--no-progress", "--no-feedback", *LIMITS)
    assert "policy changed" not in again.stdout and "WARNING" not in again.stdout
    assert _finals(root) == {"ada": (8.0, 8.0), "bo": (7.0, 3.5)} and _canvas(root) == {"ada": "8", "bo": "3.5"}

    # the formgrader's Autograde button for bo: nbgrader's own command, the course's configuration
    run_nbgrader(root, "autograde", CHAPTER, "--student", "bo", "--force")
    assert _finals(root)["bo"] == (7.0, 3.5) and _canvas(root)["bo"] == "3.5"

    # a policy change is explicit and says what it changes; applying it names the exported score it changes
    changed = _cli(root, "policy", CHAPTER, "--late-per-day", "0.1")
    assert "per day: 0.25 -> 0.1" in changed.stdout
    refreshed = _cli(root, "refresh", CHAPTER, "--no-feedback")
    assert "bo: 3.5 in " in refreshed.stdout and "now 5.6" in refreshed.stdout
    assert _finals(root)["bo"] == (7.0, 5.6) and _canvas(root) == {"ada": "8", "bo": "5.6"}


# ---------------------------------------------------------------------------- Generate Feedback
def _button_generate_feedback(root, student: str) -> dict:
    """What the formgrader's Generate Feedback button does: ``NbGraderAPI.generate_feedback`` in a
    server-like process with the course's configuration."""
    code = ("import json, sys\nfrom nbgrader.apps import NbGrader\nfrom nbgrader.apps.api import NbGraderAPI\n"
            "from nbgrader.coursedir import CourseDirectory\n"
            "app = NbGrader()\napp.load_config_file()\n"
            "api = NbGraderAPI(CourseDirectory(config=app.config), config=app.config)\n"
            "print(json.dumps(api.generate_feedback(sys.argv[1], sys.argv[2])))\n")
    proc = subprocess.run([sys.executable, "-c", code, CHAPTER, student], cwd=root, env=nbgrader_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "late-policy note was not added" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _late_block(page) -> str:
    text = page.read_text()
    start, end = text.find("<!-- course-late -->"), text.find("<!-- /course-late -->")
    assert 0 <= start < end and text.count("<!-- course-late -->") == 1, text[:3000]
    return text[start:end]


@pytest.mark.slow
def test_the_formgraders_generate_feedback_shows_the_students_late_note(tmp_path):
    """The button (nbgrader's own generate_feedback) gives a student the late note course feedback gives,
    from the assignment's stored policy: a policy changed since grading shows at the next press."""
    from autograder.records import term

    root = make_course(tmp_path / "course")
    submit(root, "bo", with_wrong_first_answer(solution(root, student="bo")))
    (root / "submitted" / "bo" / CHAPTER / "timestamp.txt").write_text("2026-12-02 10:00:00.000000 UTC")
    _cli(root, "class", CHAPTER, "--due", "2026-11-30 23:59 UTC", "--late-per-day", "0.25", "--late-cap", "0.5",
         "--seed", "3", "--no-progress", *LIMITS)
    page = root / "feedback" / "bo" / CHAPTER / f"{CHAPTER}.html"
    from_course = _late_block(page)
    row = json.loads((root / "grades" / CHAPTER / "grades.json").read_text())["students"][0]
    assert term.late_html(row["late"]).startswith(from_course) and "final score 3.5" in from_course

    page.unlink()
    assert _button_generate_feedback(root, "bo")["success"]
    assert _late_block(page) == from_course

    _cli(root, "policy", CHAPTER, "--late-per-day", "0.1")  # 2 started days x 10 % of 7 points: 1.4
    assert _button_generate_feedback(root, "bo")["success"]
    assert "1.4 points (20%) taken; final score 5.6" in _late_block(page)


# ---------------------------------------------------------------------------- no sandbox, no grading
def test_without_the_sandbox_no_route_grades_unless_told(monkeypatch, tmp_path):
    """The CLI refuses to run student code unsandboxed by default, as the formgrader and Gradescope do;
    ``--allow-unsandboxed``, ``c.Isolation.allow_unsandboxed`` or the environment allow it."""
    from autograder.engines import cli
    from autograder.isolation import sandbox
    from autograder.isolation import unsandboxed as isolation

    root = make_course(tmp_path / "course")
    submit(root, "ada", solution(root, student="ada"))
    monkeypatch.delenv(isolation.ENV, raising=False)
    monkeypatch.setattr(sandbox, "probe", lambda: "bubblewrap (bwrap) is not installed")
    graded = []
    monkeypatch.setattr("autograder.grading.grader.Grader.grade_all", lambda self, subs, progress: graded.append(subs))
    assert cli.main(["class", CHAPTER, "--course-root", str(root), "--no-progress"]) == 2
    assert not graded and not (root / "grades" / CHAPTER / "grades.json").exists()
    with pytest.raises(ValueError, match="unsandboxed.*--allow-unsandboxed"):
        isolation.check(root)
    assert isolation.check(root, True).endswith("allowed by --allow-unsandboxed")
    (root / "nbgrader_config.py").write_text((root / "nbgrader_config.py").read_text()
                                             + "\nc.Isolation.allow_unsandboxed = True\n")
    assert "c.Isolation.allow_unsandboxed" in isolation.check(root)
    monkeypatch.setenv(isolation.ENV, "1")
    assert isolation.ENV in isolation.check(tmp_path)

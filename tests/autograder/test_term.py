"""A whole term on one course root (issue 37), run as an instructor runs it, flags left at their defaults.

Two chapters and a lab are graded in turn by ``course-autograde class`` (each with the same due
date and a 10 %/day late policy); each assignment's grades land in ``grades/<assignment>/`` and
grading the next one leaves them byte for byte. bo submits Chapter 2 a day and a half late (two
started days: 20 % off) and Chapter 3 as late, but with a three-day extension (nothing off, and his
feedback says so). The lab's reflections are graded by hand (nbgrader's gradebook, as the
formgrader's boxes write it); then bo's lab is graded again through the formgrader's route
(``NbGraderAPI.autograde``) and ada's through ``class --student``: every hand grade and comment
must survive, nothing may be flagged for grading again, and ``refresh`` must carry them to the lab's
grades. Finally ``report`` across all three and ``term`` (term.csv, term-canvas.csv) must agree
with each assignment's grades.json, late policy and extension applied.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .course_dir import CHAPTER, formgrader_page, make_course, nbgrader_env, solution, submit

pytestmark = pytest.mark.slow
CH3 = "ch03_lr_scaling"
LAB = "lab05_parallelism_paradox"
TERM = (CHAPTER, CH3, LAB)
DUE = "2026-11-30 23:59 UTC"
ON_TIME, LATE = "2026-11-30 12:00:00.000000 UTC", "2026-12-02 10:00:00.000000 UTC"
HAND = {("ada", "lab05_act1_why"): (2.0, "Clear and complete."), ("ada", "lab05_act2_why"): (1.5, "Half right."),
        ("bo", "lab05_act1_why"): (1.0, "Names NVLink only."), ("bo", "lab05_part3_why"): (2.0, "")}


def _lab():
    from course.notebook_api.lab_session import labs

    return labs()["lab05"]


def _lock_choice() -> str:
    return sorted(_lab().lock_of("act1").options)[-1]


def _formgrader_page(root: Path, student: str) -> str:
    """The formgrader's page of ``student``'s lab: its HTMLExporter with the course's configuration."""
    return formgrader_page(root, LAB, root / "autograded" / student / LAB / f"{LAB}.ipynb")


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=root, env=nbgrader_env(),
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def _grade(root: Path, assignment: str, *extra: str) -> subprocess.CompletedProcess:
    return _cli(root, "class", assignment, "--no-progress", "--seed", "5", "--cell-timeout", "60",
                "--due", DUE, "--late-per-day", "0.1", *extra)


def _grades(root: Path, assignment: str) -> dict:
    data = json.loads((root / "grades" / assignment / "grades.json").read_text())
    return {r["student"]: r for r in data["students"]}


def _api_autograde(root: Path, assignment: str, student: str) -> dict:
    """The formgrader's Autograde button: ``NbGraderAPI.autograde`` with the course's configuration."""
    code = ("import json, sys\nfrom nbgrader.apps import NbGrader\nfrom nbgrader.apps.api import NbGraderAPI\n"
            "from nbgrader.coursedir import CourseDirectory\napp = NbGrader()\napp.load_config_file()\n"
            "api = NbGraderAPI(CourseDirectory(config=app.config), config=app.config)\n"
            "import logging\napi.log.setLevel(logging.DEBUG)  # a server started with --debug\n"
            "print(json.dumps(api.autograde(sys.argv[1], sys.argv[2])))\n")
    proc = subprocess.run([sys.executable, "-c", code, assignment, student], cwd=root, env=nbgrader_env(),
                          capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _hand_grade(root: Path) -> None:
    """What the formgrader's score and comment boxes write (its GradeHandler and CommentHandler)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for (student, gid), (points, comment) in HAND.items():
            grade = gb.find_grade(gid, LAB, LAB, student)
            assert grade.needs_manual_grade
            grade.manual_score, grade.needs_manual_grade = points, False
            gb.find_comment(gid, LAB, LAB, student).manual_comment = comment
        gb.db.commit()


def _gradebook_hand(root: Path) -> dict:
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for (student, gid) in HAND:
            grade = gb.find_grade(gid, LAB, LAB, student)
            comment = gb.find_comment(gid, LAB, LAB, student).manual_comment
            out[(student, gid)] = (grade.manual_score, comment or "", bool(grade.needs_manual_grade))
    return out


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("term") / "course", CHAPTER)
    for name in (CH3, LAB):
        make_course(root, name)
    stamps = {(CHAPTER, "ada"): ON_TIME, (CHAPTER, "bo"): LATE, (CH3, "ada"): ON_TIME, (CH3, "bo"): LATE,
              (LAB, "ada"): ON_TIME, (LAB, "bo"): ON_TIME}
    for (name, student), stamp in stamps.items():
        submit(root, student, solution(root, name, student=student), assignment=name)
        (root / "submitted" / student / name / "timestamp.txt").write_text(stamp)
    # bo locked a prediction in act 1 (the file the lock writes beside the notebook)
    (root / "submitted" / "bo" / LAB / "predictions.json").write_text(json.dumps(
        {"lab05/act1": {"value": _lock_choice(), "kind": "choice", "question": "q", "locked": True,
                        "locked_at": "2026-11-29T10:00:00+00:00"}}))
    seen = {}
    _grade(root, CHAPTER)
    seen["ch02 after ch02"] = (root / "grades" / CHAPTER / "grades.json").read_bytes()
    extend = _cli(root, "extend", CH3, "bo", "--days", "3", "--note", "medical")
    _grade(root, CH3)
    _grade(root, LAB)
    seen["ch02 after the term"] = (root / "grades" / CHAPTER / "grades.json").read_bytes()
    seen["lab before hand grading"] = _grades(root, LAB)
    _hand_grade(root)
    seen["formgrader regrade"] = _api_autograde(root, LAB, "bo")
    _cli(root, "class", LAB, "--student", "ada", "--no-progress", "--cell-timeout", "60")
    seen["hand after regrading"] = _gradebook_hand(root)
    # what plain `nbgrader autograde` (not the course's) does to a hand-graded part, which the formgrader's
    # box would not undo when the same score is typed again: refresh settles it
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        gb.find_grade("lab05_act1_why", LAB, LAB, "ada").needs_manual_grade = True
        gb.db.commit()
    seen["refresh"] = _cli(root, "refresh", LAB).stdout
    seen["hand after refresh"] = _gradebook_hand(root)
    seen["report"] = _cli(root, "report", *TERM, "--out", str(root / "report")).stdout
    seen["term"] = _cli(root, "term", "--canvas-column", f"{LAB}=Lab 5 (777)").stdout
    seen["extend"] = extend.stdout
    return root, seen


def test_each_assignment_keeps_its_own_grades(term):
    root, seen = term
    assert seen["ch02 after ch02"] == seen["ch02 after the term"]
    for name in TERM:
        folder = root / "grades" / name
        assert {"grades.json", "grades.csv", "canvas.csv"} <= {p.name for p in folder.iterdir()}
        assert json.loads((folder / "grades.json").read_text())["assignment"] == name
    assert not (root / "grades.json").exists() and not (root / "grades.csv").exists()


def test_late_policy_and_extension(term):
    root, seen = term
    ch02, ch03 = _grades(root, CHAPTER), _grades(root, CH3)
    assert ch02["bo"]["score"] > 0 and ch02["bo"]["late"]["days_charged"] == 2
    assert ch02["bo"]["late"]["final_score"] == pytest.approx(0.8 * ch02["bo"]["score"], abs=1e-3)
    assert ch02["ada"]["late"]["final_score"] == ch02["ada"]["score"]
    # the same lateness, within bo's three extra days
    assert ch03["bo"]["late"]["days_charged"] == 0 and ch03["bo"]["late"]["final_score"] == ch03["bo"]["score"]
    assert ch03["bo"]["late"]["due"].startswith("2026-12-03T23:59") and "medical" in ch03["bo"]["late"]["extension"]
    assert "extension" not in ch03["ada"]["late"]
    feedback = (root / "feedback" / "bo" / CH3 / f"{CH3}.html").read_text()
    assert "You have an extension (3 extra day(s)): due 2026-12-03 23:59 UTC (medical)" in feedback
    late_page = (root / "feedback" / "bo" / CHAPTER / f"{CHAPTER}.html").read_text()
    assert "Late by 2 started day(s)" in late_page
    assert "bo, ch03_lr_scaling: extension (3 extra day(s))" in seen["extend"]
    with open(root / "grades" / "extensions.csv", newline="") as fh:
        assert [(r["assignment"], r["student"], r["extra_days"]) for r in csv.DictReader(fh)] == [(CH3, "bo", "3")]


def test_the_formgrader_log_is_short_and_shows_nothing_hidden(term):
    """The Autograde button's log, even from a server at DEBUG: the summary line, no hidden test,
    no checksum warning for an honest submission."""
    _, seen = term
    log = seen["formgrader regrade"].get("log") or ""
    assert f"bo {LAB}: " in log and "points (bwrap+rlimits" in log and "probe seed" in log, log[-3000:]
    assert "has changed" not in log and "HIDDEN TESTS" not in log and "grade_in_kernel" not in log, log[-3000:]
    # nbgrader's converter names the student, assignment and notebook at DEBUG before grading starts;
    # nothing is logged at DEBUG while the submission is graded
    debug = [line for line in log.splitlines() if line.startswith("[DEBUG]")]
    odd = [line for line in debug if not re.match(r"\[DEBUG\] (Student|Assignment|Notebook|Applying preprocessor):", line)]
    assert not odd, odd
    assert len(log.splitlines()) < 30, log


def test_no_hand_grade_is_lost_by_regrading(term):
    root, seen = term
    assert seen["formgrader regrade"]["success"], seen["formgrader regrade"]
    for key, (points, comment) in HAND.items():
        assert seen["hand after regrading"][key] == (points, comment, False), key
    assert "0 parts still wait for grading by hand" not in seen["refresh"]  # bo's act2 and ada's part3 wait
    assert "1 part(s) graded by hand were still flagged" in seen["refresh"]
    assert seen["hand after refresh"] == seen["hand after regrading"]
    lab = _grades(root, LAB)
    for (student, gid), (points, comment) in HAND.items():
        part = next(p for p in lab[student]["parts"] if p["part"] == gid)
        assert part["points"] == points and part["status"] == "hand", part
        assert comment in part["reason"]
    before = seen["lab before hand grading"]
    for student, row in lab.items():
        judged = {p["part"]: p["points"] for p in before[student]["parts"] if p["status"] == "judged"}
        assert {p["part"]: p["points"] for p in row["parts"] if p["part"] in judged} == judged
        hand = sum(points for (who, _), (points, _c) in HAND.items() if who == student)
        assert row["score"] == pytest.approx(sum(judged.values()) + hand)


def test_report_and_term_export_agree_with_each_assignment(term):
    root, seen = term
    report = json.loads((root / "report" / "report.json").read_text())
    assert [a["assignment"] for a in report["assignments"]] == list(TERM)
    rows = list(csv.reader((root / "grades" / "term-canvas.csv").open()))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", CHAPTER, CH3, "Lab 5 (777)"]
    assert rows[1][:5] == ["Points Possible", "", "", "", ""]
    by_student = {r[3]: r[5:] for r in rows[2:]}
    assert set(by_student) == {"ada", "bo"}
    for index, name in enumerate(TERM):
        grades = _grades(root, name)
        assert rows[1][5 + index] == f"{max(r['max_score'] for r in grades.values()):g}"
        for student, row in grades.items():
            assert by_student[student][index] == f"{row['late']['final_score']:g}", (name, student)
    with open(root / "grades" / "term.csv", newline="") as fh:
        table = {r["student"]: r for r in csv.DictReader(fh)}
    for student in ("ada", "bo"):
        total = sum(_grades(root, n)[student]["late"]["final_score"] for n in TERM)
        assert float(table[student]["total"]) == pytest.approx(total, abs=1e-6)


def words(text: str, n: int = 6) -> str:
    """The first ``n`` words of ``text`` without Markdown's marks (as rendered HTML shows them)."""
    return " ".join(re.sub(r"[*$`_]", "", text).split()[:n])


def test_grader_and_student_read_the_question_and_the_locked_prediction(term):
    """A reflection asked by ``lab.ask`` and a lock are widgets in the notebook: the formgrader's page and
    the feedback show their text (the question, the options, the student's locked choice) instead."""
    import html as _html

    root, _ = term
    lab = _lab()
    spec = lab.lock_of("act1")
    prompt = lab.reflection("act1_why").prompt
    choice = _lock_choice()
    pages = {"formgrader": _formgrader_page(root, "bo"),
             "feedback": (root / "feedback" / "bo" / LAB / f"{LAB}.html").read_text()}
    plain = {where: " ".join(_html.unescape(re.sub(r"<[^>]+>", " ", page)).split()) for where, page in pages.items()}
    for where, text in plain.items():
        assert words(prompt) in re.sub(r"[*$`_]", "", text), (where, words(prompt))
        assert words(spec.question) in re.sub(r"[*$`_]", "", text), (where, words(spec.question))
        # named by its text: the student saw the options in their own order, so a letter means nothing here
        assert f"The student's prediction: “{words(spec.options[choice], 3)}" in re.sub(r"[*$`_]", "", text)
    ada = " ".join(_html.unescape(re.sub(r"<[^>]+>", " ", (root / "feedback" / "ada" / LAB / f"{LAB}.html")
                                         .read_text())).split())
    assert "The student's prediction: none locked." in ada

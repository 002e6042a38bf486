"""Late policy, Canvas CSV and regrading one student (``course-autograde class --student``)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from autograder.records import late, lms

from .course_dir import CHAPTER, make_course, nbgrader_env, release, solution, submit, with_wrong_first_answer

DAY = 86_400


@pytest.mark.parametrize("late_seconds, expected", [
    (0, (0, 0.0)),
    (14 * 60, (0, 0.0)),              # inside the 15-minute grace period
    (16 * 60, (1, 0.1)),              # past grace: the first started day
    (25 * 3600, (2, 0.2)),            # 25 h: two started days
    (10 * DAY, (10, 0.3)),            # 10 days would be 100 %: capped at 30 %
])
def test_policy_counts_started_days_after_grace_and_caps(late_seconds, expected):
    days, fraction = late.LatePolicy(per_day=0.1, grace_minutes=15, cap=0.3).fraction(late_seconds)
    assert (days, fraction) == (expected[0], pytest.approx(expected[1]))


@pytest.mark.parametrize("kwargs, name", [({"per_day": -0.1}, "per_day"), ({"cap": 1.5}, "cap"),
                                          ({"grace_minutes": -1}, "grace_minutes")])
def test_policy_rejects_bad_settings_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        late.LatePolicy(**kwargs)


def test_apply_takes_a_share_of_the_earned_score_and_records_it():
    due = late.parse_time("2026-11-30 23:59:00 UTC")
    results = [{"student": "ada", "score": 8.0}, {"student": "bo", "score": 5.0}, {"student": "cy", "score": 4.0}]
    stamps = {"ada": "2026-12-02 10:00:00.000000 UTC",  # 34 h late: 2 days
              "bo": "2026-11-30 23:00:00 UTC", "cy": None}
    out = {r["student"]: r["late"] for r in late.apply(results, stamps, due, late.LatePolicy(per_day=0.25))}
    assert out["ada"]["days_charged"] == 2 and out["ada"]["points_deducted"] == pytest.approx(4.0)
    assert out["ada"]["final_score"] == pytest.approx(4.0)
    assert out["bo"]["final_score"] == 5.0 and out["bo"]["note"] == "on time"
    assert out["cy"]["final_score"] == 4.0 and "not penalised" in out["cy"]["note"]
    assert results[0]["score"] == 8.0 and "late" not in results[0]  # input untouched


def test_parse_time_reads_nbgrader_timestamps_and_rejects_garbage():
    assert late.parse_time("2026-11-23 16:40:12.500000 UTC").isoformat() == "2026-11-23T16:40:12.500000+00:00"
    assert late.parse_time("2026-11-23T17:40:12+01:00").isoformat() == "2026-11-23T16:40:12+00:00"
    with pytest.raises(ValueError, match="timestamp"):
        late.parse_time("next tuesday-ish")


def test_canvas_csv_has_canvas_columns_points_row_and_roster_ids(tmp_path):
    roster = tmp_path / "export.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Quiz 1 (77)\n"
                      "    Points Possible,,,,,10\n"
                      "\"Lovelace, Ada\",1001,S-1,ada,Lab A,9\n")
    results = [{"student": "bo", "score": 5.0, "max_score": 8.0},
               {"student": "ada", "score": 8.0, "max_score": 8.0, "late": {"final_score": 6.4}}]
    path = lms.write_canvas(results, tmp_path / "canvas.csv", "Chapter 2 (12345)", roster)
    rows = list(csv.reader(path.open()))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Chapter 2 (12345)"]
    assert rows[1] == ["Points Possible", "", "", "", "", "8"]
    assert rows[2] == ["Lovelace, Ada", "1001", "S-1", "ada", "Lab A", "6.4"]  # after the late policy
    assert rows[3] == ["bo", "", "", "bo", "", "5"]


def test_roster_that_is_not_a_canvas_export_is_refused(tmp_path):
    bad = tmp_path / "people.csv"
    bad.write_text("name,email\nada,a@x\n")
    with pytest.raises(ValueError, match="Canvas gradebook export"):
        lms.read_roster(bad)


def _autograde(root, *args):
    proc = subprocess.run([sys.executable, "-m", "autograder", "class", CHAPTER, "--course-root", str(root),
                           "--out", str(root), "--no-progress", *args], cwd=root, env=nbgrader_env(),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _csv_rows(root, student):
    with open(root / "grades.csv") as fh:
        return [row for row in csv.DictReader(fh) if row["student"] == student]


@pytest.mark.slow
def test_regrade_one_student_with_late_policy_keeps_the_others(tmp_path):
    root = make_course(tmp_path / "course")
    submit(root, "ada", solution(root, student="ada"))
    submit(root, "bo", with_wrong_first_answer(solution(root, student="bo")))  # 1-point part wrong
    submit(root, "cy", release(root))
    # nbgrader's collect writes timestamp.txt in this format
    (root / "submitted" / "bo" / CHAPTER / "timestamp.txt").write_text("2026-12-02 10:00:00.000000 UTC")
    (root / "submitted" / "ada" / CHAPTER / "timestamp.txt").write_text("2026-11-30 12:00:00.000000 UTC")
    policy = ["--due", "2026-11-30 23:59 UTC", "--late-per-day", "0.25", "--late-cap", "0.5"]
    _autograde(root, "--seed", "3", *policy)
    before = json.loads((root / "grades.json").read_text())
    ada_rows, cy_rows = _csv_rows(root, "ada"), _csv_rows(root, "cy")
    scores = {s["student"]: (s["score"], s["late"]["final_score"]) for s in before["students"]}
    assert scores == {"ada": (8.0, 8.0), "bo": (7.0, 3.5), "cy": (0.0, 0.0)}  # bo: 34 h late, 2 x 25 %

    # bo's answer is fixed by hand and only bo is regraded; the others' rows stay byte for byte
    submit(root, "bo", solution(root, student="bo"))
    proc = _autograde(root, "--student", "bo", *policy, "--canvas-csv", str(root / "canvas.csv"),
                      "--canvas-assignment", "Chapter 2 (12345)")
    assert "graded 1 submissions" in proc.stdout
    after = json.loads((root / "grades.json").read_text())
    assert after["seed"] == 3 and after["regraded"] == ["bo"]  # the class's probe inputs again
    kept = {s["student"]: s for s in before["students"] if s["student"] != "bo"}
    assert {s["student"]: s for s in after["students"] if s["student"] != "bo"} == kept
    assert _csv_rows(root, "ada") == ada_rows and _csv_rows(root, "cy") == cy_rows
    bo = next(s for s in after["students"] if s["student"] == "bo")
    assert (bo["score"], bo["late"]["final_score"], bo["late"]["days_charged"]) == (8.0, 4.0, 2)
    canvas = list(csv.reader((root / "canvas.csv").open()))
    assert canvas[0][-1] == "Chapter 2 (12345)" and canvas[1][-1] == "8"
    assert {row[3]: row[-1] for row in canvas[2:]} == {"ada": "8", "bo": "4", "cy": "0"}


def test_regrading_a_student_without_a_submission_is_refused(tmp_path):
    root = tmp_path / "course"
    (root / "submitted" / "ada" / CHAPTER).mkdir(parents=True)
    proc = subprocess.run([sys.executable, "-m", "autograder", "class", CHAPTER, "--course-root", str(root),
                           "--out", str(root), "--student", "zed"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "student 'zed' has no submission" in proc.stderr


def test_apply_without_a_due_date_still_records_the_submission_time():
    results = [{"student": "ada", "score": 3.0}, {"student": "bo", "score": 2.0}, {"student": "cy", "score": 1.0}]
    stamps = {"ada": "2026-11-27 00:49:06.713387 UTC", "bo": None, "cy": "next tuesday-ish"}
    out = {r["student"]: r["late"] for r in late.apply(results, stamps, None, late.LatePolicy(per_day=0.1))}
    assert out["ada"]["submitted"] == "2026-11-27T00:49:06.713387+00:00"
    assert out["ada"]["note"] == "no due date" and out["ada"]["final_score"] == 3.0
    assert out["bo"]["submitted"] is None and out["cy"]["submitted"] is None
    assert all(o["days_charged"] == 0 and o["points_deducted"] == 0.0 for o in out.values())

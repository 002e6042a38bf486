"""The term's pieces without grading (issue 37): one student's row at a time, extensions in the late
policy, and the term's gradebook from several assignments' grades."""

from __future__ import annotations

import csv
import json

import pytest

from autograder.records import late, term


def _row(student, assignment, score, max_score=8.0):
    return {"student": student, "assignment": assignment, "status": "graded", "reason": "graded",
            "score": score, "max_score": max_score, "parts": []}


def test_one_row_at_a_time_keeps_the_others(tmp_path):
    term.record_rows(tmp_path, "ch02", [_row("ada", "ch02", 8.0)], {"assignment": "ch02", "seed": 1})
    term.record_rows(tmp_path, "ch02", [_row("bo", "ch02", 5.0)], {"assignment": "ch02", "shard": "formgrader"})
    folder = tmp_path / "grades" / "ch02"
    data = json.loads((folder / "grades.json").read_text())
    assert [(r["student"], r["score"]) for r in data["students"]] == [("ada", 8.0), ("bo", 5.0)]
    assert data["seed"] == 1 and data["shard"] == "formgrader"
    canvas = list(csv.reader((folder / "canvas.csv").open()))
    assert [r[3:] for r in canvas[2:]] == [["ada", "", "8"], ["bo", "", "5"]]


def test_names_cannot_leave_the_grades_folder(tmp_path):
    for bad in ("..", "../ch02", "a/b", ""):
        with pytest.raises(ValueError, match="assignment"):
            term.grades_dir(tmp_path, bad)


def test_extension_moves_one_students_due_date(tmp_path):
    term.set_extension(tmp_path, "ch03", "bo", extra_days=3, note="medical")
    term.set_extension(tmp_path, "ch03", "cy", due="2026-12-01 12:00 UTC")
    term.set_extension(tmp_path, "ch02", "bo", extra_days=1)
    with pytest.raises(ValueError, match="exactly one"):
        term.set_extension(tmp_path, "ch03", "dee", extra_days=1, due="2026-12-01")
    granted = term.read_extensions(tmp_path, "ch03")
    assert set(granted) == {"bo", "cy"}
    due = late.parse_time("2026-11-30 23:59 UTC")
    stamps = {s: "2026-12-02 10:00:00.000000 UTC" for s in ("ada", "bo", "cy")}  # 34 h after the class's due date
    rows = {r["student"]: r["late"] for r in late.apply([_row(s, "ch03", 10.0) for s in stamps], stamps, due,
                                                         late.LatePolicy(per_day=0.1), granted)}
    assert rows["ada"]["days_charged"] == 2 and rows["ada"]["final_score"] == 8.0 and "extension" not in rows["ada"]
    assert rows["bo"]["days_charged"] == 0 and rows["bo"]["final_score"] == 10.0
    assert rows["bo"]["due"].startswith("2026-12-03T23:59") and rows["bo"]["class_due"].startswith("2026-11-30")
    assert "medical" in rows["bo"]["note"]
    assert rows["cy"]["days_charged"] == 1 and rows["cy"]["final_score"] == 9.0  # 22 h after her own date
    term.set_extension(tmp_path, "ch03", "bo", remove=True)
    assert set(term.read_extensions(tmp_path, "ch03")) == {"cy"}


def test_late_note_in_feedback_is_replaced_not_repeated(tmp_path):
    page = tmp_path / "feedback" / "bo" / "ch02" / "ch02.html"
    page.parent.mkdir(parents=True)
    page.write_text("<html><body class='x'><h1>ch02</h1></body></html>")
    info = {"due": "2026-11-30T23:59:00+00:00", "submitted": "2026-12-02T10:00:00+00:00", "days_charged": 2,
            "points_deducted": 1.6, "fraction": 0.2, "final_score": 6.4}
    row = {"student": "bo", "late": info}
    term.add_late_notes(tmp_path, "ch02", [row])
    term.add_late_notes(tmp_path, "ch02", [row])
    text = page.read_text()
    assert text.count("course-late'") == 1 and "Late by 2 started day(s): 1.6 points (20%) taken" in text
    assert text.index("course-late") > text.index("<body")


def test_term_gradebook_has_one_column_per_assignment_and_no_made_up_zero(tmp_path):
    ch02 = [_row("ada", "ch02", 8.0), dict(_row("bo", "ch02", 8.0), late={"final_score": 6.4})]
    term.record_rows(tmp_path, "ch02", ch02, {"assignment": "ch02"})
    term.record_rows(tmp_path, "lab05", [_row("ada", "lab05", 10.0, 13.0)], {"assignment": "lab05"})
    paths = term.write_term(tmp_path, term.all_graded(tmp_path), tmp_path / "grades", {"lab05": "Lab 5 (777)"})
    rows = list(csv.reader(paths["canvas"].open()))
    assert rows[0][5:] == ["ch02", "Lab 5 (777)"] and rows[1][5:] == ["8", "13"]
    assert {r[3]: r[5:] for r in rows[2:]} == {"ada": ["8", "10"], "bo": ["6.4", ""]}
    with open(paths["term"], newline="") as fh:
        table = {r["student"]: r for r in csv.DictReader(fh)}
    assert table["bo"]["total"] == "6.4" and table["ada"]["total"] == "18" and table["ada"]["possible"] == "21"

"""The ``course`` command line (fast subcommands; build-release/check-release run in the slow suite)."""

from course.cli import main


def test_exercises_lists_registered_parts(capsys):
    assert main(["exercises", "ch02_gradient_accumulation"]) == 0
    out = capsys.readouterr().out
    assert "ch02_ex2_1 " in out and "ch02_ex2_4_required_accum_steps" in out and "ch03" not in out


def test_derivations_print_worked_numbers(capsys):
    assert main(["derivations", "ch02_gradient_accumulation"]) == 0
    out = capsys.readouterr().out
    assert "**64**" in out and "3150 ms" in out


def test_unknown_assignment_is_refused():
    import pytest

    with pytest.raises(SystemExit):
        main(["build-release", "no_such_assignment"])


def test_import_grades_sums_parts_per_exercise_into_the_ledger(tmp_path, monkeypatch, capsys):
    import json

    from course.ledger import Ledger
    from course.progress import summary

    monkeypatch.setenv("COURSE_LEDGER", str(tmp_path / "ledger.json"))
    grades = [{"student": "ada", "grade_id": "ch02_ex2_4", "points": 2, "max_points": 2},
              {"student": "ada", "grade_id": "ch02_ex2_4_required_accum_steps", "points": 0, "max_points": 2},
              {"student": "bob", "grade_id": "ch02_ex2_1", "points": 1, "max_points": 1}]
    (tmp_path / "grades.json").write_text(json.dumps(grades))
    assert main(["import-grades", str(tmp_path / "grades.json"), "--student", "ada"]) == 0
    entry = Ledger().get("ch02/ex2_4")
    assert entry["points"] == 2 and entry["max_points"] == 4
    assert Ledger().get("ch02/ex2_1") is None  # bob's row is not ada's
    assert summary()["chapters"]["ch02"]["points"] == 2.0

"""Red team: every attack earns zero undeserved points, gets a reason, and leaves honest work alone.

All cases share one class-mode run (``conftest.red_team``) with two workers, so each attack
runs next to another submission; the honest ones must still earn full marks.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

ATTACKERS = ["a_forkbomb", "c_alwayseq", "c_transformer", "c_excepthook", "c_monkeypatch", "d_sysexit",
             "d_osexit", "d_kill", "e_loop", "b_stubborn", "e_membomb", "f_write_outside", "f_read_source",
             "g_duplicated", "g_edited_metadata", "h_malformed", "h_missing"]
#: issue #13: forged harvests, the course package reached from the clean room, protocol tricks
CLEANROOM_ATTACKERS = ["i_harvest_replaced", "i_fake_module", "i_second_copy", "i_keys_from_disk",
                       "i_importlib", "i_kernel_stash", "i_forged_lines", "i_patched_json", "i_exit_tricks",
                       "i_cleanroom_hang", "i_registry_keys"]
ATTACKERS = ATTACKERS + CLEANROOM_ATTACKERS


def test_every_submission_has_a_row(red_team):
    assert sorted(red_team["rows"]) == sorted(ATTACKERS + ["a_honest", "m_honest", "g_huge_output",
                                                           "g_deleted_tests", "p_no_value_errors"])
    for row in red_team["rows"].values():
        assert row["parts"] and row["reason"]
        assert row["max_score"] == 8.0  # edited metadata cannot raise the maximum


@pytest.mark.parametrize("student", ATTACKERS)
def test_attack_earns_nothing(red_team, student):
    row = red_team["rows"][student]
    assert row["score"] == 0, row
    for part in row["parts"]:
        assert part["points"] == 0 and part["reason"], part


def test_honest_submissions_next_to_attacks_get_full_marks(red_team):
    for student in ("a_honest", "m_honest"):
        row = red_team["rows"][student]
        assert row["status"] == "graded" and row["score"] == row["max_score"] == 8.0, row


# (a custom exception handler does not fool nbgrader 0.9.6: its Execute preprocessor reads the
# error from the execute reply; the attack still earns nothing above)
@pytest.mark.parametrize("student", ["c_transformer", "c_monkeypatch"])
def test_in_kernel_tests_were_fooled_but_the_trusted_judge_was_not(red_team, student):
    """The same run shows plain nbgrader's verdict (kernel_points) > 0 where the judge gave 0."""
    parts = red_team["rows"][student]["parts"]
    assert any((p["kernel_points"] or 0) > 0 for p in parts)
    assert all(p["points"] == 0 for p in parts)


@pytest.mark.parametrize("student, status, words", [
    ("d_osexit", "kernel_died", "kernel stopped"),
    ("d_kill", "kernel_died", "kernel stopped"),
    ("b_stubborn", "timeout", "did not finish"),
    ("h_malformed", "unreadable", "could not be read"),
    ("h_missing", "missing", "no notebook named"),
])
def test_failure_has_a_reason_a_student_understands(red_team, student, status, words):
    row = red_team["rows"][student]
    assert row["status"] == status and words in row["reason"], row


def test_interruptible_loop_is_stopped_per_cell(red_team):
    assert "ran longer than 20 s" in red_team["rows"]["e_loop"]["reason"]


def test_fork_bomb_is_contained(red_team):
    assert red_team["rows"]["a_forkbomb"]["status"] != "graded" or \
        red_team["rows"]["a_forkbomb"]["score"] == 0


def test_nothing_written_outside_the_scratch_copy(red_team):
    for path in red_team["outside"]:
        assert not __import__("os").path.exists(path), path


def test_structural_edits_are_repaired_and_reported(red_team):
    rows = red_team["rows"]
    assert "was missing from your notebook; your answer was still checked" in rows["g_deleted_tests"]["reason"]
    assert rows["g_deleted_tests"]["score"] == 8.0  # right answers still count
    assert "appears 2 times" in rows["g_duplicated"]["reason"]
    assert "grading metadata of cell ch02_ex2_1 was changed" in rows["g_edited_metadata"]["reason"]


def test_huge_output_is_cut_and_the_work_still_counts(red_team):
    row = red_team["rows"]["g_huge_output"]
    assert row["score"] == 8.0 and "printed too much" in row["reason"]
    graded = red_team["root"] / "autograded" / "g_huge_output" / "ch02_gradient_accumulation"
    assert (graded / "ch02_gradient_accumulation.ipynb").stat().st_size < 5 * 2**20


def test_feedback_shows_derivations_and_no_hidden_tests(red_team):
    root = red_team["root"]
    for student in ("a_honest", "c_alwayseq", "d_sysexit", "p_no_value_errors", "i_forged_lines"):
        # (c_monkeypatch types grade_in_kernel itself)
        html = (root / "feedback" / student / "ch02_gradient_accumulation"
                / "ch02_gradient_accumulation.html").read_text()
        assert "Worked derivation" in html
        # (a traceback of the student's own cell may show; the hidden tests' never does)
        for secret in ("BEGIN HIDDEN TESTS", "grade_in_kernel", "AssertionError", "_grade(",
                       "CLEANROOM-RESULT", "all tests passed", "every hidden test"):
            assert secret not in html, (student, secret)


def test_honest_control_earns_full_points_under_both_graders(red_team):
    """The trusted judge and plain nbgrader's in-kernel test cells agree on honest work."""
    for student in ("a_honest", "m_honest"):
        for part in red_team["rows"][student]["parts"]:
            assert part["points"] == part["kernel_points"] == part["max_points"], (student, part)


@pytest.mark.parametrize("student", ["i_second_copy", "i_kernel_stash"])
def test_second_copy_and_stash_fool_the_kernel_but_not_the_clean_room(red_team, student):
    """In the kernel the copied package is not poisoned, so plain nbgrader gives the Build points;
    the clean room has no course package under any name, so the judge gives none."""
    parts = {p["part"]: p for p in red_team["rows"][student]["parts"]}
    assert parts["ch02_ex2_4"]["kernel_points"] == 2.0
    assert parts["ch02_ex2_4"]["points"] == 0 and "raises" in parts["ch02_ex2_4"]["reason"]


def test_every_attack_has_a_reason_per_part(red_team):
    for student in CLEANROOM_ATTACKERS:
        for part in red_team["rows"][student]["parts"]:
            assert part["status"] == "judged" and len(part["reason"]) > 10, (student, part)


def test_clean_room_that_never_finishes_says_so(red_team):
    """The cell that ignores the alarm is stopped and named; the rest of the room goes on (issue 26)."""
    from .course_dir import grade_id, release

    cells = release(red_team["root"]).cells
    number = 1 + next(i for i, c in enumerate(cells) if grade_id(c) == "ch02_ex2_4_required_accum_steps_answer")
    row = red_team["rows"]["i_cleanroom_hang"]
    assert f"cell {number} never finished when your code was run again" in row["reason"], row["reason"]
    assert row["score"] == 0


def test_partial_credit_per_check_in_grades_and_feedback(red_team):
    """A right formula without the ValueError checks: 3 of the 4 equal shares of 2 points = 1.5."""
    row = red_team["rows"]["p_no_value_errors"]
    parts = {p["part"]: p for p in row["parts"]}
    assert row["score"] == 7.5 and parts["ch02_ex2_4"]["points"] == 1.5
    checks = {c["check"]: c for c in parts["ch02_ex2_4"]["checks"]}
    # this student's prompt shows a worked example of their own: the workbook's is a "fixed example" here
    assert sorted(checks) == ["edge cases", "fixed examples", "invalid inputs", "random inputs"]
    assert [checks[k]["points"] for k in ("fixed examples", "edge cases", "random inputs")] == [0.5] * 3
    assert checks["invalid inputs"]["points"] == 0 and "does not raise ValueError" in checks["invalid inputs"]["reason"]
    assert "does not raise ValueError" in parts["ch02_ex2_4"]["reason"]
    html = (red_team["root"] / "feedback" / "p_no_value_errors" / "ch02_gradient_accumulation"
            / "ch02_gradient_accumulation.html").read_text()
    assert "1.5 of 2 points" in html and "invalid inputs: 0 of 0.5 points" in html
    assert "The visible check ran only the worked example" in html

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

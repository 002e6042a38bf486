"""``course variant`` prints keys only in an instructor's course root; a student's install sees its own prompts."""

from __future__ import annotations

import json
import math

import pytest

from course.activities import EXERCISES
from course.assess.spec import spec_for
from course.assess.variants import instructor_root, variant_of
from course.cli import main

NAME = "ch02_gradient_accumulation"


def _steps(student):
    spec = spec_for(EXERCISES["2.1"], variant_of(NAME, student))
    return spec, math.ceil(spec["target_batch"] / (spec["micro_batch"] * spec["dp"]))


def _course_root(tmp_path, marker):
    root = tmp_path / "course"
    (root / "source").mkdir(parents=True)
    (root / marker).write_text("")
    (root / "submitted").mkdir()
    return root


@pytest.mark.parametrize("marker", ["gradebook.db", "nbgrader_config.py"])
def test_a_course_root_and_its_subfolders_print_any_students_keys(tmp_path, monkeypatch, capsys, marker):
    root = _course_root(tmp_path, marker)
    monkeypatch.chdir(root / "submitted")
    assert instructor_root() == root.resolve()
    assert main(["variant", NAME, "--student", "bob", "--derivations"]) == 0
    out = capsys.readouterr().out
    spec, steps = _steps("bob")
    assert f"Target effective batch {spec['target_batch']} sequences" in out
    assert f'key ch02_ex2_1: {json.dumps({"accum_steps": steps})}' in out


def test_source_alone_is_not_a_course_root(tmp_path):
    (tmp_path / "source").mkdir()
    assert instructor_root(str(tmp_path)) is None


def test_a_students_install_prints_only_their_own_prompts(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COURSE_STUDENT", "ada")
    assert main(["variant", NAME, "--derivations"]) == 0
    out = capsys.readouterr().out
    spec, steps = _steps("ada")
    assert f"Target effective batch {spec['target_batch']} sequences" in out  # ada's own prompt
    assert "key ch02" not in out and "numbers: " not in out and "Worked derivation" not in out
    assert "keys and worked answers are printed only in an instructor's course root" in out


def test_a_students_install_refuses_another_students_numbers_and_derivations(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COURSE_STUDENT", "ada")
    with pytest.raises(SystemExit, match="only your own"):
        main(["variant", NAME, "--student", "bob"])
    with pytest.raises(SystemExit, match="course root"):
        main(["derivations", NAME])
    assert "key ch02" not in capsys.readouterr().out


def test_a_students_lab_report_has_prompts_and_no_keys(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COURSE_STUDENT", "ada")
    assert main(["variant", "lab05_parallelism_paradox", "--derivations"]) == 0
    out = capsys.readouterr().out
    assert "## " in out and "key lab05" not in out and "numbers: " not in out

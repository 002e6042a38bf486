"""Per-student variants under both graders: honest work earns full points, a copied notebook earns 0.

One course root with chapter 2: ``ada`` and ``bob`` submit the reference solution written
with their own numbers; ``cy`` submits ada's notebook unchanged. Plain ``nbgrader autograde``
grades them first (the hidden tests find the student from ``autograded/<student>/``), then
``course-autograde`` grades the same submissions (the variant comes from the submission's
folder, never from the kernel) and the two must agree on every part.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from course.notebook_api import REGISTRY
from course.activities import EXERCISES
from course.assess.spec import spec_for
from course.assess.variants import variant_of

from .nbgrader_course import NbgraderCourse, solution_submission

NAME = "ch02_gradient_accumulation"


def _key(gid: str, student: str):
    part = REGISTRY[gid]
    ex = EXERCISES[part.exercise]
    return part.value.key(spec_for(ex, variant_of(NAME, student)))


@pytest.fixture(scope="module")
def both_graders(tmp_path_factory):
    root = tmp_path_factory.mktemp("variants")
    course = NbgraderCourse(root, [NAME], ledger=root / "ledger.json")
    honest_ada = solution_submission(course, NAME, "ada")
    course.submit("ada", NAME, honest_ada)
    course.submit("bob", NAME, solution_submission(course, NAME, "bob"))
    course.submit("cy", NAME, honest_ada)  # a copied answer sheet
    course.autograde(NAME)
    nbgrader = {s: course.grades(NAME, s) for s in ("ada", "bob", "cy")}
    out = root / "out"
    proc = subprocess.run([sys.executable, "-m", "autograder", "class", NAME, "--course-root", str(root),
                           "--out", str(out), "--seed", "11", "--workers", "1", "--no-progress", "--no-feedback"],
                          capture_output=True, text=True, timeout=1200, env=course.env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["student"]: r for r in json.loads((out / "grades.json").read_text())["students"]}
    return nbgrader, rows


def _value_parts():
    return sorted(gid for gid, p in REGISTRY.items() if p.assignment == NAME and p.function is None)


def test_the_students_really_have_different_numbers():
    varied = [gid for gid in _value_parts() if _key(gid, "ada") != _key(gid, "cy")]
    assert len(varied) >= 4, varied  # otherwise the copy test below would prove little


@pytest.mark.slow
@pytest.mark.parametrize("student", ["ada", "bob"])
def test_honest_answers_earn_full_points_under_both_graders(both_graders, student):
    nbgrader, rows = both_graders
    auto = {gid: g for gid, g in nbgrader[student].items() if gid in REGISTRY}
    assert auto and all(score == top for score, top in auto.values()), auto
    parts = {p["part"]: p for p in rows[student]["parts"]}
    assert all(parts[gid]["points"] == parts[gid]["max_points"] for gid in auto), parts


@pytest.mark.slow
def test_a_copied_notebook_earns_nothing_on_the_varied_parts(both_graders):
    nbgrader, rows = both_graders
    parts = {p["part"]: p for p in rows["cy"]["parts"]}
    varied = [gid for gid in _value_parts() if _key(gid, "ada") != _key(gid, "cy")]
    for gid in varied:
        assert nbgrader["cy"][gid][0] == 0, gid
        assert parts[gid]["points"] == 0, (gid, parts[gid])
    # the copy is graded against cy's own numbers, not thrown out: unchanged keys still count
    same = [gid for gid in _value_parts() if gid not in varied]
    assert all(parts[gid]["points"] == parts[gid]["max_points"] for gid in same)


@pytest.mark.slow
def test_plain_nbgrader_and_course_autograde_agree_on_every_part(both_graders):
    nbgrader, rows = both_graders
    for student in ("ada", "bob", "cy"):
        parts = {p["part"]: p["points"] for p in rows[student]["parts"] if p["part"] in REGISTRY}
        assert parts and parts == {gid: nbgrader[student][gid][0] for gid in parts}, student


@pytest.mark.slow
def test_grades_json_records_each_students_variant(both_graders):
    _, rows = both_graders
    for student in ("ada", "bob", "cy"):
        assert rows[student]["variant"] == variant_of(NAME, student)
    assert len({rows[s]["variant"] for s in rows}) == 3

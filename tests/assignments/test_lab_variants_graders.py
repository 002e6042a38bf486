"""The labs' per-student variants under both graders: honest work earns every automatic point,
a copied notebook earns 0 on the varied questions, and the two graders agree on every part.

One course root with the three labs. ``ada`` and ``bob`` submit the reference solution written
with their own numbers (and their locked predictions); ``cy`` submits ada's notebook and
predictions unchanged. Plain ``nbgrader autograde`` grades them (the hidden tests find the
student from ``autograded/<student>/``), then ``course-autograde`` grades the same submissions
(the variant comes from the submission's folder, never from the kernel).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from course.notebook_api import REGISTRY
from course.assess.variants import variant_of
from course.notebook_api.lab_session import labs

from tests.notebooks.test_labs import write_predictions

from .nbgrader_course import NbgraderCourse, solution_submission

LABS = {lab.name: lab for lab in labs().values()}
STUDENTS = ("ada", "bob", "cy")


def _key(name: str, answer_id: str, student: str):
    lab = LABS[name]
    return lab.key(answer_id, lab.spec_for(variant_of(name, student)))


def _varied(name: str):
    """Grade ids of the questions whose key differs between ada and cy."""
    lab = LABS[name]
    return sorted(lab.grade_id(a.id) for act in lab.acts for a in act.answers
                  if _key(name, a.id, "ada") != _key(name, a.id, "cy"))


@pytest.fixture(scope="module")
def both_graders(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab_variants")
    course = NbgraderCourse(root, list(LABS), ledger=root / "ledger.json")
    results = {}
    for name in LABS:
        for student in ("ada", "bob"):
            course.submit(student, name, solution_submission(course, name, student))
            write_predictions(root / "submitted" / student / name, name)
        shutil.copytree(root / "submitted" / "ada" / name, root / "submitted" / "cy" / name)  # the copy
    course.autograde()  # every lab and student in one nbgrader process
    for name in LABS:
        nbgrader = {s: course.grades(name, s) for s in STUDENTS}
        out = root / "out" / name
        proc = subprocess.run([sys.executable, "-m", "autograder", "class", name, "--course-root", str(root),
                               "--out", str(out), "--seed", "3", "--workers", "2", "--no-progress",
                               "--no-feedback"],
                              capture_output=True, text=True, timeout=1200, env=course.env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        rows = {r["student"]: r for r in json.loads((out / "grades.json").read_text())["students"]}
        results[name] = (nbgrader, rows)
    return results


def test_ada_and_cy_really_have_different_numbers():
    for name in LABS:
        numeric = [a.id for act in LABS[name].acts for a in act.answers if a.kind == "derive"]
        assert len(_varied(name)) == len(numeric) > 0, name  # otherwise the copy test proves little


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LABS))
@pytest.mark.parametrize("student", ["ada", "bob"])
def test_honest_answers_earn_every_automatic_point_under_both_graders(both_graders, name, student):
    nbgrader, rows = both_graders[name]
    auto = {gid: g for gid, g in nbgrader[student].items() if gid in REGISTRY}
    assert auto and all(score == top for score, top in auto.values()), auto
    parts = {p["part"]: p for p in rows[student]["parts"]}
    assert all(parts[gid]["points"] == parts[gid]["max_points"] for gid in auto), parts


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LABS))
def test_a_copied_lab_earns_nothing_on_the_varied_questions(both_graders, name):
    nbgrader, rows = both_graders[name]
    parts = {p["part"]: p for p in rows["cy"]["parts"]}
    for gid in _varied(name):
        assert nbgrader["cy"][gid][0] == 0, gid
        assert parts[gid]["points"] == 0, (gid, parts[gid])
    # the rest (locks, the choice question) is graded as for anyone else: the copy is not thrown out
    same = [gid for gid in parts if gid in REGISTRY and gid not in _varied(name)]
    assert same and all(parts[gid]["points"] == parts[gid]["max_points"] for gid in same)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LABS))
def test_plain_nbgrader_and_course_autograde_agree_on_every_part(both_graders, name):
    nbgrader, rows = both_graders[name]
    for student in STUDENTS:
        parts = {p["part"]: p["points"] for p in rows[student]["parts"] if p["part"] in REGISTRY}
        assert parts and parts == {gid: nbgrader[student][gid][0] for gid in parts}, student


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LABS))
def test_grades_json_records_each_students_variant(both_graders, name):
    _, rows = both_graders[name]
    assert {s: rows[s]["variant"] for s in STUDENTS} == {s: variant_of(name, s) for s in STUDENTS}

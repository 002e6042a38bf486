"""Workbook chapter 10 (mixture of experts): its keys against the core, its notebooks, both graders,
the Gradescope bundle and the class report.

Fast tests check the declaration: seven exercises, every kind, the keys recomputed here from
``course.core`` the way each prompt states the problem (so they stay right when the core's pricing
changes), the Build's invalid inputs. The slow ones share one course root: plain ``nbgrader
autograde`` grades an honest student (ada), a second honest one (bob), a copy of ada's notebook (cy),
the untouched release and a wrong-but-well-formed notebook; ``course-autograde class`` grades the
same submissions and every part must score the same; then the Gradescope bundle of chapter 10
grades ada and cy as class mode did, and ``course-autograde report`` covers the chapter.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from course import core
from course.activities import EXERCISES, SYLLABUS
from course.assess.spec import spec_for
from course.assess.variants import variant_of
from course.notebook_api import REGISTRY

from .conftest import wrong_submission
from .nbgrader_course import ROOT, NbgraderCourse, solution_submission

NAME = "ch10_mixture_of_experts"
STUDENTS = [None] + [f"student{i:02d}" for i in range(30)]
NUMBERS = ("10.1", "10.2", "10.3", "10.4", "10.5", "10.6", "10.7")


def _spec(number, student):
    ex = EXERCISES[number]
    return spec_for(ex, variant_of(NAME, student))


def _key(number, student, suffix=""):
    part = REGISTRY[EXERCISES[number].grade_id(suffix)]
    return part.value.key(_spec(number, student))


# --- the declaration -------------------------------------------------------------------------

def test_seven_exercises_of_all_five_kinds_and_the_mastery_total():
    chapter = SYLLABUS.by_name[NAME]
    assert [ex.number for ex in chapter.exercises] == list(NUMBERS)
    assert {ex.kind for ex in chapter.exercises} == {"Derive", "Trace", "Build", "Debug", "Design"}
    # the index's mastery counts every workbook exercise: 65 through chapter 10 and chapter 11's seven
    assert len(EXERCISES) == 65 + len(SYLLABUS.by_name["ch11_collectives_by_hand"].exercises) == 72
    assert REGISTRY[EXERCISES["10.5"].grade_id()].function.name == "all_to_all_time"
    assert REGISTRY[EXERCISES["10.6"].grade_id("_fix")].function.name == "expert_capacity"


@pytest.mark.parametrize("student", STUDENTS)
def test_derive_keys_are_the_core_s_numbers(student):
    s = _spec("10.1", student)
    total, active = core.moe_mlp_params(s["hidden"], s["expert_ffn"], s["experts"], s["top_k"], s["shared"])
    assert _key("10.1", student) == pytest.approx({"total_b": s["layers"] * total / 1e9,
                                                   "active_b": s["layers"] * active / 1e9})
    # the formula the concept cell states, by hand: router + experts (3 h f each)
    one = 3 * s["hidden"] * s["expert_ffn"]
    assert total == s["hidden"] * s["experts"] + (s["experts"] + s["shared"]) * one
    assert active == s["hidden"] * s["experts"] + (s["top_k"] + s["shared"]) * one

    s = _spec("10.2", student)
    per_gpu = core.expert_params_per_gpu(s["expert_params_b"] * 1e9, s["ep"], 1, s["pp"])
    edp = s["gpus_per_stage"] // s["ep"]
    assert _key("10.2", student) == pytest.approx({
        "params_per_gpu_b": per_gpu / 1e9,
        "state_gb": core.model_state_bytes(per_gpu, zero_stage=1, dp=edp) / 1e9})

    s = _spec("10.3", student)
    intra, inter = core.moe_dispatch_bytes_per_token(s["hidden"], s["top_k"], s["ep"], 8,
                                                     bytes_per_element=s["bytes_per_element"])
    layer = core.moe_all_to_all_time_per_layer(s["tokens"], s["hidden"], s["top_k"], s["ep"], 8,
                                               s["nvlink_gbs"] * 1e9, s["network_gbs"] * 1e9,
                                               bytes_per_element=s["bytes_per_element"])
    assert _key("10.3", student) == pytest.approx({"network_mb": s["tokens"] * inter / 1e6, "layer_ms": layer * 1e3})
    assert intra > 0 and inter > intra  # EP leaves the node in every variant: the network carries most copies


@pytest.mark.parametrize("student", STUDENTS)
def test_trace_and_design_keys_are_the_core_s_numbers(student):
    s = _spec("10.4", student)
    experts = len(s["loads"])
    assert sum(s["loads"]) == s["tokens"] * s["top_k"] and min(s["loads"]) >= 0
    capacity = core.expert_capacity(s["tokens"], s["top_k"], experts, s["capacity_factor"])
    assert capacity == math.ceil(s["capacity_factor"] * s["tokens"] * s["top_k"] / experts)
    assert _key("10.4", student) == pytest.approx({
        "capacity": capacity, "dropped": sum(max(0, x - capacity) for x in s["loads"]),
        "busiest_ratio": max(s["loads"]) * experts / sum(s["loads"])})

    s = _spec("10.7", student)
    times = {}
    for label, (kind, ep, limit) in zip("ABCD", s["candidates"]):
        extra = ({"per_node": True} if kind == "per_node" else
                 {"groups": ep // 8, "group_topk": limit} if kind == "limited" else {})
        times[label] = core.moe_all_to_all_time_per_layer(s["tokens"], s["hidden"], s["top_k"], ep, 8,
                                                          s["nvlink_gbs"] * 1e9, s["network_gbs"] * 1e9, **extra)
    key = _key("10.7", student)
    assert key["order"] == sorted(times, key=times.get)
    assert key["fastest_us"] == pytest.approx(min(times.values()) * 1e6)
    ranked = sorted(times.values())
    assert all(b > 1.05 * a for a, b in zip(ranked, ranked[1:]))  # no near tie decides the order


def test_the_build_reference_is_the_core_s_all_to_all_and_invalid_inputs_are_invalid_for_the_core():
    part = REGISTRY[EXERCISES["10.5"].grade_id()]
    probes = part.probes(7)
    rng = random.Random(0)
    for args in rng.sample(probes["valid"], 10):
        M_gb, N, bw_gbs, latency_us = args
        expected = core.all_to_all_time(M_gb * 1e9, N, bw_gbs * 1e9, latency_us * 1e-6) * 1e3
        assert part.function.reference(*args) == pytest.approx(expected)
    assert len(probes["invalid"]) >= 6
    for args in probes["invalid"]:
        M_gb, N, bw_gbs, latency_us = args
        with pytest.raises(ValueError):
            core.all_to_all_time(M_gb * 1e9, N, bw_gbs * 1e9, latency_us * 1e-6)


def test_a_build_without_validation_loses_the_invalid_input_share():
    part = REGISTRY[EXERCISES["10.5"].grade_id()]

    def all_to_all_time(M_gb, N, bw_gbs, latency_us):
        return float((N - 1) * latency_us / 1000 + (N - 1) / N * M_gb / bw_gbs * 1000)

    verdict = part.grade({"all_to_all_time": all_to_all_time}, 3)
    assert 0 < verdict.score < 1 and "invalid inputs" in verdict.reason


def test_every_derivation_renders_with_the_students_own_numbers():
    from course.assess.spec import derivation_markdown

    for number in NUMBERS:
        ex = EXERCISES[number]
        texts = {derivation_markdown(ex, variant_of(NAME, s)) for s in STUDENTS[:8]}
        assert len(texts) > 1 and not any("could not be computed" in t for t in texts), number


# --- notebooks --------------------------------------------------------------------------------

def test_source_notebook_headings_and_graded_cells_match_the_registry():
    nb = nbformat.read(str(ROOT / "source" / NAME / f"{NAME}.ipynb"), 4)
    headings = [c.source.splitlines()[0] for c in nb.cells if c.source.startswith("### Exercise")]
    assert [h.split(" \u00b7 ")[0] for h in headings] == [f"### Exercise {n}" for n in NUMBERS]
    graded = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"] for c in nb.cells
              if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"}
    assert graded == {gid: p.points for gid, p in REGISTRY.items() if p.assignment == NAME}


def test_release_hides_solutions_hidden_tests_and_derivations():
    text = (ROOT / "release" / NAME / f"{NAME}.ipynb").read_text()
    for secret in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "grade_in_kernel", "Worked derivation",
                   "tokens * top_k / experts"):
        assert secret not in text


# --- slow: both graders, Gradescope, the class report --------------------------------------------

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("ch10")
    course = NbgraderCourse(root, [NAME], ledger=root / "ledger.json")
    ada = solution_submission(course, NAME, "ada")
    course.submit("ada", NAME, ada)
    course.submit("bob", NAME, solution_submission(course, NAME, "bob"))
    course.submit("cy", NAME, ada)  # a copied answer sheet
    course.submit("untouched", NAME, course.release_notebook(NAME))
    wrong, mutated = wrong_submission(course, NAME)
    course.submit("wrong", NAME, wrong)
    course.autograde(NAME)
    students = ("ada", "bob", "cy", "untouched", "wrong")
    nbgrader = {s: course.grades(NAME, s) for s in students}
    out = root / "out"
    proc = subprocess.run([sys.executable, "-m", "autograder", "class", NAME, "--course-root", str(root),
                           "--out", str(out), "--seed", "11", "--workers", "2", "--no-progress", "--no-feedback"],
                          capture_output=True, text=True, timeout=1500, env=course.env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["student"]: r for r in json.loads((out / "grades.json").read_text())["students"]}
    return {"course": course, "root": root, "nbgrader": nbgrader, "rows": rows, "mutated": mutated, "out": out}


@pytest.mark.slow
def test_plain_nbgrader_and_course_autograde_agree_on_every_part(graded):
    for student, row in graded["rows"].items():
        parts = {p["part"]: p["points"] for p in row["parts"] if p["part"] in REGISTRY}
        assert parts and parts == {gid: graded["nbgrader"][student][gid][0] for gid in parts}, student


@pytest.mark.slow
def test_honest_full_untouched_zero_wrong_loses_exactly_its_points(graded):
    auto = lambda s: {gid: g for gid, g in graded["nbgrader"][s].items() if gid in REGISTRY}  # noqa: E731 -- a one-line filter reads better than a def here
    for student in ("ada", "bob"):
        assert len(auto(student)) == sum(1 for p in REGISTRY.values() if p.assignment == NAME)
        assert all(score == top for score, top in auto(student).values()), (student, auto(student))
    assert all(score == 0 for score, _ in auto("untouched").values())
    assert graded["mutated"]
    for gid, (score, top) in auto("wrong").items():
        assert score == (0 if gid in graded["mutated"] else top), gid


@pytest.mark.slow
def test_a_copied_notebook_earns_nothing_on_the_varied_parts(graded):
    varied = [gid for gid, p in REGISTRY.items() if p.assignment == NAME and p.function is None
              and p.value.key(spec_for(EXERCISES[p.exercise], variant_of(NAME, "ada")))
              != p.value.key(spec_for(EXERCISES[p.exercise], variant_of(NAME, "cy")))]
    assert len(varied) >= 5, varied
    parts = {p["part"]: p for p in graded["rows"]["cy"]["parts"]}
    for gid in varied:
        assert graded["nbgrader"]["cy"][gid][0] == 0 and parts[gid]["points"] == 0, gid
    functions = [gid for gid, p in REGISTRY.items() if p.assignment == NAME and p.function is not None]
    assert all(parts[gid]["points"] == parts[gid]["max_points"] for gid in functions)  # a right function is right


@pytest.mark.slow
def test_the_gradescope_bundle_grades_chapter_10_as_class_mode_does(graded, tmp_path):
    root = graded["root"]
    bundle = tmp_path / "autograder.zip"
    proc = subprocess.run([sys.executable, "-m", "autograder", "gradescope", NAME, "--course-root", str(root),
                           "--out", str(bundle), "--seed", "11"], capture_output=True, text=True, timeout=900,
                          env=graded["course"].env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for student in ("ada", "cy"):
        gs = tmp_path / student
        with zipfile.ZipFile(bundle) as zf:
            zf.extractall(gs / "source")
        shutil.copy(gs / "source" / "run_autograder", gs / "run_autograder")
        (gs / "run_autograder").chmod(0o755)
        (gs / "submission").mkdir()
        shutil.copy(root / "submitted" / student / NAME / f"{NAME}.ipynb", gs / "submission" / f"{NAME}.ipynb")
        (gs / "submission_metadata.json").write_text(json.dumps({
            "id": 1, "created_at": "2026-11-20T14:22:32.365935-07:00",
            "assignment": {"id": 2, "title": "Chapter 10", "total_points": "12.0"},
            "users": [{"email": student, "id": 7, "name": student.title()}], "previous_submissions": []}))
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "AUTOGRADER_ROOT": str(gs),
               "AUTOGRADER_PYTHON": sys.executable, "HOME": str(gs)}
        run = subprocess.run([str(gs / "run_autograder")], cwd=gs, env=env, capture_output=True, text=True,
                             timeout=900)
        assert run.returncode == 0, run.stderr[-3000:]
        results = json.loads((gs / "results" / "results.json").read_text())
        row = graded["rows"][student]
        assert results["score"] == pytest.approx(row["score"]), student
        by_part = {t["name"].split()[-1]: t["score"] for t in results["tests"]}
        assert by_part == pytest.approx({p["part"]: p["points"] for p in row["parts"]}), student


@pytest.mark.slow
def test_the_class_report_covers_chapter_10(graded):
    report_dir = graded["root"] / "report"
    proc = subprocess.run([sys.executable, "-m", "autograder", "report", NAME, "--course-root",
                           str(graded["root"]), "--grades", str(graded["out"] / "grades.json"),
                           "--out", str(report_dir)], capture_output=True, text=True, timeout=600,
                          env=graded["course"].env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((report_dir / "report.json").read_text())
    (chapter,) = report["assignments"]
    listed = {p["grade_id"] for p in chapter["parts"]}
    assert listed == {gid for gid, p in REGISTRY.items() if p.assignment == NAME}


@pytest.mark.slow
def test_generated_feedback_has_each_students_derivations_and_no_hidden_tests(graded):
    import re

    graded["course"].generate_feedback(NAME)
    for student in ("ada", "wrong"):
        html = (graded["root"] / "feedback" / student / NAME / f"{NAME}.html").read_text()
        for number in NUMBERS:
            assert f"Worked derivation, exercise {number}" in html, (student, number)
        assert "grade_in_kernel" not in html and "BEGIN HIDDEN TESTS" not in html
        # 10.6's worked answer names the buggy line of this student's own listing
        line = _key("10.6", student, "_line")["buggy_line"]
        assert re.search(rf"Line <strong>{line}</strong> \(<code>per_expert = tokens / experts</code>\)", html), student

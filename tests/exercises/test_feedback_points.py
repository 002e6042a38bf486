"""Partial credit is said in the units the cell is graded in (issue 36: "earns 3 of 4 checks" stood on a
3-point cell): the reason names the checks passed and then the points earned of the cell's points."""

from __future__ import annotations

import dataclasses

from course.activities import REGISTRY
from course.assess import codes
from course.assess.kinds import partial_verdict
from course.assess.registry import safe_judge


def _function_part(points):
    gid = next(g for g, p in REGISTRY.items() if p.function is not None)
    findings = [("worked example", 1, []), ("edge cases", 3, []), ("random inputs", 20, []),
                ("invalid inputs", 4, [(codes.NO_VALUE_ERROR, "no ValueError")] * 4)]
    return dataclasses.replace(REGISTRY[gid], points=points, judge=lambda harvested, seed: partial_verdict("f", findings))


def test_a_three_point_cell_says_what_it_earns_in_points():
    verdict = safe_judge(_function_part(3), {})
    assert verdict.score == 0.75
    assert "passes 3 of 4 checks" in verdict.reason and "earns 2.25 of 3 points" in verdict.reason
    assert "earns 3 of 4" not in verdict.reason


def test_a_one_point_cell_says_point():
    assert "earns 0.75 of 1 point" in safe_judge(_function_part(1), {}).reason


def test_feedback_calls_worked_example_only_what_the_prompt_shows():
    # 5.5 shows each student a worked example of their own; the workbook's fixed inputs are not it
    from course.activities import SYLLABUS
    from course.assess.spec import spec_for
    from course.assess.variants import student_seed, variant_of

    ex = SYLLABUS.exercise("5.5")
    part = REGISTRY["ch05_ex5_5_fix"]
    student = next(s for s in (f"s{i}" for i in range(50))
                   if list(spec_for(ex, variant_of(ex.assignment, s))["example"]) not in part.function.examples)
    namespace = {}
    exec("def bubble_fraction(pp, microbatches, virtual_stages=1):\n"
         "    return pp / (pp + microbatches * virtual_stages)\n", namespace)  # the bug left in
    reason = part.grade(namespace, student_seed(part.assignment, student, 1)).reason
    assert "worked example" not in reason and "fixed examples" in reason, reason
    own = ", ".join(map(str, spec_for(ex, variant_of(ex.assignment, student))["example"]))
    assert f"bubble_fraction({own})" in ex.prompt(spec_for(ex, variant_of(ex.assignment, student))).replace(" ", "").replace(",", ", ")

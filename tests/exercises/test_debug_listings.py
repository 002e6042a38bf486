"""A Debug exercise's listing is the student's own: the buggy line has another number for another student,
the function it lists does exactly what the workbook's buggy function does, and the fix fixes it."""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest

from course.activities import EXERCISES, REGISTRY
from course.assess.activity import Chapter
from course.assess.authoring import arranged_listing, debug_exercise, workbook_listing
from course.assess.spec import derivation_markdown, spec_for
from course.assess.variants import grading_seed, variant_of
from course.chapters.ch00 import LISTING_06
from course.chapters.ch05 import LISTING_5_5
from course.chapters.ch10 import LISTING_10_6

STUDENTS = [f"student{i:02d}" for i in range(40)]

#: exercise -> (its listing, the function's name, the buggy line's text, the fixed line, arguments to call it with)
DEBUG = {
    "0.6": (LISTING_06, "all_reduce_time", "    total_time = 2 * steps * per_step_time",
            "    total_time = steps * per_step_time",
            [[2e9, 8, 50e9], [1e6, 2, 1e9], [3e10, 1024, 4e11], [7.0, 3, 11.0]]),
    "5.5": (LISTING_5_5, "bubble_fraction", "    bubble_slots = pp", "    bubble_slots = pp - 1",
            [[4, 12, 1], [1, 8, 1], [16, 4, 2], [6, 32, 4], [2, 1, 1]]),
    "10.6": (LISTING_10_6, "expert_capacity", "    per_expert = tokens / experts",
             "    per_expert = tokens * top_k / experts",
             [[4096, 2, 8, 1.25], [1, 1, 1, 1.0], [1000, 8, 256, 1.5], [65536, 6, 64, 1.125]]),
}


def _spec(number, student):
    ex = EXERCISES[number]
    return spec_for(ex, variant_of(ex.assignment, student))


def _function(lines, name):
    namespace = {}
    exec("\n".join(lines), namespace)  # the listing as the student reads it
    return namespace[name]


def _same(a, b):
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)


@pytest.mark.parametrize("number", sorted(DEBUG))
def test_every_listing_lists_the_same_buggy_function_and_the_fix_fixes_it(number):
    source, name, bug, fixed, calls = DEBUG[number]
    ex = EXERCISES[number]
    fix = next(p for p in ex.parts if p.grade_id.endswith("_fix"))
    workbook = _function(workbook_listing(source).splitlines(), name)
    for student in [None] + STUDENTS:
        lines = arranged_listing(source, _spec(number, student)["arrangement"])
        assert lines.count(bug) == 1
        buggy = _function(lines, name)
        repaired = _function([fixed if line == bug else line for line in lines], name)
        for args in calls:
            assert _same(buggy(*args), workbook(*args)), (student, args)
        # the repaired listing passes the fix part's own judge, on this student's probes
        seed = grading_seed(0, variant_of(ex.assignment, student))
        assert fix.grade({name: repaired}, seed).passed, student
        assert not fix.grade({name: buggy}, seed).passed, student


@pytest.mark.parametrize("number", sorted(DEBUG))
def test_the_key_is_the_number_the_student_s_prompt_shows_next_to_the_bug(number):
    source, name, bug, fixed, calls = DEBUG[number]
    ex = EXERCISES[number]
    line = REGISTRY[ex.grade_id("_line")]
    for student in [None] + STUDENTS:
        spec = _spec(number, student)
        key = line.value.key(spec)["buggy_line"]
        prompt = ex.prompt(spec)
        shown = re.search(rf"^ *(\d+)  {re.escape(bug)}$", prompt, re.M)
        assert shown and int(shown.group(1)) == key, (student, prompt)
        assert f"an int from 1 to {len(arranged_listing(source, spec['arrangement']))})" in prompt
        worked = derivation_markdown(ex, variant_of(ex.assignment, student))
        assert f"Line **{key}**" in worked or f"**Line {key} (" in worked, worked
        seed = grading_seed(0, variant_of(ex.assignment, student))
        assert line.grade({"buggy_line": key}, seed).passed
        assert not line.grade({"buggy_line": key + 1}, seed).passed


@pytest.mark.parametrize("number,workbook_line", [("0.6", 6), ("5.5", 3), ("10.6", 3)])
def test_a_kernel_with_no_student_shows_the_workbook_s_listing(number, workbook_line):
    source = DEBUG[number][0]
    spec = _spec(number, None)
    assert spec["arrangement"] == ""
    assert arranged_listing(source, "") == workbook_listing(source).splitlines()
    assert REGISTRY[EXERCISES[number].grade_id("_line")].value.key(spec) == {"buggy_line": workbook_line}


@pytest.mark.parametrize("number", sorted(DEBUG))
def test_the_buggy_line_s_number_spreads_over_many_values(number):
    ex = EXERCISES[number]
    line = REGISTRY[ex.grade_id("_line")]
    counts = Counter(line.value.key(_spec(number, f"s{i}"))["buggy_line"] for i in range(2000))
    assert len(counts) >= 15, counts
    # about equally likely: a copy from a random classmate names the right line rarely
    assert sum((n / 2000) ** 2 for n in counts.values()) < 0.07, counts


def test_the_source_notebook_names_the_line_and_the_release_line_hides_it():
    ex = EXERCISES["0.6"]
    answer = next(c for c in ex.cells(_spec("0.6", "student03")) if c.grade_id == ex.grade_id("_line_answer"))
    key = REGISTRY[ex.grade_id("_line")].value.key(_spec("0.6", "student03"))["buggy_line"]
    assert f"buggy_line = {key}   # total_time = 2 * steps * per_step_time   (each student's" in answer.source
    markdown = ex.cells(_spec("0.6", "student03"))[0].source
    assert "total_time" not in markdown  # the listing is in the prompt cell, with the student's numbers


def test_a_buggy_line_that_occurs_twice_is_refused():
    chapter = Chapter("ch99", "ch99_test", title="t", intro="i")
    with pytest.raises(ValueError, match="buggy_line"):
        debug_exercise(chapter, "99.1", "t", spec={}, prompt=lambda s: "p",
                       buggy_source="def f(x):\n?a|    x = x\n    x = x\n    return x", buggy_line=2,
                       function="f", signature="(x)", docstring="d", body="return x",
                       reference=lambda x: x, probes=lambda seed: {"valid": [[1]], "invalid": []},
                       examples=[[1]], derivation=lambda s: "d")

"""Words around a varied number say what the student's own prompt says (issue 36).

The release notebook is one for the whole class: an exercise's heading (its title) is the same for
everyone, while its prompt and its worked derivation are rendered from each student's numbers. For 40
students, every exercise's heading, derivation and the claims its chapter makes about "this chapter"
must not name a quantity that the student's prompt names with another value: a model size ("10B"
above "A 70B-parameter model") or a parallel degree or count ("CP = 1" above "CP = 2").
"""

from __future__ import annotations

import re

import pytest

from course.activities import SYLLABUS
from course.assess.spec import derivation_markdown, spec_for
from course.assess.variants import variant_of

STUDENTS = [f"student{i:02d}" for i in range(40)]

#: "TP = 8", "$m = 4$", "CP=2", "N = 64": a named degree or count and its value
#: (not "(p-1)/m = 7/24", a fraction, nor "beyond TP = 8", a bound rather than the case)
ASSIGNED = re.compile(r"(?<![A-Za-z_])(TP|PP|DP|CP|EP|N|p|m|v)\s*=\s*\$?\s*(\d[\d,]*)(?![\d.,/]\d|\s*/|[\d/])")
BOUND = re.compile(r"(?i)\b(beyond|above|below|up to|at most|at least|more than|less than|over)\s+"
                   r"(TP|PP|DP|CP|EP|N|p|m|v)\s*=\s*\d[\d,]*")
#: "10B", "405B-parameter": a model size in billions of parameters (not "2 B", two bytes)
MODEL_SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)B(?=[\s\-,.)]|$)")


def _claims(text: str) -> dict:
    found: dict = {}
    plain = BOUND.sub("", text.replace("\\,", " ").replace("{", "").replace("}", ""))
    for name, value in ASSIGNED.findall(plain):
        found.setdefault(name, set()).add(int(value.replace(",", "")))
    sizes = {float(v) for v in MODEL_SIZE.findall(plain)}
    if sizes:
        found["model size (B)"] = sizes
    return found


def _contradictions(surrounding: str, prompt: str) -> list:
    said, asked = _claims(surrounding), _claims(prompt)
    return [(name, sorted(said[name]), sorted(asked[name])) for name in said
            if name in asked and not said[name] & asked[name]]


def _chapter_claims(activity) -> str:
    """The sentences of a chapter's introduction that speak for its exercises ("in this chapter ...")."""
    text = " ".join([getattr(activity, "intro", "") or ""] + list(getattr(activity, "concept", []) or []))
    return " ".join(s for s in re.split(r"(?<=[.!?])\s+", text) if "this chapter" in s.lower())


EXERCISES = [ex for activity in SYLLABUS.activities for ex in activity.exercises if ex.prompt]


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda ex: ex.number)
def test_no_heading_derivation_or_chapter_claim_contradicts_the_students_prompt(ex):
    activity = SYLLABUS.activity(ex.assignment) if hasattr(SYLLABUS, "activity") else None
    chapter = _chapter_claims(activity) if activity is not None else ""
    wrong = []
    for student in STUDENTS:
        variant = variant_of(ex.assignment, student)
        prompt = ex.prompt(spec_for(ex, variant))
        for where, text in (("heading", ex.title), ("derivation", derivation_markdown(ex, variant)),
                            ("chapter introduction", chapter)):
            for clash in _contradictions(text, prompt):
                wrong.append((student, where, clash))
    assert not wrong, wrong[:5]


def test_the_check_finds_the_contradictions_the_issue_reported():
    # the headings a student met before this fix, under prompts of their own numbers
    assert _contradictions("All-reduce of a 10B model", "A 70B-parameter model has FP16 gradients")
    assert _contradictions("In this chapter CP = 1", "order TP = 8, CP = 2, PP = 4, DP = 128")
    assert not _contradictions("All-reduce of a model's gradients", "A 70B-parameter model has FP16 gradients")
    assert not _contradictions("PP = 16 stages", "PP = 16 stages, $m = 4$ micro-batches")
    assert not _contradictions("$(p-1)/m = 7/24$; 2 B per value; beyond TP = 8", "p = 8, m = 24, TP = 4, a 7B model")

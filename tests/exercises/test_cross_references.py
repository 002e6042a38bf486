"""An exercise that refers to another shows this student's numbers of that exercise, or says plainly
that its numbers are its own.

For 40 students, every prompt and derivation of chapters 5 and 9 is searched for references to another
exercise of the chapter: an explicit number (``5.4``, ``as in 9.3``) or an opening "The same ..."
(the exercise before). Each reference must either sit in a sentence that says the numbers are this
exercise's own (``set independently of 5.1's``, true whether or not they match), or every parameter
the two exercises share must have the same value for that student. A sentence that says the numbers
are *not* the other exercise's (``not 5.1's``) must be true for that student: some shared parameter
differs. The student with no id (variant None: the workbook's own numbers) is checked too.
"""

from __future__ import annotations

import re

import pytest

from course.activities import SYLLABUS
from course.assess.spec import spec_for
from course.assess.variants import variant_of

CHAPTERS = ("ch05_pipeline", "ch09_capstone")
STUDENTS = [None] + [f"student{i:02d}" for i in range(40)]
SENTENCE = re.compile(r"(?<=[.?!)])\s+(?=[A-Z(*])")


def _references(text, own, numbers, previous):
    found = []
    for sentence in SENTENCE.split(text):
        for ref in re.findall(r"(?<![\d.])(\d\.\d)(?![\d])", sentence):
            if ref != own and ref in numbers:
                found.append((ref, sentence))
        if previous and re.match(r"\s*The same\b", sentence):
            found.append((previous, sentence))
    return found


@pytest.mark.parametrize("name", CHAPTERS)
def test_references_show_this_students_numbers_or_say_they_differ(name):
    exercises = [ex for ex in SYLLABUS.by_name[name].exercises if ex.number != "9.8"]  # 9.8: another helper's
    numbers = {ex.number: ex for ex in SYLLABUS.by_name[name].exercises}
    checked = 0
    for student in STUDENTS:
        variant = variant_of(name, student)
        for index, ex in enumerate(exercises):
            spec = spec_for(ex, variant)
            previous = exercises[index - 1].number if index else None
            texts = [ex.prompt(spec) if ex.prompt else "", ex.derivation(spec)]
            for text in texts:
                for ref, sentence in _references(text, ex.number, numbers, previous):
                    checked += 1
                    other = spec_for(numbers[ref], variant)
                    shared = sorted(set(spec) & set(other))
                    if re.search(r"\bown\b", sentence) and f"independently of {ref}'s" in sentence:
                        continue
                    if re.search(r"\bown\b", sentence) and f"not {ref}'s" in sentence:
                        assert any(spec[k] != other[k] for k in shared), (
                            f"{student}: {ex.number} says its numbers are not {ref}'s, but they are", sentence)
                        continue
                    assert all(spec[k] == other[k] for k in shared), (
                        student, ex.number, ref, sentence, {k: (spec[k], other[k]) for k in shared})
    assert checked  # the chapters do refer to each other


def test_capstone_layout_exercises_do_not_pass_for_the_layout_of_9_2():
    """9.2 spreads a model's layers over PP stages; 9.3 and 9.7 put their own layer counts on a stage,
    which for most students are not 9.2's (for a student with no id they are): they say so."""
    for student in STUDENTS[1:11]:
        variant = variant_of("ch09_capstone", student)
        prompt = SYLLABUS.exercise("9.3").prompt(spec_for(SYLLABUS.exercise("9.3"), variant))
        assert "own layout (set independently of 9.2's)" in prompt
        prompt = SYLLABUS.exercise("9.7").prompt(spec_for(SYLLABUS.exercise("9.7"), variant))
        assert "set independently of 9.3's" in prompt and "as in 9.3" not in prompt

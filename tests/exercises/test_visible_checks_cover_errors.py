"""Every Build's and Debug's visible check covers each behaviour the hidden tests grade, errors included
(issue 48): a function that never raises fails the visible check, not only the grading."""

from __future__ import annotations

import pytest

from course.activities import EXERCISES
from course.assess.checks import _check_function

#: functions called in this process (a Build or Debug); those run on MPI ranks (chapter 11) have their own check
FUNCTION_PARTS = [(ex.number, part) for ex in EXERCISES.values() for part in ex.parts
                  if part.function is not None and part.function.judged_in != "ranks"]


def test_every_build_whose_prompt_asks_for_value_error_checks_it_visibly():
    asked = {ex.number for ex in EXERCISES.values()
             if ex.kind == "Build" and ex.prompt is not None and "ValueError" in ex.prompt(ex.spec)}
    assert "10.5" in asked
    for number, part in FUNCTION_PARTS:
        if number in asked:
            assert part.function.invalid_examples, f"{number} `{part.function.name}`: no invalid input is checked"


@pytest.mark.parametrize("number,part", FUNCTION_PARTS, ids=[f"{n}-{p.function.name}" for n, p in FUNCTION_PARTS])
def test_the_visible_check_passes_the_reference_and_fails_a_function_that_never_raises(number, part):
    item = part.function
    if not item.invalid_examples:
        return

    def lenient(*args):  # right on every valid input, but swallows the errors the prompt asks for
        try:
            return item.reference(*args)
        except ValueError:
            return 0.0

    ok, lines = _check_function(part, {item.name: item.reference}, list(item.examples))
    assert ok, lines
    assert any("raises ValueError for each of the" in line for line in lines)
    ok, lines = _check_function(part, {item.name: lenient}, list(item.examples))
    assert not ok
    assert any("must raise ValueError" in line for line in lines), lines


#: parts run on (simulated) MPI ranks: their visible check runs the student's worked example, then the item's examples
RANK_PARTS = [(ex.number, part) for ex in EXERCISES.values() for part in ex.parts
              if part.function is not None and part.function.judged_in == "ranks"]


def test_every_ranks_part_graded_on_invalid_inputs_checks_one_visibly():
    from course.assess.ranks import _expected_results

    graded = [(number, part) for number, part in RANK_PARTS if part.probes(0)["invalid"]]
    assert "11.5" in {number for number, _ in graded}
    for number, part in graded:
        refused = [probe for probe in part.function.examples
                   if _expected_results(part.function.reference, probe) is None]
        assert refused, f"{number} `{part.function.name}`: the visible check tries no input it must refuse"

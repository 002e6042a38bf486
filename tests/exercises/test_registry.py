"""The grading contract: plain values only, trusted judges, poisoned core, visible checks, ledger."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import course.notebook_api as exercises
from course.notebook_api import REGISTRY, Verdict, grade_in_kernel, harvest_json, judge_json
from course.assess.attempts import current_identity, record_of
from course.assess.registry import unit_hint
from course.notebook_api import check
from course.assess.kinds import course_references, imports_course, poisoned_core
from course.assess.registry import judge_plain, plain_number, to_plain, NotPlain


class AlwaysEqual(float):
    """The classic cheat: equal to everything, and even a float subclass."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = float.__hash__


class Anything:
    def __eq__(self, other):
        return True

    def __float__(self):
        return 1.0


# --- plain values ----------------------------------------------------------------------------

def test_to_plain_converts_numpy_explicitly_and_marks_everything_else():
    assert to_plain(np.float32(0.5)) == 0.5 and type(to_plain(np.float32(0.5))) is float
    assert to_plain(np.int64(3)) == 3 and type(to_plain(np.int64(3))) is int
    assert to_plain(np.array([1.0, 2.0])) == [1.0, 2.0]
    assert to_plain(AlwaysEqual(1.0)) == {"__unplain__": "AlwaysEqual"}
    assert to_plain(Anything()) == {"__unplain__": "Anything"}
    assert to_plain({1: 2}) == {"__unplain__": "dict with non-string keys"}


def test_bool_is_not_a_number():
    with pytest.raises(NotPlain):
        plain_number(True)
    assert judge_plain(True, 1.0).score == 0.0


@pytest.mark.parametrize("cheat", [AlwaysEqual(0.0), Anything(), "1.75", None, [1.75], math.nan])
def test_judge_plain_rejects_non_plain_or_wrong_types(cheat):
    assert judge_plain(cheat, 1.75).score == 0.0


def test_judge_plain_tolerance_is_relative_one_percent_by_default():
    assert judge_plain(1.7675, 1.75).passed  # +1.0 %
    assert not judge_plain(1.78, 1.75).passed  # +1.7 %
    assert judge_plain(" Ring ", "ring").passed


def test_verdict_score_must_lie_in_unit_interval():
    with pytest.raises(ValueError):
        Verdict(1.5, "too much")


# --- every registered judge against cheats ---------------------------------------------------

def _cheat_namespace(part):
    ns = {}
    for name in part.names:
        if part.function is not None:
            ns[name] = lambda *args: AlwaysEqual(0.0)
        else:
            ns[name] = AlwaysEqual(0.0)
    return ns


@pytest.mark.parametrize("grade_id", sorted(g for g in REGISTRY if g[:4] in ("ch00", "ch01", "ch02", "ch03", "ch04")))
def test_always_equal_objects_earn_nothing(grade_id):
    part = REGISTRY[grade_id]
    verdict = part.grade(_cheat_namespace(part))
    assert verdict.score == 0.0, verdict
    # and through the JSON path the autograder uses, with a fresh trusted judge
    assert judge_json(grade_id, harvest_json(grade_id, _cheat_namespace(part))).score == 0.0


@pytest.mark.parametrize("grade_id", sorted(g for g in REGISTRY if g[:4] in ("ch00", "ch01", "ch02", "ch03", "ch04")))
def test_empty_namespace_earns_nothing_with_a_reason(grade_id):
    verdict = REGISTRY[grade_id].grade({})
    assert verdict.score == 0.0 and verdict.reason


def test_judge_json_survives_garbage():
    assert judge_json("ch02_ex2_1", "not json").score == 0.0
    assert judge_json("ch02_ex2_1", "[]").score == 0.0
    assert judge_json("ch02_ex2_1", json.dumps({"values": {"accum_steps": {"__unplain__": "X"}}})).score == 0.0
    assert judge_json("no_such_part", "{}").score == 0.0


def test_grade_in_kernel_raises_with_reason_and_passes_quietly():
    with pytest.raises(AssertionError, match="accum_steps"):
        grade_in_kernel("ch02_ex2_1", {"accum_steps": 63})
    grade_in_kernel("ch02_ex2_1", {"accum_steps": 64})


# --- Build parts: must not lean on course.core -----------------------------------------------

def _honest_effective_batch(micro_batch, accum_steps, dp):
    for value in (micro_batch, accum_steps, dp):
        if value != int(value) or value < 1:
            raise ValueError("whole numbers >= 1")
    return int(micro_batch) * int(accum_steps) * int(dp)


def test_honest_build_passes_and_wrong_build_fails():
    part = REGISTRY["ch02_ex2_4"]
    assert part.grade({"effective_batch": _honest_effective_batch}).passed
    off_by_one = lambda m, a, d: _honest_effective_batch(m, a, d) + 1  # noqa: E731 -- a one-line helper local to this function
    assert not part.grade({"effective_batch": off_by_one}).passed
    no_validation = lambda m, a, d: int(m) * int(a) * int(d)  # noqa: E731 -- a one-line helper local to this function
    assert "ValueError" in part.grade({"effective_batch": no_validation}).reason


def test_build_that_calls_course_core_earns_nothing():
    from course import core
    from course.core import effective_batch as imported

    via_module = lambda m, a, d: core.effective_batch(m, a, d)  # noqa: E731 -- a one-line helper local to this function
    via_name = lambda m, a, d: imported(m, a, d)  # noqa: E731 -- a one-line helper local to this function
    part = REGISTRY["ch02_ex2_4"]
    for fn in (via_module, via_name):
        verdict = part.grade({"effective_batch": fn})
        assert verdict.score == 0.0 and "course" in verdict.reason


def test_core_is_poisoned_only_while_harvesting():
    from course import core

    with poisoned_core():
        with pytest.raises(RuntimeError):
            core.effective_batch(1, 1, 1)
    assert core.effective_batch(1, 2, 3) == 6


def test_ast_and_reference_inspection():
    assert imports_course("def f():\n    import course.core as c\n    return c")
    assert not imports_course("def f(x):\n    return x * 2  # course")

    from course import core
    def uses(m):
        return core.effective_batch(m, 1, 1)
    assert course_references(uses) == ["<closure>"]  # core is a free variable of uses here
    assert course_references(_honest_effective_batch) == []

    def hidden_in_a_default(m, a, d, _c=core):
        return _c.effective_batch(m, a, d)

    def hidden_in_a_keyword_default(m, a, d, *, _f=core.effective_batch):
        return _f(m, a, d)

    assert course_references(hidden_in_a_default) == ["<default argument>"]
    assert course_references(hidden_in_a_keyword_default) == ["<default argument>"]


# --- visible checks and mastery --------------------------------------------------------------

def test_unit_hints_do_not_reveal_the_key():
    assert unit_hint(1750.0, 1.75)[0] is True  # a recognised unit slip
    assert "100" in unit_hint(0.778, 77.8)[1]
    assert unit_hint(1.0, 1.75)[0] is False and unit_hint(1.0, 1.75)[1].startswith("not yet")
    assert unit_hint(-1.75, 1.75)[0] is False
    assert "1.75" not in unit_hint(17.5, 1.75)[1]


def test_visible_check_reports_type_unit_and_records_the_ledger(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COURSE_LEDGER", str(tmp_path / "ledger.json"))
    from course.ledger import Ledger

    check("2.2", {"saved_ms": "3150"})
    assert "must be a number" in capsys.readouterr().out
    check("2.2", {"saved_ms": 3.15})  # seconds instead of ms
    assert "factor of 1000" in capsys.readouterr().out
    mine = record_of(Ledger().get("ch02/ex2_2"), current_identity("ch02_gradient_accumulation"))
    assert mine["attempts"] == 2 and mine["passed"] is False
    check("2.2", {"saved_ms": 3150.0})
    assert "2.2: right" in capsys.readouterr().out
    mine = record_of(Ledger().get("ch02/ex2_2"), current_identity("ch02_gradient_accumulation"))
    assert mine["attempts"] == 3 and mine["passed"] is True and mine["last_passed"] is True


def test_attempts_from_concurrent_kernels_are_all_counted(tmp_path):
    import subprocess
    import sys

    from course.ledger import Ledger

    ledger = tmp_path / "ledger.json"
    # each kernel checks five answers of its own: 20 different answers, 20 attempts
    code = ("import sys\nfrom course.exercises import check\n"
            "for j in range(5):\n    check('2.2', {'saved_ms': 1000.0 + 10 * int(sys.argv[1]) + j})")
    env = {**__import__("os").environ, "COURSE_LEDGER": str(ledger)}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(i)], env=env, stdout=subprocess.DEVNULL)
             for i in range(4)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    records = Ledger(ledger).get("ch02/ex2_2")["by_identity"]
    assert sum(r["attempts"] for r in records.values()) == 20  # a read-then-write counter loses some


def test_visible_check_of_a_build_shows_the_worked_example(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LEDGER", str(tmp_path / "ledger.json"))
    check("2.4", {"effective_batch": lambda m, a, d: m * a, "required_accum_steps": lambda t, m, d: 64})
    out = capsys.readouterr().out
    assert "effective_batch(4, 64, 8) returned 256" in out and "2048" in out


def test_registry_documents_the_contract():
    doc = exercises.__doc__
    for word in ("harvest_json", "judge_json", "grade_in_kernel", "REGISTRY"):
        assert word in doc


def test_doctests_of_the_exercise_modules():
    import doctest

    from course.assess import authoring, checks, kinds, mastery, registry

    for module in (registry, kinds, checks, mastery, authoring):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__


def test_spec_for_gives_the_workbook_numbers_without_a_variant_and_reproducible_ones_with():
    from course import core
    from course.activities import EXERCISES
    from course.assess.spec import spec_for

    ex = EXERCISES["2.1"]
    assert spec_for(ex) == ex.spec and spec_for(ex, None) == ex.spec
    variants = [spec_for(ex, v) for v in range(20)]
    assert spec_for(ex, 3) == variants[3]  # reproducible per variant
    assert any(v != ex.spec for v in variants)
    for v in variants:  # prompt, key and derivation all read the same spec
        key = ex.parts[0].value.key(v)["accum_steps"]
        assert key == -(-v["target_batch"] // (v["micro_batch"] * v["dp"])) == core.required_accum_steps(
            v["target_batch"], v["micro_batch"], v["dp"])
        assert f"**{key}**" in ex.derivation(v)


def test_partial_credit_reasons_count_their_inputs_in_words():
    from course.assess.kinds import partial_verdict
    verdict = partial_verdict("f", [("worked example", 2, []), ("edge cases", 1, []),
                                    ("random inputs", 40, []),
                                    ("invalid inputs", 5, [("no_value_error", "does not raise ValueError")] * 5)])
    reasons = [c.reason for c in verdict.checks]
    assert reasons[:3] == ["right on all 2 worked examples", "right on the edge case", "right on all 40 random inputs"]
    assert reasons[3] == "does not raise ValueError for 5 of 5 invalid inputs"
    assert verdict.code == "partial" and [c.codes for c in verdict.checks] == [(), (), (), ("no_value_error",)]
    one = partial_verdict("f", [("worked example", 1, [("returns_wrong_value", "wrong value")]),
                                ("random inputs", 4, [])])
    assert one.checks[0].reason == "wrong value for 1 of 1 worked example"


def test_a_function_answer_has_the_same_fingerprint_on_every_run():
    # a function is fingerprinted by its code and the repr of its defaults; a default object's repr names a
    # memory address that differs run to run: the same function re-run must not count as a new attempt
    from course.assess.attempts import answer_fingerprint

    def define():
        class Cache:
            pass

        def answer(x, cache=Cache()):
            return 2 * x
        return answer

    first, second = define(), define()
    assert repr(first.__defaults__) != repr(second.__defaults__)
    assert answer_fingerprint(["f"], {"f": first}) == answer_fingerprint(["f"], {"f": second})

    def other(x, cache=None):
        return 3 * x
    assert answer_fingerprint(["f"], {"f": first}) != answer_fingerprint(["f"], {"f": other})

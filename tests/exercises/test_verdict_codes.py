"""Every verdict carries a stable code beside its reason (course.assess.codes): what reports and tests read."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from course.assess import codes
from course.assess.registry import NUMBER_HINTS, Check, Verdict, judge_plain, number_code, unit_hint

ROOT = Path(__file__).resolve().parents[2]


def _verdict_calls():
    for package in ("course", "autograder"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Verdict":
                    yield path.relative_to(ROOT), node


def test_every_verdict_the_package_makes_names_its_code():
    calls = list(_verdict_calls())
    assert len(calls) > 20
    unnamed = [f"{path}:{node.lineno}" for path, node in calls
               if not {k.arg for k in node.keywords} & {"code", "findings"}]
    assert unnamed == [], "give these Verdict(...) a code= (course.assess.codes)"


def test_every_code_is_used_and_documented():
    """Each code of :data:`codes.MEANING` is named by the package outside ``codes.py`` (no dead code to document)."""
    source = "\n".join(p.read_text() for package in ("course", "autograder")
                       for p in (ROOT / package).rglob("*.py") if p.name != "codes.py")
    names = {value: name for name, value in vars(codes).items() if name.isupper() and isinstance(value, str)}
    assert set(names) == set(codes.MEANING)
    assert [code for code, name in names.items() if f"codes.{name}" not in source] == []
    assert len(set(codes.MEANING)) == len(codes.MEANING) and all(c.isidentifier() for c in codes.MEANING)


def test_a_verdict_without_a_code_gets_one_and_an_unknown_code_is_refused():
    assert Verdict(1.0, "fine").code == "correct" and Verdict(0.0, "no").code == "wrong_value"
    assert Verdict(0.0, "a; b", findings=("off_by_one", "not_answered")).code == "off_by_one"
    assert Verdict(0.0, "x", code="factor_of_2").findings == ("factor_of_2",)
    with pytest.raises(ValueError, match="code"):
        Verdict(0.0, "x", code="Factor of 2")


@pytest.mark.parametrize("value, key, unit, code", [
    (2.0, 1.0, "GB", "factor_of_2"), (8.0, 1.0, "GB", "bits_for_bytes"), (1000.0, 1.0, "ms", "factor_of_1000"),
    (60.0, 1.0, "min", "seconds_for_minutes"), (1.073741824, 1.0, "GB", "gib_for_gb"),
    (7, 8, "stages", "off_by_one"), (-1.0, 1.0, None, "wrong_sign_or_zero"), (1.5, 1.0, None, "close"),
    (50.0, 1.0, None, "order_of_magnitude"), (0.5, 50.0, "%", "percent_as_fraction"),
])
def test_a_wrong_number_is_coded_as_its_hint_says(value, key, unit, code):
    assert number_code(value, key, unit) == code
    assert unit_hint(value, key, unit)[1] == "not yet: " + NUMBER_HINTS[code]
    assert judge_plain(value, key, unit=unit, name="x").code == code


def test_function_checks_and_value_parts_carry_codes():
    from course.notebook_api import REGISTRY, judge_json

    part = REGISTRY["ch02_ex2_4"]  # effective_batch: a Build part
    probes = part.probes(5)
    raising = {"uses_course": [], "source": "def f(): pass", "valid": [{"__raised__": "ZeroDivisionError"}] *
               len(probes["valid"]), "invalid": [{"__raised__": "ValueError"}] * len(probes["invalid"])}
    verdict = judge_json("ch02_ex2_4", json.dumps(raising), 5)
    assert verdict.code == "partial" and verdict.score < 1
    assert {c.name: c.codes for c in verdict.checks}["random inputs"] == ("raises",)
    assert {c.name: c.codes for c in verdict.checks}["invalid inputs"] == ()
    assert all(isinstance(c, Check) for c in verdict.checks)
    assert judge_json("ch02_ex2_4", json.dumps({"missing": True}), 5).code == "not_answered"
    assert judge_json("no_such_part", "{}").code == "judge_error"
    assert judge_json("ch02_ex2_4", "not json").code == "unreadable"

"""Hints say what a wrong number's mistake could be, for what the number is (bytes, time, percent, count)."""

from __future__ import annotations

import pytest

from course.activities import EXERCISES
from course.assess.registry import OFF_BY_ONE, judge_plain, quantity_of, unit_hint
from course.assess.spec import spec_for

GIB = 2 ** 30 / 1e9


@pytest.mark.parametrize("unit", ["GB", "GB per GPU", "MB", "GB per GPU per step"])
def test_gib_for_gb_is_hinted_for_bytes(unit):
    assert "GiB instead of GB" in unit_hint(5.536 * GIB, 5.536, unit)[1]
    assert "bits instead of bytes" in unit_hint(5.536 * 8, 5.536, unit)[1]


@pytest.mark.parametrize("unit", ["%", "% of peak", "ms", "s", "days", "ratio", "micro-batches", "steps"])
def test_seven_percent_off_is_no_gib_hint_for_what_is_not_bytes(unit):
    for key in (5.1, 48.0, 230.0):
        hint = unit_hint(key * GIB, key, unit)[1]
        assert "GiB" not in hint and hint == "not yet: check the formula and the numbers you used", (unit, hint)


@pytest.mark.parametrize("unit", ["micro-batches", "stages", "layers", "GPUs", "steps", "optimizer steps"])
def test_a_count_one_off_is_off_by_one(unit):
    for key in (2, 7, 12, 64):
        assert OFF_BY_ONE in unit_hint(key - 1, key, unit)[1]
        assert OFF_BY_ONE in unit_hint(key + 1, key, unit)[1]
    assert OFF_BY_ONE not in unit_hint(14, 12, unit)[1]


def test_off_by_one_only_for_counts():
    assert OFF_BY_ONE not in unit_hint(7.0, 8.0, "GB")[1]
    assert OFF_BY_ONE not in unit_hint(7.0, 8.0, "ms")[1]


def test_time_slips_only_for_times_and_percent_slips_not_for_bytes():
    assert "seconds vs minutes" in unit_hint(120.0, 2.0, "min")[1]
    assert "seconds vs minutes" not in unit_hint(120.0, 2.0, "GB")[1]
    assert "a percent written as a fraction" in unit_hint(0.33, 33.0, "%")[1]
    assert "a percent written as a fraction" not in unit_hint(0.33, 33.0, "GB")[1]
    assert "factor of 1000" in unit_hint(1750.0, 1.75, "s")[1]  # a prefix slip applies to everything


def test_without_a_unit_every_slip_is_tried_as_before():
    assert "GiB" in unit_hint(GIB, 1.0)[1]


def test_every_declared_unit_of_the_workbook_is_classified():
    seen = {}
    for ex in EXERCISES.values():
        for part in ex.parts:
            if part.value is not None:
                for unit in part.value.units.values():
                    seen[unit] = quantity_of(unit)
    assert seen["GB"] == seen["MB"] == seen["GB per GPU"] == "bytes"
    assert seen["ms"] == seen["s"] == seen["days"] == seen["min"] == "time"
    assert seen["\u00b5s"] == "time"  # 10.7's fastest layout
    assert seen["%"] == seen["% of peak"] == "percent"
    assert seen["micro-batches"] == seen["stages"] == seen["layers"] == "count"


def test_graded_feedback_uses_the_items_unit():
    """5.1 (a percentage) graded 7 % off gets no GiB hint; a count one off is off by one."""
    ex = EXERCISES["5.1"]
    part = next(p for p in ex.parts if p.value is not None)
    name, unit = next(iter(part.value.units.items()))
    key = part.value.key(spec_for(ex))[name]
    verdict = part.judge({"values": {name: key * GIB}}, 0)
    assert not verdict.passed and "GiB" not in verdict.reason, (unit, verdict.reason)
    assert judge_plain(11, 12, unit="micro-batches").code == "off_by_one"


def test_a_wrong_order_gets_an_order_hint_never_the_key():
    """9.8 (an order): reversed, one swap and another order each get their own hint, in the visible
    check and in the graded reason alike; the hint never lists the key."""
    from course.assess.checks import _right_or_not
    from course.assess.registry import order_hint

    ex = EXERCISES["9.8"]
    part = next(p for p in ex.parts if p.value is not None)
    name = next(iter(part.value.units))
    keys = part.value.key(spec_for(ex))  # the order, and whatever else 9.8 asks beside it (right here)
    key = list(keys[name])
    reversed_order = key[::-1]
    swapped = [key[1], key[0]] + key[2:]
    rotated = key[1:] + key[:1]
    cases = {"reverse": reversed_order, "swapped": swapped, "another order": rotated}
    for word, value in cases.items():
        hint = order_hint(value, key)
        assert word in hint, (value, hint)
        reason = part.judge({"values": dict(keys, **{name: value})}, 0).reason
        assert hint in reason and str(key) not in reason and ", ".join(key) not in reason
        assert hint in _right_or_not(name, "list", value, key, 0.0)
    assert order_hint(key[:-1] + ["XX"], key) is None  # not the given items: no order hint
    assert part.judge({"values": dict(keys)}, 0).passed


@pytest.mark.parametrize("unit,doubles", [("GB", True), ("ms", True), ("micro-batches", True), ("%", True),
                                          ("ratio", True), ("$", False)])
def test_a_factor_of_two_is_hinted_where_phases_or_directions_can_double_it(unit, doubles):
    """A doubled all-reduce volume or time is a known slip (one direction, one phase); a doubled price
    is not a phase count: it gets the plain hint."""
    for key in (12.0, 990904.0):
        hint = unit_hint(2 * key, key, unit)[1]
        assert ("factor of 2" in hint) is doubles, (unit, hint)
        if not doubles:
            assert hint == "not yet: check the formula and the numbers you used"


def test_every_quantity_class_has_its_own_hint():
    """One wrong value per class, each with the hint of its class and never another class's."""
    cases = {"bytes": (5.536 * GIB, 5.536, "GB", "GiB"), "time": (120.0, 2.0, "min", "minutes"),
             "percent": (0.33, 33.0, "%", "percent written as a fraction"),
             "count": (11, 12, "micro-batches", "off by one"), "money": (2000.0, 1000.0, "$", "check the formula")}
    for quantity, (value, key, unit, words) in cases.items():
        assert quantity_of(unit) == quantity
        assert words in unit_hint(value, key, unit)[1], (quantity, unit_hint(value, key, unit))


def test_the_off_by_one_hint_names_the_rounding_where_no_fencepost_exists():
    """Issue 48: 10.4's capacity one off got "n items have n - 1 gaps"; its slip is the rounding up."""
    from course.chapters.ch10 import _key_10_4

    ex = EXERCISES["10.4"]
    capacity = _key_10_4(ex.spec)["capacity"]
    hint = unit_hint(capacity - 1, capacity, "count of tokens")[1]
    assert "round" in hint and "gaps" not in hint

"""Bubble chart (Lab 05 Act II): bubble share vs micro-batches, linked to the configurator.

Expected values are hand computations of (p-1)/(m+p-1) (Narayanan et al. 2021),
never numbers read back from the instrument under test.
"""

from __future__ import annotations

import itertools

import pytest

from course.instruments.bubble import BUBBLE_CEILING, MICROBATCH_GRID, BubbleChart
from course.instruments.configurator import Configurator

from .helpers import assert_alive, changed, mark_arrays, same_figures


def set_controls(inst, **values):
    with inst.batch():
        for name, value in values.items():
            inst.controls[name].value = value


@pytest.fixture(scope="module")
def chart():
    return BubbleChart()


@pytest.mark.parametrize("p, m, share", [(4, 8, 3 / 11), (8, 32, 7 / 39), (1, 1, 0.0), (4, 27, 0.10), (64, 1, 63 / 64)])
def test_current_point_is_the_hand_computed_share(chart, p, m, share):
    set_controls(chart, pp=p, microbatches=m)
    r = chart.result
    assert r["bubble_fraction"] == pytest.approx(share, abs=1e-12)
    assert r["bubble_overhead"] == pytest.approx((p - 1) / m, abs=1e-12)
    assert chart.point.y[0] == pytest.approx(100 * share)
    assert_alive(chart)


def test_curve_is_the_formula_over_the_grid(chart):
    set_controls(chart, pp=8, microbatches=16)
    expected = [100 * 7 / (m + 7) for m in range(1, 65)]
    assert list(chart.curve.x) == list(MICROBATCH_GRID)
    assert list(chart.curve.y) == pytest.approx(expected)


@pytest.mark.parametrize("p, needed", [(1, 1), (2, 10), (4, 28), (8, 64)])
def test_fewest_microbatches_under_ten_percent(chart, p, needed):
    # (p-1)/(m+p-1) < 0.1  <=>  m > 9(p-1); 9(p-1) itself gives exactly 10 %
    chart.controls["pp"].value = p
    assert chart.result["min_microbatches"] == needed


def test_bubble_over_ceiling_is_a_reachable_warning(chart):
    set_controls(chart, pp=4, microbatches=27)  # exactly 10 %: not above the ceiling
    assert "bubble_over_ceiling" not in chart.failures
    chart.controls["microbatches"].value = 26  # 3/29 = 10.3 %
    assert chart.failures == ["bubble_over_ceiling"]
    assert 3 / 29 > BUBBLE_CEILING
    chart.controls["microbatches"].value = 28
    assert chart.failures == []
    assert_alive(chart)


def test_every_control_value_keeps_it_alive_and_the_figure_is_never_rebuilt(chart):
    figures, marks = list(chart.figures), [m for f in chart.figures for m in f.marks]
    before = mark_arrays(chart)
    for p, m in itertools.product((1, 2, 7, 16, 64), (1, 5, 64)):
        set_controls(chart, pp=p, microbatches=m)
        assert_alive(chart)
    assert same_figures(chart, figures, marks)
    assert changed(before, mark_arrays(chart))


def test_follows_the_configurator_both_ways():
    conf = Configurator(model="gpt3-175b", cluster="h100-1024", tp=8, pp=4, microbatches=8)
    chart = BubbleChart().follow_controls(conf)
    assert (chart.controls["pp"].value, chart.controls["microbatches"].value) == (4, 8)
    assert chart.result["bubble_fraction"] == pytest.approx(3 / 11)
    conf.controls["pp"].value = 8
    conf.controls["microbatches"].value = 4
    assert chart.result["bubble_fraction"] == pytest.approx(7 / 11)
    assert chart.result["bubble_fraction"] == pytest.approx(conf.result["bubble_fraction"])
    assert "bubble_over_ceiling" in chart.failures
    chart.controls["microbatches"].value = 64  # the chart's slider moves the configurator too
    assert conf.controls["microbatches"].value == 64
    assert conf.result["bubble_fraction"] == pytest.approx(7 / 71)

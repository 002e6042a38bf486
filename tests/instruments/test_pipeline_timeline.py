"""Pipeline schedule timeline: its measured idle share is the bubble formula."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course import core
from course.instruments.charts import segment_count
from course.instruments.pipeline_timeline import (
    SCHEDULES, PipelineTimeline, measured_idle_share, measured_peak_in_flight, schedule_columns)

from .helpers import assert_alive, changed, mark_arrays, same_figures


@pytest.fixture(scope="module")
def timeline():
    return PipelineTimeline()


def set_controls(inst, **values):
    with inst.batch():
        for name, value in values.items():
            inst.controls[name].value = value


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_measured_idle_share_is_bubble_fraction(timeline, schedule):
    for p, m in itertools.product((1, 2, 4, 8), (1, 3, 8, 16)):
        set_controls(timeline, schedule=schedule, stages=p, microbatches=m, backward_ratio=2.0)
        r = timeline.result
        assert r["measured_idle_share"] == pytest.approx((p - 1) / (m + p - 1), abs=1e-12), (p, m)
        assert r["bubble_fraction"] == pytest.approx(core.bubble_fraction(p, m), rel=1e-12)


def test_bubble_same_for_gpipe_and_1f1b_but_not_the_memory(timeline):
    # Narayanan et al. 2021: same bubble, 1F1B holds at most p micro-batches instead of m.
    set_controls(timeline, schedule="gpipe", stages=4, microbatches=12)
    gpipe = dict(timeline.result)
    timeline.controls["schedule"].value = "1f1b"
    one_f_one_b = dict(timeline.result)
    assert gpipe["measured_idle_share"] == pytest.approx(one_f_one_b["measured_idle_share"])
    assert gpipe["peak_in_flight"] == 12 == gpipe["in_flight_formula"]
    assert one_f_one_b["peak_in_flight"] == 4 == one_f_one_b["in_flight_formula"]
    # workbook 5.1: the "25 %" of (p-1)/m is the overhead relative to ideal compute, 3/15 = 20 % of the step
    assert one_f_one_b["bubble_overhead"] == pytest.approx(0.25)
    assert one_f_one_b["measured_idle_share"] == pytest.approx(0.2)


@pytest.mark.parametrize("p, m, v", [(4, 8, 2), (4, 12, 4), (2, 4, 2), (8, 16, 2)])
def test_interleaving_divides_the_measured_bubble(timeline, p, m, v):
    set_controls(timeline, schedule="interleaved", stages=p, microbatches=m, chunks=v, backward_ratio=2.0)
    r = dict(timeline.result)
    assert r["chunks"] == v
    # measured on the core's interleaved table: (p-1)/(v m + p-1), by hand
    assert r["measured_idle_share"] == pytest.approx((p - 1) / (v * m + p - 1), rel=1e-9)
    # Korthikanti et al. 2022: the first stage holds p (1 + (p-1)/(p v)) stage-sized micro-batches
    assert r["peak_in_flight"] == pytest.approx(p * (1 + (p - 1) / (p * v)))
    assert r["peak_in_flight"] == pytest.approx(r["in_flight_formula"])
    set_controls(timeline, schedule="1f1b")
    assert r["measured_idle_share"] < timeline.result["measured_idle_share"]


def test_interleaved_needs_m_multiple_of_p(timeline):
    set_controls(timeline, schedule="interleaved", stages=4, microbatches=6, chunks=2)
    assert timeline.failures == ["invalid_input"]
    assert "multiple" in timeline.failure_messages["invalid_input"]
    timeline.controls["microbatches"].value = 8
    assert timeline.failures == []


def test_helpers_on_a_hand_made_table():
    # two stages, one micro-batch: F on stage 0 [0,1], F on stage 1 [1,2], B on stage 1 [2,4], B on stage 0 [4,6]
    table = {"stage": [0, 1, 1, 0], "microbatch": [0, 0, 0, 0], "chunk": [0, 0, 0, 0],
             "phase": ["forward", "forward", "backward", "backward"], "start": [0, 1, 2, 4], "end": [1, 2, 4, 6]}
    cols = schedule_columns(table)
    assert measured_idle_share(cols, 2) == pytest.approx(1 - 6 / 12)  # = (p-1)/(m+p-1) = 1/2
    assert measured_peak_in_flight(cols) == 1


def test_marks_change_in_the_same_figure(timeline):
    set_controls(timeline, schedule="1f1b", stages=4, microbatches=8)
    figs, marks = list(timeline.figures), [m for f in timeline.figures for m in f.marks]
    before = mark_arrays(timeline)
    timeline.controls["stages"].value = 6
    assert same_figures(timeline, figs, marks)
    assert changed(before, mark_arrays(timeline))
    assert segment_count(timeline.fwd.y) == 6 * 8  # one forward bar per stage and micro-batch, one path


def _check(timeline):
    assert_alive(timeline)
    assert "invalid_input" not in timeline.failures or timeline.result == {}
    r = timeline.result
    if r:
        assert 0 <= r["measured_idle_share"] < 1
        assert r["measured_idle_share"] == pytest.approx(r["bubble_fraction"], abs=1e-9)
        assert r["peak_in_flight"] == pytest.approx(r["in_flight_formula"])
    else:  # only the interleaved schedule with m not a multiple of p is refused
        v = timeline.values()
        assert v["schedule"] == "interleaved" and v["microbatches"] % v["stages"]


def test_grid_never_escapes(timeline):
    for schedule, p, m, v in itertools.product(SCHEDULES, (1, 16), (1, 32), (1, 4)):
        set_controls(timeline, schedule=schedule, stages=p, microbatches=m, chunks=v)
        _check(timeline)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(schedule=st.sampled_from(SCHEDULES), p=st.integers(1, 16), m=st.integers(1, 32), v=st.integers(1, 4),
       ratio=st.sampled_from([1.0, 1.5, 2.0, 3.0]))
def test_fuzz(timeline, schedule, p, m, v, ratio):
    set_controls(timeline, schedule=schedule, stages=p, microbatches=m, chunks=v, backward_ratio=ratio)
    _check(timeline)


def test_doctests_of_the_planner_instruments():
    import doctest

    import course.instruments.pipeline_timeline as timeline_module
    import course.instruments.scaling as scaling_module

    for module in (timeline_module, scaling_module):
        assert doctest.testmod(module).failed == 0, module.__name__

"""Pipeline schedule timeline: its measured idle share is the bubble formula."""

from __future__ import annotations

import itertools

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
    assert segment_count(timeline.passes.y[0]) == 6 * 8  # one forward bar per stage and micro-batch, one path


def _check(timeline):
    assert_alive(timeline)
    assert "invalid_input" not in timeline.failures or timeline.result == {}
    r = timeline.result
    if r:
        assert 0 <= r["measured_idle_share"] < 1
        exact = r["schedule"] not in ("zb-h1", "dualpipe") or (
            r["microbatches"] >= r["stages"] and r["backward_ratio"] <= 2.0)
        if exact:
            assert r["measured_idle_share"] == pytest.approx(r["bubble_fraction"], abs=1e-9)
        else:  # ZB-H1 with m < p or W > F: the drawn order keeps more bubble than the formula, never less
            assert r["measured_idle_share"] >= r["bubble_fraction"] - 1e-9
        assert r["peak_in_flight"] == pytest.approx(r["in_flight_formula"])
    else:  # refused: interleaved with m not a multiple of p, DualPipe without an even p and an even m >= 2p
        v = timeline.values()
        p, m = v["stages"], v["microbatches"]
        assert (v["schedule"] == "interleaved" and m % p) or (
            v["schedule"] == "dualpipe" and (p % 2 or m % 2 or m < 2 * p))


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


@pytest.mark.parametrize("p, m", [(4, 8), (8, 16), (3, 5)])
def test_zb_h1_draws_weight_passes_and_a_third_of_the_bubble(timeline, p, m):
    set_controls(timeline, schedule="1f1b", stages=p, microbatches=m, backward_ratio=2.0)
    one_f_one_b = dict(timeline.result)
    timeline.controls["schedule"].value = "zb-h1"
    r = dict(timeline.result)
    # Qi et al. 2023: bubble (p-1)(F + B - W) with F = B = W, against 1F1B's (p-1)(F + B + W): a third
    assert r["measured_idle_share"] == pytest.approx((p - 1) / (3 * m + p - 1), abs=1e-12)
    assert r["bubble_fraction"] == pytest.approx(r["measured_idle_share"], abs=1e-12)
    assert r["bubble_overhead"] == pytest.approx(one_f_one_b["bubble_overhead"] / 3)
    assert r["weight_passes"] == p * m == segment_count(timeline.passes.y[2])
    assert r["peak_in_flight"] == one_f_one_b["peak_in_flight"] == min(p, m)  # 1F1B's memory


@pytest.mark.parametrize("p, m", [(4, 8), (8, 16), (6, 20)])
def test_dualpipe_draws_two_directions(timeline, p, m):
    set_controls(timeline, schedule="dualpipe", stages=p, microbatches=m, backward_ratio=2.0)
    r = dict(timeline.result)
    assert timeline.failures == [] and r["directions"] == 2
    # DeepSeek-V3 sec. 3.2.1 / Table 2: (p/2-1)(F&B + B - 3W) with F = B = W = 1 and F&B = 3: (p/2-1) t_f
    assert r["makespan"] == pytest.approx(3 * m + (p / 2 - 1))
    assert r["measured_idle_share"] == pytest.approx((p / 2 - 1) / (3 * m + p / 2 - 1), abs=1e-12)
    assert r["peak_in_flight"] == p + 1 == r["in_flight_formula"]
    # micro-batch m/2 + 1 enters at the last stage: its first forward bar sits on row p - 1
    assert len(timeline.numbers.text) == 3 * p * m or timeline.numbers.text == [""]  # numbered up to MAX_LABELS
    table = core.pipeline_schedule(p, m, schedule="dualpipe")
    first = table["start"][(table["microbatch"] == m // 2) & (table["phase"] == "forward")].min()
    row = table["stage"][(table["microbatch"] == m // 2) & (table["phase"] == "forward") & (table["start"] == first)]
    assert row.tolist() == [p - 1]
    assert segment_count(timeline.passes.y[0]) == p * m


def test_dualpipe_refuses_what_deepseek_refuses(timeline):
    set_controls(timeline, schedule="dualpipe", stages=4, microbatches=6)
    assert timeline.failures == ["invalid_input"] and "DualPipe" in timeline.failure_messages["invalid_input"]
    timeline.controls["microbatches"].value = 8
    assert timeline.failures == []


def test_chunks_slider_redraws_from_any_schedule(timeline):
    # the noticed bug: on the opening 1F1B schedule the chunks slider changed nothing on the chart
    set_controls(timeline, schedule="1f1b", stages=4, microbatches=8, chunks=1, backward_ratio=2.0)
    before, updates = mark_arrays(timeline), timeline.update_count
    timeline.controls["chunks"].value = 2
    assert timeline.update_count == updates + 1  # one move, one redraw
    assert timeline.result["schedule"] == "interleaved" and timeline.result["chunks"] == 2
    assert changed(before, mark_arrays(timeline))
    assert segment_count(timeline.passes.y[0]) == 4 * 8 * 2
    before = mark_arrays(timeline)
    timeline.controls["chunks"].value = 4
    assert timeline.result["chunks"] == 4 and changed(before, mark_arrays(timeline))
    assert timeline.result["measured_idle_share"] == pytest.approx(3 / (4 * 8 + 3))
    timeline.controls["chunks"].value = 1  # back to one chunk: still the interleaved schedule, now 1F1B's bubble
    assert timeline.result["measured_idle_share"] == pytest.approx(3 / (8 + 3))


def test_doctests_of_the_planner_instruments():
    import doctest

    import course.instruments.pipeline_timeline as timeline_module
    import course.instruments.scaling as scaling_module

    for module in (timeline_module, scaling_module):
        assert doctest.testmod(module).failed == 0, module.__name__

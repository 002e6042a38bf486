"""course.core.pipeline: bubble formulas, workbook chapter 5, and schedules measured on their own tables."""

import itertools

import numpy as np
import pytest

from course import core


def idle_share(table, p):
    """Measured on the schedule: 1 - busy / (p * makespan)."""
    makespan = table["end"].max() - table["start"].min()
    return 1.0 - (table["end"] - table["start"]).sum() / (p * makespan), makespan


def peak_in_flight(table, stage=0):
    """Most chunk-passes whose forward has started and whose backward has not ended, on one stage."""
    on = table["stage"] == stage
    fwd = on & (table["phase"] == "forward")
    bwd = on & (table["phase"] == "backward")
    events = sorted([(t, 1) for t in table["start"][fwd]] + [(t, -1) for t in table["end"][bwd]],
                    key=lambda e: (e[0], e[1]))
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


def test_overhead_and_fraction_by_hand():
    assert core.bubble_overhead(4, 12) == 0.25                   # workbook 5.1: 3/12
    assert core.bubble_fraction(4, 12) == pytest.approx(3 / 15)  # the same bubble as a share of the step
    assert core.bubble_overhead(4, 12, 4) == pytest.approx(3 / 48)  # workbook 5.3
    assert core.bubble_overhead(16, 4) == pytest.approx(3.75)    # workbook 9.6: overhead, not a share
    assert core.bubble_fraction(16, 4) == pytest.approx(15 / 19)
    assert core.bubble_fraction(16, 4, 2) == pytest.approx(15 / 23)
    assert core.bubble_overhead(1, 7) == 0.0 and core.bubble_fraction(1, 7) == 0.0


def test_broadcasting():
    got = core.bubble_fraction(np.array([[2], [8]]), np.array([1, 4, 16]))
    assert got.shape == (2, 3)
    assert got[1, 1] == pytest.approx(7 / 11)


def test_lab05_formula_is_not_the_bubble():
    # Lab 05 used (PP-1)/(PP*m); for p=4, m=12 that is 6.25 %, far below the real 20 % share.
    assert (4 - 1) / (4 * 12) < core.bubble_fraction(4, 12) / 3


def test_step_time():
    # (m + p - 1)(tf + tb): 4 stages, 8 micro-batches, tf=1, tb=2 -> 11 * 3 = 33
    assert core.pipeline_step_time(4, 8, 1.0, 2.0) == 33.0
    assert core.pipeline_step_time(4, 8, 1.0, 2.0, v=2) == pytest.approx((8 + 1.5) * 3)


def test_in_flight():
    assert core.in_flight_microbatches(4, 12, "gpipe") == 12
    assert core.in_flight_microbatches(4, 12, "1f1b") == 4
    assert core.in_flight_microbatches(8, 3, "1f1b") == 3
    # Korthikanti 2022 sec. 4.2.3: interleaving multiplies the first stage's memory by 1 + (p-1)/(p v)
    assert core.in_flight_microbatches(8, 64, "interleaved", 4) == pytest.approx(8 * (1 + 7 / 32))


def test_workbook_5_2_activation_memory_in_1f1b():
    # The workbook counts p-1 = 3 stashed micro-batches at the end of warm-up (2 GB each): 6 GB;
    # the first steady-state forward adds one more, which is the peak min(p, m) = 4.
    assert (core.in_flight_microbatches(4, 12, "1f1b") - 1) * 2 == 6


def test_workbook_5_4_p2p_volume():
    assert core.p2p_bytes_per_step(500e6, 4, 12, 4) / 1e9 == pytest.approx(180)
    assert core.p2p_bytes_per_microbatch(4096, 1, 8192, 2) == 4096 * 8192 * 2
    assert core.p2p_bytes_per_microbatch(4096, 1, 8192, 2, v=4) == 4 * 4096 * 8192 * 2


def test_workbook_5_6_min_microbatches():
    assert core.min_microbatches_for_bubble(8, 0.05) == 141       # m = 140 gives exactly 5 %
    assert core.bubble_overhead(8, 140) == pytest.approx(0.05)
    assert core.min_microbatches_for_bubble(8, 0.05, v=2) == 71   # 70 is exactly 5 % again
    assert core.min_microbatches_for_bubble(8, 0.05, v=4) == 36
    assert core.min_microbatches_for_bubble(1, 0.01) == 1
    # as a share of the step: 7/(m+7) < 0.05  <=>  m > 133
    assert core.min_microbatches_for_bubble(8, 0.05, measure="fraction") == 134


@pytest.mark.parametrize("p, target, v", list(itertools.product([2, 3, 8, 16], [0.01, 0.05, 0.1, 0.3], [1, 2, 3])))
def test_min_microbatches_is_the_smallest(p, target, v):
    m = core.min_microbatches_for_bubble(p, target, v)
    assert core.bubble_overhead(p, m, v) < target
    if m > 1:
        assert core.bubble_overhead(p, m - 1, v) >= target * (1 - 1e-12)


def test_layers_per_stage_workbook_9_2():
    assert core.max_layers_per_stage(126, 16) == 8
    assert core.stages_with_max_layers(126, 16) == 14
    split = core.layers_per_stage(126, 16)
    assert split.sum() == 126 and sorted(set(split.tolist())) == [7, 8] and (split == 7).sum() == 2
    assert core.layers_per_stage(96, 8).tolist() == [12] * 8


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize("p, m", [(1, 1), (2, 1), (4, 8), (4, 12), (8, 3), (5, 7), (16, 4)])
@pytest.mark.parametrize("tb", [1.0, 2.0, 3.0])
def test_measured_bubble_equals_formula(schedule, p, m, tb):
    t = core.pipeline_schedule(p, m, schedule=schedule, t_forward=1.0, t_backward=tb)
    assert len(t["stage"]) == 2 * p * m
    idle, makespan = idle_share(t, p)
    assert idle == pytest.approx(core.bubble_fraction(p, m), abs=1e-12)
    assert makespan == pytest.approx(core.pipeline_step_time(p, m, 1.0, tb))


@pytest.mark.parametrize("p, v, groups", [(2, 2, 1), (2, 3, 3), (4, 2, 2), (4, 4, 3), (8, 2, 2), (8, 4, 1)])
@pytest.mark.parametrize("tb", [1.0, 2.0])
def test_interleaved_measured_bubble_equals_formula(p, v, groups, tb):
    m = p * groups
    t = core.pipeline_schedule(p, m, v, "interleaved", 1.0, tb)
    assert len(t["stage"]) == 2 * p * m * v
    assert set(t["chunk"].tolist()) == set(range(v))
    idle, makespan = idle_share(t, p)
    assert idle == pytest.approx(core.bubble_fraction(p, m, v), abs=1e-12)
    assert makespan == pytest.approx(core.pipeline_step_time(p, m, 1.0, tb, v))
    # peak held activations of stage 0, in stage-sized micro-batches, is the Korthikanti factor
    assert peak_in_flight(t) / v == pytest.approx(core.in_flight_microbatches(p, m, "interleaved", v))


@pytest.mark.parametrize("schedule, expected", [("gpipe", 12), ("1f1b", 4)])
def test_peak_in_flight_measured(schedule, expected):
    t = core.pipeline_schedule(4, 12, schedule=schedule)
    assert peak_in_flight(t) == expected == core.in_flight_microbatches(4, 12, schedule)


def test_schedule_respects_dependencies_and_never_overlaps():
    t = core.pipeline_schedule(4, 8, 2, "interleaved")
    p, v = 4, 2
    end = {}
    for s, i, c, ph, st, en in zip(t["stage"], t["microbatch"], t["chunk"], t["phase"], t["start"], t["end"]):
        end[(int(i), int(c) * p + int(s), ph)] = (st, en)
    for (i, k, ph), (st, _) in end.items():
        if ph == "forward" and k > 0:
            assert st >= end[(i, k - 1, "forward")][1]
        if ph == "backward":
            before = end[(i, k, "forward")] if k == p * v - 1 else end[(i, k + 1, "backward")]
            assert st >= before[1]
    for s in range(p):
        on = t["stage"] == s
        starts, ends = t["start"][on], t["end"][on]
        assert np.all(starts[1:] >= ends[:-1] - 1e-12)


def _passes_in_dependency_order(t, p):
    """Each (micro-batch, stage) has one F, B and W; F after upstream F, B after downstream B, W after B."""
    end = {}
    for s, i, d, ph, st, en in zip(t["stage"], t["microbatch"], t["direction"], t["phase"], t["start"], t["end"]):
        key = (int(i), int(s), str(ph))
        assert key not in end
        end[key] = (int(d), st, en)
    for (i, s, ph), (d, st, _) in end.items():
        up = s - 1 if d == 0 else s + 1          # direction 1 enters at the last stage
        first, last = (s == 0, s == p - 1) if d == 0 else (s == p - 1, s == 0)
        if ph == "forward" and not first:
            assert st >= end[(i, up, "forward")][2] - 1e-12
        if ph == "backward":
            assert st >= (end[(i, s, "forward")] if last else end[(i, 2 * s - up, "backward")])[2] - 1e-12
        if ph == "weight":
            assert st >= end[(i, s, "backward")][2] - 1e-12
    for s in range(p):
        on = t["stage"] == s
        assert np.all(t["start"][on][1:] >= t["end"][on][:-1] - 1e-12)
    return end


def _peak_until_weight(t):
    """Micro-batches whose forward has started and whose W has not ended, most on any stage."""
    peak = 0
    for s in np.unique(t["stage"]):
        on = t["stage"] == s
        events = sorted([(x, 1) for x in t["start"][on & (t["phase"] == "forward")]]
                        + [(x, -1) for x in t["end"][on & (t["phase"] == "weight")]])
        peak = max(peak, int(np.max(np.cumsum([e for _, e in events]))))
    return peak


@pytest.mark.parametrize("p, m", [(1, 3), (2, 2), (3, 5), (4, 4), (4, 8), (4, 12), (8, 16), (16, 32)])
@pytest.mark.parametrize("tb", [1.0, 2.0])
def test_zb_h1_measured_bubble_is_a_third_of_1f1b(p, m, tb):
    # Qi et al. 2023, sec. 3.1: ZB-H1's bubble is (p-1)(T_F + T_B - T_W), 1F1B's peak memory (p micro-batches)
    t = core.pipeline_schedule(p, m, schedule="zb-h1", t_forward=1.0, t_backward=tb)
    assert len(t["stage"]) == 3 * p * m and set(t["phase"].tolist()) == {"forward", "backward", "weight"}
    _passes_in_dependency_order(t, p)
    f, b, w = 1.0, tb / 2, tb / 2
    idle, makespan = idle_share(t, p)
    assert makespan == pytest.approx(m * (f + b + w) + (p - 1) * (f + b - w))
    overhead = core.schedule_bubble_overhead(p, m, "zb-h1", shares=(f, b, w))
    assert idle == pytest.approx(overhead / (1 + overhead), abs=1e-12)
    assert _peak_until_weight(t) == min(p, m) == core.schedule_memory(p, m, "zb-h1")[0]


@pytest.mark.parametrize("p, m", [(2, 4), (4, 8), (4, 10), (6, 12), (8, 16), (8, 32), (16, 32)])
@pytest.mark.parametrize("tb", [1.0, 2.0])
def test_dualpipe_feeds_both_ends_and_measures_its_bubble(p, m, tb):
    # DeepSeek-AI 2024, sec. 3.2.1 and Table 2: bubble (p/2-1)(F&B + B - 3W), activations p + 1
    t = core.pipeline_schedule(p, m, schedule="dualpipe", t_forward=1.0, t_backward=tb)
    assert len(t["stage"]) == 3 * p * m
    end = _passes_in_dependency_order(t, p)
    # micro-batches 1..m/2 start at stage 0, m/2+1..m at stage p-1, one stage per device in each direction
    first_forward = {i: min((st, s) for (j, s, ph), (_, st, _) in end.items() if j == i and ph == "forward")[1]
                     for i in range(m)}
    assert all(first_forward[i] == (0 if i < m // 2 else p - 1) for i in range(m))
    assert sorted(set(t["direction"].tolist())) == [0, 1]
    f, b, w = 1.0, tb / 2, tb / 2
    bubble = (p / 2 - 1) * ((f + b + w) + b - 3 * w)  # F&B taken as F + B + W
    idle, makespan = idle_share(t, p)
    assert makespan == pytest.approx(m * (f + b + w) + bubble)
    overhead = core.schedule_bubble_overhead(p, m, "dualpipe", shares=(f, b, w))
    assert idle == pytest.approx(overhead / (1 + overhead), abs=1e-12)
    assert _peak_until_weight(t) == p + 1 == core.schedule_memory(p, m, "dualpipe")[0]


def test_zb_h1_with_slow_weight_passes_keeps_more_than_the_formula():
    # the hand-made ZB-H1 order is tuned for W <= F: with t_b = 3 t_f (W = 1.5 F) it keeps more bubble, never less
    t = core.pipeline_schedule(4, 8, schedule="zb-h1", t_forward=1.0, t_backward=3.0)
    overhead = core.schedule_bubble_overhead(4, 8, "zb-h1", shares=(1.0, 1.5, 1.5))
    assert idle_share(t, 4)[0] > overhead / (1 + overhead)


def test_interleaved_with_one_chunk_is_1f1b():
    a = core.pipeline_schedule(4, 6, 1, "interleaved")
    b = core.pipeline_schedule(4, 6, 1, "1f1b")
    assert all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("call", [
    lambda: core.bubble_fraction(0, 4),
    lambda: core.bubble_fraction(4, 0),
    lambda: core.bubble_overhead(4, 4, 0),
    lambda: core.bubble_overhead(4, 2.5),
    lambda: core.pipeline_schedule(4, 8, schedule="zero-bubble"),
    lambda: core.pipeline_schedule(4, 6, 2, "interleaved"),
    lambda: core.pipeline_schedule(4, 8, t_backward=0.0),
    lambda: core.min_microbatches_for_bubble(8, 0.0),
    lambda: core.min_microbatches_for_bubble(8, 1.0, measure="fraction"),
    lambda: core.max_layers_per_stage(8, 16),
    lambda: core.in_flight_microbatches(4, 8, "pipedream"),
    lambda: core.p2p_bytes_per_step(-1.0, 4, 8),
])
def test_invalid_inputs_raise(call):
    with pytest.raises(ValueError):
        call()


def test_errors_name_the_parameter():
    with pytest.raises(ValueError, match="m must"):
        core.pipeline_schedule(4, 6, 2, "interleaved")
    with pytest.raises(ValueError, match="schedule"):
        core.pipeline_schedule(4, 8, schedule="pipedream")
    with pytest.raises(ValueError, match="DualPipe needs an even p"):
        core.pipeline_schedule(4, 6, schedule="dualpipe")  # m < 2p, as DeepSeek's dualpipe.py asserts
    with pytest.raises(ValueError, match="DualPipe needs an even p"):
        core.pipeline_schedule(3, 8, schedule="dualpipe")
    with pytest.raises(ValueError, match="shares"):
        core.schedule_bubble_overhead(4, 8, "zb-h1", shares=(1.0, 0.0, 1.0))


def test_tutorial_pp8_share_below_10_percent():
    # Solver tutorial, section 5 exercise: PP = 8, bubble share (P-1)/(P-1+M) below 10 %:
    # 7/(7+63) is exactly 10 %, so M = 64.
    assert core.min_microbatches_for_bubble(8, 0.10, measure="fraction") == 64
    assert core.bubble_fraction(8, 64) < 0.10 <= core.bubble_fraction(8, 63) + 1e-15

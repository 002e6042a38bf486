"""Property-based invariants (hypothesis) of collectives, memory, pipeline and tensor."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course import core

CORE = settings(max_examples=100, deadline=None)

size = st.integers(min_value=0, max_value=10**12).map(float)  # whole bytes
bandwidth = st.floats(min_value=1e6, max_value=1e13, allow_nan=False, allow_infinity=False)
latency = st.floats(min_value=0.0, max_value=1e-3, allow_nan=False, allow_infinity=False)
ranks = st.integers(min_value=1, max_value=100_000)
algorithm = st.sampled_from(core.ALLREDUCE_ALGORITHMS)


# --- collectives ----------------------------------------------------------------------------

@CORE
@given(size, ranks, bandwidth, latency, algorithm)
def test_no_algorithm_beats_the_lower_bound(message, n, bw, alpha, algo):
    t = core.allreduce_time(message, n, bw, alpha, algo)
    bound = core.allreduce_lower_bound(message, n, bw, alpha)
    assert t >= bound * (1 - 1e-12)
    # in particular the pure bandwidth bound 2(p-1)/p * n * beta
    assert t >= 2 * (n - 1) / n * message / bw * (1 - 1e-12)


@CORE
@given(size, size, st.integers(min_value=2, max_value=100_000), bandwidth, latency, algorithm)
def test_time_grows_with_message_size(a, b, n, bw, alpha, algo):
    small, large = sorted((a, b))
    assert core.allreduce_time(small, n, bw, alpha, algo) <= core.allreduce_time(large, n, bw, alpha, algo)
    if large > small:  # strictly, in the bandwidth term (a latency can hide one byte below float resolution)
        assert core.allreduce_time(large, n, bw, 0.0, "ring") > core.allreduce_time(small, n, bw, 0.0, "ring")


@CORE
@given(size, st.integers(min_value=2, max_value=4096), bandwidth)
def test_naive_over_ring_is_p(message, n, bw):
    if message > 0:
        ratio = core.allreduce_time(message, n, bw, 0.0, "naive") / core.allreduce_time(message, n, bw, 0.0, "ring")
        assert ratio == pytest.approx(n)


@CORE
@given(size, st.integers(min_value=1, max_value=16), bandwidth, bandwidth, latency, latency)
def test_hierarchical_with_one_node_is_the_flat_ring(message, g, bw_in, bw_out, a_in, a_out):
    got = core.hierarchical_allreduce_time(message, g, 1, bw_in, bw_out, a_in, a_out)
    assert got == pytest.approx(core.allreduce_time(message, g, bw_in, a_in), rel=1e-12, abs=1e-300)


@CORE
@given(size, st.integers(min_value=1, max_value=16), st.integers(min_value=1, max_value=4096), bandwidth, latency)
def test_hierarchical_never_beats_flat_ring_on_the_fast_fabric(message, g, nodes, bw, alpha):
    # With the inter-node links as fast as NVLink, two levels cost at least the flat ring's lower bound.
    t = core.hierarchical_allreduce_time(message, g, nodes, bw, bw, alpha, alpha)
    assert t >= core.allreduce_lower_bound(message, g * nodes, bw, 0.0) * (1 - 1e-12)


@CORE
@given(st.integers(min_value=1, max_value=4096), bandwidth, st.floats(min_value=1e-7, max_value=1e-3),
       algorithm, algorithm)
def test_crossover_is_where_times_meet(n, bw, alpha, a, b):
    x = core.crossover_message_bytes(n, bw, alpha, a, b)
    if np.isfinite(x) and x > 0:
        ta, tb = core.allreduce_time(x, n, bw, alpha, a), core.allreduce_time(x, n, bw, alpha, b)
        assert ta == pytest.approx(tb, rel=1e-9)


@CORE
@given(size, st.integers(min_value=1, max_value=10_000), st.floats(min_value=1e-6, max_value=1e3))
def test_busbw_of_a_link_speed_ring_is_the_link_speed(message, n, bw):
    if message > 0 and n > 1:
        t = core.allreduce_time(message, n, bw)
        assert core.bus_bandwidth(message, n, t) == pytest.approx(bw)


# --- memory ---------------------------------------------------------------------------------

@CORE
@given(st.floats(min_value=0, max_value=1e13), st.integers(min_value=1, max_value=100_000))
def test_zero_memory_never_rises_with_stage(params, dp):
    per_stage = core.model_state_bytes(params, np.arange(4), dp)
    assert np.all(np.diff(per_stage) <= 1e-9 * max(params, 1.0))
    assert per_stage[0] == pytest.approx(16 * params)


@CORE
@given(st.floats(min_value=1, max_value=1e13), st.integers(min_value=0, max_value=3),
       st.integers(min_value=1, max_value=10_000))
def test_zero_memory_never_rises_with_dp(params, stage, dp):
    assert core.model_state_bytes(params, stage, dp + 1) <= core.model_state_bytes(params, stage, dp)


@CORE
@given(st.integers(1, 32768), st.integers(1, 64), st.integers(1, 64).map(lambda k: 128 * k),
       st.sampled_from([8, 16, 32, 64, 128]), st.sampled_from([1, 2, 4, 8]), st.booleans())
def test_activations_shrink_with_recompute_and_sp(s, b, h, a, t, sp):
    none, sel, full = (core.activation_bytes_per_layer(s, b, h, a, t, sp, r) for r in ("none", "selective", "full"))
    assert none >= sel >= full > 0
    assert core.activation_bytes_per_layer(s, b, h, a, t, True, "none") <= \
        core.activation_bytes_per_layer(s, b, h, a, t, False, "none") * (1 + 1e-12)


# --- pipeline -------------------------------------------------------------------------------

pp = st.integers(min_value=1, max_value=10_000)


@CORE
@given(pp, pp, st.integers(min_value=1, max_value=64))
def test_bubble_fraction_in_unit_interval_and_consistent(p, m, v):
    f = core.bubble_fraction(p, m, v)
    o = core.bubble_overhead(p, m, v)
    assert 0 <= f < 1
    assert f == pytest.approx(o / (1 + o), rel=1e-12, abs=1e-300)


@CORE
@given(pp, pp, st.integers(min_value=1, max_value=8))
def test_more_microbatches_or_chunks_shrink_the_bubble(p, m, v):
    assert core.bubble_fraction(p, m + 1, v) <= core.bubble_fraction(p, m, v)
    assert core.bubble_fraction(p, m, v + 1) <= core.bubble_fraction(p, m, v)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 8), st.integers(1, 12), st.sampled_from(["gpipe", "1f1b"]),
       st.floats(min_value=0.25, max_value=4.0))
def test_measured_schedule_bubble_is_the_formula(p, m, schedule, ratio):
    t = core.pipeline_schedule(p, m, schedule=schedule, t_forward=1.0, t_backward=ratio)
    makespan = t["end"].max() - t["start"].min()
    idle = 1 - (t["end"] - t["start"]).sum() / (p * makespan)
    assert idle == pytest.approx(core.bubble_fraction(p, m), abs=1e-9)


@CORE
@given(st.integers(1, 1000), st.floats(min_value=1e-4, max_value=10.0), st.integers(1, 8))
def test_min_microbatches_meets_target(p, target, v):
    m = core.min_microbatches_for_bubble(p, target, v)
    assert core.bubble_overhead(p, m, v) < target
    assert m == 1 or core.bubble_overhead(p, m - 1, v) >= target * (1 - 1e-9)


@CORE
@given(st.integers(1, 1000), st.integers(1, 1000))
def test_layer_split_is_balanced(extra, p):
    layers = p + extra - 1
    split = core.layers_per_stage(layers, p)
    assert split.sum() == layers and split.max() - split.min() <= 1
    assert split.max() == core.max_layers_per_stage(layers, p)
    assert (split == split.max()).sum() == core.stages_with_max_layers(layers, p)


# --- tensor ---------------------------------------------------------------------------------

@CORE
@given(st.integers(1, 64), st.sampled_from([1, 2, 4, 8, 16]), st.integers(1, 16384), bandwidth)
def test_tp_comm_is_zero_only_without_tp(k, t, s, bw):
    h = 128 * k
    per_layer = core.tp_comm_time_per_layer(s, 1, h, t, bw)
    assert (per_layer == 0) == (t == 1)


# --- invalid inputs -------------------------------------------------------------------------

bad_rank = st.one_of(st.integers(max_value=0), st.floats(min_value=1.1, max_value=1e6).filter(lambda x: x != int(x)),
                     st.just(float("nan")))


@CORE
@given(bad_rank, algorithm)
def test_bad_rank_counts_raise(n, algo):
    with pytest.raises(ValueError):
        core.allreduce_time(1e9, n, 1e9, 0.0, algo)


@CORE
@given(st.one_of(st.floats(max_value=0.0), st.just(float("nan")), st.just(float("inf"))))
def test_bad_bandwidth_raises(bw):
    with pytest.raises(ValueError):
        core.allreduce_time(1e9, 8, bw)


@CORE
@given(st.integers(max_value=-1) | st.integers(min_value=4))
def test_bad_zero_stage_raises(stage):
    with pytest.raises(ValueError):
        core.model_state_bytes(1e9, stage, 8)


@CORE
@given(st.integers(max_value=0), st.integers(min_value=1, max_value=100))
def test_bad_pipeline_sizes_raise(bad, good):
    with pytest.raises(ValueError):
        core.bubble_fraction(bad, good)
    with pytest.raises(ValueError):
        core.bubble_overhead(good, bad)

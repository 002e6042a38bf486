"""Property-based invariants (hypothesis) of data_parallel, lr, reliability, precision, economics, sgd."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from course.core import data_parallel as dp
from course.core import economics as ec
from course.core import lr
from course.core import precision as pr
from course.core import reliability as rel
from course.core import sgd

pos = st.floats(min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False)
small_int = st.integers(min_value=1, max_value=4096)
frac = st.floats(min_value=0.0, max_value=1.0)
slowdown = st.floats(min_value=1.0, max_value=100.0)
# Per-test settings (not a global profile, so teammates' hypothesis tests keep their own).
CORE = settings(max_examples=100, deadline=None)


# --- loss scaling ---------------------------------------------------------------------------

@CORE
@given(st.lists(st.booleans(), max_size=120), st.integers(min_value=1, max_value=50),
       st.integers(min_value=-20, max_value=40))
def test_loss_scale_stays_a_power_of_two(steps, interval, exponent):
    scale = pr.dynamic_loss_scale(steps, init_scale=2.0**exponent, growth_interval=interval)
    assert scale > 0
    assert math.log2(scale) == int(math.log2(scale))


@CORE
@given(st.lists(st.booleans(), min_size=1, max_size=120), st.integers(min_value=1, max_value=50))
def test_loss_scale_bounded_by_counts(steps, interval):
    # Each overflow halves, at most (good steps // interval) doublings happen.
    scale = pr.dynamic_loss_scale(steps, growth_interval=interval)
    halvings = sum(steps)
    max_doublings = (len(steps) - halvings) // interval
    assert 2.0 ** (16 - halvings) <= scale <= 2.0 ** (16 - halvings + max_doublings)


@CORE
@given(st.lists(st.booleans(), min_size=1, max_size=80))
def test_history_is_consistent_with_final_scale(steps):
    h = pr.loss_scale_history(steps, growth_interval=7)
    assert h["scale_after"][-1] == pr.dynamic_loss_scale(steps, growth_interval=7)
    assert np.array_equal(h["scale_used"][1:], h["scale_after"][:-1])
    assert np.all(h["growth_tracker"] < 7)
    assert np.all(h["growth_tracker"][np.asarray(steps)] == 0)


# --- formats --------------------------------------------------------------------------------

@CORE
@given(st.sampled_from(sorted(pr.FLOAT_FORMATS)))
def test_format_limits_ordered(name):
    f = pr.float_format(name)
    assert 0 < f.min_subnormal < f.min_normal < 1 < f.max < f.overflow_threshold
    assert f.min_subnormal == f.min_normal * f.epsilon


@CORE
@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_fp16_checks_agree_with_numpy(x):
    with np.errstate(over="ignore"):
        half = np.float16(x)
    assert pr.overflows(x, "fp16") == bool(np.isinf(half))
    assert pr.flushes_to_zero(x, "fp16") == bool(x != 0 and half == 0)


# --- reliability ----------------------------------------------------------------------------

@CORE
@given(st.floats(min_value=1.0, max_value=1e4), st.floats(min_value=1e3, max_value=1e8))
def test_daly_not_above_young_for_small_delta(delta, m):
    assume(delta < 0.5 * m)
    assert rel.daly_interval(delta, m) <= rel.young_interval(delta, m) * (1 + 1e-12)


@CORE
@given(st.floats(min_value=1e-3, max_value=1e6), st.floats(min_value=1e-3, max_value=1e6))
def test_daly_is_m_when_delta_at_least_2m(m, extra):
    assert rel.daly_interval(2 * m + extra, m) == m


@CORE
@given(pos, pos)
def test_young_minimizes_waste_locally(delta, m):
    tau = rel.young_interval(delta, m)
    w = rel.waste_fraction(tau, delta, m)
    assert w <= rel.waste_fraction(tau * 1.01, delta, m) * (1 + 1e-12)
    assert w <= rel.waste_fraction(tau * 0.99, delta, m) * (1 + 1e-12)


@CORE
@given(pos, small_int, small_int)
def test_cluster_mtbf_shrinks_with_more_components(m, a, b):
    assume(a < b)
    assert rel.cluster_mtbf(m, b) < rel.cluster_mtbf(m, a)


# --- sync vs async --------------------------------------------------------------------------

@CORE
@given(pos, small_int, frac, slowdown)
def test_sync_step_never_below_fast_nor_above_slow(t, n, f, s):
    sync = sgd.sync_step_time(t, n, f, s)
    assert t * (1 - 1e-12) <= sync <= s * t * (1 + 1e-12)
    assert sync >= sgd.async_worker_step_time(t, f, s) * (1 - 1e-12)


@CORE
@given(pos, small_int, frac, slowdown)
def test_sync_step_grows_with_workers(t, n, f, s):
    assert sgd.sync_step_time(t, n + 1, f, s) >= sgd.sync_step_time(t, n, f, s)


@CORE
@given(small_int, frac, slowdown)
def test_async_never_slower_in_raw_throughput(n, f, s):
    assert sgd.async_speedup(n, f, s) >= 1 - 1e-12
    assert 0 <= sgd.sync_idle_fraction(n, f, s) < 1


# --- data parallel --------------------------------------------------------------------------

@CORE
@given(pos, st.floats(min_value=0.0, max_value=1e6), st.integers(min_value=1, max_value=500))
def test_exposed_comm_between_last_bucket_and_total(tb, tc, k):
    exposed = dp.exposed_comm_time(tb, tc, k)
    assert tc / k * (1 - 1e-9) <= exposed <= tc * (1 + 1e-9)
    assert exposed <= dp.exposed_comm_time(tb, tc, 1) * (1 + 1e-9)


@CORE
@given(small_int, small_int, small_int)
def test_required_accum_steps_reaches_target_minimally(target, mb, n):
    steps = dp.required_accum_steps(target, mb, n)
    assert dp.effective_batch(mb, steps, n) >= target
    assert steps == 1 or dp.effective_batch(mb, steps - 1, n) < target


@CORE
@given(st.lists(st.floats(min_value=0.0, max_value=10.0), min_size=2, max_size=40),
       st.floats(min_value=0.01, max_value=2.0))
def test_diminishing_point_is_first_step_below_threshold(gains, threshold):
    gpus = np.arange(1, len(gains) + 2)
    s = np.concatenate([[1.0], 1.0 + np.cumsum(gains)])
    point = dp.diminishing_returns_gpus(gpus, s, threshold)
    m = dp.marginal_speedup(gpus, s)
    if point is None:
        assert np.all(m >= threshold)
    else:
        i = point - 1
        assert m[i] < threshold and np.all(m[:i] >= threshold)


@CORE
@given(small_int, pos, pos)
def test_dp_speedup_at_most_linear(n, tc, tm):
    assert dp.data_parallel_speedup(n, tc, tm) <= n * (1 + 1e-12)


# --- lr and economics -----------------------------------------------------------------------

@CORE
@given(pos, st.floats(min_value=1.0, max_value=1e6), st.floats(min_value=1.0, max_value=1e6))
def test_sqrt_rule_between_base_and_linear(base, b0, b1):
    assume(b1 >= b0)
    lin, sq = lr.linear_scaled_lr(base, b0, b1), lr.sqrt_scaled_lr(base, b0, b1)
    assert base * (1 - 1e-12) <= sq <= lin * (1 + 1e-12)


@CORE
@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=1, max_value=10**5),
       st.integers(min_value=1, max_value=10**5))
def test_schedule_bounded_by_peak(step, w, extra):
    val = lr.warmup_cosine_lr(step, 1e-3, w, w + extra, min_lr=1e-5)
    assert 0 <= val <= 1e-3 * (1 + 1e-12)


@CORE
@given(st.floats(min_value=1e6, max_value=1e13), st.floats(min_value=1e6, max_value=1e14),
       st.integers(min_value=1, max_value=10**5), st.floats(min_value=0.01, max_value=1.0))
def test_more_gpus_or_mfu_never_slower(params, tokens, n, u):
    c = ec.training_flops(params, tokens)
    t = ec.training_seconds(c, n, 989e12, u)
    assert ec.training_seconds(c, n + 1, 989e12, u) <= t
    assert t == pytest.approx(c / (n * 989e12 * u))

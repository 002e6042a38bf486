"""Synchronous vs asynchronous SGD with stragglers (Lab 05 plan, Part 3)."""

import numpy as np
import pytest

from course.core import sgd


def simulate(n, f, s, steps=4000, seed=0):
    """Monte Carlo of the straggler model: per-step slow workers, sync waits for the max."""
    rng = np.random.default_rng(seed)
    times = np.where(rng.random((steps, n)) < f, s, 1.0)
    return times.max(axis=1).mean(), times.mean()


@pytest.mark.parametrize("n, f, s", [(8, 0.05, 3.0), (64, 0.05, 3.0), (16, 0.2, 1.5), (4, 0.5, 10.0)])
def test_expected_times_match_monte_carlo(n, f, s):
    sync_mc, worker_mc = simulate(n, f, s)
    assert sgd.sync_step_time(1.0, n, f, s) == pytest.approx(sync_mc, rel=0.03)
    assert sgd.async_worker_step_time(1.0, f, s) == pytest.approx(worker_mc, rel=0.03)


def test_limits():
    assert sgd.sync_step_time(0.5, 64, 0.0, 3.0) == 0.5          # no stragglers
    assert sgd.sync_step_time(0.5, 64, 1.0, 3.0) == 1.5          # everyone slow
    assert sgd.sync_step_time(0.5, 1, 0.1, 3.0) == pytest.approx(0.5 * 1.2)
    assert sgd.sync_step_time(1.0, 10**6, 0.05, 3.0) == pytest.approx(3.0)  # persistent limit
    assert sgd.async_speedup(1, 0.3, 4.0) == pytest.approx(1.0)  # one worker: nothing to wait for


def test_lab_plan_question_async_wins_raw_throughput_with_5_percent_stragglers():
    sync = sgd.sync_throughput(32, 1.0, 64, 0.05, 3.0)
    asyn = sgd.async_throughput(32, 1.0, 64, 0.05, 3.0)
    assert asyn > sync
    assert asyn / sync == pytest.approx(sgd.async_speedup(64, 0.05, 3.0))
    assert sync == pytest.approx(64 * 32 / (1 + 2 * (1 - 0.95**64)))
    assert asyn == pytest.approx(64 * 32 / 1.1)


def test_idle_fraction():
    speedup = sgd.async_speedup(64, 0.05, 3.0)
    assert sgd.sync_idle_fraction(64, 0.05, 3.0) == pytest.approx(1 - 1 / speedup)
    assert sgd.sync_idle_fraction(64, 0.0, 3.0) == 0.0


def test_staleness():
    assert sgd.mean_staleness(64) == 63
    assert sgd.mean_staleness([1, 2]).tolist() == [0, 1]
    # Without stragglers a slow step does not exist: its formula falls back to N - 1.
    assert sgd.straggler_staleness(64, 0.0, 1.0) == pytest.approx(63)
    assert sgd.straggler_staleness(64, 0.05, 3.0) == pytest.approx(63 * 3 / 1.1)


def test_staleness_averages_to_n_minus_1_in_event_simulation():
    # Event simulation: 4 asynchronous workers, one 3x slower, jittered step times.
    # Staleness of an update = updates applied by others between its read and its write.
    rng = np.random.default_rng(2)
    horizon, events = 3000.0, []
    for mean in (1.0, 1.0, 1.0, 3.0):
        ends = np.cumsum(mean * rng.uniform(0.8, 1.2, int(horizon / mean) + 10))
        starts = np.concatenate([[0.0], ends[:-1]])
        events += [(a, b) for a, b in zip(starts, ends) if b < horizon]
    finishes = np.sort([b for _, b in events])
    stale = [np.searchsorted(finishes, b, "left") - np.searchsorted(finishes, a, "right")
             for a, b in events if b < horizon - 5]
    assert np.mean(stale) == pytest.approx(sgd.mean_staleness(4), rel=0.02)


@pytest.mark.parametrize("call, name", [
    (lambda: sgd.sync_step_time(0.0, 8, 0.1, 2.0), "step_seconds"),
    (lambda: sgd.sync_step_time(1.0, 0, 0.1, 2.0), "n_workers"),
    (lambda: sgd.sync_step_time(1.0, 8, 1.1, 2.0), "straggler_fraction"),
    (lambda: sgd.sync_step_time(1.0, 8, 0.1, 0.5), "slowdown"),
    (lambda: sgd.async_throughput(0, 1.0, 8, 0.1, 2.0), "samples_per_worker"),
    (lambda: sgd.mean_staleness(0), "n_workers"),
])
def test_invalid_inputs_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()

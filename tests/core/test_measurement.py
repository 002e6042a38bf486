"""course.core.measurement: the alpha-beta fit, timing summaries and measured crossovers.

Expected values are worked out by hand in the comments (a line through known points, quartiles
of small samples), never read back from the code.
"""

import numpy as np
import pytest

from course import core
from course.core.units import GB_per_s, us

SIZES = np.geomspace(1e3, 64e6, 12)


def test_exact_ping_pong_times_give_back_alpha_and_beta():
    # t = 3 us + n / (2 GB/s): every point on the line, so the fit is exact and the error ~0
    t = 3 * us + SIZES / (2 * GB_per_s)
    fit = core.fit_alpha_beta(SIZES, t)
    assert fit.latency == pytest.approx(3e-6, rel=1e-9)
    assert fit.bandwidth == pytest.approx(2e9, rel=1e-9)
    assert fit.latency_error < 1e-12 and fit.bandwidth_error < 1e-3
    assert fit.trusted and fit.sizes == 12


def test_ring_allreduce_coefficients_are_divided_out():
    # 4 ranks, ring: t = 6 alpha + 1.5 n beta; with alpha = 10 us, beta = 1 ns/B
    t = 6 * 10e-6 + 1.5 * SIZES * 1e-9
    a, b = core.allreduce_coefficients(4, "ring")
    fit = core.fit_alpha_beta(SIZES, t, a, b)
    assert fit.latency == pytest.approx(10e-6, rel=1e-9)
    assert fit.beta == pytest.approx(1e-9, rel=1e-9)
    assert fit.predict(1e6, a, b) == pytest.approx(60e-6 + 1.5e-3)


def test_noise_is_seen_in_the_error_bars_and_the_truth_lies_within_them():
    rng = np.random.default_rng(7)
    truth = 5 * us + SIZES / (1 * GB_per_s)
    hits = 0
    for _ in range(40):
        noisy = truth * rng.lognormal(0.0, 0.05, SIZES.size)
        fit = core.fit_alpha_beta(SIZES, noisy)
        hits += abs(fit.bandwidth - 1e9) < 3 * fit.bandwidth_error
    # 3-sigma intervals should hold the truth nearly always (generous: 34 of 40)
    assert hits >= 34


def test_too_few_sizes_is_a_reason_not_a_crash():
    t = 2 * us + SIZES[:3] / 1e9
    fit = core.fit_alpha_beta(SIZES[:3], t)
    assert "too_few_sizes" in fit.codes and not fit.trusted
    assert "3 message sizes" in dict(fit.reasons)["too_few_sizes"]


def test_times_that_do_not_grow_leave_the_bandwidth_unresolved_not_a_crash():
    # small messages on a busy machine: 3, 2, 1 us for 1, 10, 100 kB fall with size, so no positive
    # time per byte fits them; the student sees why, not a traceback, and no bandwidth is claimed
    fit = core.fit_alpha_beta([1e3, 1e4, 1e5, 1e6], [3e-6, 2e-6, 1e-6, 1e-6])
    assert "bandwidth_unresolved" in fit.codes and not fit.trusted
    assert "do not grow with message size" in dict(fit.reasons)["bandwidth_unresolved"]
    assert np.isnan(fit.bandwidth) and np.isnan(fit.beta)


def test_more_ranks_than_cores_says_so():
    t = 2 * us + SIZES / 1e9
    fit = core.fit_alpha_beta(SIZES, t, ranks=8, cores=2)
    assert fit.codes == ("more_ranks_than_cores",)
    assert "8 ranks on 2 cores" in fit.reasons[0][1]
    assert core.fit_alpha_beta(SIZES, t, ranks=2, cores=2).trusted


def test_wild_noise_is_too_noisy():
    rng = np.random.default_rng(1)
    t = (2 * us + SIZES / 1e9) * rng.lognormal(0.0, 1.0, SIZES.size)
    fit = core.fit_alpha_beta(SIZES, t)
    assert "too_noisy" in fit.codes


def test_a_wide_timing_spread_alone_marks_the_fit_noisy():
    t = 2 * us + SIZES / 1e9
    spread = np.full(SIZES.size, 0.1)
    spread[5] = 0.9
    assert "too_noisy" in core.fit_alpha_beta(SIZES, t, spread=spread).codes
    assert core.fit_alpha_beta(SIZES, t, spread=np.full(SIZES.size, 0.1)).trusted


def test_latency_below_the_noise_is_refitted_at_zero_and_flagged():
    # pure bandwidth times with noise: the free fit would give a negative alpha half the time
    t = SIZES / 1e9
    t = t * np.where(np.arange(SIZES.size) == 0, 0.7, 1.0)  # the smallest size measured fast
    fit = core.fit_alpha_beta(SIZES, t)
    assert fit.latency >= 0.0
    assert "latency_unresolved" in fit.codes


@pytest.mark.parametrize("kwargs, name", [
    (dict(message_bytes=[1e3, 1e3, 1e3], seconds=[1e-6, 1e-6, 1e-6]), "message_bytes"),
    (dict(message_bytes=[1e3, 1e4], seconds=[1e-6, -1.0]), "seconds"),
    (dict(message_bytes=[1e3, 1e4], seconds=[1e-6]), "message_bytes and seconds"),
    (dict(message_bytes=[1e3, 1e4, 1e5], seconds=[1e-6, 2e-6, 3e-6], ranks=4), "ranks and cores"),
])
def test_bad_input_names_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        core.fit_alpha_beta(**kwargs)


def test_timing_summary_drops_warmup_and_reports_quartiles():
    # after dropping 100.0: [1, 2, 3, 4, 5] -> median 3, q1 2, q3 4, spread (4-2)/3
    s = core.timing_summary([[100.0, 1, 2, 3, 4, 5], [100.0, 2, 2, 2, 2, 2]], warmup=1)
    assert s.median.tolist() == [3.0, 2.0]
    assert s.q1.tolist() == [2.0, 2.0] and s.q3.tolist() == [4.0, 2.0]
    assert s.spread[0] == pytest.approx(2 / 3) and s.spread[1] == 0.0
    assert s.repeats == 5
    with pytest.raises(ValueError, match="warmup"):
        core.timing_summary([1.0, 2.0], warmup=2)


def test_measured_crossover_agrees_with_the_model_on_model_times():
    # on exact alpha-beta times the measured crossover is the model's (up to log interpolation)
    p, alpha, bw = 4, 20 * us, 1 * GB_per_s
    sizes = np.geomspace(1e2, 1e8, 200)
    ring = core.allreduce_time(sizes, p, bw, alpha, "ring")
    rd = core.allreduce_time(sizes, p, bw, alpha, "recursive_doubling")
    model = core.crossover_message_bytes(p, bw, alpha, "recursive_doubling", "ring")
    # by hand: 2 alpha + 2 n beta = 6 alpha + 1.5 n beta  ->  n = 8 alpha / beta = 160 kB
    assert model == pytest.approx(160e3)
    assert core.measured_crossover(sizes, rd, ring) == pytest.approx(model, rel=0.01)


def test_measured_crossover_edges():
    assert core.measured_crossover([1, 2, 3], [2.0, 2, 2], [1.0, 1, 1]) == 0.0
    assert core.measured_crossover([1, 2, 3], [1.0, 1, 1], [2.0, 2, 2]) == float("inf")
    with pytest.raises(ValueError, match="increase"):
        core.measured_crossover([2, 1, 3], [1.0, 1, 1], [2.0, 2, 2])

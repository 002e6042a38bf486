"""Learning-rate scaling rules and schedules (Goyal et al. 2017; Hoffer et al. 2017; SGDR)."""

import math

import numpy as np
import pytest

from course.core import lr


def test_linear_and_sqrt_scaling_workbook_3_1_3_2():
    assert lr.linear_scaled_lr(3e-4, 256, 2048) == pytest.approx(2.4e-3)
    assert lr.sqrt_scaled_lr(3e-4, 256, 2048) == pytest.approx(8.49e-4, rel=1e-3)


def test_goyal_reference_point():
    # Goyal et al. 2017: lr 0.1 for batch 256, so 0.1 * k for batch k * 256 (8192 -> 3.2).
    assert lr.linear_scaled_lr(0.1, 256, 8192) == pytest.approx(3.2)


def test_rules_agree_at_equal_batch_and_sqrt_is_more_conservative_above():
    b = np.array([256, 512, 4096])
    lin = lr.linear_scaled_lr(1e-3, 256, b)
    sq = lr.sqrt_scaled_lr(1e-3, 256, b)
    assert lin[0] == sq[0] == pytest.approx(1e-3)
    assert np.all(sq[1:] < lin[1:])
    assert np.allclose(sq**2, lin * 1e-3)  # sqrt rule is the geometric mean of base and linear


def test_warmup_heuristic_workbook_3_3():
    assert lr.warmup_steps_heuristic(256, 2048) == 8000.0
    assert lr.warmup_steps_heuristic(256, 2048) / 100_000 == pytest.approx(0.08)


def test_warmup_ramp_is_linear_then_flat():
    steps = np.arange(0, 12001, 1000)
    rates = lr.warmup_lr(steps, 2.4e-3, 8000)
    assert rates[0] == 0.0
    assert rates[4] == pytest.approx(2.4e-3 / 2)
    assert np.all(rates[8:] == pytest.approx(2.4e-3))
    assert np.all(np.diff(rates[:9]) == pytest.approx(2.4e-3 / 8))
    assert lr.warmup_lr(0, 1e-3, 10, start_lr=1e-4) == pytest.approx(1e-4)


def test_cosine_schedule_shape():
    peak, w, total = 3e-4, 1000, 100_000
    assert lr.warmup_cosine_lr(w, peak, w, total) == pytest.approx(peak)
    mid = w + (total - w) // 2
    assert lr.warmup_cosine_lr(mid, peak, w, total) == pytest.approx(peak / 2, rel=1e-4)
    assert lr.warmup_cosine_lr(total, peak, w, total, min_lr=3e-5) == pytest.approx(3e-5)
    assert lr.warmup_cosine_lr(2 * total, peak, w, total, min_lr=3e-5) == pytest.approx(3e-5)
    # quarter way: (1 + cos(pi/4)) / 2
    q = w + (total - w) // 4
    expect = peak * (1 + math.cos(math.pi * (q - w) / (total - w))) / 2
    assert lr.warmup_cosine_lr(q, peak, w, total) == pytest.approx(expect)


def test_workbook_3_5_decay_over_actual_steps():
    # Doubling batch with linear scaling and halving steps: the schedule ends at step 50k.
    assert lr.warmup_cosine_lr(50_000, 6e-4, 500, 50_000) == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("call, name", [
    (lambda: lr.linear_scaled_lr(0.0, 256, 512), "base_lr"),
    (lambda: lr.sqrt_scaled_lr(1e-3, -256, 512), "base_batch"),
    (lambda: lr.linear_scaled_lr(1e-3, 256, float("inf")), "new_batch"),
    (lambda: lr.warmup_steps_heuristic(256, 512, 0), "steps_per_unit_scale"),
    (lambda: lr.warmup_lr(-1, 1e-3, 10), "step"),
    (lambda: lr.warmup_lr(1, 1e-3, 0), "warmup_steps"),
    (lambda: lr.warmup_cosine_lr(1, 1e-3, 10, 10), "total_steps"),
    (lambda: lr.warmup_cosine_lr(1, 1e-3, 10, 100, min_lr=1e-2), "min_lr"),
])
def test_invalid_inputs_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()

"""Number formats (IEEE 754-2008, bfloat16, FP8 of Micikevicius et al. 2022) and GradScaler."""

import numpy as np
import pytest

from course.core import precision as pr


@pytest.mark.parametrize("name, dtype", [("fp16", np.float16), ("fp32", np.float32)])
def test_ieee_limits_match_numpy_finfo(name, dtype):
    f, info = pr.float_format(name), np.finfo(dtype)
    assert f.max == float(info.max)
    assert f.min_normal == float(info.smallest_normal)
    assert f.min_subnormal == float(info.smallest_subnormal)
    assert f.epsilon == float(info.eps)
    assert f.bits == info.bits


def test_published_limits_of_bf16_and_fp8():
    bf16 = pr.float_format("bf16")
    assert bf16.max == pytest.approx(3.3895e38, rel=1e-4)
    assert bf16.min_normal == pr.float_format("fp32").min_normal   # same 8-bit exponent
    assert bf16.epsilon == 2.0**-7
    # Micikevicius et al. 2022, Table 1.
    e4m3, e5m2 = pr.float_format("fp8_e4m3"), pr.float_format("fp8_e5m2")
    assert (e4m3.max, e4m3.min_normal, e4m3.min_subnormal) == (448.0, 2.0**-6, 2.0**-9)
    assert (e5m2.max, e5m2.min_normal, e5m2.min_subnormal) == (57344.0, 2.0**-14, 2.0**-16)
    assert (e4m3.bias, e5m2.bias) == (7, 15)
    assert not e4m3.has_inf and e5m2.has_inf
    assert all(f.source for f in pr.FLOAT_FORMATS.values())


def test_workbook_8_1_fp16_smallest_normal():
    assert pr.float_format("fp16").min_normal == pytest.approx(6.1035e-5, rel=1e-4)
    assert pr.float_format("fp16").min_normal == 1 / 16384


def test_bytes_per_element():
    assert [pr.bytes_per_element(n) for n in ("fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2")] == [4, 2, 2, 1, 1]


def test_underflow_and_overflow_agree_with_numpy_float16_rounding():
    rng = np.random.default_rng(0)
    x = np.concatenate([
        10.0 ** rng.uniform(-9, -3, 4000),
        np.array([2.0**-25, 2.0**-25 * (1 + 1e-6), 2.0**-24, 65504.0, 65519.99, 65520.0, 7e4]),
        rng.uniform(6e4, 7e4, 2000),
    ])
    with np.errstate(over="ignore"):
        as_half = x.astype(np.float16)
    assert np.array_equal(pr.flushes_to_zero(x, "fp16"), as_half == 0)
    assert np.array_equal(pr.overflows(x, "fp16"), np.isinf(as_half))
    assert np.array_equal(pr.below_normal_range(x, "fp16"), x < np.finfo(np.float16).smallest_normal)


def test_e4m3_tie_at_464_rounds_to_448():
    assert pr.overflows([448.0, 464.0, 464.1], "fp8_e4m3").tolist() == [False, False, True]
    assert pr.overflows(61440.0, "fp8_e5m2") is True       # 57344 + 4096, odd max mantissa
    assert pr.overflows(61439.0, "fp8_e5m2") is False


def test_loss_scale_helpers():
    assert pr.loss_scale_to_lift(1e-7) == 1024.0            # 1e-7 * 1024 >= 2**-14 > 1e-7 * 512
    assert 1e-7 * 1024 >= 2.0**-14 > 1e-7 * 512
    assert pr.loss_scale_to_lift(1.0) == 1.0
    assert pr.max_safe_loss_scale(10.0) == 4096.0
    assert pr.max_safe_loss_scale(1.0, "fp8_e4m3") == 256.0


def reference_grad_scaler(steps, scale=2.0**16, growth=2.0, backoff=0.5, interval=2000):
    """Straight transcription of torch.amp.GradScaler.update for one run."""
    tracker = 0
    for overflow in steps:
        if overflow:
            scale *= backoff
            tracker = 0
        else:
            tracker += 1
            if tracker == interval:
                scale *= growth
                tracker = 0
    return scale


def test_workbook_8_2_trace():
    assert pr.dynamic_loss_scale([False, True, False, True, False]) == 16384.0
    h = pr.loss_scale_history([False, True, False, True, False])
    assert h["scale_used"].tolist() == [65536, 65536, 32768, 32768, 16384]
    assert h["skipped"].tolist() == [False, True, False, True, False]


def test_growth_after_interval_good_steps():
    assert pr.dynamic_loss_scale([False] * 2000) == 2.0**17
    assert pr.dynamic_loss_scale([False] * 1999) == 2.0**16
    assert pr.dynamic_loss_scale([False] * 1999 + [True] + [False] * 1999) == 2.0**15
    assert pr.dynamic_loss_scale([False] * 4000) == 2.0**18


def test_matches_reference_on_random_runs_and_vectorizes():
    rng = np.random.default_rng(1)
    runs = rng.random((6, 300)) < rng.uniform(0.0, 0.05, (6, 1))
    got = pr.dynamic_loss_scale(runs, growth_interval=50)
    want = [reference_grad_scaler(r, interval=50) for r in runs]
    assert got.tolist() == want


def test_no_growth_beyond_fp32_max():
    top = 2.0**127
    assert pr.dynamic_loss_scale([False, False], init_scale=top, growth_interval=1) == top


def test_empty_and_integer_inputs():
    assert pr.dynamic_loss_scale([]) == 65536.0
    assert pr.dynamic_loss_scale([0, 1, 0]) == 32768.0


@pytest.mark.parametrize("call, name", [
    (lambda: pr.float_format("fp4"), "name"),      # the parameter of float_format is called name
    (lambda: pr.bytes_per_element("fp4"), "fmt"),
    (lambda: pr.overflows([float("nan")], "fp16"), "values"),
    (lambda: pr.loss_scale_to_lift(0.0), "magnitude"),
    (lambda: pr.dynamic_loss_scale([True, 2]), "overflows"),
    (lambda: pr.dynamic_loss_scale(["yes"]), "overflows"),
    (lambda: pr.dynamic_loss_scale(True), "overflows"),
    (lambda: pr.dynamic_loss_scale([True], init_scale=0), "init_scale"),
    (lambda: pr.dynamic_loss_scale([True], growth_factor=1.0), "growth_factor"),
    (lambda: pr.dynamic_loss_scale([True], backoff_factor=1.0), "backoff_factor"),
    (lambda: pr.dynamic_loss_scale([True], growth_interval=0), "growth_interval"),
])
def test_invalid_inputs_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()

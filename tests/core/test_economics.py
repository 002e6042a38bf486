"""6ND compute, PF-days, training time at an MFU, energy and cost (workbook chapter 9)."""

import pytest

from course.core import economics as ec


def test_published_compute_totals():
    # Brown et al. 2020, Table D.1: GPT-3 175B on 300B tokens = 3.14e23 FLOPs.
    assert ec.training_flops(175e9, 300e9) == pytest.approx(3.14e23, rel=0.01)
    # Dubey et al. 2024: Llama 3 405B on 15.6T tokens = 3.8e25 FLOPs.
    assert ec.training_flops(405e9, 15.6e12) == pytest.approx(3.8e25, rel=0.01)


def test_pf_day_definition():
    assert ec.pf_days(1e15 * 86400) == pytest.approx(1.0)
    # Brown et al. 2020, Table D.1: GPT-3 175B = 3640 PF-days.
    assert ec.pf_days(3.14e23) == pytest.approx(3640, rel=0.01)


def test_training_time_by_hand():
    assert ec.training_seconds(1e18, 10, 1e15, 0.5) == pytest.approx(200.0)
    assert ec.training_days(86400 * 1e15, 1, 1e15, 1.0) == pytest.approx(1.0)


def test_energy_and_cost_by_hand():
    # 1000 W for one hour on 2 GPUs = 2 kWh; PUE 1.5 -> 3 kWh.
    assert ec.energy_kwh(2, 1000.0, 3600.0) == pytest.approx(2.0)
    assert ec.energy_kwh(2, 1000.0, 3600.0, pue=1.5) == pytest.approx(3.0)
    assert ec.energy_cost(3.0, 0.1) == pytest.approx(0.3)
    assert ec.gpu_hours(8, 7200) == 16.0
    assert ec.gpu_cost(8, 7200, 2.5) == 40.0


def test_broadcasts():
    out = ec.training_flops([7e9, 70e9], 2e12)
    assert out.tolist() == pytest.approx([8.4e22, 8.4e23])


@pytest.mark.parametrize("call, name", [
    (lambda: ec.training_flops(0, 1e12), "params"),
    (lambda: ec.training_flops(1e9, -1), "tokens"),
    (lambda: ec.pf_days(-1.0), "flops"),
    (lambda: ec.training_seconds(1e20, 8, 1e15, 0.0), "mfu"),
    (lambda: ec.training_seconds(1e20, 8, 1e15, 1.2), "mfu"),
    (lambda: ec.training_days(1e20, 0, 1e15, 0.4), "n_gpus"),
    (lambda: ec.energy_kwh(8, 700.0, 10.0, pue=0.9), "pue"),
    (lambda: ec.energy_cost(1.0, -0.05), "price_per_kwh"),
    (lambda: ec.gpu_cost(8, 1.0, float("nan")), "price_per_gpu_hour"),
])
def test_invalid_inputs_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()

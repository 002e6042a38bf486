"""6ND compute, PF-days, training time at an MFU, energy and cost (workbook chapter 9)."""

import pytest

from course.core import economics as ec
from course.core import reliability as rel


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


# --- Lab 05 Part 3: monthly dollars (hand computations) ------------------------------------------

def test_monthly_bill_by_hand():
    assert ec.HOURS_PER_MONTH == 730.5  # 365.25 x 24 / 12
    assert ec.monthly_bill(1024, 3.0) == pytest.approx(1024 * 3.0 * 730.5)
    assert ec.monthly_bill([8, 16], 2.0).tolist() == pytest.approx([11688.0, 23376.0])


def test_async_savings_by_hand():
    # Chen et al. 2016: sync waits for the slowest, E[T] = 1 + (s-1)(1-(1-f)^N); an async worker 1 + (s-1)f
    sync, worker = 1 + 0.15 * (1 - 0.95 ** 1024), 1 + 0.15 * 0.05
    assert ec.async_monthly_savings(1e6, 1024, 0.05, 1.15) == pytest.approx(1e6 * (1 - worker / sync), rel=1e-12)
    # 20 % extra steps for staleness: the bill is 1.2 x worker / sync, so async costs more than it saves
    assert ec.async_monthly_savings(1e6, 1024, 0.05, 1.15, extra_steps=0.2) == pytest.approx(
        1e6 * (1 - 1.2 * worker / sync), rel=1e-12)
    assert ec.async_monthly_savings(1e6, 1024, 0.0, 1.15) == 0.0  # no stragglers: nothing to save


def test_sharded_checkpoint_savings_by_hand():
    import math

    mtbf = 50_000 * 3600 / 1024

    def waste(delta):  # Young 1974: tau = sqrt(2 delta M); waste = delta/tau + (tau/2 + R)/M, R = 120 s
        tau = math.sqrt(2 * delta * mtbf)
        return delta / tau + (tau / 2 + 120) / mtbf

    expected = 1e6 * (1 - (1 - waste(98.0)) / (1 - waste(98.0 / 1024)))
    assert rel.sharded_checkpoint_monthly_savings(1e6, 98.0, 1024, mtbf, 120.0) == pytest.approx(expected, rel=1e-12)
    assert 0.03 < expected / 1e6 < 0.035  # about 3 % of the bill (Lab 05's story)


@pytest.mark.parametrize("call, name", [
    (lambda: ec.monthly_bill(0, 2.0), "gpus"),
    (lambda: ec.monthly_bill(8, -1.0), "price_per_gpu_hour"),
    (lambda: ec.monthly_bill(8, 1.0, 0.0), "hours_per_month"),
    (lambda: ec.async_monthly_savings(-1.0, 8, 0.1, 1.2), "bill"),
    (lambda: ec.async_monthly_savings(1.0, 8, 0.1, 1.2, extra_steps=-0.1), "extra_steps"),
    (lambda: rel.sharded_checkpoint_monthly_savings(1.0, 0.0, 8, 3600.0), "checkpoint_seconds"),
    (lambda: rel.sharded_checkpoint_monthly_savings(1.0, 98.0, 0, 3600.0), "shards"),
    (lambda: rel.sharded_checkpoint_monthly_savings(1.0, 98.0, 8, 0.0), "mtbf_seconds"),
])
def test_part3_invalid_inputs_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_strategy_costs_break_down_the_savings_the_core_reports():
    mtbf = 50_000 * 3600 / 1024
    costs = rel.strategy_monthly_costs(1e6, 1024, 0.05, 1.5, 98.0, mtbf, 120.0, extra_steps=0.08)
    sync, asyn, zero = costs.sum(axis=1)
    assert sync == pytest.approx(1e6, rel=1e-12)
    assert asyn == pytest.approx(1e6 - ec.async_monthly_savings(1e6, 1024, 0.05, 1.5, extra_steps=0.08), rel=1e-12)
    assert zero == pytest.approx(1e6 - rel.sharded_checkpoint_monthly_savings(1e6, 98.0, 1024, mtbf, 120.0), rel=1e-12)
    assert costs[:, 0] == pytest.approx([costs[0, 0]] * 3)  # the same useful work in every column
    assert costs[1, 1] == 0.0 and costs[0, 3] == costs[2, 3] == 0.0  # async never waits; sync never pays staleness


def test_strategy_costs_name_a_bad_parameter():
    with pytest.raises(ValueError, match="workers"):
        rel.strategy_monthly_costs(1e6, 0, 0.05, 1.5, 98.0, 3600.0)

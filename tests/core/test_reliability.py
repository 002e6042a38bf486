"""Checkpoint size, write time, Young 1974 / Daly 2006 intervals, MTBF and waste."""

import math

import numpy as np
import pytest

from course.core import reliability as rel

HOUR = 3600.0


def test_checkpoint_size_workbook_7_1_by_parts():
    # FP16 weights 140 GB + FP32 master 280 GB + momentum 280 GB + variance 280 GB.
    parts = 70e9 * 2 + 70e9 * 4 + 70e9 * 4 + 70e9 * 4
    assert rel.checkpoint_bytes(70e9) == pytest.approx(parts) == pytest.approx(980e9)
    assert rel.CHECKPOINT_BYTES_PER_PARAM == 14
    assert rel.checkpoint_bytes(70e9, extra_bytes=8) == pytest.approx(980e9 + 8)
    # Weights only (inference export) in BF16.
    assert rel.checkpoint_bytes(70e9, master_bytes=0, optimizer_bytes=0) == pytest.approx(140e9)


def test_write_time_workbook_7_2_and_sharded():
    assert rel.checkpoint_write_time(980e9, 10e9) == pytest.approx(98.0)
    assert rel.checkpoint_write_time(980e9, 10e9, writers=64) == pytest.approx(98.0 / 64)


def test_young_workbook_7_3():
    tau = rel.young_interval(98.0, 24 * HOUR)
    assert tau / 60 == pytest.approx(68.6, rel=1e-3)
    assert tau == pytest.approx(math.sqrt(2 * 98 * 86400))


def test_young_minimizes_first_order_waste():
    delta, m = 98.0, 24 * HOUR
    taus = np.linspace(600, 20000, 20001)
    waste = rel.waste_fraction(taus, delta, m)
    assert taus[np.argmin(waste)] == pytest.approx(rel.young_interval(delta, m), abs=1.0)


def test_daly_by_hand_and_branches():
    delta, m = 98.0, 86400.0
    x = delta / (2 * m)
    by_hand = math.sqrt(2 * delta * m) * (1 + math.sqrt(x) / 3 + x / 9) - delta
    assert rel.daly_interval(delta, m) == pytest.approx(by_hand)
    assert rel.daly_interval(delta, m) < rel.young_interval(delta, m)
    assert rel.daly_interval(300.0, 100.0) == 100.0      # delta >= 2M -> tau = M
    assert rel.daly_interval(200.0, 100.0) == 100.0      # boundary delta == 2M
    out = rel.daly_interval([98.0, 500.0], [86400.0, 100.0])
    assert out[1] == 100.0 and out[0] == pytest.approx(by_hand)


def test_cluster_mtbf_rates_add():
    assert rel.cluster_mtbf(50_000 * HOUR, 16384) == pytest.approx(50_000 * HOUR / 16384)
    assert rel.cluster_mtbf(1000.0, 1) == 1000.0


def test_waste_per_failure_workbook_7_4():
    tau = rel.young_interval(98.0, 24 * HOUR)           # 68.6 min
    lost = rel.expected_lost_seconds(tau, 120.0)        # 34.3 + 2 min
    assert lost / 60 == pytest.approx(34.3 + 2, rel=1e-3)
    dollars = rel.waste_cost_per_failure(512, tau, 2.0, restart_seconds=120.0)
    assert dollars == pytest.approx(512 * 2.0 * (34.3 + 2) / 60, rel=2e-3)
    assert dollars == pytest.approx(619, rel=0.01)
    assert rel.waste_gpu_hours_per_failure(512, tau, 120.0) == pytest.approx(dollars / 2.0)


def test_waste_per_hour_and_failures():
    tau = rel.young_interval(98.0, 86400.0)
    frac = rel.waste_fraction(tau, 98.0, 86400.0)
    # At Young's optimum both terms are equal: delta/tau = tau/(2M).
    assert 98.0 / tau == pytest.approx(tau / (2 * 86400.0))
    assert rel.waste_gpu_hours_per_hour(512, tau, 98.0, 86400.0) == pytest.approx(512 * frac)
    assert rel.waste_cost_per_hour(512, tau, 98.0, 86400.0, 2.0) == pytest.approx(1024 * frac)
    assert rel.failures_during(30 * 86400, 86400) == 30.0


@pytest.mark.parametrize("call, name", [
    (lambda: rel.checkpoint_bytes(0), "params"),
    (lambda: rel.checkpoint_bytes(1e9, weight_bytes=-2), "weight_bytes"),
    (lambda: rel.checkpoint_write_time(1e9, 0), "bandwidth"),
    (lambda: rel.checkpoint_write_time(1e9, 1e9, writers=0), "writers"),
    (lambda: rel.young_interval(0, 100), "checkpoint_seconds"),
    (lambda: rel.daly_interval(10, -1), "mtbf_seconds"),
    (lambda: rel.cluster_mtbf(100, 0), "components"),
    (lambda: rel.expected_lost_seconds(100, -1), "restart_seconds"),
    (lambda: rel.waste_cost_per_failure(8, 100, -2.0), "price_per_gpu_hour"),
    (lambda: rel.waste_gpu_hours_per_hour(0, 100, 10, 1000), "gpus"),
])
def test_invalid_inputs_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()

"""Scaling-efficiency plot driven without a browser."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course import core
from course.core import catalog


from course.instruments.efficiency import CURVE_GPUS, FABRIC_TOGGLE, MAX_NODES, EfficiencyPlot

from .helpers import assert_alive, changed, mark_arrays, same_figures

NVLINK = catalog.link("NVLink 4")


@pytest.fixture(scope="module")
def plot():
    return EfficiencyPlot()


def set_controls(inst, **values):
    with inst.batch():
        for name, value in values.items():
            inst.controls[name].value = value


def test_one_node_and_sixteen_nodes_by_hand(plot):
    set_controls(plot, fabric="Ethernet 10G", nodes=16, params_b=7, micro_batch=1, overlap=False)
    eth = catalog.link("Ethernet 10G")
    compute = 6 * 7e9 * 2048 / (core.DEFAULT_COMPUTE_EFFICIENCY * 989e12)
    one_gpu = 1 / compute  # samples/s of one GPU: no all-reduce
    comm = core.hierarchical_allreduce_time(14e9, 8, 16, NVLINK.bandwidth, eth.bandwidth, NVLINK.latency, eth.latency)
    r = plot.result
    assert r["gpus"] == 128
    assert r["throughput"] == pytest.approx(128 / (compute + comm), rel=1e-9)
    assert r["ideal"] == pytest.approx(128 * one_gpu, rel=1e-9)
    assert r["speedup"] == pytest.approx(r["throughput"] / one_gpu, rel=1e-9)
    assert r["efficiency"] == pytest.approx(r["speedup"] / 128, rel=1e-9)


def test_diminishing_returns_equals_the_core_and_ethernet_hits_it_first(plot):
    set_controls(plot, fabric="Ethernet 10G", nodes=8, params_b=7, micro_batch=1, overlap=True)
    r = plot.result
    gpus = np.array(r["curve_gpus"])
    speedups = np.array(r["curve_throughput"]) / r["curve_throughput"][0]
    assert r["diminishing_returns_gpus"] == core.diminishing_returns_gpus(gpus, speedups, 0.5)
    eth_knee = r["diminishing_returns_gpus"]
    assert eth_knee is not None and eth_knee <= 16  # 1.25 GB/s per GPU: leaving the node stops paying
    assert "GPUs" in plot._cards["knee"].value
    assert list(plot.knee.x) == [eth_knee, eth_knee]
    plot.controls["fabric"].value = "InfiniBand 400G"
    ib_knee = plot.result["diminishing_returns_gpus"]
    assert ib_knee is None or ib_knee > eth_knee


def test_ideal_line_is_n_times_one_gpu(plot):
    set_controls(plot, fabric="InfiniBand 400G", nodes=4, params_b=13, micro_batch=2)
    one = plot.result["curve_throughput"][0]
    np.testing.assert_allclose(plot.ideal.y, CURVE_GPUS * one, rtol=1e-12)
    assert np.all(np.array(plot.result["curve_throughput"]) <= CURVE_GPUS * one * (1 + 1e-12))


def test_fabric_toggle_swaps_curves_in_the_same_figure(plot):
    set_controls(plot, fabric="InfiniBand 400G", nodes=8, params_b=7)
    figs, marks = list(plot.figures), [m for f in plot.figures for m in f.marks]
    before = mark_arrays(plot)
    ib_curve = list(plot.actual.y)
    plot.controls["fabric"].value = "Ethernet 10G"
    assert same_figures(plot, figs, marks)
    assert changed(before, mark_arrays(plot))
    np.testing.assert_allclose(plot.other.y, ib_curve)
    assert np.all(np.array(plot.actual.y) <= np.array(plot.other.y) + 1e-9)  # Ethernet never beats NDR


def _check(plot):
    assert_alive(plot)
    assert plot.failures == []
    r = plot.result
    assert 0 < r["efficiency"] <= 1 + 1e-12
    knee = r["diminishing_returns_gpus"]
    assert knee is None or knee in set(CURVE_GPUS.tolist())


def test_grid_never_escapes(plot):
    for fabric, nodes, params, overlap in itertools.product(FABRIC_TOGGLE, (1, 2, MAX_NODES), (1, 70), (False, True)):
        set_controls(plot, fabric=fabric, nodes=nodes, params_b=params, overlap=overlap)
        _check(plot)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fabric=st.sampled_from(list(FABRIC_TOGGLE)), nodes=st.integers(1, MAX_NODES), params=st.integers(1, 70),
       b=st.integers(1, 16), overlap=st.booleans())
def test_fuzz(plot, fabric, nodes, params, b, overlap):
    set_controls(plot, fabric=fabric, nodes=nodes, params_b=params, micro_batch=b, overlap=overlap)
    _check(plot)

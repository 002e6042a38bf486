"""Data-parallel scaling explorer driven without a browser."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course import core
from course.core import catalog


from course.instruments.scaling import (
    CURVE_GPUS, GPU_CHOICES, NODE_CHOICES, NVLINK_ONLY, STAKEHOLDER_POINTS, ScalingExplorer, _fabric_options)

from .helpers import assert_alive, changed, mark_arrays, same_figures

H100 = catalog.accelerator("H100")
NVLINK = catalog.link("NVLink 4")
NDR = catalog.link("InfiniBand NDR")
FABRICS = [value for _label, value in _fabric_options()]


@pytest.fixture(scope="module")
def explorer():
    return ScalingExplorer()


def set_controls(inst, **values):
    with inst.batch():
        for name, value in values.items():
            inst.controls[name].value = value


def test_eight_gpus_on_nvlink_by_hand(explorer):
    # 7B params, 1 sequence of 2048 tokens per GPU, ring all-reduce of 14 GB of BF16 gradients on NVLink 4.
    set_controls(explorer, params_b=7, gpus=8, micro_batch=1, fabric=NVLINK_ONLY, overlap=False, zero_stage=1)
    compute = 6 * 7e9 * 2048 / (core.DEFAULT_COMPUTE_EFFICIENCY * 989e12)
    ring = 2 * 7 * NVLINK.latency + 2 * 7 / 8 * 14e9 / (450e9)
    r = explorer.result
    assert r["compute_seconds"] == pytest.approx(compute, rel=1e-9)
    assert r["comm_seconds"] == pytest.approx(ring, rel=1e-9)
    assert r["mfu"] == pytest.approx(6 * 7e9 * 2048 / ((compute + ring) * 989e12), rel=1e-9)
    assert r["comm_compute_ratio"] == pytest.approx(ring / compute, rel=1e-9)
    assert explorer.failures == []


def test_numbers_equal_the_core_beyond_one_node(explorer):
    set_controls(explorer, params_b=13, gpus=64, micro_batch=2, fabric="InfiniBand HDR", overlap=True, zero_stage=2)
    hdr = catalog.link("InfiniBand HDR")
    flops = core.training_flops(13e9, 2 * 2048)
    compute = core.compute_time(flops, core.DEFAULT_COMPUTE_EFFICIENCY * H100.peak_flops["bf16"])
    comm = core.hierarchical_allreduce_time(26e9, 8, 8, NVLINK.bandwidth, hdr.bandwidth, NVLINK.latency, hdr.latency)
    exposed = core.exposed_comm_time(2 / 3 * compute, comm, core.bucket_count(26e9))
    r = explorer.result
    assert r["comm_seconds"] == pytest.approx(comm, rel=1e-12)
    assert r["exposed_comm_seconds"] == pytest.approx(exposed, rel=1e-12)
    assert r["mfu"] == pytest.approx(core.mfu(flops, compute + exposed, H100.peak_flops["bf16"]), rel=1e-12)
    assert r["model_state_bytes"] == pytest.approx(core.model_state_bytes(13e9, zero_stage=2, dp=64))
    i = list(r["curve_gpus"]).index(64)
    assert r["curve_mfu"][i] == pytest.approx(r["mfu"])


def test_cliff_at_the_node_boundary_and_forced_banner(explorer):
    set_controls(explorer, params_b=7, gpus=8, micro_batch=1, fabric=NVLINK_ONLY, overlap=False, zero_stage=1)
    assert "forced_onto_infiniband" not in explorer.failures
    curve = dict(zip(explorer.result["curve_gpus"], explorer.result["curve_mfu"]))
    drop_inside = curve[4] - curve[8]
    drop_at_edge = curve[8] - curve[16]
    assert drop_at_edge > 3 * drop_inside > 0  # the NVLink -> InfiniBand cliff
    explorer.controls["gpus"].value = 64
    assert "forced_onto_infiniband" in explorer.failures
    assert "InfiniBand NDR" in explorer.failure_messages["forced_onto_infiniband"]
    assert explorer.result["inter_link"] == "InfiniBand NDR"
    explorer.controls["fabric"].value = "InfiniBand NDR"
    assert "forced_onto_infiniband" not in explorer.failures


def test_stakeholder_points_are_drawn(explorer):
    assert list(explorer.measured.x) == [8, 64, 512]
    assert list(explorer.measured.y) == pytest.approx([52, 38, 19])
    assert STAKEHOLDER_POINTS == ((8, 0.52), (64, 0.38), (512, 0.19))


def test_out_of_memory_exactly_when_model_states_exceed_80_gb(explorer):
    # workbook 1.1: 7B with plain Adam mixed precision needs 112 GB per GPU
    set_controls(explorer, params_b=7, gpus=8, zero_stage=0)
    assert "out_of_memory" in explorer.failures
    assert explorer.result["model_state_bytes"] == pytest.approx(112e9)
    explorer.controls["zero_stage"].value = 1  # 7B x (4 + 12/8) = 38.5 GB
    assert "out_of_memory" not in explorer.failures


def test_marks_change_in_the_same_figure(explorer):
    set_controls(explorer, params_b=7, gpus=8, fabric=NVLINK_ONLY)
    figs, marks = list(explorer.figures), [m for f in explorer.figures for m in f.marks]
    before = mark_arrays(explorer)
    explorer.controls["params_b"].value = 70
    assert same_figures(explorer, figs, marks)
    assert changed(before, mark_arrays(explorer))


def _check(explorer):
    assert_alive(explorer)
    r = explorer.result
    assert "invalid_input" not in explorer.failures
    forced = r["fabric"] == NVLINK_ONLY and r["gpus"] > 8
    assert ("forced_onto_infiniband" in explorer.failures) == forced
    capacity = catalog.node(r["node"]).accelerator.memory_bytes
    assert ("out_of_memory" in explorer.failures) == (r["model_state_bytes"] > capacity)
    assert 0 < r["mfu"] <= core.DEFAULT_COMPUTE_EFFICIENCY + 1e-12
    assert len(r["curve_mfu"]) == CURVE_GPUS.size


def test_grid_never_escapes(explorer):
    for params, gpus, fabric, overlap in itertools.product((1, 70, 175), (1, 8, 16, 1024), FABRICS, (False, True)):
        set_controls(explorer, params_b=params, gpus=gpus, fabric=fabric, overlap=overlap)
        _check(explorer)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(params=st.integers(1, 175), gpus=st.sampled_from(GPU_CHOICES), b=st.integers(1, 64),
       fabric=st.sampled_from(FABRICS), zero=st.sampled_from([0, 1, 2]), overlap=st.booleans(),
       node=st.sampled_from(NODE_CHOICES))
def test_fuzz(explorer, params, gpus, b, fabric, zero, overlap, node):
    set_controls(explorer, params_b=params, gpus=gpus, micro_batch=b, fabric=fabric, zero_stage=zero, overlap=overlap,
                 node=node)
    _check(explorer)


def test_faster_gpus_on_the_same_network_raise_the_ratio(explorer):
    # Lab 05 Act I reflection, option A: a faster GPU shortens compute, not the all-reduce.
    set_controls(explorer, params_b=7, gpus=64, micro_batch=1, fabric="InfiniBand NDR", overlap=False, node="DGX A100")
    a100 = dict(explorer.result)
    explorer.controls["node"].value = "DGX H100"
    h100 = dict(explorer.result)
    assert a100["accelerator"].startswith("A100") and h100["accelerator"].startswith("H100")
    assert h100["compute_seconds"] == pytest.approx(a100["compute_seconds"] * 312 / 989)
    assert h100["comm_compute_ratio"] > a100["comm_compute_ratio"]
    explorer.controls["fabric"].value = NVLINK_ONLY  # forced onto each node's own fabric: HDR for DGX A100
    explorer.controls["node"].value = "DGX A100"
    assert "InfiniBand HDR" in explorer.failure_messages["forced_onto_infiniband"]
    explorer.controls["node"].value = "DGX H100"

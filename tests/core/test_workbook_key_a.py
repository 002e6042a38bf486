"""Corrected workbook answer key, chapters 0, 1, 5, 6 and 9.2/9.3/9.6/9.7, from core calls.

Each test starts from the exercise's own inputs (workbook, material 003; quoted in the
comment), computes with ``course.core`` and compares with the corrected key in
shared/reference/workbook-answers.md (its numbers are the reference values below).
Tolerance: 1 % relative, as the key says, unless the answer is a whole number.
"""

import pytest

from course import core
from course.core.units import GB, GB_per_s, MB, ms

REL = 0.01


def key(value, rel=REL):
    return pytest.approx(value, rel=rel)


# --- chapter 0: ring all-reduce -----------------------------------------------------------

def test_0_1_volume_per_gpu():
    # N = 8, M = 1 GB
    assert core.allreduce_traffic_bytes(1 * GB, 8, "ring") / GB == key(1.75)


def test_0_2_ring_time():
    # N = 8, 50 GB/s, M = 2 GB, latency ignored
    assert core.allreduce_time(2 * GB, 8, 50 * GB_per_s) / ms == key(70)


def test_0_3_bandwidth_utilization():
    # 8 GPUs, 300 GB/s NVLink, 4 GB all-reduce in 30 ms: busbw / peak
    busbw = core.bus_bandwidth(4 * GB, 8, 30 * ms)
    assert busbw / GB_per_s == key(233, rel=0.005)
    assert 100 * busbw / (300 * GB_per_s) == key(77.8)


def test_0_4_ring_vs_binomial_tree():
    # N = 8, M = 4 GB, 50 GB/s per link
    assert core.allreduce_time(4 * GB, 8, 50 * GB_per_s, algorithm="ring") / ms == key(140)
    assert core.allreduce_time(4 * GB, 8, 50 * GB_per_s, algorithm="tree") / ms == key(480)


# --- chapter 1: ZeRO ----------------------------------------------------------------------

def test_1_1_no_zero():
    assert core.model_state_bytes(7e9) / GB == key(112)


@pytest.mark.parametrize("stage, answer", [(1, 29.3), (2, 15.5), (3, 1.75)])
def test_1_2_to_1_4_zero_stages_on_64(stage, answer):
    assert core.model_state_bytes(7e9, zero_stage=stage, dp=64) / GB == key(answer)


def test_1_5_zero3_traffic():
    # FP16 weights 14 GB, 64 GPUs: all-gather (forward) + all-gather (backward) + reduce-scatter
    weights = 7e9 * core.precision_bytes("fp16")
    volume = 2 * core.all_gather_time(weights, 64, 1.0) + core.reduce_scatter_time(weights, 64, 1.0)
    assert volume / GB == key(41.3)


# --- chapter 5: pipeline ------------------------------------------------------------------

def test_5_1_bubble_overhead():
    # PP = 4, m = 12, 1F1B: (p-1)/m relative to ideal compute time
    assert 100 * core.bubble_overhead(4, 12) == key(25)


def test_5_2_warmup_activations():
    # p - 1 = 3 micro-batches stashed at the end of warm-up, 2 GB each
    stashed_after_warmup = core.in_flight_microbatches(4, 12, "1f1b") - 1
    assert stashed_after_warmup * 2 == key(6)


def test_5_3_interleaved_overhead():
    assert 100 * core.bubble_overhead(4, 12, 4) == key(6.25)


def test_5_4_point_to_point():
    # 500 MB per micro-batch boundary crossing, PP = 4, m = 12, v = 4
    assert core.p2p_bytes_per_step(500 * MB, 4, 12, 4) / GB == key(180)


def test_5_6_min_microbatches():
    # PP = 8, bubble strictly below 5 %, v = 1
    assert core.min_microbatches_for_bubble(8, 0.05) == 141


# --- chapter 6: tensor parallelism --------------------------------------------------------

def test_6_1_columns_per_gpu():
    assert core.column_parallel_shard_shape(8192, 8192, 8)[1] == 1024


def test_6_2_allreduce_volume_per_gpu():
    # TP = 8, d = 8192, s = 4096, b = 1, FP16; ring formula, not halved
    traffic = core.tp_allreduce_traffic_per_gpu(4096, 1, 8192, 8, core.precision_bytes("fp16"))
    assert traffic / MB == key(117)
    assert traffic / 2**20 == key(112)


def test_6_3_tp_weight_memory():
    # 80 layers of ~12 d^2, d = 8192, FP16, TP = 8
    assert core.tp_weight_bytes_per_gpu(core.transformer_layer_params(8192), 80, 8, 2) / GB == key(16.1)


def test_6_5_tp_overhead():
    # 80 layers x 2 all-reduces x 2 (fwd + bwd) of the 6.2 tensor at 600 GB/s, 300 ms of compute
    overhead = core.tp_comm_overhead(4096, 1, 8192, 80, 8, 600 * GB_per_s, 300 * ms)
    assert 100 * overhead == key(20.9)


# --- chapter 9: capstone (the parts on pipeline, memory and DP volume) --------------------

def test_9_2_layers_per_stage():
    assert core.max_layers_per_stage(126, 16) == 8
    assert core.stages_with_max_layers(126, 16) == 14
    assert 16 - core.stages_with_max_layers(126, 16) == 2


def _stage_weight_bytes():
    # 8 layers of 4 d^2 + 3 d d_ff (d = 16384, d_ff = 53248), TP = 8, FP16
    layer = core.transformer_layer_params(16384, 53248, gated=True)
    return core.tp_weight_bytes_per_gpu(layer, core.max_layers_per_stage(126, 16), 8, 2)


def test_9_3_weight_memory_per_gpu():
    assert _stage_weight_bytes() / GB == key(7.38)


def test_9_6_bubble_overhead_and_share():
    # PP = 16, m = 4; 1F1B and interleaved v = 2
    assert 100 * core.bubble_overhead(16, 4) == key(375)
    assert 100 * core.bubble_overhead(16, 4, 2) == key(187.5)
    assert 100 * core.bubble_fraction(16, 4) == key(79)
    assert 100 * core.bubble_fraction(16, 4, 2) == key(65)


def test_9_7_dp_allreduce_volume():
    # FP16 gradients of the stage's TP shard (= the 9.3 weights), ring over DP = 128
    assert core.allreduce_traffic_bytes(_stage_weight_bytes(), 128, "ring") / GB == key(14.6)

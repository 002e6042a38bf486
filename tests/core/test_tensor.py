"""course.core.tensor against hand computations and workbook chapter 6 (corrected)."""

import numpy as np
import pytest

from course import core
from course.core.units import GB, MB, MiB, ms


def test_shard_shapes():
    assert core.column_parallel_shard_shape(8192, 8192, 8) == (8192, 1024)   # workbook 6.1
    assert core.row_parallel_shard_shape(8192, 8192, 8) == (1024, 8192)
    # the MLP: up-projection column-parallel [h, 4h/t], down-projection row-parallel [4h/t, h]
    up = core.column_parallel_shard_shape(8192, 4 * 8192, 8)
    down = core.row_parallel_shard_shape(4 * 8192, 8192, 8)
    assert up[1] == down[0] == 4096
    rows, cols = core.column_parallel_shard_shape(1024, np.array([1024, 2048]), np.array([2, 4]))
    assert rows.tolist() == [1024, 1024] and cols.tolist() == [512, 512]


def test_heads():
    assert core.heads_per_gpu(64, 8) == 8                                    # workbook 6.4
    assert core.kv_heads_per_gpu(8, 8) == 1
    assert core.kv_heads_per_gpu(8, 16) == 1                                 # replicated twice
    assert core.kv_heads_per_gpu(8, 4) == 2
    assert core.heads_per_gpu(96, 8) == 12


def test_layer_params():
    h = 8192
    assert core.transformer_layer_params(h) == 12 * h * h
    # GQA with 64 Q and 8 KV heads: K and V are 1/8 as wide as Q
    assert core.transformer_layer_params(h, 28672, gated=True, heads=64, kv_heads=8) == \
        2 * h * h + 2 * h * h / 8 + 3 * h * 28672
    assert core.transformer_layer_params(16384, 53248, gated=True) == 4 * 16384**2 + 3 * 16384 * 53248


def test_workbook_6_3_weight_memory():
    got = core.tp_weight_bytes_per_gpu(core.transformer_layer_params(8192), 80, 8) / GB
    assert got == pytest.approx(16.1, rel=0.01)


def test_workbook_6_2_corrected_volume():
    # [4096, 8192] FP16 = 64 MiB; ring per GPU 2 * 7/8 * 64 MiB = 112 MiB = 117 MB (the workbook halves it)
    assert core.tp_allreduce_bytes(4096, 1, 8192) == 64 * MiB
    traffic = core.tp_allreduce_traffic_per_gpu(4096, 1, 8192, 8)
    assert traffic / MiB == pytest.approx(112)
    assert traffic / MB == pytest.approx(117, rel=0.01)


def test_allreduce_counts():
    assert core.tp_allreduces_per_layer() == 4
    assert core.tp_allreduces_per_layer("selective") == 4
    assert core.tp_allreduces_per_layer("full") == 6


def test_comm_time_per_layer_by_hand():
    one = 1.75 * 64 * MiB / 600e9
    assert core.tp_comm_time_per_layer(4096, 1, 8192, 8, 600e9) == pytest.approx(4 * one)
    assert core.tp_comm_time_per_layer(4096, 1, 8192, 8, 600e9, recompute="full") == pytest.approx(6 * one)
    assert core.tp_comm_time_per_layer(4096, 1, 8192, 1, 600e9) == 0.0


def test_workbook_6_5_corrected_overhead():
    # 80 layers x 4 all-reduces of 0.196 ms at 600 GB/s against 300 ms of compute = 20.9 %
    got = core.tp_comm_overhead(4096, 1, 8192, 80, 8, 600e9, 300 * ms)
    assert got == pytest.approx(0.209, rel=0.01)
    # across nodes at 50 GB/s (NDR per GPU) the same layers would cost 12x more
    across = core.tp_comm_overhead(4096, 1, 8192, 80, 8, 50e9, 300 * ms)
    assert across / got == pytest.approx(12)


@pytest.mark.parametrize("call", [
    lambda: core.column_parallel_shard_shape(8192, 1000, 3),
    lambda: core.row_parallel_shard_shape(1000, 8192, 3),
    lambda: core.heads_per_gpu(64, 0),
    lambda: core.heads_per_gpu(12, 8),
    lambda: core.kv_heads_per_gpu(6, 4),
    lambda: core.transformer_layer_params(-1),
    lambda: core.transformer_layer_params(8192, heads=64),
    lambda: core.tp_weight_bytes_per_gpu(1e9, 0, 8),
    lambda: core.tp_allreduces_per_layer("sometimes"),
    lambda: core.tp_comm_time_per_layer(4096, 1, 8192, 8, 0.0),
    lambda: core.tp_comm_overhead(4096, 1, 8192, 80, 8, 600e9, 0.0),
])
def test_invalid_inputs_raise(call):
    with pytest.raises(ValueError):
        call()


def test_errors_name_the_parameter():
    with pytest.raises(ValueError, match="heads must be divisible by tp"):
        core.heads_per_gpu(12, 8)

"""course.core.memory against ZeRO Figure 1, Korthikanti Table 2, the workbook and hand sums."""

import numpy as np
import pytest

from course import core
from course.core.units import GB

S, B, H, A = 2048, 1, 12288, 96  # GPT-3 175B (Korthikanti et al. 2022, sec. 4)


def test_zero_figure_1_published():
    # Rajbhandari et al. 2020, Figure 1: 7.5B params, K = 12, N_d = 64.
    published = [120, 31.4, 16.6, 1.9]
    got = core.model_state_bytes(7.5e9, np.arange(4), 64) / GB
    assert got == pytest.approx(published, rel=0.02)


def test_bytes_per_param_by_precision_and_optimizer():
    assert core.bytes_per_param() == 16                         # 2 + 2 + 4 + 4 + 4
    assert core.bytes_per_param("bf16", "adamw") == 16
    assert core.bytes_per_param("fp32", "adam") == 16            # 4 + 4 + 4 + 4, no master copy
    assert core.bytes_per_param("fp32", "sgd_momentum") == 12    # 4 + 4 + 4
    assert core.bytes_per_param("fp32", "sgd") == 8
    assert core.bytes_per_param("fp16", "sgd") == 8              # 2 + 2 + 4 master
    assert core.bytes_per_param("fp8", "adam", grads="bf16") == 1 + 2 + 4 + 8
    assert core.bytes_per_param("fp16", "adam", master=None) == 12
    parts = core.param_bytes_breakdown()
    assert (parts["weights"], parts["gradients"], parts["master"], parts["moments"]) == (2, 2, 4, 8)
    assert parts["optimizer"] == 12  # ZeRO's K


def test_zero_per_param_formulas_by_hand():
    for n in (1, 2, 8, 64, 1000):
        got = core.zero_bytes_per_param([0, 1, 2, 3], n)
        assert got == pytest.approx([16, 4 + 12 / n, 2 + 14 / n, 16 / n])


def test_breakdown_sums_and_matches_total():
    for stage in range(4):
        parts = core.model_state_breakdown(7e9, stage, 64)
        assert parts["weights"] + parts["gradients"] + parts["optimizer"] == pytest.approx(parts["total"])
        assert parts["total"] == pytest.approx(core.model_state_bytes(7e9, stage, 64))
    parts = core.model_state_breakdown(7e9, 1, 64)
    assert parts["weights"] / GB == pytest.approx(14) and parts["optimizer"] / GB == pytest.approx(84 / 64)


def test_model_state_other_optimizer():
    k = core.param_bytes_breakdown("fp32", "sgd_momentum")
    got = core.model_state_bytes(1e9, 3, 4, k["weights"], k["gradients"], k["optimizer"])
    assert got == pytest.approx(1e9 * 12 / 4)


def test_zero_broadcasts_over_stage_and_dp():
    got = core.model_state_bytes(1e9, np.array([[0], [3]]), np.array([1, 8, 64]))
    assert got.shape == (2, 3)
    assert got[1].tolist() == pytest.approx([16e9, 2e9, 0.25e9])


def test_korthikanti_gpt3_5as_over_h_is_80():
    # 5as/h = 5 * 96 * 2048 / 12288 = 80, so no parallelism: sbh(34 + 80) = 114 sbh
    assert core.activation_bytes_per_layer(S, B, H, A) == pytest.approx(S * B * H * 114)


@pytest.mark.parametrize("t, sp, mode, per_sbh", [
    (8, False, "none", 10 + 24 / 8 + 80 / 8),
    (8, True, "none", 34 / 8 + 80 / 8),
    (8, False, "selective", 10 + 24 / 8),
    (8, True, "selective", 34 / 8),
    (1, False, "full", 2),
    (8, False, "full", 2),
    (8, True, "full", 2 / 8),
    (1, True, "none", 34 + 80),
])
def test_korthikanti_table_2(t, sp, mode, per_sbh):
    got = core.activation_bytes_per_layer(S, B, H, A, tp=t, sequence_parallel=sp, recompute=mode)
    assert got == pytest.approx(S * B * H * per_sbh)


def test_korthikanti_ordering_and_scaling():
    sbh = S * B * H
    none = core.activation_bytes_per_layer(S, B, H, A, 8)
    sel = core.activation_bytes_per_layer(S, B, H, A, 8, recompute="selective")
    full = core.activation_bytes_per_layer(S, B, H, A, 8, recompute="full")
    assert none > sel > full
    # linear in micro-batch; TP without SP keeps the 10 sbh that is not split
    assert core.activation_bytes_per_layer(S, 4, H, A) == pytest.approx(4 * core.activation_bytes_per_layer(S, 1, H, A))
    assert core.activation_bytes_per_layer(S, B, H, A, tp=10**6) == pytest.approx(10 * sbh, rel=1e-4)


def test_activation_per_gpu_1f1b_is_independent_of_pp():
    per_layer = core.activation_bytes_per_layer(S, B, H, A, 8, True)
    for pp in (1, 2, 4, 8, 16):
        got = core.activation_bytes_per_gpu(S, B, H, A, 96, tp=8, pp=pp, sequence_parallel=True)
        assert got == pytest.approx(96 * per_layer)
    gpipe = core.activation_bytes_per_gpu(S, B, H, A, 96, tp=8, pp=8, sequence_parallel=True, in_flight=32)
    assert gpipe == pytest.approx(96 / 8 * 32 * per_layer)


def test_workbook_8_5_activation_model():
    # b = 4, s = 4096, d = 8192, 80 layers: 2bsd = 268,435,456 elements per layer
    assert core.workbook_activation_elements_per_layer(4, 4096, 8192) == 268_435_456
    fp16 = core.workbook_activation_bytes(4, 4096, 8192, 80, "fp16")
    fp8 = core.workbook_activation_bytes(4, 4096, 8192, 80, "fp8")
    assert fp16 / GB == pytest.approx(42.9, rel=0.01)
    assert (fp16 - fp8) / GB == pytest.approx(21.5, rel=0.01)   # not the workbook's 172 GB


@pytest.mark.parametrize("call", [
    lambda: core.model_state_bytes(1e9, 4, 8),
    lambda: core.model_state_bytes(1e9, -1, 8),
    lambda: core.model_state_bytes(1e9, 1, 0),
    lambda: core.model_state_bytes(-1, 1, 8),
    lambda: core.bytes_per_param("int4"),
    lambda: core.bytes_per_param("fp16", "lion"),
    lambda: core.activation_bytes_per_layer(S, B, H, A, recompute="some"),
    lambda: core.activation_bytes_per_layer(0, B, H, A),
    lambda: core.activation_bytes_per_layer(S, B, H, A, tp=0),
    lambda: core.activation_bytes_per_gpu(S, B, H, A, 0),
    lambda: core.workbook_activation_bytes(4, 4096, 8192, 80, "fp4"),
])
def test_invalid_inputs_raise(call):
    with pytest.raises(ValueError):
        call()


def test_errors_name_the_parameter():
    with pytest.raises(ValueError, match="zero_stage"):
        core.model_state_bytes(1e9, 5, 8)
    with pytest.raises(ValueError, match="recompute"):
        core.activation_bytes_per_layer(S, B, H, A, recompute="partial")


def test_gpu_memory_breakdown_by_hand():
    # GPT-3 175B, TP 8 x PP 8, DP 16, ZeRO-1, SP + selective recompute, 1F1B (96 layers' worth held)
    m = core.gpu_memory_breakdown(175e9, 96, S, B, H, A, tp=8, pp=8, dp=16, zero_stage=1,
                                  sequence_parallel=True, recompute="selective")
    shard = 175e9 / 64
    assert m["weights"] == pytest.approx(2 * shard)
    assert m["gradients"] == pytest.approx(2 * shard)
    assert m["optimizer"] == pytest.approx(12 / 16 * shard)
    assert m["activations"] == pytest.approx(96 * S * B * H * 34 / 8)
    assert m["total"] == pytest.approx(sum(m[k] for k in ("weights", "gradients", "optimizer", "activations")))

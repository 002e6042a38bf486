"""FP8 as a planner setting and the pipeline schedules in use today, against hand computations
from their sources (DeepSeek-V3 sec. 3.2-3.3 and Table 2; Qi et al. 2023; H100 data sheet)."""

import pytest

from course.core import catalog as cat
from course.core import fp8, pipeline
from course.core.planner import DEFAULT_COMPUTE_EFFICIENCY, plan

H100_1024 = cat.cluster("h100-1024")
LLAMA70 = dict(tp=8, pp=4, dp=32, num_microbatches=16, zero_stage=1, recompute="selective",
               sequence_parallel=True)


# --------------------------------------------------------------------------- schedules


def test_named_bubbles_by_hand():
    p, m = 16, 32
    # 1F1B: (p-1)(F+B+W) over m(F+B+W); ZB-H1: (p-1)(F+B-W) = (p-1) F; DualPipe (DeepSeek-V3 Table 2):
    # (p/2-1)(F&B + B - 3W) with F&B = 3F: (p/2-1) F; F = B = W
    assert pipeline.schedule_bubble_overhead(p, m, "1f1b") == pytest.approx(15 / 32)
    assert pipeline.schedule_bubble_overhead(p, m, "zb-h1") == pytest.approx(15 / (3 * 32))
    assert pipeline.schedule_bubble_overhead(p, m, "dualpipe") == pytest.approx(7 / (3 * 32))
    assert pipeline.schedule_bubble_overhead(p, m, "interleaved", v=2) == pytest.approx(15 / 64)


def test_named_schedule_memory():
    assert pipeline.schedule_memory(16, 32, "dualpipe") == (17, 2)
    assert pipeline.schedule_memory(16, 32, "zb-h1") == pipeline.schedule_memory(16, 32, "1f1b") == (16, 1)


def test_zb_h1_in_the_planner_cuts_the_bubble_to_a_third_and_keeps_memory():
    one = plan("llama3-70b", H100_1024, **LLAMA70)
    zb = plan("llama3-70b", H100_1024, schedule="zb-h1", **LLAMA70)
    assert zb.bubble == pytest.approx(one.bubble / 3, rel=1e-12)
    assert zb.memory_total == one.memory_total


def test_dualpipe_doubles_the_stage_weights_and_hides_the_all_to_all():
    args = dict(tp=1, pp=16, dp=128, ep=64, global_batch=15360, zero_stage=1, recompute="selective")
    one = plan("deepseek-v3", "h800-2048", **args)
    dual = plan("deepseek-v3", "h800-2048", schedule="dualpipe", **args)
    assert dual.weights == pytest.approx(2 * one.weights) and dual.gradients == pytest.approx(2 * one.gradients)
    # the all-to-alls hide behind compute; they still take 20 of the 132 SMs (DeepSeek-V3, sec. 3.2.2)
    assert one.ep_comm > 0 and dual.ep_comm == pytest.approx(one.ep_comm * 20 / 132, rel=1e-12)
    odd = plan("deepseek-v3", "h800-2048", schedule="dualpipe", **{**args, "global_batch": 128 * 15})
    assert "dualpipe_needs_even" in dict(odd.violations)
    # DeepSeek's dualpipe.py needs at least 2 x PP micro-batches: 16 micro-batches on 16 stages is refused
    few = plan("deepseek-v3", "h800-2048", schedule="dualpipe", **{**args, "global_batch": 128 * 16})
    assert "dualpipe_needs_even" in dict(few.violations) and "2 x PP = 32" in dict(few.violations)["dualpipe_needs_even"]
    assert "dualpipe_needs_even" not in dict(plan("deepseek-v3", "h800-2048", schedule="dualpipe",
                                                  **{**args, "global_batch": 128 * 32}).violations)


# --------------------------------------------------------------------------- FP8


def test_fp8_runs_the_layer_gemms_at_the_fp8_peak_by_hand():
    m = cat.model("llama3-70b")
    B = 32 * 16
    # all FLOPs of the step, with causal attention (FlashAttention-2 tiles of 128 over 8192 tokens: 65/128)
    s, h, l, V = 8192, 8192, 80, 128000
    total = B * s * (l * (3 * (2 * m.layer_params + 4 * s * h * 65 / 128) + 4 * s * h * 65 / 128) + 6 * V * h)
    gemm = B * 8192 * 3 * 2 * m.layer_params * 80  # forward + 2x backward of 2 P_layer per token
    by_hand = (gemm / 1979e12 + (total - gemm) / 989e12) / (DEFAULT_COMPUTE_EFFICIENCY * 1024)
    # attention runs in BF16 at FlashAttention-2's 35 % of the H100's peak, not the GEMMs' efficiency
    # (Shah et al. 2024, FlashAttention-3, abstract): forward, 2x backward and the selective re-run
    attention = B * s * l * 4 * (4 * s * h * 65 / 128)
    by_hand += attention / (1024 * 989e12) * (1 / 0.35 - 1 / DEFAULT_COMPUTE_EFFICIENCY)
    p = plan("llama3-70b", H100_1024, precision="fp8", gemm_shapes=False, **LLAMA70)
    assert p.compute == pytest.approx(by_hand, rel=1e-12)
    bf16 = plan("llama3-70b", H100_1024, **LLAMA70)
    assert 1.3 < bf16.step_time / p.step_time < 2  # faster, but not 2x: attention, casts, communication


def test_fp8_memory_effects_by_hand():
    bf16 = plan("llama3-70b", H100_1024, **LLAMA70)
    p = plan("llama3-70b", H100_1024, precision="fp8", **LLAMA70)
    # a cached FP8 copy of the GPU's weights: one byte per weight of its TP x PP shard
    assert p.weights - bf16.weights == pytest.approx(70e9 / 32)
    # GEMM inputs kept in FP8: 3h + ffn elements per token and layer, one byte saved each, on 8192/8 tokens,
    # 20 layers x 4 micro-batches in flight on the first stage
    saved = (3 * 8192 + 28672) * 8192 / 8 * 20 * 4
    assert bf16.activations - p.activations == pytest.approx(saved, rel=1e-12)
    # MFU stays quoted against the BF16 peak
    assert p.mfu == pytest.approx(6 * 70e9 * 512 * 8192 / (p.step_time * 1024 * 989e12), rel=1e-12)


def test_fp8_cast_traffic_by_hand():
    # read 2 bytes, write 1 byte + 4/128 of a scale, for the operand and its transpose, inputs and gradients
    assert fp8.fp8_cast_bytes_per_token(1.0) == pytest.approx(2 * 2 * (3 + 4 / 128))
    with pytest.raises(ValueError, match="gemm_input_elements"):
        fp8.fp8_cast_bytes_per_token(-1)


# --------------------------------------------------------------------------- assumptions beside every number


def test_every_term_lists_its_assumptions_and_they_follow_the_settings():
    from course.core.planner import STEP_TERMS, explain, sweep

    p = plan("llama3-70b", H100_1024, **LLAMA70)
    assert set(STEP_TERMS) | {"memory"} <= set(p.assumptions)
    assert all(p.assumptions[t] for t in STEP_TERMS)
    assert f"{p.compute_efficiency:.3f} of the dense bf16 peak = 0.64" in p.assumptions["compute"]
    assert "0.64 of the dense bf16 peak" in plan("llama3-70b", H100_1024, gemm_shapes=False,
                                                  **LLAMA70).assumptions["compute"]
    fp = plan("llama3-70b", H100_1024, precision="fp8", cp_algorithm="all_gather", schedule="zb-h1", **LLAMA70)
    assert "FP8 peak" in fp.assumptions["compute"] and "exposed" in fp.assumptions["cp_comm"]
    assert fp.assumptions["bubble"].startswith("ZB-H1")
    t = sweep("gpt3-175b", "h100-1024", tp=(8,), pp=(8,), cp=(1,), micro_batches=(1,), zero_stages=(1,),
              recompute=("full",), sequence_parallel=(False,), interleave=(1, 2), global_batch=1536)
    sentence = explain(t, k=2)[0]
    assert "Assumed (pipeline bubble: 1F1B" in sentence
    assert "counting 6N per token" in sentence and "counting attention" in sentence

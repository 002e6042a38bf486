"""Costs found while checking the search against Llama 3 405B (issue 27), each against a hand
computation from its source (numbers written out, not taken from the code under test):

- a fused attention kernel runs at its own measured share of peak (FlashAttention-2 on H100: 35 %,
  Shah et al. 2024, FlashAttention-3, abstract), not at the GEMMs' ``compute_efficiency``;
- Megatron-LM in BF16 accumulates and reduces gradients in FP32: its distributed optimizer holds
  ``6 + 12/d`` bytes per parameter (Megatron-LM README, distributed optimizer table).
"""

import dataclasses

import pytest

from course import core
from course.core import catalog as cat
from course.core.planner import plan

H100_1024 = cat.cluster("h100-1024")
PEAK = 989e12                       # H100 dense BF16
FA2_H100, GEMM = 0.35, 0.63         # FlashAttention-2 on H100; the planner's fitted GEMM efficiency

# Llama 3 70B at 8K: 80 layers, 64 heads of 128 (score width 8,192), TP 8 x PP 4 (20 layers each) x DP 32
LLAMA70 = dict(tp=8, pp=4, dp=32, num_microbatches=16, zero_stage=1, sequence_parallel=True)


def without_attention_measurement(cluster):
    accel = dataclasses.replace(cluster.accelerator, attention_efficiency=None)
    return dataclasses.replace(cluster, node=dataclasses.replace(cluster.node, accelerator=accel))


def attention_flops_per_gpu(recompute_passes):
    s, w, layers, batch, gpus = 8192, 64 * 128, 80, 1 * 32 * 16, 1024
    causal = (64 + 1) / (2 * 64)  # FlashAttention-2 computes the 128 x 128 tiles on and below the diagonal
    return batch * s * layers * 4 * s * w * causal * recompute_passes / gpus


@pytest.mark.parametrize("recompute,passes", [("none", 3), ("selective", 4), ("full", 4)])
def test_fused_attention_on_h100_runs_at_flash_attention_2_speed(recompute, passes):
    measured = plan("llama3-70b", H100_1024, recompute=recompute, **LLAMA70)
    gemm_speed = plan("llama3-70b", without_attention_measurement(H100_1024), recompute=recompute, **LLAMA70)
    # against the share of peak this layout's GEMMs were charged (their shapes set it: course.core.gemm)
    extra = attention_flops_per_gpu(passes) / PEAK * (1 / FA2_H100 - 1 / measured.compute_efficiency)
    assert measured.compute - gemm_speed.compute == pytest.approx(extra, rel=1e-9)
    assert extra > 0.04 * gemm_speed.compute  # at 8K it is several per cent of the step, not noise
    assert measured.flops_per_iteration == gemm_speed.flops_per_iteration  # the FLOPs do not change, the time does


def test_unfused_attention_and_the_a100_keep_the_gemm_efficiency():
    # unfused attention is batched GEMMs at compute_efficiency; the A100 has no separate measurement
    # (FlashAttention-2 reaches 50-73 % of its peak, about what its GEMMs sustain: Dao 2023, abstract)
    unfused = dict(LLAMA70, recompute="full", fused_attention=False)
    assert (plan("llama3-70b", H100_1024, **unfused).compute
            == plan("llama3-70b", without_attention_measurement(H100_1024), **unfused).compute)
    assert cat.accelerator("A100 80GB SXM").attention_efficiency is None
    assert cat.accelerator("H100 SXM").attention_efficiency == FA2_H100


def test_attention_kernel_cost_grows_with_the_sequence_as_attention_does():
    # attention FLOPs per token grow with s, the rest does not: the correction's share of compute at
    # 128K (CP 16 keeps the tokens per GPU) is far larger than at 8K
    long = dataclasses.replace(cat.model("llama3-405b"), name="llama3-405b-128k", seq_len=131072)
    args = dict(tp=8, pp=16, dp=8, cp=16, num_microbatches=16, zero_stage=2, recompute="full",
                sequence_parallel=True)
    c = cat.cluster("h100-16384")
    share_long = 1 - plan(long, without_attention_measurement(c), **args).compute / plan(long, c, **args).compute
    short = dict(args, dp=128, cp=1)
    share_short = (1 - plan("llama3-405b", without_attention_measurement(c), **short).compute
                   / plan("llama3-405b", c, **short).compute)
    assert share_long > 5 * share_short > 0


def test_megatron_fp32_gradients_give_the_distributed_optimizer_table():
    # Megatron-LM README: "bf16 param, fp32 grads": 6 + 12/d bytes per parameter with the distributed
    # optimizer (ZeRO-1), 18 without it (ZeRO-0); d the data-parallel size (here DP x CP = 32)
    p_gpu = cat.model("llama3-70b").params / (8 * 4)
    one = plan("llama3-70b", H100_1024, grad_bytes=4.0, recompute="full", **LLAMA70)
    assert one.weights + one.gradients + one.optimizer == pytest.approx(p_gpu * (6 + 12 / 32), rel=1e-12)
    zero0 = plan("llama3-70b", H100_1024, grad_bytes=4.0, recompute="full", **dict(LLAMA70, zero_stage=0))
    assert zero0.weights + zero0.gradients + zero0.optimizer == pytest.approx(p_gpu * 18, rel=1e-12)
    # the default stays ZeRO's 16-bit count: 4 + 12/d
    default = plan("llama3-70b", H100_1024, recompute="full", **LLAMA70)
    assert default.weights + default.gradients + default.optimizer == pytest.approx(p_gpu * (4 + 12 / 32), rel=1e-12)


def test_fp32_gradients_double_the_bytes_the_data_parallel_group_reduces():
    # the same collectives on twice the bytes: the bandwidth part doubles, the per-message latency does not
    two = plan("llama3-70b", H100_1024, recompute="full", **LLAMA70)
    four = plan("llama3-70b", H100_1024, grad_bytes=4.0, gather_bytes=4.0, recompute="full", **LLAMA70)
    assert 1.9 * two.dp_comm < four.dp_comm < 2 * two.dp_comm
    assert four.compute == two.compute and four.tp_comm == two.tp_comm
    # Megatron's distributed optimizer (ZeRO-1) reduce-scatters FP32 gradients but all-gathers BF16 parameters:
    # only the reduce-scatter half doubles
    megatron = plan("llama3-70b", H100_1024, grad_bytes=4.0, recompute="full", **LLAMA70)
    assert LLAMA70["zero_stage"] == 1 and 1.45 * two.dp_comm < megatron.dp_comm < 1.5 * two.dp_comm


@pytest.mark.parametrize("bad", [0, -2.0, float("nan"), "four"])
def test_grad_bytes_must_be_positive(bad):
    with pytest.raises(ValueError, match="grad_bytes"):
        plan("llama3-70b", H100_1024, grad_bytes=bad, **LLAMA70)


def test_deepseek_memory_recipe_holds_and_reduces_fp32_gradients():
    # DeepSeek-V3 keeps gradients in FP32 (sec. 3.3.3): the recipe's default gradient is 4 bytes, in memory
    # and on the wire; an explicit grad_bytes still wins
    layout = dict(tp=1, pp=16, dp=128, ep=64, micro_batch=1, num_microbatches=120, zero_stage=1,
                  schedule="dualpipe", precision="fp8")
    recipe = plan("deepseek-v3", "h800-2048", memory_recipe="deepseek-v3", **layout)
    four = plan("deepseek-v3", "h800-2048", memory_recipe="deepseek-v3", grad_bytes=4.0, **layout)
    two = plan("deepseek-v3", "h800-2048", memory_recipe="deepseek-v3", grad_bytes=2.0, **layout)
    assert recipe.dp_comm == four.dp_comm and recipe.memory_total == four.memory_total
    # the FP32 reduce-scatter doubles, the BF16 all-gather of the parameters does not
    assert 1.45 * two.dp_comm < recipe.dp_comm < 1.5 * two.dp_comm
    # ZeRO-1 keeps the whole gradient: twice the bytes, and nothing else in memory moves
    assert recipe.gradients == pytest.approx(2 * two.gradients, rel=1e-9)
    assert recipe.memory_total - two.memory_total == pytest.approx(two.gradients, rel=1e-9)


# --------------------------------------------------------------------------- TP communication overlap


def test_tp_overlap_saves_the_measured_share_of_the_tp_traffic_by_hand():
    # Transformer Engine's userbuffers overlap saves the measured overlap efficiency E (Chang et al. 2024,
    # Flux, sec. 6: 20 % on average for TE 1.4 on 8 H800 over NVLink) of the TP traffic's T seconds, at most
    # the layer GEMMs' time (2 P_layer FLOPs per token of the GPU's b s / t tokens, x3 passes, at 0.63 of
    # 989 TFLOP/s): T - 0.2 T = 0.8 T stays on the step
    args = dict(LLAMA70, recompute="none")
    off = plan("llama3-70b", H100_1024, **args)
    on = plan("llama3-70b", H100_1024, tp_overlap=True, **args)
    m = cat.model("llama3-70b")
    gemm = 16 * 20 * 2 * m.layer_params * 8192 / 8 * 3 / (PEAK * GEMM)  # 16 micro-batches x 20 layers
    assert off.tp_comm < gemm  # at 8K the GEMMs are long enough to cover it
    assert on.tp_comm == pytest.approx(off.tp_comm * (1 - 0.20), rel=1e-9)
    assert on.step_time < off.step_time and on.compute == off.compute


def test_tp_overlap_never_hides_more_than_the_gemms_last_and_may_cost_time():
    # E x min(T, T_gemm): with 0.5 s of GEMMs at most 0.5 s is saved; a negative measured E (small GEMMs,
    # A100 in the Flux measurements) makes the overlap slower than the plain collectives
    assert core.tensor.tp_overlap_exposed_time(1.0, 0.5, 1.0) == pytest.approx(0.5)
    assert core.tensor.tp_overlap_exposed_time(1.0, 8.0, -0.61) == pytest.approx(1.61)
    with pytest.raises(ValueError, match="efficiency"):
        core.tensor.tp_overlap_exposed_time(1.0, 8.0, 1.5)


def test_tp_overlap_needs_sequence_parallelism_and_a_tp_group():
    args = dict(LLAMA70, recompute="full", sequence_parallel=False)
    assert (plan("llama3-70b", H100_1024, tp_overlap=True, **args).tp_comm
            == plan("llama3-70b", H100_1024, **args).tp_comm)
    with pytest.raises(ValueError, match="tp_overlap"):
        plan("llama3-70b", H100_1024, tp_overlap="yes", **LLAMA70)


# --------------------------------------------------------------------------- recompute_modules


def test_recompute_modules_charge_two_flops_per_recomputed_weight_and_token_by_hand():
    # NVIDIA's DeepSeek-V3 H100 recipe: recompute_modules = ["mla_up_proj", "mlp"] (Megatron-Bridge)
    layout = dict(tp=2, pp=8, interleave=4, dp=64, ep=64, micro_batch=1, global_batch=8192, zero_stage=1,
                  sequence_parallel=True, dispatcher="deepep")
    base = plan("deepseek-v3", "h100-1024", **layout)
    both = plan("deepseek-v3", "h100-1024", recompute_modules=["mla_up_proj", "mlp"], **layout)
    # MLA up-projections: q 1536 x 128 x (128 + 64), kv 512 x 128 x (128 + 128), in each of 61 layers;
    # dense MLPs: 3 SwiGLU matrices of 7168 x 18432 in each of the 3 dense layers
    up = 1536 * 128 * 192 + 512 * 128 * 256
    dense = 3 * 7168 * 18432
    per_token = 2 * (61 * up + 3 * dense)
    assert both.flops_per_iteration - base.flops_per_iteration == pytest.approx(8192 * 4096 * per_token, rel=1e-9)
    # the dense MLPs now free their inner tensors (memory below); the MLA up-projections' outputs stay counted
    up_only = plan("deepseek-v3", "h100-1024", recompute_modules=["mla_up_proj"], **layout)
    assert both.compute > base.compute and up_only.memory_total == base.memory_total > both.memory_total
    assert "the MLA up-projections, the dense MLPs" in both.assumptions["compute"]
    # a full recomputation already re-runs them: nothing more is charged
    full = plan("deepseek-v3", "h100-1024", recompute="full", **layout)
    full_both = plan("deepseek-v3", "h100-1024", recompute="full", recompute_modules=["mlp", "mla_up_proj"], **layout)
    assert full_both.flops_per_iteration == full.flops_per_iteration


@pytest.mark.parametrize("bad, match", [("mlp", "list of names"), (["core_attn"], "core_attn"), ([3], "list of names")])
def test_recompute_modules_reject_what_they_do_not_know(bad, match):
    with pytest.raises(ValueError, match=match):
        plan("deepseek-v3", "h100-1024", tp=2, pp=8, dp=64, ep=64, recompute_modules=bad)


def test_mla_up_proj_needs_multi_head_latent_attention():
    with pytest.raises(ValueError, match="mla_up_proj.*latent"):
        plan("llama3-70b", H100_1024, recompute_modules=["mla_up_proj"], **LLAMA70)
    dense = plan("llama3-70b", H100_1024, recompute_modules=["mlp"], **LLAMA70)
    assert dense.compute > plan("llama3-70b", H100_1024, **LLAMA70).compute


# --------------------------------------------------------------------------- NCCL all-to-all


def test_megatron_all_to_all_runs_at_nccl_all_to_all_measured_share_of_each_link_by_hand():
    # Megatron-Core's NCCL all-to-all: 370 of NVLink's 450 GB/s (nccl-tests #212) and 46 of a 400 Gbit/s NIC's
    # 50 GB/s (alltoall_perf on 2 DGX H100, deepseek-ai/DeepEP #3); EP 32 over 4 nodes, 8 ranks per node, the
    # GPU's 4,096 tokens, 4 all-to-alls per MoE layer (no recomputation), 94 MoE layers, 4 micro-batches
    m, c = cat.model("qwen3-235b-a22b"), H100_1024
    p = plan(m, c, tp=1, pp=1, dp=1024, ep=32, micro_batch=1, global_batch=4096, recompute="none")
    per_layer = core.moe_all_to_all_time_per_layer(4096, m.hidden, m.top_k, 32, 8, c.intra_bandwidth * 370 / 450,
                                                   c.inter_bandwidth * 46 / 50, c.intra_latency, c.inter_latency)
    assert p.ep_comm == pytest.approx(4 * m.moe_layers * per_layer, rel=1e-9)
    # network-bound: at the all-reduce's 47 / 50 of the NIC (the former pricing) it would be 46 / 47 as long
    as_allreduce = plan(m, c, tp=1, pp=1, dp=1024, ep=32, micro_batch=1, global_batch=4096, recompute="none",
                        collective_efficiency=47 / 50)
    assert as_allreduce.ep_comm < p.ep_comm

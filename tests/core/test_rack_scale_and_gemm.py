"""Rack-scale NVLink domains, GEMM efficiency from shapes, measured all-to-all and attention speeds (issue 39).

Every expected number is derived here from its published source, not copied from the code under test.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from course import core
from course.core import catalog as cat
from course.core import gemm
from course.core.plan_terms import Config


# --------------------------------------------------------------------------- hardware and NVLink domains


def test_new_accelerators_state_dense_peaks_from_their_rack_specifications():
    # GB200 / GB300 NVL72: FP16/BF16 360 PFLOPS and FP8 720 PFLOPS per rack *with sparsity*, 72 GPUs
    for name in ("GB200", "GB300"):
        a = cat.accelerator(name)
        assert a.peak("bf16") == pytest.approx(360e15 / 72 / 2)
        assert a.peak("fp8") == pytest.approx(720e15 / 72 / 2)
        assert a.memory_bandwidth == pytest.approx(576e12 / 72)
        assert "with" in a.source and "sparsity" in a.source
    # GB200: 13.4 TB HBM3e per rack; GB300: 288 GB per GPU (data sheet)
    assert cat.accelerator("GB200").memory_bytes == pytest.approx(186e9)
    assert cat.accelerator("GB300").memory_bytes == pytest.approx(288e9)
    h200 = cat.accelerator("H200")
    assert h200.peak("bf16") == cat.accelerator("H100").peak("bf16") and h200.memory_bytes == pytest.approx(141e9)
    assert h200.memory_bandwidth == pytest.approx(4.8e12)


def test_a_clusters_nvlink_domain_is_its_own_not_its_nodes():
    rack = cat.cluster("gb200-nvl72-rack")
    assert rack.gpus_per_node == 4 and rack.nvlink_domain == 72 and rack.gpus == 72
    assert cat.cluster("h100-1024").nvlink_domain == 8
    # a cluster smaller than the domain: the domain is the cluster
    assert cat.make_cluster("GB200 NVL72", 8).nvlink_domain == 8
    # one port per GPU: 4 ConnectX-7 (400 Gbit/s) or ConnectX-8 (800 Gbit/s) per 4-GPU tray
    assert rack.inter_bandwidth == pytest.approx(50e9)
    assert cat.cluster("gb300-nvl72-4608").inter_bandwidth == pytest.approx(100e9)


def test_tp_16_stays_on_nvlink_in_an_nvl72_rack_but_not_in_a_dgx():
    llama = "llama3-70b"
    dgx = core.plan(llama, cat.make_cluster("DGX B200", 1152), tp=16, pp=4, dp=18, global_batch=1152)
    assert "tp_crosses_node" in dict(dgx.violations)
    # 72 / 16 is not whole: the fifth TP-16 group of a rack would straddle two racks
    rack = core.plan(llama, cat.make_cluster("GB200 NVL72", 1152), tp=16, pp=4, dp=18, global_batch=1152)
    assert "tp_crosses_node" in dict(rack.violations) and "72-GPU NVLink domain" in dict(rack.violations)[
        "tp_crosses_node"]
    # TP 8 divides 72: on NVLink 5 inside the rack, crossing no tray boundary's network
    c = cat.make_cluster("GB200 NVL72", 1152)
    cfg = Config(llama, c, tp=8, pp=4, dp=36, num_microbatches=8)
    assert float(cfg.tp_link.bandwidth) == pytest.approx(c.intra_bandwidth * core.collectives.NVLINK_COLLECTIVE_EFFICIENCY)


def test_expert_parallelism_fills_the_nvlink_domain_before_the_network():
    # DeepSeek-V3 with EP 64 on a stage of 72 GPUs: every EP rank is on the rack's NVLink
    c = cat.make_cluster("GB200 NVL72", 288)
    cfg = Config("deepseek-v3", c, tp=1, pp=4, dp=72, ep=8, num_microbatches=8)
    assert int(cfg.ep_local) == 8
    cfg64 = Config("deepseek-v3", cat.make_cluster("GB200 NVL72", 256), tp=1, pp=4, dp=64, ep=64, num_microbatches=8)
    assert int(cfg64.ep_local) == 64
    # on 8-GPU DGX nodes the same EP 64 spreads over 8 nodes
    dgx = Config("deepseek-v3", cat.make_cluster("DGX H100", 256), tp=1, pp=4, dp=64, ep=64, num_microbatches=8)
    assert int(dgx.ep_local) == 8


def test_the_sweep_tries_tp_up_to_the_nvlink_domain():
    t = core.sweep("llama3-70b", cat.make_cluster("GB200 NVL72", 288), pp=(1, 2, 4), cp=(1,), micro_batches=(1,),
                   zero_stages=(1,), recompute=("full",), sequence_parallel=(True,), interleave=(1,),
                   global_batch=576, include_infeasible=True)
    # powers of two up to 72 that divide it: 1, 2, 4, 8 (16 and 32 do not divide 72)
    assert set(t["tp"]) == {1, 2, 4, 8}
    t64 = core.sweep("llama3-70b", "h100-1024", pp=(4,), cp=(1,), micro_batches=(1,), zero_stages=(1,),
                     recompute=("full",), sequence_parallel=(True,), interleave=(1,), include_infeasible=True)
    assert set(t64["tp"]) == {1, 2, 4, 8}


# --------------------------------------------------------------------------- GEMM efficiency from shapes


def test_wave_quantization_by_hand():
    # NVIDIA's Matrix Multiplication Background: tiles run in waves of one per SM; a partial last wave costs a wave.
    # 1,024 x 4,608 output, 132 SMs: 128 x 256 tiles 8 x 18 = 144 (2 waves, 144/264); 128 x 128: 8 x 36 = 288
    # (3 waves, 288/396)
    assert gemm.wave_efficiency(1024, 4608, 132, 128, 256) == pytest.approx(144 / 264)
    assert gemm.wave_efficiency(1024, 4608, 132, 128, 128) == pytest.approx(288 / 396)
    h100 = cat.accelerator("H100")
    # the library picks the tile that wastes least: 288/396 at the H100's measured 80.3 % ceiling
    assert gemm.gemm_efficiency(1024, 4608, 16384, h100) == pytest.approx(0.803 * 288 / 396)


def test_a_thin_gemm_is_memory_bound_on_the_roofline():
    h100 = cat.accelerator("H100")
    m, n, k = 16, 16384, 16384  # 16 rows against a 16,384 x 16,384 weight: the weight's bytes dominate
    bytes_moved = 2 * (m * k + k * n + m * n)
    expected = 2 * m * n * k / (bytes_moved / h100.memory_bandwidth) / h100.peak("bf16")
    assert gemm.gemm_efficiency(m, n, k, h100) == pytest.approx(expected)
    assert expected < 0.1


def test_measured_ceilings_follow_the_mamf_table():
    # Bekman, MAMF comparison table: BF16 A100 271.2/312, H100 794.5/989, B200 1745/2250, GB200 1822/2500
    for name, mamf, theory in (("A100", 271.2, 312), ("H100", 794.5, 989), ("B200", 1745.0, 2250),
                               ("GB200", 1822.0, 2500)):
        assert gemm.matmul_ceiling(cat.accelerator(name)) == pytest.approx(mamf / theory, abs=5e-4)
    # FP8: H100 1402.6 / 1979
    assert gemm.matmul_ceiling(cat.accelerator("H100"), "fp8") == pytest.approx(1402.6 / 1979, abs=5e-4)


def test_thin_tensor_parallel_slices_and_short_cp_chunks_lower_the_planned_efficiency():
    c = "h100-16384"
    wide = core.plan("llama3-405b", c, tp=8, pp=16, dp=128, num_microbatches=16, zero_stage=1, sequence_parallel=True)
    thin = core.plan("llama3-405b", c, tp=8, cp=8, pp=16, dp=16, num_microbatches=128, zero_stage=1,
                     sequence_parallel=True)
    assert thin.gemm_efficiency < wide.gemm_efficiency
    assert thin.compute_efficiency == pytest.approx(
        core.DEFAULT_COMPUTE_EFFICIENCY * thin.gemm_efficiency / core.plan_terms.REFERENCE_GEMM_EFFICIENCY)
    # the assumption says which efficiency the plan used and where it comes from
    assert f"{wide.compute_efficiency:.3f} of the dense bf16 peak" in wide.assumptions["compute"]
    assert "MAMF" in wide.assumptions["compute"] and "wave quantization" in wide.assumptions["compute"]


def test_gemm_shapes_off_is_the_calibrated_constant():
    p = core.plan("gpt3-175b", "h100-1024", tp=8, pp=8, dp=16, global_batch=1536, gemm_shapes=False)
    assert p.compute_efficiency == core.DEFAULT_COMPUTE_EFFICIENCY and p.gemm_efficiency == 0.0
    with pytest.raises(ValueError, match="gemm_shapes"):
        core.plan("gpt3-175b", "h100-1024", tp=8, pp=8, dp=16, gemm_shapes="yes")


# --------------------------------------------------------------------------- attention, all-to-all, MoE traffic


def test_attention_slows_on_short_chunks_as_flashattention_2_measured():
    # Shah et al. 2024, FlashAttention-3, causal head dim 128 on H100: FA-2 191, 260, 298, 319, 333 TFLOP/s at
    # 512 ... 8K tokens
    for length, tflops in ((512, 191), (1024, 260), (2048, 298), (4096, 319), (8192, 333)):
        assert gemm.attention_length_factor(length) == pytest.approx(tflops / 333)
    assert gemm.attention_length_factor(131072) == 1.0
    cfg = Config("llama3-405b", "h100-16384", tp=8, cp=8, pp=16, dp=16, num_microbatches=8)
    assert float(cfg.attention_efficiency) == pytest.approx(0.35 * 260 / 333)


def test_deepep_runs_at_its_measured_share_of_the_links():
    # deepseek-ai/DeepEP docs/legacy.md: 153 GB/s NVLink of the H800's 200 GB/s; 43 GB/s RDMA of a 50 GB/s NIC
    c = cat.make_cluster("DGX H100", 256)
    args = dict(tp=2, pp=8, interleave=4, dp=16, ep=32, num_microbatches=128, sequence_parallel=True)
    deepep = Config("qwen3-235b-a22b", c, dispatcher="deepep", **args)
    assert deepep.a2a_measured
    slower = dataclasses.replace(c, name="x", fabric=dataclasses.replace(c.fabric, bandwidth=c.fabric.bandwidth / 2))
    a = core.plan("qwen3-235b-a22b", c, dispatcher="deepep", **args).ep_comm
    b = core.plan("qwen3-235b-a22b", slower, dispatcher="deepep", **args).ep_comm
    assert b > a  # the network share is priced
    assert core.moe.DEEPEP_NVLINK_EFFICIENCY == pytest.approx(153 / 200)
    assert core.moe.DEEPEP_NETWORK_EFFICIENCY == pytest.approx(43 / 50)
    # a caller who fixes one collective efficiency gets it everywhere
    assert not Config("qwen3-235b-a22b", c, dispatcher="deepep", collective_efficiency=0.9, **args).a2a_measured


def test_moe_elementwise_traffic_grows_with_top_k():
    m = cat.model("qwen3-235b-a22b")
    c = cat.make_cluster("DGX H100", 256)
    args = dict(tp=2, pp=8, dp=16, ep=32, num_microbatches=32, sequence_parallel=True, recompute="none")
    k8 = core.plan(m, c, **args).memory_bound
    k4 = core.plan(dataclasses.replace(m, top_k=4), c, **args).memory_bound
    k1 = core.plan(dataclasses.replace(m, top_k=1), c, **args).memory_bound
    # about linear in k (the straggler factor of the busiest rank changes a little with k)
    assert k8 > k4 > k1 and (k8 - k4) / 4 == pytest.approx((k4 - k1) / 3, rel=0.25)


def test_the_8k_search_keeps_llama3s_published_layout_close():
    # Dubey et al. 2024: TP 8 x CP 1 x PP 16 (v 8) at 8K on 16,384 H100; the planner's default search used to put
    # TP 4 x CP 8 x PP 32 22 % ahead. With v = 8 searched, GEMMs priced by shape and all-gather CP as Llama 3 ran
    # it, the published layout is within 5 % of the best
    t = core.sweep("llama3-405b", "h100-16384", cp_algorithm="all_gather")
    best = t.row(0)
    published = t.take(np.flatnonzero((t["tp"] == 8) & (t["cp"] == 1) & (t["pp"] == 16))).row(0)
    assert best["tokens_per_second"] / published["tokens_per_second"] - 1 < 0.05


# --------------------------------------------------------------------------- FSDP as it runs


def test_fsdp_gathers_and_reduces_at_their_own_widths():
    # FSDP2 with param_dtype BF16 and reduce_dtype FP32: ZeRO-3 moves per micro-batch a forward gather, a backward
    # gather (2 bytes each) and a reduce-scatter (4 bytes); with everything at 2 bytes the three are equal
    args = dict(tp=1, pp=1, dp=64, num_microbatches=4, zero_stage=3, recompute="full", overlap=False)
    c = cat.make_cluster("DGX H100", 64)
    bf16 = core.plan("llama3-8b", c, **args)
    fp32_reduce = core.plan("llama3-8b", c, grad_bytes=4.0, **args)
    # not overlapped: exposed = total = m (2 G + R); R doubles: (2 + 2) / (2 + 1) = 4/3 of the bandwidth part
    assert fp32_reduce.dp_comm == pytest.approx(bf16.dp_comm * 4 / 3, rel=0.02)


def test_no_reshard_after_forward_saves_the_backward_gather_and_holds_the_weights():
    c = cat.make_cluster("DGX H100", 64)
    args = dict(tp=1, pp=1, dp=64, num_microbatches=4, zero_stage=3, recompute="full", overlap=False)
    resharded = core.plan("llama3-8b", c, **args)
    kept = core.plan("llama3-8b", c, reshard_after_forward=False, **args)
    # G + R instead of 2 G + R per micro-batch, all at 2 bytes: two thirds of the traffic
    assert kept.dp_comm == pytest.approx(resharded.dp_comm * 2 / 3, rel=1e-9)
    # the gathered BF16 weights stay resident: 2 bytes x (1 - 1/64) of every parameter
    m = cat.model("llama3-8b")
    assert kept.weights - resharded.weights == pytest.approx(2.0 * m.params * (1 - 1 / 64))
    assert "reshard_after_forward=False" in kept.assumptions["dp_comm_exposed"]
    with pytest.raises(ValueError, match="reshard_after_forward"):
        core.plan("llama3-8b", c, reshard_after_forward="no", **args)
    with pytest.raises(ValueError, match="gather_bytes"):
        core.plan("llama3-8b", c, gather_bytes=0, **args)


def test_sharded_traffic_reduces_to_zero_exposed_time_at_equal_widths():
    for stage in range(4):
        total, exposed = core.zero.sharded_traffic_time(0.5, 0.5, stage, 8, 0.1, 0.2, 4)
        per_mb, per_step = core.zero.zero_allreduce_equivalents(stage)
        assert float(total) == pytest.approx(float(per_mb * 8 + per_step))
        assert float(exposed) == pytest.approx(float(core.zero.zero_exposed_time(1.0, stage, 8, 0.1, 0.2, 4)))


def test_recomputing_the_mlp_charges_its_flops_and_frees_its_inner_tensors():
    # Llama 3 70B, TP 8 + SP, 8K, b 1: the SwiGLU MLP keeps 2 pre-activations and the activation output, 2 s b f
    # bytes each over TP (Korthikanti et al.); recomputed, it keeps its input only. The fullest stage (20 layers,
    # 1F1B with PP 4) holds 4 micro-batches of every layer: 80 layer-micro-batches
    args = dict(tp=8, pp=4, dp=32, num_microbatches=16, zero_stage=1, sequence_parallel=True)
    kept = core.plan("llama3-70b", "h100-1024", **args)
    recomputed = core.plan("llama3-70b", "h100-1024", recompute_modules=["mlp"], **args)
    per_layer = 8192 * 1 * 28672 * 2 * 3 / 8
    assert kept.activations - recomputed.activations == pytest.approx(80 * per_layer)
    # 2 FLOPs per MLP weight and token, once more per step
    m = cat.model("llama3-70b")
    extra = 2 * 3 * m.hidden * m.ffn * m.layers * kept.global_batch * m.seq_len
    assert recomputed.flops_per_iteration - kept.flops_per_iteration == pytest.approx(extra)


def test_the_attention_kernel_in_use_sets_attention_speed():
    # FlashAttention-3 602 and cuDNN 529 TFLOP/s at 8K against FlashAttention-2's 333 (Shah et al. 2024, causal,
    # head dim 128, H100): at 128K, where attention is 40 % of the FLOPs, the kernel moves the step
    args = dict(tp=8, cp=16, pp=16, dp=8, num_microbatches=16, zero_stage=2, recompute="full", sequence_parallel=True)
    model = dataclasses.replace(cat.model("llama3-405b"), name="llama3-405b-128k", seq_len=131072)
    steps = {k: core.plan(model, "h100-16384", attention_kernel=k, **args) for k in core.plan_terms.ATTENTION_KERNELS}
    assert steps["flash-attention-3"].step_time < steps["cudnn"].step_time < steps["flash-attention-2"].step_time
    cfg = Config(model, "h100-16384", attention_kernel="flash-attention-3", **args)
    assert float(cfg.attention_efficiency) == pytest.approx(0.35 * 602 / 333)  # 8K queries per CP rank
    assert "FlashAttention-3" in steps["flash-attention-3"].assumptions["compute"]
    with pytest.raises(ValueError, match="attention_kernel"):
        core.plan(model, "h100-16384", attention_kernel="flash-attention-4", **args)


# --------------------------------------------------------------------------- one record of settings (issue 41)


def test_the_settings_are_one_record_that_plan_evaluate_sweep_and_explain_share():
    from course.core.plan_terms import PlanSettings

    args = dict(tp=8, pp=4, dp=32, num_microbatches=16, zero_stage=1, sequence_parallel=True)
    record = PlanSettings.of(precision="fp8", tp_overlap=True, cp_algorithm="all_gather")
    by_keywords = core.plan("llama3-70b", "h100-1024", precision="fp8", tp_overlap=True, cp_algorithm="all_gather",
                            **args)
    by_record = core.plan("llama3-70b", "h100-1024", settings=record, **args)
    assert by_record.as_dict() == by_keywords.as_dict()
    # keywords override the record's fields
    overridden = core.plan("llama3-70b", "h100-1024", settings=record, precision="bf16", **args)
    assert overridden.step_time == core.plan("llama3-70b", "h100-1024", tp_overlap=True, cp_algorithm="all_gather",
                                             **args).step_time
    cols = core.evaluate("llama3-70b", "h100-1024", settings=record, **args)
    assert float(cols["step_time"]) == pytest.approx(by_record.step_time)
    t = core.sweep("llama3-70b", "h100-1024", pp=(4,), cp=(1,), micro_batches=(1,), zero_stages=(1,),
                   recompute=("none",), sequence_parallel=(True,), interleave=(1,), settings=record)
    assert t.meta["settings"] == record and "FP8" in t.meta["assumptions"]["compute"]
    # every setting is declared once, with its default, in the record
    assert PlanSettings().compute_efficiency == core.DEFAULT_COMPUTE_EFFICIENCY
    with pytest.raises(ValueError, match="unknown planner setting 'precison'"):
        core.plan("llama3-70b", "h100-1024", precison="fp8", **args)
    with pytest.raises(ValueError, match="dispatcher"):
        PlanSettings.of(dispatcher="nccl")
    with pytest.raises(ValueError, match="settings must be a PlanSettings"):
        core.plan("llama3-70b", "h100-1024", settings={"precision": "fp8"}, **args)

"""The TP traffic of MoE layers and expert-TP's gathers, checked against hand-computed values.

Megatron-Core (parallel folding): an MoE layer's routed experts use no attention-TP collective; with
ETP > 1 the all-to-all dispatcher all-gathers the received tokens over the expert-TP group and
reduce-scatters the expert outputs before the combine (``MoEAlltoAllTokenDispatcher``); shared experts
run over the attention TP group (``SharedExpertMLP``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from course import core
from course.core import catalog, moe, plan_terms

# a small MoE: 4 layers, h = 1,024, 1,024-token sequences, 8 experts of width 2,048, top-2, no shared expert
SMALL_MOE = catalog.Model("small-moe", 1e9, "test fixture", layers=4, hidden=1024, heads=8, kv_heads=8, ffn=2048,
                          vocab=32000, seq_len=1024, mlp_matrices=3, dropout=False, experts=8, top_k=2,
                          expert_ffn=2048)
SHARED_MOE = dataclasses.replace(SMALL_MOE, name="small-moe-shared", shared_experts=1)
DENSE = dataclasses.replace(SMALL_MOE, name="small-dense", experts=0, top_k=0, expert_ffn=0)

NVLINK = 450e9 * 370 / 450   # DGX H100 NVLink at NCCL's measured 370 GB/s (nccl-tests issue #212)
NIC = 50e9 * 47 / 50         # one 400 Gbit/s NIC at 47 GB/s (nccl-tests issue #290)
ALPHA_IN, ALPHA_OUT = 1e-6, 5e-6
LAYOUT = dict(tp=2, pp=1, dp=8, ep=4, micro_batch=1, num_microbatches=4, zero_stage=1, recompute="none",
              sequence_parallel=True)


def _cfg(model, gpus=16, **kw):
    return plan_terms.Config(model, core.make_cluster("DGX H100", gpus), **{**LAYOUT, **kw})


def _dense_layer_tp_seconds():
    # ring all-reduce of b s h x 2 bytes = 2 MiB over TP 2: 2 (p-1) alpha + 2 (p-1)/p x M / B; 4 per layer
    message = 1 * 1024 * 1024 * 2
    return 4 * (2 * ALPHA_IN + message / NVLINK)


def test_etp1_moe_layers_pay_half_the_dense_tp_traffic_and_no_etp_traffic():
    cfg = _cfg(SMALL_MOE, etp=1)
    hand = 4 * 4 * _dense_layer_tp_seconds() / 2          # micro-batches x layers x half a dense layer
    assert float(plan_terms.tp_comm_term(cfg=cfg)) == pytest.approx(hand, rel=1e-12)
    assert float(plan_terms.etp_comm_term(cfg=cfg)) == 0.0


def test_shared_experts_run_over_the_attention_tp_group():
    hand = 4 * 4 * _dense_layer_tp_seconds()
    assert float(plan_terms.tp_comm_term(cfg=_cfg(SHARED_MOE))) == pytest.approx(hand, rel=1e-12)
    assert float(plan_terms.tp_comm_term(cfg=_cfg(DENSE, ep=1))) == pytest.approx(hand, rel=1e-12)


def test_etp2_gathers_the_received_tokens_by_hand():
    cfg = _cfg(SMALL_MOE, etp=2)
    # a GPU dispatches b s / TP = 512 tokens and receives 512 x k = 1,024 copies; the ring all-gather over the
    # ETP pair sends (2 - 1) x 1,024 x h x 2 bytes = 2 MiB; all-gather + reduce-scatter, forward and backward
    sent = 1 * 512 * 2 * 1024 * 2
    per_layer = 4 * (1 * ALPHA_IN + sent / NVLINK)
    assert float(plan_terms.etp_comm_term(cfg=cfg)) == pytest.approx(4 * 4 * per_layer, rel=1e-12)
    # the attention TP traffic does not depend on ETP
    assert plan_terms.tp_comm_term(cfg=cfg) == plan_terms.tp_comm_term(cfg=_cfg(SMALL_MOE, etp=1))


def test_full_recomputation_repeats_the_forward_gathers():
    none = float(plan_terms.etp_comm_term(cfg=_cfg(SMALL_MOE, etp=2)))
    full = float(plan_terms.etp_comm_term(cfg=_cfg(SMALL_MOE, etp=2, recompute="full")))
    assert full == pytest.approx(none * 6 / 4, rel=1e-12)


def test_an_etp_group_beyond_the_nvlink_domain_gathers_over_the_network():
    # 32 GPUs, ETP 16 spans two 8-GPU nodes
    cfg = _cfg(SMALL_MOE, gpus=32, tp=2, dp=16, ep=2, etp=16)
    sent = 15 * 512 * 2 * 1024 * 2
    per_layer = 4 * (15 * ALPHA_OUT + sent / NIC)
    assert float(plan_terms.etp_comm_term(cfg=cfg)) == pytest.approx(4 * 4 * per_layer, rel=1e-12)


def test_the_etp_traffic_is_part_of_the_ep_term_of_a_plan():
    kw = {**LAYOUT, "global_batch": 32}
    kw.pop("num_microbatches")
    cluster = core.make_cluster("DGX H100", 16)
    p = core.plan(SMALL_MOE, cluster, **kw, etp=2)
    cfg = plan_terms.Config(SMALL_MOE, cluster, **LAYOUT, etp=2)
    assert p.ep_comm == pytest.approx(float(plan_terms.ep_comm_term(cfg=cfg) + plan_terms.etp_comm_term(cfg=cfg)),
                                      rel=1e-12)
    assert "all-gathered over the ETP group" in p.assumptions["ep_comm"]
    assert "MoEAlltoAllTokenDispatcher" in p.assumptions["ep_comm"]
    assert "attention half" in p.assumptions["tp_comm"]


def test_core_functions_by_hand_and_on_arrays():
    assert moe.expert_tp_gather_bytes(512, 1024, 2, np.array([1, 2, 4])).tolist() == [0.0, 2**21, 3 * 2**21]
    assert moe.moe_layer_tp_share(np.array([0, 2])).tolist() == [0.5, 1.0]
    with pytest.raises(ValueError, match="etp"):
        moe.expert_tp_comm_time_per_layer(512, 1024, 2, 0, NVLINK)
    with pytest.raises(ValueError, match="bandwidth"):
        moe.expert_tp_comm_time_per_layer(512, 1024, 2, 2, 0.0)


def test_deepep_sends_the_etp_copies_at_its_own_measured_nvlink_share():
    # the flex dispatcher routes each token to every ETP rank inside DeepEP's all-to-all: its measured 153 / 200
    cfg = _cfg(SMALL_MOE, etp=2, dispatcher="deepep")
    sent = 1 * 512 * 2 * 1024 * 2
    per_layer = 4 * (1 * ALPHA_IN + sent / (450e9 * 153 / 200))
    assert float(plan_terms.etp_comm_term(cfg=cfg)) == pytest.approx(4 * 4 * per_layer, rel=1e-12)


def test_the_all_to_all_overlap_does_not_hide_the_etp_gathers():
    # Megatron-Core runs them in routed_experts_compute, with the expert GEMMs, not in the overlapped dispatch
    cluster = core.make_cluster("DGX H100", 16)
    cfg = plan_terms.Config(SMALL_MOE, cluster, **{**LAYOUT, "etp": 2}, ep_overlap=True)
    compute = (plan_terms.compute_term(cfg=cfg)[1] + plan_terms.moe_straggler_term(cfg=cfg)
               + plan_terms.moe_weight_stream_term(cfg=cfg))
    all_to_alls = plan_terms.ep_comm_term(cfg=cfg)
    hidden = plan_terms.ep_exposed(all_to_alls, cfg=cfg, compute=compute)
    etp = float(plan_terms.etp_comm_term(cfg=cfg))
    assert float(hidden) < float(all_to_alls) and etp > 0
    kw = {**LAYOUT, "global_batch": 32}
    kw.pop("num_microbatches")
    p = core.plan(SMALL_MOE, cluster, **kw, etp=2, ep_overlap=True)
    assert p.ep_comm == pytest.approx(float(hidden) + etp, rel=1e-12)

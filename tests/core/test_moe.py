"""Mixture-of-experts physics (course.core.moe) and expert parallelism in the planner.

Expected values come from the papers and model cards (published totals and active
parameters), from Monte Carlo simulation of the routing the formulas describe, or from
limits the physics fixes (no all-to-all on one rank, no network traffic inside a node).
"""

import dataclasses

import numpy as np
import pytest

from course import core
from course.core import catalog, moe


# --------------------------------------------------------------------------- parameters against model cards

# (model, published total, published active), in billions: DeepSeek-V3 sec. 4.2 (671 / 37),
# Mixtral paper sec. 2.1 (46.7 in the model card / 13), Mixtral 8x22B announcement (141 / 39),
# Qwen2 report Table 1 (57 / 14).
PUBLISHED = [("deepseek-v3", 671, 37), ("mixtral-8x7b", 46.7, 13), ("mixtral-8x22b", 141, 39),
             ("qwen2-57b-a14b", 57, 14)]


@pytest.mark.parametrize("name, total_b, active_b", PUBLISHED)
def test_architecture_reproduces_published_totals(name, total_b, active_b):
    m = catalog.model(name)
    embeddings = 2 * m.vocab * m.hidden  # input embedding and output layer, untied
    total_mlp, _ = moe.moe_mlp_params(m.hidden, m.expert_ffn, m.experts, m.top_k, m.shared_experts,
                                      m.shared_ffn or None)
    dense_mlp = 3 * m.hidden * m.ffn
    total = (m.layers * m.attention_layer_params + m.moe_layers * total_mlp + m.dense_layers * dense_mlp
             + embeddings)
    assert total / 1e9 == pytest.approx(total_b, rel=0.02)
    # published active counts are rounded to the billion
    assert m.active_params / 1e9 == pytest.approx(active_b, abs=0.6)


def test_dense_model_is_unchanged_by_the_moe_fields():
    m = catalog.model("llama3-70b")
    assert not m.is_moe and m.moe_layers == 0 and m.routed_expert_params == 0
    assert m.active_params == m.params and m.active_layer_params == m.layer_params


def test_top_k_above_experts_is_rejected():
    with pytest.raises(ValueError, match="top_k"):
        moe.moe_mlp_params(4096, 14336, 8, 9)


# --------------------------------------------------------------------------- all-to-all


def test_all_to_all_on_one_rank_is_free_and_approaches_message_over_bandwidth():
    assert moe.all_to_all_time(1e9, 1, 1e11, 1e-5) == 0
    assert moe.all_to_all_time(1e9, 1024, 1e11) == pytest.approx(1e9 / 1e11, rel=1e-3)


def test_remote_nodes_match_simulated_uniform_routing():
    rng = np.random.default_rng(0)
    k, nodes = 8, 8
    picks = rng.integers(0, nodes, size=(200_000, k))
    own = 0
    simulated = np.mean([len(set(row) - {own}) for row in picks[:20_000]])
    assert moe.expected_remote_nodes(k, nodes) == pytest.approx(simulated, rel=0.02)
    assert moe.expected_remote_nodes(k, 1) == 0


def _simulated_group_limited_remote_nodes(rng, experts, top_k, groups, group_topk, nodes, tokens=4000):
    # the router as DeepSeek-V3 runs it: 256 experts in 8 contiguous groups, a token picks 4 groups, then its
    # 8 distinct experts among theirs; experts sit contiguously on the EP group's nodes; the token lives on node 0
    per_group, per_node = experts // groups, experts // nodes
    counts = []
    for _ in range(tokens):
        chosen = rng.choice(groups, group_topk, replace=False)
        candidates = (chosen[:, None] * per_group + np.arange(per_group)).ravel()
        hit = set(rng.choice(candidates, top_k, replace=False) // per_node)
        counts.append(len(hit - {0}))
    return np.mean(counts)


@pytest.mark.parametrize("nodes", [2, 4, 8, 16, 32])
def test_group_limited_remote_nodes_match_a_simulated_router(nodes):
    rng = np.random.default_rng(nodes)
    simulated = _simulated_group_limited_remote_nodes(rng, 256, 8, 8, 4, nodes)
    assert moe.expected_remote_nodes(8, nodes, 8, 4) == pytest.approx(simulated, rel=0.04)


def test_group_limit_binds_only_where_a_group_is_a_node():
    # EP over 8 nodes: 4 of 8 groups = 4 of 8 nodes; over 32 nodes a group spans 4 nodes and tokens reach ~6 others
    on_eight = moe.expected_remote_nodes(8, 8, 8, 4)
    on_thirty_two = moe.expected_remote_nodes(8, 32, 8, 4)
    assert on_eight < 4 - 0.5 + 1e-9  # at most 4 nodes, the own node among them half the time
    assert on_thirty_two > 1.9 * on_eight
    # with as many groups picked as there are, the limit is no limit
    assert moe.expected_remote_nodes(8, 16, 8, 8) == pytest.approx(moe.expected_remote_nodes(8, 16))
    with pytest.raises(ValueError, match="group_topk"):
        moe.expected_remote_nodes(8, 8, 8, 9)
    with pytest.raises(ValueError, match="group_topk"):
        moe.expected_remote_nodes(8, 8, groups=8)


def test_ep_inside_a_node_sends_nothing_over_the_network():
    intra, inter = moe.moe_dispatch_bytes_per_token(4096, 2, 8, 8)
    assert inter == 0 and intra > 0


def test_node_limited_dispatch_moves_fewer_network_bytes():
    # DeepSeek-V3: 8 routed experts per token, EP 64 over 8 nodes, 4 of 8 groups
    _, flat = moe.moe_dispatch_bytes_per_token(7168, 8, 64, 8)
    _, limited = moe.moe_dispatch_bytes_per_token(7168, 8, 64, 8, groups=8, group_topk=4)
    assert limited < flat / 2


def test_all_to_all_count_per_layer_and_recompute():
    one = moe.moe_all_to_all_time_per_layer(4096, 4096, 2, 16, 8, 300e9, 40e9)
    full = moe.moe_all_to_all_time_per_layer(4096, 4096, 2, 16, 8, 300e9, 40e9, recompute="full")
    assert full / one == pytest.approx(6 / 4)
    assert moe.moe_all_to_all_time_per_layer(4096, 4096, 2, 1, 1, 300e9, 40e9) == 0


# --------------------------------------------------------------------------- load imbalance


def test_max_load_ratio_matches_simulation():
    rng = np.random.default_rng(1)
    tokens, k, bins = 4096, 8, 64
    loads = np.stack([np.bincount(rng.integers(0, bins, tokens * k), minlength=bins) for _ in range(400)])
    simulated = np.mean(loads.max(axis=1)) / (tokens * k / bins)
    assert moe.expected_max_load_ratio(tokens, k, bins) == pytest.approx(simulated, rel=0.03)
    assert moe.expected_max_load_ratio(tokens, k, 1) == 1


def test_dropped_fraction_matches_simulation_and_falls_with_capacity():
    rng = np.random.default_rng(2)
    sigma = 0.15
    loads = rng.normal(1.0, sigma, 1_000_000)
    for c in (0.9, 1.0, 1.2):
        assert moe.dropped_token_fraction(c, sigma) == pytest.approx(np.mean(np.maximum(loads - c, 0)), rel=0.02)
    fractions = moe.dropped_token_fraction(np.array([1.0, 1.25, 1.5, 2.0]), sigma)
    assert np.all(np.diff(fractions) < 0)
    assert moe.dropped_token_fraction(0.5, 0.0) == pytest.approx(0.5)


def test_straggler_is_capacity_when_dropping():
    assert moe.moe_straggler_factor(1024, 2, 8, capacity_factor=1.5) == 1.5
    assert moe.moe_straggler_factor(1024, 2, 8) > 1


# --------------------------------------------------------------------------- memory under EP


def test_expert_data_parallel_size_folds_the_stage():
    assert moe.expert_data_parallel_size(8, 1, 16, 8) == 16
    assert np.array_equal(moe.expert_data_parallel_size(1, 1, 128, np.array([8, 64])), [16, 2])
    with pytest.raises(ValueError, match="etp x ep"):
        moe.expert_data_parallel_size(8, 1, 1, 16, etp=2)


@pytest.mark.parametrize("call, name", [
    (lambda: moe.all_to_all_time(1e9, 0, 1e9), "n"),
    (lambda: moe.expected_max_load_ratio(-1, 2, 8), "tokens"),
    (lambda: moe.dropped_token_fraction(0, 0.1), "capacity_factor"),
    (lambda: moe.expert_params(4096, 14336, 4), "mlp_matrices"),
    (lambda: moe.moe_all_to_all_time_per_layer(1, 4096, 2, 8, 8, 0, 1), "intra_bandwidth"),
])
def test_invalid_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --------------------------------------------------------------------------- the planner with EP


def _mixtral(**kw):
    args = dict(tp=2, pp=4, dp=128, ep=8, global_batch=1024, zero_stage=1, recompute="selective",
                sequence_parallel=True, fused_attention=True)
    args.update(kw)
    return core.plan("mixtral-8x7b", "h100-1024", **args)


def test_plan_with_ep_adds_up_and_reports_the_folding():
    p = _mixtral()
    assert sum(p.breakdown().values()) == pytest.approx(p.step_time, rel=1e-12)
    assert p.ep == 8 and p.expert_dp == 2 * 128 // 8 and p.ep_comm > 0
    assert p.moe_straggler > 1


def test_ep_shards_expert_states():
    few, many = _mixtral(ep=2), _mixtral(ep=8)
    m = catalog.model("mixtral-8x7b")
    # ZeRO-1 leaves weights and gradients unsharded: they shrink by the expert bytes EP removes
    saved = m.routed_expert_params / 4 * (1 / 2 - 1 / 8) * 2
    assert few.weights - many.weights == pytest.approx(saved, rel=1e-9)


def test_ep_across_nodes_costs_more_than_inside_one():
    # PP outermost (Megatron-Core's order): a stage's ranks fill nodes, so EP 8 with ETP 2 spans 2 nodes
    inside = _mixtral(tp=2, pp=8, dp=64, ep=8, etp=2)
    packed = _mixtral(tp=2, pp=8, dp=64, ep=8)  # ETP 1: EP 8 fills a node
    per_layer = lambda p: p.ep_comm / (p.num_microbatches * p.stage_layers)  # noqa: E731 -- a one-line helper local to this function
    assert per_layer(packed) * 3 < per_layer(inside)  # NVLink vs the network


def test_ep_needs_a_moe_model_and_dividing_experts():
    with pytest.raises(ValueError, match="ep and etp"):
        core.plan("llama3-70b", "h100-1024", tp=8, pp=4, dp=32, ep=2)
    p = _mixtral(ep=16)  # 8 experts over 16 ranks
    assert "experts_not_divisible" in [code for code, _ in p.violations]


def test_model_flops_count_active_weights():
    p = _mixtral()
    m = catalog.model("mixtral-8x7b")
    tokens = p.global_batch * m.seq_len
    assert p.model_flops == pytest.approx(6 * m.active_params * tokens)


def test_sweep_covers_ep_and_explain_names_it():
    # every EP degree, the layouts outside the validated range included (EP 1 gives each expert 512 tokens)
    t = core.sweep("qwen2-57b-a14b", "h100-1024", tp=(1, 2), cp=(1,), micro_batches=(1,), zero_stages=(1,),
                   recompute=("selective",), sequence_parallel=(True,), interleave=(1,), fused_attention=True,
                   min_tokens_per_expert=None)
    assert len(t) and set(np.unique(t["ep"])) >= {1, 2, 4, 8}
    ep1 = t.take(np.flatnonzero(t["ep"] == 1)).row(0)
    best = t.take(np.flatnonzero(t["ep"] > 1)).row(0)
    assert best["memory_total"] < ep1["memory_total"]  # 64 experts: sharding them frees memory
    t = t.take(np.flatnonzero(t["ep"] == best["ep"]))
    lines = core.explain(t, k=3)
    assert all(f"EP {best['ep']} ETP 1 EDP {best['expert_dp']}" in line for line in lines)


def test_sweep_rows_with_ep_equal_plan():
    t = core.sweep("mixtral-8x7b", "h100-1024", tp=(2,), cp=(4,), micro_batches=(1,), zero_stages=(1, 2),
                   recompute=("selective", "full"), sequence_parallel=(True,), interleave=(1,))
    assert len(t) > 4
    for i in (0, len(t) // 2, len(t) - 1):
        r = t.row(i)
        p = core.plan("mixtral-8x7b", "h100-1024", tp=r["tp"], cp=r["cp"], pp=r["pp"], dp=r["dp"], ep=r["ep"],
                      micro_batch=r["micro_batch"], num_microbatches=r["num_microbatches"],
                      zero_stage=r["zero_stage"], recompute=r["recompute"], sequence_parallel=r["sequence_parallel"])
        for k in ("step_time", "ep_comm", "memory_total", "mfu", "mfu_attention"):
            assert r[k] == pytest.approx(getattr(p, k), rel=1e-12), k


def test_tokens_per_expert_and_weight_streaming_by_hand():
    from course.core import moe
    # 2,048 tokens per GPU, k = 8 of 256 experts: EP 64 -> 2048 * 64 * 8 / 256 = 4096 tokens per expert
    assert moe.tokens_per_expert(2048, 8, 256, 64) == 4096
    # 1e9 expert weights, 2 bytes, 3 passes, 10 micro-batches over 2e12 B/s: 30 ms; full recompute 40 ms
    assert moe.expert_weight_stream_time(1e9, 10, 2e12) == pytest.approx(0.03)
    assert moe.expert_weight_stream_time(1e9, 10, 2e12, "full") == pytest.approx(0.04)
    with pytest.raises(ValueError, match="memory_bandwidth"):
        moe.expert_weight_stream_time(1e9, 10, 0.0)


def test_few_tokens_per_expert_make_expert_gemms_memory_bound():
    # Megatron-Bridge's DeepSeek-V3 layout on 1,024 H100 (EP 64) is compute-bound: the roofline term is 0;
    # EP 2 gives each expert 32x fewer tokens and 32x more local weights to stream every micro-batch
    from course.core.plan_terms import Config, moe_weight_stream_term
    h100 = core.make_cluster("DGX H100", 1024)
    common = dict(micro_batch=1, zero_stage=1, recompute="none", sequence_parallel=True)
    published = Config("deepseek-v3", h100, tp=2, pp=8, dp=64, ep=64, num_microbatches=128, interleave=4, **common)
    assert float(moe_weight_stream_term(cfg=published)) == 0.0
    small_ep = Config("deepseek-v3", h100, tp=1, cp=4, pp=32, dp=8, ep=2, num_microbatches=1024, gemm_shapes=False,
                      **common)
    assert float(moe_weight_stream_term(cfg=small_ep)) > 5.0  # seconds per step
    # with GEMMs priced by their shapes the roofline is inside each expert GEMM's efficiency (course.core.gemm):
    # the thin expert GEMMs slow the whole layer's GEMMs down, and nothing is left for the separate term
    shaped = Config("deepseek-v3", h100, tp=1, cp=4, pp=32, dp=8, ep=2, num_microbatches=1024, **common)
    assert float(shaped.gemm_efficiency) < 0.5 * float(published.gemm_efficiency)
    dense = Config("llama3-70b", h100, tp=8, pp=4, dp=32, num_microbatches=16, **common)
    assert float(moe_weight_stream_term(cfg=dense)) == 0.0


# --------------------------------------------------------------------------- DeepSeek-V3's memory measures


def test_qwen3_head_dim_is_the_model_cards():
    # Qwen/Qwen3-235B-A22B config.json: hidden 4096, 64 query heads, 4 KV heads, head_dim 128 (not 4096 / 64)
    m = catalog.model("qwen3-235b-a22b")
    assert m.head_dim == 128
    assert m.attention_layer_params == 4096 * 8192 + 2 * 4096 * 512 + 8192 * 4096  # Q, K, V, O
    assert m.score_width == 64 * 128
    # and the card's totals: 235B, 22B activated (embeddings untied)
    assert m.params / 1e9 == pytest.approx(235, rel=0.02)
    total = (m.layers * (m.attention_layer_params + m.experts * 3 * 4096 * 1536 + 4096 * 128)
             + 2 * 151936 * 4096)
    assert total / 1e9 == pytest.approx(235, rel=0.02)
    assert m.active_params / 1e9 == pytest.approx(22, abs=0.6)


def test_mla_activation_bytes_by_hand():
    # DeepSeek-V3 sec. 3.2.3 / 3.3.3: norm input (BF16), latents 1536 + 512 + 64 (BF16), attention output
    # 128 heads x 128 in E5M6 (12 bits), FP32 log-sum-exp per head
    assert moe.mla_activation_bytes_per_token(7168, 128, 1536, 512, 64, 128) == (
        2 * 7168 + 2 * 2112 + 1.5 * 16384 + 4 * 128)
    # without the E5M6 format (BF16 output) it keeps 0.5 byte more per output element
    assert (moe.mla_activation_bytes_per_token(7168, 128, 1536, 512, 64, 128, output_bytes=2.0)
            - moe.mla_activation_bytes_per_token(7168, 128, 1536, 512, 64, 128)) == 0.5 * 16384


def test_fp8_caching_and_swiglu_recompute_shrink_the_moe_block():
    bf16 = moe.moe_mlp_activation_bytes_per_layer(1, 7168, 2048, 8, 1, experts=256)
    fp8 = moe.moe_mlp_activation_bytes_per_layer(1, 7168, 2048, 8, 1, experts=256, cached_bytes=1.03125,
                                                 recompute_activation=True)
    # 9 experts x (2h + 6f) in BF16 against 9 x 1.03125 x (h + 2f); both keep 2h + 4E
    assert bf16 == 9 * (2 * 7168 + 6 * 2048) + 2 * 7168 + 4 * 256
    assert fp8 == 9 * 1.03125 * (7168 + 2 * 2048) + 2 * 7168 + 4 * 256


DEEPSEEK_H800 = dict(tp=1, pp=16, dp=128, ep=64, micro_batch=1, global_batch=15360, zero_stage=1,
                     recompute="selective", schedule="dualpipe", precision="fp8")


def test_deepseek_recipe_fits_the_published_layout_and_states_add_up():
    m, c = catalog.model("deepseek-v3"), catalog.cluster("h800-2048")
    standard = core.plan(m, c, **DEEPSEEK_H800)
    recipe = core.plan(m, c, **DEEPSEEK_H800, memory_recipe="deepseek-v3")
    assert not standard.feasible and recipe.feasible  # sec. 3.2: the run trained without TP on 80 GB GPUs
    dense = (m.params - m.routed_expert_params) / 16
    experts = m.routed_expert_params / (64 * 16)
    # DualPipe: two copies of the stage (Table 2); FP32 gradients, unsharded under ZeRO-1 (sec. 3.3.3)
    assert recipe.gradients == pytest.approx(2 * 4 * (dense + experts))
    # FP32 master + BF16 moments = 8 bytes, ZeRO-1 over DP 128 (dense) and expert-DP 2 (experts)
    assert recipe.optimizer == pytest.approx(8 * (dense / 128 + experts / 2))
    assert recipe.weights == standard.weights
    assert recipe.activations < 0.75 * standard.activations
    # the recomputed MLA up-projections cost compute: 2 x 54.5M FLOPs per token and layer more
    extra = 15360 * 4096 * 61 * 2 * moe.mla_up_projection_params(128, 128, 1536, 512, 64, 128)
    assert recipe.flops_per_iteration - standard.flops_per_iteration == pytest.approx(extra)
    assert recipe.compute > standard.compute


def test_deepseek_recipe_needs_latent_attention():
    with pytest.raises(ValueError, match="memory_recipe"):
        core.plan("qwen3-235b-a22b", "h100-1024", tp=1, pp=8, dp=128, ep=8, memory_recipe="deepseek-v3")
    with pytest.raises(ValueError, match="memory_recipe"):
        core.plan("deepseek-v3", "h800-2048", tp=1, pp=16, dp=128, ep=64, memory_recipe="fp4")


# --------------------------------------------------------------------------- dispatchers, overlap, placement


def test_deepep_sends_one_network_copy_per_remote_node():
    # EP 32 on 4 nodes of 8, top-8, uniform routing: 8 x 24/32 = 6 copies leave the node with Megatron's
    # all-to-all; one per remote node with DeepEP: 3 x (1 - (3/4)^8) = 2.7 (expected_remote_nodes)
    h = 4096
    _, inter_a2a = moe.moe_dispatch_bytes_per_token(h, 8, 32, 8)
    _, inter_deepep = moe.moe_dispatch_bytes_per_token(h, 8, 32, 8, per_node=True)
    assert inter_a2a == pytest.approx(6 * 2 * h)
    assert inter_deepep == pytest.approx(3 * (1 - 0.75 ** 8) * 2 * h)
    # inside one node the two dispatchers move the same bytes
    assert moe.moe_dispatch_bytes_per_token(h, 8, 8, 8) == moe.moe_dispatch_bytes_per_token(h, 8, 8, 8,
                                                                                             per_node=True)


QWEN3_BRIDGE = dict(tp=2, pp=8, interleave=4, dp=16, ep=32, micro_batch=1, global_batch=2048, zero_stage=1,
                    recompute="none", sequence_parallel=True)


def test_dispatcher_and_overlap_change_only_the_all_to_all():
    m, c = "qwen3-235b-a22b", catalog.make_cluster("DGX H100", 256)
    a2a = core.plan(m, c, **QWEN3_BRIDGE)
    deepep = core.plan(m, c, **QWEN3_BRIDGE, dispatcher="deepep")
    hidden = core.plan(m, c, **QWEN3_BRIDGE, dispatcher="deepep", ep_overlap=True)
    assert deepep.ep_comm < 0.6 * a2a.ep_comm  # 2.7 network copies instead of 6
    for term in ("compute", "tp_comm", "pp_comm", "memory_total"):
        assert getattr(deepep, term) == getattr(a2a, term) == getattr(hidden, term)
    # overlapped with the other micro-batch's computation: the ideal overlap hides everything but its SMs (20 / 132);
    # Megatron-Core is credited the 37 % of that ideal NVIDIA measured (course.core.frameworks)
    assert deepep.ep_comm < hidden.compute
    ideal = deepep.ep_comm * 20 / 132
    assert hidden.ep_comm == pytest.approx(deepep.ep_comm - 0.37 * (deepep.ep_comm - ideal))
    full = core.plan(m, c, **QWEN3_BRIDGE, dispatcher="deepep", ep_overlap=True, ep_overlap_credit=1.0)
    assert full.ep_comm == pytest.approx(ideal)
    with pytest.raises(ValueError, match="dispatcher"):
        core.plan(m, c, **QWEN3_BRIDGE, dispatcher="nccl")


def test_experts_fill_nodes_with_pp_outermost():
    # DeepSeek-V3 sec. 3.2: PP 16 x DP 128 on 2,048 GPUs with EP 64 "spanning 8 nodes": a stage's 128 GPUs
    # are 16 whole nodes, so EP 64 puts 8 ranks on each of 8 nodes, and no EP traffic leaves a node at EP 8
    m, c = catalog.model("deepseek-v3"), catalog.cluster("h800-2048")
    cfg = core.planner.Config(m, c, tp=1, pp=16, dp=128, ep=64, num_microbatches=32)
    assert int(cfg.ep_local) == 8
    p8 = core.plan(m, c, tp=1, pp=16, dp=128, ep=8, num_microbatches=32)
    # all on NVLink (H800: 200 GB/s per direction; DeepSeek's node-limited dispatch runs at DeepEP's measured
    # 153 GB/s, deepseek-ai/DeepEP docs/legacy.md): 4,096 tokens of 8 x 7/8 copies of 14,336 bytes, 4 all-to-alls
    # per layer, 7 peers at 1 us, 32 micro-batches, 4 x 58/61 MoE layers
    one = 4096 * 8 * 7 / 8 * 2 * 7168 / (200e9 * 153 / 200) + 7 * 1e-6
    assert p8.ep_comm == pytest.approx(32 * 4 * 58 / 61 * 4 * one)


def test_qwen3_activations_count_the_cards_head_width():
    # Q and the attention output are 64 x 128 = 8,192 wide, K and V 4 x 128 = 512, on a 4,096-wide model:
    # per token and layer (16-bit, TP 2) 2 x (8192 - 4096) x 2 + 2 x 2 x 4 x (128 - 64) bytes more than a
    # 64-wide head would keep
    m = catalog.model("qwen3-235b-a22b")
    narrow = dataclasses.replace(m, head_size=None, attention_params=m.attention_layer_params,
                                 attention_width=m.score_width)  # same weights and FLOPs, head_dim 4096 / 64
    c = catalog.make_cluster("DGX H100", 256)
    cfg = dict(tp=2, pp=8, dp=16, ep=32, micro_batch=1, num_microbatches=32, zero_stage=1, recompute="none",
               sequence_parallel=True)
    wide, thin = core.plan(m, c, **cfg), core.plan(narrow, c, **cfg)
    per_layer = 4096 * (4 * 4096 + 4 * 4 * 64) / 2
    # 1F1B: the first stage holds PP = 8 micro-batches of its 12 layers (94 over 8 stages, the busiest)
    assert wide.activations - thin.activations == pytest.approx(8 * 12 * per_layer)
    # same FLOPs; only the query/output GEMMs' shapes differ (8,192 wide against 4,096): a few per cent
    assert wide.compute == pytest.approx(thin.compute, rel=0.02)


def test_moe_plans_charge_and_source_host_time():
    # NVIDIA measured Megatron-Core MoE training host-bound in its expert kernels (GB200 guide): charged per local
    # expert and MoE layer pass; a dense model's host time is inside compute_efficiency
    c = catalog.make_cluster("DGX H100", 256)
    kw = dict(tp=2, pp=8, dp=16, ep=32, global_batch=2048)
    q = core.plan("qwen3-235b-a22b", c, **kw)
    none = core.plan("qwen3-235b-a22b", c, moe_host_per_expert=0.0, **kw)
    assert "Optimizing DeepSeek-V3 Training Performance" in q.assumptions["compute"]
    # 0.19 ms per local expert (128 / 32 = 4) and MoE layer pass (94 / 8 layers per stage x 2,048 / 16 micro-batches)
    passes = q.num_microbatches * q.stage_layers
    assert q.compute - none.compute == pytest.approx(passes * 4 * 0.19e-3)
    assert q.step_time_low < q.step_time < q.step_time_high
    dense = core.plan("llama3-70b", "h100-1024", tp=8, pp=4, dp=32, global_batch=1024)
    assert "waits for the host" not in dense.assumptions["compute"]


# --------------------------------------------------------------------------- the validated range (tokens per expert)


def _qwen3(**kw):
    h100 = core.make_cluster("DGX H100", 256)
    settings = dict(tp=2, pp=8, dp=16, ep=32, interleave=4, global_batch=2048, zero_stage=1, sequence_parallel=True)
    return core.plan("qwen3-235b-a22b", h100, **{**settings, **kw})


def test_tokens_per_expert_column_by_hand():
    # Qwen3-235B-A22B: 4,096-token sequences, k = 8 of 128 experts. TP 2, b 1: a GPU dispatches 2,048 tokens;
    # EP 32 -> 2048 x 32 x 8 / 128 = 4,096 per expert (NVIDIA's cross-node layout); EP 16 -> 2,048
    assert _qwen3().tokens_per_expert == 4096
    assert _qwen3(ep=16).tokens_per_expert == 2048
    # b 4 with EP 8 and no pipeline (NVIDIA's FSDP layout): 4 x 2048 x 8 x 8 / 128 = 4,096
    assert _qwen3(pp=1, dp=128, ep=8, interleave=1, micro_batch=4, zero_stage=3).tokens_per_expert == 4096
    # CP 2 halves the tokens a GPU dispatches; ETP 2 gathers them back over the expert-TP pair
    assert _qwen3(cp=2, dp=8).tokens_per_expert == 2048
    assert _qwen3(pp=1, dp=128, ep=8, etp=2, interleave=1, zero_stage=3).tokens_per_expert == 2048 * 2 * 8 * 8 / 128


def test_layouts_just_below_the_validated_range_get_a_note_at_it_none():
    at, below = _qwen3(), _qwen3(ep=16)  # 4,096 and 2,048 tokens per expert
    assert "few_tokens_per_expert" not in dict(at.notes)
    sentence = dict(below.notes)["few_tokens_per_expert"]
    assert "2,048" in sentence and "4,096" in sentence and "Megatron-MoE-ModelZoo" in sentence
    assert "optimistic" in sentence and below.feasible  # outside the validated range, not infeasible
    # a lower limit admits it; None or 0 turn the check off
    assert "few_tokens_per_expert" not in dict(_qwen3(ep=16, min_tokens_per_expert=2048).notes)
    assert "few_tokens_per_expert" in dict(_qwen3(ep=16, min_tokens_per_expert=2049).notes)
    for off in (None, 0):
        assert "few_tokens_per_expert" not in dict(_qwen3(ep=16, min_tokens_per_expert=off).notes)
    # the note changes no number
    assert below.step_time == _qwen3(ep=16, min_tokens_per_expert=None).step_time


def test_dense_models_are_unaffected_by_the_validated_range():
    p = core.plan("llama3-70b", "h100-1024", tp=8, pp=4, dp=32, num_microbatches=16, recompute="full")
    assert p.tokens_per_expert == 0 and "few_tokens_per_expert" not in dict(p.notes)
    assert "tokens per expert" not in " ".join(p.assumptions.values())
    kw = dict(zero_stages=(1,), recompute=("full",), sequence_parallel=(True,))
    on, off = core.sweep("llama3-70b", "research-256", **kw), core.sweep("llama3-70b", "research-256",
                                                                       min_tokens_per_expert=None, **kw)
    assert len(on) == len(off) and np.array_equal(on["step_time"], off["step_time"])
    assert on.meta["unvalidated_left_out"] == 0 and "tokens per expert" not in " ".join(core.explain(on, k=2))


def test_sweep_leaves_out_layouts_below_the_validated_range_unless_asked():
    h100 = core.make_cluster("DGX H100", 256)
    kw = dict(global_batch=2048, tp=(2,), cp=(1,), micro_batches=(1,), zero_stages=(1,), recompute=("selective",),
              sequence_parallel=(True,), interleave=(1,))
    kept = core.sweep("qwen3-235b-a22b", h100, **kw)
    every = core.sweep("qwen3-235b-a22b", h100, include_unvalidated=True, **kw)
    # TP 2, b 1: 2,048 tokens per GPU x EP x 8 / 128 >= 4,096 needs EP >= 32
    assert len(kept) and set(np.unique(kept["ep"])) == {32, 64, 128}
    assert (kept["tokens_per_expert"] >= 4096).all()
    assert len(every) - len(kept) == kept.meta["unvalidated_left_out"] > 0
    few = every["tokens_per_expert"] < 4096
    assert few.any() and all("few_tokens_per_expert" in n for n in every["notes"][few])
    assert not any("few_tokens_per_expert" in n for n in every["notes"][~few])
    assert len(core.sweep("qwen3-235b-a22b", h100, min_tokens_per_expert=None, **kw)) == len(every)
    line = core.explain(kept, k=2)[0]
    assert "4,096" in line and "validated range" in line and f"{kept.meta['unvalidated_left_out']:,}" in line
    # a table that kept them says where its best sits: EP 2 gives each expert 2048 x 2 x 8 / 128 = 256 tokens
    line = core.explain(every.take(np.flatnonzero(every["ep"] == 2)), k=2)[0]
    assert "256 tokens per micro-batch, below the planner's validated range" in line


def test_an_empty_moe_sweep_says_the_validated_range_left_every_layout_out():
    # TP 1, CP 2, EP 2, b 1: 4,096 / 2 tokens per GPU x EP 2 x top-8 / 128 experts = 256 per expert, all below 4,096
    h100 = core.make_cluster("DGX H100", 256)
    kw = dict(global_batch=2048, tp=(1,), pp=(16,), cp=(2,), ep=(2,), micro_batches=(1,))
    empty = core.sweep("qwen3-235b-a22b", h100, **kw)
    assert len(empty) == 0 and empty.meta["unvalidated_left_out"] > 0
    (line,) = core.explain(empty)
    assert f"all {empty.meta['unvalidated_left_out']:,} feasible layouts" in line and "4,096" in line
    assert "min_tokens_per_expert=None" in line
    assert len(core.sweep("qwen3-235b-a22b", h100, min_tokens_per_expert=None, **kw)) == \
        empty.meta["unvalidated_left_out"]


def test_min_tokens_per_expert_rejects_bad_input():
    for bad in (-1, "many", True, [4096], float("nan")):
        with pytest.raises(ValueError, match="min_tokens_per_expert"):
            _qwen3(min_tokens_per_expert=bad)
        with pytest.raises(ValueError, match="min_tokens_per_expert"):
            core.sweep("qwen3-235b-a22b", "research-256", min_tokens_per_expert=bad)
    with pytest.raises(ValueError, match="include_unvalidated"):
        core.sweep("qwen3-235b-a22b", "research-256", include_unvalidated="yes")


def test_assumptions_name_the_validated_range():
    assert "validated down to 4,096 tokens per expert" in _qwen3().assumptions["compute"]
    assert "no validated-range limit" in _qwen3(min_tokens_per_expert=None).assumptions["compute"]


def test_the_validated_range_note_quotes_nvidias_measurements():
    # NVIDIA's measured Qwen3-235B-A22B steps on 256 H100, BF16, batch 2,048 (Megatron-MoE-ModelZoo,
    # best_practice/Qwen3/readme.md): (seconds, settings); the note's numbers must be what the planner gives.
    # The table's "norm, act" recomputation (norms and the MoE activation, output-discarding) adds no GEMM FLOPs:
    # planned as "none"
    h100 = core.make_cluster("DGX H100", 256)
    common = dict(global_batch=2048, sequence_parallel=True, micro_batch=1)
    at_4096 = [(19.7, dict(tp=2, pp=8, interleave=4, dp=16, ep=32, zero_stage=1, recompute="none",
                           dispatcher="deepep")),
               (17.6, dict(tp=2, pp=1, dp=128, ep=8, zero_stage=3, micro_batch=4, recompute="full",
                           dispatcher="deepep"))]
    thin = [(24.2, dict(tp=2, pp=32, interleave=3, dp=4, ep=8, zero_stage=1, recompute="none",
                        dispatcher="alltoall")),
            (29.0, dict(tp=4, pp=8, interleave=4, dp=8, ep=8, zero_stage=1, recompute="none", dispatcher="deepep"))]
    plans = [(s, core.plan("qwen3-235b-a22b", h100, **{**common, **kw})) for s, kw in at_4096 + thin]
    assert [p.tokens_per_expert for _, p in plans] == [4096, 4096, 1024, 512]
    within = max(abs(p.step_time / s - 1) for s, p in plans[:2])
    (s1, p1), (s2, p2) = plans[2:]
    note = dict(p2.notes)["few_tokens_per_expert"]
    assert f"{s1 / p1.step_time:.1f} and {s2 / p2.step_time:.1f} times the planned step" in note
    assert f"{1 - p1.step_time / s1:.0%} and {1 - p2.step_time / s2:.0%} short".replace("%", " %") in note
    assert f"within {within:.0%} at 4,096".replace("%", " %") in note
    # the range starts where the planner matched: both 4,096 layouts inside, within 20 %
    assert within < 0.2 and all("few_tokens_per_expert" not in dict(p.notes) for _, p in plans[:2])
    assert core.DEFAULT_MIN_TOKENS_PER_EXPERT == 4096
    words = f"within {within * 100:.0f} % at 4,096 tokens per expert, " \
            f"{(1 - p1.step_time / s1) * 100:.0f}-{(1 - p2.step_time / s2) * 100:.0f} % at 1,024-512"
    assert words in p2.assumptions["compute"]


def test_ep_overlap_must_be_a_bool():
    for bad in ("yes", 1, None):
        with pytest.raises(ValueError, match="ep_overlap"):
            core.plan("qwen3-235b-a22b", core.make_cluster("DGX H100", 256), tp=2, pp=8, dp=16, ep=32,
                      global_batch=2048, ep_overlap=bad)


def test_remote_nodes_over_a_large_grid_equal_the_scalar_answers():
    # a sweep passes one node count per configuration; each must equal its own scalar call
    nodes = np.random.default_rng(3).choice([1, 2, 4, 8, 16, 32, 64], size=(400, 3))
    for groups in ((None, None), (8, 4)):
        grid = moe.expected_remote_nodes(8, nodes, *groups)
        one_by_one = np.array([[moe.expected_remote_nodes(8, int(n), *groups) for n in row] for row in nodes])
        assert grid.shape == nodes.shape and np.array_equal(grid, one_by_one)


def test_explain_of_one_plan_says_what_it_takes():
    p = core.plan("mixtral-8x7b", "h100-1024", tp=2, pp=4, dp=128, ep=8, num_microbatches=8)
    with pytest.raises(ValueError, match="sweep.*assumptions"):
        core.explain(p)


def test_deepseek_sweep_assumptions_name_group_limited_routing():
    t = core.sweep("deepseek-v3", "h800-2048", tp=(1,), cp=(1,), pp=(16,), micro_batches=(1,), zero_stages=(1,),
                   recompute=("none",), sequence_parallel=(False,), interleave=(1,), ep=(32, 64, 128),
                   include_infeasible=True)
    assert "picks 4 of 8 expert groups" in t.meta["assumptions"]["ep_comm"]
    # EP 128 over 16 nodes spreads each group over 2 nodes: more network copies per token than EP 64 over 8
    by_ep = {int(e): t.take(np.flatnonzero(t["ep"] == e)).row(0)["ep_comm"] for e in (64, 128)}
    assert by_ep[128] > by_ep[64]

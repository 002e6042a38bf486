"""Activation checkpointing as a policy (course.core.checkpointing) and how the planner charges it.

Expected numbers are worked by hand for a small dense layer (h = 64, 4 heads of 16, 2 KV heads, a
SwiGLU MLP of 128, 256 tokens), from Korthikanti et al. 2022 Table 2 (bytes) and 2 FLOPs per weight and
token (Narayanan et al. 2021).
"""

import dataclasses

import numpy as np
import pytest

from course import core
from course.core import catalog
from course.core import checkpointing as ck

TINY = catalog.Model("tiny", 1e6, "test layer", layers=4, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=100,
                     seq_len=256, mlp_matrices=3, dropout=False)

# bytes per token (TP 1): input, norm, Q, K, V, context, residual, MLP norm, gate, up, activation
ALL_NEEDED = 128 + 128 + 128 + 64 + 64 + 128 + 128 + 128 + 256 + 256 + 256  # 1,664 = 8 h + 18 h (Korthikanti)
# FLOPs per token: Q, K, V, O; gate, up, down; fused attention 4 s w
Q, K, V, O, GATE, UP, DOWN = 8192, 4096, 4096, 8192, 16384, 16384, 16384
ATTENTION = 4 * 256 * 64
FORWARD = Q + K + V + O + GATE + UP + DOWN + ATTENTION  # 139,264 = 2 P_layer + 4 s h


def needed_names(model, fused_attention=True):
    return [n for n, (_, _, needed, *_rest) in ck.activation_graph(model, fused_attention).items() if needed]


def test_the_graph_of_a_small_layer_is_korthikantis_count_and_two_flops_per_weight():
    g = ck.activation_graph(TINY)
    assert sum(b for b, _, needed, *_ in g.values() if needed) == ALL_NEEDED
    assert sum(f for *_, f, _, _ in g.values()) == FORWARD
    assert g["out_proj"][2] is False and g["mlpwo"][2] is False  # no gradient reads them


@pytest.mark.parametrize("policy, saved_bytes, flops", [
    # wq, wv, w1, w2 and the attention output saved; wk, wo, w3 recomputed (torchtitan's every second mm)
    ("torchtitan:op", 128 + 128 + 64 + 128 + 256 + 128, K + O + UP),
    # projections and out_proj saved: attention and both MLP input GEMMs recomputed
    ("maxtext:save_dot_except_mlp", 128 + 128 + 64 + 64 + 128, ATTENTION + GATE + UP),
    ("maxtext:save_qkv_proj", 128 + 128 + 64 + 64, ATTENTION + O + GATE + UP),
    ("maxtext:minimal", 128 + 128 + 64 + 64 + 128 + 256 + 256 + 128, ATTENTION),
    ("maxtext:minimal_with_context", 128 + 128 + 64 + 64 + 128 + 128 + 256 + 256 + 128, 0),
    # JAX drops the last GEMM's recomputation (no gradient reads it); PyTorch re-runs the whole forward
    ("maxtext:full", 128, FORWARD - DOWN),
    ("torchtitan:full", 128, FORWARD),
    # host-offloaded projections: not recomputed, no device bytes
    ("maxtext:qkv_proj_offloaded", 128, ATTENTION + O + GATE + UP),
    # every second layer fully checkpointed, the others keep everything
    ("torchtitan:layer-2", (128 + ALL_NEEDED) / 2, FORWARD / 2),
])
def test_hand_computed_memory_and_recomputed_flops_of_each_policy(policy, saved_bytes, flops):
    assert ck.saved_bytes_per_token(policy, TINY) == pytest.approx(saved_bytes, rel=1e-12)
    assert ck.recomputed_flops_per_token(policy, TINY) == pytest.approx(flops, rel=1e-12)


def test_tensor_parallelism_splits_the_attention_and_mlp_tensors_and_sequence_parallelism_the_rest():
    # torchtitan:op keeps 256 bytes outside attention and the MLP (input, w2 output) and 576 inside
    assert ck.saved_bytes_per_token("torchtitan:op", TINY, tp=4) == pytest.approx(256 + 576 / 4)
    assert ck.saved_bytes_per_token("torchtitan:op", TINY, tp=4, sequence_parallel=True) == pytest.approx(832 / 4)


def test_an_unfused_kernel_keeps_the_scores_unless_the_policy_drops_them():
    kept = ck.saved_bytes_per_token(ck.checkpoint_policy(saved=needed_names(TINY) + ["attention_scores"]), TINY,
                                    fused_attention=False)
    assert kept == pytest.approx(ALL_NEEDED + 2 * 4 * 256)  # 2 a s bytes per token without dropout
    flops = ck.recomputed_flops_per_token("maxtext:minimal", TINY, fused_attention=False)
    assert flops == pytest.approx(ATTENTION)  # scores and weighted sum, half each


CHAIN = ["maxtext:full", "maxtext:save_out_proj", "maxtext:save_qkv_proj", "maxtext:save_dot_except_mlp",
         "maxtext:save_dot_except_mlpwi", "maxtext:minimal", "maxtext:minimal_with_context"]


@pytest.mark.parametrize("model", [TINY, "llama3-8b", "gpt3-175b"])
def test_saving_more_keeps_more_memory_and_recomputes_fewer_flops(model):
    rng = np.random.default_rng(39)
    names = list(ck.ACTIVATION_NAMES)
    for prune in (False, True):
        for _ in range(20):
            order = rng.permutation(names)
            previous = None
            for k in range(len(order) + 1):
                p = ck.checkpoint_policy(saved=list(order[:k]), prune=prune)
                now = (ck.saved_bytes_per_token(p, model), ck.recomputed_flops_per_token(p, model))
                if previous is not None:
                    assert now[0] >= previous[0] and now[1] <= previous[1]
                previous = now


@pytest.mark.parametrize("model", ["llama3-8b", "gpt3-175b"])
def test_maxtexts_policies_trade_memory_for_recomputation_in_the_order_its_docs_give(model):
    kept = [ck.saved_bytes_per_token(p, model) for p in CHAIN]
    flops = [ck.recomputed_flops_per_token(p, model) for p in CHAIN]
    assert kept == sorted(kept) and flops == sorted(flops, reverse=True)
    assert kept[0] < kept[-1] and flops[0] > flops[-1]


# --------------------------------------------------------------------------- the planner

LAYOUTS = [
    ("llama3-8b", "h100-1024", dict(tp=1, pp=1, dp=1024, global_batch=1024, zero_stage=3), {}),
    ("llama3-8b", "h100-1024", dict(tp=4, pp=2, dp=128, cp=1, global_batch=1024, sequence_parallel=True,
                                    zero_stage=1), dict(precision="fp8", tp_overlap=True)),
    ("llama3-70b", "h100-1024", dict(tp=8, pp=4, dp=16, cp=2, global_batch=512, sequence_parallel=True,
                                     zero_stage=1, interleave=2), {}),
    ("gpt3-175b", "selene-3072", dict(tp=8, pp=8, dp=48, global_batch=1536), dict(fused_attention=False)),
    ("gpt3-175b", "selene-3072", dict(tp=8, pp=8, dp=48, global_batch=1536, micro_batch=2), {}),
]
COMPARED = ("step_time", "compute", "memory_bound", "tp_comm", "cp_comm", "bubble", "dp_comm_exposed",
            "activations", "memory_total", "flops_per_iteration", "mfu")


@pytest.mark.parametrize("model, cluster, layout, options", LAYOUTS)
def test_saving_everything_is_no_recomputation_and_saving_the_input_only_is_full(model, cluster, layout, options):
    everything = ck.checkpoint_policy(saved=needed_names(model, options.get("fused_attention", True)))
    nothing = ck.checkpoint_policy(saved=[])
    for policy, mode in ((everything, "none"), (nothing, "full"), ("torchtitan:full", "full"), ("maxtext:none", "none")):
        a = core.plan(model, cluster, recompute=policy, **layout, **options)
        b = core.plan(model, cluster, recompute=mode, **layout, **options)
        for name in COMPARED:
            assert getattr(a, name) == pytest.approx(getattr(b, name), rel=1e-12, abs=1e-15), (policy, name)


def test_the_planner_charges_a_policys_flops_and_bytes():
    layout = dict(tp=1, pp=1, dp=1024, global_batch=1024, zero_stage=3)
    m = catalog.model("llama3-8b")
    none = core.plan(m, "h100-1024", recompute="none", **layout)
    op = core.plan(m, "h100-1024", recompute="torchtitan:op", **layout)
    frac = core.causal_attention_fraction(m.seq_len)
    recomputed = ck.recomputed_flops_per_token("torchtitan:op", m, attention_fraction=frac)
    assert op.flops_per_iteration - none.flops_per_iteration == pytest.approx(
        1024 * m.seq_len * m.layers * recomputed, rel=1e-12)
    # one micro-batch of one sequence: the kept tensors of every layer, one layer's recomputed ones
    cost = ck.policy_cost("torchtitan:op", m)
    per_layer = m.seq_len * sum(cost["saved_bytes"])
    assert op.activations == pytest.approx(m.layers * per_layer + m.seq_len * sum(cost["transient_bytes"]), rel=1e-12)
    assert none.step_time < op.step_time < core.plan(m, "h100-1024", recompute="full", **layout).step_time
    assert op.recompute == "torchtitan:op"


def test_the_plans_assumptions_list_the_policy_what_it_keeps_and_what_it_recomputes():
    p = core.plan("llama3-8b", "h100-1024", tp=1, pp=1, dp=1024, global_batch=1024, zero_stage=3,
                  recompute="maxtext:save_dot_except_mlp")
    for term in ("compute", "memory"):
        said = p.assumptions[term]
        assert "maxtext:save_dot_except_mlp" in said and "decoders.py" in said
        assert "saves layer_input, query_proj, key_proj, value_proj, out_proj" in said
        assert "recomputes attention_norm, context" in said and "GFLOP per token" in said
    assert f"keeps {p.activations / 1e9:.1f} GB of activations per GPU" in p.assumptions["memory"]
    assert "PFLOP per step" in p.assumptions["compute"]


def test_a_sweep_runs_one_policy_and_names_it_in_every_row():
    t = core.sweep("llama3-8b", "h100-1024", recompute="torchtitan:op", zero_stages=(3,), cp=(1,), pp=(1,))
    full = core.sweep("llama3-8b", "h100-1024", recompute=("full",), zero_stages=(3,), cp=(1,), pp=(1,))
    assert len(t) and set(t["recompute"]) == {"torchtitan:op"}
    assert t.row(0)["tokens_per_second"] > full.row(0)["tokens_per_second"]
    assert "torchtitan:op" in t.meta["assumptions"]["compute"]


@pytest.mark.parametrize("call, parameter", [
    (lambda: ck.checkpoint_policy("maxtext:save_everything"), "recompute"),
    (lambda: ck.checkpoint_policy("torchtitan:layer-0"), "recompute"),
    (lambda: ck.checkpoint_policy(saved=["query", "mlpwo"]), "saved"),
    (lambda: ck.checkpoint_policy(saved=["mlpwo"], offloaded=["keys"]), "offloaded"),
    (lambda: ck.checkpoint_policy(saved=["mlpwo"], every=0), "every"),
    (lambda: ck.checkpoint_policy(saved="mlpwo"), "saved"),
    (lambda: ck.saved_bytes_per_token(dataclasses.replace(ck.POLICIES["maxtext:minimal"], saved=("qkv",)),
                                      "llama3-8b"), "saved"),
    (lambda: core.plan("llama3-8b", "h100-1024", tp=1, pp=1, dp=1024, recompute="torchtitan:ops"), "recompute"),
    (lambda: core.plan("deepseek-v3", "h800-2048", tp=1, pp=16, dp=128, ep=64, recompute="torchtitan:op"),
     "recompute"),
    (lambda: core.plan("llama3-8b", "h100-1024", tp=1, pp=1, dp=1024, recompute="maxtext:minimal",
                       recompute_modules=["mlp"]), "recompute"),
    (lambda: core.sweep("llama3-8b", "h100-1024", recompute=("full", "torchtitan:op")), "recompute"),
])
def test_bad_input_raises_value_error_naming_the_parameter(call, parameter):
    with pytest.raises(ValueError, match=rf"\b{parameter}\b"):
        call()

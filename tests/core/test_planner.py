"""plan() and sweep(): breakdowns add up, every violation is reachable, sweep rows equal plan(),
and the terms agree with independent hand computations from their sources."""

import dataclasses

import numpy as np
import pytest

from course.core import catalog as cat
from course.core.planner import (DEFAULT_COMPUTE_EFFICIENCY, VIOLATION_CODES, iteration_flops,
                                  plan, sweep)

GPT3 = cat.model("gpt3-175b")
H100_1024 = cat.cluster("h100-1024")


def codes(p):
    return [code for code, _ in p.violations]


# --------------------------------------------------------------------------- sums


@pytest.mark.parametrize("kwargs", [
    dict(tp=8, pp=8, dp=16, global_batch=1536, recompute="selective", sequence_parallel=True),
    dict(tp=8, pp=4, dp=32, global_batch=1536, zero_stage=1, recompute="full", interleave=2),
    dict(tp=4, pp=16, dp=16, micro_batch=2, num_microbatches=32, schedule="gpipe", overlap=False),
    dict(tp=1, pp=1, dp=1024, global_batch=2048, zero_stage=3),
])
def test_breakdowns_add_up(kwargs):
    p = plan(GPT3, H100_1024, **kwargs)
    assert sum(p.breakdown().values()) == pytest.approx(p.step_time, rel=1e-12)
    assert sum(p.memory().values()) == pytest.approx(p.memory_total, rel=1e-12)
    assert all(x >= 0 for x in p.breakdown().values())
    assert 0 < p.mfu < 1 and 0 < p.scaling_efficiency <= 1
    assert p.tokens_per_second == pytest.approx(p.global_batch * GPT3.seq_len / p.step_time)
    d = p.as_dict()
    assert d["feasible"] == p.feasible and d["step_time"] == p.step_time


# --------------------------------------------------------------------------- GPT-3 on 1,024 H100


def test_gpt3_on_1024_h100_has_a_sensible_feasible_plan():
    p = plan(GPT3, H100_1024, tp=8, pp=8, dp=16, global_batch=1536,
             recompute="selective", sequence_parallel=True)
    assert p.feasible, p.violations
    assert p.memory_total < 80e9
    assert 0.2 < p.mfu < 0.6


def test_lab05_answer_needs_zero1_to_fit():
    # Erratum 5: Lab 05's TP=8, PP=4, DP=32 answer leaves gradients out of its memory model.
    # 175e9 / 32 params per GPU x 16 B = 87.5 GB of model state alone: out of memory.
    p0 = plan(GPT3, H100_1024, tp=8, pp=4, dp=32, global_batch=1536, recompute="full")
    assert "out_of_memory" in codes(p0)
    assert p0.weights + p0.gradients + p0.optimizer == pytest.approx(175e9 / 32 * 16)
    p1 = plan(GPT3, H100_1024, tp=8, pp=4, dp=32, global_batch=1536, recompute="full", zero_stage=1)
    assert p1.feasible, p1.violations


def test_tp16_crosses_the_node_boundary():
    p = plan(GPT3, H100_1024, tp=16, pp=4, dp=16, global_batch=1536, recompute="full")
    assert "tp_crosses_node" in codes(p)
    inside = plan(GPT3, H100_1024, tp=8, pp=8, dp=16, global_batch=1536, recompute="full")
    # same shards of work, but the all-reduces now run at the NIC's 50 GB/s, not NVLink's 450
    assert p.tp_comm > 4 * inside.tp_comm


# --------------------------------------------------------------------------- every violation


def _heads30():
    return dataclasses.replace(GPT3, name="gpt3-heads30", heads=30, kv_heads=30, hidden=12300)


@pytest.mark.parametrize("code,model,kwargs", [
    ("gpus_mismatch", GPT3, dict(tp=8, pp=8, dp=8, global_batch=1536)),
    ("tp_crosses_node", GPT3, dict(tp=16, pp=4, dp=16, global_batch=1536)),
    ("heads_not_divisible", _heads30(), dict(tp=4, pp=8, dp=32, global_batch=1536)),
    ("cp_not_divisible", GPT3, dict(tp=8, cp=3, pp=4, dp=8, num_microbatches=16)),
    ("batch_not_divisible", GPT3, dict(tp=8, pp=8, dp=16, global_batch=1000)),
    ("too_few_microbatches", GPT3, dict(tp=8, pp=8, dp=16, num_microbatches=4)),
    ("interleave_needs_multiple", GPT3, dict(tp=8, pp=4, dp=32, num_microbatches=6, interleave=2)),
    ("out_of_memory", GPT3, dict(tp=1, pp=1, dp=1024, global_batch=2048)),
])
def test_each_violation_is_reachable_with_a_sentence(code, model, kwargs):
    p = plan(model, H100_1024, **kwargs)
    assert code in codes(p)
    assert not p.feasible
    sentence = dict(p.violations)[code]
    assert len(sentence) > 40 and sentence[0].isupper() and sentence.rstrip().endswith(".")


def test_violation_sentences_carry_the_numbers():
    p = plan(GPT3, H100_1024, tp=1, pp=1, dp=1024, global_batch=2048)
    oom = dict(p.violations)["out_of_memory"]
    assert f"{p.memory_total / 1e9:.1f} GB" in oom and "85.5 GB" in oom  # an H100's 81,559 MiB
    mismatch = dict(plan(GPT3, H100_1024, tp=8, pp=8, dp=8, global_batch=1536).violations)
    assert "512" in mismatch["gpus_mismatch"] and "1024" in mismatch["gpus_mismatch"]


def test_violation_codes_are_documented():
    p = plan(GPT3, H100_1024, tp=16, pp=3, dp=8, num_microbatches=2, zero_stage=3)
    assert set(codes(p)) <= set(VIOLATION_CODES)


# --------------------------------------------------------------------------- hand computations


def test_compute_term_is_megatron_eq3_over_peak():
    # Narayanan et al. 2021 eq. 3 by hand, full recompute, then / (GPUs x peak x efficiency).
    B, s, l, h, V = 1536, 2048, 96, 12288, 50257
    eq3 = 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    assert iteration_flops(GPT3, B, "full") == pytest.approx(eq3, rel=1e-12)
    # eq. 3 counts every query against every key: an unfused (2021) attention kernel
    p = plan(GPT3, H100_1024, tp=8, pp=8, dp=16, global_batch=B, recompute="full", fused_attention=False,
             gemm_shapes=False)  # one efficiency for every GEMM: the calibrated constant
    assert p.compute == pytest.approx(eq3 / (1024 * 989e12 * DEFAULT_COMPUTE_EFFICIENCY), rel=1e-9)
    shaped = plan(GPT3, H100_1024, tp=8, pp=8, dp=16, global_batch=B, recompute="full", fused_attention=False)
    assert shaped.compute == pytest.approx(eq3 / (1024 * 989e12 * shaped.compute_efficiency), rel=1e-9)


def test_causal_fused_kernel_skips_the_masked_score_blocks():
    # FlashAttention-2 (Dao 2023, sec. 3.1.1) computes the 16 x 17 / 2 tiles of 128 on or below the
    # diagonal of a 2048-token sequence: 17/32 of the 4 s h score FLOPs (x4 with full recompute)
    B, s, l, h, V = 1536, 2048, 96, 12288, 50257
    eq3 = 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    scores = B * s * l * 4 * (4 * s * h)
    causal = eq3 - scores + scores * 17 / 32
    p = plan(GPT3, H100_1024, tp=8, pp=8, dp=16, global_batch=B, recompute="full")
    assert p.flops_per_iteration == pytest.approx(causal, rel=1e-12)
    # MFU in both conventions: 6N per token, and PaLM's 6N + 12 l h s (attention counted in full)
    tokens = B * s
    assert p.mfu == pytest.approx(6 * 175e9 * tokens / (p.step_time * 1024 * 989e12), rel=1e-12)
    assert p.mfu_attention == pytest.approx((6 * 175e9 + 12 * l * h * s) * tokens / (p.step_time * 1024 * 989e12),
                                            rel=1e-12)


def test_recompute_costs_flops_in_the_documented_order():
    none, sel, full = (iteration_flops(GPT3, 1, r) for r in ("none", "selective", "full"))
    assert none < sel < full
    # full recomputation adds one forward pass of the layers: 4/3 of the layer FLOPs
    assert full / none == pytest.approx(4 / 3, rel=0.02)
    # selective recomputes only Q K^T and the attention-weighted sum of V: 4 s^2 h per
    # sequence and layer (2 s^2 h each; Korthikanti et al. 2022, section 5)
    s, h, l = 2048, 12288, 96
    assert sel - none == pytest.approx(4 * s * s * h * l, rel=1e-12)


def test_tp_pipeline_and_mfu_terms_by_hand():
    b, m, tp, pp, dp = 1, 16, 8, 8, 16
    p = plan(GPT3, H100_1024, tp=tp, pp=pp, dp=dp, num_microbatches=m, recompute="full",
             overlap=False)
    s, h, layers_stage = 2048, 12288, 96 // pp
    # ring all-reduce (Thakur et al. 2005) of b*s*h 2-byte values over NVLink 4 (450 GB/s, of
    # which NCCL achieves 370: nccl-tests issue #212), 6 per layer and micro-batch with full
    # recompute (2 fwd + 2 bwd + 2 recomputed fwd)
    message = b * s * h * 2
    per_ar = 2 * (tp - 1) * 1e-6 + 2 * (tp - 1) / tp * message / 370e9
    assert p.tp_comm == pytest.approx(m * layers_stage * 6 * per_ar, rel=1e-6)
    # bubble overhead (p - 1) / m of the busy pipeline time (Narayanan et al. 2021)
    busy = p.compute + p.memory_bound + p.tp_comm
    assert p.bubble == pytest.approx((pp - 1) / m * busy, rel=1e-9)
    # MFU counts 6 N D model FLOPs only
    tokens = b * m * dp * s
    assert p.mfu == pytest.approx(6 * 175e9 * tokens / (p.step_time * 1024 * 989e12), rel=1e-9)


def test_interleaving_divides_the_bubble_and_multiplies_sends():
    one = plan(GPT3, H100_1024, tp=8, pp=8, dp=16, num_microbatches=16, recompute="full")
    two = plan(GPT3, H100_1024, tp=8, pp=8, dp=16, num_microbatches=16, recompute="full",
               interleave=2)
    assert two.bubble == pytest.approx(one.bubble / 2, rel=1e-9)
    assert two.pp_comm == pytest.approx(2 * one.pp_comm, rel=1e-9)


def test_zero_and_recompute_lower_memory():
    mems = [plan(GPT3, H100_1024, tp=8, pp=1, dp=128, global_batch=1536, zero_stage=z,
                 recompute="full").memory_total for z in range(4)]
    assert mems == sorted(mems, reverse=True)
    acts = [plan(GPT3, H100_1024, tp=8, pp=8, dp=16, global_batch=1536, recompute=r).activations
            for r in ("none", "selective", "full")]
    assert acts == sorted(acts, reverse=True)


def test_faster_fabric_shortens_the_dp_all_reduce():
    slow = plan("llama3-70b", "research-256", tp=8, pp=4, dp=8, num_microbatches=16,
                recompute="full", overlap=False)
    fast = plan("llama3-70b", cat.with_fabric(cat.cluster("research-256"), "ndr"), tp=8, pp=4,
                dp=8, num_microbatches=16, recompute="full", overlap=False)
    assert fast.dp_comm < slow.dp_comm
    assert fast.step_time < slow.step_time


def test_overlap_never_makes_the_step_longer():
    args = dict(tp=8, pp=4, dp=8, num_microbatches=16, recompute="full")
    on = plan("llama3-70b", "research-256", overlap=True, **args)
    off = plan("llama3-70b", "research-256", overlap=False, **args)
    assert on.dp_comm_exposed <= off.dp_comm_exposed == off.dp_comm


def test_gpipe_keeps_all_microbatches_in_flight():
    args = dict(tp=8, pp=4, dp=32, num_microbatches=16, recompute="full", zero_stage=1)
    f1b = plan(GPT3, H100_1024, schedule="1f1b", **args)
    gpipe = plan(GPT3, H100_1024, schedule="gpipe", **args)
    assert gpipe.bubble == pytest.approx(f1b.bubble)
    assert gpipe.activations > 3 * f1b.activations


# --------------------------------------------------------------------------- sweep


@pytest.fixture(scope="module")
def table():
    return sweep("llama3-70b", "research-256", global_batch=512, include_infeasible=True)


def test_sweep_rows_equal_plan(table):
    rng = np.random.default_rng(0)
    for i in rng.choice(len(table), size=12, replace=False):
        r = table.row(int(i))
        p = plan("llama3-70b", "research-256", tp=r["tp"], cp=r["cp"], pp=r["pp"], dp=r["dp"],
                 micro_batch=r["micro_batch"], global_batch=512, zero_stage=r["zero_stage"],
                 recompute=r["recompute"], sequence_parallel=r["sequence_parallel"],
                 interleave=r["interleave"])
        for key in ("step_time", "compute", "tp_comm", "cp_comm", "bubble", "dp_comm_exposed",
                    "memory_total", "activations", "mfu", "tokens_per_second"):
            assert r[key] == pytest.approx(getattr(p, key), rel=1e-12), key
        assert r["feasible"] == p.feasible
        assert set(filter(None, r["violations"].split(";"))) == set(codes(p))
        assert set(filter(None, r["notes"].split(";"))) == {code for code, _ in p.notes}


def test_sweep_covers_every_valid_layout(table):
    layouts = {(t, c, p, d) for t, c, p, d in zip(table["tp"], table["cp"], table["pp"], table["dp"])}
    assert all(t * c * p * d == 256 for t, c, p, d in layouts)
    assert {t for t, _, _, _ in layouts} == {1, 2, 4, 8}
    assert {c for _, c, _, _ in layouts} == {1, 2, 4, 8, 16}
    assert set(table["interleave"]) == {1, 2, 4, 8}
    assert len(table) == len(set(zip(table["tp"], table["cp"], table["pp"], table["micro_batch"],
                                     table["zero_stage"], table["recompute"],
                                     table["sequence_parallel"], table["interleave"])))


def test_sweep_default_is_feasible_and_sorted():
    t = sweep("llama3-70b", "h100-1024", zero_stages=(1,), recompute=("selective", "full"))
    assert len(t) > 0 and t["feasible"].all()
    assert np.all(np.diff(t["tokens_per_second"]) <= 0)
    top = t.top(3)
    assert len(top) == 3 and top["tokens_per_second"][0] == t["tokens_per_second"].max()
    df = t.to_pandas()
    assert list(df["step_time"]) == list(t["step_time"])


def test_sweep_lists_a_layout_without_tp_once(table):
    # SP shards the activations TP already splits; with TP = 1 there is nothing to split, so a
    # TP = 1 layout with SP on is the same run as with SP off and must not be listed twice
    assert len(table) and not (table["sequence_parallel"] & (table["tp"] == 1)).any()
    assert (table["tp"] == 1).any() and (table["sequence_parallel"] & (table["tp"] > 1)).any()
    kw = dict(global_batch=512, include_infeasible=True)
    off = sweep("llama3-70b", "research-256", sequence_parallel=(False,), **kw)
    on = sweep("llama3-70b", "research-256", sequence_parallel=(True,), **kw)
    assert (on["tp"] == 1).any()  # asked for SP alone, a TP = 1 layout is still listed (once)
    assert len(table) == len(off) + np.count_nonzero(on["tp"] > 1)


def test_sweep_breaks_exact_ties_by_lower_memory():
    # ZeRO-1 runs as fast as ZeRO-0 (a reduce-scatter and an all-gather move the bytes of one
    # all-reduce) but holds a DP-th of the optimizer state: of two equally fast rows, the lighter first
    t = sweep("llama3-70b", "research-256", zero_stages=(0, 1), recompute=("none",))
    speed, memory = t["tokens_per_second"], t["memory_total"]
    tied = np.flatnonzero(speed[1:] == speed[:-1])
    assert np.count_nonzero(memory[tied] != memory[tied + 1]) > 0  # ties that differ in memory exist
    assert np.all(memory[tied] <= memory[tied + 1])
    assert np.all(np.diff(speed) <= 0)


# --------------------------------------------------------------------------- invalid input


@pytest.mark.parametrize("kwargs,name", [
    (dict(tp=0, pp=8, dp=16), "tp"),
    (dict(tp=8, pp=8.5, dp=16), "pp"),
    (dict(tp=8, pp=8, dp=16, recompute="sometimes"), "recompute"),
    (dict(tp=8, pp=8, dp=16, schedule="zigzag"), "schedule"),
    (dict(tp=8, pp=8, dp=16, zero_stage=4), "zero_stage"),
    (dict(tp=8, pp=8, dp=16, compute_efficiency=1.5), "compute_efficiency"),
    (dict(tp=8, pp=8, dp=16, compute_efficiency=0.0), "compute_efficiency"),
    (dict(tp=8, pp=8, dp=16, micro_batch=0), "micro_batch"),
    (dict(tp=8, pp=8, dp=16, global_batch=8), "global_batch"),
    (dict(tp=8, pp=8, dp=16, precision="fp4"), "precision"),
])
def test_invalid_input_raises_valueerror_naming_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        plan(GPT3, H100_1024, **kwargs)


def test_invalid_model_and_cluster():
    with pytest.raises(ValueError, match="model"):
        plan("gpt-5", H100_1024, tp=8, pp=8, dp=16)
    with pytest.raises(ValueError, match="model"):
        plan("resnet50", H100_1024, tp=8, pp=8, dp=16)
    with pytest.raises(ValueError, match="cluster"):
        plan(GPT3, 1024, tp=8, pp=8, dp=16)
    with pytest.raises(ValueError, match="recompute"):
        sweep(GPT3, H100_1024, recompute=("all",))


# --------------------------------------------------------------------------- properties

from hypothesis import given, settings  # noqa: E402 -- with the property tests it serves, at the end
from hypothesis import strategies as st  # noqa: E402 -- with the property tests it serves, at the end


@settings(max_examples=40, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4, 8]),
       b=st.sampled_from([1, 2, 4]), m=st.integers(1, 64), zero=st.integers(0, 3),
       rc=st.sampled_from(["none", "selective", "full"]), sp=st.booleans(),
       overlap=st.booleans())
def test_parts_are_non_negative_and_add_up(tp, pp, b, m, zero, rc, sp, overlap):
    dp = 1024 // (tp * pp)
    p = plan(GPT3, H100_1024, tp=tp, pp=pp, dp=dp, micro_batch=b, num_microbatches=m,
             zero_stage=zero, recompute=rc, sequence_parallel=sp, overlap=overlap)
    parts = p.breakdown()
    assert all(x >= 0 for x in parts.values())
    assert sum(parts.values()) == pytest.approx(p.step_time, rel=1e-12)
    assert p.dp_comm_exposed <= p.dp_comm * (1 + 1e-12)
    assert 0 <= p.bubble_fraction < 1
    assert p.feasible == (not p.violations)
    assert ("out_of_memory" in codes(p)) == (p.memory_total > 81_559 * 2**20)


def test_pipeline_sends_cross_the_network_when_the_stages_span_nodes():
    # Llama 3 8B on 2 DGX H100 nodes, TP = 2, PP = 8, DP = 1: ranks are ordered TP, CP, PP, DP,
    # so stages 0-3 sit on node 0 and stages 4-7 on node 1; the 3 -> 4 boundary crosses
    # InfiniBand NDR (one 50 GB/s port per GPU, 47 GB/s achieved (nccl-tests issue #290),
    # 5 us), and every micro-batch waits for it.
    from course.core import plan

    cluster = cat.make_cluster("DGX H100", 16)
    p = plan("llama3-8b", cluster, tp=2, pp=8, dp=1, num_microbatches=16)
    seq, hidden = 8192, 4096
    send = 5e-6 + seq * hidden * 2 / 2 / 47e9      # b s h 16-bit bytes over TP = 2, one NIC
    assert p.pp_comm == pytest.approx(2 * 16 * send, rel=1e-9)  # forward and backward, m = 16


def test_fastest_first_is_the_stable_descending_order():
    # the sweep's unstable sort with ties restored must give exactly np.argsort(-x, kind="stable")
    from course.core.planner import _fastest_first
    rng = np.random.default_rng(7)
    for n in (1, 2, 7, 1000, 50_000):
        for x in (rng.random(n), rng.integers(0, max(n // 5, 1), n).astype(float), np.ones(n)):
            assert np.array_equal(_fastest_first(x), np.argsort(-x, kind="stable"))
            # with memory: ties in speed by lower memory, then in the original order
            memory = rng.integers(0, 3, n).astype(float)
            assert np.array_equal(_fastest_first(x, memory), np.lexsort((np.arange(n), memory, -x)))


def test_plan_and_evaluate_give_a_range_beside_the_point_and_explain_names_its_driver_and_sources():
    # issue 46: a range from the uncertain assumptions, the assumption that drives its width, each source listed
    import numpy as np

    from course import core
    from course.core import plan_terms

    p = core.plan("qwen3-235b-a22b", core.make_cluster("DGX H100", 256), tp=2, pp=8, interleave=4, dp=16, ep=32,
                  global_batch=2048, zero_stage=1, sequence_parallel=True, dispatcher="deepep", ep_overlap=True)
    assert p.step_time_low < p.step_time < p.step_time_high
    assert p.mfu_low < p.mfu < p.mfu_high
    assert p.range_driver in plan_terms.RANGE_ASSUMPTIONS
    for name in ("compute efficiency", "all-to-all overlap", "dispatcher", "MoE host time", "grouped GEMMs"):
        assert name in p.range_sources
    assert "deepseek-ai/DeepEP" in p.range_sources["dispatcher"] and "37 %" in p.range_sources["all-to-all overlap"]
    # no overlap credit at all is the slow end of that assumption; the ideal one the fast end
    none = core.plan("qwen3-235b-a22b", core.make_cluster("DGX H100", 256), tp=2, pp=8, interleave=4, dp=16, ep=32,
                     global_batch=2048, zero_stage=1, sequence_parallel=True, dispatcher="deepep", ep_overlap=True,
                     ep_overlap_credit=0.0)
    assert none.step_time > p.step_time and none.step_time <= p.step_time_high
    cols = core.evaluate("llama3-70b", "h100-1024", tp=8, pp=4, dp=np.array([8, 16, 32]), num_microbatches=16,
                         recompute="full")
    assert np.all(cols["step_time_low"] < cols["step_time"]) and np.all(cols["step_time"] < cols["step_time_high"])
    assert np.all(cols["mfu_low"] < cols["mfu"]) and cols["range_driver"].shape == (3,)
    t = core.sweep("llama3-70b", "h100-1024", tp=(8,), pp=(4,), cp=(1,), micro_batches=(1,), zero_stages=(1,),
                   recompute=("full",), sequence_parallel=(True,), interleave=(1, 2), global_batch=1024)
    said = core.explain(t, k=2)[0]
    assert "the widest share of that range comes from the compute efficiency assumption" in said
    assert "Megatron-LM SC21 Table 1" in said and f"{t.row(0)['step_time_low']:.2f}" in said

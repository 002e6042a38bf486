"""Chapter 6 - tensor parallelism: workbook exercises 6.1-6.5.

Keys come from ``course.core.tensor`` (shard shapes, heads, TP volume and overhead),
cross-checked with ``allreduce_traffic_bytes`` and ``allreduce_time`` (ring). Layout:
Megatron-LM, Shoeybi et al. 2019 (column- then row-parallel linears, two all-reduces per
layer and pass).
"""

from __future__ import annotations

from course import core
from course.core import units as u
from course.assess.activity import Chapter
from course.assess.authoring import rounded, values_exercise

CHAPTER = {
    "title": "Chapter 6 \u00b7 Tensor parallelism",
    "intro": ("Pipeline parallelism cuts a model between layers; tensor parallelism cuts inside "
              "every layer, so that a group of GPUs shares each weight matrix. It divides memory "
              "cleanly and pays for it with all-reduces on the critical path."),
    "concept": [r"""
## Column- and row-parallel linear layers

For a linear layer $Y = XW$ with $W$ of shape $[d_\text{in}, d_\text{out}]$ and $t$ GPUs
(Shoeybi et al., *Megatron-LM*, 2019):

* **Column-parallel**: GPU $i$ holds the slice $W_i$ of shape $[d_\text{in}, d_\text{out}/t]$
  and the whole input $X$. It computes $Y_i = XW_i$, a block of the output's columns. The
  forward pass needs no communication.
* **Row-parallel**: GPU $i$ holds $W_i$ of shape $[d_\text{in}/t, d_\text{out}]$ and the matching
  column block $X_i$ of the input. It computes a *partial sum* $Z_i = X_iW_i$; the output is
  $Z = \sum_i Z_i$, which takes an **all-reduce**.

Megatron chains them: a column-parallel layer produces exactly the input blocks that the
following row-parallel layer needs. In the MLP the up-projection is column-parallel and the
down-projection row-parallel; in attention the Q, K, V projections are column-parallel (each
GPU owns whole heads) and the output projection is row-parallel. Each transformer layer
therefore needs **two all-reduces in the forward pass and two in the backward pass**, each of
the activation tensor $[b\,s, h]$: $b\,s\,h$ elements of 2 bytes in FP16/BF16.
""", r"""
## What an all-reduce costs

A ring all-reduce of $S$ bytes over $t$ GPUs makes every GPU send, and receive,
$2\,\frac{t-1}{t}\,S$ bytes (reduce-scatter, then all-gather; Patarasuk & Yuan 2009). At a
per-GPU bandwidth $B$ (bytes/s) and ignoring latency it takes $2\frac{t-1}{t}S/B$ seconds:
`allreduce_time(S, t, B, algorithm="ring")` in `course.core`. TP all-reduces sit on the
critical path (the next layer needs their result), so they cannot hide behind compute; that
is why TP normally stays inside one NVLink node.

## Memory

TP divides every layer's weights by $t$: a layer with about $12h^2$ parameters keeps
$12h^2/t$ of them per GPU. Attention heads are divided the same way, so the numbers of query
heads and of key/value heads must be divisible by $t$, or the KV heads must be replicated.
"""],
}

#: this chapter as one activity (listed in :mod:`course.activities`); the exercises below add to it
ACTIVITY = CH = Chapter('ch06', 'ch06_tensor_parallel', **CHAPTER)


# 6.1 -----------------------------------------------------------------------------------
def _key_6_1(s):
    return {"columns_per_gpu": int(core.column_parallel_shard_shape(s["d"], s["d"], s["tp"])[1])}


values_exercise(
    CH, "6.1", "Weight split shapes", kind="Derive", spec={"d": 8192, "tp": 8, "heads": 64},
    vary=lambda s, rng: dict(s, d=rng.choice([2048, 2560, 3072, 4096, 5120, 6144, 7168, 8192, 9216, 10240, 12288,
                                           14336, 16384, 18432, 20480, 25600]), tp=rng.choice([2, 4, 8]),
                             heads=rng.choice([32, 64, 128])),
    prompt=lambda s: (f"A $[d, d]$ weight matrix with $d = {s['d']}$ is split column-parallel over "
                      f"TP = {s['tp']} GPUs. How many columns does each GPU hold (an int)?"),
    answers={"columns_per_gpu": "columns"}, key=_key_6_1, rtol=0.0,
    solution=lambda s: f"d, tp = {s['d']}, {s['tp']}\ncolumns_per_gpu = d // tp",
    derivation=lambda s: (
        f"Column-parallel: each GPU holds $[d, d/t] = [{s['d']}, {s['d']}/{s['tp']}] = "
        f"[{s['d']}, {s['d'] // s['tp']}]$: **{s['d'] // s['tp']} columns**, "
        f"{s['d'] * (s['d'] // s['tp']) / 1e6:.3g} M parameters instead of {s['d'] ** 2 / 1e6:.3g} M. "
        f"With {s['heads']} heads that is {s['heads'] // s['tp']} whole heads per GPU."))


# 6.2 -----------------------------------------------------------------------------------
def _tensor_bytes(s):
    return s["b"] * s["s"] * s["d"] * s["bytes_per_element"]


def _ring_bytes_per_gpu(message_bytes, n):
    # every GPU sends 2 (n-1)/n * message_bytes (Patarasuk & Yuan 2009)
    return core.allreduce_traffic_bytes(message_bytes, n, algorithm="ring")


def _key_6_2(s):
    sent = core.tp_allreduce_traffic_per_gpu(s["s"], s["b"], s["d"], s["tp"], s["bytes_per_element"])
    # the same volume from the generic ring formula, as a cross-check of the two core paths
    assert abs(sent - _ring_bytes_per_gpu(_tensor_bytes(s), s["tp"])) <= 1e-9 * sent
    return {"allreduce_mb_per_gpu": sent / u.MB}


_SPEC_62 = {"tp": 8, "d": 8192, "s": 4096, "b": 1, "bytes_per_element": 2}


def _vary_tp_layer(s, rng):
    return dict(s, tp=rng.choice([2, 4, 8]), d=rng.choice([4096, 5120, 8192, 12288]),
                s=rng.choice([2048, 4096, 8192]), b=rng.choice([1, 2, 4]))

values_exercise(
    CH, "6.2", "Communication per layer", kind="Derive", spec=dict(_SPEC_62), vary=_vary_tp_layer,
    prompt=lambda s: (f"TP = {s['tp']}, $d = {s['d']}$, sequence length $s = {s['s']}$, micro-batch "
                      f"$b = {s['b']}$, FP16. Each all-reduce of a transformer layer reduces the "
                      "activation tensor $[b\\,s, d]$. With a ring all-reduce, how many **megabytes "
                      "($10^6$ bytes)** does each GPU send for one such all-reduce?"),
    answers={"allreduce_mb_per_gpu": "MB"}, key=_key_6_2,
    solution=lambda s: (f"tp, d, seq, b, bytes_per_element = {s['tp']}, {s['d']}, {s['s']}, {s['b']}, "
                        f"{s['bytes_per_element']}\n"
                        "allreduce_mb_per_gpu = 2 * (tp - 1) / tp * b * seq * d * bytes_per_element / 1e6"),
    derivation=lambda s: (
        f"Tensor: $b\\,s\\,d\\times2$ B = ${s['b']}\\times{s['s']}\\times{s['d']}\\times2$ B = "
        f"{_tensor_bytes(s) / u.MB:.4g} MB ({_tensor_bytes(s) / u.MiB:.4g} MiB). Ring, per GPU: "
        f"$2\\,\\frac{{t-1}}{{t}}\\,S = 2\\times\\frac{{{s['tp'] - 1}}}{{{s['tp']}}}\\times"
        f"{_tensor_bytes(s) / u.MB:.4g}$ MB = **{_key_6_2(s)['allreduce_mb_per_gpu']:.4g} MB** "
        f"({_key_6_2(s)['allreduce_mb_per_gpu'] * u.MB / u.MiB:.4g} MiB). Each of the layer's four "
        "all-reduces (two forward, two backward) moves this much."),
    note=("The workbook halves this volume (it divides by 2 at the end) for no reason: the ring "
          "formula already gives the volume of one all-reduce. Mind the unit: MB = $10^6$ bytes, "
          "not MiB."))


# 6.3 -----------------------------------------------------------------------------------
def _key_6_3(s):
    per_layer = core.transformer_layer_params(s["d"])          # 12 d^2 with f = 4d
    return {"weights_per_gpu_gb": core.tp_weight_bytes_per_gpu(per_layer, s["layers"], s["tp"],
                                                               s["bytes_per_param"]) / u.GB}


values_exercise(
    CH, "6.3", "TP memory savings", kind="Derive",
    spec={"d": 8192, "layers": 80, "tp": 8, "bytes_per_param": 2},
    vary=lambda s, rng: dict(s, d=rng.choice([4096, 5120, 6144, 8192, 12288]), layers=rng.choice([32, 40, 48, 60, 80, 96]),
                             tp=rng.choice([2, 4, 8])),
    prompt=lambda s: (f"A model has $d = {s['d']}$ and {s['layers']} layers of about $12d^2$ "
                      f"parameters each, stored in FP16. With TP = {s['tp']}, how many GB of weights "
                      "does each GPU hold for all layers?"),
    answers={"weights_per_gpu_gb": "GB"}, key=_key_6_3,
    solution=lambda s: (f"d, layers, tp = {s['d']}, {s['layers']}, {s['tp']}\n"
                        f"weights_per_gpu_gb = layers * 12 * d**2 * {s['bytes_per_param']} / tp / 1e9"),
    derivation=lambda s: (
        f"Per layer $12d^2$ = {12 * s['d'] ** 2 / 1e6:.4g} M parameters = "
        f"{12 * s['d'] ** 2 * s['bytes_per_param'] / u.GB:.4g} GB in FP16. All {s['layers']} layers: "
        f"{s['layers'] * 12 * s['d'] ** 2 * s['bytes_per_param'] / u.GB:.4g} GB. TP = {s['tp']} leaves "
        f"$1/{s['tp']}$ of every layer on each GPU: **{_key_6_3(s)['weights_per_gpu_gb']:.4g} GB**. "
        "Unlike ZeRO-3 nothing is gathered before use: each GPU computes with its own shard."))


# 6.4 -----------------------------------------------------------------------------------
def _key_6_4(s):
    return {"q_heads_per_gpu": int(core.heads_per_gpu(s["q_heads"], s["tp"])),
            "kv_heads_per_gpu": int(core.kv_heads_per_gpu(s["kv_heads"], s["tp"]))}


values_exercise(
    CH, "6.4", "TP and attention heads", kind="Trace", spec={"q_heads": 64, "kv_heads": 8, "tp": 8},
    # 8 KV heads as in Llama 70B (the written part asks about TP = 16); query heads and TP vary
    vary=lambda s, rng: dict(s, q_heads=rng.choice([32, 40, 48, 64, 96, 128]), tp=rng.choice([2, 4, 8])),
    prompt=lambda s: (f"A model has {s['q_heads']} query heads and {s['kv_heads']} key/value heads "
                      f"(grouped-query attention). With TP = {s['tp']}, how many query heads and how "
                      "many KV heads does each GPU hold (ints)?"),
    answers={"q_heads_per_gpu": "heads", "kv_heads_per_gpu": "heads"}, key=_key_6_4, rtol=0.0,
    solution=lambda s: (f"q_heads, kv_heads, tp = {s['q_heads']}, {s['kv_heads']}, {s['tp']}\n"
                        "q_heads_per_gpu = q_heads // tp\nkv_heads_per_gpu = kv_heads // tp"),
    derivation=lambda s: (
        f"Query heads: ${s['q_heads']}/{s['tp']}$ = **{s['q_heads'] // s['tp']}**; KV heads: "
        f"${s['kv_heads']}/{s['tp']}$ = **{s['kv_heads'] // s['tp']}**. Every GPU keeps the "
        f"{s['q_heads'] // s['kv_heads']}:1 grouping: its {s['q_heads'] // s['tp']} query heads share "
        f"its KV head{'s' if s['kv_heads'] > s['tp'] else ''}. Beyond TP = {s['kv_heads']} there would be more GPUs "
        "than KV heads, so KV heads would have to be replicated."),
    manual={"prompt": ("What changes at TP = 16, with only 8 KV heads? Answer in one or two sentences."),
            "answer": ("**Model answer.** 16 GPUs but 8 KV heads: each KV head is replicated on 2 GPUs "
                       "(each GPU holds one KV head shared by its 4 query heads), so KV weights and KV "
                       "cache are stored twice; alternatively keep TP at 8 and use another dimension.\n\n"
                       "**Mark scheme (1 point).** 1: says KV heads no longer divide evenly and must be "
                       "replicated (or duplicated) across GPUs, or proposes a valid alternative. 0.5: only "
                       "says 8/16 is not an integer. 0: otherwise."),
            "points": 1.0})


# 6.5 -----------------------------------------------------------------------------------
def _one_allreduce_seconds(s):
    return core.allreduce_time(_tensor_bytes(s), s["tp"], s["bandwidth_gbs"] * u.GB_per_s, algorithm="ring")


def _key_6_5(s):
    overhead = core.tp_comm_overhead(s["s"], s["b"], s["d"], s["layers"], s["tp"],
                                     s["bandwidth_gbs"] * u.GB_per_s, s["compute_ms"] * u.ms,
                                     bytes_per_element=s["bytes_per_element"])
    # cross-check: 2 all-reduces per layer and pass, each timed by the generic ring formula
    by_hand = s["layers"] * 2 * 2 * _one_allreduce_seconds(s) / (s["compute_ms"] * u.ms)
    assert abs(overhead - by_hand) <= 1e-9 * by_hand
    return {"tp_overhead_pct": 100 * overhead}


values_exercise(
    CH, "6.5", "TP scaling limit", kind="Derive",
    spec=dict(_SPEC_62, layers=80, bandwidth_gbs=600.0, compute_ms=300.0),
    vary=lambda s, rng: dict(_vary_tp_layer(s, rng), layers=rng.choice([32, 40, 60, 80]),
                             bandwidth_gbs=float(rng.choice([300, 450, 600, 900])),
                             compute_ms=float(rng.choice([200, 300, 400, 600]))),
    prompt=lambda s: (f"Take your per-GPU volume of one all-reduce from 6.2 ($d = {s['d']}$, "
                      f"$s = {s['s']}$, $b = {s['b']}$, FP16, TP = {s['tp']}) and an NVLink bandwidth "
                      f"of {s['bandwidth_gbs']:g} GB/s per GPU: one all-reduce takes volume / "
                      f"bandwidth (latency ignored). The model has {s['layers']} layers, each with 2 "
                      "all-reduces in the forward and 2 in the backward pass. Forward plus backward "
                      f"compute takes {s['compute_ms']:g} ms per step. What is the TP communication "
                      "time as a percentage of the compute time?"),
    answers={"tp_overhead_pct": "%"}, key=_key_6_5,
    solution=lambda s: (f"tp, d, seq, b = {s['tp']}, {s['d']}, {s['s']}, {s['b']}\n"
                        f"layers, bandwidth_gbs, compute_ms = {s['layers']}, {s['bandwidth_gbs']}, {s['compute_ms']}\n"
                        f"one_allreduce_s = 2 * (tp - 1) / tp * b * seq * d * {s['bytes_per_element']} / (bandwidth_gbs * 1e9)\n"
                        "tp_overhead_pct = 100 * layers * 2 * 2 * one_allreduce_s / (compute_ms / 1000)"),
    derivation=lambda s: (
        f"One all-reduce: {_key_6_2(s)['allreduce_mb_per_gpu']:.4g} MB at {s['bandwidth_gbs']:g} GB/s = "
        f"{_one_allreduce_seconds(s) / u.ms:.4g} ms. Count: {s['layers']} layers × 2 × 2 = "
        f"{s['layers'] * 4}. TP time: {s['layers'] * 4 * _one_allreduce_seconds(s) / u.ms:.4g} ms of "
        f"{s['compute_ms']:g} ms of compute: **{rounded(_key_6_5(s)['tp_overhead_pct'], 3)} %**, all of it on "
        "the critical path. Across nodes at a sixth of the bandwidth it would be six times that, "
        f"{rounded(6 * _key_6_5(s)['tp_overhead_pct'], 3)} %."),
    note=("The workbook's 9.6 % rests on the halved volume of its 6.2; with the correct volume the "
          "overhead is about twice as large."))

"""Chapter 10: mixture of experts (exercises 10.1-10.7).

Keys come from :mod:`course.core.moe` (``moe_mlp_params``, ``expert_params_per_gpu``,
``expert_data_parallel_size``, ``moe_dispatch_bytes_per_token``, ``moe_all_to_all_time_per_layer``,
``all_to_all_time``), :func:`course.core.model_state_bytes` and :mod:`course.core.moe_capacity`
(``expert_capacity``, ``dropped_tokens``, ``busiest_load_ratio``). Sources: GShard (Lepikhin et al.
2021), Switch Transformer (Fedus et al. 2022), DeepSeek-V3 technical report (DeepSeek-AI 2024),
Megatron-Core MoE parallel folding (Liu et al. 2025); each function's docstring names its section.
"""

from __future__ import annotations

from course import core
from course.core.units import GB, GB_per_s, ms, us

from course.assess.activity import Chapter
from course.assess.authoring import build_exercise, debug_exercise, exact, rounded, values_exercise
from course.assess.probes import log_uniform, make_probes

CHAPTER = {
    "title": "Chapter 10 \u00b7 Mixture of experts",
    "intro": (
        "Most frontier models are now **mixtures of experts** (MoE): DeepSeek-V3, Qwen3-MoE, Mixtral, "
        "Llama 4. Each transformer block's MLP becomes many small MLPs, the *experts*, and a router "
        "sends every token to only a few of them. The model holds far more weights than a token uses, "
        "so it learns more per FLOP. This chapter counts what each kind of weight costs: the ones a token "
        "uses and the ones it does not.\n\n"
        "You need: the SwiGLU MLP (three $h\\times f$ matrices), mixed-precision Adam (16 bytes per "
        "parameter, ZeRO-1 shards the 12 bytes of optimizer state) and the \u03b1-\u03b2 cost of a "
        "collective (chapter 0). Units: GB = 10\u2079 bytes, MB = 10\u2076 bytes, GB/s = 10\u2079 bytes/s, "
        "ms = 10\u207b\u00b3 s, \u00b5s = 10\u207b\u2076 s."
    ),
    "concept": [r"""
## Concepts

**Total and active parameters.** An MoE block has a router (one $h\times E$ matrix that scores the
$E$ routed experts), $E$ routed experts of inner width $f_e$ (each a SwiGLU MLP of $3\,h\,f_e$
weights) and, in DeepSeekMoE-style models, $E_s$ *shared* experts every token passes through. A token
uses the router, its top-$k$ routed experts and the shared ones:

$$P_\text{total} = hE + E\cdot 3hf_e + E_s\cdot 3hf_e, \qquad P_\text{active} = hE + k\cdot 3hf_e + E_s\cdot 3hf_e.$$

Training FLOPs count the active parameters ($6\,N_\text{active}\,D$); a GPU's memory counts the
weights, gradients and Adam states of every expert it holds. (Sources: Fedus et al. 2022,
*Switch Transformers*; DeepSeek-AI 2024, *DeepSeek-V3 Technical Report*, sec. 2.1.2.)

**Expert parallelism (EP).** The experts are spread over $\text{EP}$ GPUs, and pipeline stages split
the layers, so one GPU holds $P_\text{experts}/(\text{EP}\cdot\text{PP})$ expert weights. The GPUs of
one pipeline stage that hold the *same* experts form the expert-data-parallel group
$\text{EDP} = (\text{GPUs per stage})/\text{EP}$: they all-reduce the experts' gradients, and ZeRO-1
shards the experts' optimizer state over them (Liu et al. 2025, *MoE Parallel Folding*, sec. 3).

**Dispatch and combine are all-to-alls.** Every token's hidden vector ($h$ elements, 2 bytes each in
BF16) travels to the GPUs of its $k$ experts (*dispatch*) and the results travel back (*combine*), in
the forward pass and again in the backward pass: **four all-to-alls per MoE layer** and micro-batch
(Lepikhin et al. 2021, *GShard*, sec. 2.2). A pairwise-exchange all-to-all in which each of $n$ ranks
holds $M$ bytes for all keeps $1/n$ and sends $(n-1)/n$ of them, one block per peer:

$$T_\text{a2a} = (n-1)\,\alpha + \frac{n-1}{n}\cdot\frac{M}{B}$$

(Thakur, Rabenseifner & Gropp 2005, sec. 4.5). With EP spread over nodes of $r$ GPUs each and every
routed copy sent on its own, a token sends $k\,(r-1)/\text{EP}$ copies over NVLink and
$k\,(1 - r/\text{EP})$ copies over the network. Both parts run at once, so one all-to-all takes the
longer of (NVLink bytes)/(NVLink bandwidth) and (network bytes)/(network bandwidth).

**One copy per node, and node-limited routing.** DeepSeek-V3 sends a token over the network once to
each node that holds any of its experts, then forwards it over NVLink (DeepSeek-AI 2024, sec. 3.2.2).
With experts spread evenly over $N$ nodes, the token reaches on average
$(N-1)\left[1-(1-1/N)^k\right]$ other nodes; every routed copy not on the token's own GPU crosses
NVLink once, $k\,(1-1/\text{EP})$ copies. *Node-limited* routing lets a token pick its experts from at
most $g$ of the $N$ nodes; then it reaches $(N-1)\,\frac{g}{N}\left[1-(1-1/g)^k\right]$ other nodes
(DeepSeek-V3 uses at most 4 nodes per token).

**Capacity and dropped tokens.** With a *capacity factor* $C$, an expert accepts at most
$\lceil C\cdot T k / E\rceil$ routed copies of the $T k$ a micro-batch of $T$ tokens routes; copies
beyond its buffer are *dropped* (they skip the expert through the residual connection). Without a
capacity (*dropless* MoE, as in DeepSeek-V3 and Megatron-Core's default), every copy is computed and
the layer takes $\max_i L_i / \overline{L}$ times the balanced time
(Fedus et al. 2022, sec. 2.2; Gale et al. 2023, *MegaBlocks*).

In `course.core`: `moe_mlp_params`, `expert_params_per_gpu`, `expert_data_parallel_size`,
`model_state_bytes`, `all_to_all_time`, `moe_dispatch_bytes_per_token`,
`moe_all_to_all_time_per_layer`, `expected_remote_nodes`, `expert_capacity`, `dropped_tokens`,
`busiest_load_ratio`.
"""],
}

#: this chapter as one activity (listed in :mod:`course.activities`); the exercises below add to it
ACTIVITY = CH = Chapter('ch10', 'ch10_mixture_of_experts', **CHAPTER)

#: GPUs per node in every exercise of this chapter (an HGX H100 node: one NVLink domain of 8)
GPUS_PER_NODE = 8


# 10.1 ----------------------------------------------------------------------------------
def _mlp_params(s):
    return core.moe_mlp_params(s["hidden"], s["expert_ffn"], s["experts"], s["top_k"], s["shared"])


def _key_10_1(s):
    total, active = _mlp_params(s)
    return {"total_b": s["layers"] * total / 1e9, "active_b": s["layers"] * active / 1e9}


def _vary_10_1(s, rng):
    if rng.random() < 0.35:  # a few coarse experts (Mixtral-like)
        experts, top_k = rng.choice([8, 16]), rng.choice([1, 2])
        ffn, shared = rng.choice([8192, 11008, 14336, 16384]), 0
    else:  # many fine-grained experts (DeepSeekMoE-like)
        experts, top_k = rng.choice([64, 128, 160, 256]), rng.choice([4, 6, 8])
        ffn, shared = rng.choice([768, 1024, 1408, 1536, 2048]), rng.choice([0, 1, 2])
    return dict(s, hidden=rng.choice([2048, 3072, 4096, 5120, 6144, 7168]), expert_ffn=ffn, experts=experts,
                top_k=top_k, shared=shared, layers=rng.randrange(16, 65, 2))


def _prompt_10_1(s):
    shared = (f"{s['shared']} shared expert{'s' if s['shared'] != 1 else ''} of the same width that every token "
              "passes through" if s["shared"] else "no shared expert")
    return (f"An MoE model has {s['layers']} MoE layers. Each MoE block has hidden size $h$ = {s['hidden']}, a "
            f"router, {s['experts']} routed experts (SwiGLU, inner width $f_e$ = {s['expert_ffn']}) and {shared}; "
            f"each token goes to its top-{s['top_k']} routed experts. How many **billion** parameters do the MoE "
            "blocks of all layers hold in total, and how many of them does one token use (active)? Count the router.")


values_exercise(
    CH, "10.1", "Total and active parameters", kind="Derive",
    spec={"hidden": 4096, "expert_ffn": 14336, "experts": 8, "top_k": 2, "shared": 0, "layers": 32},
    vary=_vary_10_1, prompt=_prompt_10_1,
    answers={"total_b": "billion parameters", "active_b": "billion parameters"}, key=_key_10_1,
    solution=lambda s: (f"h, f, E, k, E_s, L = {s['hidden']}, {s['expert_ffn']}, {s['experts']}, {s['top_k']}, "
                        f"{s['shared']}, {s['layers']}\n"
                        "expert = 3 * h * f\n"
                        "total_b = L * (h * E + E * expert + E_s * expert) / 1e9\n"
                        "active_b = L * (h * E + k * expert + E_s * expert) / 1e9"),
    derivation=lambda s: (
        f"One expert: $3hf_e$ = 3 \u00d7 {s['hidden']} \u00d7 {s['expert_ffn']} = "
        f"{rounded(core.expert_params(s['hidden'], s['expert_ffn']) / 1e6)} M weights; the router "
        f"$hE$ = {rounded(core.router_params(s['hidden'], s['experts']) / 1e6)} M. Per block: total "
        f"{rounded(_mlp_params(s)[0] / 1e9)} B, active {rounded(_mlp_params(s)[1] / 1e9)} B. Over "
        f"{s['layers']} layers: **{rounded(_key_10_1(s)['total_b'])} B total** and "
        f"**{rounded(_key_10_1(s)['active_b'])} B active**, "
        f"{rounded(_key_10_1(s)['total_b'] / _key_10_1(s)['active_b'], 3)}\u00d7 as many weights as a token "
        "uses. Compute (6ND) follows the active count; memory must hold the total."),
)


# 10.2 ----------------------------------------------------------------------------------
def _expert_state(s):
    per_gpu = core.expert_params_per_gpu(s["expert_params_b"] * 1e9, s["ep"], 1, s["pp"])
    edp = core.expert_data_parallel_size(1, 1, s["gpus_per_stage"], s["ep"])
    return per_gpu, edp, core.model_state_bytes(per_gpu, zero_stage=1, dp=edp)


def _key_10_2(s):
    per_gpu, _, state = _expert_state(s)
    return {"params_per_gpu_b": per_gpu / 1e9, "state_gb": state / GB}


def _vary_10_2(s, rng):
    ep = rng.choice([8, 16, 32, 64])
    return dict(s, expert_params_b=rng.choice([42.0, 45.1, 88.0, 141.0, 228.0, 300.0, 392.0, 653.0]),
                ep=ep, pp=rng.choice([1, 2, 4, 8, 16]), gpus_per_stage=ep * rng.choice([1, 2, 4, 8, 16]))


values_exercise(
    CH, "10.2", "Expert memory per GPU", kind="Derive",
    spec={"expert_params_b": 653.0, "ep": 64, "pp": 16, "gpus_per_stage": 128}, vary=_vary_10_2,
    prompt=lambda s: (
        f"The routed experts of a model hold {exact(s['expert_params_b'])} billion parameters over all its layers. "
        f"They are spread over EP = {s['ep']} GPUs and PP = {s['pp']} pipeline stages (no expert tensor "
        f"parallelism); each pipeline stage has {s['gpus_per_stage']} GPUs, so the GPUs that hold the same "
        "experts form an expert-data-parallel group. Training uses mixed-precision Adam (2-byte weights, 2-byte "
        "gradients, 12 bytes of optimizer state per parameter) with ZeRO-1 over that group. How many billion "
        "expert parameters does one GPU hold, and how many GB of expert model state (weights, gradients and "
        "its share of the optimizer state)?"),
    answers={"params_per_gpu_b": "billion parameters", "state_gb": "GB per GPU"}, key=_key_10_2,
    solution=lambda s: (f"P, ep, pp, per_stage = {s['expert_params_b']!r} * 1e9, {s['ep']}, {s['pp']}, "
                        f"{s['gpus_per_stage']}\n"
                        "edp = per_stage // ep\n"
                        "per_gpu = P / (ep * pp)\n"
                        "params_per_gpu_b = per_gpu / 1e9\n"
                        "state_gb = per_gpu * (2 + 2 + 12 / edp) / 1e9"),
    derivation=lambda s: (
        f"One GPU holds $P/(\\text{{EP}}\\cdot\\text{{PP}})$ = {exact(s['expert_params_b'])} B / "
        f"({s['ep']} \u00d7 {s['pp']}) = **{rounded(_key_10_2(s)['params_per_gpu_b'])} B** expert parameters. "
        f"EDP = {s['gpus_per_stage']} / {s['ep']} = {_expert_state(s)[1]}, so ZeRO-1 leaves "
        f"2 + 2 + 12/{_expert_state(s)[1]} = {rounded(_expert_state(s)[2] / _expert_state(s)[0])} bytes per "
        f"parameter: **{rounded(_key_10_2(s)['state_gb'])} GB** per GPU. A dense model with the same active "
        "parameters would need a small fraction of this: sparse is not free in memory."),
)


# 10.3 ----------------------------------------------------------------------------------
def _dispatch(s):
    return core.moe_dispatch_bytes_per_token(s["hidden"], s["top_k"], s["ep"], GPUS_PER_NODE,
                                             bytes_per_element=s["bytes_per_element"])


def _layer_seconds(s):
    return core.moe_all_to_all_time_per_layer(s["tokens"], s["hidden"], s["top_k"], s["ep"], GPUS_PER_NODE,
                                              s["nvlink_gbs"] * GB_per_s, s["network_gbs"] * GB_per_s,
                                              bytes_per_element=s["bytes_per_element"])


def _key_10_3(s):
    return {"network_mb": s["tokens"] * _dispatch(s)[1] / 1e6, "layer_ms": _layer_seconds(s) / ms}


values_exercise(
    CH, "10.3", "Dispatch traffic and all-to-all time", kind="Derive",
    spec={"tokens": 4096, "hidden": 7168, "top_k": 8, "ep": 64, "bytes_per_element": 2,
          "nvlink_gbs": 360.0, "network_gbs": 40.0},
    vary=lambda s, rng: dict(s, tokens=rng.choice([1024, 2048, 4096, 8192]),
                             hidden=rng.choice([2048, 4096, 5120, 6144, 7168]), top_k=rng.choice([2, 4, 6, 8]),
                             ep=rng.choice([16, 32, 64]), nvlink_gbs=float(rng.choice([150, 300, 360])),
                             network_gbs=float(rng.choice([20, 25, 40, 45]))),
    prompt=lambda s: (
        f"Expert parallelism spans EP = {s['ep']} GPUs on nodes of {GPUS_PER_NODE} GPUs, experts spread evenly. "
        f"Each GPU dispatches {s['tokens']} tokens per micro-batch, hidden size {s['hidden']}, "
        f"{s['bytes_per_element']} bytes per element (BF16), top-{s['top_k']} routing, every routed copy sent "
        f"on its own. One GPU achieves {s['nvlink_gbs']:g} GB/s per direction on NVLink and "
        f"{s['network_gbs']:g} GB/s on the network, and both run at once. Ignoring latency: how many MB does "
        "one GPU send to other nodes in one dispatch, and how many ms do the all-to-alls of one MoE layer take "
        "for one micro-batch (forward and backward)?"),
    answers={"network_mb": "MB", "layer_ms": "ms"}, key=_key_10_3,
    solution=lambda s: (f"T, h, k, ep, r, b = {s['tokens']}, {s['hidden']}, {s['top_k']}, {s['ep']}, "
                        f"{GPUS_PER_NODE}, {s['bytes_per_element']}\n"
                        "copy = h * b\n"
                        "network_bytes = T * k * (1 - r / ep) * copy\n"
                        "nvlink_bytes = T * k * (r - 1) / ep * copy\n"
                        "network_mb = network_bytes / 1e6\n"
                        f"one = max(nvlink_bytes / ({s['nvlink_gbs']!r} * 1e9), network_bytes / "
                        f"({s['network_gbs']!r} * 1e9))\n"
                        "layer_ms = 4 * one * 1000   # dispatch + combine, forward + backward"),
    derivation=lambda s: (
        f"A copy is {s['hidden']} \u00d7 {s['bytes_per_element']} = {s['hidden'] * s['bytes_per_element']:,} bytes. "
        f"A token sends $k(1-r/\\text{{EP}})$ = {rounded(s['top_k'] * (1 - GPUS_PER_NODE / s['ep']))} copies "
        f"over the network and $k(r-1)/\\text{{EP}}$ = {rounded(s['top_k'] * (GPUS_PER_NODE - 1) / s['ep'])} "
        f"over NVLink. {s['tokens']} tokens: **{rounded(_key_10_3(s)['network_mb'])} MB** to other nodes and "
        f"{rounded(s['tokens'] * _dispatch(s)[0] / 1e6)} MB over NVLink per dispatch. Network: "
        f"{rounded(s['tokens'] * _dispatch(s)[1] / (s['network_gbs'] * GB_per_s) / ms)} ms, NVLink: "
        f"{rounded(s['tokens'] * _dispatch(s)[0] / (s['nvlink_gbs'] * GB_per_s) / ms)} ms; the longer one "
        f"counts, four times per layer (dispatch and combine, forward and backward): "
        f"**{rounded(_key_10_3(s)['layer_ms'])} ms**. The network carries most copies once EP leaves the node."),
)


# 10.4 ----------------------------------------------------------------------------------
def _key_10_4(s):
    cap = core.expert_capacity(s["tokens"], s["top_k"], len(s["loads"]), s["capacity_factor"])
    return {"capacity": cap, "dropped": core.dropped_tokens(s["loads"], cap),
            "busiest_ratio": core.busiest_load_ratio(s["loads"])}


def _loads(rng, tokens, top_k, experts):
    """Per-expert loads of one skewed micro-batch, summing to tokens x top_k."""
    weights = [rng.uniform(0.4, 1.6) for _ in range(experts)]
    weights[rng.randrange(experts)] *= rng.uniform(1.3, 2.2)  # a hot expert
    total = tokens * top_k
    loads = [int(total * w / sum(weights)) for w in weights]
    loads[0] += total - sum(loads)
    return loads


def _vary_10_4(s, rng):
    experts, top_k = rng.choice([(4, 1), (8, 1), (8, 2), (16, 2)])
    tokens = rng.choice([512, 1024, 2048, 4096])
    return dict(s, tokens=tokens, top_k=top_k, capacity_factor=rng.choice([1.0, 1.125, 1.25, 1.5]),
                loads=_loads(rng, tokens, top_k, experts))


values_exercise(
    CH, "10.4", "Capacity and dropped tokens", kind="Trace",
    spec={"tokens": 2048, "top_k": 2, "capacity_factor": 1.25,
          "loads": [700, 420, 515, 388, 610, 402, 455, 606]},
    vary=_vary_10_4,
    prompt=lambda s: (
        f"A micro-batch of {s['tokens']} tokens is routed top-{s['top_k']} to {len(s['loads'])} experts, which "
        "receive these numbers of routed copies: " + ", ".join(str(x) for x in s["loads"])
        + f". The capacity factor is {exact(s['capacity_factor'])}. How many copies does one expert accept "
        "(its capacity, rounded up to a whole token), how many copies are dropped in total, and, if the layer "
        "ran dropless instead, how many times the balanced time would its busiest expert take (its load over "
        "the mean load)?"),
    answers={"capacity": "count of tokens", "dropped": "count of tokens", "busiest_ratio": "ratio"},
    key=_key_10_4, rtol=0.0, tolerances={"busiest_ratio": 0.01},
    solution=lambda s: (f"loads = {s['loads']!r}\n"
                        "import math\n"
                        f"capacity = math.ceil({s['capacity_factor']!r} * {s['tokens']} * {s['top_k']} / len(loads))\n"
                        "dropped = sum(max(0, load - capacity) for load in loads)\n"
                        "busiest_ratio = max(loads) / (sum(loads) / len(loads))"),
    derivation=lambda s: (
        f"The micro-batch routes {s['tokens']} \u00d7 {s['top_k']} = {s['tokens'] * s['top_k']} copies, a mean of "
        f"{rounded(s['tokens'] * s['top_k'] / len(s['loads']))} per expert; capacity "
        f"\u2308{exact(s['capacity_factor'])} \u00d7 {rounded(s['tokens'] * s['top_k'] / len(s['loads']))}\u2309 = "
        f"**{_key_10_4(s)['capacity']}**. Overflow: "
        + (" + ".join(f"({x} \u2212 {_key_10_4(s)['capacity']})" for x in s["loads"] if x > _key_10_4(s)["capacity"])
           or "none")
        + f" = **{_key_10_4(s)['dropped']} copies dropped** "
        f"({rounded(100 * _key_10_4(s)['dropped'] / (s['tokens'] * s['top_k']), 3)} % of the copies skip their "
        f"expert). Dropless, the busiest expert's {max(s['loads'])} copies take "
        f"**{rounded(_key_10_4(s)['busiest_ratio'], 4)}\u00d7** the balanced time, and every other expert waits."),
)


# 10.5 ----------------------------------------------------------------------------------
def _a2a_ms_reference(M_gb, N, bw_gbs, latency_us):
    return core.all_to_all_time(M_gb * GB, N, bw_gbs * GB_per_s, latency_us * us) / ms


build_exercise(
    CH, "10.5", "all_to_all_time", spec={"example": [1.0, 8, 100.0, 5.0]},
    vary=lambda s, rng: dict(s, example=[float(rng.choice([0.25, 0.5, 1, 2, 4])), rng.choice([4, 8, 16, 32, 64]),
                                         float(rng.choice([25, 40, 50, 100, 360])), float(rng.choice([2, 5, 10]))]),
    prompt=lambda s: (
        "Write `all_to_all_time(M_gb, N, bw_gbs, latency_us)` that returns the time of a pairwise-exchange "
        "all-to-all in **milliseconds**: each of N ranks holds M GB, one block for every rank (itself "
        "included); it keeps its own block and sends the other N\u22121, one message per peer, each paying one "
        "latency.\n\n"
        "* `M_gb`: bytes each rank holds, in GB (\u2265 0); `N`: number of ranks (a whole number \u2265 1); "
        "`bw_gbs`: bandwidth per direction of one rank in GB/s (> 0); `latency_us`: latency per message in "
        "\u00b5s (\u2265 0).\n"
        "* Raise `ValueError` for any input outside those ranges.\n"
        "* Return a plain Python `float`. Do not call `course.core`: the point is to write it yourself.\n\n"
        f"Worked example: `all_to_all_time({', '.join(map(repr, s['example']))})` = "
        f"{_a2a_ms_reference(*s['example']):.6g} ms."),
    function="all_to_all_time", signature="(M_gb, N, bw_gbs, latency_us)",
    docstring="Pairwise-exchange all-to-all time in ms: N-1 messages of M/N GB, one latency each.",
    body=("if M_gb < 0 or bw_gbs <= 0 or latency_us < 0 or N < 1 or N != int(N):\n"
          "    raise ValueError('need M_gb >= 0, bw_gbs > 0, latency_us >= 0 and a whole N >= 1')\n"
          "messages = N - 1\n"
          "bandwidth_ms = messages * (M_gb / N) / bw_gbs * 1000\n"
          "latency_ms = messages * latency_us / 1000\n"
          "return float(bandwidth_ms + latency_ms)"),
    reference=_a2a_ms_reference,
    probes=make_probes(
        fixed=[[1.0, 8, 100.0, 5.0], [1.0, 8, 100.0, 0.0], [2.0, 1, 10.0, 3.0], [0.0, 16, 50.0, 2.0],
               [0.001, 1024, 25.0, 10.0], [100.0, 2, 900.0, 0.0]],
        random_args=lambda r: [round(log_uniform(r, 1e-3, 100.0), 6), r.randint(2, 2048),
                               round(log_uniform(r, 1.0, 1000.0), 3), round(r.uniform(0.0, 20.0), 3)],
        invalid=[[1.0, 0, 50.0, 5.0], [1.0, -8, 50.0, 5.0], [1.0, 4.5, 50.0, 5.0], [1.0, 8, 0.0, 5.0],
                 [1.0, 8, -25.0, 5.0], [-0.5, 8, 50.0, 5.0], [1.0, 8, 50.0, -1.0]]),
    examples=[[1.0, 8, 100.0, 5.0], [1.0, 8, 100.0, 0.0]],
    derivation=lambda s: (
        "A rank sends N\u22121 of its N blocks, (N\u22121)/N \u00b7 M, one message per peer: "
        "T = (N\u22121)\u00b7\u03b1 + (N\u22121)/N \u00b7 M/B. For the worked example that is "
        f"{_a2a_ms_reference(s['example'][0], s['example'][1], s['example'][2], 0.0):.6g} ms of bandwidth + "
        f"{(s['example'][1] - 1) * s['example'][3] / 1000:.6g} ms of latency = "
        f"**{_a2a_ms_reference(*s['example']):.6g} ms**. Unlike a ring all-reduce (2(N\u22121)/N \u00b7 M), an "
        "all-to-all moves each byte once, but its latency term grows with every peer, and with EP across nodes "
        "most of the bytes take the slow network. N = 1 sends nothing: 0 ms."),
)


# 10.6 ----------------------------------------------------------------------------------
#: the listing; ``?x|`` lines are optional (each student's listing shows some, so the buggy line's number
#: varies) and change nothing ``expert_capacity`` does
LISTING_10_6 = '''
?a|"""Token routing helpers for a mixture-of-experts layer."""
?b|# A routed copy is one (token, expert) pair: a token routed top-k makes k copies.
?c|#: the capacity factor of the Switch Transformer's experiments (Fedus et al. 2022, Table 1)
?c|SWITCH_CAPACITY_FACTOR = 1.25
?d|__all__ = ["expert_capacity"]
?d|
?e|def mean_load(copies, experts):
?e|    """Routed copies an expert receives on average."""
?e|    return copies / experts
?e|
?f|def overflow(load, capacity):
?f|    """Copies an expert of this load drops."""
?f|    return max(0, load - capacity)
?f|
def expert_capacity(tokens, top_k, experts, capacity_factor):
?g|    """Routed copies one expert accepts: the capacity factor times its balanced share."""
?h|    # tokens: per micro-batch, top_k: experts per token, experts: routed experts
    import math
?i|    # a balanced router gives every expert the same share
    per_expert = tokens / experts
?j|    # the buffer holds capacity_factor times that share
    buffer = capacity_factor * per_expert
?k|    # a buffer holds whole tokens
    return math.ceil(buffer)
'''


def _capacity_reference(tokens, top_k, experts, capacity_factor):
    return core.expert_capacity(tokens, top_k, experts, capacity_factor)


def _capacity_probe(r):
    experts = 2 ** r.randint(1, 8)
    return [r.randint(1, 65536), r.randint(1, min(experts, 8)), experts,
            r.choice([1.0, 1.125, 1.25, 1.5, 1.75, 2.0])]


debug_exercise(
    CH, "10.6", "Find the bug", spec={"example": [4096, 2, 8, 1.25]},
    vary=lambda s, rng: dict(s, example=[rng.choice([512, 1024, 2048, 4096, 8192]), rng.choice([2, 4, 8]),
                                         rng.choice([8, 16, 32, 64]), rng.choice([1.0, 1.25, 1.5, 2.0])]),
    prompt=lambda s: ("This function should return an expert's capacity: how many routed copies it accepts "
                      "from a micro-batch of `tokens` tokens, each routed to `top_k` of `experts` experts, with "
                      "capacity factor `capacity_factor`, rounded up to a whole token. It returns values far too "
                      "small whenever `top_k` > 1. Worked example: "
                      f"`expert_capacity({', '.join(map(repr, s['example']))})` should be "
                      f"{_capacity_reference(*s['example'])}."),
    buggy_source=LISTING_10_6, buggy_line=3, function="expert_capacity",
    signature="(tokens, top_k, experts, capacity_factor)",
    docstring="Routed copies one expert accepts from a micro-batch, rounded up to a whole token.",
    body=("import math\n"
          "per_expert = tokens * top_k / experts\n"
          "return math.ceil(capacity_factor * per_expert)"),
    reference=_capacity_reference,
    probes=make_probes(fixed=[[4096, 2, 8, 1.25], [4096, 1, 8, 1.0], [1, 1, 1, 1.0], [1000, 8, 256, 1.5]],
                       random_args=_capacity_probe, invalid=[]),
    examples=[[4096, 2, 8, 1.25]],
    derivation=lambda s: (
        f"Line **{s['buggy_line']}** (`per_expert = tokens / experts`) is the bug: a token routed top-k makes k "
        "copies, so the micro-batch routes `tokens * top_k` copies and a balanced expert receives "
        "`tokens * top_k / experts`. The fix is `per_expert = tokens * top_k / experts`. Switch Transformer routes "
        "top-1, where the two agree, which is how the formula without k spreads. Example: "
        f"`expert_capacity({', '.join(map(repr, s['example']))})` = {_capacity_reference(*s['example'])}; the buggy "
        f"line gives {core.expert_capacity(s['example'][0], 1, s['example'][2], s['example'][3])}: a buffer "
        f"{s['example'][1]} times too small, so even a perfectly balanced router would drop most copies."),
)


# 10.7 ----------------------------------------------------------------------------------
#: candidate layouts: (kind, EP, node limit); a kind is how tokens cross the network
_LABELS = ("A", "B", "C", "D")


def _candidate_seconds(s, kind, ep, limit):
    nodes = ep // GPUS_PER_NODE
    extra = {}
    if kind == "per_node":
        extra = {"per_node": True}
    elif kind == "limited":
        extra = {"groups": nodes, "group_topk": limit}
    return core.moe_all_to_all_time_per_layer(s["tokens"], s["hidden"], s["top_k"], ep, GPUS_PER_NODE,
                                              s["nvlink_gbs"] * GB_per_s, s["network_gbs"] * GB_per_s,
                                              bytes_per_element=2, **extra)


def _describe(kind, ep, limit):
    if ep <= GPUS_PER_NODE:
        return f"EP = {ep}, inside one node (NVLink only)"
    nodes = ep // GPUS_PER_NODE
    if kind == "per_copy":
        return f"EP = {ep} over {nodes} nodes, every routed copy sent on its own"
    if kind == "per_node":
        return f"EP = {ep} over {nodes} nodes, one network copy per node a token's experts are on, then NVLink"
    return (f"EP = {ep} over {nodes} nodes, node-limited routing: each token's experts on at most {limit} nodes, "
            "one network copy per node, then NVLink")


def _key_10_7(s):
    seconds = {label: _candidate_seconds(s, *c) for label, c in zip(_LABELS, s["candidates"])}
    order = sorted(seconds, key=seconds.get)
    return {"order": order, "fastest_us": seconds[order[0]] / us}


def _vary_10_7(s, rng):
    while True:
        pool = [("per_copy", 8, 0),
                ("per_copy", rng.choice([16, 32, 64]), 0),
                ("per_node", rng.choice([16, 32, 64]), 0),
                ("limited", rng.choice([32, 64]), rng.choice([2, 3, 4])),
                ("per_copy", rng.choice([16, 32, 64]), 0),
                ("per_node", rng.choice([32, 64]), 0)]
        picked = rng.sample(pool, 4)
        t = dict(s, tokens=rng.choice([1024, 2048, 4096, 8192]), hidden=rng.choice([2048, 4096, 5120, 7168]),
                 top_k=rng.choice([2, 4, 6, 8]), nvlink_gbs=float(rng.choice([150, 300, 360])),
                 network_gbs=float(rng.choice([20, 25, 40, 50])), candidates=[list(c) for c in picked])
        if len({tuple(c) for c in picked}) < 4:
            continue
        times = sorted(_candidate_seconds(t, *c) for c in picked)
        if all(b > a * 1.05 for a, b in zip(times, times[1:])):  # a clear order: no near ties
            return t


values_exercise(
    CH, "10.7", "Rank the expert layouts", kind="Design",
    spec={"tokens": 4096, "hidden": 7168, "top_k": 8, "nvlink_gbs": 360.0, "network_gbs": 40.0,
          "candidates": [["per_copy", 64, 0], ["per_copy", 8, 0], ["limited", 64, 4], ["per_node", 64, 0]]},
    vary=_vary_10_7,
    prompt=lambda s: (
        f"Each GPU dispatches {s['tokens']} tokens per micro-batch, hidden size {s['hidden']}, BF16 (2 bytes per "
        f"element), top-{s['top_k']} routing, on nodes of {GPUS_PER_NODE} GPUs that achieve "
        f"{s['nvlink_gbs']:g} GB/s per direction on NVLink and {s['network_gbs']:g} GB/s on the network (both at "
        "once). Four candidate layouts of the experts:\n\n"
        + "\n".join(f"* **{label}**: {_describe(*c)}" for label, c in zip(_LABELS, s["candidates"]))
        + "\n\nIgnoring latency, order them by the all-to-all time of one MoE layer (forward and backward), "
          "**fastest first**, as a list of letters, and give the fastest one's time in \u00b5s."),
    answers={"order": "list of letters, fastest first", "fastest_us": "\u00b5s"},
    key=_key_10_7, rtol=0.0, tolerances={"fastest_us": 0.01},
    solution=lambda s: (
        f"T, h, k, r, nv, net = {s['tokens']}, {s['hidden']}, {s['top_k']}, {GPUS_PER_NODE}, "
        f"{s['nvlink_gbs']!r} * 1e9, {s['network_gbs']!r} * 1e9\n"
        f"candidates = {dict(zip(_LABELS, [tuple(c) for c in s['candidates']]))!r}\n"
        "def layer_us(kind, ep, limit):\n"
        "    nodes, copy = ep // r, 2 * h\n"
        "    if kind == 'per_copy':\n"
        "        net_copies, nv_copies = k * (1 - r / ep), k * (r - 1) / ep\n"
        "    else:\n"
        "        hit = 1 - (1 - 1 / nodes) ** k if kind == 'per_node' else limit / nodes * (1 - (1 - 1 / limit) ** k)\n"
        "        net_copies, nv_copies = (nodes - 1) * hit, k * (1 - 1 / ep)\n"
        "    one = max(T * nv_copies * copy / nv, T * net_copies * copy / net)\n"
        "    return 4 * one * 1e6\n"
        "times = {label: layer_us(*c) for label, c in candidates.items()}\n"
        "order = sorted(times, key=times.get)\n"
        "fastest_us = times[order[0]]"),
    derivation=lambda s: (
        "Per layer, four all-to-alls, each the longer of its NVLink and network parts: "
        + "; ".join(f"{label} ({_describe(*c)}): {rounded(_candidate_seconds(s, *c) / us)} \u00b5s"
                    for label, c in zip(_LABELS, s["candidates"]))
        + f". Fastest first: **{', '.join(_key_10_7(s)['order'])}**, the fastest at "
          f"**{rounded(_key_10_7(s)['fastest_us'])} \u00b5s**. Inside one node only NVLink carries tokens; across "
          "nodes the network sets the time, and sending one copy per node (and limiting the nodes a token may "
          "reach) cuts the network bytes that dominate it."),
)

"""Lab 07 · Mixtures of experts, declared once (:mod:`course.assess.lab`).

Story: a team trains a mixture of experts on the 1,024 H100s of Lab 05 (Cloud). The MoE is
``llama3-8b-moe`` of the catalog: Llama 3 8B with each MLP replaced by 64 experts of 1/8 its
width, 8 per token, so a token meets the dense model's weights while the model holds about 6x
as many. Act I: trained like the dense model (pure data parallelism), what happens to memory and
step time? Act II: expert parallelism grows out of one NVLink domain: where does the step turn?
Act III: a skewed router: how long does everyone wait for the hot expert, and what do capacity
factors, auxiliary-loss-free balancing and node-limited routing buy?

Tracks: mixtures of experts train on GPU clusters, so Lab 07 runs on the Cloud track only (Lab 05's
Edge, Mobile and Tiny tracks have no experts to place); the top cell says so.

Variants (:func:`vary`): the story, the instruments and the locks keep the team's numbers; each
graded question asks about the student's own job: the expert state per GPU of their model and
layout (Act I), the all-to-all time of their job (Act II) and the step share of their straggler
expert (Act III). Every key is a ``course.core`` call on the student's spec; the cases are chosen
so that keys stand more than 4 % apart (twice the 2 % tolerance).
"""

from __future__ import annotations

import random
from typing import Dict, List

from course import core
from course.core import catalog
from course.core.units import GB
from course.assess.items import Lock
from course.assess.lab import Act, Answer, Lab, Reflection, Spec
from course.assess.spec import Cell


NAME = "lab07_expert_wall"

#: The team's job (Cloud): the dense Llama 3 8B and its sparse twin on Lab 05's 1,024 H100s, pure data
#: parallelism (TP = PP = 1), ZeRO-1, full recomputation (so activations stay small and the difference is
#: the experts), 2 micro-batches of one 8,192-token sequence per GPU (16.8 M tokens per step).
#: Act II moves EP over ``act2_story_eps``; Act III's lock: 64 experts, one per GPU, the hot one at
#: twice its share, expert compute 40 % of a balanced step. The ``act1_* / act2_* / act3_*`` keys are the
#: graded question's inputs (a student's variant replaces them).
SPEC: Spec = {
    "dense": "llama3-8b", "moe": "llama3-8b-moe", "cluster": "h100-1024", "gpus": 1024,
    "micro_batch": 1, "microbatches": 2, "zero_stage": 1, "recompute": "full", "story_ep": 8,
    "act2_story_eps": (8, 16, 32, 64),
    "act3_story_experts": 64, "act3_story_ep": 64, "act3_story_hot": 2.0, "act3_story_share": 0.4,
    # graded: Act I (expert state per GPU), Act II (all-to-all per layer), Act III (straggler share)
    "act1_model": "llama3-8b-moe", "act1_ep": 8, "act1_pp": 1, "act1_stage_gpus": 256,
    "act2_model": "llama3-8b-moe", "act2_ep": 16, "act2_network": "InfiniBand NDR", "act2_tokens": 8192,
    "act2_routing": "plain", "act2_nvlink": "NVLink 4",
    "act3_experts": 64, "act3_ep": 8, "act3_skew": 0.5, "act3_share": 0.4,
}

MOE_MODELS = ("llama3-8b-moe", "mixtral-8x7b", "mixtral-8x22b", "qwen2-57b-a14b", "qwen3-235b-a22b", "deepseek-v3")
ROUTING_NAMES = {"plain": "every copy on its own", "per_node": "one copy per node (DeepEP)"}


# -- the graded keys (every number from course.core) ------------------------------------------------

def expert_state_gb(s: Spec) -> float:
    """Act I key: weights, gradients and Adam state of the routed experts on one GPU, in GB.

    Experts over EP x PP (:func:`course.core.expert_params_per_gpu`), ZeRO-1 over the expert-data-parallel
    copies EDP = stage GPUs / EP (:func:`course.core.model_state_bytes`: 2 + 2 + 12 / EDP bytes per weight)."""
    model = catalog.model(s["act1_model"])
    per_gpu = core.expert_params_per_gpu(model.routed_expert_params, s["act1_ep"], 1, s["act1_pp"])
    edp = core.expert_data_parallel_size(1, 1, s["act1_stage_gpus"], s["act1_ep"])
    return float(core.model_state_bytes(per_gpu, zero_stage=1, dp=edp)) / GB


def alltoall_parts(s: Spec) -> Dict[str, float]:
    """Act II: NVLink and network seconds of one MoE layer's all-to-alls (4 per micro-batch) on one GPU of
    the student's job, EP ranks packed 8 per node, links at their catalog bandwidth per direction."""
    model = catalog.model(s["act2_model"])
    nvlink, network = catalog.link(s["act2_nvlink"]), catalog.link(s["act2_network"])
    nv, net = core.moe_all_to_all_parts_per_layer(
        s["act2_tokens"], model.hidden, model.top_k, s["act2_ep"], 8, nvlink.bandwidth, network.bandwidth,
        nvlink.latency, network.latency, per_node=s["act2_routing"] == "per_node")
    return {"nvlink": float(nv), "network": float(net)}


def alltoall_ms(s: Spec) -> float:
    """Act II key: the all-to-all time of one MoE layer and micro-batch, in ms
    (:func:`course.core.moe_all_to_all_time_per_layer`)."""
    model = catalog.model(s["act2_model"])
    nvlink, network = catalog.link(s["act2_nvlink"]), catalog.link(s["act2_network"])
    return 1e3 * float(core.moe_all_to_all_time_per_layer(
        s["act2_tokens"], model.hidden, model.top_k, s["act2_ep"], 8, nvlink.bandwidth, network.bandwidth,
        nvlink.latency, network.latency, per_node=s["act2_routing"] == "per_node"))


def straggler_numbers(s: Spec) -> Dict[str, float]:
    """Act III: the hottest expert's load, the busiest rank's factor and its share of the step (dropless)."""
    hottest = float(core.skewed_expert_loads(s["act3_experts"], s["act3_skew"])[0])
    factor = float(core.straggler_factor(hottest, s["act3_experts"], s["act3_ep"]))
    return {"hottest": hottest, "factor": factor,
            "share": float(core.straggler_step_share(factor, s["act3_share"]))}


def straggler_share_percent(s: Spec) -> float:
    """Act III key: the share of the step every rank waits for the busiest one, in percent."""
    return 100.0 * straggler_numbers(s)["share"]


# -- the story's numbers (what the reveals state) ---------------------------------------------------

def story_plan(s: Spec, model: str, ep: int = 1, **extra):
    """The planner's view of the team's job for ``model`` at expert parallelism ``ep``."""
    return core.plan(model, s["cluster"], tp=1, pp=1, dp=s["gpus"], micro_batch=s["micro_batch"],
                     num_microbatches=s["microbatches"], zero_stage=s["zero_stage"], recompute=s["recompute"],
                     ep=ep, **extra)


def act1_numbers(s: Spec) -> Dict[str, float]:
    dense, sparse, spread = story_plan(s, s["dense"]), story_plan(s, s["moe"]), story_plan(s, s["moe"], s["story_ep"])
    moe = catalog.model(s["moe"])
    return {"dense_gb": dense.memory_total / GB, "moe_gb": sparse.memory_total / GB, "spread_gb": spread.memory_total / GB,
            "dense_s": dense.step_time, "moe_s": sparse.step_time, "spread_s": spread.step_time,
            # the range each step sits in (the planner's uncertain assumptions) and what drives the MoE one
            "dense_low": dense.step_time_low, "dense_high": dense.step_time_high, "moe_low": sparse.step_time_low,
            "moe_high": sparse.step_time_high, "moe_driver": sparse.range_driver,
            "spread_a2a_s": spread.ep_comm, "capacity_gb": sparse.memory_capacity / GB,
            "total_b": moe.params / 1e9, "active_b": moe.active_params / 1e9, "experts_b": moe.routed_expert_params / 1e9,
            "dense_weights_gb": dense.weights / GB, "moe_weights_gb": sparse.weights / GB,
            "spread_weights_gb": spread.weights / GB}


def act2_numbers(s: Spec) -> Dict[str, dict]:
    """Step time (s) of the story's job at each EP of ``act2_story_eps``: plain all-to-all, DeepEP's one copy per
    node, and DeepEP with the all-to-all overlapped (the planner's ``dispatcher`` and ``ep_overlap``)."""
    out: Dict[str, Dict[int, float]] = {"plain": {}, "deepep": {}, "overlap": {}, "a2a": {}}
    ranges: Dict[str, Dict[int, tuple]] = {"plain": {}, "deepep": {}, "overlap": {}}
    for ep in s["act2_story_eps"]:
        plans = {"plain": story_plan(s, s["moe"], ep), "deepep": story_plan(s, s["moe"], ep, dispatcher="deepep"),
                 "overlap": story_plan(s, s["moe"], ep, dispatcher="deepep", ep_overlap=True)}
        out["a2a"][ep] = plans["plain"].ep_comm
        for kind, p in plans.items():
            out[kind][ep], ranges[kind][ep] = p.step_time, p.step_time_range
    out["range"] = ranges  # (low, high) seconds beside each step: the planner's uncertain assumptions
    return out


def act3_numbers(s: Spec) -> Dict[str, float]:
    e, ep, hot, x = s["act3_story_experts"], s["act3_story_ep"], s["act3_story_hot"], s["act3_story_share"]
    factor = float(core.straggler_factor(hot, e, ep))
    spread = float(core.straggler_factor(hot, e, 8))
    return {"factor": factor, "share": float(core.straggler_step_share(factor, x)), "longer": (factor - 1) * x,
            "factor_ep8": spread, "share_ep8": float(core.straggler_step_share(spread, x))}


# -- variants ---------------------------------------------------------------------------------------

def _spaced(rows: list, gap: float = 1.045) -> tuple:
    """The rows (key first) whose keys stand more than ``gap`` apart, smallest first (greedy)."""
    chosen: list = []
    for row in sorted(rows, key=lambda r: r[0]):
        if not chosen or row[0] / chosen[-1][0] > gap:
            chosen.append(row)
    return tuple(row[1:] for row in chosen)


def _act1_cases() -> tuple:
    """(model, EP, PP, stage GPUs) whose expert state lies between 2 and 60 GB, keys 4.5 % apart."""
    rows = []
    for name in MOE_MODELS:
        model = catalog.model(name)
        for ep in (8, 16, 32, 64, 128):
            for pp in (1, 2, 4, 8, 16):
                for stage in (64, 128, 256, 512):
                    if model.experts % ep or stage % ep or (ep, pp, stage) == (8, 1, 256) and name == SPEC["act1_model"]:
                        continue
                    s = dict(SPEC, act1_model=name, act1_ep=ep, act1_pp=pp, act1_stage_gpus=stage)
                    gb = expert_state_gb(s)
                    if 2.0 < gb < 60.0:
                        rows.append((gb, name, ep, pp, stage))
    return _spaced(rows)


def _act2_cases() -> tuple:
    """(model, EP, network, tokens, routing) of EP groups across nodes, keys 4.5 % apart."""
    rows = []
    for name in MOE_MODELS:
        model = catalog.model(name)
        for ep in (16, 32, 64):
            for network in ("InfiniBand HDR", "InfiniBand NDR", "InfiniBand XDR", "Ethernet 400G"):
                for tokens in (4096, 8192, 16384):
                    for routing in ("plain", "per_node"):
                        if model.experts % ep:
                            continue
                        s = dict(SPEC, act2_model=name, act2_ep=ep, act2_network=network, act2_tokens=tokens,
                                 act2_routing=routing)
                        if s == SPEC:
                            continue
                        rows.append((alltoall_ms(s), name, ep, network, tokens, routing))
    return _spaced(rows)


def _act3_cases() -> tuple:
    """(experts, EP, skew, expert share) with a hottest expert of at most 4x the mean and a straggler share of
    2 to 60 %, keys 4.5 % apart."""
    rows = []
    for e in (64, 128, 256):
        for ep in (8, 16, 32, 64, 128, 256):
            for skew in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7):
                for x in (0.3, 0.4, 0.5, 0.6):
                    if e % ep:
                        continue
                    s = dict(SPEC, act3_experts=e, act3_ep=ep, act3_skew=skew, act3_share=x)
                    n = straggler_numbers(s)
                    if n["hottest"] <= 4.0 and 0.02 <= n["share"] <= 0.6 and s != SPEC:
                        rows.append((n["share"], e, ep, skew, x))
    return _spaced(rows)


ACT1_CASES, ACT2_CASES, ACT3_CASES = _act1_cases(), _act2_cases(), _act3_cases()


def vary(s: Spec, rng: random.Random) -> Spec:
    """A student's own job for each graded question (the story and the locks keep the team's)."""
    s["act1_model"], s["act1_ep"], s["act1_pp"], s["act1_stage_gpus"] = rng.choice(ACT1_CASES)
    s["act2_model"], s["act2_ep"], s["act2_network"], s["act2_tokens"], s["act2_routing"] = rng.choice(ACT2_CASES)
    s["act3_experts"], s["act3_ep"], s["act3_skew"], s["act3_share"] = rng.choice(ACT3_CASES)
    return s


# -- prompts and solutions ----------------------------------------------------------------------------

def _act1_prompt(s: Spec) -> str:
    model = catalog.model(s["act1_model"])
    edp = s["act1_stage_gpus"] // s["act1_ep"]
    return (f"**Your team's layout.** `{model.name}` ({model.moe_layers} MoE layers of {model.experts} routed experts, "
            f"{model.routed_expert_params / 1e9:,.1f} B routed-expert weights in all) with EP = {s['act1_ep']} and "
            f"PP = {s['act1_pp']} on a job of {s['act1_stage_gpus'] * s['act1_pp']:,} GPUs (the story's job, "
            f"and the configurator's default, has {s['gpus']:,}): each pipeline stage has {s['act1_stage_gpus']} GPUs, so every expert has "
            f"EDP = {s['act1_stage_gpus']} / {s['act1_ep']} = {edp} copies, over which ZeRO-1 shards its Adam state. "
            "Assign `expert_state_gb`: the routed experts' BF16 weights, BF16 gradients and FP32 Adam state on one GPU, "
            "in GB, with the layers split evenly over the stages. `core.expert_params_per_gpu(...)` gives the weights "
            "one GPU holds; `core.model_state_bytes(params, zero_stage=1, dp=EDP)` their bytes (2 + 2 + 12/EDP per "
            "weight).")


def _act1_solution(s: Spec) -> str:
    return (f"model = core.catalog.model({s['act1_model']!r})\n"
            f"params = core.expert_params_per_gpu(model.routed_expert_params, {s['act1_ep']}, 1, {s['act1_pp']})\n"
            f"expert_state_gb = core.model_state_bytes(params, zero_stage=1, dp={s['act1_stage_gpus'] // s['act1_ep']}) / 1e9")


def _act2_prompt(s: Spec) -> str:
    model = catalog.model(s["act2_model"])
    network = catalog.link(s["act2_network"])
    nodes = s["act2_ep"] // 8
    return (f"**Your job's all-to-all: read it off the explorer.** `{model.name}` (h = {model.hidden:,}, top-{model.top_k}) "
            f"with EP = {s['act2_ep']}, eight EP ranks per node ({nodes} nodes), NVLink 4 inside a node and "
            f"{network.name} ({network.bandwidth / GB:g} GB/s per direction per GPU) between nodes; each GPU dispatches "
            f"{s['act2_tokens']:,} tokens per micro-batch, routing *{ROUTING_NAMES[s['act2_routing']]}*. Set the "
            "explorer's model, EP, EP per node (8), network, tokens, top-k and routing to yours and assign "
            "`alltoall_ms`: the all-to-all time of one MoE layer and micro-batch (dispatch and combine, forward and "
            "backward), in milliseconds (`explorer.result['all_to_all_seconds']` holds it in seconds).")


def _act2_solution(s: Spec) -> str:
    model = catalog.model(s["act2_model"])
    return ("from course.core import catalog\n"
            f"explorer.controls['model'].value = {s['act2_model']!r}\n"
            f"explorer.controls['ep'].value = {s['act2_ep']}\n"
            "explorer.controls['ranks_per_node'].value = 8\n"
            f"explorer.controls['nvlink'].value = {s['act2_nvlink']!r}\n"
            f"explorer.controls['network'].value = {s['act2_network']!r}\n"
            f"explorer.controls['tokens'].value = {s['act2_tokens']}\n"
            f"explorer.controls['top_k'].value = {model.top_k}\n"
            f"explorer.controls['routing'].value = {s['act2_routing']!r}\n"
            "alltoall_ms = explorer.result['all_to_all_seconds'] * 1e3")


def _act3_prompt(s: Spec) -> str:
    return (f"**Your router.** A layer of E = {s['act3_experts']} experts on EP = {s['act3_ep']} GPUs "
            f"({s['act3_experts'] // s['act3_ep']} experts per GPU), dropless, with expert popularity skew "
            f"s = {s['act3_skew']:g}; expert compute is {s['act3_share']:.0%} of a balanced step. Set the expert-load "
            "view to these numbers (dropless on) and assign `straggler_share_pct`: the share of the step, in percent, "
            "that every other rank waits for the busiest one (`load.result['straggler_share']` holds it as a "
            "fraction). The view's math peek shows the formula.")


def _act3_solution(s: Spec) -> str:
    return (f"load.controls['experts'].value = {s['act3_experts']}\n"
            f"load.controls['ep'].value = {s['act3_ep']}\n"
            f"load.controls['skew'].value = {s['act3_skew']!r}\n"
            "load.controls['dropless'].value = True\n"
            f"load.controls['expert_share'].value = {s['act3_share']!r}\n"
            "straggler_share_pct = load.result['straggler_share'] * 100")


# -- the acts -----------------------------------------------------------------------------------------

def _act1_reveal(s: Spec) -> str:
    x = act1_numbers(s)
    return (
        f"**Pure data parallelism keeps every expert on every GPU.** The sparse twin holds {x['total_b']:.1f} B weights "
        f"but a token meets only {x['active_b']:.1f} B of them, so the FLOPs per step hardly move: the planner gives "
        f"{x['moe_s']:.2f} s per step against {x['dense_s']:.2f} s for the dense 8B (the rest is the expert "
        f"weights streamed from HBM for few tokens each, and the host launching the kernels of 64 local experts in "
        f"every layer: NVIDIA measured MoE steps waiting on the host there). Each is a point in a range, {x['moe_low']:.2f}-"
        f"{x['moe_high']:.2f} s and {x['dense_low']:.2f}-{x['dense_high']:.2f} s, that follows from what the planner "
        f"is unsure of (for the sparse twin most of all its {x['moe_driver']} assumption). Memory follows the *total*: {x['moe_weights_gb']:.0f} GB of "
        f"BF16 weights alone (2 bytes x {x['total_b']:.1f} B) and as much again of gradients, {x['moe_gb']:.0f} GB per GPU "
        f"against {x['dense_gb']:.0f} GB, far beyond the {x['capacity_gb']:.1f} GB an H100 can allocate.\n\n"
        f"**Now spread the experts.** Set EP = {s['story_ep']} in the configurator: each GPU of a node keeps one eighth "
        f"of every layer's experts, {x['spread_weights_gb']:.0f} GB of weights, as the dense model ({x['dense_weights_gb']:.0f} GB), "
        f"and the job fits at {x['spread_gb']:.1f} GB. The price moved to the network inside the node: every MoE layer now "
        f"runs two all-to-alls forward (dispatch the tokens to their experts' GPUs, combine the results back) and two "
        f"backward, plus the forward pair again under full recomputation: {x['spread_a2a_s']:.2f} s of the "
        f"{x['spread_s']:.2f} s step. Sparse is cheap in FLOPs, not in bytes: either memory (replicated experts) or "
        f"communication (expert parallelism) pays for the parameters a token does not use.\n\n"
        "**Math peek.** Memory per GPU = 2 + 2 + 12/EDP bytes per expert weight it holds, with "
        "P_experts / (EP x PP) expert weights per GPU; compute per token = 6 x *active* weights.")


def _act2_reveal(s: Spec) -> str:
    x = act2_numbers(s)
    eps = s["act2_story_eps"]
    plain, deepep, overlap = (", ".join(f"EP {ep}: {x[kind][ep]:.2f} s (range {x['range'][kind][ep][0]:.2f}-"
                                        f"{x['range'][kind][ep][1]:.2f} s)" for ep in eps)
                              for kind in ("plain", "deepep", "overlap"))
    return (
        f"**The wall is the edge of the NVLink domain.** Step time of the team's job with plain all-to-alls: {plain}. "
        f"Up to EP {eps[0]} every copy of a token stays on 450 GB/s NVLink; at EP {eps[1]} half of the eight copies "
        f"of each token cross 50 GB/s InfiniBand, and the all-to-all grows from {x['a2a'][eps[0]]:.2f} s to "
        f"{x['a2a'][eps[1]]:.2f} s per step. Beyond that the share of copies leaving the node only creeps from 1/2 "
        "towards 1, so the curve bends but keeps rising.\n\n"
        f"**What DeepEP buys.** Sending one copy per remote *node* and forwarding it over NVLink there (DeepEP's "
        f"normal kernels) gives {deepep}; overlapping the all-to-all of one micro-batch with the expert compute of "
        f"another as well gives {overlap}, credited with the share of the ideal overlap NVIDIA measured for "
        f"Megatron-Core (37 %; the range runs from none to all of it). "
        "The limits: overlap hides at most the compute that runs beside it (the explorer's *all-to-all bound* state "
        "is where it no longer can), it needs at least two micro-batches in flight and SMs for the communication "
        "kernels, and one copy per node only helps while a token's experts share nodes, which node-limited routing "
        "enforces (Act III).")


def _act3_reveal(s: Spec) -> str:
    x = act3_numbers(s)
    return (
        f"**The busiest GPU sets the pace.** With one expert per GPU the hot expert's GPU computes {x['factor']:g}x "
        f"the mean while the other {s['act3_story_experts'] - 1} finish early and wait at the combine all-to-all: "
        f"the expert part of the step stretches {x['factor']:g}-fold, so the step grows by "
        f"({x['factor']:g} - 1) x {100 * s['act3_story_share']:.0f} % = {100 * x['longer']:.0f} %, and "
        f"{100 * x['share']:.1f} % of the new step is waiting. With eight experts per GPU (EP 8) the hot one shares "
        f"its GPU with seven average ones: factor {x['factor_ep8']:.3f}, waiting {100 * x['share_ep8']:.1f} %.\n\n"
        "**Three ways out, each with a price.** A *capacity factor* C caps every expert at C x its mean load: the "
        "pace is set by C, and the tokens above it are dropped (they skip the layer, through the residual), which "
        "costs quality. An *auxiliary balancing loss* pushes the router towards even loads, at the price of a "
        "gradient that competes with the language-modelling loss; DeepSeek-V3's *auxiliary-loss-free* balancing "
        "instead adds a per-expert bias to the routing scores only, raised for under-loaded experts and lowered for "
        "over-loaded ones after each step. *Node-limited routing* (a token's experts on at most M nodes) cuts the "
        "network copies of Act II, but forbids some expert choices a token would have made.")


ACT1 = Act(
    "act1", "The sparse twin",
    lock=Lock(
        question="Trained exactly like the dense 8B (pure data parallelism, every GPU keeps the whole model), how do "
                 "the sparse twin's memory per GPU and step time compare with the dense model's?",
        options={"same-both": "both about the same: only the active weights count",
                 "memory-up": "memory about 5x; step time up, but far from 5x",
                 "step-up": "memory about the same; step time about 5x",
                 "both-up": "memory and step time both about 5x"},
        correct="memory-up",
        # the mechanism the right option names: a token meets the dense model's weights, the layer stores all
        banned=("exactly as many MLP weights", "stores eight times", "Sparse is not free", "Memory follows the total",
                "compute the active", "compute of a small", "not in bytes", "as many weights as the dense", "paid in memory"),
        explanation="Memory follows the weights a GPU stores (all of them, with their gradients); compute follows "
                    "the weights a token passes through, the same as the dense model's.",
        reveal=_act1_reveal(SPEC)),
    captions={"act1_configurator": (
        "Switch the configurator's model between `llama3-8b` and `llama3-8b-moe` to compare them, then raise "
        "**EP**, the expert-parallel size: the experts of each layer are split over EP GPUs, and every token "
        "travels to the GPUs of its experts and back.")},
    answers=(Answer("act1_expert_state", "expert_state_gb", "Act I: expert state per GPU of your layout", "GB",
                    _act1_prompt, expert_state_gb, _act1_solution, graded="within 2 % of the key", after_lock=True),),
    reflections=(Reflection(
        "act1_why",
        "EP = 8 brought the sparse twin's weights per GPU back to the dense model's. Why can raising EP further not make "
        "the MoE as cheap as the dense 8B, and what limits how far EP can go?",
        "EP trades memory for communication: each doubling of EP halves the expert weights per GPU but sends a larger "
        "share of every token's k copies to other GPUs, over NVLink and then over the network, four times per layer. "
        "EP cannot exceed the number of experts per layer (64 here), and beyond one node the all-to-all runs at network "
        "speed; the expert GEMMs also see more tokens per expert (good for efficiency) only while EP grows.",
        "1 point: memory vs all-to-all traffic trade-off (EP splits experts, adds dispatch/combine). 1 point: a limit "
        "(EP <= experts, or the node boundary / network speed)."),),
)

ACT2 = Act(
    "act2", "Spreading the experts",
    lock=Lock(
        question="Keep the twin's job and raise EP from 8 (one node) to 16, 32 and 64 (2, 4 and 8 nodes). How does "
                 "the step time move?",
        options={"falls": "it falls steadily, since more GPUs share each expert",
                 "jumps": "it jumps when the experts first span two nodes",
                 "flat": "it stays flat: each GPU sends the same bytes at any EP",
                 "rises-past-32": "it rises only past 32, where per-peer latency adds up"},
        correct="jumps",
        banned=("all-to-all wall", "beyond one NVLink domain", "a larger one spans nodes", "edge of the NVLink",
                "spans nodes, a large share", "crosses the network", "The wall is"),
        explanation="Inside one node the dispatch rides NVLink; the first EP that spans nodes sends a large share of "
                    "each token's copies over the network, about a ninth of NVLink's bandwidth.",
        reveal=_act2_reveal(SPEC)),
    captions={
        "act2_explorer": (
            "The explorer below draws the all-to-all time of one MoE layer against EP, split into what crosses "
            "NVLink and what crosses the network (both run at once; the longer sets the time), next to the expert "
            "compute of the layer. Its controls: the EP ranks per node (placement), the links, the tokens each GPU "
            "dispatches, top-k, the routing (every copy on its own; *one copy per node*, forwarded over NVLink "
            "there, as DeepEP's kernels do; or *node-limited*, a token's experts on at most M nodes), PP and "
            "*overlap* with expert compute."),
        "act2_failures": (
            "Find both failure states: **all-to-all bound** (the exposed all-to-all outlasts the expert compute: try "
            "Ethernet 100G at a large EP) and **experts do not fit** (the experts' state alone exceeds a GPU: try "
            "`deepseek-v3` at a small EP with PP 1). Then see what *one copy per node*, a node limit and *overlap* "
            "do, and where they stop helping. The configurator above shows the same job's whole step as you move "
            "its EP, its *Dispatch* (all-to-all or DeepEP) and its all-to-all overlap. (The explorer runs each link "
            "at its full bandwidth; the configurator's planner at the bandwidth NCCL collectives achieve on it, so "
            "its all-to-all is somewhat longer.)")},
    answers=(Answer("act2_alltoall", "alltoall_ms", "Act II: the all-to-all time of your job", "ms",
                    _act2_prompt, alltoall_ms, _act2_solution, graded="within 2 % of the key", after_lock=True),),
    reflections=(Reflection(
        "act2_why",
        "Drive the explorer into *all-to-all bound* and then out of it again without lowering EP. Which controls did "
        "you use, what did each cost, and which one stops working first as EP grows?",
        "Out of it: one copy per node (DeepEP) or node-limited routing cut the network bytes per token; overlap hides "
        "the all-to-all behind expert compute, up to that compute; a faster network (XDR) or more tokens per GPU "
        "(more compute to hide behind, at more activation memory) help too. Costs: node limits restrict routing "
        "(quality), overlap needs micro-batches in flight and SMs, more tokens need memory. Overlap stops working "
        "first: once the all-to-all exceeds the expert compute, the excess is exposed whatever is overlapped.",
        "1 point: names two levers with their cost. 1 point: overlap cannot hide more than the compute beside it."),),
)

ACT3 = Act(
    "act3", "The hot expert",
    lock=Lock(
        question="64 experts, one per GPU, dropless. The router sends one expert twice its fair share of tokens; the "
                 "other 63 share the rest evenly. Expert compute was 40 % of a balanced step. How much longer is "
                 "the step?",
        # a scale of five, shown as four neighbours, smallest first or largest first (so the right one may sit at
        # either end); every option works with the question's numbers
        options={"none": "no longer: the other 63 finish early and the mean load is unchanged",
                 "tiny": "about 0.6 % longer: (2 − 1) × 40 % shared out over 64 GPUs",
                 "half": "about 20 % longer: the extra tokens are half the hot expert's load, ½ × 40 %",
                 "expert-part": "about 40 % longer: (2 − 1) × 40 % of the balanced step",
                 "double": "about 100 % longer: 2 × the whole balanced step"},
        correct="expert-part", ordered=True, shown=4, legacy=("tiny", "expert-part", "none", "double", "half"),
        banned=("busiest GPU sets the pace", "busiest expert sets the pace", "waits for the GPU of its hottest",
                "cannot finish before the slowest", "waits for the busiest"),
        explanation="The combine all-to-all cannot finish before the slowest GPU, so every GPU waits for the one with "
                    "twice the tokens: the expert part doubles, the rest of the step does not.",
        reveal=_act3_reveal(SPEC)),
    answers=(Answer("act3_straggler", "straggler_share_pct", "Act III: your straggler expert's share of the step",
                    "percent", _act3_prompt, straggler_share_percent, _act3_solution, graded="within 2 % of the key",
                    after_lock=True),),
    reflections=(
        Reflection(
            "act3_why",
            "Set the expert-load view to your router and turn *dropless* off. Find the capacity factor at which the "
            "step is no slower than dropless and the one at which no tokens are dropped. Which would you train with, "
            "and why?",
            "Below the busiest rank's factor a capacity C makes the step faster than dropless but drops the overflow "
            "of the hot experts (they skip the layer, a quality loss); above the hottest expert's load nothing is "
            "dropped but every expert pads to C, so the step is slower than dropless. Modern runs train dropless "
            "(or with C about 1.0-1.25 plus balancing) and fix the skew with balancing rather than capacity.",
            "1 point: reads both factors off the view (speed vs dropped tokens). 1 point: a reasoned choice naming "
            "the quality cost of dropping or the padding cost of a large C."),
        Reflection(
            "act3_design",
            "**Design.** Lay out DeepSeek-V3 (671 B weights, 256 routed experts of 2,048 plus one shared, top-8) on "
            "the 2,048 H800s of its report (8 per node, NVLink 160 GB/s achieved, InfiniBand 50 GB/s per GPU), or "
            "Qwen3-235B-A22B (128 experts, top-8) on 2,048 H100s. Choose EP and its placement (how many nodes), "
            "node-limited routing or not, a capacity factor or dropless, and the pipeline (PP and micro-batches); "
            "check memory and step time in the configurator (load the model and cluster) and defend each choice "
            "with a number from this lab's instruments.",
            "A defensible answer for DeepSeek-V3: PP 16, EP 64 over 8 nodes with at most 4 nodes per token "
            "(node-limited, one IB copy per node then NVLink), dropless with auxiliary-loss-free balancing, ZeRO-1 "
            "over the 2 expert copies, no TP; the all-to-all overlapped with compute (DualPipe); expert state per "
            "GPU about 0.64 B weights. Any layout that fits, keeps EP within the experts and justifies the "
            "network cost with node limits/overlap earns the points.",
            "1 point: a complete layout (EP, placement, routing, capacity, PP) that fits in memory. 1 point: each "
            "choice defended with a number (memory, all-to-all time or straggler share) from the instruments.",
            points=3.0),
    ),
)


#: each instrument of the notebook and the design-ledger entry it restores from and saves to
SAVED = {"configurator": "lab07/design", "explorer": "lab07/alltoall", "load": "lab07/expert_load"}


def layout(lab: Lab, s: Spec) -> List[Cell]:
    dense, moe = catalog.model(s["dense"]), catalog.model(s["moe"])
    return [
        Cell("markdown",
             "# Lab 07 · Mixtures of experts\n\n"
             "DeepSeek-V3, Qwen3, Mixtral and Llama 4 are *mixtures of experts* (MoE): each transformer block keeps "
             "many small MLPs, the experts, and a router sends every token to a few of them. This lab follows one "
             "team's model from a dense one to a sparse one in three acts: the sparse twin trained exactly like the "
             "dense model (Act I), its experts spread over more and more GPUs (Act II), and a router that does not "
             "share the tokens out evenly (Act III). Each act asks you to predict before its instrument appears.\n\n"
             "**Grading.** Each locked prediction earns a completion point (saved in `predictions.json` next to this "
             "notebook and submitted with it; a wrong prediction costs nothing). Numbers you assign are autograded; "
             "reflections are graded by hand. A cell marked *Your numbers* shows the question about your own job "
             "once its act is locked; you are graded on exactly those numbers.\n\n"
             "**Track.** Mixtures of experts are trained on GPU clusters, so this lab runs on the Cloud track only "
             "(Lab 05's Edge, Mobile and Tiny fleets have no experts to place).\n\n"
             "Units: GB = 10⁹ bytes; GB/s = 10⁹ bytes per second per direction."),
        Cell("setup", lab.setup_source(
            "from course import core\n"
            "from course.instruments import Configurator, AllToAllExplorer, ExpertLoadView\n"
            "from course.instruments.cards import stakeholder_card, HudFooter\n"
            "hud = HudFooter(prefix='lab07')"), "lab07_setup"),
        Cell("markdown",
             "## Act I · The sparse twin\n\n"
             f"The team trains Llama 3 8B on Lab 05's {s['gpus']:,} H100s (128 nodes of 8 on InfiniBand NDR). Its "
             f"sparse twin, `{moe.name}`, keeps the attention layers and replaces each of the {dense.layers} MLPs "
             f"(inner width {dense.ffn:,}) by a router and {moe.experts} *experts*, small MLPs of inner width "
             f"{moe.expert_ffn:,}; the router sends every token to its top {moe.top_k}.\n\n"
             f"**The job, for both models:** all {s['gpus']:,} GPUs, each running its own micro-batches (pure data "
             f"parallelism: TP = PP = 1, every GPU a whole copy of the model), {s['microbatches']} micro-batches of one "
             "8,192-token sequence per GPU and step, ZeRO-1 sharding Adam's state over the copies, and full "
             "recomputation (the backward pass recomputes each layer's activations)."),
        Cell("code", "stakeholder_card('ML lead', 'We want to swap our dense 8B for its sparse twin and change nothing '\n"
                     "                 'else: same GPUs, same recipe. What should we expect per GPU?', act='Act I')",
             "lab07_act1_story"),
        *lab.lock_cells("act1"),
        Cell("code", "configurator = lab.gate('act1', Configurator(model='llama3-8b-moe', cluster='h100-1024', tp=1, "
                     "pp=1,\n                                          microbatches=2, recompute='full', zero_stage=1, "
                     "ep=1))\n"
                     f"configurator.restore({SAVED['configurator']!r})\nconfigurator", "lab07_act1_configurator"),
        lab.caption_cell("act1_configurator"),
        lab.reveal_cell("act1"),
        *lab.answer_cells("act1_expert_state", s),
        *lab.reflection_cells("act1_why"),
        Cell("markdown",
             "## Act II · Spreading the experts\n\n"
             "With expert parallelism (EP) the experts of each layer are split over EP GPUs, and every MoE layer runs "
             "a *dispatch* (each GPU sends each token's hidden vector, h × 2 bytes, to the GPUs holding its k "
             "experts) and a *combine* (the results come back): an all-to-all each, in the forward and again in the "
             "backward pass. The team's nodes hold 8 H100s each, on NVLink 4 (450 GB/s per direction per GPU) "
             "inside a node and InfiniBand NDR (50 GB/s per direction per GPU) between nodes."),
        *lab.lock_cells("act2"),
        lab.caption_cell("act2_explorer"),
        Cell("code", "explorer = lab.gate('act2', AllToAllExplorer(model='llama3-8b-moe', tokens=8192))\n"
                     f"explorer.restore({SAVED['explorer']!r})\nexplorer",
             "lab07_act2_explorer"),
        lab.caption_cell("act2_failures"),
        lab.reveal_cell("act2"),
        *lab.answer_cells("act2_alltoall", s),
        *lab.reflection_cells("act2_why"),
        Cell("markdown",
             "## Act III · The hot expert\n\n"
             "Routers are trained, and they play favourites: for a while some experts get far more than their share "
             "of tokens. A *dropless* MoE computes every token, however many land on one expert. A *capacity "
             "factor* C instead gives every expert a buffer of C times its mean load, and the tokens beyond it skip "
             "the expert (the residual connection carries them on).\n\n"
             "The view below models popularity with one knob, a skew s: the i-th most popular expert gets a share "
             "proportional to 1/iˢ (a Zipf law; s = 0 is a perfectly balanced router). It is a model to think with, "
             "not a measurement."),
        *lab.lock_cells("act3"),
        Cell("code", "load = lab.gate('act3', ExpertLoadView(experts=64, ep=64))\n"
                     f"load.restore({SAVED['load']!r})\nload", "lab07_act3_load"),
        lab.reveal_cell("act3"),
        *lab.answer_cells("act3_straggler", s),
        *lab.reflection_cells("act3_why"),
        *lab.reflection_cells("act3_design"),
        Cell("markdown", "## Ledger and HUD\n\nSave the instruments as you left them (with the failure states they "
                         "showed) to the design ledger; the HUD sums up this lab's entries."),
        Cell("code", "".join(f"{name}.record()\n" for name in SAVED) + "hud.refresh()\nhud", "lab07_hud"),
    ]


ACTIVITY = LAB = Lab(NAME, "lab07", "Lab 07 · Mixtures of experts", SPEC, (ACT1, ACT2, ACT3), layout, vary)

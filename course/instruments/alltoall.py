"""All-to-all explorer (Lab 07, Act II): where the dispatch and combine of a mixture of experts spend their time.

Each MoE layer sends every token's hidden vector to the GPUs of its ``k`` experts (dispatch) and
back (combine), forward and backward: four all-to-alls per layer and micro-batch. Inside one
NVLink domain they run at NVLink speed; once the expert-parallel group spans nodes, the copies for
other nodes cross the network. The explorer draws the per-layer all-to-all time against EP, split
into its NVLink part and its network part (they run at the same time: the longer one sets the time),
next to the layer's expert compute, and flags the two failure states of Act II:

* ``all_to_all_bound``: the all-to-all left on the critical path is longer than the expert
  compute of the layer (overlap hides at most that compute);
* ``experts_do_not_fit``: the experts' weights, gradients and Adam state (ZeRO-1 over the expert's copies) on one
  GPU exceed its memory.

Every number comes from ``course.core`` (:func:`~course.core.expert_load.moe_all_to_all_parts_per_layer`,
:func:`~course.core.moe.moe_all_to_all_time_per_layer`, :func:`~course.core.expert_load.moe_mlp_train_flops`,
:func:`~course.core.moe.expert_data_parallel_size`,
:func:`~course.core.expert_load.exposed_all_to_all_time`, :func:`~course.core.moe.expert_params_per_gpu`,
:func:`~course.core.memory.model_state_bytes`). Links run at their catalog bandwidth per direction
(an upper bound on what an all-to-all achieves).
"""

from __future__ import annotations

import bqplot as bq
import ipywidgets as widgets
import numpy as np

from .. import core
from ..core import catalog
from ..theme import mark_color
from .base import Instrument, figure, fmt_bytes, fmt_memory, fmt_rate, fmt_time
from .charts import UNNAMED
from .controls import LogIntSlider

__all__ = ["AllToAllExplorer", "GPU_CHOICES", "MOE_MODELS", "EP_CHOICES", "NVLINK_CHOICES", "NETWORK_CHOICES", "ROUTING_CHOICES",
           "EXPLORER_NODE"]

#: Mixtures of experts in the catalog the explorer offers (their hidden size, top-k and expert count).
MOE_MODELS = ("llama3-8b-moe", "mixtral-8x7b", "mixtral-8x22b", "qwen2-57b-a14b", "qwen3-235b-a22b", "deepseek-v3")
EP_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
NVLINK_CHOICES = ("NVLink 4", "NVLink 4 (H800)", "NVLink 5", "PCIe Gen5 x16")
NETWORK_CHOICES = ("InfiniBand NDR", "InfiniBand HDR", "InfiniBand XDR", "Ethernet 400G", "Ethernet 100G")
#: how a token's copies travel: each on its own, one per remote node forwarded over NVLink (DeepEP's
#: normal kernels), or one per node on at most ``node_limit`` nodes (DeepSeek-V3's node-limited routing)
ROUTING_CHOICES = (("every copy on its own", "plain"), ("one copy per node (DeepEP)", "per_node"),
                   ("node-limited (at most M nodes)", "node_limited"))
#: the server whose GPU (compute, memory) the explorer prices: a DGX H100
EXPLORER_NODE = catalog.node("DGX H100")
#: cluster sizes the explorer offers (whole 8-GPU nodes); ZeRO-1 shards each expert's Adam state over its copies
GPU_CHOICES = (64, 128, 256, 512, 1024, 2048, 4096)
#: EP ranks per node the placement control offers (8 = packed into NVLink domains, 1 = one per node)
RANKS_PER_NODE_CHOICES = (8, 4, 2, 1)


def _nice_top(value: float) -> float:
    """The next of 1, 2, 5 x 10^n above ``value`` (0 -> 1): an axis top that changes in steps.

    >>> _nice_top(3.2), _nice_top(46.4), _nice_top(0.0)
    (5.0, 50.0, 1.0)
    """
    if value <= 0:
        return 1.0
    decade = 10.0 ** np.floor(np.log10(value))
    return float(next(m * decade for m in (1, 2, 5, 10) if m * decade >= value))


class AllToAllExplorer(Instrument):
    """Per-layer all-to-all time of a mixture of experts vs expert parallelism, NVLink and network parts apart.

    Controls: ``model``, ``ep``, ``ranks_per_node`` (placement: EP ranks per 8-GPU node), ``nvlink``,
    ``network``, ``tokens`` (tokens one GPU dispatches per micro-batch), ``top_k``, ``routing``,
    ``node_limit`` (M of node-limited routing), ``pp`` (pipeline stages sharing the layers), ``gpus`` (the
    cluster: each expert has ``gpus / pp / ep`` copies, over which ZeRO-1 shards its Adam state),
    ``overlap`` (hide the all-to-all behind expert compute). ``result``: the NVLink and network
    seconds per layer, the all-to-all time, the exposed part, the expert compute per layer, tokens per
    expert, expert state per GPU (bytes) and the failure codes.
    """

    title = "All-to-all explorer"
    subtitle = ("Dispatch and combine of one MoE layer (forward and backward) on one GPU: the NVLink part and the "
                "network part run at once; the longer one sets the time.")
    benchmark_control = "tokens"

    def build(self):
        self.add_control("model", widgets.Dropdown(options=MOE_MODELS, value="llama3-8b-moe", description="Model"))
        self.add_control("ep", widgets.SelectionSlider(options=EP_CHOICES, value=8, description="EP"))
        self.add_control("ranks_per_node", widgets.ToggleButtons(
            options=RANKS_PER_NODE_CHOICES, value=8, description="EP per node", style={"button_width": "36px"},
            tooltip="Placement: how many of the EP group's ranks share one 8-GPU NVLink domain (8 = packed, "
                    "1 = one per node)"))
        self.add_control("nvlink", widgets.Dropdown(options=NVLINK_CHOICES, value="NVLink 4", description="In node"))
        self.add_control("network", widgets.Dropdown(options=NETWORK_CHOICES, value="InfiniBand NDR",
                                                     description="Network"))
        self.add_control("tokens", LogIntSlider(value=8192, min=512, max=65536, description="Tokens/GPU"))
        self.add_control("top_k", widgets.IntSlider(value=8, min=1, max=16, description="Top-k"))
        self.add_control("routing", widgets.Dropdown(options=ROUTING_CHOICES, value="plain", description="Routing"))
        self.add_control("node_limit", widgets.IntSlider(value=4, min=1, max=8, description="Node limit M",
                                                         style={"description_width": "initial"}))
        self.add_control("pp", widgets.SelectionSlider(options=(1, 2, 4, 8, 16), value=1, description="PP"))
        self.add_control("gpus", widgets.SelectionSlider(options=[(f"{g:,}", g) for g in GPU_CHOICES], value=1024,
                                                         description="GPUs"))
        self.add_control("overlap", widgets.Checkbox(value=False, description="overlap with expert compute"))

        xs, ys = bq.OrdinalScale(), bq.LinearScale(min=0, max=1)
        self.time_scale = ys  # its top follows the tallest bar or the compute line (bqplot clips grouped bars)
        labels = [str(e) for e in EP_CHOICES]
        self.parts = bq.Bars(x=labels, y=np.zeros((2, len(labels))), type="grouped", scales={"x": xs, "y": ys},
                             colors=[mark_color("blue"), mark_color("orange")], labels=["NVLink part", "network part"],
                             display_legend=True, padding=0.25)
        self.compute = bq.Lines(x=labels, y=np.zeros(len(labels)), scales={"x": xs, "y": ys},
                                colors=[mark_color("green")], stroke_width=2, line_style="dashed",
                                labels=["expert compute of the layer"], display_legend=True)
        self.mine = bq.Scatter(**UNNAMED, x=["8"], y=[0.0], scales={"x": xs, "y": ys}, marker="diamond",
                               colors=[mark_color("ink")], default_size=110, labels=["your EP: exposed all-to-all"],
                               display_legend=True)  # what the "Exposed" card states (the bars are the whole)
        self.add_figure(figure([self.parts, self.compute, self.mine], xs, ys, "expert-parallel size EP",
                               "ms per MoE layer and micro-batch", title="All-to-all time vs EP", legend=True))
        for name, label in (("alltoall", "All-to-all per layer"), ("exposed", "Exposed"), ("compute", "Expert compute"),
                            ("tokens_per_expert", "Tokens per expert"), ("memory", "Expert state per GPU")):
            self.add_card(name, label)

    def describe(self, fig):
        """The chart in words, leading with the point: which link sets your EP's time, against the compute."""
        r = self.result
        if not r:
            return f"Chart: {fig.title}. No data."
        parts = "; ".join(f"EP {ep}: NVLink {nv * 1e3:.2f} ms, network {net * 1e3:.2f} ms"
                          for ep, nv, net in zip(r["curve_ep"], r["curve_nvlink"], r["curve_network"]))
        return (f"Chart: {fig.title}, milliseconds per MoE layer and micro-batch. Your EP {r['ep']}: NVLink part "
                f"{r['nvlink_seconds'] * 1e3:.2f} ms, network part {r['network_seconds'] * 1e3:.2f} ms, against "
                f"{r['compute_seconds'] * 1e3:.2f} ms of expert compute (dashed line). By EP: {parts}.")

    def refresh(self, v):
        model = catalog.model(v["model"])
        ep, k, tokens = int(v["ep"]), int(v["top_k"]), float(v["tokens"])
        r = min(int(v["ranks_per_node"]), ep)
        nvlink, network = catalog.link(v["nvlink"]), catalog.link(v["network"])
        gpu = EXPLORER_NODE.accelerator
        grid = np.array(EP_CHOICES)
        grid_r = np.minimum(r, grid)
        nodes = np.maximum(grid // grid_r, 1)
        routing = dict(groups=None, group_topk=None, per_node=v["routing"] == "per_node")
        if v["routing"] == "node_limited":  # a group is a node: the token picks its experts on at most M nodes
            routing = dict(groups=nodes, group_topk=np.minimum(int(v["node_limit"]), nodes), per_node=True)
        args = (tokens, model.hidden, k, grid, grid_r, nvlink.bandwidth, network.bandwidth, nvlink.latency,
                network.latency)
        if v["routing"] == "node_limited":  # groups differ per EP: one call per EP (nine)
            parts = [core.moe_all_to_all_parts_per_layer(tokens, model.hidden, k, int(e), int(rr), nvlink.bandwidth,
                                                         network.bandwidth, nvlink.latency, network.latency,
                                                         groups=int(n), group_topk=int(g), per_node=True)
                     for e, rr, n, g in zip(grid, grid_r, nodes, routing["group_topk"])]
            nv, net = (np.array([p[i] for p in parts], float) for i in (0, 1))
        else:
            nv, net = (np.asarray(x, float) for x in core.moe_all_to_all_parts_per_layer(*args, **routing))
        a2a = np.maximum(nv, net)
        flops = float(core.moe_mlp_train_flops(tokens, model.hidden, model.expert_ffn, model.experts, k,
                                               model.shared_experts, model.shared_ffn or None, model.mlp_matrices))
        compute = float(core.compute_time(flops, gpu.peak_flops["bf16"] * core.DEFAULT_COMPUTE_EFFICIENCY))
        i = EP_CHOICES.index(ep)
        exposed = float(core.exposed_all_to_all_time(a2a[i], compute, bool(v["overlap"])))
        per_expert = float(core.tokens_per_expert(tokens, k, model.experts, ep))
        pp, gpus = int(v["pp"]), int(v["gpus"])
        expert_params = float(core.expert_params_per_gpu(model.routed_expert_params, ep, 1, pp))
        # every expert has EDP = (GPUs / PP) / EP copies; ZeRO-1 shards its Adam state over them
        edp = core.expert_data_parallel_size(1, 1, max(gpus // pp, 1), ep) if (gpus // pp) % ep == 0 else 1
        state = float(core.model_state_bytes(expert_params, zero_stage=1, dp=edp))
        capacity = gpu.memory_capacity

        top = _nice_top(1e3 * float(max(np.max(nv), np.max(net), compute)))
        if self.time_scale.max != top:  # a step of 1-2-5: most moves redraw the bars, not the axis
            self.time_scale.max = top
        self.set_marks(self.parts, y=np.vstack([nv, net]) * 1e3)
        self.set_marks(self.compute, y=np.full(grid.size, compute * 1e3))
        self.set_marks(self.mine, x=[str(ep)], y=[exposed * 1e3])
        bound = "network" if net[i] > nv[i] else "NVLink"
        self.set_card("alltoall", fmt_time(a2a[i]), f"{bound} sets it" if ep > 1 else "EP 1: no all-to-all")
        self.set_card("exposed", fmt_time(exposed), "after overlap" if v["overlap"] else "nothing overlapped",
                      "bad" if exposed > compute else "good" if exposed < 0.25 * compute else "warn")
        self.set_card("compute", fmt_time(compute),
                      f"forward + backward, {100 * core.DEFAULT_COMPUTE_EFFICIENCY:.0f} % of peak")
        self.set_card("tokens_per_expert", f"{per_expert:,.0f}", "tokens x EP x k / E")
        self.set_card("memory", fmt_bytes(state), f"of {fmt_memory(gpu)}", "bad" if state > capacity else "good")
        nodes_i = int(nodes[i])
        self.set_math(
            f"<b>Copies per token</b>: k = {k} experts on EP = {ep} ranks, {r} per node ({nodes_i} node"
            f"{'s' if nodes_i > 1 else ''}); {dict((b, a) for a, b in ROUTING_CHOICES)[v['routing']]}<br>"
            f"<b>All-to-all per layer</b> = 4 &times; max(T &middot; bytes<sub>NVLink</sub> / B<sub>NVLink</sub>, "
            f"T &middot; bytes<sub>network</sub> / B<sub>network</sub>) = max({fmt_time(nv[i])}, {fmt_time(net[i])}) = "
            f"{fmt_time(a2a[i])} (T = {tokens:,.0f} tokens, h = {model.hidden:,}, 2 bytes per element, "
            f"B = {fmt_rate(nvlink.bandwidth)} and {fmt_rate(network.bandwidth)})<br>"
            f"<b>Expert compute</b> = 3 &middot; 2 &middot; active MLP weights &middot; T / (peak &middot; {core.DEFAULT_COMPUTE_EFFICIENCY:g}) = "
            f"{fmt_time(compute)}; exposed all-to-all = "
            f"{'max(0, all-to-all &minus; compute)' if v['overlap'] else 'all-to-all'} = {fmt_time(exposed)}<br>"
            f"<b>Expert state per GPU</b> = (2 + 2 + 12/EDP) B &times; routed expert weights / (EP &middot; PP) = "
            f"(4 + 12/{edp}) B &times; {model.routed_expert_params / 1e9:,.1f} B / ({ep} &times; {pp}) = {fmt_bytes(state)} "
            f"(ZeRO-1 over the EDP = {gpus:,} / {pp} / {ep} copies of each expert)")
        if model.experts % ep:
            self.flag("experts_not_divisible", f"EP = {ep} cannot split the {model.experts} routed experts of each "
                                               "layer evenly.")
        if exposed > compute:
            self.flag("all_to_all_bound", f"The all-to-all left on the critical path ({fmt_time(exposed)}) is longer "
                                          f"than the layer's expert compute ({fmt_time(compute)}): the GPUs wait on "
                                          f"the {bound}.")
        if state > capacity:
            self.flag("experts_do_not_fit", f"The experts' weights, gradients and Adam state alone need "
                                            f"{fmt_bytes(state)} per GPU, more than {fmt_memory(gpu)}: raise EP or PP.")
        return {"model": model.name, "ep": ep, "ranks_per_node": r, "nodes": nodes_i, "top_k": k, "tokens": tokens,
                "routing": v["routing"], "nvlink_seconds": float(nv[i]), "network_seconds": float(net[i]),
                "all_to_all_seconds": float(a2a[i]), "exposed_seconds": exposed, "compute_seconds": compute,
                "tokens_per_expert": per_expert, "expert_state_bytes": state, "expert_dp": edp, "memory_capacity": capacity,
                "curve_ep": grid, "curve_nvlink": nv, "curve_network": net}

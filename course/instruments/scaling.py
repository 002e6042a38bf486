"""Data-parallel scaling explorer (Lab 05, Act I): why MFU falls as GPUs are added.

A model of ``P`` parameters is replicated on ``N`` GPUs; each GPU runs a
micro-batch of ``b`` sequences and then all GPUs average their gradients
(``2 P`` bytes of BF16 gradients). Every number comes from the core:

* compute per GPU: ``course.core.training_flops`` (6 P tokens) at a sustained
  share of the dense peak, ``course.core.compute_time``;
* the step at every GPU count: ``course.core.data_parallel_step_curve`` (ring
  in the node, two-level all-reduce across nodes, optional overlap with the
  backward pass in DDP's 25 MiB buckets, the planner's overlap term);
* MFU and ratio: ``mfu``, ``comm_compute_ratio``; model-state memory:
  ``model_state_bytes``.

The lab's version of this instrument used 1979 TFLOPS (sparse peak), 400 GB/s
InfiniBand and step FLOPs without the sequence length (errata 1, 2 and 5);
here the H100's dense 989 TFLOPS, 50 GB/s NDR ports and ``6 P b s`` are used.
"""

from __future__ import annotations

import html

import bqplot as bq
import ipywidgets as widgets
import numpy as np

from .. import core
from ..core import catalog
from ..theme import mark_color
from .base import Instrument, figure, fmt_bytes, fmt_memory, fmt_rate, fmt_time
from .charts import UNNAMED, integer_ticks, set_ticks
from .context import gpu_cluster_only
from .controls import LogIntSlider

__all__ = ["ScalingExplorer", "data_parallel_curve", "STAKEHOLDER_POINTS", "NODE_CHOICES", "SEQ_LEN", "CURVE_GPUS", "NVLINK_ONLY"]

#: The training lead's measurements in Lab 05 Act I: (GPUs, MFU).
STAKEHOLDER_POINTS = ((8, 0.52), (64, 0.38), (512, 0.19))
#: Tokens per sequence: Lab 05 Act I's 7B-class setting.
SEQ_LEN = 2048
#: Fabric option meaning "keep the traffic on NVLink" (only possible inside one node).
NVLINK_ONLY = "NVLink only"

NODE = catalog.node("DGX H100")
#: Nodes the explorer can switch between (all 8 GPUs per node, one NIC per GPU).
NODE_CHOICES = ("DGX H100", "DGX A100", "DGX B200")
GPUS_PER_NODE = NODE.gpus_per_node
#: Bytes of one bf16 gradient (the gradients all-reduced in data parallelism).
BF16_BYTES = core.precision_bytes("bf16")
#: GPU counts of the curve: every GPU count up to one node, then whole nodes.
CURVE_GPUS = np.concatenate([np.arange(1, GPUS_PER_NODE + 1),
                             np.arange(2 * GPUS_PER_NODE, 1024 + 1, GPUS_PER_NODE)])
GPU_CHOICES = tuple(2**k for k in range(11))  # 1 ... 1024 on a log axis
#: Model sizes (billions of parameters) the model slider steps through: GPT-3's 1.3B, 2.7B (rounded), 6.7B and
#: 13B, Llama 2's 7B, 13B and 70B, Llama 3's 8B, Code Llama's 34B, GPT-3's 175B (any whole number can be set).
MODEL_SIZES_B = (1, 3, 7, 8, 13, 34, 70, 175)
#: The fabric the explorer opens on: the DGX H100's own InfiniBand NDR ports, which works at every GPU count.
DEFAULT_FABRIC = "InfiniBand NDR"
FABRICS = (NVLINK_ONLY, "InfiniBand HDR", "InfiniBand NDR", "InfiniBand XDR", "Ethernet 100G", "Ethernet 400G")


def _fabric_options():
    options = [("NVLink 4 only (inside one node)", NVLINK_ONLY)]
    for name in FABRICS[1:]:
        link = catalog.link(name)
        options.append((f"{link.name} ({link.bandwidth / 1e9:g} GB/s per GPU)", name))
    return options


def data_parallel_curve(params, micro_batch, gpus, intra, inter, overlap, peak,
                        efficiency=None, gpus_per_node=None) -> dict:
    """Per-GPU step of pure data parallelism at each GPU count in ``gpus``: ``core.data_parallel_step_curve``.

    The explorer's inputs (``params``, sequences of ``SEQ_LEN`` tokens per GPU,
    catalog links) turned into the core's; ``gpus`` must hold counts up to one
    node and then whole nodes. Returns the core's dict plus FLOPs per GPU and
    the compute efficiency.

    Examples
    --------
    >>> c = data_parallel_curve(7e9, 1, np.array([1, 8, 64]), NODE.intra_link, NODE.inter_link, False, 989e12)
    >>> float(c["comm_seconds"][0]), bool(c["step_seconds"][2] > c["step_seconds"][1] > c["step_seconds"][0])
    (0.0, True)
    """
    eff = core.DEFAULT_COMPUTE_EFFICIENCY if efficiency is None else efficiency
    flops = core.training_flops(params, micro_batch * SEQ_LEN)
    curve = core.data_parallel_step_curve(flops, eff * peak, params * BF16_BYTES, gpus,
                                          GPUS_PER_NODE if gpus_per_node is None else gpus_per_node,
                                          intra.bandwidth, inter.bandwidth, intra.latency, inter.latency,
                                          overlap=overlap)
    return {**curve, "flops": float(flops), "efficiency": eff}


class ScalingExplorer(Instrument):
    """MFU vs GPU count for pure data parallelism, with the NVLink -> InfiniBand cliff.

    Controls: ``params_b`` (model size, billions of parameters), ``gpus`` (N),
    ``micro_batch`` (sequences of 2048 tokens per GPU per step), ``fabric``
    (what carries the all-reduce once it leaves a node; "NVLink only" is forced
    onto the node's InfiniBand beyond 8 GPUs), ``node`` (DGX H100, A100 or
    B200: faster GPUs, same network), ``zero_stage`` (0-2: ZeRO
    stages that keep all-reduce traffic) and ``overlap`` (bucketed overlap
    with the backward pass).

    ``result`` holds, at the selected N: compute, all-reduce, exposed
    communication and step times (s), MFU, comm/compute ratio, model-state bytes
    per GPU, and the whole MFU curve.
    """

    title = "Data-parallel scaling explorer"
    subtitle = "Same model, same batch per GPU, more GPUs: where does the utilization go?"

    def track_unsupported(self, track):
        return gpu_cluster_only(self.title[:1].lower() + self.title[1:], track)

    def build(self):
        # 1B to 175B spans two decades: a log slider through the sizes of published models
        self.add_control("params_b", LogIntSlider(value=7, min=1, max=175, stops=MODEL_SIZES_B, description="Model (B)"))
        self.add_control("gpus", widgets.SelectionSlider(options=[(f"{n:,}", n) for n in GPU_CHOICES], value=8,
                                                         description="GPUs N"))  # "1,024" as every count
        self.add_control("micro_batch", widgets.IntSlider(value=1, min=1, max=64, description="Seqs/GPU"))
        # opens on the node's own fabric: any GPU count is a working configuration (NVLink only is the
        # what-if that fails beyond one node)
        self.add_control("fabric", widgets.Dropdown(options=_fabric_options(), value=DEFAULT_FABRIC,
                                                    description="Fabric", layout=widgets.Layout(width="330px")))
        self.add_control("node", widgets.Dropdown(options=NODE_CHOICES, value=NODE.name, description="Node"))
        self.add_control("zero_stage", widgets.ToggleButtons(options=[0, 1, 2], value=1, description="ZeRO",
                                                             style={"button_width": "40px"}))
        self.add_control("overlap", widgets.Checkbox(value=False, description="overlap with backward"))

        xs = bq.LogScale(min=1, max=1024)
        ys = bq.LinearScale(min=0, max=70)
        self.curve = bq.Lines(x=CURVE_GPUS, y=np.zeros(CURVE_GPUS.size), scales={"x": xs, "y": ys},
                              colors=[mark_color("blue")], stroke_width=2.5, labels=["model"], display_legend=True)
        self.measured = bq.Scatter(**UNNAMED, x=[p[0] for p in STAKEHOLDER_POINTS], y=[100 * p[1] for p in STAKEHOLDER_POINTS],
                                   scales={"x": xs, "y": ys}, marker="cross", colors=[mark_color("orange")], default_size=120,
                                   labels=["measured (stakeholder)"], display_legend=True)
        self.current = bq.Scatter(**UNNAMED, x=[8], y=[0.0], scales={"x": xs, "y": ys}, marker="diamond",
                                  colors=[mark_color("red")], default_size=140, labels=["selected N"], display_legend=True)
        self.node_edge = bq.Lines(x=[GPUS_PER_NODE, GPUS_PER_NODE], y=[0, 70], scales={"x": xs, "y": ys},
                                  colors=[mark_color("gray")], line_style="dashed", stroke_width=1.5)
        self.edge_label = bq.Label(x=[GPUS_PER_NODE], y=[64], scales={"x": xs, "y": ys}, x_offset=4,
                                   text=["NVLink | InfiniBand"], colors=["var(--jp-ui-font-color1)"], font_weight="normal")
        # the stakeholder's crosses drawn last: at the N the student selects, the diamond lies under the cross
        fig = self.add_figure(figure([self.node_edge, self.edge_label, self.curve, self.current, self.measured],
                                     xs, ys, "GPUs (data-parallel replicas)", "MFU (%)", title="MFU vs GPU count",
                                     legend=True))
        set_ticks(fig.axes[0], integer_ticks(1, 1024, count=11))
        # "comm" is the all-reduce the step pays (its card says which algorithm); "ring" a flat ring over the
        # fabric, the all-reduce the lab's graded question and the comparator name
        for name, label in (("mfu", "MFU"), ("ratio", "Comm / compute"), ("comm", "All-reduce time"),
                            ("ring", "Flat ring all-reduce"), ("compute", "Compute time"),
                            ("memory", "Model states per GPU")):
            self.add_card(name, label)

    def refresh(self, v):
        params = float(v["params_b"]) * 1e9
        n = int(v["gpus"])
        b = int(v["micro_batch"])
        zero = int(v["zero_stage"])
        node = catalog.node(v["node"])
        if node.gpus_per_node != GPUS_PER_NODE:  # the curve's grid counts whole nodes of 8
            raise ValueError(f"node must have {GPUS_PER_NODE} GPUs per node; {node.name} has {node.gpus_per_node}")
        self.accelerator = node.accelerator
        self.peak = self.accelerator.peak_flops["bf16"]
        forced = v["fabric"] == NVLINK_ONLY and n > GPUS_PER_NODE
        inter = node.inter_link if v["fabric"] == NVLINK_ONLY else catalog.link(v["fabric"])
        intra = node.intra_link
        grad_bytes = params * BF16_BYTES

        curve = data_parallel_curve(params, b, CURVE_GPUS, intra, inter, bool(v["overlap"]), self.peak)
        flops, t_compute = curve["flops"], curve["compute_seconds"]
        t_comm, exposed, t_step = curve["comm_seconds"], curve["exposed_seconds"], curve["step_seconds"]
        mfu_curve = np.asarray(core.mfu(flops, t_step, self.peak), float)
        ratio_curve = np.asarray(core.comm_compute_ratio(t_comm, t_compute), float)

        i = int(np.flatnonzero(CURVE_GPUS == n)[0])
        mfu, ratio = float(mfu_curve[i]), float(ratio_curve[i])
        state_bytes = float(core.model_state_bytes(params, zero_stage=zero, dp=n))
        capacity = self.accelerator.memory_capacity  # what a process can allocate: the planner's line too
        # a flat ring over the fabric (every GPU on one ring), the algorithm Lab 05's question asks for
        ring = float(core.allreduce_time(grad_bytes, n, intra.bandwidth if n <= GPUS_PER_NODE else inter.bandwidth,
                                         intra.latency if n <= GPUS_PER_NODE else inter.latency, algorithm="ring"))

        # the divider names the links it separates now (the fabric is a control: Ethernet is not InfiniBand)
        self.set_marks(self.edge_label, text=[f"{intra.name.split(' (')[0]} | {inter.name.split(' (')[0]}"])
        self.set_marks(self.curve, y=100 * mfu_curve)
        self.set_marks(self.current, x=[n], y=[100 * mfu])
        self.set_card("mfu", f"{100 * mfu:.1f} %", f"at N = {n:,}", "good" if mfu >= 0.4 else "warn" if mfu >= 0.25 else "bad")
        self.set_card("ratio", f"{ratio:.2f}", "T_comm / T_compute", "good" if ratio <= 0.3 else "warn" if ratio <= 1 else "bad")
        if n <= GPUS_PER_NODE:
            self.set_card("comm", fmt_time(t_comm[i]), f"exposed {fmt_time(exposed[i])}",
                          label=f"All-reduce: ring on {intra.name}")
            self.set_card("ring", fmt_time(ring), f"the same ring, {intra.name}", "muted",
                          label="Flat ring all-reduce")
        else:
            self.set_card("comm", fmt_time(t_comm[i]), f"exposed {fmt_time(exposed[i])}",
                          label="All-reduce: hierarchical (node, then nodes)")
            self.set_card("ring", fmt_time(ring), f"all {n:,} GPUs on one ring over {inter.name}",
                          label="Flat ring all-reduce")
        self.set_card("compute", fmt_time(t_compute), f"{b} x {SEQ_LEN} tokens")
        self.set_card("memory", fmt_bytes(state_bytes), f"of {fmt_memory(self.accelerator)}",
                      "bad" if state_bytes > capacity else "normal")

        path = "ring on " + intra.name if n <= GPUS_PER_NODE else f"hierarchical: {intra.name} in node, {inter.name} across {n // GPUS_PER_NODE:,} nodes"
        self.set_math(
            f"<b>Compute</b> T<sub>c</sub> = 6&middot;P&middot;b&middot;s / (&eta;&middot;peak) = 6 &times; {params:.3g} &times; {b} &times; {SEQ_LEN}"
            f" / ({curve['efficiency']:.2f} &times; {self.peak / 1e12:g} TFLOP/s) = {fmt_time(t_compute)}<br>"
            f"<b>All-reduce</b> of 2P = {fmt_bytes(grad_bytes)} over N = {n:,} ({path}): T<sub>comm</sub> = {fmt_time(t_comm[i])}"
            + (f"; ring inside the node: 2(N&minus;1)/N &middot; M / B = 2&times;{n - 1}/{n} &times; {fmt_bytes(grad_bytes)} / {fmt_rate(intra.bandwidth)}" if 1 < n <= GPUS_PER_NODE else "")
            + (f"; across nodes each GPU's NIC carries 2(k&minus;1)/k &middot; (M/{GPUS_PER_NODE}) at {fmt_rate(inter.bandwidth)}" if n > GPUS_PER_NODE else "")
            + (f"<br><b>Flat ring</b> (every GPU on one ring over {inter.name}, what the comparator and the graded "
               f"question compute): 2(N&minus;1)&alpha; + 2(N&minus;1)/N &middot; M / B = {fmt_time(ring)}"
               if n > GPUS_PER_NODE else "")
            + f"<br><b>Step</b> T = T<sub>c</sub> + exposed comm = {fmt_time(t_compute)} + {fmt_time(exposed[i])} = {fmt_time(t_step[i])}"
            + ("" if not v["overlap"] else " (25 MiB buckets overlap the backward pass)")
            + f"<br><b>MFU</b> = 6&middot;P&middot;b&middot;s / (T &middot; peak) = {100 * mfu:.1f} %;"
            f" comm/compute = {fmt_time(t_comm[i])} / {fmt_time(t_compute)} = {ratio:.2f}"
            f"<br><b>Memory</b>: weights, gradients and Adam states {fmt_bytes(state_bytes)} per GPU, of the "
            f"{html.escape(self.accelerator.memory_name)} one {self.accelerator.name} holds"
        )
        if forced:
            self.flag("forced_onto_infiniband",
                      f"NVLink only connects the {GPUS_PER_NODE} GPUs inside one node. With {n:,} GPUs the gradient "
                      f"all-reduce crosses {n // GPUS_PER_NODE:,} nodes over {inter.name} at {fmt_rate(inter.bandwidth)} "
                      f"per GPU, {intra.bandwidth / inter.bandwidth:.0f}x less than NVLink's {fmt_rate(intra.bandwidth)}.",
                      severity="warn")
        if state_bytes > capacity:
            self.flag("out_of_memory",
                      f"Weights, gradients and Adam states alone need {fmt_bytes(state_bytes)} per GPU with ZeRO-{zero} "
                      f"on {n:,} GPUs, more than the {fmt_memory(self.accelerator)} of one {self.accelerator.name} "
                      f"(before any activations). Raise the ZeRO stage, add GPUs, or shard the model (Act II).")
        return {
            "gpus": n, "node": node.name, "accelerator": self.accelerator.name, "params": params, "micro_batch": b, "fabric": v["fabric"], "inter_link": inter.name,
            "forced_onto_infiniband": forced, "compute_seconds": float(t_compute), "comm_seconds": float(t_comm[i]),
            "ring_seconds": ring,
            "exposed_comm_seconds": float(exposed[i]), "step_seconds": float(t_step[i]), "mfu": mfu,
            "comm_compute_ratio": ratio, "model_state_bytes": state_bytes, "memory_bytes": capacity,
            "curve_gpus": CURVE_GPUS, "curve_mfu": mfu_curve,
        }

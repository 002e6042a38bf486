"""Scaling-efficiency plot (Lab 05 plan, Part 1): samples/s vs accelerators against the ideal line.

Weak scaling of data parallelism: every GPU keeps its micro-batch, so the
ideal is ``N`` times one GPU's throughput. The real curve pays the gradient
all-reduce on the fabric between nodes (Ethernet or InfiniBand). The point of
diminishing returns is where one more GPU adds less than half a GPU of
throughput: ``course.core.diminishing_returns_gpus`` (its docstring defines it
on a sampled curve). Step times come from the same core calls as the scaling
explorer (:func:`course.instruments.scaling.data_parallel_curve`); throughput,
speed-up and efficiency from ``samples_per_second``, ``speedup`` and
``scaling_efficiency``.

The lab plan's toggle says "Ethernet (10G) vs InfiniBand (400G)": 10 Gbit/s is
1.25 GB/s and 400 Gbit/s (NDR) is 50 GB/s per port, one port per GPU.
"""

from __future__ import annotations

import bqplot as bq
import ipywidgets as widgets
import numpy as np

from .. import core
from ..core import catalog
from ..theme import mark_color
from .base import Instrument, figure, fmt_rate, fmt_time
from .charts import UNNAMED
from .context import gpu_cluster_only
from .controls import LogIntSlider
from .scaling import GPUS_PER_NODE, NODE, data_parallel_curve

__all__ = ["EfficiencyPlot", "FABRIC_TOGGLE", "MAX_NODES", "CURVE_GPUS", "MARGINAL_THRESHOLD"]

FABRIC_TOGGLE = {"Ethernet 10G": "Ethernet 10G", "InfiniBand 400G": "InfiniBand NDR"}
MAX_NODES = 128
CURVE_GPUS = np.concatenate([np.arange(1, GPUS_PER_NODE + 1),
                             np.arange(2 * GPUS_PER_NODE, MAX_NODES * GPUS_PER_NODE + 1, GPUS_PER_NODE)])
#: Lab 05 plan: "less than a 0.5x marginal speedup".
MARGINAL_THRESHOLD = 0.5


class EfficiencyPlot(Instrument):
    """Throughput vs GPUs with the ideal line, Ethernet vs InfiniBand, and the point of diminishing returns.

    Controls: ``fabric`` (Ethernet 10G / InfiniBand 400G), ``nodes`` (the
    selected cluster size, 8 GPUs each), ``params_b``, ``micro_batch``
    (sequences per GPU) and ``overlap``. ``result``: throughput, speed-up and
    efficiency at the selected size, both fabrics' curves, and the point of
    diminishing returns (GPUs, or None when it lies beyond 128 nodes).
    """

    title = "Scaling efficiency"
    subtitle = "Samples per second vs accelerators: how far below the ideal line, and where does it stop paying?"

    def track_unsupported(self, track):
        return gpu_cluster_only(self.title[:1].lower() + self.title[1:], track)

    def build(self):
        self.peak = NODE.accelerator.peak_flops["bf16"]
        self.add_control("fabric", widgets.ToggleButtons(options=list(FABRIC_TOGGLE), value="InfiniBand 400G",
                                                         description="Fabric"))
        self.add_control("nodes", LogIntSlider(value=8, min=1, max=MAX_NODES, description="Nodes"))  # 1 .. 128: log
        self.add_control("params_b", widgets.IntSlider(value=7, min=1, max=70, description="Model (B)"))
        self.add_control("micro_batch", widgets.IntSlider(value=1, min=1, max=16, description="Seqs/GPU"))
        self.add_control("overlap", widgets.Checkbox(value=True, description="overlap with backward"))

        xs, ys = bq.LinearScale(min=0, max=float(CURVE_GPUS[-1])), bq.LinearScale(min=0)
        zeros = np.zeros(CURVE_GPUS.size)
        self.ideal = bq.Lines(x=CURVE_GPUS, y=zeros, scales={"x": xs, "y": ys}, colors=[mark_color("gray")],
                              line_style="dashed", labels=["ideal (N x one GPU)"], display_legend=True)
        self.other = bq.Lines(x=CURVE_GPUS, y=zeros, scales={"x": xs, "y": ys}, colors=[mark_color("orange")], stroke_width=1.5,
                              labels=["other fabric"], display_legend=True)
        self.actual = bq.Lines(x=CURVE_GPUS, y=zeros, scales={"x": xs, "y": ys}, colors=[mark_color("blue")], stroke_width=2.5,
                               labels=["this fabric"], display_legend=True)
        self.point = bq.Scatter(**UNNAMED, x=[64], y=[0.0], scales={"x": xs, "y": ys}, colors=[mark_color("ink")], default_size=90,
                                labels=["selected size"], display_legend=True)
        self.knee = bq.Lines(x=[0.0, 0.0], y=[0.0, 0.0], scales={"x": xs, "y": ys}, colors=[mark_color("red")],
                             stroke_width=2, line_style="dashed")
        self.knee_label = bq.Label(x=[0.0], y=[0.0], text=[""], scales={"x": xs, "y": ys}, colors=[mark_color("red")],
                                   x_offset=6, default_size=12)
        self.add_figure(figure([self.ideal, self.other, self.actual, self.point, self.knee, self.knee_label], xs, ys,
                               "accelerators (GPUs)", "samples / s", title="Throughput vs accelerators", legend=True))
        for name, label in (("throughput", "Throughput"), ("speedup", "Speed-up"), ("efficiency", "Scaling efficiency"),
                            ("knee", "Diminishing returns"), ("comm", "All-reduce / compute")):
            self.add_card(name, label)

    def refresh(self, v):
        params = float(v["params_b"]) * 1e9
        b = int(v["micro_batch"])
        n = int(v["nodes"]) * GPUS_PER_NODE
        chosen = FABRIC_TOGGLE[v["fabric"]]
        other_name = next(name for label, name in FABRIC_TOGGLE.items() if label != v["fabric"])
        intra = NODE.intra_link
        curves = {}
        for name in (chosen, other_name):
            link = catalog.link(name)
            c = data_parallel_curve(params, b, CURVE_GPUS, intra, link, bool(v["overlap"]), self.peak)
            throughput = np.asarray(core.samples_per_second(CURVE_GPUS * b, c["step_seconds"]), float)
            curves[name] = {**c, "throughput": throughput, "link": link}
        mine = curves[chosen]
        x = mine["throughput"]
        one = float(x[0])  # CURVE_GPUS[0] == 1: one GPU, no all-reduce
        ideal = CURVE_GPUS * one
        speedups = np.asarray(core.speedup(x, one), float)
        efficiency = np.asarray(core.scaling_efficiency(x, one, CURVE_GPUS), float)
        knee = core.diminishing_returns_gpus(CURVE_GPUS, speedups, MARGINAL_THRESHOLD)

        i = int(np.flatnonzero(CURVE_GPUS == n)[0])
        self.set_marks(self.ideal, y=ideal)
        self.set_marks(self.actual, y=x, labels=[f"{mine['link'].name}"])
        self.set_marks(self.other, y=curves[other_name]["throughput"], labels=[curves[other_name]["link"].name])
        self.set_marks(self.point, x=[n], y=[float(x[i])])
        if knee is None:
            self.set_marks(self.knee, x=[0.0, 0.0], y=[0.0, 0.0])
            self.set_marks(self.knee_label, x=[0.0], y=[0.0], text=[""])
        else:
            top = float(ideal.max())
            self.set_marks(self.knee, x=[float(knee)] * 2, y=[0.0, top])
            self.set_marks(self.knee_label, x=[float(knee)], y=[0.9 * top], text=[f"< 0.5x beyond {knee} GPUs"])

        link = mine["link"]
        comm_ratio = float(core.comm_compute_ratio(mine["comm_seconds"][i], mine["compute_seconds"]))
        self.set_card("throughput", f"{x[i]:,.0f} /s", f"{n:,} GPUs, ideal {ideal[i]:,.0f}")
        self.set_card("speedup", f"{speedups[i]:.1f}x", f"of {n:,}x ideal")
        self.set_card("efficiency", f"{100 * efficiency[i]:.1f} %", "speed-up / N",
                      "good" if efficiency[i] >= 0.8 else "warn" if efficiency[i] >= 0.5 else "bad")
        self.set_card("knee", "beyond the chart" if knee is None else f"{knee} GPUs",
                      "" if knee is None else f"{-(-knee // GPUS_PER_NODE)} node(s)", "normal" if knee is None else "warn")
        self.set_card("comm", f"{comm_ratio:.2f}", f"{link.name}, {fmt_rate(link.bandwidth)} per GPU")
        self.set_math(
            f"Throughput X(N) = N &middot; b / T<sub>step</sub>(N) = {n:,} &times; {b} / {fmt_time(mine['step_seconds'][i])}"
            f" = {x[i]:,.1f} samples/s; ideal N &middot; X(1) = {n:,} &times; {one:,.2f} = {ideal[i]:,.0f}<br>"
            f"Speed-up S = X(N)/X(1) = {speedups[i]:.2f}; efficiency S/N = {100 * efficiency[i]:.1f} %<br>"
            f"Diminishing returns: first N where (S(N') &minus; S(N))/(N' &minus; N) &lt; {MARGINAL_THRESHOLD} between"
            f" neighbouring points: {'none up to ' + str(CURVE_GPUS[-1]) + ' GPUs' if knee is None else str(knee) + ' GPUs'}"
        )
        return {
            "fabric": v["fabric"], "link": link.name, "gpus": n, "throughput": float(x[i]), "ideal": float(ideal[i]),
            "speedup": float(speedups[i]), "efficiency": float(efficiency[i]), "diminishing_returns_gpus": knee,
            "comm_compute_ratio": comm_ratio, "curve_gpus": CURVE_GPUS, "curve_throughput": x,
            "curve_other": curves[other_name]["throughput"],
        }

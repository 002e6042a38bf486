"""All-reduce comparator and algorithm-selection dashboard (Lab 06, Acts I and II).

Every time comes from ``course.core.allreduce_time`` (alpha-beta model of
Thakur, Rabenseifner & Gropp 2005, as implemented and sourced in
``course.core.collectives``); efficiencies from ``course.core.bus_bandwidth``
(nccl-tests). This module only chooses what to evaluate and how to show it.
"""

from __future__ import annotations

import html

import bqplot as bq
import ipywidgets as widgets
import numpy as np

from .. import core
from ..core import catalog
from ..theme import mark_color
from .base import Instrument, figure, fmt_bytes, fmt_rate, fmt_time
from .charts import UNNAMED, decade_ticks, integer_ticks, set_ticks
from .context import find_link, link_options
from .controls import LogFloatSlider, LogIntSlider
from .workloads import LARGE_WORKLOAD, WORKLOADS, _gradient_bytes  # noqa: F401 (re-exported)

__all__ = ["AllreduceComparator", "AlgorithmDashboard", "WORKLOADS", "ALGORITHM_COLORS", "best_and_crossovers"]

GB = core.units.GB

#: One theme-aware colour per algorithm (``course.theme.mark_color``: readable in Light and Dark).
ALGORITHM_COLORS = {
    "naive": mark_color("red"),
    "ring": mark_color("green"),
    "tree": mark_color("blue"),
    "double_binary_tree": mark_color("purple"),
    "hierarchical": mark_color("gray"),
    "recursive_doubling": mark_color("amber"),
    "rabenseifner": mark_color("cyan"),
}
#: How the charts write each algorithm (the keys are the core's names).
ALGORITHM_LABELS = {"double_binary_tree": "double binary tree", "recursive_doubling": "recursive doubling",
                    "rabenseifner": "Rabenseifner"}


#: What each algorithm does, in one line (Thakur, Rabenseifner & Gropp 2005; NCCL's double binary tree): shown
#: under the charts, so a name like "Rabenseifner" is explained where the student meets it.
ALGORITHM_GLOSSARY = (
    ("naive", "one GPU gathers every gradient, sums, and sends the sum back to all"),
    ("ring", "each GPU passes 1/N of the message to its neighbour, 2(N−1) steps"),
    ("tree", "a binomial tree reduces to the root, then broadcasts back: ⌈lg N⌉ levels each way"),
    ("double binary tree", "two complementary trees, each carrying half of the message (NCCL)"),
    ("recursive doubling", "in step k, GPUs 2^k apart swap and add their whole message: ⌈lg N⌉ steps"),
    ("Rabenseifner", "reduce-scatter by recursive halving, then all-gather by recursive doubling"),
    ("hierarchical", "all-reduce inside each 8-GPU node on NVLink, then across nodes, then inside again"),
)


def _glossary_html() -> str:
    items = "".join(f"<li><b>{html.escape(name)}</b>: {html.escape(text)}</li>" for name, text in ALGORITHM_GLOSSARY)
    return (f"<details class='course-ui course-glossary' style='font-size:0.85rem'><summary>What each algorithm does"
            f"</summary><ul style='margin:4px 0'>{items}</ul></details>")


def _label(algorithm: str) -> str:
    return ALGORITHM_LABELS.get(algorithm, algorithm)


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _time_tick(seconds: float) -> str:
    """A decade on a time axis: '10 µs', '100 ms', '1 s', '1,000 s', then '10⁴ s' (short, not '16.7 min').

    >>> [_time_tick(t) for t in (1e-5, 0.1, 1.0, 1e3, 1e6)]
    ['10 µs', '100 ms', '1 s', '1,000 s', '10⁶ s']
    """
    if seconds < 1:
        return fmt_time(seconds)
    if seconds < 1e4:
        return f"{seconds:,.0f} s"
    return "10" + str(round(np.log10(seconds))).translate(_SUPERSCRIPT) + " s"


def _time_axis(scale, axis, low: float, high: float, max_ticks: int = 8) -> None:
    """Fit a log time axis to [low, high] with ticks at whole decades labelled '1 ms', '10 s'."""
    lo, hi = 10.0 ** np.floor(np.log10(low)), 10.0 ** np.ceil(np.log10(high))
    if (scale.min, scale.max) != (lo, hi):
        with scale.hold_sync():
            scale.min, scale.max = float(lo), float(hi)
    # every 2nd decade before every 3rd: a narrow axis over 6 decades reads 10 ms, 1 s, 100 s, not only 1 s, 1,000 s
    set_ticks(axis, decade_ticks(lo, hi, max_ticks=max_ticks, strides=(1, 2, 3, 6, 12)), _time_tick)


#: the preset the dashboard shows once its message slider leaves every preset
CUSTOM = "custom"
#: Ties: algorithms within this relative time of the best are named with it.
TIE = 0.01


def _algorithms() -> tuple[str, ...]:
    return tuple(core.ALLREDUCE_ALGORITHMS)


def _times(message_bytes, n, bandwidth, latency, algorithms):
    """One core call per algorithm, each vectorized over the whole message/N grid."""
    return np.stack([np.broadcast_to(core.allreduce_time(message_bytes, n, bandwidth, latency, algorithm=a),
                                     np.broadcast(message_bytes, n).shape).astype(float)
                     for a in algorithms])


def best_and_crossovers(sizes: np.ndarray, times: np.ndarray, algorithms, n=None, bandwidth=None,
                        latency=None) -> tuple[np.ndarray, list[dict]]:
    """Index of the fastest algorithm at each size and where that choice changes.

    ``times`` has shape (algorithms, sizes). Where the winner changes between
    two grid points, the crossover size comes from the core's analytic
    ``crossover_message_bytes`` when ``n``, ``bandwidth`` and ``latency`` are
    given (and it lies between the two points); otherwise it is placed where
    the two winners' log-times are equal, interpolating linearly in log(size).
    """
    best = np.argmin(times, axis=0)
    crossings = []
    for i in np.flatnonzero(best[1:] != best[:-1]):
        a, b = best[i], best[i + 1]
        x = np.nan
        if n is not None:
            x = float(core.crossover_message_bytes(n, bandwidth, latency, algorithms[a], algorithms[b]))
            if not sizes[i] * (1 - 1e-9) <= x <= sizes[i + 1] * (1 + 1e-9):
                x = np.nan
        if np.isnan(x):
            d0 = np.log(times[a, i]) - np.log(times[b, i])
            d1 = np.log(times[a, i + 1]) - np.log(times[b, i + 1])
            frac = d0 / (d0 - d1) if d0 != d1 else 0.5
            x = float(np.exp(np.log(sizes[i]) + frac * (np.log(sizes[i + 1]) - np.log(sizes[i]))))
        if n is not None:
            t = float(core.allreduce_time(x, n, bandwidth, latency, algorithm=algorithms[a]))
        else:
            t = float(np.exp(np.interp(np.log(x), np.log(sizes[i:i + 2]), np.log(times[a, i:i + 2]))))
        crossings.append({"message_bytes": x, "seconds": t, "from": algorithms[a], "to": algorithms[b]})
    return best, crossings


#: Message sizes a lab names, in GB: the comparator's 140 GB (70B bf16 gradients) and every dashboard preset.
MESSAGE_PRESETS_GB = (140.0, *(m / GB for m in WORKLOADS.values()))


def _message_slider(value_gb: float) -> LogFloatSlider:
    """M in GB from 1 kB to 1 TB on a log scale, every preset of :data:`MESSAGE_PRESETS_GB` a stop."""
    return LogFloatSlider(value=value_gb, min=1e-6, max=1e3, presets=MESSAGE_PRESETS_GB, description="M (GB)")


def _link_dropdown(default_name: str = "InfiniBand NDR") -> widgets.Dropdown:
    options = link_options()
    return widgets.Dropdown(options=options, value=find_link(options, default_name), description="Link",
                            layout=widgets.Layout(width="380px"))


class AllreduceComparator(Instrument):
    """Naive vs ring vs tree (and every other core algorithm) for N GPUs, M bytes, one link.

    Controls: ``gpus`` (N), ``message_gb`` (M in GB), ``link`` (catalog link).
    Charts: bar chart of all-reduce time per algorithm (log scale), plus the
    two-level (hierarchical) all-reduce of a DGX H100 cluster (8 GPUs per node
    on NVLink 4, nodes on the chosen link) when N is a multiple of 8; ring
    efficiency vs N (achieved bus bandwidth / link bandwidth) with the current
    N marked. ``result`` holds every flat algorithm's time in seconds
    (``times``), ``hierarchical_seconds`` (``None`` when N is not a whole number
    of nodes), the naive / ring ratio and the ring efficiency.
    """

    NODE = "DGX H100"  # catalog node for the hierarchical bar
    track_controls = {"link": "link", "devices": "gpus", "gradient_gb": "message_gb"}

    title = "All-reduce comparator"
    subtitle = "Same gradient, same cluster, different algorithm: who carries the traffic?"
    EFFICIENCY_N = np.unique(np.round(np.logspace(np.log10(2), np.log10(4096), 96))).astype(int)

    def build(self):
        self.algorithms = _algorithms()
        self.add_control("gpus", LogIntSlider(value=128, min=2, max=4096, description="GPUs N"))
        # 1 kB .. 1 TB through 1-1.4-2-3-4-5-7 x 10^k: one arrow press is 25-50 %, and 140 GB, the presets'
        # 350 GB, 14 GB and 0.5 MB are stops of their own (a FloatLogSlider step fine enough to hold them moved
        # 0.23 % per press)
        self.add_control("message_gb", _message_slider(140.0))
        self.add_control("link", _link_dropdown())

        xs, ys = bq.OrdinalScale(reverse=True), bq.LogScale()  # reversed: the first algorithm on top
        self.node = catalog.node(self.NODE)
        names = list(self.algorithms) + ["hierarchical"]
        # horizontal bars: each algorithm's name on its own row, none clipped or overlapping
        self.bars = bq.Bars(x=names, y=np.ones(len(names)), base=1e-9, orientation="horizontal",
                            scales={"x": xs, "y": ys},
                            colors=[ALGORITHM_COLORS.get(a, mark_color("gray")) for a in names],
                            color_mode="no_group", padding=0.25,
                            tooltip=bq.Tooltip(fields=["x", "y"], formats=["", ".3g"], labels=["algorithm", "seconds"]))
        bar_fig = self.add_figure(figure([self.bars], ys, xs, "all-reduce time", "",
                                         title="Time per all-reduce", height="320px"))
        self.time_scale, self.time_axis = ys, bar_fig.axes[0]
        bar_fig.axes[1].tick_labels = {a: ALGORITHM_LABELS.get(a, a) for a in names}
        bar_fig.fig_margin = {**bar_fig.fig_margin, "left": 150, "right": 40}

        ex, ey = bq.LogScale(), bq.LinearScale(min=0, max=105)
        self.eff_line = bq.Lines(x=self.EFFICIENCY_N, y=np.zeros(len(self.EFFICIENCY_N)),
                                 scales={"x": ex, "y": ey}, colors=[ALGORITHM_COLORS["ring"]], stroke_width=2)
        self.eff_point = bq.Scatter(**UNNAMED, x=[128], y=[0.0], scales={"x": ex, "y": ey}, colors=[mark_color("ink")],
                                    marker="circle", default_size=80)
        eff_fig = self.add_figure(figure([self.eff_line, self.eff_point], ex, ey, "GPUs N",
                                         "ring bus bandwidth / link (%)", title="Ring efficiency vs N"))
        self.gpu_scale, self.gpu_axis = ex, eff_fig.axes[0]
        self.extra.children = (widgets.HTML(_glossary_html()),)
        for name, label in (("naive", "Naive (gather + broadcast)"), ("ring", "Ring"), ("tree", "Tree"),
                            ("hierarchical", f"Hierarchical ({self.node.gpus_per_node}/node)"),
                            ("ratio", "Naive / ring"), ("efficiency", "Ring efficiency")):
            self.add_card(name, label)

    def describe(self, fig):
        r = self.result
        if fig is not self.figures[0] or not r:
            return super().describe(fig)
        times = dict(r["times"])
        if r["hierarchical_seconds"] is not None:
            times["hierarchical"] = r["hierarchical_seconds"]
        order = sorted(times, key=times.get)
        return (f"Chart: {fig.title}, one bar per algorithm on a log time axis, for N = {r['gpus']:,} GPUs and "
                f"M = {fmt_bytes(r['message_bytes'])} on {self.controls['link'].value.name}, fastest first: "
                + "; ".join(f"{_label(a)} {fmt_time(times[a])}" for a in order)
                + f". The slowest, {_label(order[-1])}, takes {times[order[-1]] / times[order[0]]:.0f} times as long "
                  f"as the fastest, {_label(order[0])}.")

    def refresh(self, v):
        n, message = int(v["gpus"]), float(v["message_gb"]) * GB
        link = v["link"]
        bandwidth, latency = link.bandwidth, link.latency
        times = _times(message, n, bandwidth, latency, self.algorithms)  # (algorithms,)
        by_name = dict(zip(self.algorithms, times.tolist()))
        # Efficiency curve: one vectorized core call over all N at once, up to a fleet larger than 4,096 (Edge)
        grid = self.EFFICIENCY_N if n <= self.EFFICIENCY_N[-1] else \
            np.unique(np.round(np.logspace(np.log10(2), np.log10(n), 96))).astype(int)
        ring_over_n = np.asarray(core.allreduce_time(message, grid, bandwidth, latency, algorithm="ring"), float)
        eff_curve = 100 * np.asarray(core.bus_bandwidth(message, grid, ring_over_n), float) / bandwidth
        ring = by_name["ring"]
        efficiency = 100 * float(core.bus_bandwidth(message, n, ring)) / bandwidth
        ratio = by_name["naive"] / ring
        ring_bw_only = float(core.allreduce_time(message, n, bandwidth, 0.0, algorithm="ring"))
        naive_bw_only = float(core.allreduce_time(message, n, bandwidth, 0.0, algorithm="naive"))
        per_node, intra = self.node.gpus_per_node, self.node.intra_link
        hierarchical = None
        on_gpu_nodes = self.track is None  # an Edge/Mobile/Tiny fleet has no NVLink nodes to group by
        if on_gpu_nodes and n % per_node == 0:
            hierarchical = float(core.hierarchical_allreduce_time(
                message, per_node, n // per_node, intra.bandwidth, bandwidth, intra.latency, latency))

        # the bars grow up from a base below the fastest algorithm, hierarchical included (it is
        # often the fastest: a bar below the base would be drawn downwards)
        heights = np.append(times, hierarchical) if hierarchical is not None else times
        positive = heights[heights > 0]
        base = float(positive.min() / 3) if positive.size else 1e-9
        with self.bars.hold_sync():
            self.bars.base = base
            # no hierarchical bar (height 0 above the base) when N is not a whole number of nodes
            self.bars.y = np.append(times, hierarchical if hierarchical is not None else base)
        _time_axis(self.time_scale, self.time_axis, base, float(heights.max()) * 1.05, max_ticks=5)  # a narrow axis
        top = max(4096, n)  # a fleet (Edge: 10,000 cars) reaches past the cluster's 4,096
        if self.gpu_scale.max != top:
            with self.gpu_scale.hold_sync():
                self.gpu_scale.min, self.gpu_scale.max = 2.0, float(top)
        set_ticks(self.gpu_axis, integer_ticks(2, top))
        self.set_marks(self.eff_line, x=grid, y=eff_curve)
        self.set_marks(self.eff_point, x=[n], y=[efficiency])
        for name in ("naive", "ring", "tree"):
            self.set_card(name, fmt_time(by_name[name]))
        if not on_gpu_nodes:
            self.set_card("hierarchical", "n/a", f"{self.track.name} devices are not {self.node.name} nodes", "muted")
        elif hierarchical is None:
            self.set_card("hierarchical", "n/a", f"N is not a multiple of {per_node}", "muted")
        else:
            self.set_card("hierarchical", fmt_time(hierarchical), f"{intra.name} inside, {link.name} across")
        self.set_card("ratio", f"{ratio:.1f}×", "time ratio", "bad" if ratio > 10 else "normal")
        self.set_card("efficiency", f"{efficiency:.1f} %", "bus bandwidth / link", "good" if efficiency > 90 else "warn")
        self.set_math(
            f"N = {n:,}, M = {fmt_bytes(message)}, α = {fmt_time(latency)}, β = 1/B with B = {fmt_rate(bandwidth)}<br>"
            f"Ring: T = 2(N−1)α + 2(N−1)/N · Mβ = {fmt_time(ring - ring_bw_only)} + {fmt_time(ring_bw_only)}"
            f" = <b>{fmt_time(ring)}</b><br>"
            f"Naive: one rank receives (N−1)·M, then sends (N−1)·M: bandwidth term "
            f"{fmt_time(naive_bw_only)}, total <b>{fmt_time(by_name['naive'])}</b><br>"
            f"Naive / ring = {fmt_time(by_name['naive'])} / {fmt_time(ring)} = <b>{ratio:.1f}×</b> (≈ N for large M)<br>"
            f"Ring efficiency = busbw / B = [M/T · 2(N−1)/N] / B = <b>{efficiency:.1f} %</b><br>"
            + (f"Hierarchical (g = {per_node} per node, {n // per_node:,} nodes): 2[(g−1)α<sub>i</sub> + (g−1)/g·Mβ<sub>i</sub>]"
               f" + 2(n−1)α + 2(n−1)/n·(M/g)β = <b>{fmt_time(hierarchical)}</b>"
               if hierarchical is not None else f"Hierarchical: needs N to be a multiple of {per_node} GPUs per node")
        )
        return {
            "gpus": n, "message_bytes": message, "bandwidth": bandwidth, "latency": latency,
            "times": by_name, "naive_over_ring": ratio, "ring_efficiency_percent": efficiency,
            "hierarchical_seconds": hierarchical,
        }


class AlgorithmDashboard(Instrument):
    """Which all-reduce algorithm for which workload (Lab 06 Act II).

    Controls: ``workload`` (preset or custom), ``message_gb``, ``gpus``,
    ``link``, ``compute_s`` (compute time of one step, seconds). Chart: time vs
    message size for each algorithm on log-log axes, where the fastest
    algorithm changes (crossovers), the current message, and the
    50 %-of-step line (communication time = compute time). Failure state
    ``comm_bound`` when the best all-reduce exceeds half of the step
    (compute + communication, no overlap).
    """

    title = "Algorithm selection dashboard"
    benchmark_control = "gpus"  # recomputes every curve (the message size only moves the marker)
    track_controls = {"link": "link", "devices": "gpus", "gradient_gb": "message_gb"}
    subtitle = "Time vs message size for every all-reduce algorithm; the fastest changes with size."
    SIZES = np.logspace(3, 12.5, 256)  # 1 kB .. ~3 TB

    def build(self):
        self.algorithms = _algorithms()
        # buttons as wide as their labels, wrapping onto a second row rather than cut off
        self.add_control("workload", widgets.ToggleButtons(options=list(WORKLOADS) + [CUSTOM],
                                                           value=list(WORKLOADS)[0], description="Workload",
                                                           style={"button_width": "auto"},
                                                           layout=widgets.Layout(width="auto", max_width="100%")),
                         triggers_update=False)
        self.add_control("message_gb", _message_slider(WORKLOADS[LARGE_WORKLOAD] / GB))
        self.add_control("gpus", LogIntSlider(value=128, min=2, max=4096, description="GPUs N"))
        self.add_control("link", _link_dropdown())
        self.add_control("compute_s", LogFloatSlider(value=1.0, min=1e-3, max=1e2, description="compute (s)"))
        self.observe("workload", self._apply_preset)
        self.observe("message_gb", self._maybe_custom)

        xs, ys = bq.LogScale(min=float(self.SIZES[0]), max=float(self.SIZES[-1])), bq.LogScale()
        # the double binary tree's curve lies on Rabenseifner's (same bandwidth term, close latency terms):
        # it is drawn on its own, dashed and on top, so both stay visible where they coincide
        self.solid = [a for a in self.algorithms if a != "double_binary_tree"]
        colors = [ALGORITHM_COLORS.get(a, mark_color("gray")) for a in self.solid]
        self.curves = bq.Lines(x=self.SIZES, y=np.ones((len(self.solid), self.SIZES.size)),
                               scales={"x": xs, "y": ys}, colors=colors,
                               labels=[ALGORITHM_LABELS.get(a, a) for a in self.solid],
                               display_legend=True, stroke_width=2)
        self.dashed_curves = bq.Lines(x=self.SIZES, y=np.ones((1, self.SIZES.size)), scales={"x": xs, "y": ys},
                                      colors=[ALGORITHM_COLORS["double_binary_tree"]], line_style="dashed",
                                      stroke_width=2.5, labels=[ALGORITHM_LABELS["double_binary_tree"]],
                                      display_legend=True)
        self.threshold = bq.Lines(x=self.SIZES[[0, -1]], y=[1.0, 1.0], scales={"x": xs, "y": ys},
                                  colors=[mark_color("gray")], line_style="dashed", labels=["50 % of step"],
                                  display_legend=True)
        self.crossings = bq.Scatter(**UNNAMED, x=[1e6], y=[1.0], scales={"x": xs, "y": ys}, colors=[mark_color("ink")],
                                    marker="diamond", default_size=50, labels=["crossover"], display_legend=True)
        self.current = bq.Scatter(**UNNAMED, x=[WORKLOADS[LARGE_WORKLOAD]], y=[1.0], scales={"x": xs, "y": ys}, colors=[mark_color("pink")],
                                  stroke=mark_color("ink"), marker="circle", default_size=160, labels=["your message"],
                                  display_legend=True)
        # the crossover diamonds are drawn last and smaller than "your message": one at the student's size
        # sits inside the circle instead of covering it
        fig = self.add_figure(figure([self.curves, self.dashed_curves, self.threshold, self.current, self.crossings],
                                     xs, ys,
                                     "message size", "all-reduce time", title="Time vs message size",
                                     height="380px", legend=True))
        set_ticks(fig.axes[0], decade_ticks(self.SIZES[0], self.SIZES[-1]), fmt_bytes)
        self.time_scale, self.time_axis = ys, fig.axes[1]
        self.extra.children = (widgets.HTML(_glossary_html()),)
        for name, label in (("best", "Fastest algorithm"), ("time", "Its time"), ("ring", "Ring time"),
                            ("share", "Communication share of step"), ("crossover", "Crossovers")):
            self.add_card(name, label)

    def describe(self, fig):
        r = self.result
        if not r:
            return super().describe(fig)
        crossings = "; ".join(f"{fmt_bytes(c['message_bytes'])} ({_label(c['from'])} to {_label(c['to'])})"
                              for c in r["crossovers"]) or "nowhere between 1 kB and 3 TB"
        return (f"Chart: {fig.title}: all-reduce time of each algorithm against message size (1 kB to 3 TB, both axes "
                f"log) for N = {r['gpus']:,} GPUs on {self.controls['link'].value.name}. The fastest algorithm changes "
                f"at {crossings}. At your message of {fmt_bytes(r['message_bytes'])} the fastest is "
                f"{_label(r['best'])}, {fmt_time(r['best_seconds'])}. The dashed line at {fmt_time(r['compute_s'])} "
                f"marks half of the step: above it, communication takes longer than compute.")

    # presets and the message slider keep each other consistent without loops
    def _apply_preset(self, change):
        if change["new"] in WORKLOADS:
            with self.batch():
                self.controls["message_gb"].value = WORKLOADS[change["new"]] / GB

    def _maybe_custom(self, change):
        preset = self.controls["workload"].value
        # every preset is a stop of the slider; 1 % spares a value set from Python with float noise
        if preset in WORKLOADS and not np.isclose(change["new"] * GB, WORKLOADS[preset], rtol=1e-2):
            self.controls["workload"].value = CUSTOM  # steers nothing: no extra update

    def refresh(self, v):
        message = float(v["message_gb"]) * GB
        n, link, compute = int(v["gpus"]), v["link"], float(v["compute_s"])
        bandwidth, latency = link.bandwidth, link.latency
        # one core call per algorithm covers the curve and the current message (last column)
        both = _times(np.append(self.SIZES, message), n, bandwidth, latency, self.algorithms)
        curves, here = both[:, :-1], both[:, -1]  # (algorithms, sizes), (algorithms,)
        best, crossings = best_and_crossovers(self.SIZES, curves, self.algorithms, n, bandwidth, latency)
        self.best_by_size = [self.algorithms[i] for i in best]  # per grid size; kept out of result (ledger size)
        k = int(np.argmin(here))
        best_name, best_time = self.algorithms[k], float(here[k])
        ties = [a for a, t in zip(self.algorithms, here) if a != best_name and t <= best_time * (1 + TIE)]
        share = best_time / (best_time + compute)

        floor = max(float(curves[curves > 0].min()) if np.any(curves > 0) else 1e-9, 1e-12)
        drawn = np.maximum(curves, floor)
        self.set_marks(self.curves, y=drawn[[self.algorithms.index(a) for a in self.solid]])
        self.set_marks(self.dashed_curves, y=drawn[[self.algorithms.index("double_binary_tree")]])
        self.set_marks(self.threshold, y=[compute, compute])
        if crossings:
            self.set_marks(self.crossings, x=[c["message_bytes"] for c in crossings], y=[c["seconds"] for c in crossings])
        else:
            self.set_marks(self.crossings, x=np.array([], float), y=np.array([], float))
        self.set_marks(self.current, x=[message], y=[max(best_time, floor)])
        _time_axis(self.time_scale, self.time_axis, min(floor, compute), max(float(curves.max()), compute))

        self.set_card("best", _label(best_name), ("ties: " + ", ".join(map(_label, ties))) if ties else "", "good")
        self.set_card("time", fmt_time(best_time))
        self.set_card("ring", fmt_time(float(here[self.algorithms.index("ring")])))
        self.set_card("share", f"{100 * share:.1f} %", f"compute {fmt_time(compute)}",
                      "bad" if share > 0.5 else "good")
        self.set_card("crossover", "; ".join(f"{fmt_bytes(c['message_bytes'])}" for c in crossings) or "none",
                      " · ".join(f"{_label(c['from'])} → {_label(c['to'])}" for c in crossings))
        if share > 0.5:
            self.flag("comm_bound",
                      f"Communication takes {100 * share:.0f} % of the step ({fmt_time(best_time)} of all-reduce with "
                      f"{_label(best_name)} against {fmt_time(compute)} of compute). A better algorithm cannot fix this: overlap "
                      "the all-reduce with the backward pass, accumulate gradients so each sync serves more "
                      "compute, or buy bandwidth.")
        self.set_math(
            f"α = {fmt_time(latency)}, β = 1/B with B = {fmt_rate(bandwidth)}, N = {n:,}, M = {fmt_bytes(message)}<br>"
            "ring 2(N−1)α + 2(N−1)/N·Mβ · recursive doubling ⌈lg N⌉(α + Mβ) · "
            "Rabenseifner 2⌈lg N⌉α + 2(N−1)/N·Mβ · tree 2⌈lg N⌉(α + Mβ)<br>"
            + "<br>".join(f"{html.escape(_label(a))}: {fmt_time(float(t))}" + (" ← fastest" if a == best_name else "")
                          for a, t in zip(self.algorithms, here))
            + f"<br>Share of step = T / (T + compute) = {fmt_time(best_time)} / ({fmt_time(best_time)} + "
              f"{fmt_time(compute)}) = <b>{100 * share:.1f} %</b> (failure above 50 %)"
        )
        return {
            "message_bytes": message, "gpus": n, "bandwidth": bandwidth, "latency": latency, "compute_s": compute,
            "times": dict(zip(self.algorithms, here.tolist())), "best": best_name, "best_seconds": best_time,
            "ties": ties, "comm_share": share, "crossovers": crossings,
        }

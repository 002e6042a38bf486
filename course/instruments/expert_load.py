"""Expert-load view (Lab 07, Act III): a skewed router, the capacity factor, dropped tokens, the straggler.

The bars are the load of every expert of one MoE layer relative to the mean (hottest first), for a
router whose expert popularity falls as a power of its rank (skew ``s``; 0 is a balanced router). A
dropless MoE computes every token, so the EP rank holding the hottest expert finishes last and every
other rank waits for it; a capacity factor ``C`` pads each expert's buffer to ``C x`` the mean and
drops the tokens above it (the dashed line). Cards: the hottest expert's load, the busiest rank's
factor, the dropped tokens and the share of the step spent waiting for the straggler.

Failure states (design rules of the lab, not physics): ``tokens_dropped`` when more than 1 % of the
routed tokens are dropped, ``straggler_bound`` when the wait is more than 20 % of the step.

Every number comes from :mod:`course.core.expert_load`.

Drawing (measured with ``benchmarks/bench_browser.py``, issue 38): the bars are ONE filled path
(:func:`bar_outlines`, a ``bq.Lines`` with ``fill="bottom"``), not a ``bq.Bars`` mark, which draws an SVG group and a
rect per expert and builds or removes 128 of them when the ``experts`` slider doubles the count to 256 (that move took
70 ms). The x scale's range is set, not fitted to the marks: a move of ``experts`` changes it once, after the bars (sent
the other way round, the browser drew them in two frames); the mean and capacity lines sit on a fixed x scale of their
own, across the plot, so a new ``E`` neither re-sends nor redraws them.
"""

from __future__ import annotations

import bqplot as bq
import ipywidgets as widgets
import numpy as np

from .. import core
from ..theme import mark_color
from .base import Instrument, figure

__all__ = ["ExpertLoadView", "bar_outlines", "EXPERT_CHOICES", "EP_CHOICES", "DROPPED_LIMIT", "STRAGGLER_LIMIT"]

EXPERT_CHOICES = (8, 16, 32, 64, 128, 256)
EP_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
#: more dropped tokens than this share of the routed ones is flagged (Switch Transformer trains with < 1 %
#: dropped at capacity factor 1.0-1.25: Fedus et al. 2022, sec. 2.2)
DROPPED_LIMIT = 0.01
#: a straggler wait longer than this share of the step is flagged
STRAGGLER_LIMIT = 0.20


def load_axis_top(hottest: float, capacity: float | None) -> float:
    """The top of the load axis: the hottest expert's load, but never more than 4x the higher of the mean (1)
    and the capacity C (chart geometry, not physics). At a high skew the hottest expert carries 27x the mean on
    256 experts; an axis to 27 would draw the mean (1) and the capacity (1.25) a pixel apart. A bar taller than
    the top is clipped there, and the chart says so.

    >>> load_axis_top(1.8, 1.25), load_axis_top(27.0, 1.25), load_axis_top(27.0, None), load_axis_top(1.8, 4.0)
    (1.89, 5.25, 4.2, 4.2)
    """
    ceiling = 4.0 * max(1.0, capacity or 1.0)
    return round(1.05 * max(min(max(hottest, 1.0), ceiling), capacity or 1.0), 6)


def bar_outlines(heights, width: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """Bars of ``heights`` at x = 1, 2, ... as ONE series of rectangles broken by NaN (chart geometry, not physics).

    ``bq.Lines(x=..., y=..., fill="bottom")`` fills each run between NaNs down to the axis: one SVG path draws all
    bars, however many. Each bar is ``width`` wide, centred on its position.

    >>> x, y = bar_outlines([2.0, 0.5], width=0.5)
    >>> x.tolist()
    [0.75, 0.75, 1.25, 1.25, nan, 1.75, 1.75, 2.25, 2.25, nan]
    >>> y.tolist()
    [0.0, 2.0, 2.0, 0.0, nan, 0.0, 0.5, 0.5, 0.0, nan]
    """
    heights = np.asarray(heights, dtype=float).ravel()
    if not 0 < width <= 1:
        raise ValueError(f"width must be in (0, 1], got {width!r}")
    centres = np.arange(1, heights.size + 1, dtype=float)
    left, right, gap, zero = centres - width / 2, centres + width / 2, np.full(heights.size, np.nan), np.zeros(heights.size)
    return (np.stack([left, left, right, right, gap], axis=1).ravel(),
            np.stack([zero, heights, heights, zero, gap], axis=1).ravel())


def overflow_outlines(heights, capacity: float, width: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """The parts of the bars ``heights`` above ``capacity`` (the dropped tokens), as :func:`bar_outlines` draws
    bars: one series of rectangles from ``capacity`` up, broken by NaN; empty when no bar reaches above it.

    >>> x, y = overflow_outlines([2.0, 0.5, 1.5], 1.0, width=0.5)
    >>> x.tolist()
    [0.75, 0.75, 1.25, 1.25, nan, 2.75, 2.75, 3.25, 3.25, nan]
    >>> y.tolist()
    [1.0, 2.0, 2.0, 1.0, nan, 1.0, 1.5, 1.5, 1.0, nan]
    """
    heights = np.asarray(heights, dtype=float).ravel()
    x, y = bar_outlines(heights, width)
    over = np.repeat(heights > capacity, 5)
    y = np.where(np.isnan(y), np.nan, np.maximum(y, capacity))
    return x[over], y[over]


def _drawn(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The series without its closing NaN: bqplot places a Lines mark's label at the last point, and a NaN there
    is ``translate(undefined, undefined)`` (a console error at every redraw)."""
    return (x[:-1], y[:-1]) if x.size and np.isnan(x[-1]) else (x, y)


class ExpertLoadView(Instrument):
    """Loads of the experts of one layer under a skewed router, capacity, dropped tokens, the straggler's share.

    Controls: ``experts``, ``ep``, ``skew`` (Zipf exponent s), ``dropless`` (no capacity),
    ``capacity`` (the capacity factor C when not dropless), ``expert_share`` (expert compute's share of a
    balanced step). ``result``: ``loads`` (hottest first), ``hottest``, ``straggler`` (the busiest rank's
    factor), ``dropped`` (share of routed tokens), ``straggler_share`` (of the step) and the failure codes.
    """

    title = "Expert load"
    # shown before its lock opens: it names what the view measures, not what Act III's lock asks (who waits)
    subtitle = ("How evenly the router spreads tokens over the experts of one layer, what a capacity factor drops, "
                "and what the spread does to the step time.")
    benchmark_control = "skew"
    _summary = ""

    def build(self):
        self.add_control("experts", widgets.SelectionSlider(options=EXPERT_CHOICES, value=64, description="Experts E"))
        self.add_control("ep", widgets.SelectionSlider(options=EP_CHOICES, value=8, description="EP"))
        self.add_control("skew", widgets.FloatSlider(value=0.0, min=0.0, max=1.5, step=0.05, description="Skew s",
                                                     tooltip="Zipf exponent of expert popularity: 0 is a balanced "
                                                             "router; the k-th most popular expert gets k^-s"))
        self.add_control("dropless", widgets.Checkbox(value=True, description="dropless (no capacity)"))
        self.add_control("capacity", widgets.FloatSlider(value=1.25, min=0.5, max=4.0, step=0.05,
                                                         description="Capacity C"))
        self.add_control("expert_share", widgets.FloatSlider(value=0.4, min=0.05, max=0.95, step=0.05,
                                                             description="Expert share",
                                                             style={"description_width": "initial"},  # never "Expert sh…"
                                                             tooltip="Expert compute's share of a balanced step"))
        # the x range is set (E + 1/2), not fitted to the marks: one change per move of E. The mean and capacity
        # lines are drawn on a fixed x scale of their own, across the plot: a new E never redraws them.
        xs, ys, across = bq.LinearScale(min=0.5, max=64.5), bq.LinearScale(min=0), bq.LinearScale(min=0.0, max=1.0)
        bar_x, bar_y = _drawn(*bar_outlines(np.ones(64)))
        self.loads = bq.Lines(x=bar_x, y=bar_y, scales={"x": xs, "y": ys}, colors=[mark_color("blue")],
                              fill="bottom", fill_colors=[mark_color("blue")], fill_opacities=[1.0], stroke_width=0,
                              labels=["tokens per expert / mean"], display_legend=True)
        self.capacity_line = bq.Lines(x=[0.0, 1.0], y=[1.25, 1.25], scales={"x": across, "y": ys},
                                      colors=[mark_color("red")], line_style="dashed", stroke_width=2,
                                      labels=["capacity C"], display_legend=True)
        self.mean_line = bq.Lines(x=[0.0, 1.0], y=[1.0, 1.0], scales={"x": across, "y": ys},
                                  colors=[mark_color("gray")], stroke_width=1.5, labels=["mean load"],
                                  display_legend=True)
        # the tokens above capacity, which a capacity factor drops: the top of each bar above the dashed line
        # (a zero-height box until there is something to mark: a series of NaN alone draws a path "null")
        self.dropped_marks = bq.Lines(x=[0.5, 0.5], y=[0.0, 0.0], scales={"x": xs, "y": ys}, colors=[mark_color("red")],
                                      fill="bottom", fill_colors=[mark_color("red")], fill_opacities=[1.0],
                                      stroke_width=0, labels=["dropped (above C)"], display_legend=True, visible=False)
        self.load_scale = ys
        self.add_figure(figure([self.loads, self.dropped_marks, self.capacity_line, self.mean_line], xs, ys,
                               "experts, most popular first", "load / mean", title="Tokens per expert", legend=True))
        for name, label in (("hottest", "Hottest expert"), ("straggler", "Busiest rank"), ("dropped", "Dropped tokens"),
                            ("share", "Waiting for the straggler")):
            self.add_card(name, label)

    def describe(self, fig):
        """The chart in words, leading with its point (the hottest expert, capacity, the busiest GPU)."""
        return f"Chart: {fig.title}. {self._summary}"

    def refresh(self, v):
        e, ep, s = int(v["experts"]), int(v["ep"]), float(v["skew"])
        if e % ep:  # the failure state the planner and the all-to-all explorer name; no loads to draw
            self.flag("experts_not_divisible", f"EP = {ep} cannot split {e} experts evenly: every EP rank holds "
                                               f"E / EP whole experts. Pick an EP that divides {e}.")
            return {}
        capacity = None if v["dropless"] else float(v["capacity"])
        loads = np.asarray(core.skewed_expert_loads(e, s), float)
        hottest = float(loads[0])
        factor = float(core.straggler_factor(hottest, e, ep, capacity))
        dropped = 0.0 if capacity is None else float(core.dropped_token_share(loads, capacity))
        share = float(core.straggler_step_share(max(factor, 1.0), float(v["expert_share"])))

        top = load_axis_top(hottest, capacity)
        shown = np.minimum(loads, top)  # a bar above the axis is drawn to its top (the chart says so)
        if self.load_scale.max is None or self.load_scale.max < top:  # before the bars: they never poke out
            self.load_scale.max = top
        bar_x, bar_y = _drawn(*bar_outlines(shown))
        self.set_marks(self.loads, x=bar_x, y=bar_y)
        if self.load_scale.max != top:
            self.load_scale.max = top
        x_scale = self.loads.scales["x"]
        if x_scale.max != e + 0.5:  # after the bars: the browser draws both in one frame, not one frame each
            x_scale.max = e + 0.5
        if capacity is None:  # no capacity line to draw (or to describe)
            self.set_marks(self.capacity_line, y=[1.0, 1.0], visible=False)
        else:
            self.set_marks(self.capacity_line, y=[capacity, capacity], labels=[f"capacity C = {capacity:g}"],
                           visible=True)
        over_x, over_y = _drawn(*overflow_outlines(shown, capacity)) if capacity is not None else (np.array([]),) * 2
        if over_x.size:
            self.set_marks(self.dropped_marks, x=over_x, y=over_y, visible=True)
        else:
            self.set_marks(self.dropped_marks, visible=False)
        self.set_card("hottest", f"{hottest:.2f}x", "of the mean load", "warn" if hottest > 1.5 else "normal")
        self.set_card("straggler", f"{factor:.2f}x",
                      "padded buffers of C" if capacity else
                      f"EP {ep}: {e // ep} expert{'s' if e // ep != 1 else ''} per rank")
        self.set_card("dropped", f"{100 * dropped:.1f} %", "of routed tokens" if capacity else "dropless: none",
                      "bad" if dropped > DROPPED_LIMIT else "good")
        self.set_card("share", f"{100 * share:.1f} %", "of the step", "bad" if share > STRAGGLER_LIMIT else "good")
        rule = (f"C = {capacity:g}: every expert computes a buffer of C x the mean" if capacity else
                f"(L<sub>1</sub> + (E/EP &minus; 1)(E &minus; L<sub>1</sub>)/(E &minus; 1)) / (E/EP) with L<sub>1</sub> = "
                f"{hottest:.3f}, E = {e}, EP = {ep}")
        self.set_math(
            f"<b>Loads</b> L<sub>i</sub> = E &middot; i<sup>&minus;s</sup> / &Sigma;<sub>j</sub> j<sup>&minus;s</sup>, "
            f"s = {s:g}: hottest L<sub>1</sub> = {hottest:.3f}<br>"
            f"<b>Busiest rank</b> f = {rule} = {factor:.3f}<br>"
            f"<b>Dropped</b> = &Sigma; max(0, L<sub>i</sub> &minus; C) / E = {100 * dropped:.2f} %<br>"
            f"<b>Waiting share</b> = (f &minus; 1) x / (1 + (f &minus; 1) x), x = {float(v['expert_share']):g}: "
            f"{100 * share:.1f} % of the step")
        if dropped > DROPPED_LIMIT:
            self.flag("tokens_dropped", f"{100 * dropped:.1f} % of the routed tokens overflow capacity C = {capacity:g} "
                                        "and skip the expert layer.", "warn")
        if share > STRAGGLER_LIMIT:
            self.flag("straggler_bound", f"Every other rank waits {100 * share:.0f} % of the step for the rank of the "
                                         "hottest expert.")
        clipped = int(np.sum(loads > top))
        self._summary = (f"{e} experts, most popular first: the hottest carries {hottest:.2f} times the mean load, the "
                         f"least popular {float(loads[-1]):.2f}; "
                         + (f"the {clipped} tallest bar{'s' if clipped > 1 else ''} reach{'' if clipped > 1 else 'es'} "
                            f"above the axis (cut at {top:g}); " if clipped else "")
                         + ("dropless, no capacity line" if capacity is None else
                            f"capacity C = {capacity:g} drops {100 * dropped:.1f} % of the routed tokens (the bars' "
                            "parts above the dashed line)")
                         + f"; the busiest of {ep} GPUs computes {factor:.2f} times the mean.")
        return {"experts": e, "ep": ep, "skew": s, "capacity": capacity, "loads": loads, "hottest": hottest,
                "straggler": factor, "dropped": dropped, "straggler_share": share,
                "expert_share": float(v["expert_share"])}

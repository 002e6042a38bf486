"""Pipeline bubble chart (Lab 05, Act II): bubble share of the step vs number of micro-batches.

For the chosen number of pipeline stages ``p`` the chart draws the share of a
training step that the stages sit idle, ``(p-1)/(m+p-1)``, for every
micro-batch count ``m`` on the axis, marks the current ``m``, and draws the
10 % design ceiling of the Lab 05 plan. Numbers come from the core only:
``course.core.bubble_fraction``, ``bubble_overhead`` and
``min_microbatches_for_bubble`` (Narayanan et al. 2021, SC21, section 2.2).

Errata 3: Lab 05 used ``(p-1)/(p m)``, which is neither the share of the step
nor the overhead ``(p-1)/m`` relative to the ideal compute time.

The chart can mirror another instrument's ``pp`` and ``microbatches``
controls (:meth:`BubbleChart.follow_controls`), so it redraws when the 3D
configurator changes, and moving its own sliders moves the configurator.
"""

from __future__ import annotations

import bqplot as bq
import ipywidgets as widgets
import numpy as np

from .. import core
from ..theme import mark_color
from .base import Instrument, figure
from .charts import UNNAMED

__all__ = ["BubbleChart", "MICROBATCH_GRID", "BUBBLE_CEILING"]

#: Micro-batch counts on the x axis (the configurator's slider range).
MICROBATCH_GRID = np.arange(1, 65)
#: Lab 05 plan, Part 2: keep the bubble under 10 % of the step.
BUBBLE_CEILING = 0.10


class BubbleChart(Instrument):
    """Bubble share of the step vs micro-batches ``m`` for ``p`` pipeline stages.

    Controls: ``pp`` (stages p, 1-64) and ``microbatches`` (m, 1-64).
    ``result``: ``bubble_fraction`` (p-1)/(m+p-1) and ``bubble_overhead``
    (p-1)/m at the current point, ``min_microbatches`` (fewest m with a bubble
    under 10 %), and the drawn curve. Failure state ``bubble_over_ceiling``
    (a warning) when the current bubble is above 10 % of the step.
    """

    title = "Pipeline bubble vs micro-batches"
    subtitle = "For the chosen PP: how many micro-batches keep the idle share under 10 %?"

    def build(self):
        self.add_control("pp", widgets.IntSlider(value=4, min=1, max=64, description="PP"))
        self.add_control("microbatches", widgets.IntSlider(value=8, min=1, max=int(MICROBATCH_GRID[-1]),
                                                           description="Micro-batches m",
                                                           style={"description_width": "initial"}))
        xs = bq.LinearScale(min=1, max=float(MICROBATCH_GRID[-1]))
        ys = bq.LinearScale(min=0, max=100)
        self.curve = bq.Lines(x=MICROBATCH_GRID, y=np.zeros(MICROBATCH_GRID.size), scales={"x": xs, "y": ys},
                              colors=[mark_color("blue")], stroke_width=2.5, labels=["(p-1)/(m+p-1)"], display_legend=True)
        self.ceiling = bq.Lines(x=[1, float(MICROBATCH_GRID[-1])], y=[100 * BUBBLE_CEILING] * 2,
                                scales={"x": xs, "y": ys}, colors=[mark_color("gray")], line_style="dashed",
                                labels=["10 % ceiling"], display_legend=True)
        self.point = bq.Scatter(**UNNAMED, x=[8], y=[0.0], scales={"x": xs, "y": ys}, marker="diamond", colors=[mark_color("red")],
                                default_size=140, labels=["your m"], display_legend=True)
        self.add_figure(figure([self.curve, self.ceiling, self.point], xs, ys, "micro-batches m",
                               "bubble (% of step)", title="Bubble vs micro-batches", x_tick_format="d",
                               legend=True))
        for name, label in (("bubble", "Bubble share of step"), ("overhead", "Overhead vs ideal"),
                            ("needed", "m for < 10 %")):
            self.add_card(name, label)

    def refresh(self, v):
        p, m = int(v["pp"]), int(v["microbatches"])
        curve = np.asarray(core.bubble_fraction(p, MICROBATCH_GRID), float)  # one call for the whole curve
        fraction = float(core.bubble_fraction(p, m))
        overhead = float(core.bubble_overhead(p, m))
        needed = int(core.min_microbatches_for_bubble(p, BUBBLE_CEILING, measure="fraction"))

        self.set_marks(self.curve, y=100 * curve)
        self.set_marks(self.point, x=[m], y=[100 * fraction])
        over = fraction > BUBBLE_CEILING
        self.set_card("bubble", f"{100 * fraction:.1f} %", f"p = {p}, m = {m}", "bad" if over else "good")
        self.set_card("overhead", f"{100 * overhead:.1f} %", "(p-1)/m of the ideal compute time")
        self.set_card("needed", f"m >= {needed}", f"(p-1)/(m+p-1) < 10 % for p = {p}")
        self.set_math(
            f"<b>Bubble share</b> (p&minus;1)/(m + p&minus;1) = {p - 1}/({m} + {p - 1}) = {100 * fraction:.2f} %"
            f" (Narayanan et al. 2021; the same for GPipe and 1F1B)<br>"
            f"<b>Overhead</b> (p&minus;1)/m = {p - 1}/{m} = {100 * overhead:.2f} % of the ideal compute time<br>"
            f"<b>Under 10 %</b> m &gt; 9(p&minus;1) = {9 * (p - 1)}, so m &ge; {needed}"
            )
        if over:
            self.flag("bubble_over_ceiling",
                      f"With {p} stages and {m} micro-batches the stages sit idle {100 * fraction:.1f} % of every step, "
                      f"above the 10 % ceiling: use at least {needed} micro-batches, or fewer stages.", severity="warn")
        return {"pp": p, "microbatches": m, "bubble_fraction": fraction, "bubble_overhead": overhead,
                "min_microbatches": needed, "curve_microbatches": MICROBATCH_GRID, "curve_fraction": curve}

    def follow_controls(self, other: Instrument, pp: str = "pp", microbatches: str = "microbatches") -> "BubbleChart":
        """Tie this chart's sliders to ``other``'s ``pp`` and ``microbatches`` controls (both ways).

        The link lives in the kernel (``ipywidgets.link``), so it also works
        when the notebook runs headless. Returns ``self``.
        """
        self.links = []
        with self.batch():
            for mine, theirs in (("pp", pp), ("microbatches", microbatches)):
                source = other.controls[theirs]
                self.controls[mine].max = max(self.controls[mine].max, int(getattr(source, "max", 0) or 0))
                self.links.append(widgets.link((source, "value"), (self.controls[mine], "value")))
        return self

"""Pipeline schedule timeline: GPipe, 1F1B and interleaved 1F1B, drawn from the core's schedule.

``course.core.pipeline_schedule`` lays out every forward and backward pass of
every micro-batch on every stage (Narayanan et al. 2021, SC21). This
instrument draws that table as a timeline (one row per stage) and *measures*
what it shows: the idle share of the stages and the peak number of
micro-batches whose activations a stage holds. The cards put the measured idle
share next to the formula ``course.core.bubble_fraction(p, m, v)``; they agree
(tested), which is the point: the bubble is the same for GPipe and 1F1B, and
interleaving with ``v`` chunks divides the bubble *time* by ``v``. What 1F1B changes is the
memory: at most ``p`` micro-batches in flight instead of ``m``.
"""

from __future__ import annotations

import bqplot as bq
import ipywidgets as widgets
import numpy as np

from .. import core
from ..theme import mark_color
from .base import Instrument, figure
from .charts import segments

__all__ = ["PipelineTimeline", "schedule_columns", "measured_idle_share", "measured_peak_in_flight",
           "SCHEDULES", "MAX_LABELS"]

SCHEDULES = ("gpipe", "1f1b", "interleaved")
#: Above this many passes the micro-batch numbers are not written on the bars.
MAX_LABELS = 160
FORWARD_COLOR, BACKWARD_COLOR = mark_color("blue"), mark_color("orange")
#: Micro-batch numbers on the bars: the page's background colour, which contrasts with both bar colours
#: in both themes (white on the Light theme's dark bars, near-black on the Dark theme's light ones).
NUMBER_COLOR = "var(--jp-layout-color0)"


def _column(table, name):
    value = table[name] if isinstance(table, dict) else getattr(table, name)
    return np.asarray(value)


def schedule_columns(table) -> dict:
    """The core's schedule table as plain NumPy columns with a boolean ``forward``.

    Accepts a mapping or an object with attributes ``stage``, ``microbatch``,
    ``chunk``, ``phase``, ``start``, ``end`` (the core's table); ``phase`` may be
    ``"forward"``/``"backward"`` (or ``"F"``/``"B"``) or 0/1.
    """
    phase = _column(table, "phase")
    if phase.dtype.kind in "US O".replace(" ", ""):
        forward = np.char.lower(phase.astype(str)) == "forward"
        forward |= np.char.lower(phase.astype(str)) == "f"
    else:
        forward = phase.astype(int) == 0
    cols = {name: _column(table, name) for name in ("stage", "microbatch", "start", "end")}
    try:
        cols["chunk"] = _column(table, "chunk")
    except (KeyError, AttributeError):
        cols["chunk"] = np.zeros_like(cols["stage"])
    cols["forward"] = forward
    return cols


def measured_idle_share(cols: dict, stages: int) -> float:
    """Idle share of the schedule: ``1 - busy / (stages * makespan)``.

    ``busy`` sums the durations of all passes; ``makespan`` runs from the first
    start to the last end. This is measured on the drawn timeline, not taken
    from a formula, so it can be compared with ``bubble_fraction``.

    Examples
    --------
    >>> cols = schedule_columns(core.pipeline_schedule(4, 8, schedule="gpipe"))
    >>> round(measured_idle_share(cols, 4), 4), round(float(core.bubble_fraction(4, 8)), 4)
    (0.2727, 0.2727)
    """
    busy = float(np.sum(cols["end"] - cols["start"]))
    makespan = float(np.max(cols["end"]) - np.min(cols["start"]))
    return 1.0 - busy / (stages * makespan)


def measured_peak_in_flight(cols: dict) -> int:
    """Most micro-batches (chunks counted separately) whose forward has run but
    whose backward has not finished, on any stage at any time.

    Examples
    --------
    >>> measured_peak_in_flight(schedule_columns(core.pipeline_schedule(4, 8, schedule="1f1b")))
    4
    """
    peak = 0
    for stage in np.unique(cols["stage"]):
        on = cols["stage"] == stage
        # +1 when a forward starts, -1 when the matching backward ends; ends sort before starts at equal times.
        times = np.concatenate([cols["start"][on & cols["forward"]], cols["end"][on & ~cols["forward"]]])
        steps = np.concatenate([np.ones((on & cols["forward"]).sum()), -np.ones((on & ~cols["forward"]).sum())])
        order = np.lexsort((steps, times))
        peak = max(peak, int(np.max(np.cumsum(steps[order]), initial=0)))
    return peak


class PipelineTimeline(Instrument):
    """Timeline of a pipeline schedule with its measured bubble.

    Controls: ``schedule`` (gpipe, 1f1b, interleaved), ``stages`` (p),
    ``microbatches`` (m), ``chunks`` (v, interleaved only) and
    ``backward_ratio`` (t_backward / t_forward).

    ``result``: measured idle share, ``bubble_fraction`` and ``bubble_overhead``
    from the core, peak micro-batches in flight (measured, in stage-sized
    units, and ``in_flight_microbatches`` from the core), makespan in units of
    one forward pass. The core refuses an interleaved schedule whose ``m`` is
    not a multiple of ``p`` (Megatron-LM's rule): that shows as a banner.
    """

    title = "Pipeline schedule timeline"
    subtitle = "Where do the stages sit idle, and how many micro-batches does each one hold?"

    def build(self):
        self.add_control("schedule", widgets.ToggleButtons(options=list(SCHEDULES), value="1f1b", description="Schedule"))
        self.add_control("stages", widgets.IntSlider(value=4, min=1, max=16, description="Stages p"))
        self.add_control("microbatches", widgets.IntSlider(value=8, min=1, max=32, description="Micro-batches m",
                                                                     style={"description_width": "initial"}))
        self.add_control("chunks", widgets.IntSlider(value=2, min=1, max=4, description="Chunks v",
                                                     tooltip="Interleaved 1F1B: each stage holds v separate chunks of "
                                                             "layers; the bubble time shrinks v-fold"))
        self.add_control("backward_ratio", widgets.FloatSlider(value=2.0, min=1.0, max=3.0, step=0.25,
                                                               description="t_b / t_f"))
        xs, self.stage_scale = bq.LinearScale(min=0), bq.LinearScale(reverse=True, min=-0.5, max=3.5)
        ys = self.stage_scale
        empty = np.full(3, np.nan)  # segments(): one NaN-broken series per mark
        self.fwd = bq.Lines(x=empty, y=empty, scales={"x": xs, "y": ys}, colors=[FORWARD_COLOR], stroke_width=14,
                            labels=["forward"])
        self.bwd = bq.Lines(x=empty, y=empty, scales={"x": xs, "y": ys}, colors=[BACKWARD_COLOR], stroke_width=14,
                            labels=["backward"])
        self.numbers = bq.Label(x=[0.0], y=[0.0], text=[""], scales={"x": xs, "y": ys}, colors=[NUMBER_COLOR],
                                align="middle", font_weight="bold", default_size=10, y_offset=4)
        self.add_figure(figure([self.fwd, self.bwd, self.numbers], xs, ys, "time (units of one forward pass)",
                               "stage", title="Schedule (blue forward, orange backward; gaps are bubble)",
                               y_tick_format="d", height="340px"))
        self.stage_axis = self.figures[-1].axes[1]
        for name, label in (("idle", "Measured idle share"), ("formula", "(p-1)/(v m + p-1)"),
                            ("overhead", "Bubble overhead (p-1)/(v m)"), ("in_flight", "Peak in flight"),
                            ("makespan", "Step length")):
            self.add_card(name, label)

    def refresh(self, v):
        schedule = v["schedule"]
        p, m = int(v["stages"]), int(v["microbatches"])
        chunks = int(v["chunks"]) if schedule == "interleaved" else 1
        ratio = float(v["backward_ratio"])
        table = core.pipeline_schedule(p, m, v=chunks, schedule=schedule, t_forward=1.0, t_backward=ratio)
        cols = schedule_columns(table)
        idle = measured_idle_share(cols, p)
        # chunk passes hold 1/v of a stage's layers: count in stage-sized micro-batches
        in_flight = measured_peak_in_flight(cols) / chunks
        in_flight_formula = float(core.in_flight_microbatches(p, m, schedule, chunks))
        fraction = float(core.bubble_fraction(p, m, chunks))
        overhead = float(core.bubble_overhead(p, m, chunks))
        makespan = float(np.max(cols["end"]) - np.min(cols["start"]))

        segments_x = np.stack([cols["start"], cols["end"]], axis=1)
        segments_y = np.stack([cols["stage"], cols["stage"]], axis=1).astype(float)
        fwd, bwd = cols["forward"], ~cols["forward"]
        width = float(np.clip(220.0 / max(p, 1), 4, 22))
        with self.stage_scale.hold_sync():
            self.stage_scale.min, self.stage_scale.max = -0.5, p - 0.5
        self.stage_axis.tick_values = np.arange(p)
        for mark, passes in ((self.fwd, fwd), (self.bwd, bwd)):  # one NaN-broken path per mark, not one per pass
            x, y = segments(cols["start"][passes], cols["end"][passes], cols["stage"][passes])
            self.set_marks(mark, x=x, y=y, stroke_width=width)
        if cols["stage"].size <= MAX_LABELS:
            self.set_marks(self.numbers, x=segments_x.mean(axis=1), y=segments_y[:, 0],
                           text=[str(int(k) + 1) for k in cols["microbatch"]])
        else:
            self.set_marks(self.numbers, x=[0.0], y=[0.0], text=[""])

        self.set_card("idle", f"{100 * idle:.1f} %", "measured on the timeline")
        self.set_card("formula", f"{100 * fraction:.1f} %", f"({p}-1)/({chunks}x{m} + {p}-1)")
        self.set_card("overhead", f"{100 * overhead:.1f} %", "of the ideal compute time")
        self.set_card("in_flight", f"{in_flight:g} micro-batches", f"first stage holds; formula {in_flight_formula:g}")
        self.set_card("makespan", f"{makespan:g} t_f", f"ideal m(t_f + t_b) = {m * (1 + ratio):g} t_f")
        self.set_math(
            f"Bubble time (p&minus;1)(t<sub>f</sub> + t<sub>b</sub>)/v = ({p}&minus;1) &times; (1 + {ratio:g}) / {chunks} ="
            f" {(p - 1) * (1 + ratio) / chunks:g} t<sub>f</sub> per stage<br>"
            f"share of the step = (p&minus;1)/(v&middot;m + p&minus;1) = {p - 1}/({chunks}&times;{m} + {p - 1}) = {100 * fraction:.2f} %;"
            f" measured {100 * idle:.2f} %<br>"
            f"overhead vs ideal = (p&minus;1)/(v&middot;m) = {100 * overhead:.2f} % (the workbook's '(p&minus;1)/m' is this"
            f" overhead, not a share of the step)"
            + ("" if schedule == "interleaved" else "<br><i>Chunks v apply to the interleaved schedule only.</i>")
        )
        return {
            "schedule": schedule, "stages": p, "microbatches": m, "chunks": chunks, "backward_ratio": ratio,
            "measured_idle_share": idle, "bubble_fraction": fraction, "bubble_overhead": overhead,
            "peak_in_flight": in_flight, "in_flight_formula": in_flight_formula, "makespan": makespan, "passes": int(cols["stage"].size),
        }

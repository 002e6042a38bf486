"""Pipeline schedule timeline: GPipe, 1F1B, interleaved 1F1B, ZB-H1 and DualPipe, drawn from the core.

``course.core.pipeline_schedule`` lays out every forward and backward pass of
every micro-batch on every stage (Narayanan et al. 2021, SC21; zero-bubble ZB-H1's
split of the backward into input-gradient B and weight-gradient W passes, Qi et al.
2023; DeepSeek-V3's DualPipe, which feeds micro-batches from both ends). This
instrument draws that table as a timeline (one row per stage) and *measures*
what it shows: the idle share of the stages and the peak number of
micro-batches whose activations a stage holds. The cards put the measured idle
share next to the core's formula (``course.core.schedule_bubble_overhead``, as a share
of the step); they agree (tested), which is the point: the bubble is the same for GPipe
and 1F1B, interleaving with ``v`` chunks divides the bubble *time* by ``v``, ZB-H1 fills
it with deferred W passes down to ``(p-1)(F + B - W)``, DualPipe to ``(p/2-1)(F&B + B -
3W)``. What 1F1B changes is the memory: at most ``p`` micro-batches in flight instead of
``m`` (ZB-H1 the same, DualPipe ``p + 1``).
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

SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1", "dualpipe")
#: Above this many passes the micro-batch numbers are not written on the bars.
MAX_LABELS = 160
FORWARD_COLOR, BACKWARD_COLOR, WEIGHT_COLOR = mark_color("blue"), mark_color("orange"), mark_color("green")
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
    ``"forward"``/``"backward"``/``"weight"`` (or ``"F"``/``"B"``/``"W"``) or 0/1/2.
    Adds ``weight`` (a weight-gradient W pass of ZB-H1 or DualPipe) and ``releases``
    (the pass after which a micro-batch's activations are freed: its W where the schedule
    splits the backward, else its backward).
    """
    phase = _column(table, "phase")
    if phase.dtype.kind in "US O".replace(" ", ""):
        name = np.char.lower(phase.astype(str))
        forward = (name == "forward") | (name == "f")
        weight = (name == "weight") | (name == "w")
    else:
        forward = phase.astype(int) == 0
        weight = phase.astype(int) == 2
    cols = {name: _column(table, name) for name in ("stage", "microbatch", "start", "end")}
    try:
        cols["chunk"] = _column(table, "chunk")
    except (KeyError, AttributeError):
        cols["chunk"] = np.zeros_like(cols["stage"])
    cols["forward"] = forward
    cols["weight"] = weight
    cols["releases"] = weight if weight.any() else ~forward
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
    whose backward (its W pass, where the schedule splits it) has not finished, on any
    stage at any time.

    Examples
    --------
    >>> measured_peak_in_flight(schedule_columns(core.pipeline_schedule(4, 8, schedule="1f1b")))
    4
    >>> measured_peak_in_flight(schedule_columns(core.pipeline_schedule(4, 8, schedule="dualpipe")))
    5
    """
    peak = 0
    for stage in np.unique(cols["stage"]):
        on = cols["stage"] == stage
        # +1 when a forward starts, -1 when the matching backward ends; ends sort before starts at equal times.
        release = cols.get("releases", ~cols["forward"])
        times = np.concatenate([cols["start"][on & cols["forward"]], cols["end"][on & release]])
        steps = np.concatenate([np.ones((on & cols["forward"]).sum()), -np.ones((on & release).sum())])
        order = np.lexsort((steps, times))
        peak = max(peak, int(np.max(np.cumsum(steps[order]), initial=0)))
    return peak


class PipelineTimeline(Instrument):
    """Timeline of a pipeline schedule with its measured bubble.

    Controls: ``schedule`` (gpipe, 1f1b, interleaved, zb-h1, dualpipe), ``stages`` (p),
    ``microbatches`` (m), ``chunks`` (v, interleaved only: moving it above 1 under another
    schedule selects the interleaved one, the only schedule with chunks) and
    ``backward_ratio`` (t_backward / t_forward; ZB-H1 and DualPipe split the backward into
    equal B and W passes).

    ``result``: measured idle share, the core's bubble share
    (``schedule_bubble_overhead`` as a share of the step, with F, B, W from the slider) and
    overhead, peak micro-batches in flight (measured, in stage-sized units, and
    ``schedule_memory`` from the core), makespan in units of one forward pass. The core
    refuses an interleaved schedule whose ``m`` is not a multiple of ``p`` (Megatron-LM's
    rule) and a DualPipe without an even ``p`` and an even ``m >= 2p`` (DeepSeek's
    implementation): that shows as a banner.
    """

    title = "Pipeline schedule timeline"
    subtitle = "Where do the stages sit idle, and how many micro-batches does each one hold?"

    def build(self):
        self.add_control("schedule", widgets.ToggleButtons(options=list(SCHEDULES), value="1f1b", description="Schedule"))
        self.add_control("stages", widgets.IntSlider(value=4, min=1, max=16, description="Stages p"))
        self.add_control("microbatches", widgets.IntSlider(value=8, min=1, max=32, description="Micro-batches m",
                                                                     style={"description_width": "initial"}))
        # the chunks slider updates through _on_chunks (one update, switching to the interleaved schedule
        # where v means something): registered without the generic update so one move is one redraw
        self.add_control("chunks", widgets.IntSlider(value=2, min=1, max=4, description="Chunks v",
                                                     tooltip="Interleaved 1F1B: each stage holds v separate chunks of "
                                                             "layers; the bubble time shrinks v-fold"),
                         triggers_update=False)
        self.observe("chunks", self._on_chunks)
        self.add_control("backward_ratio", widgets.FloatSlider(value=2.0, min=1.0, max=3.0, step=0.25,
                                                               description="t_b / t_f"))
        xs, self.stage_scale = bq.LinearScale(min=0), bq.LinearScale(reverse=True, min=-0.5, max=3.5)
        ys = self.stage_scale
        # forward, backward (B) and weight-gradient (W) passes: one mark of three NaN-broken rows, so that a move
        # sends one message and bqplot redraws once, not three times
        self.passes = bq.Lines(x=np.full((3, 3), np.nan), y=np.full((3, 3), np.nan), scales={"x": xs, "y": ys},
                               colors=[FORWARD_COLOR, BACKWARD_COLOR, WEIGHT_COLOR], stroke_width=14,
                               labels=["forward", "backward (B: input gradient)", "weight gradient (W)"])
        self.numbers = bq.Label(x=[0.0], y=[0.0], text=[""], scales={"x": xs, "y": ys}, colors=[NUMBER_COLOR],
                                align="middle", font_weight="bold", default_size=10, y_offset=4)
        self.add_figure(figure([self.passes, self.numbers], xs, ys, "time (units of one forward pass)",
                               "stage", title="Schedule (blue forward, orange backward, green weight gradient; "
                                              "gaps are bubble)",
                               y_tick_format="d", height="340px"))
        self.stage_axis = self.figures[-1].axes[1]
        for name, label in (("idle", "Measured idle share"), ("formula", "Bubble share (core formula)"),
                            ("overhead", "Bubble overhead"), ("in_flight", "Peak in flight"),
                            ("makespan", "Step length")):
            self.add_card(name, label)

    def _on_chunks(self, change):
        """v > 1 exists only in the interleaved schedule: select it, then redraw once."""
        if change["new"] > 1 and self.controls["schedule"].value != "interleaved":
            with self.batch():  # the schedule change triggers no update of its own; batch() ends with one
                self.controls["schedule"].value = "interleaved"
        elif not self._suspended:
            self.update()

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
        named = schedule if schedule in core.NAMED_SCHEDULES else "1f1b"
        in_flight_formula = float(core.schedule_memory(p, m, named, chunks)[0])
        # F, B, W as the timeline runs them: the backward split into equal B and W passes
        overhead = float(core.schedule_bubble_overhead(p, m, named, chunks, shares=(1.0, ratio / 2, ratio / 2)))
        fraction = overhead / (1.0 + overhead)
        makespan = float(np.max(cols["end"]) - np.min(cols["start"]))

        segments_x = np.stack([cols["start"], cols["end"]], axis=1)
        segments_y = np.stack([cols["stage"], cols["stage"]], axis=1).astype(float)
        fwd, wgt = cols["forward"], cols["weight"]
        bwd = ~fwd & ~wgt
        width = float(np.clip(220.0 / max(p, 1), 4, 22))
        with self.stage_scale.hold_sync():
            self.stage_scale.min, self.stage_scale.max = -0.5, p - 0.5
        self.stage_axis.tick_values = np.arange(p)
        rows = []
        for passes in (fwd, bwd, wgt):  # one NaN-broken path per row
            if passes.any():
                rows.append(segments(cols["start"][passes], cols["end"][passes], cols["stage"][passes]))
            else:  # no W passes (GPipe, 1F1B, interleaved): an empty row
                rows.append((np.full(3, np.nan), np.full(3, np.nan)))
        length = max(x.size for x, _ in rows)
        x, y = np.full((3, length), np.nan), np.full((3, length), np.nan)
        for i, (row_x, row_y) in enumerate(rows):
            x[i, :row_x.size], y[i, :row_y.size] = row_x, row_y
        self.set_marks(self.passes, x=x, y=y, stroke_width=width)
        if cols["stage"].size <= MAX_LABELS:
            self.set_marks(self.numbers, x=segments_x.mean(axis=1), y=segments_y[:, 0],
                           text=[str(int(k) + 1) for k in cols["microbatch"]])
        else:
            self.set_marks(self.numbers, x=[0.0], y=[0.0], text=[""])

        b = w = ratio / 2
        formula, peek = {
            "zb-h1": (f"({p}-1)(F+B-W) = {(p - 1) * (1 + b - w):g} t_f of bubble",
                      f"ZB-H1 (Qi et al. 2023): the backward splits into B (input gradient, {b:g} t<sub>f</sub>) and W "
                      f"(weight gradient, {w:g} t<sub>f</sub>); W waits, filling the drain. Bubble (p&minus;1)(F + B &minus; W) "
                      f"= {p - 1} &times; {1 + b - w:g} = {(p - 1) * (1 + b - w):g} t<sub>f</sub> (1F1B: "
                      f"{(p - 1) * (1 + ratio):g}); same peak memory as 1F1B. Exact for m &ge; p and W &le; F."),
            "dualpipe": (f"({p}/2-1)(F&B+B-3W) = {max(p / 2 - 1, 0) * (1 + 2 * b - 2 * w):g} t_f of bubble",
                         f"DualPipe (DeepSeek-V3): micro-batches 1&ndash;{m // 2} enter at stage 0, "
                         f"{m // 2 + 1}&ndash;{m} at stage {p - 1}; each device holds a stage of both directions (two "
                         f"copies of its weights) and runs a forward beside another micro-batch's backward (F&amp;B = "
                         f"F + B + W). Bubble (p/2&minus;1)(F&amp;B + B &minus; 3W) = {max(p / 2 - 1, 0):g} &times; "
                         f"{1 + 2 * b - 2 * w:g} = {max(p / 2 - 1, 0) * (1 + 2 * b - 2 * w):g} t<sub>f</sub>; "
                         f"peak in flight p + 1 = {p + 1}."),
        }.get(schedule, (f"({p}-1)/({chunks}x{m} + {p}-1)",
                         f"Bubble time (p&minus;1)(t<sub>f</sub> + t<sub>b</sub>)/v = ({p}&minus;1) &times; (1 + {ratio:g}) "
                         f"/ {chunks} = {(p - 1) * (1 + ratio) / chunks:g} t<sub>f</sub> per stage"))
        self.set_card("idle", f"{100 * idle:.1f} %", "measured on the timeline")
        self.set_card("formula", f"{100 * fraction:.1f} %", formula)
        self.set_card("overhead", f"{100 * overhead:.1f} %", "of the ideal compute time")
        self.set_card("in_flight", f"{in_flight:g} micro-batches", f"fullest stage holds; formula {in_flight_formula:g}")
        self.set_card("makespan", f"{makespan:g} t_f", f"ideal m(t_f + t_b) = {m * (1 + ratio):g} t_f")
        self.set_math(
            f"{peek}<br>"
            f"share of the step = overhead / (1 + overhead) = {100 * fraction:.2f} %; measured {100 * idle:.2f} %<br>"
            f"overhead vs ideal compute m(t<sub>f</sub> + t<sub>b</sub>) = {100 * overhead:.2f} % (for 1F1B the "
            f"workbook's '(p&minus;1)/m'; not a share of the step)"
            + ("" if schedule == "interleaved" else "<br><i>Chunks v apply to the interleaved schedule only.</i>")
        )
        return {
            "schedule": schedule, "stages": p, "microbatches": m, "chunks": chunks, "backward_ratio": ratio,
            "measured_idle_share": idle, "bubble_fraction": fraction, "bubble_overhead": overhead,
            "peak_in_flight": in_flight, "in_flight_formula": in_flight_formula, "makespan": makespan,
            "passes": int(cols["stage"].size), "weight_passes": int(wgt.sum()),
            "directions": int(np.unique(table["direction"]).size),
        }

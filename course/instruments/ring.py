"""Step-by-step ring all-reduce: which chunk moves where at each of the 2(N-1) steps.

The schedule (who sends which chunk to whom, and whether the step belongs to
the reduce-scatter or the all-gather phase) comes from
``course.core.ring_allreduce_schedule``. This view only replays it: it tracks,
for every rank and chunk, which ranks' gradients are summed in the copy that
rank holds (reduce-scatter adds the sender's partial sum, all-gather copies
the finished sum), so the student can watch every chunk become complete on
one rank after N-1 steps and on all ranks after 2(N-1).
"""

from __future__ import annotations


import bqplot as bq
import ipywidgets as widgets
import numpy as np

from .. import core
from ..theme import mark_color
from .base import Instrument, figure
from .charts import UNNAMED, segments

__all__ = ["RingAllreduceView", "schedule_table", "replay"]

def schedule_table(n: int) -> dict[str, np.ndarray]:
    """The core's ring schedule as flat arrays: step, src, dst, chunk, reduce (bool).

    One row per (step, sending rank); steps are numbered 0 .. 2(n-1)-1.
    """
    table = core.ring_allreduce_schedule(n)
    return {k: np.asarray(table[k]).ravel() for k in ("step", "src", "dst", "chunk", "reduce")}


def replay(n: int, table: dict[str, np.ndarray]) -> np.ndarray:
    """Contributions held after each step: bool array (steps+1, rank, chunk, origin rank)."""
    steps = int(table["step"].max()) + 1 if table["step"].size else 0
    held = np.zeros((steps + 1, n, n, n), dtype=bool)
    held[0] = np.eye(n, dtype=bool)[:, None, :]  # rank r holds only its own gradient in every chunk
    for s in range(steps):
        rows = table["step"] == s
        src, dst, chunk, red = table["src"][rows], table["dst"][rows], table["chunk"][rows], table["reduce"][rows]
        before = held[s]
        after = before.copy()
        incoming = before[src, chunk]  # what each sender holds of the chunk it sends
        after[dst[red], chunk[red]] |= incoming[red]
        after[dst[~red], chunk[~red]] = incoming[~red]
        held[s + 1] = after
    return held


class RingAllreduceView(Instrument):
    """Watch ring all-reduce chunk by chunk.

    Controls: ``gpus`` (N ranks, 2..16) and ``step`` (0 = before the first
    send, k = after step k, up to 2(N-1)); a Play button steps through.
    Charts: the ring with this step's sends (arrow and chunk label per rank),
    and a rank x chunk grid coloured by how many ranks' gradients the held copy
    already sums (N = complete).
    """

    title = "Ring all-reduce, step by step"
    subtitle = "Reduce-scatter for N-1 steps, then all-gather for N-1 steps; each send is 1/N of the message."
    MAX_N = 16

    def build(self):
        self.add_control("gpus", widgets.IntSlider(value=4, min=2, max=self.MAX_N, description="ranks N"))
        self.add_control("step", widgets.IntSlider(value=0, min=0, max=6, description="after step"))
        self.play = widgets.Play(value=0, min=0, max=6, interval=900, description="play")
        # linked in the kernel, not in the browser (jslink): a key press on the step slider then sends one widget
        # message, not two (the Play's own), and the kernel goes busy and idle once per move; JupyterLab redraws
        # its kernel status on each of those
        self._play_link = widgets.link((self.play, "value"), (self.controls["step"], "value"))
        self.extra.children = [self.play]
        self.observe("gpus", self._resize_step)

        rx, ry = bq.LinearScale(min=-1.35, max=1.35), bq.LinearScale(min=-1.35, max=1.35)
        self.nodes = bq.Scatter(**{**UNNAMED, "display_names": True}, x=[0.0], y=[0.0], scales={"x": rx, "y": ry}, default_size=600,
                                colors=[mark_color("blue")], stroke=mark_color("ink"), names=["0"])
        self.links = bq.Lines(x=[np.nan], y=[np.nan], scales={"x": rx, "y": ry}, colors=[mark_color("gray")],
                              stroke_width=1.5)
        self.sends = bq.Lines(x=[np.nan], y=[np.nan], scales={"x": rx, "y": ry}, colors=[mark_color("green")],
                              stroke_width=3)
        self.heads = bq.Scatter(**UNNAMED, x=[0.0], y=[0.0], rotation=[0.0], marker="arrow", default_size=90,
                                scales={"x": rx, "y": ry, "rotation": bq.LinearScale(min=0, max=360)},
                                colors=[mark_color("green")])  # no empty text per arrow
        self.chunk_labels = bq.Label(x=[0.0], y=[0.0], text=[""], scales={"x": rx, "y": ry},
                                     font_weight="bold", colors=[mark_color("ink")], align="middle")
        ring_fig = figure([self.links, self.sends, self.heads, self.nodes, self.chunk_labels], rx, ry, "", "",
                          title="Sends in this step", height="360px")
        for axis in ring_fig.axes:
            axis.visible = False
        ring_fig.min_aspect_ratio = ring_fig.max_aspect_ratio = 1
        self.add_figure(ring_fig)

        col, row = bq.OrdinalScale(), bq.OrdinalScale(reverse=True)
        self.color_scale = bq.ColorScale(min=1, max=4, colors=["#fef3c7", "#15803d"])
        self.grid = bq.GridHeatMap(color=np.ones((4, 4)), row=np.arange(4), column=np.arange(4),
                                   scales={"row": row, "column": col, "color": self.color_scale},
                                   stroke="var(--jp-layout-color0)", display_format=".0f", font_style={"font-size": "13px"})
        grid_fig = bq.Figure(marks=[self.grid], title="Ranks summed into each held chunk",
                             axes=[bq.Axis(scale=col, label="chunk"), bq.Axis(scale=row, label="rank", side="left"),
                                   bq.ColorAxis(scale=self.color_scale, side="right", tick_format="d", num_ticks=2)],
                             fig_margin={"top": 40, "bottom": 50, "left": 60, "right": 70},
                             layout=widgets.Layout(height="360px", min_width="320px", flex="1 1 360px"),
                             animation_duration=0)
        self.add_figure(grid_fig)
        for name, label in (("phase", "Phase"), ("step", "Step"), ("sent", "Sent per rank so far"),
                            ("complete", "Complete chunk copies")):
            self.add_card(name, label)
        self._cache: dict[int, tuple[dict, np.ndarray]] = {}
        self._resize_step({"new": self.controls["gpus"].value})

    def _resize_step(self, change):
        """The step range follows N; no update of its own: the change of N that called it updates once."""
        last = 2 * (int(change["new"]) - 1)
        self._suspended += 1
        try:
            step = self.controls["step"]
            step.max = max(last, step.min)
            step.value = min(step.value, last)
            self.play.max = step.max
        finally:
            self._suspended -= 1

    def _schedule(self, n: int):
        if n not in self._cache:
            table = schedule_table(n)
            self._cache[n] = (table, replay(n, table))
        return self._cache[n]

    def describe(self, fig):
        r = self.result
        if not r:
            return super().describe(fig)
        n = r["gpus"]
        if fig is self.figures[0]:
            sends = "; ".join(f"rank {x['src']} sends chunk {x['chunk']} to rank {x['dst']}" for x in r["sends"])
            return (f"Chart: {fig.title}: {n} ranks in a ring, after step {r['step']} of {r['steps']} "
                    f"({r['phase']}). " + (sends + "." if sends else "Nothing has been sent yet."))
        return (f"Chart: {fig.title}: for each of the {n} ranks (rows) and {n} chunks (columns), how many ranks' "
                f"gradients the held copy sums; {r['complete_copies']} of {n * n} copies are complete (sum {n}).")

    def refresh(self, v):
        n, k = int(v["gpus"]), int(v["step"])
        table, held = self._schedule(n)
        total = held.shape[0] - 1
        k = min(k, total)
        counts = held[k].sum(axis=2)  # (rank, chunk)

        angles = np.pi / 2 - 2 * np.pi * np.arange(n) / n
        px, py = np.cos(angles), np.sin(angles)
        nxt = (np.arange(n) + 1) % n
        self.set_marks(self.nodes, x=px, y=py, names=[str(r) for r in range(n)])
        x, y = segments(px, px[nxt], py, py[nxt])  # one path, not one curve per link
        self.set_marks(self.links, x=x, y=y)
        rows = table["step"] == (k - 1)
        phase = "before the first send"
        if k > 0 and rows.any():
            src, dst, chunk = table["src"][rows], table["dst"][rows], table["chunk"][rows]
            reduce = bool(table["reduce"][rows][0])
            phase = "reduce-scatter" if reduce else "all-gather"
            shrink = 0.2  # keep arrows off the node circles
            x0, y0 = px[src] + shrink * (px[dst] - px[src]), py[src] + shrink * (py[dst] - py[src])
            x1, y1 = px[dst] - shrink * (px[dst] - px[src]), py[dst] - shrink * (py[dst] - py[src])
            heading = np.degrees(np.arctan2(x1 - x0, y1 - y0)) % 360  # bqplot rotates clockwise from up
            colour = mark_color("green") if reduce else mark_color("blue")
            x, y = segments(x0, x1, y0, y1)
            self.set_marks(self.sends, x=x, y=y, colors=[colour])
            self.set_marks(self.heads, x=x1, y=y1, rotation=heading, colors=[colour])
            mid_x, mid_y = (x0 + x1) / 2 * 1.18, (y0 + y1) / 2 * 1.18
            self.set_marks(self.chunk_labels, x=mid_x, y=mid_y, text=[f"c{c}" for c in chunk])
        else:
            self.set_marks(self.sends, x=[np.nan], y=[np.nan])
            self.set_marks(self.heads, x=np.zeros(0), y=np.zeros(0), rotation=np.zeros(0))
            self.set_marks(self.chunk_labels, x=np.zeros(0), y=np.zeros(0), text=[])
        self.color_scale.max = float(n)
        # rows, columns and colours change shape together: validate them only as a set
        with self.grid.hold_sync(), self.grid.hold_trait_notifications():  # only what changed is sent: a step move sends the colours only
            self.set_marks(self.grid, color=counts.astype(float), row=np.arange(n), column=np.arange(n))

        complete = int((counts == n).sum())
        self.set_card("phase", phase, tone="good" if phase == "reduce-scatter" else "normal")
        self.set_card("step", f"{k} / {total}")
        self.set_card("sent", f"{k}/{n} of M", f"{k} chunk(s) of M/{n}")
        self.set_card("complete", f"{complete} / {n * n}")
        self.set_math(
            f"N = {n}: {n - 1} reduce-scatter steps, then {n - 1} all-gather steps; "
            f"each rank sends one chunk of M/N per step.<br>"
            f"After step {k}: each rank has sent {k}·M/{n}; in total 2(N−1)/N·M = {2 * (n - 1)}/{n}·M per rank, "
            f"the bandwidth term of T<sub>ring</sub> = 2(N−1)α + 2(N−1)/N·Mβ (β = seconds per byte)."
        )
        return {
            "gpus": n, "step": k, "steps": total, "phase": phase,
            "counts": counts.tolist(), "complete_copies": complete,
            "sends": [{"src": int(s), "dst": int(d), "chunk": int(c)} for s, d, c in
                      zip(table["src"][rows], table["dst"][rows], table["chunk"][rows])] if k > 0 else [],
        }

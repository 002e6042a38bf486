"""Synchronization audit (Lab 05 plan, Part 3): sync vs async SGD, stragglers, checkpoints, dollars.

The infrastructure lead says "wait-for-all" synchronization wastes about
$1M a month and asks whether switching to asynchronous updates or to ZeRO
saves more. Every number comes from the core:

* step time, throughput, idle share and staleness with stragglers:
  ``course.core.sync_step_time``, ``sync_throughput``, ``async_throughput``,
  ``async_speedup``, ``sync_idle_fraction``, ``mean_staleness``,
  ``straggler_staleness`` (Dean et al. 2012; Chen et al. 2016; Dutta et al. 2018);
* checkpoint cost and failures: ``checkpoint_bytes``, ``checkpoint_write_time``
  (``writers`` ranks writing shards in parallel), ``cluster_mtbf``,
  ``young_interval``, ``waste_fraction`` (Young 1974);
* ZeRO memory: ``model_state_bytes`` (Rajbhandari et al. 2020).

How the dollars are counted (one month of the whole cluster, the same training
progress in every column):

* **sync (today)**: the bill, split into useful work, waiting for stragglers
  (``sync_idle_fraction``) and checkpoint writes plus rework after failures
  (``waste_fraction`` at Young's interval, the full checkpoint written by one
  rank, as PyTorch DDP saves from rank 0);
* **async**: nobody waits, so the same samples cost ``bill / async_speedup``;
  stale gradients (mean staleness N - 1) need extra steps to reach the same
  loss, a percentage the student sets (it depends on model and learning rate,
  Dutta et al. 2018); the break-even penalty is ``async_speedup - 1``;
* **sync + ZeRO**: still synchronous (stragglers still cost the same), but the
  optimizer state is sharded over the N data-parallel ranks, so each rank
  writes only its shard of the checkpoint (DeepSpeed writes one optimizer
  shard per rank): ``checkpoint_write_time(..., writers=N)``, which shrinks the
  checkpoint and rework waste. It also cuts model-state memory per GPU.
"""

from __future__ import annotations

import bqplot as bq
import ipywidgets as widgets
import numpy as np

from .. import core
from ..core import catalog, units
from ..theme import mark_color
from .base import Instrument, figure, fmt_bytes, fmt_time
from .charts import UNNAMED
from .context import gpu_cluster_only
from .controls import LogFloatSlider

__all__ = ["SyncAudit", "HOURS_PER_MONTH", "GPU_MTBF_SECONDS", "STORAGE_BANDWIDTH", "STRAGGLER_GRID"]

#: Hours in an average month (365.25 * 24 / 12).
HOURS_PER_MONTH = core.HOURS_PER_MONTH
#: Mean time between failures of one GPU's share of the job: Llama 3 405B saw 419
#: unexpected interruptions in 54 days on 16,384 H100s (Dubey et al. 2024,
#: section 3.3.4): 54 * 24 * 16384 / 419 = 50,676 GPU-hours, rounded.
GPU_MTBF_SECONDS = 50_000 * units.hour
#: Storage write rate of one writer: workbook exercise 7.2 (980 GB in 98 s).
STORAGE_BANDWIDTH = 10 * units.GB_per_s
#: Restart after a failure (reload, re-queue): workbook chapter 7's 2 minutes.
RESTART_SECONDS = 2 * units.minute
#: Normal step of a healthy worker, and its samples: a normalized workload.
STEP_SECONDS = 1.0
SAMPLES_PER_WORKER = 32
#: Straggler shares drawn on the throughput chart.
STRAGGLER_GRID = np.linspace(0.0, 0.20, 81)
STRATEGIES = core.SYNC_STRATEGIES
COMPONENTS = core.COST_COMPONENTS
COMPONENT_COLORS = tuple(mark_color(c) for c in ("green", "red", "purple", "orange"))
#: The GPU counts the slider steps through (8 .. 16,384), read out with thousands separators like every count.
WORKER_CHOICES = tuple((f"{2 ** k:,}", 2 ** k) for k in range(3, 15))
#: Checkpoint times (s) Lab 05 Part 3 names: the same 980 GB written at 10 to 20 GB/s (98 s: workbook 7.2).
CHECKPOINT_PRESETS = (98.0, 82.0, 70.0, 58.0, 49.0)


def _money(dollars: float) -> str:
    if abs(dollars) >= 1e6:
        return f"${dollars / 1e6:.2f}M"
    if abs(dollars) >= 1e3:
        return f"${dollars / 1e3:.0f}k"
    return f"${dollars:.0f}"


class SyncAudit(Instrument):
    """Sync vs async SGD with stragglers, checkpoint cost, and the ZeRO-vs-async dollar comparison.

    Controls: ``mode`` ("sync"/"async": which one the cards describe),
    ``workers`` (N GPUs), ``stragglers_pct`` (share of workers slow in a step),
    ``slowdown`` (a straggler's step time over a healthy one's), ``checkpoint_s``
    (seconds to write the full checkpoint from one rank), ``staleness_pct``
    (extra steps async needs), ``zero_stage`` (1-3) and ``model``.

    ``result``: throughputs (samples/s), idle share, staleness, and the monthly
    dollars of each strategy with its savings over today.
    """

    title = "Synchronization audit"
    subtitle = "Wait for all, or never wait? And what does ZeRO change?"

    def track_unsupported(self, track):
        return gpu_cluster_only(self.title[:1].lower() + self.title[1:], track)

    def build(self):
        self.accelerator = catalog.accelerator("H100")
        self.add_control("mode", widgets.ToggleButtons(options=["sync", "async"], value="sync", description="SGD"))
        self.add_control("workers", widgets.SelectionSlider(options=WORKER_CHOICES, value=1024, description="GPUs N"))
        self.add_control("stragglers_pct", widgets.FloatSlider(value=5.0, min=0.0, max=20.0, step=0.5,
                                                               description="Stragglers %",
                                                               style={"description_width": "initial"}))
        self.add_control("slowdown", widgets.FloatSlider(value=1.15, min=1.0, max=4.0, step=0.05,
                                                         description="Slowdown x"))
        # 1 s .. 50 min through 1-1.4-2-3-4-5-7 x 10^k (one arrow press: 25-50 %), every checkpoint time of
        # the lab a stop of its own (a FloatLogSlider step fine enough to hold 98 s moved 0.23 % per press)
        self.add_control("checkpoint_s", LogFloatSlider(value=98.0, min=1.0, max=3000.0, presets=CHECKPOINT_PRESETS,
                                                        description="Checkpoint s",
                                                        style={"description_width": "initial"}))
        self.add_control("staleness_pct", widgets.FloatSlider(value=0.0, min=0.0, max=100.0, step=1.0,
                                                              description="Async extra steps %",
                                                              style={"description_width": "initial"}))
        self.add_control("zero_stage", widgets.ToggleButtons(options=[1, 2, 3], value=1, description="ZeRO",
                                                             style={"button_width": "40px"}))
        self.add_control("model", widgets.Dropdown(options=["llama3-8b", "llama3-70b", "gpt3-175b", "llama3-405b"],
                                                   value="llama3-70b", description="Model"))

        xs, ys = bq.LinearScale(min=0, max=20), bq.LinearScale(min=0)
        self.sync_line = bq.Lines(x=100 * STRAGGLER_GRID, y=np.zeros(STRAGGLER_GRID.size), scales={"x": xs, "y": ys},
                                  colors=[mark_color("blue")], stroke_width=2.5, labels=["sync"], display_legend=True)
        self.async_line = bq.Lines(x=100 * STRAGGLER_GRID, y=np.zeros(STRAGGLER_GRID.size), scales={"x": xs, "y": ys},
                                   colors=[mark_color("orange")], stroke_width=2.5, labels=["async"], display_legend=True)
        self.point = bq.Scatter(**UNNAMED, x=[5.0], y=[0.0], scales={"x": xs, "y": ys}, colors=[mark_color("ink")], default_size=100,
                                labels=["selected share"], display_legend=True)
        self.add_figure(figure([self.sync_line, self.async_line, self.point], xs, ys, "stragglers (% of workers)",
                               "samples / s (healthy GPU: 32 per s)", title="Throughput vs stragglers", legend=True))

        bx, by = bq.OrdinalScale(), bq.LinearScale(min=0)
        self.bill_scale = by
        self.bars = bq.Bars(x=list(STRATEGIES), y=np.zeros((len(COMPONENTS), len(STRATEGIES))), type="stacked",
                            scales={"x": bx, "y": by}, colors=list(COMPONENT_COLORS), labels=list(COMPONENTS),
                            display_legend=True, padding=0.35)
        self.add_figure(figure([self.bars], bx, by, "strategy", "$ per month (millions)",
                               title="Monthly bill for the same progress", legend=True))
        for name, label in (("throughput", "Throughput"), ("idle", "Sync idle share"), ("staleness", "Async staleness"),
                            ("async_saves", "Async saves / month"), ("zero_saves", "ZeRO saves / month"),
                            ("memory", "Model states / GPU (DP only)")):
            self.add_card(name, label)

    def refresh(self, v):
        n = int(v["workers"])
        f = float(v["stragglers_pct"]) / 100.0
        s = float(v["slowdown"])
        penalty = float(v["staleness_pct"]) / 100.0
        zero = int(v["zero_stage"])
        delta = float(v["checkpoint_s"])
        params = catalog.model(v["model"]).params

        sync_curve = np.asarray(core.sync_throughput(SAMPLES_PER_WORKER, STEP_SECONDS, n, STRAGGLER_GRID, s), float)
        async_curve = np.asarray(core.async_throughput(SAMPLES_PER_WORKER, STEP_SECONDS, n, STRAGGLER_GRID, s), float)
        sync_x = float(core.sync_throughput(SAMPLES_PER_WORKER, STEP_SECONDS, n, f, s))
        async_x = float(core.async_throughput(SAMPLES_PER_WORKER, STEP_SECONDS, n, f, s))
        speedup = float(core.async_speedup(n, f, s))
        idle = float(core.sync_idle_fraction(n, f, s))
        staleness = int(core.mean_staleness(n))
        slow_staleness = float(core.straggler_staleness(n, f, s))

        # Checkpoints: one rank writes everything (today, async) vs every ZeRO rank its shard.
        mtbf = float(core.cluster_mtbf(GPU_MTBF_SECONDS, n))
        delta_zero = float(core.checkpoint_write_time(delta * STORAGE_BANDWIDTH, STORAGE_BANDWIDTH, writers=n))
        deltas = np.array([delta, delta_zero])
        intervals = np.asarray(core.young_interval(deltas, mtbf), float)
        wastes = np.asarray(core.waste_fraction(intervals, deltas, mtbf, RESTART_SECONDS), float)

        bill = float(core.monthly_bill(n, self.accelerator.price_per_hour, HOURS_PER_MONTH))
        costs = core.strategy_monthly_costs(bill, n, f, s, delta, mtbf, RESTART_SECONDS, extra_steps=penalty)
        parts = costs.T  # (components, strategies), as the stacked bars draw them
        totals = parts.sum(axis=0)  # the bars break down the same totals the core's savings give
        async_saves = float(core.async_monthly_savings(bill, n, f, s, extra_steps=penalty))
        zero_saves = float(core.sharded_checkpoint_monthly_savings(bill, delta, n, mtbf, RESTART_SECONDS))

        state_plain = float(core.model_state_bytes(params, zero_stage=0, dp=n))
        state_zero = float(core.model_state_bytes(params, zero_stage=zero, dp=n))

        self.set_marks(self.sync_line, y=sync_curve)
        self.set_marks(self.async_line, y=async_curve)
        self.set_marks(self.point, x=[100 * f], y=[sync_x if v["mode"] == "sync" else async_x])
        self.bill_scale.max = 1.1 * float(totals.max()) / 1e6  # the legend is under the chart
        self.set_marks(self.bars, y=parts / 1e6)

        chosen = sync_x if v["mode"] == "sync" else async_x
        self.set_card("throughput", f"{chosen:,.0f} /s", f"{v['mode']}; async/sync = {speedup:.2f}x")
        self.set_card("idle", f"{100 * idle:.1f} %", f"{_money(costs[0, 1])} / month waiting",
                      "bad" if idle > 0.1 else "warn" if idle > 0.02 else "good")
        self.set_card("staleness", f"{staleness:,} updates", f"a straggler's: {slow_staleness:,.0f}")
        self.set_card("async_saves", _money(async_saves), f"break-even at {100 * (speedup - 1):.0f} % extra steps",
                      "good" if async_saves > zero_saves else "normal")
        self.set_card("zero_saves", _money(zero_saves), f"checkpoint {fmt_time(delta)} -> {fmt_time(delta_zero)}",
                      "good" if zero_saves >= async_saves else "normal")
        self.set_card("memory", fmt_bytes(state_zero), f"ZeRO-{zero}; without: {fmt_bytes(state_plain)}")

        self.set_math(
            f"<b>Sync step</b> E[T] = t(1 + (s&minus;1)(1 &minus; (1&minus;f)<sup>N</sup>)) = 1 &times; (1 + {s - 1:.2f} &times; "
            f"(1 &minus; {1 - f:.3f}<sup>{n:,}</sup>)) = {float(core.sync_step_time(STEP_SECONDS, n, f, s)):.3f} s;"
            f" async worker t(1 + (s&minus;1)f) = {float(core.async_worker_step_time(STEP_SECONDS, f, s)):.3f} s<br>"
            f"<b>Idle share</b> 1 &minus; T<sub>async</sub>/T<sub>sync</sub> = {100 * idle:.1f} %; async speed-up {speedup:.3f}x;"
            f" mean staleness N&minus;1 = {staleness:,}<br>"
            f"<b>Checkpoints</b> MTBF = {GPU_MTBF_SECONDS / 3600:,.0f} h / {n:,} = {fmt_time(mtbf)}; Young &tau; = &radic;(2&delta;M) ="
            f" {fmt_time(intervals[0])}; waste = &delta;/&tau; + (&tau;/2 + R)/M = {100 * wastes[0]:.2f} %"
            f" (ZeRO shards: &delta; = {fmt_time(delta_zero)}, waste {100 * wastes[1]:.3f} %)<br>"
            f"<b>Bill</b> N &times; ${self.accelerator.price_per_hour:.2f}/h &times; {HOURS_PER_MONTH} h = {_money(bill)};"
            f" async: bill &times; (1 + {penalty:.2f}) / {speedup:.3f} = {_money(totals[1])}; sync + ZeRO: {_money(totals[2])}"
        )
        if v["mode"] == "async" and penalty > speedup - 1:
            self.flag("async_costs_more",
                      f"With {100 * penalty:.0f} % extra steps for stale gradients, async needs more GPU-hours than "
                      f"waiting for stragglers: it only pays below {100 * (speedup - 1):.0f} % extra steps.", severity="warn")
        return {
            "mode": v["mode"], "workers": n, "straggler_fraction": f, "slowdown": s,
            "sync_throughput": sync_x, "async_throughput": async_x, "async_speedup": speedup,
            "sync_idle_fraction": idle, "mean_staleness": staleness, "straggler_staleness": slow_staleness,
            "checkpoint_seconds": delta, "zero_checkpoint_seconds": delta_zero, "cluster_mtbf_seconds": mtbf,
            "waste_fraction": float(wastes[0]), "zero_waste_fraction": float(wastes[1]),
            "monthly_bill": bill, "monthly_cost": dict(zip(STRATEGIES, totals.tolist())),
            "async_saves": float(async_saves), "zero_saves": float(zero_saves),
            "model_state_bytes": state_zero, "model_state_bytes_without_zero": state_plain,
        }

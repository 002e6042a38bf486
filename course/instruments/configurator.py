"""Parallelism configurator (Lab 05, Act II): TP x CP x PP x DP for a model on a cluster.

The student picks tensor-, context- and pipeline-parallel degrees, interleaving,
micro-batch size and count, ZeRO stage, activation recomputation and sequence
parallelism; the data-parallel degree follows from the GPU count. "Load a top
result" copies one of the sweep's five best configurations into the controls, and
the table says why #1 beats the next ones (``course.core.explain``); the planner's
notes (uneven stages, framework rules) are listed under the formulas. Everything shown comes from ``course.core.plan`` (per-GPU memory
breakdown, step-time breakdown, MFU, feasibility and the reasons it gives)
and ``course.core.bubble_fraction`` (the bubble chart); the optional "top 5"
table is ``course.core.sweep(...).top(5)``. The failure banners are exactly the
planner's violations, with its sentences (a ``ValueError`` of the planner, such
as more stages than layers, shows as the ``invalid_input`` banner).

Errata: Lab 05 used the bubble (PP-1)/(PP m), a 10 B/param memory model that
forgot gradients and activations that grow with TP, and made-up MFU penalty
terms (errata 3 and 5); the planner derives all of them from sourced physics.
"""

from __future__ import annotations

import html

import bqplot as bq
import ipywidgets as widgets
import numpy as np

from .. import core
from ..core import catalog
from ..theme import mark_color
from .base import Instrument, figure, fmt_bytes, fmt_memory, fmt_time
from .charts import UNNAMED
from .bubble import BUBBLE_CEILING  # Lab 05's design rule, written once
from .context import gpu_cluster_only

__all__ = ["Configurator", "plan_values", "MODEL_CHOICES", "CLUSTER_CHOICES", "BUBBLE_MICROBATCHES",
           "BUBBLE_CEILING", "MEMORY_PARTS"]

MODEL_CHOICES = ("gpt3-175b", "llama3-8b", "llama3-70b", "llama3-405b", "llama2-7b",
                 # mixtures of experts (Lab 07): EP and ETP apply to them only
                 "llama3-8b-moe", "mixtral-8x7b", "mixtral-8x22b", "qwen3-235b-a22b", "deepseek-v3")
CLUSTER_CHOICES = ("h100-1024", "h100-16384", "research-256", "selene-3072", "h100-2048", "h800-2048",
                   "gb200-nvl72-4608")
#: Micro-batch counts drawn on the bubble chart (the current one is added).
BUBBLE_MICROBATCHES = (1, 4, 8, 16, 32)
PP_GRID = np.arange(1, 65)
MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations")
MEMORY_COLORS = tuple(mark_color(c) for c in ("blue", "cyan", "purple", "orange"))
BUBBLE_COLORS = tuple(mark_color(c) for c in ("red", "orange", "blue", "green", "teal"))
TP_CHOICES = (1, 2, 4, 8, 16, 32, 64)
CP_CHOICES = (1, 2, 4, 8, 16)
INTERLEAVE_CHOICES = (1, 2, 4)
EP_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
ETP_CHOICES = (1, 2, 4, 8)
MICRO_BATCH_CHOICES = (1, 2, 4, 8)
#: Parts of the planner's step time (``Plan.breakdown()``), in the order they are drawn.
STEP_PARTS = core.STEP_TERMS
STEP_LABELS = ("compute", "memory-bound", "TP comm", "CP K/V", "EP all-to-all", "bubble", "PP sends", "DP/ZeRO")
#: Violations after which the plan still describes a step that runs (slowly, or not in memory): every other
#: violation means the layout itself is invalid (GPUs without a place, heads or batch that do not divide...),
#: and the configurator shows no MFU, step time or throughput for it, only the failure and dashes.
STEP_STILL_DEFINED = ("out_of_memory", "tp_crosses_node")
#: What a card shows in place of a number that does not exist for this configuration.
NO_VALUE = "—"
#: The controls a top result of the sweep sets (named as the keys of its row in ``result["best"]``).
LOADED_CONTROLS = ("tp", "cp", "pp", "interleave", "micro_batch", "microbatches", "zero_stage", "recompute",
                   "sequence_parallel")


def _best_rows(table) -> list[dict]:
    """Plain rows of a ``course.core.sweep`` table, the columns the configurator shows."""
    rows = []
    for i in range(len(table)):
        row = table.row(i)
        rows.append({
            "tp": int(row["tp"]), "cp": int(row["cp"]), "pp": int(row["pp"]), "dp": int(row["dp"]),
            "interleave": int(row["interleave"]), "micro_batch": int(row["micro_batch"]),
            "microbatches": int(row["num_microbatches"]), "zero_stage": int(row["zero_stage"]),
            "recompute": str(row["recompute"]), "sequence_parallel": bool(row["sequence_parallel"]),
            "mfu": float(row["mfu"]), "tokens_per_second": float(row["tokens_per_second"]),
            "memory_total": float(row["memory_total"]),
        })
    return rows


def plan_values(p) -> dict:
    """The numbers this instrument shows, read from one ``course.core.plan`` result."""
    return {
        "memory": {part: float(x) for part, x in p.memory().items()},
        "memory_total": float(p.memory_total),
        "breakdown": {part: float(x) for part, x in p.breakdown().items()},
        "step_seconds": float(p.step_time),
        "mfu": float(p.mfu),
        # the range the point sits in (the planner's uncertain assumptions) and the one that drives its width
        "step_range": (float(p.step_time_low), float(p.step_time_high)),
        "mfu_range": (float(p.mfu_low), float(p.mfu_high)),
        "range_driver": str(p.range_driver),
        "tokens_per_second": float(p.tokens_per_second),
        "feasible": bool(p.feasible),
        "violations": [(str(code), str(sentence)) for code, sentence in p.violations],
        "notes": [(str(code), str(sentence)) for code, sentence in p.notes],
    }


class Configurator(Instrument):
    """TP, CP, PP, interleaving, micro-batching, ZeRO, recompute and SP for one model on one cluster.

    Controls: ``model``, ``cluster``, ``tp``, ``cp``, ``pp``, ``interleave``,
    ``micro_batch``, ``microbatches``, ``zero_stage``, ``recompute``,
    ``sequence_parallel``, ``ep``, ``etp``, ``dispatcher`` and ``ep_overlap`` (mixtures of experts only), ``show_best`` and ``load_best`` (index of a top result to
    copy into the others). ``result`` holds the plan's numbers (memory parts in bytes,
    step time, MFU, bubble fraction, tokens/s), ``dp`` (derived), ``feasible``, the
    violation codes and the note codes.
    """

    title = "3D-parallelism configurator"
    # neutral before a prediction: the constraints a good layout meets are what Lab 05 Act II asks
    subtitle = ("TP x CP x PP x DP = GPUs. Set a layout and read its memory, bubble and communication; "
                "load a top result of the planner's search to compare.")

    def track_unsupported(self, track):
        return gpu_cluster_only(self.title[:1].lower() + self.title[1:], track)

    def build(self):
        self.add_control("model", widgets.Dropdown(options=MODEL_CHOICES, value="gpt3-175b", description="Model"))
        self.add_control("cluster", widgets.Dropdown(options=CLUSTER_CHOICES, value="h100-1024", description="Cluster"))
        self.add_control("tp", widgets.SelectionSlider(options=TP_CHOICES, value=8, description="TP"))
        # hover notes (the label's title) for the terms a student meets here first
        self.add_control("cp", widgets.SelectionSlider(
            options=CP_CHOICES, value=1, description="CP",
            tooltip="Context parallelism: each sequence is split along its tokens over CP GPUs, which exchange "
                    "attention keys and values"))
        self.add_control("pp", widgets.IntSlider(value=8, min=1, max=64, description="PP"))
        self.add_control("interleave", widgets.ToggleButtons(options=INTERLEAVE_CHOICES, value=1,
                                                             description="Chunks v", style={"button_width": "36px"},
                                                             tooltip="Interleaved schedule: each pipeline stage holds v "
                                                                     "separate chunks of layers; the bubble shrinks v-fold"))
        self.add_control("micro_batch", widgets.SelectionSlider(options=MICRO_BATCH_CHOICES, value=1,
                                                                description="Micro-batch b",
                                                                style={"description_width": "initial"}))
        self.add_control("microbatches", widgets.IntSlider(value=32, min=1, max=64, description="Micro-batches m",
                                                                     style={"description_width": "initial"}))
        self.add_control("zero_stage", widgets.ToggleButtons(options=[0, 1, 2, 3], value=1, description="ZeRO",
                                                             style={"button_width": "36px"}))
        self.add_control("recompute", widgets.ToggleButtons(
            options=["none", "selective", "full"], value="selective", description="Recompute",
            tooltip="Activation recomputation: none keeps every activation for the backward pass; selective "
                    "recomputes only attention's large intermediates; full recomputes each layer from its input"))
        self.add_control("sequence_parallel", widgets.Checkbox(value=False, description="sequence parallel"))
        # experts (mixtures of experts only; a dense model ignores them): Megatron-Core's parallel folding
        self.add_control("ep", widgets.SelectionSlider(
            options=EP_CHOICES, value=1, description="EP",
            tooltip="Expert parallelism: each MoE layer's routed experts are spread over EP GPUs (MoE models only)"))
        self.add_control("etp", widgets.SelectionSlider(
            options=ETP_CHOICES, value=1, description="ETP",
            tooltip="Expert tensor parallelism: each expert's matrices split over ETP GPUs (MoE models only)"))
        self.add_control("dispatcher", widgets.ToggleButtons(
            options=(("all-to-all", "alltoall"), ("DeepEP", "deepep"), ("HybridEP", "hybridep")), value="alltoall",
            description="Dispatch",
            tooltip="How tokens reach their experts' GPUs: one network copy per remote expert (all-to-all) or one "
                    "per remote node, forwarded over NVLink there (DeepEP); MoE models only"))
        self.add_control("ep_overlap", widgets.Checkbox(value=False, description="overlap the EP all-to-all"))
        self.add_control("show_best", widgets.Checkbox(value=False, description="show the planner's top 5"))
        self.add_control("load_best", widgets.Dropdown(options=[("load a top result…", -1)], value=-1,
                                                       description="Load", disabled=True),
                         triggers_update=False)
        self.observe("load_best", self._load_best)
        self._best_rows: list[dict] = []
        self.best_table = widgets.HTML()
        self.extra.children = (self.best_table,)

        bx, by = bq.OrdinalScale(), bq.LinearScale(min=0)
        self.memory_scale = by
        self.memory_bars = bq.Bars(x=["this plan", "ZeRO-0, no recompute"], y=np.zeros((4, 2)), type="stacked",
                                   scales={"x": bx, "y": by}, colors=list(MEMORY_COLORS), labels=list(MEMORY_PARTS),
                                   display_legend=True, padding=0.4)
        cap_x = bq.LinearScale(min=0, max=1)
        self.capacity = bq.Lines(x=[0.0, 1.0], y=[80.0, 80.0], scales={"x": cap_x, "y": by}, colors=[mark_color("ink")],
                                 line_style="dashed", stroke_width=2, labels=["GPU memory"], display_legend=True)
        self.add_figure(figure([self.memory_bars, self.capacity], bx, by, "", "GB per GPU",
                               title="Memory per GPU", legend=True))

        px, py = bq.LinearScale(min=1, max=64), bq.LinearScale(min=0, max=100)
        lines = len(BUBBLE_MICROBATCHES) + 1
        self.bubble_lines = bq.Lines(x=PP_GRID, y=np.zeros((lines, PP_GRID.size)), scales={"x": px, "y": py},
                                     colors=list(BUBBLE_COLORS) + [mark_color("ink")], stroke_width=2,
                                     labels=[f"m={m}" for m in BUBBLE_MICROBATCHES] + ["your m"], display_legend=True)
        self.ceiling = bq.Lines(x=[1, 64], y=[100 * BUBBLE_CEILING] * 2, scales={"x": px, "y": py},
                                colors=[mark_color("gray")], line_style="dashed", labels=["10 % ceiling"],
                                display_legend=True)
        self.bubble_point = bq.Scatter(**UNNAMED, x=[8], y=[0.0], scales={"x": px, "y": py}, marker="diamond",
                                       colors=[mark_color("ink")], default_size=120, labels=["your PP and m"],
                                       display_legend=True)
        self.add_figure(figure([self.bubble_lines, self.ceiling, self.bubble_point], px, py, "pipeline stages PP",
                               "bubble (% of step)", title="Bubble vs PP", legend=True))
        sx, sy = bq.OrdinalScale(), bq.LinearScale(min=0)
        self.step_bars = bq.Bars(x=list(STEP_LABELS), y=np.zeros(len(STEP_PARTS)), scales={"x": sx, "y": sy},
                                 colors=[mark_color(c) for c in ("green", "lime", "blue", "pink", "red", "purple",
                                                                 "cyan")],
                                 color_mode="element", padding=0.3)
        self.add_figure(figure([self.step_bars], sx, sy, "", "seconds per step", title="Where the step time goes"))
        for name, label in (("dp", "DP (derived)"), ("memory", "Memory per GPU"), ("bubble", "Pipeline bubble"),
                            ("mfu", "MFU"), ("step", "Step time"), ("throughput", "Throughput")):
            self.add_card(name, label)

    def _step_cards(self, shown: dict, invalid: list) -> None:
        """The MFU, step and throughput cards: each with its range, or why there is none."""
        if invalid:  # no step exists: the failure, and dashes where the numbers of a valid layout would be
            why = "invalid layout: " + ", ".join(code.replace("_", " ") for code in invalid)
            for name in ("mfu", "step", "throughput"):
                self.set_card(name, NO_VALUE, why, "muted")
        else:
            oom = "out_of_memory" in dict(shown["violations"])
            (mfu_low, mfu_high), (step_low, step_high) = shown["mfu_range"], shown["step_range"]
            self.set_card("mfu", f"{100 * shown['mfu']:.1f} %", "if it fitted in memory" if oom else
                          f"range {100 * mfu_low:.1f}-{100 * mfu_high:.1f} %",
                          "muted" if oom else
                          "good" if shown["mfu"] >= 0.4 else "warn" if shown["mfu"] >= 0.25 else "bad")
            self.set_card("step", fmt_time(shown["step_seconds"]), "if it fitted in memory" if oom else
                          f"range {fmt_time(step_low)} to {fmt_time(step_high)}", "muted" if oom else "normal")
            self.set_card("throughput", f"{shown['tokens_per_second']:,.0f} tok/s",
                          "if it fitted in memory" if oom else "", "muted" if oom else "normal")

    def refresh(self, v):
        model = catalog.model(v["model"])
        cluster = catalog.cluster(v["cluster"])
        gpus = cluster.nodes * cluster.node.gpus_per_node
        tp, cp, pp, m = int(v["tp"]), int(v["cp"]), int(v["pp"]), int(v["microbatches"])
        dp = max(gpus // (tp * cp * pp), 1)
        ep, etp = (int(v["ep"]), int(v["etp"])) if model.is_moe else (1, 1)  # a dense model has no experts to fold
        experts = dict(ep=ep, etp=etp, dispatcher=v["dispatcher"], ep_overlap=bool(v["ep_overlap"])) if model.is_moe \
            else {}
        common = dict(cp=cp, num_microbatches=m, micro_batch=int(v["micro_batch"]), interleave=int(v["interleave"]),
                      sequence_parallel=bool(v["sequence_parallel"]), **experts)
        plan = core.plan(model, cluster, tp=tp, pp=pp, dp=dp, zero_stage=int(v["zero_stage"]),
                         recompute=v["recompute"], **common)
        base = core.plan(model, cluster, tp=tp, pp=pp, dp=dp, zero_stage=0, recompute="none", **common)
        shown, baseline = plan_values(plan), plan_values(base)
        capacity = cluster.node.accelerator.memory_capacity  # what CUDA sees, the planner's out-of-memory line

        ms = np.array(BUBBLE_MICROBATCHES + (m,), dtype=float)[:, None]
        chunks = np.array([1] * len(BUBBLE_MICROBATCHES) + [int(v["interleave"])], dtype=float)[:, None]
        curves = np.asarray(core.bubble_fraction(PP_GRID[None, :], ms, chunks), float)  # "your m" with your v
        bars = np.array([[shown["memory"][k], baseline["memory"][k]] for k in MEMORY_PARTS]) / 1e9

        invalid = [code for code, _ in shown["violations"] if code not in STEP_STILL_DEFINED]
        self.memory_scale.max = 1.1 * float(max(bars.sum(axis=0).max(), capacity / 1e9))  # the legend is under the chart
        self.set_marks(self.memory_bars, y=bars)
        self.set_marks(self.capacity, y=[capacity / 1e9] * 2,
                       labels=[f"GPU memory, {fmt_memory(cluster.node.accelerator)}"])
        self.set_marks(self.bubble_lines, y=100 * curves)
        # an invalid layout has no step to break down: no bars
        self.set_marks(self.step_bars, y=[0.0 if invalid else shown["breakdown"].get(part, 0.0) for part in STEP_PARTS])
        bubble = float(core.bubble_fraction(pp, m, int(v["interleave"])))
        self.set_marks(self.bubble_point, x=[pp], y=[100 * bubble])

        total = shown["memory_total"]
        whole = tp * cp * pp * dp == gpus
        self.set_card("dp", f"{dp:,}" if whole else f"{gpus / (tp * cp * pp):,.3g}",
                      f"{gpus:,} / ({tp} x {cp} x {pp})" + ("" if whole else ": not whole"),
                      "normal" if whole else "bad")
        memory_name = fmt_memory(cluster.node.accelerator)  # "85.5 GB": one capacity, the out-of-memory line
        self.set_card("memory", fmt_bytes(total), f"of {memory_name}", "bad" if total > capacity else "good")
        self.set_card("bubble", f"{100 * bubble:.1f} %", "(p-1)/(v m+p-1); ceiling 10 %",
                      "bad" if bubble > BUBBLE_CEILING else "good")
        self._step_cards(shown, invalid)
        self.set_math(_math_html(v, shown, invalid, gpus, (tp, cp, pp, m), bubble, cluster.node.accelerator))
        for code, sentence in shown["violations"]:
            self.flag(code, sentence)
        best = self._best(model, cluster) if v["show_best"] else []
        if not v["show_best"]:
            self.best_table.value = ""
            self._set_loadable([])
        return {
            "best": best,
            "model": model.name, "cluster": cluster.name, "gpus": gpus, "tp": tp, "cp": cp, "pp": pp, "dp": dp,
            "ep": ep, "etp": etp, "dispatcher": v["dispatcher"] if model.is_moe else None,
            "ep_overlap": bool(v["ep_overlap"]) and model.is_moe,
            "interleave": int(v["interleave"]), "micro_batch": int(v["micro_batch"]),
            "sequence_parallel": bool(v["sequence_parallel"]),
            "microbatches": m, "zero_stage": int(v["zero_stage"]), "recompute": v["recompute"],
            "memory": shown["memory"], "memory_total": total, "memory_capacity": capacity,
            # None for an invalid layout: the instrument shows no step, MFU or throughput for it
            "step_seconds": None if invalid else shown["step_seconds"], "mfu": None if invalid else shown["mfu"],
            "step_range": None if invalid else shown["step_range"], "mfu_range": None if invalid else shown["mfu_range"],
            "range_driver": None if invalid else shown["range_driver"],
            "bubble_fraction": bubble, "step_breakdown": None if invalid else shown["breakdown"],
            "tokens_per_second": None if invalid else shown["tokens_per_second"], "feasible": shown["feasible"],
            "layout_valid": not invalid,
            "violations": [code for code, _ in shown["violations"]],
            "notes": [code for code, _ in shown["notes"]],
        }

    def _best(self, model, cluster) -> list[dict]:
        """The five fastest feasible configurations of ``course.core.sweep`` (one vectorized pass)."""
        table = core.sweep(model, cluster).top(5)
        rows = _best_rows(table)
        self._set_loadable(rows)
        if not rows:
            self.best_table.value = "<i>The planner's sweep finds no feasible configuration on this cluster.</i>"
            return rows
        body = "".join(
            f"<tr><td>#{i + 1}</td><td>{r['tp']}</td><td>{r['cp']}</td><td>{r['pp']}</td><td>{r['interleave']}</td>"
            f"<td>{r['dp']}</td><td>{r['micro_batch']}</td><td>{r['microbatches']}</td><td>{r['zero_stage']}</td>"
            f"<td>{r['recompute']}{' + SP' if r['sequence_parallel'] else ''}</td><td>{100 * r['mfu']:.1f} %</td>"
            f"<td>{r['tokens_per_second']:,.0f}</td><td>{fmt_bytes(r['memory_total'])}</td></tr>"
            for i, r in enumerate(rows))
        why = "".join(f"<li>{html.escape(sentence)}</li>" for sentence in core.explain(table, k=3))
        self.best_table.value = (
            "<div style='font-size:0.85rem'><b>The planner's top 5</b> (course.core.sweep over every valid "
            "TP, CP, PP, interleaving, micro-batch, ZeRO stage, recompute mode and sequence parallelism of this "
            "cluster; load one with the Load menu)</div>"
            "<table style='font-size:0.85rem' cellpadding='3'><tr><th></th><th>TP</th><th>CP</th><th>PP</th>"
            "<th>v</th><th>DP</th><th>b</th><th>m</th><th>ZeRO</th><th>recompute</th><th>MFU</th><th>tokens/s</th>"
            f"<th>memory</th></tr>{body}</table><ul style='font-size:0.85rem'>{why}</ul>")
        return rows

    def _set_loadable(self, rows: list[dict]) -> None:
        """Offer ``rows`` (the top results) in the Load menu; empty disables it."""
        self._best_rows = rows
        menu = self.controls["load_best"]
        options = [("load a top result…", -1)] + [
            (f"#{i + 1}: TP {r['tp']} CP {r['cp']} PP {r['pp']} v {r['interleave']} DP {r['dp']}", i)
            for i, r in enumerate(rows)]
        if list(menu.options) != options:
            menu.options = options
        menu.value, menu.disabled = -1, not rows

    def _load_best(self, change) -> None:
        """Copy the chosen top result into the controls (one update)."""
        index = change["new"]
        if index is None or index < 0 or index >= len(self._best_rows):
            return
        row = self._best_rows[index]
        with self.batch():
            for name in LOADED_CONTROLS:
                widget = self.controls[name]
                if hasattr(widget, "max") and row[name] > widget.max:  # the sweep may use more micro-batches
                    widget.max = row[name]
                widget.value = row[name]


def _math_html(v, shown: dict, invalid: list, gpus: int, degrees: tuple, bubble: float, accelerator) -> str:
    """The equations under the charts with this layout's numbers: degrees, memory, bubble, step and MFU."""
    tp, cp, pp, m = degrees
    total = shown["memory_total"]
    mem, br = shown["memory"], shown["breakdown"]
    if invalid:
        step_math = (f"<b>Step</b> and <b>MFU</b>: none, the layout is invalid "
                     f"({html.escape(', '.join(invalid))}): fix the degrees first")
    else:
        step_math = (
            "<b>Step</b> = " + " + ".join(f"{part.replace('_', ' ')} {fmt_time(sec)}" for part, sec in br.items())
            + f" = {fmt_time(shown['step_seconds'])}<br>"
            f"<b>MFU</b> = 6&middot;N&middot;tokens / (step time &middot; GPUs &middot; peak) = "
            f"{100 * shown['mfu']:.1f} %, step {fmt_time(shown['step_seconds'])}<br>"
            f"<b>Range</b> step {fmt_time(shown['step_range'][0])} (every uncertain assumption at its fast end) "
            f"to {fmt_time(shown['step_range'][1])} (at its slow end), MFU {100 * shown['mfu_range'][0]:.1f} % "
            f"to {100 * shown['mfu_range'][1]:.1f} %; the widest share from the "
            f"{html.escape(shown['range_driver'])} assumption")
    return (
        f"<b>Degrees</b> DP = GPUs / (TP &middot; CP &middot; PP) = {gpus:,} / ({tp} &times; {cp} &times; {pp})"
        f" = {gpus / (tp * cp * pp):g}<br>"
        f"<b>Memory per GPU</b> = weights {fmt_bytes(mem['weights'])} + gradients {fmt_bytes(mem['gradients'])}"
        f" + optimizer {fmt_bytes(mem['optimizer'])} (ZeRO-{v['zero_stage']}) + activations {fmt_bytes(mem['activations'])}"
        f" ({v['recompute']} recompute) = {fmt_bytes(total)} vs {accelerator.memory_name}<br>"
        f"<b>Bubble</b> (p&minus;1)/(v&middot;m + p&minus;1) = {pp - 1}/({v['interleave']}&times;{m} + {pp - 1})"
        f" = {100 * bubble:.2f} %"
        "<br>" + step_math
        + "".join(f"<br><b>Note</b> {sentence}" for _, sentence in shown["notes"])
    )

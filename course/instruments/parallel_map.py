"""Parallelism map: how one TP x CP x PP x DP configuration is laid out on GPUs, nodes and racks.

Each cell of the grid is one GPU (rows: GPU slot inside its node, columns:
nodes, grouped into racks). The colour says which pipeline stage (layers),
which tensor-parallel shard, which context (sequence) shard or which data-parallel
replica the GPU holds. The table under the map lists each kind of process group,
where its members sit (inside a node, across nodes, across racks) and therefore
which link carries its traffic: TP all-reduces on NVLink when TP stays inside a
node, CP key/value exchanges on NVLink while TP x CP fits in a node, pipeline
sends and DP all-reduces over the network.

Ranks are placed TP innermost, then CP, PP and DP (see :mod:`course.instruments._layout`).
Feasibility (and its sentences) comes from ``course.core.plan``; link speeds
from ``course.core.catalog``; layers per stage from the core's pipeline module.
"""

from __future__ import annotations

import html

import bqplot as bq
import ipywidgets as widgets
import numpy as np

from .. import core
from ..core import catalog
from ._layout import GROUP_KINDS, rank_layout
from ..theme import mark_color
from .base import Instrument, figure, fmt_rate
from .charts import UNNAMED, segments
from .context import gpu_cluster_only
from .configurator import CLUSTER_CHOICES, MODEL_CHOICES, TP_CHOICES

__all__ = ["ParallelMap", "MAX_NODES_SHOWN", "COLOR_BY", "PLAN_SETTINGS"]

#: The grid shows at most this many nodes (1,024 GPUs of DGX H100s).
MAX_NODES_SHOWN = 128
COLOR_BY = {"pipeline stage": "pp_stage", "tensor shard": "tp_rank", "context shard": "cp_rank",
            "data replica": "dp_rank"}
CP_CHOICES = (1, 2, 4, 8, 16)
#: Viridis at 0, 1/9, ..., 1 (matplotlib's), from the first rank (dark) to the last (yellow).
VIRIDIS = ("#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b",
           "#fde725")
#: A GPU that holds no rank (the degrees do not divide the cluster).
UNUSED_COLOR = "#e2e8f0"
#: Settings the map passes to ``plan`` for its feasibility check (the map has no
#: controls for them): ZeRO-1, selective recompute, m = 4 x PP micro-batches.
PLAN_SETTINGS = {"zero_stage": 1, "recompute": "selective"}
CARRIES = {
    "tensor": "2 all-reduces of the activations per layer in the forward pass, 2 in the backward",
    "context": "an all-gather of keys and values per layer forward, all-gather + reduce-scatter backward",
    "pipeline": "activations forward and their gradients backward, once per micro-batch",
    "data": "gradients once per step (ZeRO-0/1); ZeRO-2/3 also every micro-batch (with CP ranks)",
}


class ParallelMap(Instrument):
    """Which GPU holds which layers and shards, and which link each group uses.

    Controls: ``model``, ``cluster``, ``tp``, ``cp``, ``pp`` (DP = GPUs / (TP CP PP)),
    ``nodes_per_rack`` and ``color_by``. ``result``: the degrees, node and rack
    counts, and for each group kind its size, count, scope and link.
    ``link_to(configurator)`` makes the map follow a :class:`Configurator`.
    """

    title = "3D-parallelism map"
    subtitle = ("One cell per GPU: columns are NVLink domains, grouped in racks (a DGX node of 8 GPUs; an NVL72 "
                "rack of 72), rows the GPUs of one domain.")

    def track_unsupported(self, track):
        return gpu_cluster_only(self.title[:1].lower() + self.title[1:], track)

    def build(self):
        self.add_control("model", widgets.Dropdown(options=MODEL_CHOICES, value="gpt3-175b", description="Model"))
        self.add_control("cluster", widgets.Dropdown(options=CLUSTER_CHOICES, value="h100-1024", description="Cluster"))
        self.add_control("tp", widgets.SelectionSlider(options=TP_CHOICES, value=8, description="TP"))
        self.add_control("cp", widgets.SelectionSlider(options=CP_CHOICES, value=1, description="CP"))
        self.add_control("pp", widgets.IntSlider(value=8, min=1, max=64, description="PP"))
        self.add_control("nodes_per_rack", widgets.IntSlider(value=4, min=1, max=16, description="Nodes/rack"))
        self.add_control("color_by", widgets.ToggleButtons(options=list(COLOR_BY), value="pipeline stage",
                                                           description="Colour"))
        xs, ys = bq.LinearScale(min=0), bq.LinearScale(min=0, reverse=True)
        # UNUSED_COLOR at the scale's minimum, one step below 0, then viridis from 0 to the largest value
        self.colors = bq.ColorScale(colors=[UNUSED_COLOR, *VIRIDIS], min=-1 / (len(VIRIDIS) - 1), max=1)
        # One canvas-drawn image (bqplot's HeatMap), not GridHeatMap's SVG rect and label per GPU: 1,024 GPUs
        # were 2,048 elements re-laid out on every slider move.
        self.grid = bq.HeatMap(x=np.arange(2) + 0.5, y=np.arange(8) + 0.5, color=np.zeros((8, 2)),
                               scales={"x": xs, "y": ys, "color": self.colors})
        # the cell borders GridHeatMap stroked, in the page's colour: one NaN-broken path, redrawn only with the shape
        self.cells = bq.Lines(x=[np.nan], y=[np.nan], scales={"x": xs, "y": ys}, colors=["var(--jp-layout-color0)"],
                              stroke_width=1)
        self.racks = bq.Lines(x=[np.nan], y=[np.nan], scales={"x": xs, "y": ys}, colors=[mark_color("ink")],
                              stroke_width=2.5)
        # GPU 0's three groups, marked on their cells: which GPUs it talks to, and over which link
        self.group_marks = {
            kind: bq.Scatter(**UNNAMED, x=[0.5], y=[0.5], scales={"x": xs, "y": ys}, marker=marker, colors=[color],
                             default_size=size, stroke="var(--jp-layout-color0)", labels=[label])  # no (empty) text element per point to lay out on every move
            for kind, marker, color, size, label in (
                ("data", "square", "#f97316", 30, "GPU 0's DP group"),
                ("context", "diamond", "#ec4899", 40, "GPU 0's CP group"),
                ("pipeline", "triangle-up", "#ef4444", 60, "GPU 0's pipeline"),
                ("tensor", "circle", "#ffffff", 30, "GPU 0's TP group"),
            )
        }
        fig = figure([self.grid, self.cells, self.racks, *self.group_marks.values()], xs, ys, "node (thick lines: rack boundaries)", "GPU slot",
                     title="GPUs coloured by pipeline stage", height="320px")
        self.map_figure = self.add_figure(fig)
        self.table = widgets.HTML()
        self.extra.children = (self.table,)
        for name, label in (("dp", "DP (derived)"), ("nodes", "Nodes / racks"), ("tp_scope", "TP group"),
                            ("cp_scope", "CP group"), ("pp_scope", "Pipeline neighbours"), ("dp_scope", "DP group")):
            self.add_card(name, label)

    def link_to(self, configurator) -> None:
        """Follow a configurator's model, cluster, TP, CP and PP."""
        def copy(_change=None):
            with self.batch():
                for name in ("model", "cluster", "tp", "cp", "pp"):
                    self.controls[name].value = configurator.controls[name].value
        for name in ("model", "cluster", "tp", "cp", "pp"):
            configurator.controls[name].observe(copy, names="value")
        copy()

    def _draw_map(self, v, lay, g: int, domains: int) -> int:
        """The map: one column per NVLink domain (the whole cluster, up to MAX_NODES_SHOWN: GPUs no rank
        reaches show as unused, and the axes stay put), coloured by ``v["color_by"]``, GPU 0's groups marked;
        returns the number of columns shown."""
        shown_nodes = min(MAX_NODES_SHOWN, domains)
        field = COLOR_BY[v["color_by"]]
        values = getattr(lay, field).astype(float)
        top = float(max(values.max(), 1.0))
        unused = -top / (len(VIRIDIS) - 1)  # the scale's minimum: UNUSED_COLOR (the canvas draws NaN in no colour)
        color = np.full((g, shown_nodes), unused)
        self.grid._course_empty = unused  # its text alternative counts these cells as empty
        visible = lay.node < shown_nodes
        color[lay.slot[visible], lay.node[visible]] = values[visible]
        rack_edges = np.arange(0, shown_nodes + 1, int(v["nodes_per_rack"]))
        with self.colors.hold_sync():
            self.colors.min, self.colors.max = unused, top
        with self.grid.hold_sync(), self.grid.hold_trait_notifications():  # x, y and color change shape together: validated as a set
            self.set_marks(self.grid, color=color, x=np.arange(shown_nodes) + 0.5, y=np.arange(g) + 0.5)
        x, y = segments(np.r_[np.zeros(g + 1), np.arange(shown_nodes + 1)],
                        np.r_[np.full(g + 1, shown_nodes), np.arange(shown_nodes + 1)],
                        np.r_[np.arange(g + 1), np.zeros(shown_nodes + 1)],
                        np.r_[np.arange(g + 1), np.full(shown_nodes + 1, g)])
        self.set_marks(self.cells, x=x, y=y)
        x, y = segments(rack_edges, rack_edges, np.zeros(rack_edges.size), np.full(rack_edges.size, float(g)))
        self.set_marks(self.racks, x=x, y=y)  # one NaN-broken path, not one curve per rack boundary
        origin = {"tensor": lay.tp_rank == 0, "context": lay.cp_rank == 0, "pipeline": lay.pp_stage == 0,
                  "data": lay.dp_rank == 0}
        first = {kind: np.logical_and.reduce([origin[other] for other in origin if other != kind])
                 for kind in origin}
        for kind, members in first.items():
            members &= visible
            self.set_marks(self.group_marks[kind], x=lay.node[members] + 0.5, y=lay.slot[members] + 0.5)
        self.map_figure.title = (f"GPUs coloured by {v['color_by']} (dark: first, yellow: last)"
                                 + (f" (first {shown_nodes} of {domains} NVLink domains)" if domains > shown_nodes else ""))
        return shown_nodes

    def refresh(self, v):
        model = catalog.model(v["model"])
        cluster = catalog.cluster(v["cluster"])
        # one column per NVLink domain: a DGX node of 8, or a whole GB200 / GB300 NVL72 rack of 72, whose
        # 4-GPU compute trays share one NVLink fabric (core.catalog.Cluster.nvlink_domain)
        g = cluster.nvlink_domain
        gpus = cluster.gpus
        tp, cp, pp = int(v["tp"]), int(v["cp"]), int(v["pp"])
        dp = max(gpus // (tp * cp * pp), 1)
        plan = core.plan(model, cluster, tp=tp, cp=cp, pp=pp, dp=dp, **PLAN_SETTINGS)
        lay = rank_layout(tp, pp, dp, g, int(v["nodes_per_rack"]), cp=cp)

        domains = max(gpus // g, 1)
        shown_nodes = self._draw_map(v, lay, g, domains)
        groups = _group_links(lay, cluster, g)
        layers = [int(n) for n in core.layers_per_stage(model.layers, pp)] if pp <= model.layers else []
        self.table.value = _table_html(groups, layers, model.layers, pp)

        self.set_card("dp", f"{dp:,}", f"{gpus:,} / ({tp} x {cp} x {pp})",
                      "normal" if tp * cp * pp * dp == gpus else "bad")
        racks = -(-cluster.nodes // int(v["nodes_per_rack"]))
        if g != cluster.gpus_per_node:  # an NVL72 cluster: each rack is one NVLink domain
            racks = domains
            self.set_card("nodes", f"{cluster.nodes} / {racks}",
                          f"{cluster.gpus_per_node}-GPU trays; {g} GPUs per rack share NVLink")
        else:
            self.set_card("nodes", f"{cluster.nodes} / {racks}", f"{g} GPUs per node")
        for kind, card in (("tensor", "tp_scope"), ("context", "cp_scope"), ("pipeline", "pp_scope"),
                           ("data", "dp_scope")):
            scope = groups[kind]["scope"]
            tone = ("bad" if kind == "tensor" and scope not in ("inside a node", "inside the NVLink domain", "single GPU")
                    else "normal")
            self.set_card(card, scope, groups[kind]["link"], tone)
        self.set_math(
            f"rank = tp_rank + TP &middot; (cp_rank + CP &middot; (stage + PP &middot; dp_rank)) (order TP, CP, PP,"
            f" DP, as Llama 3); {'node' if g == cluster.gpus_per_node else 'NVLink domain (rack)'} = rank // {g}; "
            f"rack = node // {int(v['nodes_per_rack']) if g == cluster.gpus_per_node else 1}<br>"
            f"TP groups: {tp} consecutive ranks; CP peers are TP = {tp} ranks apart; pipeline neighbours are"
            f" TP &middot; CP = {tp * cp} ranks apart; DP peers are TP &middot; CP &middot; PP = {tp * cp * pp}"
            f" ranks apart."
        )
        for code, sentence in plan.violations:
            self.flag(code, sentence)
        return {
            "model": model.name, "cluster": cluster.name, "gpus": gpus, "tp": tp, "cp": cp, "pp": pp, "dp": dp,
            "nodes": cluster.nodes, "racks": racks, "nodes_shown": shown_nodes, "color_by": v["color_by"],
            "groups": groups, "layers_per_stage": layers, "feasible": bool(plan.feasible),
            "violations": [code for code, _ in plan.violations],
        }


def _group_links(lay, cluster, g: int) -> dict:
    """Per group kind: its size and count, where its members sit and the link between them."""
    intra, inter = cluster.node.intra_link, cluster.fabric or cluster.node.inter_link
    groups = {}
    for kind in GROUP_KINDS:
        scope = lay.scope(kind)
        link = None if scope == "single GPU" else intra if scope == "inside a node" else inter
        if g != cluster.gpus_per_node:  # a column is an NVLink domain of several compute trays
            scope = scope.replace("inside a node", "inside the NVLink domain").replace("nodes", "NVLink domains")
        groups[kind] = {**lay.spans[kind], "scope": scope, "link": link.name if link else "none",
                        "bandwidth": link.bandwidth if link else 0.0}
    return groups


def _table_html(groups: dict, layers: list, model_layers: int, pp: int) -> str:
    """The table of groups (size, count, where they sit, link, what they carry) and the layers per stage."""
    rows = "".join(
        f"<tr><td><b>{kind}</b></td><td>{groups[kind]['size']}</td><td>{groups[kind]['groups']}</td>"
        f"<td>{html.escape(groups[kind]['scope'])}</td><td>{html.escape(groups[kind]['link'])}"
        + (f" ({fmt_rate(groups[kind]['bandwidth'])})" if groups[kind]["bandwidth"] else "")
        + f"</td><td>{html.escape(CARRIES[kind])}</td></tr>" for kind in GROUP_KINDS)
    stage_text = (", ".join(f"stage {i + 1}: {n}" for i, n in enumerate(layers[:8])) + (" ..." if pp > 8 else "")
                  if layers else f"more stages ({pp}) than layers: some stages would hold none")
    return (
        "<table style='font-size:0.85rem;border-collapse:collapse' cellpadding='4'>"
        "<tr><th>group</th><th>size</th><th>groups</th><th>members sit</th><th>link</th><th>carries</th></tr>"
        f"{rows}</table><div style='font-size:0.85rem'>On the map, GPU 0's groups: white circles its TP group,"
        " pink diamonds its CP group, red triangles its pipeline (one GPU per stage), orange squares its DP"
        " group.</div>"
        f"<div style='font-size:0.85rem'>Layers per stage ({model_layers} layers): {stage_text}</div>")

"""Where each rank of a TP x CP x PP x DP job sits: GPU slot, node, rack, shard.

This is bookkeeping, not physics: it numbers ranks in the order the planner assumes
and reports which groups stay inside a node. The parallelism map draws it; the link
speeds a group then pays come from the core catalog.

Rank order: tensor-parallel rank fastest, then context-parallel rank, then pipeline
stage, data-parallel replica outermost (Dubey et al. 2024, Llama 3, sec. 3.3.2: order
[TP, CP, PP, DP], the groups that talk most on the fastest links; the same order
``course.core.planner`` uses for its links)::

    rank = tp_rank + tp * (cp_rank + cp * (pp_stage + pp * dp_rank))

so the ``tp`` GPUs of one tensor-parallel group are consecutive (they share a node
when ``tp`` divides the GPUs per node), a CP group spans ``tp * cp`` consecutive GPUs,
one pipeline replica occupies a contiguous block of ``tp * cp * pp`` GPUs, and ranks
fill nodes in order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RankLayout", "rank_layout", "GROUP_KINDS"]

#: The four kinds of process group, in the order the map lists them.
GROUP_KINDS = ("tensor", "context", "pipeline", "data")


@dataclass(frozen=True)
class RankLayout:
    """Coordinates of every rank (arrays of length ``tp * cp * pp * dp``).

    ``spans[kind]`` says, for the groups of one kind, how many groups there
    are, their size, and how many of them cross a node or a rack boundary.
    """

    tp: int
    pp: int
    dp: int
    gpus_per_node: int
    nodes_per_rack: int
    tp_rank: np.ndarray
    dp_rank: np.ndarray
    pp_stage: np.ndarray
    node: np.ndarray
    slot: np.ndarray
    rack: np.ndarray
    spans: dict
    cp: int = 1
    cp_rank: np.ndarray = None

    @property
    def gpus(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    @property
    def nodes(self) -> int:
        return int(-(-self.gpus // self.gpus_per_node))

    def scope(self, kind: str) -> str:
        """``"single GPU"``, ``"inside a node"``, ``"across nodes"`` or ``"across racks"``."""
        span = self.spans[kind]
        if span["size"] == 1:
            return "single GPU"
        if span["cross_rack"]:
            return "across racks"
        if span["cross_node"]:
            return "across nodes"
        return "inside a node"


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or int(value) != value or int(value) < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    return int(value)


def rank_layout(tp: int, pp: int, dp: int, gpus_per_node: int = 8, nodes_per_rack: int = 4,
                cp: int = 1) -> RankLayout:
    """Place ``tp * cp * pp * dp`` ranks on nodes of ``gpus_per_node`` GPUs.

    Parameters
    ----------
    tp, pp, dp : int
        Tensor-, pipeline- and data-parallel degrees (each >= 1).
    gpus_per_node : int
        GPUs in one node (8 in a DGX H100).
    nodes_per_rack : int
        Nodes in one rack (a control of the map; NVIDIA's DGX SuperPOD
        reference architecture places 4 DGX H100 systems per rack).
    cp : int
        Context-parallel degree (>= 1).

    Returns
    -------
    RankLayout

    Examples
    --------
    >>> lay = rank_layout(tp=8, pp=4, dp=32)
    >>> lay.nodes, lay.scope("tensor"), lay.scope("pipeline"), lay.scope("data")
    (128, 'inside a node', 'across nodes', 'across racks')
    >>> int(lay.pp_stage[7]), int(lay.pp_stage[8]), int(lay.dp_rank[31]), int(lay.dp_rank[32])
    (0, 1, 0, 1)
    >>> rank_layout(tp=4, pp=1, dp=1, cp=2).scope("context")
    'inside a node'
    """
    tp = _positive_int("tp", tp)
    cp = _positive_int("cp", cp)
    pp = _positive_int("pp", pp)
    dp = _positive_int("dp", dp)
    gpus_per_node = _positive_int("gpus_per_node", gpus_per_node)
    nodes_per_rack = _positive_int("nodes_per_rack", nodes_per_rack)

    ranks = np.arange(tp * cp * pp * dp)
    node = ranks // gpus_per_node
    rack = node // nodes_per_rack
    # grid[dp_rank, pp_stage, cp_rank, tp_rank] -> rank, from the formula above
    node_grid = node.reshape(dp, pp, cp, tp)
    rack_grid = rack.reshape(dp, pp, cp, tp)
    spans = {}
    for kind, axis, size in (("tensor", 3, tp), ("context", 2, cp), ("pipeline", 1, pp), ("data", 0, dp)):
        crosses_node = node_grid.max(axis=axis) != node_grid.min(axis=axis)
        crosses_rack = rack_grid.max(axis=axis) != rack_grid.min(axis=axis)
        spans[kind] = {
            "size": size,
            "groups": int(crosses_node.size),
            "cross_node": int(crosses_node.sum()),
            "cross_rack": int(crosses_rack.sum()),
        }
    return RankLayout(
        tp=tp, pp=pp, dp=dp, gpus_per_node=gpus_per_node, nodes_per_rack=nodes_per_rack,
        tp_rank=ranks % tp, dp_rank=ranks // (tp * cp * pp), pp_stage=(ranks // (tp * cp)) % pp,
        node=node, slot=ranks % gpus_per_node, rack=rack, spans=spans, cp=cp, cp_rank=(ranks // tp) % cp,
    )

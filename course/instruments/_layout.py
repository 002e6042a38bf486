"""Where each rank of a TP x PP x DP job sits: GPU slot, node, rack, shard.

This is bookkeeping, not physics: it numbers ranks the way Megatron-LM does and
reports which groups stay inside a node. The 3D-parallelism map draws it; the
link speeds a group then pays come from the core catalog.

Rank order (Megatron-LM ``megatron/core/parallel_state.py``, default order
``"tp-cp-ep-dp-pp"``, tensor-parallel rank varies fastest)::

    rank = tp_rank + tp * (dp_rank + dp * pp_stage)

so the ``tp`` GPUs of one tensor-parallel group are consecutive (they share a
node when ``tp`` divides the GPUs per node), one pipeline stage occupies a
contiguous block of ``tp * dp`` GPUs, and ranks fill nodes in order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RankLayout", "rank_layout", "GROUP_KINDS"]

#: The three kinds of process group, in the order the map lists them.
GROUP_KINDS = ("tensor", "pipeline", "data")


@dataclass(frozen=True)
class RankLayout:
    """Coordinates of every rank (arrays of length ``tp * pp * dp``).

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

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

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


def rank_layout(tp: int, pp: int, dp: int, gpus_per_node: int = 8, nodes_per_rack: int = 4) -> RankLayout:
    """Place ``tp * pp * dp`` ranks on nodes of ``gpus_per_node`` GPUs.

    Parameters
    ----------
    tp, pp, dp : int
        Tensor-, pipeline- and data-parallel degrees (each >= 1).
    gpus_per_node : int
        GPUs in one node (8 in a DGX H100).
    nodes_per_rack : int
        Nodes in one rack (a control of the map; NVIDIA's DGX SuperPOD
        reference architecture places 4 DGX H100 systems per rack).

    Returns
    -------
    RankLayout

    Examples
    --------
    >>> lay = rank_layout(tp=8, pp=4, dp=32)
    >>> lay.nodes, lay.scope("tensor"), lay.scope("pipeline"), lay.scope("data")
    (128, 'inside a node', 'across racks', 'across racks')
    >>> int(lay.pp_stage[255]), int(lay.pp_stage[256])
    (0, 1)
    """
    tp = _positive_int("tp", tp)
    pp = _positive_int("pp", pp)
    dp = _positive_int("dp", dp)
    gpus_per_node = _positive_int("gpus_per_node", gpus_per_node)
    nodes_per_rack = _positive_int("nodes_per_rack", nodes_per_rack)

    ranks = np.arange(tp * pp * dp)
    node = ranks // gpus_per_node
    rack = node // nodes_per_rack
    # grid[pp_stage, dp_rank, tp_rank] -> rank, from the Megatron formula above
    node_grid = node.reshape(pp, dp, tp)
    rack_grid = rack.reshape(pp, dp, tp)
    spans = {}
    for kind, axis, size in (("tensor", 2, tp), ("data", 1, dp), ("pipeline", 0, pp)):
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
        tp_rank=ranks % tp, dp_rank=(ranks // tp) % dp, pp_stage=ranks // (tp * dp),
        node=node, slot=ranks % gpus_per_node, rack=rack, spans=spans,
    )

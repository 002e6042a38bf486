"""Mixture-of-experts (MoE) layers: parameters, FLOPs, all-to-all, load imbalance, memory under EP.

An MoE layer replaces the dense MLP of a transformer block by ``E`` routed experts (each a
small MLP of inner width ``f_e``), a router (a ``h x E`` linear layer whose top-``k``
scores pick the experts of each token) and, in DeepSeekMoE / Qwen2-MoE, ``E_s`` shared
experts every token passes through (Dai et al. 2024; DeepSeek-AI 2024, sec. 2.1.2; Yang
et al. 2024, sec. 2.2.2). A model keeps *all* experts' weights but computes only ``k``
of them per token: memory follows the total parameters, FLOPs the active ones.

Expert parallelism (EP) spreads the experts over ``ep`` GPUs: each token's hidden vector
travels to the GPUs of its ``k`` experts (*dispatch*, an all-to-all) and back (*combine*,
another all-to-all), in the forward pass and again in the backward pass (Lepikhin et al.
2021, GShard, sec. 2.2; Fedus et al. 2022, Switch Transformer, sec. 2.2). Megatron-Core's
*parallel folding* maps attention and experts separately onto the same GPUs: attention
over TP x CP x DP x PP, experts over ETP x EP x EDP x PP, with ``TP x CP x DP = ETP x EP x
EDP`` (Liu et al. 2025, MoE Parallel Folding, sec. 3). Expert weights are replicated over
the expert-data-parallel group EDP and their gradients reduced (and ZeRO-sharded) there.

Routers do not spread tokens evenly. With a capacity factor ``C`` an expert takes at most
``C x`` its mean share and *drops* the rest (GShard, Switch); *dropless* MoE (Gale et al.
2023, MegaBlocks; DeepSeek-V3; Megatron-Core's default) computes every token, so the
most-loaded EP rank is a straggler every other rank waits for.
"""

from __future__ import annotations

import math

import numpy as np

from dataclasses import dataclass
from typing import Optional

from . import _validate as v
from . import collectives as _coll

__all__ = ["DEEPEP_NVLINK_EFFICIENCY", "DEEPEP_NETWORK_EFFICIENCY", "Dispatcher", "DISPATCHER_MEASUREMENTS",
    "grouped_gemm_factor", "GROUPED_GEMM_MEASURED", "short_k_factor", "SHORT_K_HALF_WIDTH", "GROUPED_GEMM_MEASURED_MIN_K", "starved_expert_gemms", "ROUTER_KERNELS", "router_bytes_per_token", 
    "router_params", "expert_params", "moe_mlp_params", "moe_mlp_flops_per_token",
    "all_to_all_time", "expected_remote_nodes", "moe_dispatch_bytes_per_token", "moe_all_to_all_time_per_layer",
    "all_to_all_parts_per_layer", "moe_layer_tp_share", "expert_tp_gather_bytes", "expert_tp_comm_time_per_layer",
    "expected_max_load_ratio", "dropped_token_fraction", "moe_straggler_factor",
    "expert_data_parallel_size", "expert_params_per_gpu", "moe_mlp_activation_bytes_per_layer",
    "expert_weight_stream_time", "tokens_per_expert", "MOE_ALL_TO_ALLS_PER_LAYER", "EXPERT_WEIGHT_PASSES",
    "VALIDATED_MIN_TOKENS_PER_EXPERT",
    "mla_activation_bytes_per_token", "mla_up_projection_params", "FP8_CACHED_BYTES", "E5M6_BYTES",
    "recomputed_elementwise_bytes_per_token",
]

#: All-to-alls per MoE layer and micro-batch: forward dispatch + combine, backward the
#: same two in reverse; full recomputation repeats the forward pair.
#: Source: Lepikhin et al. 2021 (GShard), sec. 2.2 (dispatch and combine); Korthikanti et
#: al. 2022, sec. 5 (full recomputation re-runs the forward pass).
MOE_ALL_TO_ALLS_PER_LAYER = {"none": 4, "selective": 4, "full": 6}

#: Weight-sized HBM transfers of every local expert per micro-batch: the forward GEMMs read the
#: weights, the input-gradient GEMMs read them again, the weight-gradient GEMMs accumulate into a
#: weight-sized gradient; full recomputation reads them once more.
#: Source: the three GEMMs per linear layer of training (Narayanan et al. 2021, sec. 3.2: backward
#: = input-gradient + weight-gradient GEMMs); Korthikanti et al. 2022, sec. 5 (recomputation).
EXPERT_WEIGHT_PASSES = {"none": 3, "selective": 3, "full": 4}

#: Fewest tokens per expert and micro-batch (:func:`tokens_per_expert`, the ``M`` of an expert GEMM) at
#: which the planner's MoE step time has been checked against measurements. NVIDIA measured five layouts
#: of Qwen3-235B-A22B on 256 H100 in BF16 (Megatron-MoE-ModelZoo, ``best_practice/Qwen3/readme.md``,
#: compared in ``notebooks/validation.ipynb``, "Measured alternatives"): without the all-to-all overlap the
#: planner's step is 7 % short and 4 % long at 4,096 tokens per expert, 35 % short at 1,024 and 45 % at 512 (4 and
#: 17 % short, 46 and 53 % before GEMMs were priced by their shapes and MoE layers' TP traffic as Megatron-Core
#: moves it). NVIDIA
#: names the cost it lacks there MoE's "compute efficiency wall": small expert GEMMs and host overhead
#: (Megatron-Bridge documentation, "MoE Training Optimization"). Below this many tokens per expert a plan
#: is outside the validated range and likely optimistic; measured on H100 (BF16) only.
VALIDATED_MIN_TOKENS_PER_EXPERT = 4096

#: Bytes per element of an activation cached in FP8 with one FP32 scale per 1 x 128 tile (1 + 4/128).
#: Source: DeepSeek-AI 2024 (DeepSeek-V3), sec. 3.3.2 (1 x 128 activation tiles) and sec. 3.3.3
#: ("cache activations in FP8 format for the backward pass of the Linear operator").
FP8_CACHED_BYTES = 1.0 + 4.0 / 128

#: Bytes per element of DeepSeek-V3's 12-bit E5M6 format, in which the input of the linear layer after
#: attention (the attention output) is cached. Source: DeepSeek-AI 2024, sec. 3.3.3 ("a customized
#: E5M6 data format exclusively for these activations").
E5M6_BYTES = 1.5

_erfc = np.vectorize(math.erfc, otypes=[float])  # NumPy has no erfc; SciPy is not a dependency
_lgamma = np.vectorize(math.lgamma, otypes=[float])


# --------------------------------------------------------------------------- parameters and FLOPs


def router_params(hidden, experts):
    """Weights of a router: one ``h x E`` linear layer producing a score per expert.

    Parameters
    ----------
    hidden, experts : int or array_like of int, >= 1

    Returns
    -------
    float or ndarray
        ``h E`` parameters.

    Source: Shazeer et al. 2017, sec. 2.1 (gating network ``x W_g``); DeepSeek-AI 2024,
    DeepSeek-V3 technical report, sec. 2.1.2 eq. 15 (affinity ``u_t^T e_i`` of each expert's
    centroid ``e_i``: one ``h``-vector per expert).

    Examples
    --------
    >>> router_params(7168, 256)
    1835008.0
    """
    return v.scalar_or_array(v.integer("hidden", hidden) * v.integer("experts", experts))


def expert_params(hidden, expert_ffn, mlp_matrices=3):
    """Weights of one expert MLP: ``mlp_matrices x h x f_e`` (3 for SwiGLU, 2 for GELU).

    Parameters
    ----------
    hidden, expert_ffn : int or array_like of int, >= 1
        ``h`` and the expert's inner width ``f_e``.
    mlp_matrices : {2, 3}

    Returns
    -------
    float or ndarray

    Source: Jiang et al. 2024 (Mixtral of Experts), sec. 2.1 (each expert is a SwiGLU
    block, as in Mistral 7B); Shazeer 2020 (GLU variants: three matrices).

    Examples
    --------
    Mixtral 8x7B: one expert of ``h = 4096, f_e = 14336``.

    >>> expert_params(4096, 14336) / 1e6
    176.160768
    """
    h = v.integer("hidden", hidden)
    f = v.integer("expert_ffn", expert_ffn)
    if mlp_matrices not in (2, 3):
        raise ValueError(f"mlp_matrices must be 2 (GELU) or 3 (SwiGLU); got {mlp_matrices!r}")
    return v.scalar_or_array(mlp_matrices * h * f)


def moe_mlp_params(hidden, expert_ffn, experts, top_k, shared_experts=0, shared_ffn=None, mlp_matrices=3):
    """Total and active weights of one MoE MLP block (router + routed + shared experts).

    ``total = h E + E P_e + E_s P_s``, ``active = h E + k P_e + E_s P_s`` with ``P_e``
    (``P_s``) the weights of one routed (shared) expert (:func:`expert_params`).

    Parameters
    ----------
    hidden, expert_ffn : int or array_like of int, >= 1
    experts, top_k : int or array_like of int, >= 1
        Routed experts ``E`` and experts per token ``k <= E``.
    shared_experts : int or array_like of int, >= 0, optional
        ``E_s`` experts every token uses.
    shared_ffn : int or array_like of int, >= 1, optional
        Inner width of a shared expert (default ``expert_ffn``).
    mlp_matrices : {2, 3}

    Returns
    -------
    (total, active) : tuple of float or ndarray
        Parameters.

    Source: DeepSeek-AI 2024 (DeepSeek-V3), sec. 2.1.2 eq. 12-13 (shared + routed experts);
    Jiang et al. 2024 (Mixtral), sec. 2.1 (8 experts, top-2); Yang et al. 2024 (Qwen2),
    sec. 2.2.2 and Table 1.

    Examples
    --------
    Mixtral 8x7B's 32 MoE blocks hold 45.1 B of its 46.7 B weights; 11.3 B are active.

    >>> total, active = moe_mlp_params(4096, 14336, 8, 2)
    >>> round(32 * total / 1e9, 1), round(32 * active / 1e9, 1)
    (45.1, 11.3)
    """
    E = v.integer("experts", experts)
    k = v.integer("top_k", top_k)
    if v.any_true(k > E):
        raise ValueError(f"top_k must be <= experts; got top_k={top_k!r}, experts={experts!r}")
    es = v.integer("shared_experts", shared_experts, minimum=0)
    one = expert_params(hidden, expert_ffn, mlp_matrices)
    shared = expert_params(hidden, expert_ffn if shared_ffn is None else shared_ffn, mlp_matrices)
    router = router_params(hidden, experts)
    return (v.scalar_or_array(router + E * one + es * shared),
            v.scalar_or_array(router + k * one + es * shared))


def moe_mlp_flops_per_token(hidden, expert_ffn, experts, top_k, shared_experts=0, shared_ffn=None,
                            mlp_matrices=3):
    """Forward FLOPs of one MoE MLP block per token: ``2 x active weights``.

    The router's ``h x E`` product, ``k`` routed experts and the shared experts: each
    weight is one multiply-add (2 FLOP) per token (Kaplan et al. 2020, sec. 2.1). A
    backward pass costs twice this.

    Parameters
    ----------
    hidden, expert_ffn, experts, top_k, shared_experts, shared_ffn, mlp_matrices
        As in :func:`moe_mlp_params`.

    Returns
    -------
    float or ndarray
        FLOP per token (forward).

    Source: Kaplan et al. 2020, sec. 2.1 (``2N`` per token forward); DeepSeek-AI 2024,
    sec. 2.1.2 (only the selected experts run).

    Examples
    --------
    DeepSeek-V3: 256 experts of 2048, top-8, one shared expert.

    >>> round(moe_mlp_flops_per_token(7168, 2048, 256, 8, 1) / 1e9, 3)
    0.796
    """
    return v.scalar_or_array(2.0 * np.asarray(
        moe_mlp_params(hidden, expert_ffn, experts, top_k, shared_experts, shared_ffn, mlp_matrices)[1]))


# --------------------------------------------------------------------------- all-to-all


def all_to_all_time(message_bytes, n, bandwidth, latency=0.0):
    """Seconds of an all-to-all in which each of ``n`` ranks holds ``message_bytes`` for all.

    Each rank keeps ``1/n`` of its buffer and sends ``(n-1)/n`` of it, one block to each
    peer (pairwise exchange): ``(n-1) alpha + (n-1)/n x M / beta``.

    Parameters
    ----------
    message_bytes : float or array_like, >= 0
        Bytes each rank sends in total (including its own share).
    n : int or array_like of int, >= 1
    bandwidth : float or array_like, > 0
        Bytes/s per direction available to each rank.
    latency : float or array_like, >= 0, optional

    Returns
    -------
    float or ndarray
        Seconds; 0 for ``n = 1``.

    Source: Thakur, Rabenseifner and Gropp 2005, sec. 4.5 (pairwise-exchange all-to-all).

    Examples
    --------
    >>> all_to_all_time(1e9, 8, 100e9)
    0.00875
    """
    M = v.non_negative("message_bytes", message_bytes)
    p = v.integer("n", n)
    bw = v.positive("bandwidth", bandwidth)
    a = v.non_negative("latency", latency)
    return v.scalar_or_array((p - 1) * a + (p - 1) / p * M / bw)


def _log_comb(n, r):
    """``log C(n, r)`` for real ``n >= r >= 0`` (the Gamma function extends it to fractional counts)."""
    return _lgamma(n + 1.0) - _lgamma(r + 1.0) - _lgamma(n - r + 1.0)


def expected_remote_nodes(top_k, nodes, groups=None, group_topk=None):
    """Expected other nodes a token's ``k`` experts live on, under plain or group-limited routing.

    The EP group spans ``N`` nodes, each holding an equal, contiguous range of the experts.
    Without a group limit each of the ``k`` experts lands on a node uniformly, so each other
    node is hit with probability ``1 - (1 - 1/N)^k``.

    Group-limited routing divides the experts into ``G`` equal, contiguous groups; a token
    first picks ``g`` groups, then its ``k`` experts among theirs (DeepSeek-V3: ``G = 8``,
    ``g = 4``). It limits a token to ``g`` nodes only where a group is a node. Taking the
    ``g`` groups uniformly and the ``k`` experts uniformly over their experts:

    - ``N >= G`` (a group spans ``N/G`` nodes): a node is hit if its group is picked and one
      of the ``k`` experts falls on its ``1/(gN/G)`` share: ``(g/G)(1 - (1 - G/(gN))^k)``;
      with EP over 32 nodes DeepSeek-V3's tokens reach about 6 other nodes, not 3.
    - ``N < G`` (a node holds ``G/N`` groups): ``J`` of its groups are picked
      (hypergeometric) and it is hit with probability ``1 - (1 - J/g)^k``, averaged over ``J``.

    The expected count of *other* nodes is ``(N - 1)`` times that probability; a token sent
    to a node once is forwarded to its experts there over NVLink, so the network carries one
    copy per remote node.

    Parameters
    ----------
    top_k : int or array_like of int, >= 1
    nodes : int or array_like of int, >= 1
        Nodes the EP group spans ``N``.
    groups, group_topk : int, optional
        ``G`` and ``g`` of group-limited routing (``1 <= g <= G``); ``None``: no limit.

    Returns
    -------
    float or ndarray

    Source: DeepSeek-AI 2024 (DeepSeek-V3), sec. 2.1.2 "node-limited routing" (at most
    ``M = 4`` nodes per token, on the 8 nodes of its EP 64, sec. 3.2) and sec. 3.2.2 (IB to
    the target node once, then NVLink forwarding); the released ``config.json`` and
    Megatron-Core implement it as group-limited routing, ``n_group 8, topk_group 4``
    (``--moe-router-num-groups``: "Set equal to number of nodes in EP group to limit each
    token to experts on a subset of nodes", Megatron-LM ``arguments.py``).

    Examples
    --------
    DeepSeek-V3: 8 experts over EP 64 on 8 nodes, 4 of 8 groups per token, then EP over 32 nodes.

    >>> [round(float(expected_remote_nodes(8, n, 8, 4)), 2) for n in (8, 32)]
    [3.15, 6.25]
    >>> round(float(expected_remote_nodes(8, 8)), 2)  # without the group limit
    4.6
    """
    k = np.asarray(v.integer("top_k", top_k), dtype=float)
    N = np.asarray(v.integer("nodes", nodes), dtype=float)
    if k.ndim == 0 and N.ndim > 0 and N.size > 64:
        # a sweep asks for a handful of node counts over a large grid: compute each once
        unique, where = np.unique(N, return_inverse=True)
        per_count = np.asarray(expected_remote_nodes(top_k, unique.astype(np.int64), groups, group_topk))
        return per_count[where].reshape(N.shape)
    if groups is None and group_topk is None:
        hit = 1.0 - (1.0 - 1.0 / N) ** k
    else:
        if groups is None or group_topk is None:
            raise ValueError("groups and group_topk go together: give both or neither")
        G = float(v.integer("groups", groups))
        g = float(v.integer("group_topk", group_topk))
        if g > G:
            raise ValueError(f"group_topk must not exceed groups ({groups}); got {group_topk!r}")
        spread = (g / G) * (1.0 - np.maximum(1.0 - G / (g * N), 0.0) ** k)
        # a node holding q = G/N whole groups: sum over the J of them the token picks
        q = G / np.minimum(N, G)
        packed = np.zeros_like(spread)
        for j in range(int(g) + 1):
            possible = (q >= j) & (G - q >= g - j)
            # hypergeometric P(J = j) = C(q, j) C(G - q, g - j) / C(G, g); safe arguments where impossible
            log_h = (_log_comb(np.where(possible, q, j), j) + _log_comb(np.where(possible, G - q, g - j), g - j)
                     - _log_comb(G, g))
            packed = packed + np.where(possible, np.exp(log_h), 0.0) * (1.0 - (1.0 - j / g) ** k)
        hit = np.where(N >= G, spread, packed)
    return v.scalar_or_array((N - 1.0) * hit)


def moe_dispatch_bytes_per_token(hidden, top_k, ep, ranks_per_node, groups=None, group_topk=None,
                                 bytes_per_element=2.0, per_node=False):
    """Bytes one token's dispatch moves inside the node (NVLink) and between nodes (network).

    Without node-limited routing every routed copy whose expert lives on another rank
    travels on its own: ``k (1 - 1/ep)`` copies, of which ``k (1 - r/ep)`` leave the node
    (``r`` EP ranks per node). With node-limited, deduplicated dispatch (DeepSeek-V3) the
    network carries one copy per remote node (:func:`expected_remote_nodes`) and NVLink
    the forwarding to the experts of each node; group-limited routing (``groups``,
    ``group_topk``) lowers that count where its groups fall on few nodes. A copy is
    ``h x bytes_per_element`` bytes.
    The combine moves the same bytes back.

    Parameters
    ----------
    hidden, top_k : int or array_like of int, >= 1
    ep : int or array_like of int, >= 1
        Expert-parallel size.
    ranks_per_node : int or array_like of int, >= 1
        EP ranks on one node (``<= ep``).
    groups, group_topk : int, optional
        Group-limited routing, as in :func:`expected_remote_nodes`.
    bytes_per_element : float, optional
        2 for BF16; DeepSeek-V3 dispatches in FP8 (about 1 byte plus scales).
    per_node : bool, optional
        Hierarchical dispatch without a node limit: one network copy per remote node, then
        NVLink forwarding (DeepEP's normal kernels, Megatron-Core's ``flex`` dispatcher);
        implied by group-limited routing, which DeepSeek-V3 pairs with it (sec. 3.2.2).

    Returns
    -------
    (intra, inter) : tuple of float or ndarray
        Bytes per token over NVLink and over the network.

    Source: Lepikhin et al. 2021 (GShard), sec. 2.2; DeepSeek-AI 2024 (DeepSeek-V3),
    sec. 3.2.2 (dispatch over IB once per node, NVLink forwarding) and sec. 3.3.2 (FP8
    dispatch, BF16 combine); deepseek-ai/DeepEP README ("kernels optimized for the
    asymmetric-domain bandwidth forwarding, such as forwarding data from NVLink domain to
    RDMA domain"), which Megatron-Core runs as ``--moe-token-dispatcher-type flex``.

    Examples
    --------
    Mixtral 8x7B, top-2, EP 8 inside one node: ``2 x 7/8`` copies of 8 KiB over NVLink.

    >>> moe_dispatch_bytes_per_token(4096, 2, 8, 8)
    (14336.0, 0.0)

    Qwen3-235B-A22B (top-8) over EP 32 on 4 nodes: 8 x 24/32 = 6 network copies, or
    ``3 (1 - (3/4)^8) = 2.7`` with one copy per remote node (DeepEP).

    >>> [round(x / 8192, 2) for x in moe_dispatch_bytes_per_token(4096, 8, 32, 8)]
    [1.75, 6.0]
    >>> [round(x / 8192, 2) for x in moe_dispatch_bytes_per_token(4096, 8, 32, 8, per_node=True)]
    [7.75, 2.7]
    """
    h = v.integer("hidden", hidden)
    k = v.integer("top_k", top_k)
    e = v.integer("ep", ep)
    r = np.minimum(v.integer("ranks_per_node", ranks_per_node), e)
    nb = v.positive("bytes_per_element", bytes_per_element)
    copy = h * nb
    if groups is None and not per_node:
        inter = k * (1.0 - r / e) * copy
        intra = k * (r - 1.0) / e * copy
    else:
        nodes = np.maximum(e // r, 1)
        inter = np.asarray(expected_remote_nodes(k, nodes, groups, group_topk)) * copy
        # every routed copy not on this rank reaches its expert over NVLink once (locally or forwarded)
        intra = k * (1.0 - 1.0 / e) * copy
    return v.scalar_or_array(intra), v.scalar_or_array(inter)


#: Share of the link's per-direction bandwidth DeepEP's normal (training) kernels reach, measured on H800 with
#: DeepSeek-V3's settings (4,096 tokens, hidden 7,168, top-8 of 4 groups, FP8 dispatch, BF16 combine):
#: intranode EP 8 dispatch 153 GB/s over NVLink, whose data-sheet rate is 200 GB/s per direction; internode
#: EP 16 43 GB/s of RDMA per 50 GB/s CX7 400 Gbit/s NIC (deepseek-ai/DeepEP, docs/legacy.md, "Normal kernels
#: with NVLink and RDMA forwarding"; the EP 32 and 64 rows, 58 and 51 GB/s, count local traffic as well).
DEEPEP_NVLINK_EFFICIENCY = 153.0 / 200.0
DEEPEP_NETWORK_EFFICIENCY = 43.0 / 50.0


@dataclass(frozen=True)
class Dispatcher:
    """How an MoE token dispatcher moves tokens, at its measured speed.

    ``copies``: ``"expert"`` (one network copy per remote expert, NCCL's all-to-all), ``"node"`` (one per remote
    node, forwarded over NVLink there), ``"network"`` (every remote copy over the network, NVLink unused) or
    ``"gather"`` (every EP rank receives every token, then reduce-scatters the outputs). ``nvlink`` and
    ``network``: (point, low, high) achieved share of each link's per-direction bandwidth; ``large_domain_nvlink``
    the NVLink share measured where the NVLink domain holds more than 8 GPUs (NVL72), ``None``: as ``nvlink``.
    ``latency``: seconds per all-to-all beyond the links' (kernel and synchronisation), measured.
    """

    name: str
    copies: str
    nvlink: tuple
    network: tuple
    large_domain_nvlink: Optional[tuple]
    latency: float
    source: str


#: Every dispatcher the planner prices, with its measurement.
DISPATCHER_MEASUREMENTS = {d.name: d for d in [
    Dispatcher("alltoall", "expert", (370.0 / 450.0, 0.7, 0.9), (46.0 / 50.0, 0.86, 0.94), None, 0.0,
               "Megatron-Core MoEAlltoAllTokenDispatcher over NCCL all-to-all: nccl-tests alltoall_perf, 370 GB/s "
               "busbw of 450 on 8 H100 NVLink (nccl-tests issue #212) and 46 GB/s per 400 Gbit/s NIC across 2 DGX "
               "H100 (deepseek-ai/DeepEP issue #3); range: the NVLink spread of nccl-tests' large messages and "
               "DeepEP's internode 43 GB/s"),
    Dispatcher("deepep", "node", (153.0 / 200.0, 0.72, 0.79), (43.0 / 50.0, 0.78, 0.92), (0.29, 0.21, 0.44), 0.0,
               "DeepEP normal kernels (deepseek-ai/DeepEP README, H800, DeepSeek-V3 settings): 153-158 GB/s NVLink "
               "intranode, 43-58 GB/s RDMA internode per 50 GB/s NIC; on a GB200 NVL72 domain (EP 32) NVIDIA "
               "measured about 400 GB/s dispatch and 190 GB/s combine of 900 (Megatron-LM docs, 'Optimizing "
               "DeepSeek-V3 Training Performance on NVIDIA GB200 NVL72', sec. 2.2.1): 0.29 for the pair"),
    Dispatcher("deepep-ll", "network", (1.0, 1.0, 1.0), (43.0 / 50.0, 39.0 / 50.0, 46.0 / 50.0), None, 244e-6,
               "DeepEP low-latency kernels (deepseek-ai/DeepEP README, H800, 128 tokens, top-8, pure RDMA): EP 64 "
               "dispatch 173 us at 43 GB/s, combine 314 us at 46 GB/s; 39-46 GB/s from EP 64 to 256; the "
               "latency: the mean of dispatch and combine at EP 64, per all-to-all (NVLink unused: its share is "
               "never read)"),
    Dispatcher("hybridep", "node", (370.0 / 450.0, 0.29, 0.9), (43.0 / 50.0, 0.78, 0.92), (0.82, 0.29, 0.9), 0.0,
               "NVIDIA HybridEP (deepseek-ai/DeepEP hybrid-ep branch; TMA copies inside the NVLink domain, IBGDA "
               "RDMA across it): NVIDIA publishes its bandwidth only as a chart; its end-to-end gain over tuned "
               "DeepEP on 256 GB200 is +113.6 TFLOPS (Megatron-LM docs, GB200 NVL72 guide, sec. 2.5). Priced at "
               "NCCL's measured NVLink share, range from DeepEP's MNNVL share to nccl-tests' best"),
    Dispatcher("allgather", "gather", (370.0 / 450.0, 0.7, 0.9), (47.0 / 50.0, 0.86, 0.94), None, 0.0,
               "Megatron-Core MoEAllGatherTokenDispatcher: all-gather of every EP rank's tokens, reduce-scatter of "
               "the outputs, at NCCL's all-gather / reduce-scatter shares (nccl-tests issues #212, #290)"),
]}


#: DeepGEMM's measured FP8 grouped-GEMM speed on H800 for DeepSeek-V3's expert shapes (deepseek-ai/DeepGEMM
#: README, "Grouped GEMMs for MoE models", contiguous layout at 4,096-8,192 rows per group, masked layout at 1,024, 512
#: and 256): rows per expert -> (midpoint, low, high) share of the speed at 4,096-8,192 rows, the two measured shapes
#: (N 4,096 x K 7,168 and N 7,168 x K 2,048) each against its own large-M speed: 1,233 / 1,297 and 925 / 1,099 TFLOPS
#: at 1,024 rows, 1,040 / 1,297 and 916 / 1,099 at 512, 932 / 1,297 and 815 / 1,099 at 256.
GROUPED_GEMM_MEASURED = ((256.0, 0.730, 0.719, 0.742), (512.0, 0.818, 0.802, 0.833), (1024.0, 0.895, 0.84, 0.95),
                         (4096.0, 1.0, 1.0, 1.0))


def grouped_gemm_factor(tokens_per_expert, bound="point"):
    """Share of a large grouped GEMM's speed the expert GEMMs keep at ``tokens_per_expert`` rows each.

    Interpolated in log2 of the rows between DeepGEMM's measured points (:data:`GROUPED_GEMM_MEASURED`: 256,
    512, 1,024 and 4,096 rows), 1 at 4,096 rows and above, extrapolated below 256 at the slope between 256 and 512
    rows (floored at 0.25). The shape model of :mod:`course.core.gemm` prices wave quantization and the roofline;
    this is what the measurement finds beyond them (tile scheduling across groups, per-group setup).

    Parameters
    ----------
    tokens_per_expert : float or array_like, > 0
    bound : {"point", "low", "high"}
        The measured midpoint or an end of the measured range.

    Returns
    -------
    float or ndarray in (0, 1]

    Source: deepseek-ai/DeepGEMM README (grouped GEMMs, contiguous and masked layouts, H800, FP8).

    Examples
    --------
    >>> float(grouped_gemm_factor(8192)), float(grouped_gemm_factor(1024)), float(grouped_gemm_factor(512))
    (1.0, 0.895, 0.818)
    >>> round(float(grouped_gemm_factor(128)), 3)   # below the measurement: the 256-512 slope continued
    0.642
    """
    t = v.positive("tokens_per_expert", tokens_per_expert)
    col = {"point": 1, "low": 2, "high": 3}[v.choice("bound", bound, ("point", "low", "high"))]
    rows = np.log2([x for x, *_ in GROUPED_GEMM_MEASURED])
    share = np.array([y[col - 1] for _, *y in GROUPED_GEMM_MEASURED])
    x = np.log2(np.minimum(t, GROUPED_GEMM_MEASURED[-1][0]))
    below = share[0] - (share[1] - share[0]) / (rows[1] - rows[0]) * (rows[0] - x)
    out = np.where(x < rows[0], below, np.interp(x, rows, share))
    return v.scalar_or_array(np.clip(out, 0.25, 1.0))


#: How a GEMM's speed falls with its reduced width ``K``, ``K / (K + K0)``: each output tile pays a fixed prologue
#: and epilogue (pipeline fill, the store of the tile) over ``K`` steps of multiply-accumulate. ``K0`` (point, low,
#: high) in elements, from DeepGEMM's dense FP8 GEMMs on H800 at M = 4,096 (deepseek-ai/DeepGEMM README, "Normal GEMMs
#: for dense models"): measured over the course's shape model (:mod:`course.core.gemm`, which prices tiles and the
#: roofline but not ``K``) they keep 0.998 at K = 16,384, 0.958 at 7,168, 0.753 at 2,048, 0.712 at 1,536 and 0.427 at 512
#: (N 4,096 to 32,768); least squares ``c K / (K + K0)`` gives K0 = 750, each point alone 673 to 824. A kernel
#: measurement, not a training run: no row of the validation was used.
SHORT_K_HALF_WIDTH = (750.0, 673.0, 824.0)
#: The smallest reduced width in DeepGEMM's grouped-GEMM measurement (:data:`GROUPED_GEMM_MEASURED`, K 2,048 and
#: 7,168): down to it the grouped factor holds what ``K`` costs; below it :func:`short_k_factor` adds the rest.
GROUPED_GEMM_MEASURED_MIN_K = 2048.0


def short_k_factor(k, bound="point"):
    """Share of its speed at K = 2,048 a GEMM keeps at a shorter reduced width ``k`` (1 from 2,048 up).

    ``[k / (k + K0)] / [2048 / (2048 + K0)]`` with ``K0`` of :data:`SHORT_K_HALF_WIDTH`, for ``k`` below
    :data:`GROUPED_GEMM_MEASURED_MIN_K`. Fine-grained experts have short ``K``: Qwen3-30B-A3B's down projection
    reduces over its 768-wide expert (0.69 of the speed at 2,048), Qwen3-235B-A22B's over 1,536 (0.92).

    Parameters
    ----------
    k : float or array_like, > 0
        Reduced width of the GEMM (elements).
    bound : {"point", "low", "high"}
        ``K0`` at its fitted value, at its slow end (824) or its fast end (673).

    Returns
    -------
    float or ndarray in (0, 1]

    Source: deepseek-ai/DeepGEMM README, "Normal GEMMs for dense models" (H800, FP8, M = 4,096), against
    :func:`course.core.gemm.gemm_time`.

    Examples
    --------
    >>> round(float(short_k_factor(768)), 3), round(float(short_k_factor(1536)), 3), float(short_k_factor(7168))
    (0.691, 0.918, 1.0)
    """
    k = v.positive("k", k)
    k0 = SHORT_K_HALF_WIDTH[{"point": 0, "low": 2, "high": 1}[v.choice("bound", bound, ("point", "low", "high"))]]
    ref = GROUPED_GEMM_MEASURED_MIN_K
    kk = np.minimum(k, ref)
    return v.scalar_or_array((kk / (kk + k0)) / (ref / (ref + k0)))


#: Element-wise kernels of Megatron-Core's fused router per MoE layer pass (forward and backward), each reading and
#: writing a token's ``E`` FP32 scores: NVIDIA's fusion took "the total number of kernels in the router part from
#: 72 to 31" (Megatron-LM docs, "Optimizing DeepSeek-V3 Training Performance on NVIDIA GB200 NVL72", sec. 2.1.4).
ROUTER_KERNELS = 31


def router_bytes_per_token(experts, kernels=ROUTER_KERNELS):
    """HBM bytes the router's element-wise kernels move per token and MoE layer pass.

    Each of ``kernels`` memory-bound kernels (softmax or sigmoid, top-k, the routing map, the auxiliary loss and
    their gradients) reads and writes the token's ``E`` scores in FP32: ``2 x 4 x E x kernels`` bytes. The router's
    ``h x E`` GEMM is counted with the FLOPs; the permutation and un-permutation of the ``k`` routed copies with
    the MoE layer's element-wise traffic (:func:`moe_mlp_activation_bytes_per_layer`).

    Parameters
    ----------
    experts : int or array_like, >= 1
        Routed experts ``E``.
    kernels : int, optional
        Element-wise router kernels per layer pass (:data:`ROUTER_KERNELS`; 72 without router fusion).

    Returns
    -------
    float or ndarray
        Bytes.

    Source: Megatron-LM docs, "Optimizing DeepSeek-V3 Training Performance on NVIDIA GB200 NVL72", sec. 2.1.4
    (kernel count); Williams et al. 2009 (roofline: element-wise kernels are memory-bound).

    Examples
    --------
    >>> router_bytes_per_token(256)
    63488.0
    """
    e = v.positive("experts", experts)
    n = v.positive("kernels", kernels)
    return v.scalar_or_array(2.0 * 4.0 * e * n)


def starved_expert_gemms(tokens_per_expert, expert_width, hidden):
    """Whether a layout's expert GEMMs lie outside the shapes whose grouped-GEMM speed was measured.

    Fires where the experts multiply fewer rows than DeepGEMM's smallest grouped measurement (256 per expert), or
    reduce over a width shorter than its smallest (2,048: the down projection over ``expert_width``, the expert's
    inner width over expert-TP, or the up projection over ``hidden``). There the planner prices the expert GEMMs by
    extrapolation, from the dense K sweep (:func:`short_k_factor`) or beyond the measured rows
    (:func:`grouped_gemm_factor`), and what else such small GEMMs cost (their launches, casts and per-group setup,
    NVIDIA's "compute efficiency wall" of MoE: Megatron-Bridge documentation, "MoE Training Optimization") is not
    measured. The rule is set by the kernel measurement's coverage, not by any training run.

    Parameters
    ----------
    tokens_per_expert : float or array_like, >= 0
        Rows of an expert GEMM per micro-batch (:func:`tokens_per_expert`).
    expert_width : float or array_like, > 0
        The expert's inner width on one GPU (``expert_ffn / ETP``).
    hidden : float or array_like, > 0
        The model width (the up projection's reduced width).

    Returns
    -------
    bool or ndarray of bool

    Source: deepseek-ai/DeepGEMM README (the shapes of its grouped-GEMM measurement).

    Examples
    --------
    >>> bool(starved_expert_gemms(4096, 768, 2048)), bool(starved_expert_gemms(4096, 2048, 7168))
    (True, False)
    """
    rows = v.non_negative("tokens_per_expert", tokens_per_expert)
    width = v.positive("expert_width", expert_width)
    h = v.positive("hidden", hidden)
    smallest = GROUPED_GEMM_MEASURED_MIN_K
    return v.scalar_or_array((rows < GROUPED_GEMM_MEASURED[0][0]) | (width < smallest) | (h < smallest))


def moe_all_to_all_time_per_layer(tokens, hidden, top_k, ep, ranks_per_node, intra_bandwidth, inter_bandwidth,
                                  intra_latency=0.0, inter_latency=0.0, groups=None, group_topk=None,
                                  recompute="none", bytes_per_element=2.0, per_node=False):
    """Seconds of dispatch and combine all-to-alls of one MoE layer and micro-batch on one GPU.

    Per all-to-all the NVLink and network parts run at the same time, so it takes the
    longer of ``intra bytes / intra bandwidth`` and ``inter bytes / inter bandwidth``
    (plus latency per peer); :data:`MOE_ALL_TO_ALLS_PER_LAYER` all-to-alls per layer.
    Nothing is overlapped here: the caller decides what compute hides it.

    Parameters
    ----------
    tokens : float or array_like, > 0
        Tokens this GPU dispatches per micro-batch.
    hidden, top_k, ep, ranks_per_node, groups, group_topk, bytes_per_element, per_node
        As in :func:`moe_dispatch_bytes_per_token`.
    intra_bandwidth, inter_bandwidth : float or array_like, > 0
        Achieved bytes/s per direction of one GPU on NVLink and on the network.
    intra_latency, inter_latency : float or array_like, >= 0, optional
    recompute : {"none", "selective", "full"}

    Returns
    -------
    float or ndarray
        Seconds.

    Source: Lepikhin et al. 2021, sec. 2.2; DeepSeek-AI 2024, sec. 3.2.2; Thakur et al.
    2005 (pairwise all-to-all).

    Examples
    --------
    4,096 tokens of Mixtral 8x7B, EP 8 on one node at 360 GB/s: 4 x 4096 x 14 KiB / 360 GB/s + 7 hops.

    >>> round(moe_all_to_all_time_per_layer(4096, 4096, 2, 8, 8, 360e9, 40e9) * 1e6, 1)
    652.4
    """
    nvlink, network = all_to_all_parts_per_layer(tokens, hidden, top_k, ep, ranks_per_node, intra_bandwidth,
                                                 inter_bandwidth, intra_latency, inter_latency, groups, group_topk,
                                                 recompute, bytes_per_element, per_node)
    return v.scalar_or_array(np.maximum(nvlink, network))


def all_to_all_parts_per_layer(tokens, hidden, top_k, ep, ranks_per_node, intra_bandwidth, inter_bandwidth,
                               intra_latency=0.0, inter_latency=0.0, groups=None, group_topk=None,
                               recompute="none", bytes_per_element=2.0, per_node=False):
    """The NVLink and the network part of :func:`moe_all_to_all_time_per_layer`, each on its own.

    On each link::

        nvlink  = n_a2a x (T x intra bytes per token / B_nvlink + (r - 1) alpha_nvlink)
        network = n_a2a x (T x inter bytes per token / B_network + (nodes - 1) alpha_network)

    with ``n_a2a`` = :data:`MOE_ALL_TO_ALLS_PER_LAYER` and the bytes per token of
    :func:`moe_dispatch_bytes_per_token`. The two run at once, so the layer's all-to-all time is the
    larger; a view that shows which link sets the time reads both.

    Parameters
    ----------
    tokens, hidden, top_k, ep, ranks_per_node, intra_bandwidth, inter_bandwidth, intra_latency, inter_latency,
    groups, group_topk, recompute, bytes_per_element, per_node
        As in :func:`moe_all_to_all_time_per_layer` (bandwidths in bytes/s per direction, latencies in s).

    Returns
    -------
    (nvlink, network) : tuple of ndarray
        Seconds on each link; both 0 for ``ep = 1``.

    Source: Lepikhin et al. 2021 (GShard), sec. 2.2; DeepSeek-AI 2024 (DeepSeek-V3), sec. 3.2.2 (the IB
    and NVLink parts of a dispatch run concurrently); Thakur et al. 2005 (pairwise all-to-all).

    Examples
    --------
    >>> nv, net = all_to_all_parts_per_layer(4096, 4096, 2, 8, 8, 360e9, 40e9)
    >>> round(float(nv) * 1e6, 1), float(net)
    (652.4, 0.0)
    """
    n = v.positive("tokens", tokens)
    intra, inter = moe_dispatch_bytes_per_token(hidden, top_k, ep, ranks_per_node, groups, group_topk,
                                                bytes_per_element, per_node)
    e = v.integer("ep", ep)
    r = np.minimum(v.integer("ranks_per_node", ranks_per_node), e)
    bw_in = v.positive("intra_bandwidth", intra_bandwidth)
    bw_out = v.positive("inter_bandwidth", inter_bandwidth)
    a_in = v.non_negative("intra_latency", intra_latency)
    a_out = v.non_negative("inter_latency", inter_latency)
    count = MOE_ALL_TO_ALLS_PER_LAYER[v.choice("recompute", recompute, tuple(MOE_ALL_TO_ALLS_PER_LAYER))]
    nvlink = count * (n * np.asarray(intra) / bw_in + (r - 1) * a_in)
    network = count * (n * np.asarray(inter) / bw_out + np.where(e > r, e // r - 1, 0) * a_out)
    return np.where(e > 1, nvlink, 0.0), np.where(e > 1, network, 0.0)


# --------------------------------------------------------------------------- tensor parallelism in an MoE layer


def moe_layer_tp_share(shared_experts=0):
    """Share of a dense layer's tensor-parallel traffic an MoE layer moves over the attention TP group.

    A dense layer pays the TP collectives of two TP-sharded blocks, attention and the MLP (an all-reduce
    each per pass, or an all-gather + reduce-scatter with sequence parallelism: Shoeybi et al. 2019, Fig. 4;
    Korthikanti et al. 2022, sec. 4.2.2). In an MoE layer under Megatron-Core's parallel folding the routed
    experts do not use the attention TP group: with sequence parallelism (which Megatron-Core requires for
    MoE with TP, ``MoELayer.forward``) each GPU routes and dispatches its own ``s / TP`` tokens over the EP
    group, and only expert-TP (ETP > 1) adds collectives, over its own group
    (:func:`expert_tp_comm_time_per_layer`). Shared experts are a dense MLP sharded over the attention TP
    group (``SharedExpertMLP`` is built with ``tp_group=pg_collection.tp`` and gathers / reduce-scatters its
    input and output over it), so a layer with them pays the MLP half as well::

        share = (1 + [shared experts > 0]) / 2

    Parameters
    ----------
    shared_experts : int or array_like of int, >= 0
        Shared experts per MoE layer (DeepSeek-V3: 1; Qwen3-235B-A22B: 0).

    Returns
    -------
    float or ndarray
        0.5 without shared experts, 1.0 with them.

    Source: NVIDIA/Megatron-LM ``megatron/core/transformer/moe/moe_layer.py`` (``MoELayer.forward``: MoE
    with TP needs sequence parallelism; the router and dispatcher take the sequence-parallel shard),
    ``token_dispatcher.py`` (``MoEAlltoAllTokenDispatcher``: all-to-all over the EP group, collectives
    only over ``pg_collection.expt_tp``) and ``shared_experts.py`` (``SharedExpertMLP.__init__``,
    ``pre_forward_comm``, ``post_forward_comm``: over ``pg_collection.tp``); Liu et al. 2025 (MoE Parallel
    Folding), sec. 3.

    Examples
    --------
    >>> moe_layer_tp_share(0), moe_layer_tp_share(1)
    (0.5, 1.0)
    """
    n = v.integer("shared_experts", shared_experts, minimum=0)
    return v.scalar_or_array(np.where(n > 0, 1.0, 0.5))


def expert_tp_gather_bytes(tokens, hidden, top_k, etp, bytes_per_element=2.0):
    """Bytes one GPU sends in one expert-TP all-gather (or reduce-scatter) of its routed tokens.

    After the dispatch all-to-all a GPU holds the routed copies its EP peers sent it: ``T k`` of them on
    average for ``T`` dispatched tokens per GPU and top-``k`` routing (each GPU sends ``T k`` copies and, with
    a balanced router, receives as many). Megatron-Core's all-to-all dispatcher then all-gathers them over the
    expert-TP group, so that every ETP rank multiplies all ``ETP x T k`` of them by its slice of the experts,
    and reduce-scatters the expert outputs back before the combine. A ring all-gather of the ``ETP x T k x h``
    gathered elements sends ``(ETP - 1) / ETP`` of them from each rank::

        bytes = (ETP - 1) T k h bytes_per_element

    Parameters
    ----------
    tokens : float or array_like, >= 0
        Tokens one GPU dispatches per micro-batch, ``T`` (``b s / (CP x TP)`` with sequence parallelism).
    hidden, top_k : int or array_like of int, >= 1
    etp : int or array_like of int, >= 1
        Expert-tensor-parallel size (1 sends nothing).
    bytes_per_element : float or array_like, > 0, optional
        2 for BF16.

    Returns
    -------
    float or ndarray
        Bytes.

    Source: NVIDIA/Megatron-LM ``megatron/core/transformer/moe/token_dispatcher.py``,
    ``MoEAlltoAllTokenDispatcher.dispatch_postprocess`` (``gather_from_sequence_parallel_region(...,
    group=self.tp_group)``, the expert-TP group, after the EP all-to-all) and ``combine_preprocess``
    (``reduce_scatter_to_sequence_parallel_region`` before the combine); Patarasuk & Yuan 2009 (ring volume).

    Examples
    --------
    Qwen3-235B-A22B with TP 2 (2,048 tokens per GPU), top-8, h = 4,096, ETP 2: 1 x 2,048 x 8 x 4,096 x 2 bytes.

    >>> expert_tp_gather_bytes(2048, 4096, 8, 2) / 2**20
    128.0
    >>> expert_tp_gather_bytes(2048, 4096, 8, 1)
    0.0
    """
    e = v.integer("etp", etp)
    return v.scalar_or_array((e - 1.0) * _routed_copy_bytes(tokens, hidden, top_k, bytes_per_element))


def _routed_copy_bytes(tokens, hidden, top_k, bytes_per_element):
    """Bytes of the ``T k`` routed copies one GPU holds after the dispatch: ``T k h bytes_per_element``."""
    t = v.non_negative("tokens", tokens)
    h = v.integer("hidden", hidden)
    k = v.integer("top_k", top_k)
    b = v.positive("bytes_per_element", bytes_per_element)
    return t * k * h * b


def expert_tp_comm_time_per_layer(tokens, hidden, top_k, etp, bandwidth, latency=0.0, recompute="none",
                                  bytes_per_element=2.0):
    """Seconds of expert-TP all-gathers and reduce-scatters of one MoE layer and micro-batch on one GPU.

    Forward: one all-gather of the received tokens over the ETP group after the dispatch and one
    reduce-scatter of the expert outputs before the combine; the backward pass runs each one's transpose
    (a reduce-scatter and an all-gather); full recomputation repeats the forward pair: as many collectives
    as the layer has all-to-alls (:data:`MOE_ALL_TO_ALLS_PER_LAYER`), each a ring over ``ETP`` ranks::

        t = n x ((ETP - 1) alpha + expert_tp_gather_bytes / B)

    with ``B`` the achieved bandwidth of the ETP group's link (NVLink when the group sits inside one
    NVLink domain, which Megatron-Core's expert order tp-ep-dp places innermost; the network otherwise).
    Nothing is overlapped here; the caller decides what hides it. 0 for ``ETP = 1``.

    Parameters
    ----------
    tokens, hidden, top_k, etp, bytes_per_element
        As in :func:`expert_tp_gather_bytes`.
    bandwidth : float or array_like, > 0
        Achieved bytes/s per GPU and direction on the ETP group's link.
    latency : float or array_like, >= 0, optional
        Seconds per ring step.
    recompute : {"none", "selective", "full"}

    Returns
    -------
    float or ndarray
        Seconds.

    Source: NVIDIA/Megatron-LM ``token_dispatcher.py`` (``MoEAlltoAllTokenDispatcher.dispatch_postprocess``
    and ``combine_preprocess``; the flex dispatcher, ``MoEFlexTokenDispatcher._initialize_metadata``, instead
    sends each token to every ETP rank of its expert inside DeepEP's dispatch over the TP x EP group: the same
    bytes); Thakur et al. 2005, sec. 4 (ring all-gather and reduce-scatter).

    Examples
    --------
    The 128 MiB of :func:`expert_tp_gather_bytes` four times at NCCL's 370 GB/s on H100 NVLink: 1.45 ms.

    >>> round(expert_tp_comm_time_per_layer(2048, 4096, 8, 2, 370e9) * 1e3, 3)
    1.451
    >>> expert_tp_comm_time_per_layer(2048, 4096, 8, 1, 370e9)
    0.0
    """
    e = v.integer("etp", etp)
    count = MOE_ALL_TO_ALLS_PER_LAYER[v.choice("recompute", recompute, tuple(MOE_ALL_TO_ALLS_PER_LAYER))]
    # each collective is a ring all-gather (or reduce-scatter) of the ETP ranks' routed copies
    gathered = e * _routed_copy_bytes(tokens, hidden, top_k, bytes_per_element)
    return v.scalar_or_array(count * np.asarray(_coll.all_gather_time(gathered, e, bandwidth, latency)))


# --------------------------------------------------------------------------- load imbalance


def expected_max_load_ratio(tokens, top_k, bins):
    """Expected load of the busiest of ``bins`` over the mean, for ``k x tokens`` random picks.

    Each of ``T k`` routed copies lands in one of ``n`` bins (experts or EP ranks)
    uniformly; for ``T k >> n ln n`` the fullest bin holds about ``mu + sqrt(2 mu ln n)``
    (``mu = T k / n``), so the ratio is ``1 + sqrt(2 ln n / mu)``. A router trained with a
    balancing loss is close to this; a skewed one is worse.

    Parameters
    ----------
    tokens : float or array_like, > 0
        Tokens routed together (one micro-batch of the EP group).
    top_k : int or array_like of int, >= 1
    bins : int or array_like of int, >= 1

    Returns
    -------
    float or ndarray
        ``>= 1``; exactly 1 for one bin.

    Source: Raab and Steger 1998, "Balls into Bins - A Simple and Tight Analysis",
    Theorem 1 (case ``m >> n log n``).

    Examples
    --------
    4,096 tokens x top-8 over 64 ranks (512 copies each on average):

    >>> round(float(expected_max_load_ratio(4096, 8, 64)), 3)
    1.127
    """
    T = v.positive("tokens", tokens)
    k = v.integer("top_k", top_k)
    n = v.integer("bins", bins)
    mu = T * k / n
    return v.scalar_or_array(1.0 + np.sqrt(2.0 * np.log(n) / mu))


def dropped_token_fraction(capacity_factor, load_ratio_std):
    """Share of routed tokens dropped when every expert takes at most ``C x`` its mean load.

    With expert loads ``L ~ Normal(mu, (sigma mu)^2)`` and capacity ``C mu`` the dropped
    share is ``E[max(0, L - C mu)] / mu = sigma (phi(z) - z (1 - Phi(z)))``, ``z = (C - 1)
    / sigma`` (the Gaussian loss function).

    Parameters
    ----------
    capacity_factor : float or array_like, > 0
        ``C`` (GShard and Switch use 1.0 to 2.0).
    load_ratio_std : float or array_like, >= 0
        ``sigma``: standard deviation of an expert's load over its mean (``sqrt(n / (T k))``
        for uniform routing).

    Returns
    -------
    float or ndarray
        Fraction in ``[0, 1]``.

    Source: Lepikhin et al. 2021 (GShard), sec. 2.2 (expert capacity, overflow tokens
    skip the layer); Fedus et al. 2022 (Switch), sec. 2.2 and Table 1 (capacity factor
    1.0-2.0).

    Examples
    --------
    >>> round(float(dropped_token_fraction(1.0, 0.1)), 4), round(float(dropped_token_fraction(1.25, 0.1)), 6)
    (0.0399, 0.0002)
    """
    C = v.positive("capacity_factor", capacity_factor)
    s = v.non_negative("load_ratio_std", load_ratio_std)
    s_safe = np.where(s > 0, s, 1.0)
    z = (C - 1.0) / s_safe
    phi = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    upper = 0.5 * _erfc(z / math.sqrt(2))  # 1 - Phi(z)
    out = np.where(s > 0, s * (phi - z * upper), np.maximum(0.0, 1.0 - C))
    return v.scalar_or_array(np.clip(out, 0.0, 1.0))


def moe_straggler_factor(tokens, top_k, ep, capacity_factor=None):
    """How much longer the busiest EP rank computes its experts than the mean rank.

    Dropless (``capacity_factor=None``): the busiest rank's load,
    :func:`expected_max_load_ratio` over ``ep`` ranks. Dropping with capacity ``C``: every
    expert computes a buffer of ``C x`` the mean (padded), so the factor is ``C`` (tokens
    beyond it are dropped, :func:`dropped_token_fraction`).

    Parameters
    ----------
    tokens : float or array_like, > 0
        Tokens routed together in the EP group per micro-batch.
    top_k, ep : int or array_like of int, >= 1
    capacity_factor : float, optional

    Returns
    -------
    float or ndarray
        ``>= 1`` (dropless) or ``C``.

    Source: Gale et al. 2023 (MegaBlocks), sec. 3 (dropless MoE: variable-size expert
    batches); Fedus et al. 2022 (Switch), sec. 2.2 (capacity padding); Raab and Steger 1998.

    Examples
    --------
    >>> round(float(moe_straggler_factor(4096, 8, 64)), 3), moe_straggler_factor(4096, 8, 64, 1.25)
    (1.127, 1.25)
    """
    if capacity_factor is not None:
        C = v.positive("capacity_factor", capacity_factor)
        return v.scalar_or_array(C + 0.0 * v.positive("tokens", tokens))
    return expected_max_load_ratio(tokens, top_k, ep)


# --------------------------------------------------------------------------- memory under EP


def expert_data_parallel_size(tp, cp, dp, ep, etp=1):
    """Expert-data-parallel size ``EDP = TP x CP x DP / (ETP x EP)`` (parallel folding).

    Attention and experts share the GPUs of one pipeline stage: ``TP x CP x DP`` of them.
    The experts fold them as ``ETP x EP x EDP``.

    Parameters
    ----------
    tp, cp, dp, ep, etp : int or array_like of int, >= 1

    Returns
    -------
    int or ndarray
        ``EDP``; ValueError when ``ETP x EP`` does not divide ``TP x CP x DP``.

    Source: Liu et al. 2025, MoE Parallel Folding (arXiv 2504.14960), sec. 3.1 and Fig. 2.

    Examples
    --------
    DeepSeek-V3 on 2,048 GPUs: PP 16, so 128 GPUs per stage; EP 64 leaves EDP 2.

    >>> expert_data_parallel_size(1, 1, 128, 64)
    2
    """
    attn = v.integer("tp", tp) * v.integer("cp", cp) * v.integer("dp", dp)
    exp = v.integer("etp", etp) * v.integer("ep", ep)
    if v.any_true(attn % exp):
        raise ValueError(f"etp x ep must divide tp x cp x dp; got etp={etp!r}, ep={ep!r}, "
                         f"tp x cp x dp = {attn!r}")
    out = (attn // exp).astype(np.int64)
    return int(out) if out.ndim == 0 else out


def expert_params_per_gpu(expert_params_total, ep, etp=1, pp=1):
    """Expert weights one GPU holds: ``P_experts / (ETP x EP x PP)``.

    Parameters
    ----------
    expert_params_total : float or array_like, >= 0
        Routed-expert weights of the whole model.
    ep, etp, pp : int or array_like of int, >= 1

    Returns
    -------
    float or ndarray

    Source: Liu et al. 2025 (MoE Parallel Folding), sec. 3; Lepikhin et al. 2021, sec. 2.2
    (experts sharded over devices).

    Examples
    --------
    DeepSeek-V3's 58 MoE layers x 256 experts x 44 M weights over EP 64 x PP 16:

    >>> round(expert_params_per_gpu(58 * 256 * 3 * 7168 * 2048, 64, 1, 16) / 1e9, 3)
    0.639
    """
    p = v.non_negative("expert_params_total", expert_params_total)
    d = v.integer("ep", ep) * v.integer("etp", etp) * v.integer("pp", pp)
    return v.scalar_or_array(p / d)


def tokens_per_expert(tokens, top_k, experts, ep):
    """Tokens each expert's GEMMs see per micro-batch: ``tokens x EP x k / E``.

    Every GPU of an EP group dispatches its ``tokens`` to ``k`` of the ``E`` experts; an
    expert sees the share ``k / E`` of the group's ``tokens x EP`` (a balanced router).
    This is the ``M`` dimension of the expert GEMM, which sets its arithmetic intensity
    (``2 M`` FLOPs per 16-bit weight read, ``M`` FLOP per byte).

    Parameters
    ----------
    tokens : float or array_like, > 0
        Tokens one GPU dispatches per micro-batch.
    top_k, experts : int, >= 1
    ep : int or array_like of int, >= 1

    Returns
    -------
    float or ndarray

    Source: Lepikhin et al. 2021 (GShard), sec. 2.2; Liu et al. 2025 (MoE Parallel Folding),
    sec. 2 (grouped GEMM efficiency depends on the tokens per expert).

    Examples
    --------
    DeepSeek-V3 (k = 8 of 256) with 2,048 tokens per GPU: EP 64 gives each expert 4,096
    tokens, EP 2 only 128.

    >>> tokens_per_expert(2048, 8, 256, 64), tokens_per_expert(2048, 8, 256, 2)
    (4096.0, 128.0)
    """
    t = v.positive("tokens", tokens)
    k = v.integer("top_k", top_k)
    e = v.integer("experts", experts)
    return v.scalar_or_array(t * v.integer("ep", ep) * k / e)


def expert_weight_stream_time(local_expert_params, microbatches, memory_bandwidth, recompute="none",
                              bytes_per_weight=2.0):
    """Seconds to stream a GPU's expert weights through HBM for one step (roofline memory side).

    Every local expert's weights move :data:`EXPERT_WEIGHT_PASSES` times per micro-batch
    (forward, input gradient, weight-gradient accumulation; + a recomputed forward)::

        T = P_local x bytes x passes x m / B_HBM

    A grouped expert GEMM takes at least this long however few tokens it multiplies: with few
    tokens per expert (:func:`tokens_per_expert`; EP small against the expert count) it is
    memory-bound, not compute-bound. The planner charges the part of ``T`` that the experts'
    compute time does not cover.

    Parameters
    ----------
    local_expert_params : float or array_like, >= 0
        Routed-expert weights on one GPU (:func:`expert_params_per_gpu`).
    microbatches : int or array_like of int, >= 1
    memory_bandwidth : float, > 0
        HBM bytes/s.
    recompute : {"none", "selective", "full"}
    bytes_per_weight : float, > 0
        2 for BF16 weights, 1 for FP8 GEMM operands.

    Returns
    -------
    float or ndarray
        Seconds per step.

    Source: Williams, Waterman and Patterson 2009, Roofline (CACM 52(4)): a kernel takes at
    least bytes / bandwidth; Narayanan et al. 2021, sec. 3.2 (three GEMMs per layer).

    Examples
    --------
    DeepSeek-V3 at EP 2 on a stage of 2 MoE layers: 128 x 2 experts of 44 M weights on one
    GPU, 1,024 micro-batches, an H100's 3.35 TB/s:

    >>> round(float(expert_weight_stream_time(128 * 2 * 3 * 7168 * 2048, 1024, 3.35e12)), 1)
    20.7
    """
    p = v.non_negative("local_expert_params", local_expert_params)
    m = v.integer("microbatches", microbatches)
    bw = v.positive("memory_bandwidth", memory_bandwidth)
    v.choice("recompute", recompute, tuple(EXPERT_WEIGHT_PASSES))
    b = v.positive("bytes_per_weight", bytes_per_weight)
    return v.scalar_or_array(p * b * EXPERT_WEIGHT_PASSES[recompute] * m / bw)


def moe_mlp_activation_bytes_per_layer(tokens, hidden, expert_ffn, top_k, shared_experts=0, shared_ffn=None,
                                       experts=1, etp=1, straggler=1.0, cached_bytes=2.0,
                                       recompute_activation=False):
    """Bytes one MoE MLP block keeps for its backward pass on one GPU (16-bit, SwiGLU).

    Per routed copy (``k`` per token, ``x straggler`` on the busiest rank): its dispatched
    input (``2h``, the first GEMM's input), the gate and up outputs (``2 x 2 f/t``) and the
    SwiGLU product (``2 f/t``, the second GEMM's input); per token the router's FP32
    probabilities (``4E``), the combine input (``2h``) and the shared experts' ``2h + 6 f_s/t``.
    This is Korthikanti et al.'s per-GEMM counting applied to the MoE block (the inputs of
    every matrix multiplication kept, element-wise inputs kept once).

    DeepSeek-V3 keeps less (sec. 3.3.3): the expert inputs and the SwiGLU inputs are cached
    in FP8 (``cached_bytes = 1 + 4/128`` per element, :data:`FP8_CACHED_BYTES`) and the
    SwiGLU product is recomputed in the backward pass (``recompute_activation``): a routed
    copy keeps ``c (h + 2 f/t)`` bytes, a shared expert ``c (h + 2 f_s/t)``.

    Parameters
    ----------
    tokens : float or array_like, > 0
        Tokens of this GPU per micro-batch.
    hidden, expert_ffn, top_k : int or array_like of int, >= 1
    shared_experts : int, >= 0, optional
    shared_ffn : int, optional
        Default ``expert_ffn``.
    experts : int, >= 1, optional
        Routed experts ``E`` (router probabilities).
    etp : int, >= 1, optional
        Expert tensor parallelism splits the inner width.
    straggler : float, >= 1, optional
        Load of the busiest rank over the mean (:func:`moe_straggler_factor`).
    cached_bytes : float, > 0, optional
        Bytes per element of the cached expert and SwiGLU inputs (2 in BF16,
        :data:`FP8_CACHED_BYTES` in DeepSeek-V3's FP8 caching).
    recompute_activation : bool, optional
        Keep only the SwiGLU inputs and recompute its product in the backward pass.

    Returns
    -------
    float or ndarray
        Bytes.

    Source: Korthikanti et al. 2022, sec. 4.1 (per-GEMM activation counting); Liu et al.
    2025 (Megatron-Core MoE: routed-token buffers); DeepSeek-AI 2024 sec. 3.3.3 ("we only
    cache the inputs of the SwiGLU operator and recompute its output in the backward pass.
    These activations are also stored in FP8").

    Examples
    --------
    One token of Mixtral 8x7B (top-2, no shared expert): 2 x (2h + 6f) + 2h + 4E bytes.

    >>> moe_mlp_activation_bytes_per_layer(1, 4096, 14336, 2, experts=8)
    196640.0

    DeepSeek-V3's caching, one token, 8 routed + 1 shared expert of 2,048 over 256 experts:
    ``9 x 1.03125 x (7168 + 2 x 2048) + 2 x 7168 + 4 x 256`` bytes.

    >>> moe_mlp_activation_bytes_per_layer(1, 7168, 2048, 8, 1, experts=256, cached_bytes=1.03125,
    ...                                    recompute_activation=True)
    119904.0
    """
    n = v.positive("tokens", tokens)
    h = v.integer("hidden", hidden)
    f = v.integer("expert_ffn", expert_ffn)
    k = v.integer("top_k", top_k)
    es = v.integer("shared_experts", shared_experts, minimum=0)
    fs = f if shared_ffn is None else v.integer("shared_ffn", shared_ffn)
    E = v.integer("experts", experts)
    t = v.integer("etp", etp)
    sf = v.positive("straggler", straggler)
    c = v.positive("cached_bytes", cached_bytes)
    inner = 2.0 if recompute_activation else 3.0  # gate and up outputs (+ the SwiGLU product)
    routed = k * sf * c * (h + inner * f / t)
    shared = np.where(es > 0, c * h + es * inner * c * fs / t, 0.0)
    return v.scalar_or_array(n * (routed + shared + 2.0 * h + 4.0 * E))


# --------------------------------------------------------------------------- multi-head latent attention


def mla_up_projection_params(heads, head_dim, q_latent, kv_latent, rope_dim, v_head_dim):
    """Weights of MLA's up-projections per layer: ``d_cq a (d + d_r) + d_c a (d + d_v)``.

    The query latent ``d_cq`` is projected up to ``a`` query heads of ``d`` (no-RoPE) plus
    ``d_r`` (RoPE) channels; the key/value latent ``d_c`` to ``a`` keys of ``d`` and values
    of ``d_v``. DeepSeek-V3 recomputes these projections in the backward pass.

    Parameters
    ----------
    heads, head_dim, q_latent, kv_latent, rope_dim, v_head_dim : int, >= 1

    Returns
    -------
    float

    Source: DeepSeek-AI 2024 (DeepSeek-V3), sec. 2.1.1 eq. 1-9 (MLA) and sec. 4.2 (``d_c = 512``,
    ``d_cq = 1536``, ``d_h = 128``, ``d_h^R = 64``).

    Examples
    --------
    >>> mla_up_projection_params(128, 128, 1536, 512, 64, 128) / 1e6
    54.525952
    """
    a, d = int(v.integer("heads", heads)), int(v.integer("head_dim", head_dim))
    dq, dc = int(v.integer("q_latent", q_latent)), int(v.integer("kv_latent", kv_latent))
    dr, dv = int(v.integer("rope_dim", rope_dim)), int(v.integer("v_head_dim", v_head_dim))
    return float(dq * a * (d + dr) + dc * a * (d + dv))


def mla_activation_bytes_per_token(hidden, heads, q_latent, kv_latent, rope_dim, v_head_dim,
                                   output_bytes=E5M6_BYTES):
    """Bytes one MLA attention block keeps per token when norms and up-projections are recomputed.

    DeepSeek-V3 recomputes every RMSNorm and the MLA up-projections in the backward pass
    (sec. 3.2.3), so the block keeps: the normalisation's input (16-bit, ``2h``); the query
    latent, the key/value latent and the decoupled RoPE key (16-bit, ``2 (d_cq + d_c +
    d_r)``), from which the queries, keys and values are recomputed; the attention output
    (``a d_v`` elements, the input of the output projection, cached in E5M6, sec. 3.3.3); and
    the attention kernel's FP32 log-sum-exp per head (``4a``, FlashAttention).

    Parameters
    ----------
    hidden, heads, q_latent, kv_latent, rope_dim, v_head_dim : int, >= 1
    output_bytes : float, > 0, optional
        Bytes per element of the cached attention output (:data:`E5M6_BYTES`; 2 in BF16).

    Returns
    -------
    float
        Bytes per token and layer (one GPU, no tensor parallelism).

    Source: DeepSeek-AI 2024 (DeepSeek-V3), sec. 3.2.3 ("We recompute all RMSNorm operations and
    MLA up-projections during back-propagation, thereby eliminating the need to persistently store
    their output activations") and sec. 3.3.3 (E5M6 for the input of the linear after attention);
    Dao et al. 2022 (FlashAttention keeps the softmax statistics, not the scores).

    Examples
    --------
    DeepSeek-V3: ``2 x 7168 + 2 x (1536 + 512 + 64) + 1.5 x 128 x 128 + 4 x 128``:

    >>> mla_activation_bytes_per_token(7168, 128, 1536, 512, 64, 128)
    43648.0
    """
    h, a = v.integer("hidden", hidden), v.integer("heads", heads)
    dq, dc = v.integer("q_latent", q_latent), v.integer("kv_latent", kv_latent)
    dr, dv = v.integer("rope_dim", rope_dim), v.integer("v_head_dim", v_head_dim)
    ob = v.positive("output_bytes", output_bytes)
    return float(2.0 * h + 2.0 * (dq + dc + dr) + ob * a * dv + 4.0 * a)



def recomputed_elementwise_bytes_per_token(hidden, q_latent, kv_latent, swiglu_widths, cached_bytes=FP8_CACHED_BYTES):
    """HBM bytes per token and layer of the element-wise work DeepSeek-V3 recomputes in the backward pass.

    Every RMSNorm is recomputed (read and write its 16-bit input: ``4w`` bytes for a width
    ``w``: the two ``h``-wide block norms and MLA's two latent norms), and each SwiGLU
    product is recomputed from its cached inputs (read ``2 f`` cached elements, write ``f``:
    ``3 c f`` bytes for each expert a token passes through). Memory-bound kernels: the
    planner divides these bytes by the HBM bandwidth (roofline).

    Parameters
    ----------
    hidden, q_latent, kv_latent : int, >= 1
    swiglu_widths : float, >= 0
        Sum of the SwiGLU inner widths one token passes through in the layer (``k f_e + E_s f_s``
        for an MoE block, ``f`` for a dense one).
    cached_bytes : float, > 0, optional

    Returns
    -------
    float
        Bytes.

    Source: DeepSeek-AI 2024 (DeepSeek-V3), sec. 3.2.3 (RMSNorm recomputation) and 3.3.3 (SwiGLU
    recomputed from FP8-cached inputs); Williams et al. 2009 (roofline).

    Examples
    --------
    DeepSeek-V3's MoE layer (8 x 2,048 + 2,048 SwiGLU width), FP8 caching:
    ``4 (2 x 7168 + 1536 + 512) + 3 x 1.03125 x 18432``:

    >>> recomputed_elementwise_bytes_per_token(7168, 1536, 512, 9 * 2048)
    122560.0
    """
    h, dq, dc = v.integer("hidden", hidden), v.integer("q_latent", q_latent), v.integer("kv_latent", kv_latent)
    f = v.non_negative("swiglu_widths", swiglu_widths)
    c = v.positive("cached_bytes", cached_bytes)
    return float(4.0 * (2.0 * h + dq + dc) + 3.0 * c * f)

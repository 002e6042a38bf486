"""Expert load under a skewed router: loads per expert, the busiest EP rank, dropped tokens, the step it costs.

:mod:`course.core.moe` prices a *balanced* router (and its random fluctuation, balls into
bins). A trained router is also *skewed*: some experts are popular for whole batches. This
module models that skew with one parameter and follows it to what a student sees in a step:

1. :func:`skewed_expert_loads`: the load of each of ``E`` experts relative to the mean, with
   popularity falling as a power of its rank (a Zipf law with exponent ``s``; ``s = 0`` is a
   balanced router). The power law is a *modelling assumption* with one knob, not a fit: it
   stands for the skewed expert popularity measured in MoE training (He et al. 2022,
   FasterMoE, which replicates popular experts for it; Lepikhin et al. 2021, GShard, sec. 2.2,
   whose capacity factor and auxiliary loss exist for it).
2. :func:`straggler_factor`: how much longer the busiest EP rank computes than the mean rank.
   Dropless MoE (MegaBlocks, DeepSeek-V3) computes every routed token, so the rank holding
   the hottest expert sets the pace of every step; a capacity factor ``C`` pads every expert's
   buffer to ``C x`` its mean load (Switch Transformer) and drops what overflows.
3. :func:`dropped_token_share`: the routed tokens beyond capacity (they skip the layer).
4. :func:`straggler_step_share`: the share of the step the busiest rank adds over a balanced
   one (every other rank waits for it).

Units: loads are dimensionless (1 = the mean load of an expert or rank); shares are fractions.
"""

from __future__ import annotations

import numpy as np

from . import _validate as v
from . import moe as _moe

__all__ = ["skewed_expert_loads", "straggler_factor", "dropped_token_share", "straggler_step_share",
           "moe_all_to_all_parts_per_layer", "moe_mlp_train_flops", "exposed_all_to_all_time"]


def skewed_expert_loads(experts, skew):
    """Load of each expert relative to the mean, for popularity ``~ rank^-s`` (a Zipf law).

    ``L_i = E i^-s / sum_j j^-s`` for popularity ranks ``i = 1..E``: the loads average 1, the
    hottest expert holds ``L_1``; ``s = 0`` gives every expert exactly 1.

    Parameters
    ----------
    experts : int, >= 1
        Routed experts ``E`` of one MoE layer.
    skew : float or array_like, >= 0
        Zipf exponent ``s`` (0: balanced; 1: the classic Zipf law).

    Returns
    -------
    ndarray
        Shape ``skew.shape + (E,)``, hottest expert first; each row averages 1.

    Source: Zipf's law as the one-parameter model of skewed popularity (an assumption, stated
    where a student sees it); skewed expert popularity in training: He et al. 2022 (FasterMoE,
    PPoPP '22, "dynamic shadowing" of popular experts); Lepikhin et al. 2021 (GShard), sec. 2.2.

    Examples
    --------
    >>> skewed_expert_loads(4, 0.0).tolist()
    [1.0, 1.0, 1.0, 1.0]
    >>> [round(float(x), 3) for x in skewed_expert_loads(4, 1.0)]   # 4 x (1, 1/2, 1/3, 1/4) / (25/12)
    [1.92, 0.96, 0.64, 0.48]
    """
    e = int(v.integer("experts", experts))
    s = v.non_negative("skew", skew)
    ranks = np.arange(1, e + 1, dtype=float)
    weights = ranks ** (-np.asarray(s, float)[..., None])
    return e * weights / weights.sum(axis=-1, keepdims=True)


def straggler_factor(hottest_load, experts, ep, capacity_factor=None):
    """Expert compute of the busiest EP rank over the mean rank's.

    Dropless: each of ``ep`` ranks holds ``E / ep`` experts; the rank of the hottest expert
    (load ``L_1``) holds ``E/ep - 1`` others of the remaining experts' mean load
    ``(E - L_1) / (E - 1)``, so::

        f = (L_1 + (E/ep - 1) (E - L_1) / (E - 1)) / (E/ep)

    (``f = L_1`` with one expert per rank, ``f = 1`` with one rank). With a capacity factor
    ``C`` every expert computes a buffer padded to ``C x`` the mean and drops the overflow:
    ``f = C`` (as :func:`course.core.moe.moe_straggler_factor`).

    Parameters
    ----------
    hottest_load : float or array_like, >= 1
        ``L_1``, the hottest expert's load over the mean (:func:`skewed_expert_loads`).
    experts : int, >= 1
    ep : int or array_like of int, >= 1
        Expert-parallel ranks; must divide ``experts``.
    capacity_factor : float or array_like, > 0, optional
        ``None``: dropless.

    Returns
    -------
    float or ndarray
        ``>= 1`` (dropless) or ``C``.

    Source: Gale et al. 2023 (MegaBlocks), sec. 3 (dropless: variable-size expert batches, so
    the busiest expert's batch is the longest); Fedus et al. 2022 (Switch Transformer), sec. 2.2
    (expert capacity = capacity factor x tokens / experts, buffers padded to it).

    Examples
    --------
    A hot expert at twice its share, 64 experts: alone on its rank (EP 64) it doubles the rank's
    work; with 8 experts per rank (EP 8) its excess is spread over the rank's 8: (2 + 7 x 62/63) / 8.

    >>> float(straggler_factor(2.0, 64, 64)), round(float(straggler_factor(2.0, 64, 8)), 4)
    (2.0, 1.1111)
    >>> straggler_factor(2.0, 64, 8, capacity_factor=1.25)
    1.25
    """
    top = v.finite("hottest_load", hottest_load)
    if np.any(top < 1.0):
        raise ValueError(f"hottest_load must be >= 1 (the hottest expert carries at least the mean); got {hottest_load!r}")
    e = v.integer("experts", experts)
    top = np.minimum(top, e)
    p = v.integer("ep", ep)
    if np.any(e % p):
        raise ValueError(f"ep must divide experts ({experts!r}); got ep={ep!r}")
    if capacity_factor is not None:
        c = v.positive("capacity_factor", capacity_factor)
        return v.scalar_or_array(c + 0.0 * top * p)
    per_rank = e / p
    rest = np.where(e > 1, (e - top) / np.maximum(e - 1, 1), 1.0)
    return v.scalar_or_array((top + (per_rank - 1.0) * rest) / per_rank)


def dropped_token_share(expert_loads, capacity_factor):
    """Share of routed tokens beyond capacity: ``sum_i max(0, L_i - C) / sum_i L_i``.

    Parameters
    ----------
    expert_loads : array_like, >= 0
        Loads over the mean, experts along the last axis (:func:`skewed_expert_loads`).
    capacity_factor : float or array_like, > 0
        ``C``; broadcasts against ``expert_loads[..., 0]``.

    Returns
    -------
    float or ndarray
        Fraction in ``[0, 1]``; dropped tokens skip the expert layer (the residual carries them).

    Source: Lepikhin et al. 2021 (GShard), sec. 2.2 (tokens over an expert's capacity are
    dropped and passed on by the residual connection); Fedus et al. 2022 (Switch), sec. 2.2
    and Table 1 (capacity factors 1.0 to 2.0; fewer dropped tokens at a higher factor).

    Examples
    --------
    >>> round(float(dropped_token_share([1.92, 0.96, 0.64, 0.48], 1.25)), 4)   # (1.92 - 1.25) / 4
    0.1675
    >>> float(dropped_token_share([1.0, 1.0], 1.0))
    0.0
    """
    loads = v.non_negative("expert_loads", expert_loads)
    c = np.asarray(v.positive("capacity_factor", capacity_factor), float)
    if loads.ndim == 0:
        raise ValueError("expert_loads must hold one load per expert (an array); got a scalar")
    over = np.maximum(loads - c[..., None], 0.0).sum(axis=-1)
    total = loads.sum(axis=-1)
    return v.scalar_or_array(np.where(total > 0, over / np.where(total > 0, total, 1.0), 0.0))


def straggler_step_share(factor, expert_share):
    """Share of the step the busiest expert rank adds over a perfectly balanced router.

    With the expert compute ``x`` of a balanced step (``0 <= x <= 1``) stretched by the
    straggler ``factor`` ``f`` and everything else unchanged, the step becomes ``1 + (f - 1) x``
    balanced steps, of which the other ranks wait ``(f - 1) x``::

        share = (f - 1) x / (1 + (f - 1) x)

    Parameters
    ----------
    factor : float or array_like, >= 1
        Busiest rank's expert compute over the mean (:func:`straggler_factor`).
    expert_share : float or array_like, in [0, 1]
        Expert compute's share of the balanced step.

    Returns
    -------
    float or ndarray
        Fraction of the (slower) step.

    Source: synchronous execution: an all-to-all (the combine) cannot finish before its slowest
    rank (Lepikhin et al. 2021, sec. 2.2; Gale et al. 2023, sec. 3); the arithmetic is the step
    split above.

    Examples
    --------
    Experts are 40 % of a balanced step and the busiest rank has twice the mean load:

    >>> round(float(straggler_step_share(2.0, 0.4)), 4)   # 0.4 / 1.4
    0.2857
    """
    f = v.finite("factor", factor)
    if np.any(f < 1.0):
        raise ValueError(f"factor must be >= 1 (the busiest rank has at least the mean load); got {factor!r}")
    x = v.fraction("expert_share", expert_share)
    extra = (f - 1.0) * x
    return v.scalar_or_array(extra / (1.0 + extra))


# --------------------------------------------------------------------------- the all-to-all beside the experts


def moe_all_to_all_parts_per_layer(tokens, hidden, top_k, ep, ranks_per_node, intra_bandwidth, inter_bandwidth,
                                   intra_latency=0.0, inter_latency=0.0, groups=None, group_topk=None,
                                   recompute="none", bytes_per_element=2.0, per_node=False):
    """The NVLink part and the network part of one MoE layer's all-to-alls (one GPU, one micro-batch).

    :func:`course.core.moe.moe_all_to_all_time_per_layer` runs both parts of each all-to-all at once and
    charges the longer; this returns each part on its own, so a view can show which link sets the time::

        nvlink  = n_a2a x (T x intra bytes per token / B_nvlink + (r - 1) alpha_nvlink)
        network = n_a2a x (T x inter bytes per token / B_network + (nodes - 1) alpha_network)

    with ``n_a2a`` = :data:`course.core.moe.MOE_ALL_TO_ALLS_PER_LAYER` (dispatch and combine, forward and
    backward) and the bytes per token of :func:`course.core.moe.moe_dispatch_bytes_per_token`.
    ``max(nvlink, network)`` is the layer's all-to-all time.

    Parameters
    ----------
    tokens, hidden, top_k, ep, ranks_per_node, intra_bandwidth, inter_bandwidth, intra_latency, inter_latency,
    groups, group_topk, recompute, bytes_per_element, per_node
        As in :func:`course.core.moe.moe_all_to_all_time_per_layer` (bandwidths in bytes/s per direction,
        latencies in seconds).

    Returns
    -------
    (nvlink, network) : tuple of float or ndarray
        Seconds; both 0 for ``ep = 1``.

    Source: Lepikhin et al. 2021 (GShard), sec. 2.2; DeepSeek-AI 2024 (DeepSeek-V3), sec. 3.2.2 (IB and
    NVLink parts of the dispatch run concurrently); Thakur et al. 2005 (pairwise all-to-all).

    Examples
    --------
    Mixtral 8x7B, 4,096 tokens, top-2, EP 8 in one node at 360 GB/s: all of it on NVLink.

    >>> nv, net = moe_all_to_all_parts_per_layer(4096, 4096, 2, 8, 8, 360e9, 40e9)
    >>> round(nv * 1e6, 1), net
    (652.4, 0.0)
    """
    nvlink, network = _moe.all_to_all_parts_per_layer(tokens, hidden, top_k, ep, ranks_per_node, intra_bandwidth,
                                                      inter_bandwidth, intra_latency, inter_latency, groups,
                                                      group_topk, recompute, bytes_per_element, per_node)
    return v.scalar_or_array(nvlink), v.scalar_or_array(network)


def moe_mlp_train_flops(tokens, hidden, expert_ffn, experts, top_k, shared_experts=0, shared_ffn=None,
                        mlp_matrices=3):
    """Training FLOPs (forward + backward) of one MoE MLP block for ``tokens`` tokens: ``3 x 2 x active weights``.

    The backward pass costs twice the forward (input and weight gradients), so a step multiplies
    :func:`course.core.moe.moe_mlp_flops_per_token` by 3.

    Parameters
    ----------
    tokens : float or array_like, > 0
    hidden, expert_ffn, experts, top_k, shared_experts, shared_ffn, mlp_matrices
        As in :func:`course.core.moe.moe_mlp_params`.

    Returns
    -------
    float or ndarray
        FLOP.

    Source: Kaplan et al. 2020, sec. 2.1 (2N forward, 4N backward per token); Narayanan et al. 2021,
    sec. 3.2.

    Examples
    --------
    >>> round(moe_mlp_train_flops(1, 7168, 2048, 256, 8, 1) / 1e9, 3)   # DeepSeek-V3, one token
    2.389
    """
    t = v.positive("tokens", tokens)
    per_token = _moe.moe_mlp_flops_per_token(hidden, expert_ffn, experts, top_k, shared_experts, shared_ffn,
                                             mlp_matrices)
    return v.scalar_or_array(3.0 * t * np.asarray(per_token))


def exposed_all_to_all_time(all_to_all_seconds, compute_seconds, overlap=True):
    """All-to-all time left on the critical path: ``max(0, T_a2a - T_compute)`` overlapped, else ``T_a2a``.

    Overlap (DeepSeek-V3's DualPipe, DeepEP's hook-based overlap, Megatron-Core's 1F1B all-to-all
    overlap) runs one micro-batch's dispatch and combine while another micro-batch computes: it
    hides communication behind computation that exists, never more than that computation.

    Parameters
    ----------
    all_to_all_seconds, compute_seconds : float or array_like, >= 0
    overlap : bool, optional

    Returns
    -------
    float or ndarray
        Seconds.

    Source: DeepSeek-AI 2024 (DeepSeek-V3), sec. 3.2.1 (DualPipe overlaps the all-to-all of one
    chunk with the computation of another); deepseek-ai/DeepEP README (hook-based overlap that
    occupies no SMs); the bound is that of any overlap (the hidden part cannot exceed the work that hides it).

    Examples
    --------
    >>> exposed_all_to_all_time(3.0, 2.0), exposed_all_to_all_time(1.0, 2.0), exposed_all_to_all_time(1.0, 2.0, False)
    (1.0, 0.0, 1.0)
    """
    a = v.non_negative("all_to_all_seconds", all_to_all_seconds)
    c = v.non_negative("compute_seconds", compute_seconds)
    return v.scalar_or_array(np.maximum(a - c, 0.0) if overlap else a + 0.0 * c)

"""Expert capacity and token dropping, counted in tokens (not in expected shares).

:func:`course.core.moe.dropped_token_fraction` gives the *expected* dropped share for a
Gaussian spread of expert loads. This module counts what one micro-batch actually does:
how many routed copies an expert's buffer holds, how many of a given set of expert loads
overflow it, and how much busier the hottest expert is than the mean.
"""

from __future__ import annotations

import numpy as np

from . import _validate as v

__all__ = ["expert_capacity", "dropped_tokens", "busiest_load_ratio"]


def expert_capacity(tokens, top_k, experts, capacity_factor):
    """Routed copies one expert accepts per micro-batch: ``ceil(C x T x k / E)``.

    ``T`` tokens each pick ``k`` of ``E`` experts, so the group routes ``T k`` copies and a
    balanced expert receives ``T k / E``; its buffer holds ``C`` times that, rounded up to a
    whole token. Copies beyond the buffer are dropped (they skip the expert layer through
    the residual connection).

    Parameters
    ----------
    tokens : int or array_like of int, >= 1
        Tokens routed together ``T`` (one micro-batch of the group that shares the experts).
    top_k : int or array_like of int, >= 1
        Experts per token ``k`` (``<= experts``).
    experts : int or array_like of int, >= 1
        Routed experts ``E``.
    capacity_factor : float or array_like, > 0
        ``C`` (Switch and GShard use 1.0 to 2.0).

    Returns
    -------
    int or ndarray of int
        Tokens (routed copies) per expert.

    Source: Fedus et al. 2022 (Switch Transformer), sec. 2.2, eq. 3 ("expert capacity =
    tokens per batch / number of experts x capacity factor", ``k = 1``); Lepikhin et al.
    2021 (GShard), sec. 2.2 (capacity of top-2 gating); Megatron-Core ``moe_utils.get_capacity``
    (``ceil(num_tokens x topk / num_experts x capacity_factor)``).

    Examples
    --------
    4,096 tokens, top-2 of 8 experts, capacity factor 1.25: 1,024 copies per expert on
    average, a buffer of 1,280.

    >>> expert_capacity(4096, 2, 8, 1.25)
    1280
    """
    T = v.integer("tokens", tokens)
    k = v.integer("top_k", top_k)
    E = v.integer("experts", experts)
    if np.any(k > E):
        raise ValueError(f"top_k must be <= experts; got top_k={top_k!r}, experts={experts!r}")
    C = v.positive("capacity_factor", capacity_factor)
    out = np.ceil(C * (T * k) / E).astype(np.int64)
    return int(out) if out.ndim == 0 else out


def dropped_tokens(expert_loads, capacity):
    """Routed copies dropped when every expert keeps at most ``capacity``: ``sum max(0, L_i - cap)``.

    Parameters
    ----------
    expert_loads : array_like of int, >= 0
        Copies routed to each expert in one micro-batch (last axis: the experts).
    capacity : int or array_like of int, >= 0
        Copies one expert accepts (:func:`expert_capacity`).

    Returns
    -------
    int or ndarray of int
        Dropped copies (summed over the last axis).

    Source: Lepikhin et al. 2021 (GShard), sec. 2.2 ("if the number of tokens routed to an
    expert exceeds its capacity, the token is considered as an overflowed token"); Fedus et al.
    2022 (Switch), sec. 2.2 and Fig. 3.

    Examples
    --------
    >>> dropped_tokens([1400, 900, 1300, 500], 1280)
    140
    """
    loads = np.asarray(v.integer("expert_loads", expert_loads, minimum=0))
    if loads.ndim == 0:
        raise ValueError(f"expert_loads must list one load per expert; got {expert_loads!r}")
    cap = np.asarray(v.integer("capacity", capacity, minimum=0))
    out = np.maximum(loads - cap[..., None] if cap.ndim else loads - cap, 0).sum(axis=-1).astype(np.int64)
    return int(out) if out.ndim == 0 else out


def busiest_load_ratio(expert_loads):
    """Load of the busiest expert over the mean load: ``max_i L_i / mean_i L_i``.

    In dropless MoE every expert computes all its tokens, so the busiest one sets the pace:
    the layer's expert compute takes this many times the balanced time.

    Parameters
    ----------
    expert_loads : array_like of int, >= 0
        Copies routed to each expert (last axis), not all zero.

    Returns
    -------
    float or ndarray
        ``>= 1``.

    Source: Gale et al. 2023 (MegaBlocks), sec. 3 (dropless: variable-size expert batches);
    DeepSeek-AI 2024 (DeepSeek-V3), sec. 2.1.2 (auxiliary-loss-free load balancing keeps this
    near 1).

    Examples
    --------
    >>> busiest_load_ratio([1400, 900, 1300, 500])
    1.4
    """
    loads = np.asarray(v.integer("expert_loads", expert_loads, minimum=0), dtype=float)
    if loads.ndim == 0:
        raise ValueError(f"expert_loads must list one load per expert; got {expert_loads!r}")
    mean = loads.mean(axis=-1)
    if np.any(mean <= 0):
        raise ValueError(f"expert_loads must not be all zero; got {expert_loads!r}")
    return v.scalar_or_array(loads.max(axis=-1) / mean)

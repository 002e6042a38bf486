"""Context parallelism (CP): the sequence split over a group of GPUs, keys and values exchanged.

With CP of size ``c`` every GPU holds ``s / c`` tokens of each sequence: its activations
and the FLOPs of everything but attention are divided by ``c``. Attention needs every
query to see the keys and values (K/V) of the tokens before it, so per layer the CP group
exchanges K/V. Llama 3 does it with an all-gather of K and V before attention in the
forward pass and a reduce-scatter of their gradients in the backward pass (Dubey et al.
2024, sec. 3.3.2: all-gather based CP, chosen because with GQA K/V are small, and with a
load-balanced split into ``2c`` chunks so causal attention FLOPs are equal on every rank);
ring attention (Liu et al. 2023) passes the same K/V blocks around a ring in ``c - 1``
point-to-point steps, the same bytes. Total attention FLOPs are unchanged by CP.

Per layer and micro-batch the collectives over the CP group are

- forward: all-gather of K and V;
- backward: all-gather of K and V again (they are not kept) and reduce-scatter of dK, dV;
- full recomputation: one more forward all-gather.

Each moves ``2 b s (kv_heads / tp) d_head`` 16-bit values (K and V of the whole sequence,
this GPU's heads). The CP ranks sit next to the TP ranks (order TP, CP, PP, DP; Dubey et
al. 2024, sec. 3.3.2), so the group stays on NVLink while ``tp * cp`` fits in a node.
The planner charges Llama 3's all-gather in full (exposed, ``cp_algorithm="all_gather"``);
the ring of Megatron-Core / Transformer Engine (``cp_algorithm="ring"``, the default) sends
each K/V block while attention runs on the previous one, so only the time attention cannot
cover is exposed (Liu et al. 2023, Ring Attention, sec. 3).
"""

from __future__ import annotations

import numpy as np

from . import _validate as v
from . import collectives as _coll

__all__ = ["cp_collectives_per_layer", "cp_kv_bytes_per_layer", "cp_comm_time_per_layer"]

_PER_LAYER = {"none": 3, "selective": 3, "full": 4}


def cp_collectives_per_layer(recompute="none"):
    """All-gathers plus reduce-scatters of K/V per layer and micro-batch over the CP group.

    Parameters
    ----------
    recompute : {"none", "selective", "full"}

    Returns
    -------
    int
        3 (forward all-gather, backward all-gather and reduce-scatter), 4 with full
        recomputation (the recomputed forward gathers again).

    Source: Dubey et al. 2024 (Llama 3), sec. 3.3.2 (all-gather based context parallelism).

    Examples
    --------
    >>> cp_collectives_per_layer("none"), cp_collectives_per_layer("full")
    (3, 4)
    """
    return _PER_LAYER[v.choice("recompute", recompute, tuple(_PER_LAYER))]


def cp_kv_bytes_per_layer(seq, micro_batch, kv_heads, head_dim, tp=1, bytes_per_element=2.0):
    """Bytes of K and V of one layer and micro-batch on one TP rank: ``2 b s (kv/tp) d bytes``.

    With GQA and TP larger than the key/value heads, each TP rank still holds one head
    (Megatron replicates K/V heads), so ``kv/tp`` is at least 1.

    Parameters
    ----------
    seq, micro_batch : int or array_like of int, >= 1
        Full sequence ``s`` (all CP ranks together) and sequences per micro-batch ``b``.
    kv_heads, head_dim : int or array_like of int, >= 1
    tp : int or array_like of int, >= 1
    bytes_per_element : float, optional

    Returns
    -------
    float or ndarray
        Bytes.

    Source: Dubey et al. 2024, sec. 3.3.2; Ainslie et al. 2023 (GQA shapes).

    Examples
    --------
    Llama 3 405B (8 K/V heads of 128), 131,072 tokens, TP 8: 2 x 131072 x 1 x 128 x 2 bytes.

    >>> cp_kv_bytes_per_layer(131072, 1, 8, 128, tp=8) / 2**20
    64.0
    """
    s = v.integer("seq", seq)
    b = v.integer("micro_batch", micro_batch)
    kv = v.integer("kv_heads", kv_heads)
    d = v.integer("head_dim", head_dim)
    t = v.integer("tp", tp)
    nbytes = v.positive("bytes_per_element", bytes_per_element)
    return v.scalar_or_array(2.0 * b * s * np.maximum(kv / t, 1.0) * d * nbytes)


def cp_comm_time_per_layer(seq, micro_batch, kv_heads, head_dim, tp, cp, bandwidth, latency=0.0,
                           recompute="none", bytes_per_element=2.0):
    """Seconds of K/V exchange per layer and micro-batch over a CP group of ``cp`` ranks.

    Formula: ``cp_collectives_per_layer(recompute) * all_gather_time(KV bytes, cp, bandwidth,
    latency)`` (a reduce-scatter costs the same as an all-gather); 0 for ``cp = 1``.

    Parameters
    ----------
    seq, micro_batch, kv_heads, head_dim, tp
        As in :func:`cp_kv_bytes_per_layer`.
    cp : int or array_like of int, >= 1
    bandwidth : float or array_like, > 0
        Achieved bytes/s per link and direction of the CP group's link.
    latency : float or array_like, optional
        Seconds per message.
    recompute : {"none", "selective", "full"}
    bytes_per_element : float, optional

    Returns
    -------
    float or ndarray
        Seconds.

    Source: Dubey et al. 2024, sec. 3.3.2; Thakur et al. 2005 (ring all-gather).

    Examples
    --------
    64 MiB of K/V over CP 16 at 100 GB/s, no latency: 3 x 15/16 x 64 MiB / 100 GB/s.

    >>> round(cp_comm_time_per_layer(131072, 1, 8, 128, 8, 16, 100e9) * 1e3, 4)
    1.8874
    """
    c = v.integer("cp", cp)
    kv = cp_kv_bytes_per_layer(seq, micro_batch, kv_heads, head_dim, tp, bytes_per_element)
    one = np.asarray(_coll.all_gather_time(kv, c, bandwidth, latency))
    return v.scalar_or_array(cp_collectives_per_layer(recompute) * one)

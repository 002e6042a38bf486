"""Collective communication costs in the alpha-beta (Hockney) model.

A message of ``n`` bytes sent point to point costs ``alpha + n * beta``
seconds, where ``alpha`` is the per-message latency (``latency``, seconds) and
``beta = 1 / bandwidth`` the time per byte (``bandwidth`` in bytes/s, per
link and direction). Every all-reduce algorithm here costs

    t = a(p) * alpha + b(p) * n * beta

with a latency count ``a(p)`` and a bandwidth factor ``b(p)`` that depend only
on the number of ranks ``p`` (:func:`allreduce_coefficients`). Computation of
the reduction itself is neglected (the gamma term of Thakur et al.), as the
workbook and the labs do.

Sources
-------
- R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective
  Communication Operations in MPICH", IJHPCA 19(1), 2005, sec. 4 (ring,
  recursive doubling, Rabenseifner, binomial tree) and sec. 2 (lower bounds).
- P. Patarasuk, X. Yuan, "Bandwidth optimal all-reduce algorithms for
  clusters of workstations", JPDC 69(2), 2009 (ring is bandwidth optimal:
  2(p-1)/p * n * beta).
- P. Sanders, J. Speck, J. L. Träff, "Two-tree algorithms for full bandwidth
  broadcast, reduction and scan", Parallel Computing 35(12), 2009, and
  S. Jeaugey, "Massively Scale Your Deep Learning Training with NCCL 2.4",
  NVIDIA blog, 2019 (double binary trees).
- NVIDIA nccl-tests, doc/PERFORMANCE.md (algbw, busbw = algbw * 2(n-1)/n).
"""

from __future__ import annotations

import numpy as np

from . import _validate as v

__all__ = [
    "ALLREDUCE_ALGORITHMS",
    "allreduce_coefficients",
    "allreduce_time",
    "allreduce_traffic_bytes",
    "allreduce_lower_bound",
    "hierarchical_allreduce_time",
    "reduce_scatter_time",
    "all_gather_time",
    "point_to_point_time",
    "algorithm_bandwidth",
    "bus_bandwidth",
    "crossover_message_bytes",
    "ring_allreduce_schedule",
    "NVLINK_COLLECTIVE_EFFICIENCY",
    "NETWORK_COLLECTIVE_EFFICIENCY",
    "ALL_TO_ALL_NVLINK_EFFICIENCY",
    "ALL_TO_ALL_NETWORK_EFFICIENCY",
    "achieved_bandwidth",
]

#: Achieved bus bandwidth over link bandwidth of NCCL collectives on NVLink: about 370 GB/s
#: busbw on H100 NVLink 4 (450 GB/s per direction) with the ring algorithm, ~20 % protocol
#: overhead (NCCL maintainer S. Jeaugey in NVIDIA/nccl-tests issue #212, 2024).
NVLINK_COLLECTIVE_EFFICIENCY = 370.0 / 450.0
#: The same ratio across nodes: 46-48 GB/s busbw per 400 Gb/s (50 GB/s) NDR NIC
#: (NVIDIA NCCL developer @AddyLaddy in NVIDIA/nccl-tests issue #290, 2025); 47 / 50.
NETWORK_COLLECTIVE_EFFICIENCY = 47.0 / 50.0
#: NCCL's all-to-all (nccl-tests ``alltoall_perf`` busbw, the bytes each GPU sends to other GPUs per second)
#: over the link rate, inside an NVLink domain: on H100 NVLink 4 NCCL reaches about 370 of the 450 GB/s
#: per direction, "which you can observe as BusBw when running non-allreduce operations" (S. Jeaugey, NCCL
#: maintainer, NVIDIA/nccl-tests issue #212, 2024): the all-reduce's ring rate, now stated for the all-to-all.
ALL_TO_ALL_NVLINK_EFFICIENCY = 370.0 / 450.0
#: NCCL's all-to-all across nodes: nccl-tests ``alltoall_perf`` on 2 DGX H100 nodes with NVLink disabled (all
#: traffic on the 400 Gb/s NICs) measured 46 GB/s busbw per GPU (Y. Zhou in deepseek-ai/DeepEP issue #3,
#: 2025); an all-to-all "cannot aggregate the bandwidth of multiple NICs", so per GPU it runs at one NIC's rate
#: (S. Jeaugey in NVIDIA/nccl-tests issue #267, 2024). 46 / 50, below the all-reduce's 47 / 50.
ALL_TO_ALL_NETWORK_EFFICIENCY = 46.0 / 50.0

#: Every algorithm name :func:`allreduce_time` accepts.
ALLREDUCE_ALGORITHMS = ("ring", "tree", "double_binary_tree", "recursive_doubling", "rabenseifner", "naive")


def _ceil_log2(p: np.ndarray) -> np.ndarray:
    """``ceil(log2 p)`` for whole ``1 <= p <= 2**53``, exact (no float log).

    ``ceil(log2 p)`` is the bit length of ``p - 1``, and ``np.frexp`` returns
    exactly that as the exponent of ``p - 1`` (``x = f * 2**e`` with
    ``0.5 <= f < 1``); ``p - 1 <= 2**53`` is exact in float64.
    """
    p = np.asarray(p, dtype=np.int64)
    return np.frexp((p - 1).astype(float))[1].astype(np.int64)


def allreduce_coefficients(n, algorithm: str = "ring"):
    """Latency count and bandwidth factor of an all-reduce on ``n`` ranks.

    The algorithm's time is ``latency_count * alpha + bandwidth_factor *
    message_bytes * beta`` (alpha-beta model, reduction compute neglected).

    ====================  =====================  ======================
    algorithm             latency_count          bandwidth_factor
    ====================  =====================  ======================
    ring                  2(p-1)                 2(p-1)/p
    tree                  2 ceil(lg p)           2 ceil(lg p)
    double_binary_tree    2 ceil(lg p)           2 (p > 1)
    recursive_doubling    ceil(lg p)             ceil(lg p)
    rabenseifner          2 ceil(lg p)           2(p-1)/p
    naive                 2(p-1)                 2(p-1)
    ====================  =====================  ======================

    Models and assumptions:

    - ``ring``: reduce-scatter then all-gather around a ring, 2(p-1) steps of
      n/p bytes (Thakur et al. 2005; Patarasuk & Yuan 2009).
    - ``tree``: binomial-tree reduce to a root, then binomial-tree broadcast,
      whole message per step, not pipelined (Thakur et al. 2005, sec. 4).
    - ``double_binary_tree``: NCCL's two complementary binary trees, each
      reducing and broadcasting half of the data, pipelined in small segments.
      In the limit of many segments every rank sends and receives about n
      bytes in the reduce and n in the broadcast, so the bandwidth term is
      ``2 n beta``; the latency is the depth of reduce plus broadcast,
      ``2 ceil(lg p) alpha``. The pipeline fill (depth times one segment) is
      neglected (Sanders, Speck & Träff 2009; Jeaugey 2019).
    - ``recursive_doubling``: ceil(lg p) rounds of pairwise exchange of the
      whole vector (Thakur et al. 2005; exact for p a power of two).
    - ``rabenseifner``: recursive-halving reduce-scatter plus
      recursive-doubling all-gather (Thakur et al. 2005; exact for p a power
      of two).
    - ``naive``: every rank sends its n bytes to one root, which reduces and
      sends the result back to each rank one after the other, so (p-1)n bytes
      enter and (p-1)n bytes leave the root's NIC: 2(p-1) messages of n bytes.
      Its ratio to ring is p for the bandwidth term.

    Parameters
    ----------
    n : int or array_like of int
        Number of ranks, ``n >= 1``. One rank needs no communication: both
        coefficients are 0.
    algorithm : str
        One of :data:`ALLREDUCE_ALGORITHMS`.

    Returns
    -------
    latency_count, bandwidth_factor : float or ndarray
        Dimensionless.

    Source: Thakur, Rabenseifner & Gropp 2005, sec. 4; Patarasuk & Yuan 2009;
    Sanders, Speck & Träff 2009.

    Examples
    --------
    >>> allreduce_coefficients(8, "ring")
    (14.0, 1.75)
    >>> allreduce_coefficients(8, "rabenseifner")
    (6.0, 1.75)
    """
    v.choice("algorithm", algorithm, ALLREDUCE_ALGORITHMS)
    p = v.integer("n", n, minimum=1)
    # ring and naive need no ceil(lg p): skip it (the planner prices every DP, TP and CP group with the ring)
    lg = None if algorithm in ("ring", "naive") else _ceil_log2(p).astype(float)
    pf = p.astype(float)
    ring_factor = 2.0 * (pf - 1.0) / pf
    if algorithm == "ring":
        a, b = 2.0 * (pf - 1.0), ring_factor
    elif algorithm == "tree":
        a, b = 2.0 * lg, 2.0 * lg
    elif algorithm == "double_binary_tree":
        a, b = 2.0 * lg, np.where(pf > 1, 2.0, 0.0)
    elif algorithm == "recursive_doubling":
        a, b = lg, lg
    elif algorithm == "rabenseifner":
        a, b = 2.0 * lg, ring_factor
    else:  # naive
        a, b = 2.0 * (pf - 1.0), 2.0 * (pf - 1.0)
    return v.scalar_or_array(a), v.scalar_or_array(b)


def allreduce_time(message_bytes, n, bandwidth, latency=0.0, algorithm: str = "ring"):
    """Seconds for an all-reduce of ``message_bytes`` on ``n`` ranks.

    Formula: ``t = a(p) * latency + b(p) * message_bytes / bandwidth``, with
    ``a`` and ``b`` from :func:`allreduce_coefficients`; for the ring
    ``t = 2(p-1) alpha + 2(p-1)/p * n * beta``.

    Parameters
    ----------
    message_bytes : float or array_like
        Size of the vector every rank contributes, bytes, ``>= 0``.
    n : int or array_like of int
        Ranks taking part, ``>= 1``; ``n = 1`` costs 0 seconds.
    bandwidth : float or array_like
        Link bandwidth per direction, bytes/s, ``> 0``.
    latency : float or array_like, optional
        Per-message latency alpha, seconds, ``>= 0``.
    algorithm : str, optional
        One of :data:`ALLREDUCE_ALGORITHMS` (default ``"ring"``).

    Returns
    -------
    float or ndarray
        Seconds.

    Source: Thakur, Rabenseifner & Gropp 2005, sec. 4; Patarasuk & Yuan 2009.

    Examples
    --------
    Workbook exercise 0.2: 2 GB on 8 GPUs at 50 GB/s takes 70 ms.

    >>> round(allreduce_time(2e9, 8, 50e9) * 1e3, 6)
    70.0
    >>> round(allreduce_time(4e9, 8, 50e9, algorithm="tree") * 1e3, 6)
    480.0
    """
    m = v.non_negative("message_bytes", message_bytes)
    bw = v.positive("bandwidth", bandwidth)
    alpha = v.non_negative("latency", latency)
    a, b = allreduce_coefficients(n, algorithm)
    return v.scalar_or_array(np.asarray(a) * alpha + np.asarray(b) * m / bw)


#: Algorithms whose two phases move data in opposite directions through the busiest
#: rank (all in, then all out): its link carries half of the bandwidth term's bytes
#: in each direction. Everywhere else every rank sends and receives at once.
_ONE_WAY_PHASES = ("tree", "naive")


def allreduce_traffic_bytes(message_bytes, n, algorithm: str = "ring"):
    """Bytes that the busiest rank sends (and as many it receives) during an all-reduce.

    Formula: ``b(p) * message_bytes`` with the bandwidth factor ``b(p)`` of
    :func:`allreduce_coefficients`, halved for ``"tree"`` and ``"naive"``, whose
    reduce phase only receives at the root and whose broadcast phase only
    sends, so ``b(p)`` counts both directions one after the other:

    - ring, rabenseifner: ``2(p-1)/p * n`` (workbook exercise 0.1);
    - recursive doubling: ``ceil(lg p) * n``; double binary tree: ``2 n``;
    - tree: ``ceil(lg p) * n`` (the root receives from ``ceil(lg p)``
      children, then sends to as many);
    - naive: ``(p-1) * n`` (the root receives every other rank's vector, then
      sends the result to each).

    Parameters
    ----------
    message_bytes : float or array_like
        Bytes per rank, ``>= 0``.
    n : int or array_like of int
        Ranks, ``>= 1``.
    algorithm : str, optional
        One of :data:`ALLREDUCE_ALGORITHMS`.

    Returns
    -------
    float or ndarray
        Bytes per direction of the busiest rank's link.

    Source: Thakur, Rabenseifner & Gropp 2005, sec. 4; Patarasuk & Yuan 2009.

    Examples
    --------
    >>> allreduce_traffic_bytes(1e9, 8) / 1e9
    1.75
    >>> allreduce_traffic_bytes(1e9, 8, "naive") / 1e9
    7.0
    """
    m = v.non_negative("message_bytes", message_bytes)
    _, b = allreduce_coefficients(n, algorithm)
    share = 0.5 if algorithm in _ONE_WAY_PHASES else 1.0
    return v.scalar_or_array(share * np.asarray(b) * m)


def allreduce_lower_bound(message_bytes, n, bandwidth, latency=0.0):
    """Lower bound on the time of any all-reduce: ``ceil(lg p) alpha + 2(p-1)/p n beta``.

    Every rank must send and receive at least ``(p-1)/p * n`` bytes twice
    (Patarasuk & Yuan 2009, bandwidth bound), and a rank's contribution can
    reach at most twice as many ranks per round (latency bound). No algorithm
    in :data:`ALLREDUCE_ALGORITHMS` beats either term.

    Parameters
    ----------
    message_bytes : float or array_like
        Bytes per rank, ``>= 0``.
    n : int or array_like of int
        Ranks, ``>= 1``.
    bandwidth : float or array_like
        Bytes/s per link and direction, ``> 0``.
    latency : float or array_like, optional
        Seconds per message, ``>= 0``.

    Returns
    -------
    float or ndarray
        Seconds.

    Source: Patarasuk & Yuan 2009, sec. 3; Thakur, Rabenseifner & Gropp 2005, sec. 2.

    Examples
    --------
    >>> round(allreduce_lower_bound(1e9, 4, 1e9), 12)
    1.5
    """
    m = v.non_negative("message_bytes", message_bytes)
    bw = v.positive("bandwidth", bandwidth)
    alpha = v.non_negative("latency", latency)
    # the latency bound is recursive doubling's round count, the bandwidth bound the ring's factor
    rounds, _ = allreduce_coefficients(n, "recursive_doubling")
    _, ring_factor = allreduce_coefficients(n, "ring")
    return v.scalar_or_array(np.asarray(rounds) * alpha + np.asarray(ring_factor) * m / bw)


def reduce_scatter_time(message_bytes, n, bandwidth, latency=0.0):
    """Seconds for a ring reduce-scatter: ``(p-1) alpha + (p-1)/p * n * beta``.

    ``message_bytes`` is the full vector each rank starts with; each rank ends
    with its reduced ``1/p`` share. Half of a ring all-reduce.

    Parameters
    ----------
    message_bytes : float or array_like
        Full vector size per rank, bytes, ``>= 0``.
    n : int or array_like of int
        Ranks, ``>= 1``.
    bandwidth : float or array_like
        Bytes/s per link and direction, ``> 0``.
    latency : float or array_like, optional
        Seconds per message, ``>= 0``.

    Returns
    -------
    float or ndarray
        Seconds.

    Source: Thakur, Rabenseifner & Gropp 2005, sec. 4 (ring reduce-scatter).

    Examples
    --------
    Workbook exercise 1.5: 14 GB of weights on 64 GPUs moves 13.78 GB per GPU.

    >>> round(reduce_scatter_time(14e9, 64, 1.0) / 1e9, 4)
    13.7812
    """
    # a ring all-reduce is this reduce-scatter plus an all-gather of the same cost
    return v.scalar_or_array(0.5 * np.asarray(allreduce_time(message_bytes, n, bandwidth, latency, "ring")))


def all_gather_time(message_bytes, n, bandwidth, latency=0.0):
    """Seconds for a ring all-gather: ``(p-1) alpha + (p-1)/p * n * beta``.

    ``message_bytes`` is the full gathered vector; each rank starts with a
    ``1/p`` share. Same cost as :func:`reduce_scatter_time`.

    Parameters
    ----------
    message_bytes : float or array_like
        Size of the gathered vector, bytes, ``>= 0``.
    n : int or array_like of int
        Ranks, ``>= 1``.
    bandwidth : float or array_like
        Bytes/s per link and direction, ``> 0``.
    latency : float or array_like, optional
        Seconds per message, ``>= 0``.

    Returns
    -------
    float or ndarray
        Seconds.

    Source: Thakur, Rabenseifner & Gropp 2005, sec. 4 (ring all-gather).

    Examples
    --------
    >>> all_gather_time(8e9, 8, 1e9)
    7.0
    """
    return reduce_scatter_time(message_bytes, n, bandwidth, latency)


def point_to_point_time(message_bytes, bandwidth, latency=0.0):
    """Seconds to send one message point to point: ``alpha + n * beta``.

    Parameters
    ----------
    message_bytes : float or array_like
        Bytes, ``>= 0``.
    bandwidth : float or array_like
        Bytes/s, ``> 0``.
    latency : float or array_like, optional
        Seconds, ``>= 0``.

    Returns
    -------
    float or ndarray
        Seconds.

    Source: Hockney 1994, "The communication challenge for MPP", Parallel
    Computing 20(3); as used by Thakur, Rabenseifner & Gropp 2005, sec. 3.

    Examples
    --------
    >>> round(point_to_point_time(500e6, 50e9, 5e-6), 9)
    0.010005
    """
    m = v.non_negative("message_bytes", message_bytes)
    bw = v.positive("bandwidth", bandwidth)
    alpha = v.non_negative("latency", latency)
    return v.scalar_or_array(alpha + m / bw)


def algorithm_bandwidth(message_bytes, seconds):
    """nccl-tests algorithm bandwidth: ``algbw = message_bytes / seconds`` (bytes/s).

    Parameters
    ----------
    message_bytes : float or array_like
        Size of the collective's vector, bytes, ``>= 0``.
    seconds : float or array_like
        Measured time, ``> 0``.

    Returns
    -------
    float or ndarray
        Bytes/s.

    Source: NVIDIA nccl-tests, doc/PERFORMANCE.md, "Algorithm bandwidth".

    Examples
    --------
    >>> algorithm_bandwidth(4e9, 0.03) / 1e9
    133.33333333333334
    """
    m = v.non_negative("message_bytes", message_bytes)
    t = v.positive("seconds", seconds)
    return v.scalar_or_array(m / t)


def bus_bandwidth(message_bytes, n, seconds):
    """nccl-tests bus bandwidth of an all-reduce: ``busbw = algbw * 2(n-1)/n``.

    busbw is what each rank's link carried per second in a ring all-reduce;
    it is comparable with a link's speed, but it is not a link speed.

    Parameters
    ----------
    message_bytes : float or array_like
        Size of the all-reduce vector, bytes, ``>= 0``.
    n : int or array_like of int
        Ranks, ``>= 1`` (one rank: 0 bytes/s on the bus).
    seconds : float or array_like
        Measured time, ``> 0``.

    Returns
    -------
    float or ndarray
        Bytes/s.

    Source: NVIDIA nccl-tests, doc/PERFORMANCE.md, "Bus bandwidth", AllReduce.

    Examples
    --------
    Workbook exercise 0.3: 4 GB on 8 GPUs in 30 ms is a busbw of 233 GB/s.

    >>> round(bus_bandwidth(4e9, 8, 0.030) / 1e9, 1)
    233.3
    """
    algbw = algorithm_bandwidth(message_bytes, seconds)
    _, ring_factor = allreduce_coefficients(n, "ring")
    return v.scalar_or_array(np.asarray(algbw) * np.asarray(ring_factor))


def hierarchical_allreduce_time(message_bytes, gpus_per_node, nodes, intra_bandwidth, inter_bandwidth,
                                intra_latency=0.0, inter_latency=0.0):
    """Seconds for a two-level all-reduce: in-node reduce-scatter, cross-node ring, in-node all-gather.

    With ``g`` GPUs per node and ``N`` nodes:

        t = 2 * [(g-1) alpha_i + (g-1)/g * n * beta_i]
            + 2(N-1) alpha_e + 2(N-1)/N * (n/g) * beta_e

    Each GPU all-reduces only its ``1/g`` share across nodes, with the GPUs
    of the same local rank on every node forming ``g`` parallel rings, each
    with its own NIC (as on a DGX H100, one NIC per GPU). With ``nodes = 1``
    this is the flat ring in the node; with ``gpus_per_node = 1`` the flat
    ring across nodes.

    Parameters
    ----------
    message_bytes : float or array_like
        Bytes per GPU, ``>= 0``.
    gpus_per_node : int or array_like of int
        ``g >= 1``.
    nodes : int or array_like of int
        ``N >= 1``.
    intra_bandwidth, inter_bandwidth : float or array_like
        Bytes/s per link and direction in the node (NVLink) and per GPU across
        nodes (NIC), ``> 0``.
    intra_latency, inter_latency : float or array_like, optional
        Seconds per message, ``>= 0``.

    Returns
    -------
    float or ndarray
        Seconds.

    Source: Thakur, Rabenseifner & Gropp 2005 (ring phases); the two-level
    scheme of NCCL and of Goyal et al. 2017, "Accurate, Large Minibatch SGD",
    sec. 4 (intra-node reduce, inter-node all-reduce, intra-node broadcast).

    Examples
    --------
    >>> hierarchical_allreduce_time(8e9, 8, 1, 100e9, 50e9) == allreduce_time(8e9, 8, 100e9)
    True
    >>> round(hierarchical_allreduce_time(8e9, 8, 2, 100e9, 10e9), 6)
    0.24
    """
    # validate under the caller's names first; the phases below see checked arrays
    m = v.non_negative("message_bytes", message_bytes)
    g = v.integer("gpus_per_node", gpus_per_node, minimum=1)
    n_nodes = v.integer("nodes", nodes, minimum=1)
    bw_i = v.positive("intra_bandwidth", intra_bandwidth)
    bw_e = v.positive("inter_bandwidth", inter_bandwidth)
    a_i = v.non_negative("intra_latency", intra_latency)
    a_e = v.non_negative("inter_latency", inter_latency)
    # reduce-scatter plus all-gather in the node cost exactly a ring all-reduce over its g GPUs;
    # between them each GPU's 1/g share crosses the nodes in a ring of its own
    in_node = allreduce_time(m, g, bw_i, a_i, "ring")
    across = allreduce_time(m / g, n_nodes, bw_e, a_e, "ring")
    return v.scalar_or_array(np.asarray(in_node) + np.asarray(across))


def crossover_message_bytes(n, bandwidth, latency, algorithm_a: str, algorithm_b: str):
    """Message size at which two all-reduce algorithms take the same time.

    Both costs are linear in the message size, ``a_k alpha + b_k n beta``, so
    they meet at

        n* = (a_a - a_b) * alpha / ((b_b - b_a) * beta)

    Below ``n*`` the algorithm with the smaller latency count wins, above it
    the one with the smaller bandwidth factor. Returns ``inf`` where the two
    never meet at a positive size (one is never slower than the other, or
    their bandwidth factors are equal with different latency costs), and
    ``0.0`` where the two cost the same for every size.

    Parameters
    ----------
    n : int or array_like of int
        Ranks, ``>= 1``.
    bandwidth : float or array_like
        Bytes/s, ``> 0``.
    latency : float or array_like
        Seconds per message, ``>= 0``.
    algorithm_a, algorithm_b : str
        Names in :data:`ALLREDUCE_ALGORITHMS`.

    Returns
    -------
    float or ndarray
        Bytes.

    Source: alpha-beta costs of Thakur, Rabenseifner & Gropp 2005, sec. 4.

    Examples
    --------
    Ring against recursive doubling on 8 ranks, 5 us, 50 GB/s:
    14 alpha + 1.75 n beta = 3 alpha + 3 n beta at n = 11 alpha / (1.25 beta).

    >>> round(crossover_message_bytes(8, 50e9, 5e-6, "ring", "recursive_doubling"))
    2200000
    """
    v.choice("algorithm_a", algorithm_a, ALLREDUCE_ALGORITHMS)
    v.choice("algorithm_b", algorithm_b, ALLREDUCE_ALGORITHMS)
    bw = v.positive("bandwidth", bandwidth)
    alpha = v.non_negative("latency", latency)
    a1, b1 = (np.asarray(x, dtype=float) for x in allreduce_coefficients(n, algorithm_a))
    a2, b2 = (np.asarray(x, dtype=float) for x in allreduce_coefficients(n, algorithm_b))
    latency_gap = (a1 - a2) * alpha            # seconds that a pays more at n = 0
    slope_gap = (b2 - b1) / bw                 # seconds per byte that b pays more
    latency_gap, slope_gap = np.broadcast_arrays(latency_gap, slope_gap)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = latency_gap / slope_gap
    same = (latency_gap == 0) & (slope_gap == 0)
    meets = (slope_gap != 0) & (ratio >= 0) & ~same
    out = np.where(same, 0.0, np.where(meets, ratio, np.inf))
    return v.scalar_or_array(out)


def ring_allreduce_schedule(n):
    """Who sends which chunk to whom in each of the 2(n-1) steps of a ring all-reduce.

    The vector is cut into ``n`` chunks. In reduce-scatter step ``s``
    (``s = 0 .. n-2``) rank ``i`` sends chunk ``(i - s) mod n`` to rank
    ``(i + 1) mod n``, which adds it to its own copy; afterwards rank ``i``
    holds the complete sum of chunk ``(i + 1) mod n``. In all-gather step
    ``s`` (numbered ``n-1 .. 2n-3`` overall, ``k = s - (n-1)``) rank ``i``
    forwards chunk ``(i + 1 - k) mod n``, which its neighbour stores.

    Parameters
    ----------
    n : int
        Ranks in the ring, ``>= 1`` (one rank: an empty schedule).

    Returns
    -------
    dict of ndarray
        One row per (step, sending rank), ``2(n-1) * n`` rows:
        ``step`` (0-based), ``src``, ``dst``, ``chunk`` (ints),
        ``phase`` (``"reduce-scatter"`` or ``"all-gather"``) and ``reduce``
        (bool, True in reduce-scatter steps, where the receiver adds).

    Source: Patarasuk & Yuan 2009, sec. 4; Thakur, Rabenseifner & Gropp 2005, sec. 4.

    Examples
    --------
    >>> table = ring_allreduce_schedule(3)
    >>> table["step"].tolist()
    [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    >>> table["chunk"][:3].tolist(), table["chunk"][6:9].tolist()
    ([0, 1, 2], [1, 2, 0])
    """
    p = int(v.integer("n", n, minimum=1))
    steps = 2 * (p - 1)
    step = np.repeat(np.arange(steps, dtype=np.int64), p)
    src = np.tile(np.arange(p, dtype=np.int64), steps)
    reduce = step < p - 1
    gather_step = step - (p - 1)
    chunk = np.where(reduce, src - step, src + 1 - gather_step) % max(p, 1)
    return {
        "step": step,
        "src": src,
        "dst": (src + 1) % p,
        "chunk": chunk.astype(np.int64),
        "phase": np.where(reduce, "reduce-scatter", "all-gather"),
        "reduce": reduce,
    }


def achieved_bandwidth(link_bandwidth, efficiency):
    """Bandwidth a collective achieves on a link: ``efficiency x link_bandwidth``.

    nccl-tests report the achieved *bus bandwidth* (busbw), which for ring collectives
    is directly comparable to the link's bandwidth per direction; their ratio is the
    collective efficiency (protocol headers, synchronisation, chunking).
    :data:`NVLINK_COLLECTIVE_EFFICIENCY` (0.82) and :data:`NETWORK_COLLECTIVE_EFFICIENCY`
    (0.94) are measured values for NVLink 4 and InfiniBand NDR.

    Parameters
    ----------
    link_bandwidth : float or array_like
        Bytes/s per link and direction, ``> 0``.
    efficiency : float or array_like
        Achieved busbw / link bandwidth, in ``(0, 1]``.

    Returns
    -------
    float or ndarray
        Bytes/s.

    Source: NVIDIA nccl-tests, doc/PERFORMANCE.md (busbw); NVIDIA/nccl-tests issues #212
    (NVLink 4: ~370 of 450 GB/s) and #290 (NDR: 46-48 of 50 GB/s).

    Examples
    --------
    >>> round(achieved_bandwidth(450e9, NVLINK_COLLECTIVE_EFFICIENCY) / 1e9)
    370
    """
    bw = v.positive("link_bandwidth", link_bandwidth)
    eff = v.fraction("efficiency", efficiency, low_open=True)
    return v.scalar_or_array(bw * eff)

"""Tensor parallelism in the Megatron-LM style: shards, heads, per-layer all-reduces.

A transformer layer splits its first linear of attention (Q, K, V) and of the
MLP by columns and the second (output projection, down-projection) by rows,
so each of the two blocks needs one all-reduce of the ``b x s x h`` activation
in the forward pass (operator g) and one in the backward pass (operator f):
4 per layer and micro-batch, 6 when the whole forward is recomputed.

Sources
-------
- M. Shoeybi et al., "Megatron-LM: Training Multi-Billion Parameter Language
  Models Using Model Parallelism", 2019 (arXiv:1909.08053), sec. 3, Figures 3-4.
- D. Narayanan et al., SC21, sec. 2.3 and 3.2.
- V. Korthikanti et al. 2022, sec. 4.2.2 (sequence parallelism keeps the same
  communication volume: reduce-scatter + all-gather instead of all-reduce).
"""

from __future__ import annotations

import numpy as np

from . import _validate as v
from .collectives import allreduce_time, allreduce_traffic_bytes

__all__ = [
    "TP_OVERLAP_EFFICIENCY",
    "tp_overlap_exposed_time",
    "column_parallel_shard_shape",
    "row_parallel_shard_shape",
    "heads_per_gpu",
    "kv_heads_per_gpu",
    "transformer_layer_params",
    "tp_weight_bytes_per_gpu",
    "tp_allreduces_per_layer",
    "tp_allreduce_bytes",
    "tp_allreduce_traffic_per_gpu",
    "tp_comm_time_per_layer",
    "tp_comm_overhead",
]


def _divides(name_total: str, total, tp):
    t = v.integer("tp", tp, minimum=1)
    n = v.integer(name_total, total, minimum=1)
    if np.any(n % t):
        raise ValueError(f"{name_total} must be divisible by tp, got {name_total}={total!r}, tp={tp!r}")
    return n, t


def _out(x):
    x = np.asarray(x)
    return int(x) if x.ndim == 0 else x


def column_parallel_shard_shape(in_features, out_features, tp):
    """Shape of one GPU's shard of a column-parallel weight ``[in, out]``: ``[in, out/tp]``.

    Parameters
    ----------
    in_features : int or array_like of int
        Rows of the weight (input width), ``>= 1``.
    out_features : int or array_like of int
        Columns (output width), divisible by ``tp``.
    tp : int or array_like of int
        Tensor-parallel size, ``>= 1``.

    Returns
    -------
    tuple of int (or arrays)
        ``(in_features, out_features / tp)``.

    Source: Shoeybi et al. 2019, sec. 3 (column split of A in Y = GeLU(XA)).

    Examples
    --------
    Workbook exercise 6.1: d = 8192, TP = 8.

    >>> column_parallel_shard_shape(8192, 8192, 8)
    (8192, 1024)
    """
    rows = v.integer("in_features", in_features, minimum=1)
    cols, t = _divides("out_features", out_features, tp)
    rows, cols = np.broadcast_arrays(rows, cols // t)
    return _out(rows), _out(cols)


def row_parallel_shard_shape(in_features, out_features, tp):
    """Shape of one GPU's shard of a row-parallel weight ``[in, out]``: ``[in/tp, out]``.

    Parameters
    ----------
    in_features : int or array_like of int
        Rows (input width), divisible by ``tp``.
    out_features : int or array_like of int
        Columns, ``>= 1``.
    tp : int or array_like of int
        Tensor-parallel size, ``>= 1``.

    Returns
    -------
    tuple of int (or arrays)
        ``(in_features / tp, out_features)``.

    Source: Shoeybi et al. 2019, sec. 3 (row split of B in Z = YB, then all-reduce).

    Examples
    --------
    >>> row_parallel_shard_shape(4 * 8192, 8192, 8)
    (4096, 8192)
    """
    rows, t = _divides("in_features", in_features, tp)
    cols = v.integer("out_features", out_features, minimum=1)
    rows, cols = np.broadcast_arrays(rows // t, cols)
    return _out(rows), _out(cols)


def heads_per_gpu(heads, tp):
    """Attention (query) heads on each GPU: ``heads / tp`` (must divide).

    Parameters
    ----------
    heads : int or array_like of int
        Query heads, divisible by ``tp``.
    tp : int or array_like of int
        Tensor-parallel size, ``>= 1``.

    Returns
    -------
    int or ndarray of int
        Heads.

    Source: Shoeybi et al. 2019, sec. 3 (Q, K, V split by heads).

    Examples
    --------
    >>> heads_per_gpu(64, 8)
    8
    """
    n, t = _divides("heads", heads, tp)
    return _out(n // t)


def kv_heads_per_gpu(kv_heads, tp):
    """Key/value heads on each GPU with grouped-query attention.

    ``kv_heads / tp`` when ``tp`` divides ``kv_heads``; when ``tp`` is a
    multiple of ``kv_heads`` each GPU holds 1 KV head, every KV head being
    replicated on ``tp / kv_heads`` GPUs (Megatron-LM's GQA split). Other
    combinations raise ``ValueError``.

    Parameters
    ----------
    kv_heads : int or array_like of int
        Key/value heads, ``>= 1``.
    tp : int or array_like of int
        Tensor-parallel size, ``>= 1``.

    Returns
    -------
    int or ndarray of int
        KV heads per GPU.

    Source: Ainslie et al. 2023, "GQA"; workbook exercise 6.4 (Llama 70B:
    8 KV heads on TP = 8 give 1 per GPU; TP = 16 replicates each twice).

    Examples
    --------
    >>> kv_heads_per_gpu(8, 8), kv_heads_per_gpu(8, 16), kv_heads_per_gpu(8, 2)
    (1, 1, 4)
    """
    n = v.integer("kv_heads", kv_heads, minimum=1)
    t = v.integer("tp", tp, minimum=1)
    if np.any((n % t != 0) & (t % n != 0)):
        raise ValueError(f"kv_heads must divide tp or be divisible by it, got kv_heads={kv_heads!r}, tp={tp!r}")
    return _out(np.maximum(n // t, 1))


def transformer_layer_params(hidden, ffn_hidden=None, gated=False, heads=None, kv_heads=None):
    """Weights of one transformer layer (biases and norms neglected).

    Attention: ``2 h^2`` for Q and the output projection plus ``2 h^2 *
    kv_heads/heads`` for K and V (``4 h^2`` without grouped-query attention).
    MLP: ``2 h f`` (two matrices) or ``3 h f`` gated (SwiGLU). With the
    default ``f = 4h``: ``12 h^2``.

    Parameters
    ----------
    hidden : int or array_like
        ``h >= 1``.
    ffn_hidden : int or array_like, optional
        ``f``; default ``4 h``.
    gated : bool, optional
        SwiGLU-style MLP with three matrices.
    heads, kv_heads : int, optional
        Give both for grouped-query attention; default: K, V as wide as Q.

    Returns
    -------
    float or ndarray
        Parameters.

    Source: Shoeybi et al. 2019 / Narayanan et al. 2021 (12 h^2 per layer);
    Touvron et al. 2023 and Llama Team 2024 (SwiGLU 3 h f, GQA);
    workbook exercises 6.3 (12 d^2) and 9.3 (4 d^2 + 3 d f).

    Examples
    --------
    >>> transformer_layer_params(8192) / 1e6
    805.306368
    >>> round(transformer_layer_params(16384, 53248, gated=True) / 1e9, 2)
    3.69
    """
    h = v.positive("hidden", hidden)
    f = 4.0 * h if ffn_hidden is None else v.positive("ffn_hidden", ffn_hidden)
    if (heads is None) != (kv_heads is None):
        raise ValueError("heads and kv_heads must be given together (or neither)")
    kv_share = 1.0 if heads is None else v.positive("kv_heads", kv_heads) / v.positive("heads", heads)
    attention = 2.0 * h * h + 2.0 * h * h * kv_share
    mlp = (3.0 if gated else 2.0) * h * f
    return v.scalar_or_array(attention + mlp)


def tp_weight_bytes_per_gpu(params_per_layer, layers, tp, bytes_per_param=2.0):
    """Weight bytes per GPU when every layer is split ``tp`` ways: ``P_layer * L * bytes / tp``.

    Parameters
    ----------
    params_per_layer : float or array_like
        Parameters of one layer, ``>= 0``.
    layers : int or array_like of int
        Layers on this GPU (all layers, or a pipeline stage's), ``>= 1``.
    tp : int or array_like of int
        Tensor-parallel size, ``>= 1``.
    bytes_per_param : float or array_like, optional
        2 for FP16/BF16 weights, ``> 0``.

    Returns
    -------
    float or ndarray
        Bytes.

    Source: Shoeybi et al. 2019, sec. 3; workbook exercises 6.3 (16.1 GB) and 9.3 (7.38 GB).

    Examples
    --------
    >>> round(tp_weight_bytes_per_gpu(12 * 8192**2, 80, 8) / 1e9, 1)
    16.1
    """
    p = v.non_negative("params_per_layer", params_per_layer)
    n = v.integer("layers", layers, minimum=1)
    t = v.integer("tp", tp, minimum=1)
    b = v.positive("bytes_per_param", bytes_per_param)
    return v.scalar_or_array(p * n * b / t)


def tp_allreduces_per_layer(recompute="none"):
    """All-reduces per layer and micro-batch: 2 forward + 2 backward; 6 with full recompute.

    Full recomputation runs the forward pass again before the backward pass,
    with its two all-reduces; selective recomputation only recomputes the
    attention core, which needs none.

    Parameters
    ----------
    recompute : str, optional
        ``"none"``, ``"selective"`` or ``"full"``.

    Returns
    -------
    int
        All-reduces.

    Source: Shoeybi et al. 2019, Figure 4 (operators f and g); Korthikanti et al. 2022, sec. 5.

    Examples
    --------
    >>> tp_allreduces_per_layer(), tp_allreduces_per_layer("full")
    (4, 6)
    """
    v.choice("recompute", recompute, ("none", "selective", "full"))
    return 6 if recompute == "full" else 4


def tp_allreduce_bytes(seq, micro_batch, hidden, bytes_per_element=2.0):
    """Size of one tensor-parallel all-reduce: the activation ``b * s * h * bytes``.

    Parameters
    ----------
    seq, micro_batch, hidden : int or array_like
        ``s, b, h``, ``>= 1``.
    bytes_per_element : float or array_like, optional
        2 for 16-bit activations, ``> 0``.

    Returns
    -------
    float or ndarray
        Bytes.

    Source: Shoeybi et al. 2019, sec. 3.

    Examples
    --------
    >>> tp_allreduce_bytes(4096, 1, 8192) / 2**20
    64.0
    """
    s = v.positive("seq", seq)
    b = v.positive("micro_batch", micro_batch)
    h = v.positive("hidden", hidden)
    e = v.positive("bytes_per_element", bytes_per_element)
    return v.scalar_or_array(b * s * h * e)


def tp_allreduce_traffic_per_gpu(seq, micro_batch, hidden, tp, bytes_per_element=2.0):
    """Bytes each GPU sends in one ring all-reduce of the activation: ``2(t-1)/t * b s h bytes``.

    Parameters
    ----------
    seq, micro_batch, hidden : int or array_like
        ``s, b, h``, ``>= 1``.
    tp : int or array_like of int
        Tensor-parallel size, ``>= 1``.
    bytes_per_element : float or array_like, optional
        ``> 0``.

    Returns
    -------
    float or ndarray
        Bytes.

    Source: Patarasuk & Yuan 2009 (ring volume); workbook exercise 6.2,
    corrected: 117 MB (112 MiB), not half of it.

    Examples
    --------
    >>> tp_allreduce_traffic_per_gpu(4096, 1, 8192, 8) / 2**20
    112.0
    """
    message = tp_allreduce_bytes(seq, micro_batch, hidden, bytes_per_element)
    return allreduce_traffic_bytes(message, v.integer("tp", tp, minimum=1), "ring")


def tp_comm_time_per_layer(seq, micro_batch, hidden, tp, bandwidth, latency=0.0, bytes_per_element=2.0,
                           recompute="none", algorithm="ring"):
    """Seconds of tensor-parallel all-reduces per layer and micro-batch (forward + backward).

    Formula: ``tp_allreduces_per_layer(recompute) * allreduce_time(b s h bytes, tp, bandwidth, latency)``.
    These all-reduces sit on the critical path (the next operation needs their result).

    Parameters
    ----------
    seq, micro_batch, hidden : int or array_like
        ``s, b, h``, ``>= 1``.
    tp : int or array_like of int
        Tensor-parallel size, ``>= 1`` (1 costs nothing).
    bandwidth : float or array_like
        Bytes/s per link and direction, ``> 0``.
    latency : float or array_like, optional
        Seconds per message, ``>= 0``.
    bytes_per_element : float or array_like, optional
        ``> 0``.
    recompute : str, optional
        ``"none"``, ``"selective"`` or ``"full"``.
    algorithm : str, optional
        All-reduce algorithm (:data:`~course.core.collectives.ALLREDUCE_ALGORITHMS`).

    Returns
    -------
    float or ndarray
        Seconds.

    Source: Shoeybi et al. 2019, Figure 4; Thakur et al. 2005 (ring cost).

    Examples
    --------
    >>> round(tp_comm_time_per_layer(4096, 1, 8192, 8, 600e9) * 1e3, 4)
    0.7829
    """
    message = tp_allreduce_bytes(seq, micro_batch, hidden, bytes_per_element)
    per = allreduce_time(message, v.integer("tp", tp, minimum=1), bandwidth, latency, algorithm)
    return v.scalar_or_array(tp_allreduces_per_layer(recompute) * np.asarray(per))


#: Overlap efficiency of Transformer Engine's userbuffers TP overlap, measured: ``E = 1 - ECT_overlap / ECT_NCCL``,
#: where the effective communication time ``ECT`` is a layer's time minus its fastest unsplit GEMM's, so ``E``
#: counts the traffic left exposed *and* what splitting the GEMMs into chunks and sharing the SMs cost them.
#: TransformerEngine 1.4.0 with UserBuffer (the best of its overlap configurations) on 8 H800 SXM5 over NVLink,
#: BF16, GPT-3 175B's AllGather-GEMM and GEMM-ReduceScatter at m = 1,024 to 8,192 tokens: 20 % on average
#: (range -40 % to 80 %; on 8 A100 SXM4 over NVLink -61 % on average, i.e. slower than not overlapping).
#: Chang et al. 2024, "FLUX: Fast Software-based Communication Overlap on GPUs Through Kernel Fusion"
#: (arXiv:2406.06858), sec. 2.3 (eq. 1-2, the definitions), sec. 5.1 (ranges) and sec. 6 (averages).
#: Their model-level runs agree in size: training on 128 H800 (TP 8), Flux is up to 1.10x Megatron-LM without
#: overlap and up to 1.05x Transformer Engine (sec. 5.2), so TE's overlap gained a few percent of the step.
#: No H100 measurement was found; H100's NVLink is 2.25x H800's, so the same layer moves its TP traffic faster.
TP_OVERLAP_EFFICIENCY = 0.20


def tp_overlap_exposed_time(tp_seconds, gemm_seconds, efficiency=TP_OVERLAP_EFFICIENCY):
    """Seconds of tensor-parallel traffic left on the critical path when it is overlapped with the GEMMs it feeds.

    With sequence parallelism each all-gather before a GEMM and each reduce-scatter after one can be
    split into chunks, each sent while the GEMM runs on a chunk already there (Wang et al. 2023;
    Transformer Engine's userbuffers "TP communication overlap", which Megatron-Core enables with
    ``tp_comm_overlap``). What that saves is measured, not ideal: the chunked GEMMs run slower than one
    large GEMM and the communication kernels take SMs from them, so a measured *overlap efficiency*
    ``E`` (:data:`TP_OVERLAP_EFFICIENCY`) states the share of the traffic's time the overlap removes.
    No more than the GEMMs' own time can be hidden::

        T_exposed = T - E x min(T, T_gemm)

    with ``T`` the TP traffic and ``T_gemm`` the time of the layer GEMMs it overlaps. ``E < 0`` (measured
    for small GEMMs, and on A100) makes the overlap slower than not overlapping.

    Parameters
    ----------
    tp_seconds, gemm_seconds : float or array_like, >= 0
        ``T`` and ``T_gemm`` (any common unit of time: per layer, per step).
    efficiency : float or array_like, <= 1, optional
        ``E``; 1 hides everything the GEMMs can cover, 0 nothing.

    Returns
    -------
    float or ndarray
        Seconds.

    Source: Chang et al. 2024 (Flux), sec. 2.3 eq. 1-2 (overlap efficiency) and sec. 6 (Transformer Engine
    1.4 on 8 H800 NVLink: 20 % on average); Wang et al. 2023, "Overlap Communication with Dependent
    Computation via Decomposition in Large Deep Learning Models", ASPLOS '23, sec. 3 (the decomposition);
    NVIDIA Transformer Engine userbuffers and NeMo / Megatron-Bridge ``tp_comm_overlap`` configurations
    (Llama 3.1 405B on H100: ``userbuffers_bf16_h100_h16384_tp8_cp2_mbs1_seqlen8192``).

    Examples
    --------
    1 s of TP traffic behind 8 s of GEMMs at the measured 20 %: 1 - 0.2 x 1 = 0.8 s exposed.

    >>> round(tp_overlap_exposed_time(1.0, 8.0), 4)
    0.8
    >>> tp_overlap_exposed_time(1.0, 0.5, 1.0)  # at best the GEMMs' 0.5 s is hidden
    0.5
    """
    t_comm = np.asarray(v.non_negative("tp_seconds", tp_seconds), dtype=float)
    t_gemm = np.asarray(v.non_negative("gemm_seconds", gemm_seconds), dtype=float)
    eff = np.asarray(efficiency, dtype=float)
    if not np.all(np.isfinite(eff)) or np.any(eff > 1.0):
        raise ValueError(f"efficiency must be a finite number <= 1, got {efficiency!r}")
    return v.scalar_or_array(t_comm - eff * np.minimum(t_comm, t_gemm))


def tp_comm_overhead(seq, micro_batch, hidden, layers, tp, bandwidth, compute_seconds, latency=0.0,
                     bytes_per_element=2.0, recompute="none"):
    """Tensor-parallel communication time relative to compute time.

    Formula: ``layers * tp_comm_time_per_layer(...) / compute_seconds``. This
    is the workbook's "overhead"; the share of a step (compute plus exposed
    TP communication) is ``o / (1 + o)``.

    Parameters
    ----------
    seq, micro_batch, hidden : int or array_like
        ``s, b, h``, ``>= 1``.
    layers : int or array_like of int
        Layers on the GPU, ``>= 1``.
    tp : int or array_like of int
        ``>= 1``.
    bandwidth : float or array_like
        Bytes/s, ``> 0``.
    compute_seconds : float or array_like
        Forward + backward compute of the same layers and micro-batch, ``> 0``.
    latency, bytes_per_element, recompute
        As in :func:`tp_comm_time_per_layer`.

    Returns
    -------
    float or ndarray
        Dimensionless.

    Source: Shoeybi et al. 2019; workbook exercise 6.5, corrected: 20.9 %
    (320 all-reduces of 0.196 ms against 300 ms of compute).

    Examples
    --------
    >>> round(tp_comm_overhead(4096, 1, 8192, 80, 8, 600e9, 0.300), 3)
    0.209
    """
    per_layer = tp_comm_time_per_layer(seq, micro_batch, hidden, tp, bandwidth, latency, bytes_per_element,
                                       recompute)
    n = v.integer("layers", layers, minimum=1)
    c = v.positive("compute_seconds", compute_seconds)
    return v.scalar_or_array(n * np.asarray(per_layer) / c)

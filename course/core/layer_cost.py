"""Work of one transformer layer: FLOPs per sequence, backward share, element-wise memory traffic.

These are the per-layer quantities the planner multiplies by layers, micro-batches and
sequences. FLOPs follow Narayanan et al. 2021 (SC21), eq. 3, generalised to GQA / SwiGLU
shapes: a forward pass costs ``f = 2 P_layer + 4 s h`` per token (matrix multiplications
plus attention scores and their weighted sum), a backward pass ``2 f``; recomputation
adds a forward pass (``"full"``) or the attention-score part ``4 s h`` (``"selective"``,
Korthikanti et al. 2022, sec. 5).

The memory-bound time of the element-wise kernels (layer norm, dropout, GeLU/SwiGLU,
softmax) is a roofline term (Williams et al. 2009): bytes moved over HBM bandwidth. Each
activation byte Korthikanti et al. count is written once and read once by such a kernel
in a forward pass; a backward pass moves twice that; full recomputation repeats the
forward.
"""

from __future__ import annotations

import functools

import numpy as np

from . import _validate as v

__all__ = ["RECOMPUTE_MODES", "FLASH_BLOCK", "layer_flops_per_token", "flops_per_sequence", "backward_share",
           "forward_share", "elementwise_traffic_per_layer", "causal_attention_fraction",
           "model_flops_per_token", "layer_activation_bytes", "attention_flops_per_token",
           "attention_kernel_extra_time"]

#: Query/key tile of FlashAttention-2 on Hopper/Ampere (``block_m = block_n = 128``): a causal
#: kernel skips every tile above the diagonal and computes the diagonal tiles in full.
#: Source: Dao 2023, FlashAttention-2, sec. 3.1.1 (causal masking) and sec. 3.3 (block sizes
#: {64, 128} x {64, 128}).
FLASH_BLOCK = 128

RECOMPUTE_MODES = ("none", "selective", "full")


def _mode(recompute):
    return v.choice("recompute", recompute, RECOMPUTE_MODES)


def layer_flops_per_token(layer_params, seq, hidden, recompute="none", attention_fraction=1.0):
    """FLOPs of one layer per token for a forward, backward and recomputation: ``3 f + r``.

    ``f = 2 P_layer + 4 s h a``; ``r = f`` (full), ``4 s h a`` (selective), 0 (none), where
    ``a`` is the share of the ``s x s`` score matrix the attention kernel computes (1 for
    a dense kernel, :func:`causal_attention_fraction` for a causal one that skips masked
    blocks).

    Parameters
    ----------
    layer_params : float or array_like, > 0
        Weights of one layer ``P_layer``.
    seq, hidden : int or array_like, >= 1
        ``s`` and ``h``.
    recompute : {"none", "selective", "full"}
    attention_fraction : float or array_like in (0, 1], optional
        ``a``.

    Returns
    -------
    float or ndarray
        FLOP per token.

    Source: Narayanan et al. 2021 (SC21), eq. 3; Korthikanti et al. 2022, sec. 5.

    Examples
    --------
    GPT shapes (``P_layer = 12 h^2``), full recomputation: ``4 (24 h^2 + 4 s h)``.

    >>> h, s = 1024, 2048
    >>> layer_flops_per_token(12 * h**2, s, h, "full") == 4 * (24 * h**2 + 4 * s * h)
    True
    """
    p = v.positive("layer_params", layer_params)
    s = v.integer("seq", seq)
    h = v.integer("hidden", hidden)
    attention = 4.0 * s * h * v.fraction("attention_fraction", attention_fraction, low_open=True)
    fwd = 2.0 * p + attention
    extra = {"none": 0.0, "selective": attention, "full": fwd}[_mode(recompute)]
    return v.scalar_or_array(3.0 * fwd + extra)


def flops_per_sequence(model, recompute="none", attention_fraction=1.0):
    """FLOPs of one training sequence on the whole model: ``s [l (3 f + r) + 6 V h]``.

    Parameters
    ----------
    model : Model
        A transformer of :mod:`course.core.catalog`.
    recompute : {"none", "selective", "full"}
    attention_fraction : float in (0, 1], optional
        Share of the score matrix computed (:func:`causal_attention_fraction` for a
        causal kernel that skips masked blocks; 1 counts every query against every key).

    Returns
    -------
    float
        FLOP.

    For a mixture of experts ``P_layer`` is the weights a token passes through
    (:attr:`~course.core.catalog.Model.active_layer_params`), and ``h`` of the score term
    the attention's score width (MLA's head dimensions).

    Source: Narayanan et al. 2021 (SC21), eq. 3 (the output layer: ``6 V h`` per token);
    DeepSeek-AI 2024, sec. 2.1 (activated parameters, MLA head dimensions).

    Examples
    --------
    >>> from course.core import catalog
    >>> m = catalog.model("megatron-145.6b")
    >>> s, l, h, V = 2048, 80, 12288, 51200
    >>> eq3 = 96 * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    >>> round(flops_per_sequence(m, "full") / eq3, 9)
    1.0
    """
    a = float(v.fraction("attention_fraction", attention_fraction, low_open=True))
    return _flops_per_sequence(model, _mode(recompute), a)


@functools.lru_cache(maxsize=256)
def _flops_per_sequence(model, recompute, attention_fraction):
    # models are frozen dataclasses: one computation per (model, mode), however many plans ask
    # a mixture of experts computes its active weights only (router, k routed and the shared
    # experts: DeepSeek-AI 2024, sec. 2.1.2); MLA's scores are as wide as its head dimensions
    s, h = model.seq_len, model.hidden
    per_layer = float(layer_flops_per_token(model.active_layer_params, s, model.score_width, recompute,
                                            attention_fraction))
    return s * (model.layers * per_layer + 6.0 * model.vocab * h)


def backward_share(recompute="none"):
    """Share of a micro-batch's layer time spent in its backward pass (with recomputation).

    ``2f / 3f`` without full recomputation (selective recomputation is small next to it),
    ``3f / 4f`` with it (the recomputed forward runs inside the backward pass).

    Parameters
    ----------
    recompute : {"none", "selective", "full"}

    Returns
    -------
    float

    Source: Narayanan et al. 2021, sec. 3.5 (backward = 2 x forward; recomputation adds a
    forward to the backward pass).

    Examples
    --------
    >>> backward_share("none"), backward_share("full")
    (0.6666666666666666, 0.75)
    """
    return {"none": 2 / 3, "selective": 2 / 3, "full": 3 / 4}[_mode(recompute)]


def forward_share(recompute="none"):
    """Share of a micro-batch's layer time spent in its forward pass: ``1 - backward_share``.

    Parameters
    ----------
    recompute : {"none", "selective", "full"}

    Returns
    -------
    float

    Source: as :func:`backward_share`.

    Examples
    --------
    >>> forward_share("full")
    0.25
    """
    return 1.0 - backward_share(recompute)


def elementwise_traffic_per_layer(stored_bytes, score_bytes=0.0, recompute="none"):
    """HBM bytes the element-wise kernels of one layer move per micro-batch (forward + backward).

    ``6 A`` without recomputation (write + read in the forward, twice that in the
    backward), ``8 A`` with full recomputation (the forward runs twice), ``6 A + 2 S``
    with selective recomputation (the attention scores ``S`` are recomputed), where ``A``
    is the activation bytes the kernels touch (Korthikanti et al.'s count, without the
    ``s x s`` scores when a fused attention kernel keeps them out of HBM).

    Parameters
    ----------
    stored_bytes : float or array_like, >= 0
        ``A``, bytes per layer and micro-batch.
    score_bytes : float or array_like, >= 0, optional
        ``S``, bytes of the attention scores and their softmax/dropout per layer.
    recompute : {"none", "selective", "full"}

    Returns
    -------
    float or ndarray
        Bytes.

    Source: Williams et al. 2009 (roofline); Korthikanti et al. 2022, Table 2 (bytes).

    Examples
    --------
    >>> elementwise_traffic_per_layer(1e9, 0.5e9, "none"), elementwise_traffic_per_layer(1e9, 0.5e9, "selective")
    (6000000000.0, 7000000000.0)
    """
    a = v.non_negative("stored_bytes", stored_bytes)
    sc = v.non_negative("score_bytes", score_bytes)
    mode = _mode(recompute)
    out = {"none": 6.0 * a, "selective": 6.0 * a + 2.0 * sc, "full": 8.0 * a}[mode]
    return v.scalar_or_array(out)


def causal_attention_fraction(seq, block=FLASH_BLOCK):
    """Share of the ``s x s`` score matrix a causal block-skipping kernel computes.

    With ``n = ceil(s / block)`` tiles per side, the kernel computes the ``n (n + 1) / 2``
    tiles on or below the diagonal: ``(n + 1) / (2 n)``, about one half for long sequences.

    Parameters
    ----------
    seq : int or array_like of int, >= 1
    block : int or array_like of int, >= 1, optional
        Tile size (:data:`FLASH_BLOCK`).

    Returns
    -------
    float or ndarray
        In ``(1/2, 1]``.

    Source: Dao 2023, FlashAttention-2, sec. 3.1.1 ("for causal attention we skip the
    blocks where all the column indices are more than the row indices", about half the
    blocks for long sequences).

    Examples
    --------
    >>> causal_attention_fraction(8192), causal_attention_fraction(128)
    (0.5078125, 1.0)
    """
    s = v.integer("seq", seq)
    b = v.integer("block", block)
    n = np.ceil(s / b)
    return v.scalar_or_array((n + 1.0) / (2.0 * n))


def attention_flops_per_token(seq, score_width, recompute="none", attention_fraction=1.0):
    """FLOPs of one layer's score and weighted-sum products per token, all passes: the attention part of
    :func:`layer_flops_per_token`.

    ``4 s w a`` per forward pass (``Q K^T`` and ``P V``, ``2 s w`` each, ``a`` the share of the score
    matrix computed), three passes (forward and a backward twice as long), plus one more forward under
    either recomputation (selective recomputation re-runs exactly this part)::

        F_att = 4 s w a x (3, or 4 with recompute = "selective" / "full")

    Parameters
    ----------
    seq, score_width : int or array_like of int, >= 1
        ``s`` and ``w`` (heads x head dimension; ``h`` for multi-head attention).
    recompute : {"none", "selective", "full"}
    attention_fraction : float or array_like in (0, 1], optional
        ``a`` (:func:`causal_attention_fraction` for a causal block-skipping kernel).

    Returns
    -------
    float or ndarray
        FLOP per token and layer.

    Source: Narayanan et al. 2021 (SC21), eq. 3 (the ``4 s h`` term); Korthikanti et al. 2022, sec. 5.

    Examples
    --------
    Llama 3 405B (w = 128 x 128 = 16,384) at 8,192 tokens, causal, no recomputation:
    4 x 8192 x 16384 x 0.5078125 x 3 = 8.18e8 FLOP per token and layer.

    >>> attention_flops_per_token(8192, 16384, "none", 0.5078125) / 1e8
    8.178892...
    >>> attention_flops_per_token(8192, 16384, "full", 0.5) == 4 * 8192 * 16384 * 0.5 * 4
    True
    """
    s = v.integer("seq", seq)
    w = v.integer("score_width", score_width)
    a = v.fraction("attention_fraction", attention_fraction, low_open=True)
    passes = 3.0 if _mode(recompute) == "none" else 4.0
    return v.scalar_or_array(4.0 * s * w * a * passes)


def attention_kernel_extra_time(attention_flops, peak, attention_efficiency, compute_efficiency):
    """Seconds a fused attention kernel takes beyond what the planner's GEMM efficiency charges for its FLOPs.

    The compute term charges every FLOP at ``compute_efficiency`` of peak. A fused attention kernel
    (FlashAttention) sustains its own, measured share of peak; the difference is::

        T_extra = F_att / peak x (1 / attention_efficiency - 1 / compute_efficiency)

    negative where the kernel is faster than the GEMMs. On an H100, FlashAttention-2 reaches about 35 %
    of the BF16 peak, against about 63 % for large GEMMs; FlashAttention-3, released with the Llama 3
    paper (July 2024), reaches up to 75 % in its forward pass (Shah et al. 2024, abstract). On an A100
    FlashAttention-2 reaches 50-73 % of peak in its forward pass (Dao 2023, abstract), about what the
    GEMMs sustain, so the A100 needs no correction (the catalog gives it none).

    Parameters
    ----------
    attention_flops : float or array_like, >= 0
        FLOPs of the attention kernels (:func:`attention_flops_per_token` x tokens x layers).
    peak : float or array_like, > 0
        Dense 16-bit peak FLOP/s.
    attention_efficiency, compute_efficiency : float or array_like in (0, 1]
        Shares of peak the attention kernel and the GEMMs sustain.

    Returns
    -------
    float or ndarray
        Seconds (negative when attention runs faster than the GEMMs).

    Source: Shah et al. 2024, FlashAttention-3, arXiv 2407.08608, abstract ("FlashAttention-2 achieving
    only 35% utilization on the H100 GPU"; FlashAttention-3 "reaching up to 740 TFLOPs/s (75%
    utilization)"); Dao 2023, FlashAttention-2, abstract (50-73 % of peak on A100).

    Examples
    --------
    1 PFLOP of attention on an H100 (989 TFLOP/s) at 35 % instead of 63 %:
    1e15 / 989e12 x (1/0.35 - 1/0.63) = 1.0111 x (2.8571 - 1.5873) = 1.2840 s.

    >>> round(attention_kernel_extra_time(1e15, 989e12, 0.35, 0.63), 4)
    1.284
    """
    f = np.asarray(v.non_negative("attention_flops", attention_flops), dtype=float)
    p = v.positive("peak", peak)
    ea = v.fraction("attention_efficiency", attention_efficiency, low_open=True)
    ec = v.fraction("compute_efficiency", compute_efficiency, low_open=True)
    return v.scalar_or_array(f / p * (1.0 / ea - 1.0 / ec))


def model_flops_per_token(model, attention=True):
    """Model FLOPs per training token, the numerator of MFU, in both conventions.

    ``6 N`` (Kaplan et al. 2020; ``N`` the weights a token passes through, the active
    ones of a mixture of experts), or with attention counted as PaLM does:
    ``6 N + 12 l w s`` (``w`` the score width, ``heads x head_dim``), every query against
    every key, whatever a causal kernel skips. Recomputation is never counted.

    Parameters
    ----------
    model : Model
        A transformer of :mod:`course.core.catalog`.
    attention : bool, optional
        Count the attention scores (PaLM's convention) or not (``6N``).

    Returns
    -------
    float
        FLOP per token.

    Source: Chowdhery et al. 2022 (PaLM), Appendix B (MFU: ``6N + 12 L H Q T``); Kaplan et
    al. 2020, sec. 2.1 (``6N``).

    Examples
    --------
    >>> from course.core import catalog
    >>> m = catalog.model("llama3-405b")  # 1 + 12 x 126 x 16384 x 8192 / (6 x 405e9)
    >>> round(model_flops_per_token(m) / model_flops_per_token(m, attention=False), 3)
    1.084
    """
    base = 6.0 * model.active_params
    if not attention:
        return base
    return base + 12.0 * model.layers * model.score_width * model.seq_len


def layer_activation_bytes(seq, micro_batch, hidden, heads, kv_heads=None, ffn=None, mlp_matrices=2, dropout=True,
                           tp=1, sequence_parallel=False, recompute="none"):
    """Activation bytes one transformer layer keeps for its backward pass, for its real shape.

    Korthikanti et al.'s per-tensor count (16-bit tensors, 1-byte dropout masks) for any
    layer: two norm inputs ``4sbh``; attention keeps its input ``2sbh``, Q ``2sbh``, K and V
    ``4sbh kv/a`` (GQA), the output projection's input ``2sbh`` and a dropout mask ``sbh``;
    the MLP keeps its input ``2sbh``, the ``mlp_matrices - 1`` pre-activation outputs
    ``2sbf`` each, the activation's output ``2sbf`` and a dropout mask ``sbh``; without a
    fused kernel the scores add ``5as^2b`` (``2as^2b`` without dropout). Without sequence
    parallelism the norm inputs, the block inputs and the masks are whole on every TP rank;
    with it everything is split ``t`` ways. Selective recomputation drops the scores, full
    recomputation keeps the layer input only (``2sbh``, ``/t`` with SP).

    With GPT shapes (``kv = a``, ``f = 4h``, 2 matrices, dropout) this is Korthikanti et
    al.'s ``sbh (10 + 24/t + 5as/(ht))`` (:func:`~course.core.memory.activation_bytes_per_layer`);
    a Llama layer (GQA, SwiGLU, no dropout) keeps less.

    Parameters
    ----------
    seq, micro_batch, hidden, heads : int or array_like, >= 1
    kv_heads : int, optional
        Key/value heads (default ``heads``).
    ffn : int, optional
        MLP inner width (default ``4 hidden``).
    mlp_matrices : {2, 3}
    dropout : bool
        Dropout layers present (GPT-3, BLOOM) or not (Llama, Mixtral, Qwen2, DeepSeek-V3).
    tp : int or array_like, >= 1
    sequence_parallel : bool or array_like of bool
    recompute : {"none", "selective", "full"}

    Returns
    -------
    float or ndarray
        Bytes per layer and micro-batch on one GPU.

    Source: Korthikanti et al. 2022, sec. 4.1 and Table 2 (the per-tensor count);
    Ainslie et al. 2023 (GQA: K and V ``kv/a`` as wide); Shazeer 2020 (SwiGLU: two
    pre-activation outputs).

    Examples
    --------
    >>> s, b, h, a = 2048, 1, 12288, 96
    >>> layer_activation_bytes(s, b, h, a) / (s * b * h)
    114.0
    >>> layer_activation_bytes(8192, 1, 16384, 128, 8, 53248, 3, False, 8, True, "selective") / (8192 * 16384 / 8)
    31.75
    """
    mode = _mode(recompute)
    s = v.positive("seq", seq)
    b = v.positive("micro_batch", micro_batch)
    h = v.positive("hidden", hidden)
    a = v.positive("heads", heads)
    kv = a if kv_heads is None else v.positive("kv_heads", kv_heads)
    f = 4.0 * h if ffn is None else v.positive("ffn", ffn)
    if mlp_matrices not in (2, 3):
        raise ValueError(f"mlp_matrices must be 2 or 3; got {mlp_matrices!r}")
    t = v.integer("tp", tp).astype(float)
    sp = np.asarray(sequence_parallel, dtype=bool)
    sbh = s * b * h
    d = 1.0 if dropout else 0.0
    whole = 4.0 + 2.0 + 2.0 + 2.0 * d  # norm inputs, attention and MLP inputs, two dropout masks
    split = 2.0 + 4.0 * kv / a + 2.0 + ((mlp_matrices - 1) * 2.0 + 2.0) * f / h
    if mode == "full":
        return v.scalar_or_array(np.where(sp, 2.0 * sbh / t, 2.0 * sbh))
    body = np.where(sp, (whole + split) / t, whole + split / t) * sbh
    if mode == "none":
        body = body + (5.0 if dropout else 2.0) * a * s * s * b / t
    return v.scalar_or_array(body)

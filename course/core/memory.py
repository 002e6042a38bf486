"""Memory of training: bytes per parameter, ZeRO sharding, activations per layer.

Model states are the weights, the gradients and the optimizer states
(for Adam in mixed precision: an FP32 master copy of the weights and two FP32
moments, K = 12 bytes per parameter). Activations are what the forward pass
keeps for the backward pass.

Sources
-------
- S. Rajbhandari, J. Rasley, O. Ruwase, Y. He, "ZeRO: Memory Optimizations
  Toward Training Trillion Parameter Models", SC20, sec. 3.1 and 5, Figure 1.
- P. Micikevicius et al., "Mixed Precision Training", ICLR 2018 (FP32 master
  weights next to FP16 weights and gradients).
- V. Korthikanti et al., "Reducing Activation Recomputation in Large
  Transformer Models", 2022 (arXiv:2205.05198), sec. 4, Table 2.
"""

from __future__ import annotations

import numpy as np

from . import _validate as v
from .precision import FLOAT_FORMATS, bytes_per_element

__all__ = [
    "PRECISIONS",
    "OPTIMIZERS",
    "ZERO_STAGES",
    "RECOMPUTE_MODES",
    "precision_bytes",
    "param_bytes_breakdown",
    "bytes_per_param",
    "zero_bytes_per_param",
    "model_state_bytes",
    "model_state_breakdown",
    "activation_bytes_per_layer",
    "activation_bytes_per_gpu",
    "gpu_memory_breakdown",
    "workbook_activation_elements_per_layer",
    "workbook_activation_bytes",
]

#: Precision names accepted for weights, gradients and master weights.
#: ``"fp8"`` is short for ``"fp8_e4m3"`` (both FP8 formats take one byte).
PRECISIONS = tuple(FLOAT_FORMATS) + ("fp8",)

#: Optimizer -> FP32 state tensors per parameter (Kingma & Ba 2015: Adam keeps
#: two moments; SGD with momentum one buffer; plain SGD none).
OPTIMIZERS = {"adam": 2, "adamw": 2, "sgd_momentum": 1, "sgd": 0}

#: ZeRO stages: 0 none, 1 optimizer states, 2 + gradients, 3 + parameters.
ZERO_STAGES = (0, 1, 2, 3)

#: Activation recomputation modes of Korthikanti et al. 2022.
RECOMPUTE_MODES = ("none", "selective", "full")


def precision_bytes(name: str) -> float:
    """Bytes of one number stored in precision ``name`` (bits / 8).

    Parameters
    ----------
    name : str
        One of :data:`PRECISIONS`.

    Returns
    -------
    float
        Bytes.

    Source: IEEE 754-2008 (fp32, fp16); Kalamkar et al. 2019 (bf16);
    Micikevicius et al. 2022 (FP8 E4M3/E5M2), via
    :func:`course.core.precision.bytes_per_element`.

    Examples
    --------
    >>> precision_bytes("bf16"), precision_bytes("fp8")
    (2.0, 1.0)
    """
    v.choice("name", name, PRECISIONS)
    return bytes_per_element("fp8_e4m3" if name == "fp8" else name)


def param_bytes_breakdown(weights: str = "fp16", optimizer: str = "adam", grads: str | None = None,
                          master: str | None = "auto") -> dict:
    """Bytes per parameter of each model-state tensor, unsharded.

    - weights: ``precision_bytes(weights)``
    - gradients: ``precision_bytes(grads)``, same precision as the weights by default
    - master: FP32 copy kept when the weights are in a lower precision
      (``master="auto"``); ``None`` for none
    - moments: 4 bytes per FP32 state tensor of the optimizer
      (:data:`OPTIMIZERS`: Adam 2, SGD with momentum 1, SGD 0)

    Mixed-precision Adam: 2 + 2 + 4 + 8 = 16 bytes; FP32 Adam: 4 + 4 + 0 + 8 = 16.

    Parameters
    ----------
    weights : str
        Precision of the weights used in forward and backward, in :data:`PRECISIONS`.
    optimizer : str
        Key of :data:`OPTIMIZERS`.
    grads : str or None
        Precision of the gradients; ``None`` means the weights' precision.
    master : str or None
        Precision of the master weights, ``"auto"`` (FP32 unless the weights
        are FP32 already) or ``None``.

    Returns
    -------
    dict
        ``weights``, ``gradients``, ``master``, ``moments``, ``optimizer``
        (= master + moments, ZeRO's K) and ``total``, bytes per parameter.

    Source: Micikevicius et al. 2018, sec. 3.1; Rajbhandari et al. 2020, sec. 3.1.

    Examples
    --------
    >>> param_bytes_breakdown()["total"], param_bytes_breakdown()["optimizer"]
    (16.0, 12.0)
    >>> param_bytes_breakdown("fp32")["total"]
    16.0
    """
    v.choice("optimizer", optimizer, OPTIMIZERS)
    v.choice("weights", weights, PRECISIONS)
    if grads is not None:
        v.choice("grads", grads, PRECISIONS)
    if master not in (None, "auto"):
        v.choice("master", master, PRECISIONS + ("auto", None))
    w = precision_bytes(weights)
    g = precision_bytes(weights if grads is None else grads)
    if master == "auto":
        master_bytes = 0.0 if weights == "fp32" else precision_bytes("fp32")
    elif master is None:
        master_bytes = 0.0
    else:
        master_bytes = precision_bytes(master)
    moments = OPTIMIZERS[optimizer] * precision_bytes("fp32")
    return {"weights": w, "gradients": g, "master": master_bytes, "moments": moments,
            "optimizer": master_bytes + moments, "total": w + g + master_bytes + moments}


def bytes_per_param(weights: str = "fp16", optimizer: str = "adam", grads: str | None = None,
                    master: str | None = "auto") -> float:
    """Total model-state bytes per parameter, unsharded (see :func:`param_bytes_breakdown`).

    Parameters
    ----------
    weights, optimizer, grads, master
        As in :func:`param_bytes_breakdown`.

    Returns
    -------
    float
        Bytes per parameter.

    Source: Micikevicius et al. 2018; Rajbhandari et al. 2020, sec. 3.1.

    Examples
    --------
    >>> bytes_per_param(), bytes_per_param("fp32", "sgd_momentum"), bytes_per_param("bf16", "sgd")
    (16.0, 12.0, 8.0)
    """
    return param_bytes_breakdown(weights, optimizer, grads, master)["total"]


def _stage(zero_stage) -> np.ndarray:
    # range first, on the floats: a huge value must not wrap around in the integer cast
    if v.any_true(np.abs(v.finite("zero_stage", zero_stage)) > 3):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    return v.integer("zero_stage", zero_stage, minimum=0)


def _sharded(zero_stage, dp, weight_bytes, grad_bytes, optimizer_bytes):
    stage = _stage(zero_stage)
    n = v.integer("dp", dp, minimum=1).astype(float)
    w = v.non_negative("weight_bytes", weight_bytes)
    g = v.non_negative("grad_bytes", grad_bytes)
    k = v.non_negative("optimizer_bytes", optimizer_bytes)
    return (np.where(stage >= 3, w / n, w),
            np.where(stage >= 2, g / n, g),
            np.where(stage >= 1, k / n, k))


def zero_bytes_per_param(zero_stage=0, dp=1, weight_bytes=2.0, grad_bytes=2.0, optimizer_bytes=12.0):
    """Model-state bytes per parameter on one GPU under ZeRO.

    With weights ``w``, gradients ``g`` and optimizer states ``K`` bytes per
    parameter (mixed-precision Adam: 2, 2, 12) on ``N = dp`` ranks:

    - stage 0: ``w + g + K``            (16)
    - stage 1: ``w + g + K/N``          (4 + 12/N)
    - stage 2: ``w + (g + K)/N``        (2 + 14/N)
    - stage 3: ``(w + g + K)/N``        (16/N)

    Parameters
    ----------
    zero_stage : int or array_like of int
        0, 1, 2 or 3.
    dp : int or array_like of int
        Data-parallel ranks sharing the states, ``>= 1``.
    weight_bytes, grad_bytes, optimizer_bytes : float or array_like
        Bytes per parameter, ``>= 0``.

    Returns
    -------
    float or ndarray
        Bytes per parameter.

    Source: Rajbhandari et al. 2020, sec. 5.1 and Figure 1.

    Examples
    --------
    >>> zero_bytes_per_param([0, 1, 2, 3], 64).tolist()
    [16.0, 4.1875, 2.21875, 0.25]
    """
    w, g, k = _sharded(zero_stage, dp, weight_bytes, grad_bytes, optimizer_bytes)
    return v.scalar_or_array(w + g + k)


def model_state_bytes(params, zero_stage=0, dp=1, weight_bytes=2.0, grad_bytes=2.0, optimizer_bytes=12.0):
    """Bytes per GPU of weights + gradients + optimizer states (mixed-precision Adam by default).

    Formula: ``params * zero_bytes_per_param(zero_stage, dp)``: 16 B/param
    unsharded; ZeRO-1 ``4 + 12/N``; ZeRO-2 ``2 + 14/N``; ZeRO-3 ``16/N``.

    Parameters
    ----------
    params : float or array_like
        Parameters held by this GPU's model replica (divide by TP x PP first
        for a sharded model), ``>= 0``.
    zero_stage : int or array_like of int
        0, 1, 2 or 3.
    dp : int or array_like of int
        Data-parallel ranks, ``>= 1``.
    weight_bytes, grad_bytes, optimizer_bytes : float or array_like, optional
        Bytes per parameter (default 2, 2, 12; use
        :func:`param_bytes_breakdown` for other precisions and optimizers).

    Returns
    -------
    float or ndarray
        Bytes.

    Source: Rajbhandari et al. 2020, sec. 5.1, Figure 1 (7.5B params,
    N = 64: 120 / 31.4 / 16.6 / 1.9 GB).

    Examples
    --------
    >>> [round(model_state_bytes(7.5e9, s, 64) / 1e9, 1) for s in range(4)]
    [120.0, 31.4, 16.6, 1.9]
    """
    p = v.non_negative("params", params)
    per_param = zero_bytes_per_param(zero_stage, dp, weight_bytes, grad_bytes, optimizer_bytes)
    return v.scalar_or_array(p * np.asarray(per_param))


def model_state_breakdown(params, zero_stage=0, dp=1, weight_bytes=2.0, grad_bytes=2.0, optimizer_bytes=12.0):
    """Per-GPU bytes of weights, gradients and optimizer states under ZeRO.

    Same model as :func:`model_state_bytes`, split into its three parts; the
    parts sum to ``model_state_bytes``.

    Parameters
    ----------
    params, zero_stage, dp, weight_bytes, grad_bytes, optimizer_bytes
        As in :func:`model_state_bytes`.

    Returns
    -------
    dict
        ``weights``, ``gradients``, ``optimizer``, ``total`` in bytes (floats or arrays).

    Source: Rajbhandari et al. 2020, sec. 5.1.

    Examples
    --------
    >>> parts = model_state_breakdown(7e9, zero_stage=2, dp=64)
    >>> [round(parts[k] / 1e9, 3) for k in ("weights", "gradients", "optimizer", "total")]
    [14.0, 0.219, 1.312, 15.531]
    """
    p = v.non_negative("params", params)
    w, g, k = _sharded(zero_stage, dp, weight_bytes, grad_bytes, optimizer_bytes)
    out = {"weights": p * w, "gradients": p * g, "optimizer": p * k}
    out["total"] = out["weights"] + out["gradients"] + out["optimizer"]
    return {name: v.scalar_or_array(value) for name, value in out.items()}


def activation_bytes_per_layer(seq, micro_batch, hidden, heads, tp=1, sequence_parallel=False, recompute="none"):
    """Activation bytes one transformer layer keeps for its backward pass (Korthikanti et al. 2022).

    With ``s`` = seq, ``b`` = micro_batch, ``h`` = hidden, ``a`` = heads,
    ``t`` = tp, 16-bit activations and 1-byte dropout masks (Table 2):

    ============================  =====================================
    case                          bytes per layer
    ============================  =====================================
    no recompute, TP              ``sbh (10 + 24/t + 5as/(ht))``
    no recompute, TP + SP         ``sbh (34/t + 5as/(ht))``
    selective recompute, TP       ``sbh (10 + 24/t)``
    selective recompute, TP + SP  ``sbh * 34/t``
    full recompute                ``2sbh`` (``2sbh/t`` with SP)
    ============================  =====================================

    With ``t = 1`` the first row is ``sbh (34 + 5as/h)``. Full recomputation
    keeps only the layer's 16-bit input; Table 2 gives ``2sbh`` without
    sequence parallelism. With sequence parallelism that input lies in a
    sequence-parallel region and is itself split ``t`` ways, hence ``2sbh/t``
    (an inference from sec. 4.2.2, not a row of Table 2).

    Parameters
    ----------
    seq, micro_batch, hidden, heads : int or array_like
        ``s, b, h, a``, each ``>= 1``.
    tp : int or array_like of int, optional
        Tensor-parallel size ``t >= 1``.
    sequence_parallel : bool or array_like of bool, optional
        Megatron sequence parallelism on.
    recompute : str, optional
        ``"none"``, ``"selective"`` or ``"full"``.

    Returns
    -------
    float or ndarray
        Bytes per layer and micro-batch on one GPU.

    Source: Korthikanti et al. 2022, sec. 4.1-4.3, Table 2 (for GPT-3,
    a = 96, s = 2048, h = 12288: 5as/h = 80).

    Examples
    --------
    >>> s, b, h, a = 2048, 1, 12288, 96
    >>> activation_bytes_per_layer(s, b, h, a) / (s * b * h)
    114.0
    >>> activation_bytes_per_layer(s, b, h, a, tp=8, sequence_parallel=True) / (s * b * h)
    14.25
    >>> activation_bytes_per_layer(s, b, h, a, tp=8, recompute="full") / (s * b * h)
    2.0
    """
    v.choice("recompute", recompute, RECOMPUTE_MODES)
    s = v.positive("seq", seq)
    b = v.positive("micro_batch", micro_batch)
    h = v.positive("hidden", hidden)
    a = v.positive("heads", heads)
    t = v.integer("tp", tp, minimum=1).astype(float)
    try:
        sp = np.asarray(sequence_parallel, dtype=bool)
    except (TypeError, ValueError):
        raise ValueError(f"sequence_parallel must be True or False, got {sequence_parallel!r}") from None
    sbh = s * b * h
    attention_scores = 5.0 * a * s / (h * t)       # softmax input/output and dropout mask, split by heads
    if recompute == "none":
        per_unit = np.where(sp, 34.0 / t + attention_scores, 10.0 + 24.0 / t + attention_scores)
    elif recompute == "selective":
        per_unit = np.where(sp, 34.0 / t, 10.0 + 24.0 / t)
    else:
        per_unit = np.where(sp, 2.0 / t, 2.0)
    return v.scalar_or_array(sbh * per_unit)


def activation_bytes_per_gpu(seq, micro_batch, hidden, heads, layers, tp=1, pp=1, sequence_parallel=False,
                             recompute="none", in_flight=None):
    """Activation bytes on the most loaded pipeline stage.

    Formula: ``activation_bytes_per_layer(...) * (layers / pp) * in_flight``.
    Under 1F1B the first stage holds ``p`` micro-batches in flight (when
    ``m >= p``), so the total is ``layers * per_layer``, independent of ``p``
    (Korthikanti et al. 2022, sec. 4.2.3). Pass ``in_flight`` from
    :func:`course.core.pipeline.in_flight_microbatches` for other schedules
    (GPipe: ``m``). Embedding and output-layer activations are neglected.

    Parameters
    ----------
    seq, micro_batch, hidden, heads : int or array_like
        As in :func:`activation_bytes_per_layer`.
    layers : int or array_like of int
        Transformer layers of the whole model, ``>= 1``.
    tp, pp : int or array_like of int, optional
        Tensor- and pipeline-parallel sizes, ``>= 1``.
    sequence_parallel, recompute
        As in :func:`activation_bytes_per_layer`.
    in_flight : float or array_like, optional
        Micro-batches whose activations a stage holds at once, ``> 0``;
        default ``pp`` (1F1B, first stage).

    Returns
    -------
    float or ndarray
        Bytes.

    Source: Korthikanti et al. 2022, sec. 4.2.3 and Table 2.

    Examples
    --------
    >>> per_layer = activation_bytes_per_layer(2048, 1, 12288, 96, 8, True)
    >>> activation_bytes_per_gpu(2048, 1, 12288, 96, 96, tp=8, pp=8, sequence_parallel=True) == 96 * per_layer
    True
    """
    per_layer = activation_bytes_per_layer(seq, micro_batch, hidden, heads, tp, sequence_parallel, recompute)
    n_layers = v.integer("layers", layers, minimum=1).astype(float)
    p = v.integer("pp", pp, minimum=1).astype(float)
    flight = p if in_flight is None else v.positive("in_flight", in_flight)
    return v.scalar_or_array(np.asarray(per_layer) * n_layers / p * flight)


def gpu_memory_breakdown(params, layers, seq, micro_batch, hidden, heads, tp=1, pp=1, dp=1, zero_stage=0,
                         sequence_parallel=False, recompute="none", in_flight=None):
    """Per-GPU memory of a 3D-parallel transformer: model states plus activations.

    The GPU holds ``params / (tp * pp)`` parameters (layers split evenly,
    embeddings counted in ``params``), sharded further by ZeRO over ``dp``
    (:func:`model_state_breakdown`), and the activations of the most loaded
    stage (:func:`activation_bytes_per_gpu`). Buffers, the CUDA context and
    fragmentation are not counted.

    Parameters
    ----------
    params : float or array_like
        Parameters of the whole model, ``>= 0``.
    layers, seq, micro_batch, hidden, heads : int or array_like
        Model and batch shape, ``>= 1``.
    tp, pp, dp : int or array_like of int, optional
        Parallel sizes, ``>= 1``.
    zero_stage : int or array_like of int, optional
        0-3.
    sequence_parallel, recompute, in_flight
        As in :func:`activation_bytes_per_gpu`.

    Returns
    -------
    dict
        ``weights``, ``gradients``, ``optimizer``, ``activations`` and
        ``total``, bytes per GPU.

    Source: Rajbhandari et al. 2020, sec. 5.1; Korthikanti et al. 2022, sec. 4;
    Narayanan et al. 2021 (SC21), sec. 3 (TP x PP split of the weights).

    Examples
    --------
    GPT-3 175B on TP = 8, PP = 8, DP = 16 with ZeRO-1, SP and selective recompute:

    >>> m = gpu_memory_breakdown(175e9, 96, 2048, 1, 12288, 96, 8, 8, 16, 1, True, "selective")
    >>> {k: round(x / 1e9, 1) for k, x in m.items()}
    {'weights': 5.5, 'gradients': 5.5, 'optimizer': 2.1, 'activations': 10.3, 'total': 23.3}
    """
    t = v.integer("tp", tp, minimum=1)
    p = v.integer("pp", pp, minimum=1)
    shard = v.non_negative("params", params) / (t * p)
    states = model_state_breakdown(shard, zero_stage, dp)
    activations = activation_bytes_per_gpu(seq, micro_batch, hidden, heads, layers, tp, pp, sequence_parallel,
                                           recompute, in_flight)
    out = {"weights": states["weights"], "gradients": states["gradients"], "optimizer": states["optimizer"],
           "activations": activations}
    out["total"] = v.scalar_or_array(np.asarray(states["total"]) + np.asarray(activations))
    return out


def workbook_activation_elements_per_layer(micro_batch, seq, hidden):
    """The workbook's simple activation model: ``2 * b * s * d`` elements per layer.

    It keeps only the inputs of attention and of the FFN, each ``b x s x d``
    (workbook exercise 8.5). Far below :func:`activation_bytes_per_layer`,
    which counts every tensor the backward pass needs.

    Parameters
    ----------
    micro_batch, seq, hidden : int or array_like
        ``b, s, d``, each ``>= 1``.

    Returns
    -------
    float or ndarray
        Elements (multiply by bytes per element).

    Source: workbook (material 003) exercise 8.5.

    Examples
    --------
    >>> workbook_activation_elements_per_layer(4, 4096, 8192)
    268435456.0
    """
    b = v.positive("micro_batch", micro_batch)
    s = v.positive("seq", seq)
    d = v.positive("hidden", hidden)
    return v.scalar_or_array(2.0 * b * s * d)


def workbook_activation_bytes(micro_batch, seq, hidden, layers, precision="fp16"):
    """Activation bytes of all layers in the workbook's model: ``2bsd * layers * bytes``.

    Stored once each; the workbook's 8.5 multiplies by a further 2 for no
    reason (errata item 9, notebooks/errata.ipynb): FP16 needs 42.9 GB, FP8 21.5 GB for b = 4,
    s = 4096, d = 8192, 80 layers.

    Parameters
    ----------
    micro_batch, seq, hidden : int or array_like
        ``b, s, d``, each ``>= 1``.
    layers : int or array_like of int
        ``>= 1``.
    precision : str, optional
        One of :data:`PRECISIONS`.

    Returns
    -------
    float or ndarray
        Bytes.

    Source: workbook (material 003) exercise 8.5, corrected.

    Examples
    --------
    >>> round(workbook_activation_bytes(4, 4096, 8192, 80, "fp16") / 1e9, 1)
    42.9
    """
    v.choice("precision", precision, PRECISIONS)
    elements = workbook_activation_elements_per_layer(micro_batch, seq, hidden)
    n_layers = v.integer("layers", layers, minimum=1)
    return v.scalar_or_array(np.asarray(elements) * n_layers * precision_bytes(precision))

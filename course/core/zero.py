"""ZeRO data-parallel traffic by implementation: what each stage moves per micro-batch and per step.

With gradient accumulation over ``m`` micro-batches, the ZeRO stages differ not only in
memory (:func:`~course.core.memory.model_state_breakdown`) but in *when* they talk:

==========  =====================================  ==========================  ===============
stage       implementation                          per micro-batch             per step
==========  =====================================  ==========================  ===============
0           PyTorch DDP, Megatron local DDP        --                          all-reduce (1)
1           Megatron distributed optimizer,         --                          reduce-scatter +
            DeepSpeed ZeRO-1                                                    all-gather (1)
2           DeepSpeed ZeRO-2, FSDP SHARD_GRAD_OP    reduce-scatter (0.5)        all-gather (0.5)
3           DeepSpeed ZeRO-3, FSDP FULL_SHARD       all-gather (fwd) +          --
                                                    all-gather (bwd) +
                                                    reduce-scatter (1.5)
==========  =====================================  ==========================  ===============

The numbers in brackets are *all-reduce equivalents*: one ring reduce-scatter or one
ring all-gather of a vector costs half a ring all-reduce of it (Thakur et al. 2005), so
the cost of every stage is a multiple of one all-reduce of the GPU's 16-bit gradients.
ZeRO-3 therefore moves ``1.5 m`` all-reduces per step, not 1.5: it re-gathers every
layer's weights for the forward *and* the backward pass of every micro-batch
(Rajbhandari et al. 2020, sec. 7.2 counts 1.5x for one forward/backward; Zhao et al.
2023, PyTorch FSDP, sec. 3.2: FULL_SHARD frees gathered weights after each use, so
accumulation repeats the gathers). ZeRO-2 reduce-scatters each micro-batch's gradients
into the owner's shard (DeepSpeed ``stage_1_and_2.py`` reduces in every backward; only
the shard is kept, so it cannot accumulate full gradients locally).

Overlap: the implementations prefetch one layer ahead (DeepSpeed
``stage3_prefetch_bucket_size``, FSDP ``forward_prefetch``/``BACKWARD_PRE``), so per-layer
collectives overlap the neighbouring layer's compute; :func:`zero_exposed_time` uses
:func:`~course.core.data_parallel.exposed_comm_time` with one bucket per layer.

DeepSpeed refuses ZeRO-2/3 together with its pipeline engine; Megatron-LM's distributed
optimizer (ZeRO-1) runs with pipelines. That is a framework rule, not physics:
:data:`FRAMEWORK_NOTES` holds the sentence the planner shows as a note.
"""

from __future__ import annotations

import numpy as np

from . import _validate as v
from . import data_parallel as _dp

__all__ = ["ZERO_ALLREDUCE_EQUIVALENTS", "FRAMEWORK_NOTES", "zero_allreduce_equivalents",
           "zero_traffic_bytes", "zero_exposed_time", "sharded_traffic_time"]

#: zero stage -> (all-reduce equivalents per micro-batch, per step); see the module table.
ZERO_ALLREDUCE_EQUIVALENTS = {0: (0.0, 1.0), 1: (0.0, 1.0), 2: (0.5, 0.5), 3: (1.5, 0.0)}

#: Framework rules that are not physics, shown as notes (code -> sentence).
FRAMEWORK_NOTES = {
    "deepspeed_zero_with_pipeline": (
        "DeepSpeed's pipeline engine accepts only ZeRO-1; ZeRO-2/3 with PP needs a framework "
        "that shards inside the pipeline (the traffic above is what it would move)."),
}


def _stage(zero_stage):
    z = v.integer("zero_stage", zero_stage, minimum=0)
    if (z > 3).any():
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3; got {zero_stage!r}")
    return z.astype(np.int64)


def zero_allreduce_equivalents(zero_stage):
    """All-reduce equivalents a ZeRO stage moves per micro-batch and per step.

    Parameters
    ----------
    zero_stage : int or array_like of int in 0..3

    Returns
    -------
    (ndarray, ndarray)
        Per micro-batch and per step, in units of one ring all-reduce of the GPU's
        gradients (0, 1), (0, 1), (0.5, 0.5), (1.5, 0) for stages 0-3.

    Source: Rajbhandari et al. 2020, sec. 7.2 (ZeRO-1/2: reduce-scatter + all-gather =
    one all-reduce; ZeRO-3: 1.5x per forward/backward); Zhao et al. 2023 (FSDP
    FULL_SHARD / SHARD_GRAD_OP); Thakur et al. 2005 (reduce-scatter = all-gather = half
    an all-reduce).

    Examples
    --------
    >>> per_mb, per_step = zero_allreduce_equivalents([0, 1, 2, 3])
    >>> per_mb.tolist(), per_step.tolist()
    ([0.0, 0.0, 0.5, 1.5], [1.0, 1.0, 0.5, 0.0])
    """
    z = _stage(zero_stage)
    table = np.array([ZERO_ALLREDUCE_EQUIVALENTS[k] for k in range(4)])
    return table[z, 0], table[z, 1]


def zero_traffic_bytes(gradient_bytes, dp, zero_stage=0, num_microbatches=1):
    """Bytes each GPU sends per step for its ZeRO stage over a ring of ``dp`` ranks.

    Formula: ``(e_mb * m + e_step) * 2 (dp - 1) / dp * gradient_bytes`` with the
    all-reduce equivalents ``e`` of :func:`zero_allreduce_equivalents`.

    Parameters
    ----------
    gradient_bytes : float or array_like
        16-bit gradients (= 16-bit weights) of this GPU's model shard, bytes, ``>= 0``.
    dp : int or array_like of int
        Data-parallel ranks, ``>= 1``.
    zero_stage : int or array_like of int in 0..3
    num_microbatches : int or array_like of int
        Micro-batches accumulated per step ``m``, ``>= 1``.

    Returns
    -------
    float or ndarray
        Bytes.

    Source: as :func:`zero_allreduce_equivalents`; ring traffic 2(p-1)/p n (Patarasuk &
    Yuan 2009).

    Examples
    --------
    ZeRO-3, 1 GB of gradients, 4 ranks, 8 micro-batches: 1.5 x 8 x 2 x 3/4 x 1 GB.

    >>> zero_traffic_bytes(1e9, 4, 3, 8) / 1e9
    18.0
    >>> zero_traffic_bytes(1e9, 4, 1, 8) / 1e9   # ZeRO-1 talks once per step
    1.5
    """
    g = v.non_negative("gradient_bytes", gradient_bytes)
    d = v.integer("dp", dp, minimum=1)
    m = v.integer("num_microbatches", num_microbatches, minimum=1)
    per_mb, per_step = zero_allreduce_equivalents(zero_stage)
    return v.scalar_or_array((per_mb * m + per_step) * 2.0 * (d - 1) / d * g)


def zero_exposed_time(allreduce_seconds, zero_stage, num_microbatches, forward_seconds,
                      backward_seconds, layers, overlap=True):
    """Seconds of ZeRO data-parallel traffic left on the critical path of one step.

    ``allreduce_seconds`` is one all-reduce of this GPU's gradients over the DP group.
    Per-step traffic hides behind the last micro-batch's backward pass, per-micro-batch
    traffic behind every micro-batch's own passes, each with one bucket per layer
    (prefetch one layer ahead):

    - stages 0-1: ``exposed(T_bwd, 1 x AR)``;
    - stage 2: ``m * exposed(T_bwd, 0.5 AR) + exposed(T_bwd, 0.5 AR)``;
    - stage 3: ``m * [exposed(T_fwd, 0.5 AR) + exposed(T_bwd, 1 AR)]``,

    with ``exposed`` = :func:`~course.core.data_parallel.exposed_comm_time`. Without
    overlap everything is exposed.

    Parameters
    ----------
    allreduce_seconds : float or array_like, >= 0
        One all-reduce of the GPU's 16-bit gradients over its DP group.
    zero_stage : int or array_like of int in 0..3
    num_microbatches : int or array_like of int, >= 1
    forward_seconds, backward_seconds : float or array_like, > 0
        Forward and backward (with recomputation) time of one micro-batch on this GPU.
    layers : int or array_like of int, >= 1
        Layers on this GPU (buckets).
    overlap : bool, optional

    Returns
    -------
    float or ndarray
        Seconds.

    Source: Rajbhandari et al. 2020, sec. 7.2; Zhao et al. 2023, sec. 3.3 (FSDP
    prefetching); Li et al. 2020 (bucketed overlap).

    Examples
    --------
    A 1 s all-reduce, 4 layers, 8 micro-batches of 0.1 s forward and 0.2 s backward:
    ZeRO-3 waits for each layer's weights in every pass.

    >>> round(float(zero_exposed_time(1.0, 3, 8, 0.1, 0.2, 4)), 6)
    10.2
    >>> round(float(zero_exposed_time(1.0, 1, 8, 0.1, 0.2, 4)), 6)
    0.85
    """
    ar = v.non_negative("allreduce_seconds", allreduce_seconds)
    m = v.integer("num_microbatches", num_microbatches, minimum=1)
    tf = v.positive("forward_seconds", forward_seconds)
    tb = v.positive("backward_seconds", backward_seconds)
    k = v.integer("layers", layers, minimum=1)
    z = _stage(zero_stage)
    per_mb, per_step = zero_allreduce_equivalents(z)
    if not overlap:
        return v.scalar_or_array((per_mb * m + per_step) * ar)

    def exposed(window, comm):
        return np.where(comm > 0, _dp.exposed_comm_time(window, np.maximum(comm, 0.0), k), 0.0)

    # ZeRO-3: one all-gather in the forward, an all-gather and a reduce-scatter in the backward
    fwd_share = np.where(z == 3, 0.5, 0.0)
    bwd_share = per_mb - fwd_share
    total = np.zeros(np.broadcast(ar, m, tf, tb, k, z).shape)
    for window, share, times in ((tf, fwd_share, m), (tb, bwd_share, m), (tb, per_step, 1)):
        if v.any_true(share > 0):  # stages 0-1 talk once per step: skip the empty parts
            total = total + times * exposed(window, share * ar)
    return v.scalar_or_array(total)


def sharded_traffic_time(gather_seconds, reduce_seconds, zero_stage, num_microbatches, forward_seconds,
                         backward_seconds, layers, overlap=True, reshard_after_forward=True):
    """Total and exposed seconds of ZeRO / FSDP traffic when gathers and reductions move different widths.

    FSDP2 gathers parameters in their compute dtype (BF16) and reduce-scatters gradients in the
    reduce dtype (often FP32); Megatron's distributed optimizer reduce-scatters FP32 gradients and
    all-gathers BF16 parameters. With ``G`` one all-gather of this GPU's parameters over the DP group
    (``gather_seconds``) and ``R`` one reduce-scatter of its gradients (``reduce_seconds``), per step:

    - stage 0: all-reduce ``2 R`` once, hidden behind the last backward;
    - stage 1: ``R + G`` once (reduce-scatter, optimizer step on the shard, all-gather);
    - stage 2: ``R`` every micro-batch's backward, ``G`` once;
    - stage 3: ``G`` in every forward, ``G`` again in every backward unless ``reshard_after_forward``
      is off (FSDP2 ``reshard_after_forward=False``; PyTorch FSDP ``SHARD_GRAD_OP``), and ``R``.

    With ``G = R = AR / 2`` this is :func:`zero_exposed_time`. Each window hides one bucket per layer
    (:func:`~course.core.data_parallel.exposed_comm_time`); without overlap everything is exposed.

    Parameters
    ----------
    gather_seconds, reduce_seconds : float or array_like, >= 0
        One all-gather of the GPU's parameters and one reduce-scatter of its gradients over its DP group.
    zero_stage : int or array_like of int in 0..3
    num_microbatches : int or array_like of int, >= 1
    forward_seconds, backward_seconds : float or array_like, > 0
        Forward and backward time of one micro-batch on this GPU.
    layers : int or array_like of int, >= 1
        Buckets (layers on this GPU).
    overlap : bool, optional
    reshard_after_forward : bool, optional
        ZeRO-3 only: free the gathered parameters after the forward pass (and gather them again for the
        backward).

    Returns
    -------
    (ndarray, ndarray)
        Total seconds of traffic per step and the part left exposed.

    Source: Rajbhandari et al. 2020, sec. 7.2 (the traffic of each stage); Zhao et al. 2023 (PyTorch FSDP:
    ``FULL_SHARD`` and ``SHARD_GRAD_OP``); PyTorch ``fully_shard`` documentation (``reshard_after_forward``,
    ``MixedPrecisionPolicy(param_dtype, reduce_dtype)``); Thakur et al. 2005 (all-gather = reduce-scatter =
    half an all-reduce).

    Examples
    --------
    Half a second each, 4 layers, 8 micro-batches of 0.1 s forward and 0.2 s backward: the same as
    :func:`zero_exposed_time` with a 1 s all-reduce; without resharding ZeRO-3 saves the backward gathers.

    >>> [round(float(x), 6) for x in sharded_traffic_time(0.5, 0.5, 3, 8, 0.1, 0.2, 4)]
    [12.0, 10.2]
    >>> [round(float(x), 6) for x in sharded_traffic_time(0.5, 0.5, 3, 8, 0.1, 0.2, 4, reshard_after_forward=False)]
    [8.0, 6.2]
    """
    g = v.non_negative("gather_seconds", gather_seconds)
    r = v.non_negative("reduce_seconds", reduce_seconds)
    m = v.integer("num_microbatches", num_microbatches, minimum=1)
    tf = v.positive("forward_seconds", forward_seconds)
    tb = v.positive("backward_seconds", backward_seconds)
    k = v.integer("layers", layers, minimum=1)
    z = _stage(zero_stage)
    again = 1.0 if reshard_after_forward else 0.0
    # (window, seconds, times per step) of each part, by stage
    fwd_mb = np.where(z == 3, g, 0.0)
    bwd_mb = np.where(z == 3, again * g + r, np.where(z == 2, r, 0.0))
    step = np.where(z == 0, 2.0 * r, np.where(z == 1, r + g, np.where(z == 2, g, 0.0)))
    total = m * (fwd_mb + bwd_mb) + step
    if not overlap:
        return v.scalar_or_array(total), v.scalar_or_array(total)

    def exposed(window, comm):
        return np.where(comm > 0, _dp.exposed_comm_time(window, np.maximum(comm, 0.0), k), 0.0)

    # each part is one of a few traffic widths picked by the stage: the exposure of each width is computed on
    # the axes it depends on and added only where the stage picks it (the same sums, part by part, as adding
    # the exposure of the picked part; a sweep's stage axis neither multiplies the work nor the temporaries)
    parts = ((tf, fwd_mb, m, ((3, g),)), (tb, bwd_mb, m, ((2, r), (3, again * g + r))),
             (tb, step, 1, ((0, 2.0 * r), (1, r + g), (2, g))))
    hidden = np.zeros(np.broadcast(g, r, m, tf, tb, k, z).shape)
    for window, part, times, widths in parts:
        if not v.any_true(part > 0):
            continue
        for stage, comm in widths:
            at = z == stage
            if v.any_true(at):
                np.add(hidden, times * exposed(window, comm), out=hidden, where=at)
    return v.scalar_or_array(total), v.scalar_or_array(hidden)

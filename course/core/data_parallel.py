"""Data parallelism: gradient accumulation, overlap, comm/compute ratio, MFU, scaling.

All times are seconds, compute is FLOP and FLOP/s, batches are counted in samples
(sequences). Every function broadcasts over NumPy arrays.

The step-time model is the "iron law" of data-parallel scaling used by Lab 05:
a step costs its compute plus the part of the gradient all-reduce that is not
hidden behind the backward pass::

    T_step = T_compute + T_comm - T_overlapped

Sources: Goyal et al. 2017 (accumulation and effective batch); Li et al. 2020,
"PyTorch Distributed: Experiences on Accelerating Data Parallel Training",
VLDB 13(12) (gradient buckets, overlap); Chowdhery et al. 2022, PaLM, appendix B
(model FLOPs utilization); workbook chapters 2 and 4.
"""

from __future__ import annotations

import numpy as np

from . import _validate as v
from .collectives import hierarchical_allreduce_time
from .layer_cost import backward_share as _backward_share
from .units import MiB

__all__ = [
    "data_parallel_degree",
    "effective_batch",
    "required_accum_steps",
    "accumulation_step_time",
    "allreduce_time_saved",
    "samples_per_second",
    "compute_time",
    "bucket_count",
    "exposed_comm_time",
    "overlap_fraction",
    "data_parallel_step_time",
    "data_parallel_step_curve",
    "BACKWARD_SHARE",
    "comm_compute_ratio",
    "mfu",
    "speedup",
    "scaling_efficiency",
    "data_parallel_speedup",
    "marginal_speedup",
    "diminishing_returns_gpus",
    "DDP_BUCKET_BYTES",
]

#: Backward share of training FLOPs without recomputation: 4ND of 6ND (Kaplan et al.
#: 2020, section 2.1), the planner's own share (:func:`~course.core.layer_cost.backward_share`).
BACKWARD_SHARE = _backward_share("none")

#: PyTorch DistributedDataParallel default bucket size, ``bucket_cap_mb=25``
#: (interpreted as MiB). Source: torch.nn.parallel.DistributedDataParallel docs.
DDP_BUCKET_BYTES = 25 * MiB


def data_parallel_degree(gpus, tp=1, pp=1):
    """Data-parallel degree left after tensor and pipeline parallelism: ``DP = GPUs / (TP * PP)``.

    Raises ``ValueError`` when ``TP * PP`` does not divide the GPU count (then
    ``TP * PP * DP != GPUs`` for every whole DP).

    Parameters
    ----------
    gpus : int or array_like of int
        GPUs in the job, ``>= 1``.
    tp, pp : int or array_like of int, optional
        Tensor- and pipeline-parallel sizes, ``>= 1``; ``tp * pp`` must divide ``gpus``.

    Returns
    -------
    int or ndarray of int
        Model replicas (data-parallel ranks).

    Notes
    -----
    Source: Narayanan et al. 2021 (SC21), section 2.3 (``n = p * t * d``);
    workbook exercise 9.1.

    Examples
    --------
    >>> data_parallel_degree(16384, tp=8, pp=16)
    128
    """
    n = v.integer("gpus", gpus)
    model_parallel = v.integer("tp", tp) * v.integer("pp", pp)
    if np.any(n % model_parallel):
        raise ValueError(
            f"gpus must be a multiple of tp * pp so that TP x PP x DP = GPUs; got gpus={gpus!r}, "
            f"tp * pp={model_parallel.tolist()!r}"
        )
    out = n // model_parallel
    return int(out) if out.ndim == 0 else out


def effective_batch(micro_batch, accum_steps, dp):
    """Samples per optimizer step (the global or effective batch).

    ``B_eff = micro_batch * accum_steps * dp``

    Parameters
    ----------
    micro_batch : int or array, >= 1
        Samples per GPU per forward/backward pass.
    accum_steps : int or array, >= 1
        Micro-batches accumulated before one optimizer step.
    dp : int or array, >= 1
        Data-parallel degree (model replicas).

    Returns
    -------
    int or ndarray of int
        Samples per optimizer step.

    Notes
    -----
    Source: workbook chapter 2; Goyal et al. 2017, "Accurate, Large Minibatch SGD".

    Examples
    --------
    >>> effective_batch(4, 64, 8)
    2048
    """
    mb = v.integer("micro_batch", micro_batch)
    acc = v.integer("accum_steps", accum_steps)
    n = v.integer("dp", dp)
    out = mb * acc * n
    return int(out) if out.ndim == 0 else out


def required_accum_steps(target_batch, micro_batch, dp, exact=False):
    """Accumulation steps needed to reach at least ``target_batch`` samples.

    ``accum_steps = ceil(target_batch / (micro_batch * dp))``

    Every target is reachable by rounding up; the effective batch then equals
    the target only when ``micro_batch * dp`` divides it.

    Parameters
    ----------
    target_batch : int or array, >= 1
        Wanted samples per optimizer step.
    micro_batch : int or array, >= 1
        Samples per GPU per pass.
    dp : int or array, >= 1
        Data-parallel degree.
    exact : bool, default False
        If True, raise ``ValueError`` when ``micro_batch * dp`` does not divide
        ``target_batch`` (the target cannot be hit exactly).

    Returns
    -------
    int or ndarray of int

    Notes
    -----
    Source: workbook exercises 2.1 and 2.4.

    Examples
    --------
    >>> required_accum_steps(2048, 4, 8)
    64
    >>> required_accum_steps(100, 4, 8)   # 4 steps give 128 >= 100
    4
    """
    target = v.integer("target_batch", target_batch)
    per_pass = v.integer("micro_batch", micro_batch) * v.integer("dp", dp)
    steps = -(-target // per_pass)  # integer ceil
    if exact and np.any(target % per_pass):
        raise ValueError(
            "target_batch must be a multiple of micro_batch * dp when exact=True, "
            f"got target_batch={target_batch!r}, micro_batch * dp={per_pass.tolist()!r}"
        )
    return int(steps) if steps.ndim == 0 else steps


def accumulation_step_time(micro_batch_seconds, accum_steps, allreduce_seconds=0.0,
                           optimizer_seconds=0.0):
    """Wall-clock seconds of one optimizer step with gradient accumulation.

    ``T = accum_steps * t_micro + t_allreduce + t_optimizer``

    The all-reduce runs once per optimizer step, after the last micro-batch,
    and is not overlapped here (use :func:`exposed_comm_time` for overlap).

    Parameters
    ----------
    micro_batch_seconds : float or array, > 0
        Forward + backward time of one micro-batch.
    accum_steps : int or array, >= 1
    allreduce_seconds, optimizer_seconds : float or array, >= 0

    Returns
    -------
    float or ndarray, seconds

    Notes
    -----
    Source: workbook exercise 2.3.

    Examples
    --------
    >>> accumulation_step_time(0.120, 64, 0.050, 0.001)
    7.731
    """
    t = v.positive("micro_batch_seconds", micro_batch_seconds)
    acc = v.integer("accum_steps", accum_steps)
    ar = v.non_negative("allreduce_seconds", allreduce_seconds)
    opt = v.non_negative("optimizer_seconds", optimizer_seconds)
    return v.scalar_or_array(acc * t + ar + opt)


def allreduce_time_saved(allreduce_seconds, accum_steps):
    """Communication time saved per optimizer step by accumulating gradients.

    Without accumulation the same samples need ``accum_steps`` all-reduces;
    with it, one. ``saved = (accum_steps - 1) * t_allreduce``.

    Parameters
    ----------
    allreduce_seconds : float or array_like
        Time of one gradient all-reduce, seconds, ``>= 0``.
    accum_steps : int or array_like of int
        Micro-batches accumulated per optimizer step, ``>= 1``.

    Returns
    -------
    float or ndarray
        Seconds saved per optimizer step.

    Notes
    -----
    Source: workbook exercise 2.2.

    Examples
    --------
    >>> round(allreduce_time_saved(0.050, 64), 6)   # workbook 2.2: 3150 ms
    3.15
    """
    ar = v.non_negative("allreduce_seconds", allreduce_seconds)
    acc = v.integer("accum_steps", accum_steps)
    return v.scalar_or_array((acc - 1) * ar)


def samples_per_second(samples, seconds):
    """Throughput: samples processed divided by the seconds they took.

    Parameters
    ----------
    samples : float or array_like
        Samples (sequences) processed, ``>= 0``.
    seconds : float or array_like
        Wall-clock time they took, ``> 0``.

    Returns
    -------
    float or ndarray
        Samples per second.

    Notes
    -----
    Source: definition of throughput; workbook exercise 2.3.

    Examples
    --------
    >>> round(samples_per_second(2048, 7.731), 1)   # workbook 2.3
    264.9
    """
    n = v.non_negative("samples", samples)
    t = v.positive("seconds", seconds)
    return v.scalar_or_array(n / t)


def compute_time(flops, flops_per_second):
    """Seconds to execute ``flops`` at an *achieved* rate ``flops_per_second``.

    ``T = F / R``; for a peak ``P`` at utilization ``u`` pass ``R = u * P``.

    Parameters
    ----------
    flops : float or array_like
        Work, FLOP, ``>= 0``.
    flops_per_second : float or array_like
        Achieved rate, FLOP/s, ``> 0``.

    Returns
    -------
    float or ndarray
        Seconds.

    Notes
    -----
    Source: definition (time = work / rate); workbook exercise 4.4.

    Examples
    --------
    >>> round(compute_time(120e12, 0.5 * 989e12), 4)   # workbook 4.4: ~242 ms
    0.2427
    """
    f = v.non_negative("flops", flops)
    r = v.positive("flops_per_second", flops_per_second)
    return v.scalar_or_array(f / r)


def bucket_count(gradient_bytes, bucket_bytes=DDP_BUCKET_BYTES):
    """Number of gradient buckets: ``ceil(gradient_bytes / bucket_bytes)``.

    PyTorch DDP packs gradients into buckets (default 25 MiB) and launches one
    all-reduce per bucket as soon as all of its gradients are ready (Li et al.
    2020, sections 3.2.2-3.2.3).

    Parameters
    ----------
    gradient_bytes : float or array_like
        Bytes of gradients to all-reduce, ``> 0``.
    bucket_bytes : float or array_like, optional
        Bucket capacity, bytes, ``> 0`` (default :data:`DDP_BUCKET_BYTES`, 25 MiB).

    Returns
    -------
    int or ndarray of int
        Buckets (all-reduce calls per step).

    Notes
    -----
    Source: Li et al. 2020, VLDB 13(12), section 3.2.2 (bucketing);
    PyTorch DDP ``bucket_cap_mb``.

    Examples
    --------
    >>> bucket_count(20e9)   # 10B params of FP16 gradients
    763
    """
    g = v.positive("gradient_bytes", gradient_bytes)
    b = v.positive("bucket_bytes", bucket_bytes)
    out = np.ceil(g / b).astype(np.int64)
    return int(out) if out.ndim == 0 else out


def exposed_comm_time(backward_seconds, comm_seconds, buckets):
    """Communication time left on the critical path after overlapping with backward.

    The backward pass produces ``k`` equal buckets, one every ``t_b = T_bwd / k``
    seconds (last layer first). Each bucket's all-reduce takes
    ``t_c = T_comm / k``, starts when its bucket is ready and the previous
    all-reduce has finished (one communication stream). The last all-reduce
    then ends ``t_c + (k - 1) * max(0, t_c - t_b)`` after the backward pass::

        exposed = t_c + (k - 1) * max(0, t_c - t_b)

    ``k = 1`` means no overlap (exposed = T_comm). When each bucket's
    all-reduce is shorter than the backward of one bucket, only the last one is
    exposed.

    Parameters
    ----------
    backward_seconds : float or array, > 0
        Backward-pass time of the whole model on one GPU.
    comm_seconds : float or array, >= 0
        Total all-reduce time of all gradients.
    buckets : int or array, >= 1
        Number of equal buckets (layers in workbook 4.2).

    Returns
    -------
    float or ndarray, seconds

    Notes
    -----
    Sources: Li et al. 2020 (PyTorch DDP bucketing); workbook exercise 4.2.

    Examples
    --------
    >>> round(exposed_comm_time(0.200, 0.060, 40), 6)   # 1.5 ms exposed
    0.0015
    >>> exposed_comm_time(0.200, 0.060, 1)              # no buckets: no overlap
    0.06
    """
    tb = v.positive("backward_seconds", backward_seconds)
    tc_total = v.non_negative("comm_seconds", comm_seconds)
    k = v.integer("buckets", buckets)
    tc = tc_total / k
    return v.scalar_or_array(tc + (k - 1) * np.maximum(0.0, tc - tb / k))


def overlap_fraction(backward_seconds, comm_seconds, buckets):
    """Share of the all-reduce time hidden behind the backward pass, in [0, 1).

    ``1 - exposed_comm_time / comm_seconds`` (see :func:`exposed_comm_time`).

    Parameters
    ----------
    backward_seconds : float or array_like
        Backward-pass time, seconds, ``> 0``.
    comm_seconds : float or array_like
        Total all-reduce time, seconds, ``> 0``.
    buckets : int or array_like of int
        Equal buckets, ``>= 1``.

    Returns
    -------
    float or ndarray
        Dimensionless, in ``[0, 1)``.

    Notes
    -----
    Source: Li et al. 2020, section 3.2.3 (overlap with backward); workbook 4.2.

    Examples
    --------
    >>> round(overlap_fraction(0.200, 0.060, 40), 4)   # workbook 4.2: 97.5 %
    0.975
    """
    c = v.positive("comm_seconds", comm_seconds)
    return v.scalar_or_array(1.0 - exposed_comm_time(backward_seconds, c, buckets) / c)


def data_parallel_step_time(compute_seconds, comm_seconds, overlap=0.0):
    """Step time of data-parallel training: ``T_compute + (1 - overlap) * T_comm``.

    Parameters
    ----------
    compute_seconds : float or array, > 0
        Forward + backward (+ optimizer) time per GPU.
    comm_seconds : float or array, >= 0
        Gradient all-reduce time.
    overlap : float or array in [0, 1]
        Share of the all-reduce hidden behind compute (:func:`overlap_fraction`).

    Returns
    -------
    float or ndarray
        Seconds per step.

    Notes
    -----
    Source: Lab 05 reading, "iron law of scale"
    ``T_step = T_compute + T_comm - T_overlap``.

    Examples
    --------
    >>> round(data_parallel_step_time(0.242, 0.350), 3)    # workbook 4.4, no overlap
    0.592
    """
    tc = v.positive("compute_seconds", compute_seconds)
    tm = v.non_negative("comm_seconds", comm_seconds)
    o = v.fraction("overlap", overlap)
    return v.scalar_or_array(tc + (1.0 - o) * tm)


def comm_compute_ratio(comm_seconds, compute_seconds):
    """Communication-to-computation ratio ``T_comm / T_compute`` (dimensionless).

    Above 1 a non-overlapped step spends more time communicating than
    computing. Get ``comm_seconds`` from :func:`course.core.allreduce_time` and
    ``compute_seconds`` from :func:`compute_time`.

    Parameters
    ----------
    comm_seconds : float or array_like
        Communication time, seconds, ``>= 0``.
    compute_seconds : float or array_like
        Computation time, seconds, ``> 0``.

    Returns
    -------
    float or ndarray
        Dimensionless.

    Notes
    -----
    Source: workbook exercises 4.4 and 4.5; Lab 05 Act I.

    Examples
    --------
    >>> round(comm_compute_ratio(0.350, 120e12 / 495e12), 2)   # workbook 4.4
    1.44
    """
    tm = v.non_negative("comm_seconds", comm_seconds)
    tc = v.positive("compute_seconds", compute_seconds)
    return v.scalar_or_array(tm / tc)


def mfu(model_flops, seconds, peak_flops_per_second, n_gpus=1):
    """Model FLOPs utilization: ``MFU = F_model / (T * N * P_peak)``.

    ``model_flops`` counts only the FLOPs the model needs (for a transformer
    ``6 * params * tokens``; not recomputation), ``seconds`` is the measured
    (or modelled) wall-clock time of those FLOPs on ``n_gpus`` GPUs, and
    ``peak_flops_per_second`` the dense peak of one GPU in the precision used
    (H100 SXM BF16: 989 TFLOPS; 1979 is with sparsity, errata 1).

    Parameters
    ----------
    model_flops : float or array_like
        FLOP the model needs, ``>= 0``.
    seconds : float or array_like
        Wall-clock time, ``> 0``.
    peak_flops_per_second : float or array_like
        Dense peak FLOP/s of one GPU, ``> 0``.
    n_gpus : int or array_like of int, optional
        GPUs, ``>= 1``.

    Returns
    -------
    float or ndarray
        Dimensionless, 1 = every GPU at dense peak all the time.

    Notes
    -----
    Source: Chowdhery et al. 2022, PaLM, appendix B. PaLM's model FLOPs per
    token add the attention term ``12 L H Q T`` to ``6 N``; the course counts
    ``6 N`` only, as the workbook and :func:`course.core.training_flops` do.

    Examples
    --------
    >>> round(mfu(120e12, 0.592, 989e12), 3)   # workbook 4.4: 50 % drops to ~20 %
    0.205
    """
    f = v.non_negative("model_flops", model_flops)
    t = v.positive("seconds", seconds)
    p = v.positive("peak_flops_per_second", peak_flops_per_second)
    n = v.integer("n_gpus", n_gpus)
    return v.scalar_or_array(f / (t * n * p))


def speedup(throughput_n, throughput_one):
    """Speed-up ``S = X(N) / X(1)`` from throughputs (samples/s) on N and on 1 GPU.

    Throughput covers both strong scaling (fixed global batch, shorter steps)
    and weak scaling (fixed per-GPU batch, more samples per step).

    Parameters
    ----------
    throughput_n : float or array_like
        Samples/s on N GPUs, ``>= 0``.
    throughput_one : float or array_like
        Samples/s on one GPU, ``> 0``.

    Returns
    -------
    float or ndarray
        Dimensionless.

    Notes
    -----
    Source: Amdahl 1967 / Gustafson 1988 (speed-up as a throughput ratio); solver tutorial.

    Examples
    --------
    >>> speedup(6000.0, 100.0)
    60.0
    """
    xn = v.non_negative("throughput_n", throughput_n)
    x1 = v.positive("throughput_one", throughput_one)
    return v.scalar_or_array(xn / x1)


def scaling_efficiency(throughput_n, throughput_one, n):
    """Scaling efficiency ``eta = S / N = X(N) / (N * X(1))``; 1 is ideal (linear).

    Parameters
    ----------
    throughput_n : float or array_like
        Samples/s on ``n`` GPUs, ``>= 0``.
    throughput_one : float or array_like
        Samples/s on one GPU, ``> 0``.
    n : int or array_like of int
        GPUs, ``>= 1``.

    Returns
    -------
    float or ndarray
        Dimensionless, 1 = linear scaling.

    Notes
    -----
    Source: solver tutorial ("80 % efficiency on 256 GPUs = about 205 GPUs'
    worth of work"); Lab 05 plan, Part 1.

    Examples
    --------
    >>> scaling_efficiency(6000.0, 100.0, 64)
    0.9375
    """
    s = speedup(throughput_n, throughput_one)
    n = v.integer("n", n)
    return v.scalar_or_array(np.asarray(s) / n)


def data_parallel_speedup(n, compute_seconds, comm_seconds, overlap=0.0):
    """Weak-scaling speed-up of data parallelism over one GPU.

    Each of ``n`` GPUs processes the same per-GPU batch in ``compute_seconds``
    and then waits for the exposed all-reduce; one GPU needs no all-reduce::

        S(N) = N * T_compute / (T_compute + (1 - overlap) * T_comm(N))

    ``comm_seconds`` is ``T_comm(N)``, usually an array over ``n`` from
    :func:`course.core.allreduce_time`; it is ignored where ``n == 1``.

    Parameters
    ----------
    n : int or array_like of int
        GPUs, ``>= 1``.
    compute_seconds : float or array_like
        Per-GPU compute time of one step, seconds, ``> 0``.
    comm_seconds : float or array_like
        Gradient all-reduce time on ``n`` GPUs, seconds, ``>= 0``.
    overlap : float or array_like, optional
        Share of the all-reduce hidden behind compute, in ``[0, 1]``.

    Returns
    -------
    float or ndarray
        Speed-up over one GPU, dimensionless.

    Notes
    -----
    Source: Lab 05 reading, iron law of scale; Gustafson 1988 (weak scaling).

    Examples
    --------
    >>> data_parallel_speedup([1, 8, 64], 0.2, [0.0, 0.05, 0.2])
    array([ 1. ,  6.4, 32. ])
    """
    n_arr = v.integer("n", n)
    tc = v.positive("compute_seconds", compute_seconds)
    tm = v.non_negative("comm_seconds", comm_seconds)
    # one GPU has nothing to all-reduce
    step = data_parallel_step_time(tc, np.where(n_arr == 1, 0.0, tm), overlap)
    return v.scalar_or_array(n_arr * tc / np.asarray(step))


def marginal_speedup(gpus, speedups):
    """Speed-up gained per added GPU between consecutive points of a scaling curve.

    ``m_i = (S_{i+1} - S_i) / (N_{i+1} - N_i)``, in units of one GPU's
    throughput: 1.0 means the added GPUs each did a full GPU's work (ideal),
    0.5 means each added GPU delivered half a GPU.

    Parameters
    ----------
    gpus : 1-D array of int, strictly increasing, >= 1
    speedups : 1-D array, same length, >= 0

    Returns
    -------
    ndarray, length ``len(gpus) - 1``
        ``m_i`` belongs to the step from ``gpus[i]`` to ``gpus[i + 1]``.

    Notes
    -----
    Source: Lab 05 plan, Part 1 (marginal speed-up of one more GPU).

    Examples
    --------
    >>> marginal_speedup([1, 2, 4], [1.0, 1.9, 3.1])
    array([0.9, 0.6])
    """
    n, s = _curve(gpus, speedups)
    return np.diff(s) / np.diff(n)


def diminishing_returns_gpus(gpus, speedups, threshold=0.5):
    """Point of diminishing returns: the GPU count beyond which one more GPU adds < threshold.

    Definition: the smallest ``gpus[i]`` such that going on to ``gpus[i + 1]``
    adds less than ``threshold`` (default 0.5) of a single GPU's throughput per
    added GPU, i.e. ``marginal_speedup(gpus, speedups)[i] < threshold``. On a
    curve sampled at every integer N this is the N at which adding the
    (N+1)-th GPU yields a marginal speed-up ``S(N+1) - S(N) < 0.5``; on a
    sparser curve (8, 16, 32, ...) the marginal speed-up is the average over
    the step.

    Returns
    -------
    int or None
        ``None`` if the marginal speed-up never drops below ``threshold`` on the
        sampled range (the point lies beyond the curve).

    Parameters
    ----------
    gpus : 1-D array_like of int
        GPU counts, strictly increasing, ``>= 1``.
    speedups : 1-D array_like
        Speed-up at each count, ``>= 0``, same length.
    threshold : float, optional
        Marginal speed-up per added GPU below which returns diminish, ``> 0``.

    Notes
    -----
    Source: Lab 05 plan, Part 1 reflection ("at what node count does adding a
    GPU provide less than a 0.5x marginal speedup?").

    Examples
    --------
    >>> n = np.arange(1, 33)
    >>> s = n / (1 + 0.05 * (n - 1))   # saturates at 20x; dS/dN = 0.5 near N = 8.6
    >>> diminishing_returns_gpus(n, s)
    9
    >>> diminishing_returns_gpus([1, 2, 4], [1.0, 2.0, 4.0]) is None   # linear
    True
    """
    t = v.positive("threshold", threshold)
    n, _ = _curve(gpus, speedups)
    below = np.flatnonzero(marginal_speedup(gpus, speedups) < t)
    return int(n[below[0]]) if below.size else None


def _curve(gpus, speedups):
    n = v.integer("gpus", gpus)
    s = v.non_negative("speedups", speedups)
    if n.ndim != 1 or n.size < 2:
        raise ValueError(f"gpus must be a 1-D array of at least 2 GPU counts, got {gpus!r}")
    if s.shape != n.shape:
        raise ValueError(f"speedups must have the same shape as gpus {n.shape}, got {s.shape}")
    if np.any(np.diff(n) <= 0):
        raise ValueError(f"gpus must be strictly increasing, got {gpus!r}")
    return n, s


def data_parallel_step_curve(flops_per_gpu, achieved_flops_per_second, gradient_bytes, gpus, gpus_per_node,
                             intra_bandwidth, inter_bandwidth, intra_latency=0.0, inter_latency=0.0,
                             overlap=False, buckets=None, backward_share=BACKWARD_SHARE,
                             latency_per_bucket=False):
    """Step of pure data parallelism on ``gpus`` GPUs: compute, all-reduce, exposed part, step.

    Each GPU computes its micro-batch (``flops_per_gpu`` at the achieved rate),
    then the gradients are all-reduced: a ring on the node's link while the job
    fits in one node, and beyond it the two-level all-reduce of
    :func:`~course.core.collectives.hierarchical_allreduce_time` (one NIC per
    GPU). With ``overlap`` the all-reduce runs in ``buckets`` behind the backward
    pass, exactly the planner's DP term (:func:`exposed_comm_time` of the
    backward time)::

        T_compute = flops / rate
        T_comm    = hierarchical_allreduce_time(M, min(N, g), N / min(N, g), ...)
        exposed   = exposed_comm_time(backward_share * T_compute, T_comm, buckets)   (or T_comm)
        T_step    = T_compute + exposed

    Parameters
    ----------
    flops_per_gpu : float or array_like
        FLOP of one GPU's step, ``> 0`` (``6 P b s``, :func:`~course.core.economics.training_flops`).
    achieved_flops_per_second : float or array_like
        Sustained FLOP/s of one GPU, ``> 0`` (peak times efficiency).
    gradient_bytes : float or array_like
        Bytes all-reduced per step, ``>= 0`` (bf16 gradients: ``2 P``).
    gpus : int or array_like of int
        Data-parallel GPUs ``N >= 1``: up to one node, then whole nodes.
    gpus_per_node : int
        ``g >= 1``.
    intra_bandwidth, inter_bandwidth : float
        Bytes/s per GPU in the node and across nodes, ``> 0``.
    intra_latency, inter_latency : float, optional
        Seconds per message, ``>= 0``.
    overlap : bool, optional
        Overlap the all-reduce with the backward pass.
    buckets : int, optional
        Buckets the gradients are all-reduced in. Default: PyTorch DDP's 25 MiB
        buckets (:func:`bucket_count`). The planner passes the layers of a
        pipeline stage instead.
    backward_share : float, optional
        Share of the step's compute that is backward, in ``(0, 1]`` (default 2/3).
    latency_per_bucket : bool, optional
        With ``overlap``, charge each bucket its own collective (``buckets`` all-reduces
        of ``M / buckets``: every one pays the latency terms), as the planner does.
        Default False: one all-reduce of the whole gradient, the source lab's model.

    The planner's DP term is this curve with ``buckets`` = the stage's layers,
    ``latency_per_bucket=True`` and the bandwidths it achieves
    (:func:`~course.core.collectives.achieved_bandwidth`, its collective efficiency);
    those three are the named differences.

    Returns
    -------
    dict
        ``compute_seconds`` (float), ``comm_seconds``, ``exposed_seconds`` and
        ``step_seconds`` (floats or arrays over ``gpus``).

    Notes
    -----
    Sources: Li et al. 2020 (DDP buckets, overlap with backward); Thakur,
    Rabenseifner & Gropp 2005 and Goyal et al. 2017, sec. 4 (ring and two-level
    all-reduce); Kaplan et al. 2020 (backward = 4ND of 6ND).

    Examples
    --------
    One node of 8 GPUs, 1 GB of gradients on 100 GB/s, 1 s of compute: ring
    ``2 x 7/8 x 1e9 / 100e9`` = 17.5 ms, no overlap.

    >>> c = data_parallel_step_curve(1e12, 1e12, 1e9, 8, 8, 100e9, 50e9)
    >>> round(c["comm_seconds"], 6), round(c["step_seconds"], 6)
    (0.0175, 1.0175)
    """
    compute = v.positive("flops_per_gpu", flops_per_gpu) / v.positive(
        "achieved_flops_per_second", achieved_flops_per_second)
    n = v.integer("gpus", gpus)
    g = int(v.integer("gpus_per_node", gpus_per_node))
    in_node = np.minimum(n, g)
    if np.any(n % in_node):
        raise ValueError(f"gpus must be at most gpus_per_node ({g}) or a multiple of it, got {gpus!r}")
    grad = v.non_negative("gradient_bytes", gradient_bytes)
    share = v.fraction("backward_share", backward_share, low_open=True)
    k = (bucket_count(grad) if buckets is None else buckets) if overlap else 1
    collectives = k if (overlap and latency_per_bucket) else 1
    comm = collectives * np.asarray(hierarchical_allreduce_time(
        grad / collectives, in_node, n // in_node, intra_bandwidth, inter_bandwidth, intra_latency, inter_latency),
        float)
    if overlap:
        exposed = np.asarray(exposed_comm_time(share * compute, comm, k), float)
    else:
        exposed = comm
    step = compute + exposed
    return {"compute_seconds": v.scalar_or_array(compute), "comm_seconds": v.scalar_or_array(comm),
            "exposed_seconds": v.scalar_or_array(exposed), "step_seconds": v.scalar_or_array(step)}

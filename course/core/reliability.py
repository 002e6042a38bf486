"""Checkpointing and failures: checkpoint size and write time, optimal interval, waste.

SI units: bytes, seconds, bytes/s; prices in dollars per GPU-hour. Every
function broadcasts.

Model: failures arrive as a Poisson process with mean time between failures
``M``; writing a checkpoint blocks training for ``delta`` seconds; after a
failure the job restarts (``restart_seconds``) and redoes the work since the
last checkpoint, on average half an interval.

Sources: J. W. Young 1974, "A first order approximation to the optimum
checkpoint interval", CACM 17(9); J. T. Daly 2006, "A higher order estimate of
the optimum checkpoint interval for restart dumps", FGCS 22(3), eq. 37;
workbook chapter 7.
"""

from __future__ import annotations

import numpy as np

from . import _validate as v
from .economics import gpu_cost, gpu_hours
from .memory import param_bytes_breakdown
from .sgd import async_speedup, sync_idle_fraction

__all__ = [
    "CHECKPOINT_BYTES_PER_PARAM",
    "checkpoint_bytes",
    "checkpoint_write_time",
    "young_interval",
    "daly_interval",
    "cluster_mtbf",
    "expected_lost_seconds",
    "waste_fraction",
    "failures_during",
    "waste_gpu_hours_per_failure",
    "waste_cost_per_failure",
    "waste_gpu_hours_per_hour",
    "sharded_checkpoint_monthly_savings",
    "SYNC_STRATEGIES",
    "COST_COMPONENTS",
    "strategy_monthly_costs",
    "waste_cost_per_hour",
]

_MIXED_PRECISION_ADAM = param_bytes_breakdown("fp16", "adam")

#: Bytes per parameter in a full mixed-precision Adam checkpoint: FP16 weights
#: (2) + FP32 master weights (4) + FP32 Adam momentum and variance (4 + 4) = 14.
#: Gradients are not saved. Source: Rajbhandari et al. 2020 (ZeRO), section 3.1.
CHECKPOINT_BYTES_PER_PARAM = _MIXED_PRECISION_ADAM["weights"] + _MIXED_PRECISION_ADAM["optimizer"]


def checkpoint_bytes(params, weight_bytes=2, master_bytes=4, optimizer_bytes=8, extra_bytes=0.0):
    """Size of a full training checkpoint.

    ``size = params * (weight_bytes + master_bytes + optimizer_bytes) + extra_bytes``

    Defaults are mixed-precision Adam: 2 + 4 + 8 = 14 bytes per parameter.

    Parameters
    ----------
    params : float or array, > 0
        Parameter count.
    weight_bytes, master_bytes, optimizer_bytes : float or array, >= 0
        Bytes per parameter of the working weights, the FP32 master copy and the
        optimizer states (Adam: momentum + variance, 4 + 4).
    extra_bytes : float or array, >= 0
        Step counter, LR scheduler, RNG states (negligible at scale).

    Returns
    -------
    float or ndarray, bytes

    Notes
    -----
    Source: Rajbhandari et al. 2020, section 3.1; workbook exercise 7.1.

    Examples
    --------
    >>> checkpoint_bytes(70e9) / 1e9   # workbook 7.1: 980 GB
    980.0
    """
    p = v.positive("params", params)
    per_param = (v.non_negative("weight_bytes", weight_bytes)
                 + v.non_negative("master_bytes", master_bytes)
                 + v.non_negative("optimizer_bytes", optimizer_bytes))
    extra = v.non_negative("extra_bytes", extra_bytes)
    return v.scalar_or_array(p * per_param + extra)


def checkpoint_write_time(checkpoint_bytes, bandwidth, writers=1):
    """Seconds to write a checkpoint: ``size / (bandwidth * writers)``.

    ``writers > 1`` models a sharded checkpoint in which each of ``writers``
    ranks writes its own shard at ``bandwidth`` in parallel (only while the
    storage system can absorb the aggregate rate).

    Parameters
    ----------
    checkpoint_bytes : float or array_like
        Checkpoint size, bytes, ``>= 0``.
    bandwidth : float or array_like
        Write bandwidth of one writer, bytes/s, ``> 0``.
    writers : int or array_like of int, optional
        Ranks writing shards in parallel, ``>= 1``.

    Returns
    -------
    float or ndarray
        Seconds (``delta`` of Young and Daly).

    Notes
    -----
    Source: definition (size / bandwidth); workbook exercise 7.2.

    Examples
    --------
    >>> checkpoint_write_time(980e9, 10e9)   # workbook 7.2: 98 s
    98.0
    """
    size = v.non_negative("checkpoint_bytes", checkpoint_bytes)
    bw = v.positive("bandwidth", bandwidth)
    w = v.integer("writers", writers)
    return v.scalar_or_array(size / (bw * w))


def young_interval(checkpoint_seconds, mtbf_seconds):
    """Young's optimal checkpoint interval ``tau = sqrt(2 * delta * M)``.

    First-order optimum of the waste ``delta / tau + tau / (2 M)`` (checkpoint
    cost per unit of work plus expected rework per unit of time); valid when
    ``delta << M``.

    Parameters
    ----------
    checkpoint_seconds : float or array, > 0
        ``delta``, time to write one checkpoint.
    mtbf_seconds : float or array, > 0
        ``M``, mean time between failures of the whole job.

    Returns
    -------
    float or ndarray, seconds of compute between checkpoints

    Notes
    -----
    Source: Young 1974, CACM 17(9).

    Examples
    --------
    >>> round(young_interval(98.0, 24 * 3600) / 60, 1)   # workbook 7.3: 68.6 min
    68.6
    """
    d = v.positive("checkpoint_seconds", checkpoint_seconds)
    m = v.positive("mtbf_seconds", mtbf_seconds)
    return v.scalar_or_array(np.sqrt(2.0 * d * m))


def daly_interval(checkpoint_seconds, mtbf_seconds):
    """Daly's higher-order optimal checkpoint interval (Daly 2006, eq. 37).

    For ``delta < 2M``::

        tau = sqrt(2 delta M) * [1 + (1/3) sqrt(delta / (2M)) + (1/9) (delta / (2M))] - delta

    and ``tau = M`` for ``delta >= 2M``. It is slightly shorter than Young's for
    ``delta << M``.

    Parameters
    ----------
    checkpoint_seconds : float or array_like
        ``delta``, time to write one checkpoint, ``> 0``.
    mtbf_seconds : float or array_like
        ``M``, mean time between failures of the job, ``> 0``.

    Returns
    -------
    float or ndarray
        Seconds of compute between checkpoints.

    Notes
    -----
    Source: Daly 2006, FGCS 22(3), eq. 37.

    Examples
    --------
    >>> round(daly_interval(98.0, 24 * 3600) / 60, 2)
    67.5
    >>> daly_interval(300.0, 100.0)   # delta >= 2M
    100.0
    """
    d = v.positive("checkpoint_seconds", checkpoint_seconds)
    m = v.positive("mtbf_seconds", mtbf_seconds)
    x = d / (2.0 * m)
    series = np.sqrt(2.0 * d * m) * (1.0 + np.sqrt(x) / 3.0 + x / 9.0) - d
    return v.scalar_or_array(np.where(d < 2.0 * m, series, m))


def cluster_mtbf(component_mtbf_seconds, components):
    """MTBF of a job that fails when any of ``components`` independent parts fails.

    With exponential (memoryless) failures the rates add: ``M = M_component / n``.

    Parameters
    ----------
    component_mtbf_seconds : float or array_like
        MTBF of one component (GPU, node), seconds, ``> 0``.
    components : int or array_like of int
        Components whose failure stops the job, ``>= 1``.

    Returns
    -------
    float or ndarray
        Seconds.

    Notes
    -----
    Source: independent exponential failures, whose rates add;
    Dubey et al. 2024, section 3.3.4 (failure counts at 16K-GPU scale).

    Examples
    --------
    >>> cluster_mtbf(50_000 * 3600, 16384) / 3600   # 50,000 h per GPU, 16,384 GPUs
    3.0517578125
    """
    m = v.positive("component_mtbf_seconds", component_mtbf_seconds)
    n = v.integer("components", components)
    return v.scalar_or_array(m / n)


def expected_lost_seconds(interval_seconds, restart_seconds=0.0):
    """Wall-clock time lost per failure: half an interval of rework plus the restart.

    ``lost = tau / 2 + R`` (failures fall uniformly inside an interval).

    Parameters
    ----------
    interval_seconds : float or array_like
        ``tau``, compute between checkpoints, ``> 0``.
    restart_seconds : float or array_like, optional
        ``R``, time to restart and reload, ``>= 0``.

    Returns
    -------
    float or ndarray
        Seconds per failure.

    Notes
    -----
    Source: Young 1974 (half an interval lost on average); workbook exercise 7.4.

    Examples
    --------
    >>> round(expected_lost_seconds(68.6 * 60, 120.0) / 60, 1)   # workbook 7.4
    36.3
    """
    tau = v.positive("interval_seconds", interval_seconds)
    r = v.non_negative("restart_seconds", restart_seconds)
    return v.scalar_or_array(tau / 2.0 + r)


def waste_fraction(interval_seconds, checkpoint_seconds, mtbf_seconds, restart_seconds=0.0):
    """First-order share of wall-clock time that is wasted: checkpoints plus rework.

    ``waste = delta / tau + (tau / 2 + R) / M``

    Young's interval minimizes it (for ``R`` independent of ``tau``). The
    workbook's 7.5 uses the same two terms without ``R``.

    Parameters
    ----------
    interval_seconds : float or array_like
        ``tau``, ``> 0``.
    checkpoint_seconds : float or array_like
        ``delta``, ``> 0``.
    mtbf_seconds : float or array_like
        ``M``, ``> 0``.
    restart_seconds : float or array_like, optional
        ``R``, ``>= 0``.

    Returns
    -------
    float or ndarray
        Dimensionless share of wall-clock time (first order, meaningful while small).

    Notes
    -----
    Source: Young 1974 (first-order waste model); workbook exercise 7.5.

    Examples
    --------
    >>> round(waste_fraction(young_interval(98.0, 86400.0), 98.0, 86400.0), 4)
    0.0476
    """
    tau = v.positive("interval_seconds", interval_seconds)
    d = v.positive("checkpoint_seconds", checkpoint_seconds)
    m = v.positive("mtbf_seconds", mtbf_seconds)
    r = v.non_negative("restart_seconds", restart_seconds)
    return v.scalar_or_array(d / tau + (tau / 2.0 + r) / m)


def failures_during(run_seconds, mtbf_seconds):
    """Expected number of failures in a run: ``T_run / M``.

    Parameters
    ----------
    run_seconds : float or array_like
        Length of the run, ``>= 0``.
    mtbf_seconds : float or array_like
        ``M``, ``> 0``.

    Returns
    -------
    float or ndarray
        Expected failures, dimensionless.

    Notes
    -----
    Source: Poisson process with rate 1/M.

    Examples
    --------
    >>> failures_during(30 * 86400, 86400)
    30.0
    """
    t = v.non_negative("run_seconds", run_seconds)
    m = v.positive("mtbf_seconds", mtbf_seconds)
    return v.scalar_or_array(t / m)


def waste_gpu_hours_per_failure(gpus, interval_seconds, restart_seconds=0.0):
    """GPU-hours lost per failure: ``N * (tau / 2 + R) / 3600``.

    Parameters
    ----------
    gpus : int or array_like of int
        GPUs that wait and redo work, ``>= 1``.
    interval_seconds : float or array_like
        ``tau``, ``> 0``.
    restart_seconds : float or array_like, optional
        ``R``, ``>= 0``.

    Returns
    -------
    float or ndarray
        GPU-hours.

    Notes
    -----
    Source: workbook exercise 7.4.

    Examples
    --------
    >>> round(waste_gpu_hours_per_failure(512, 68.6 * 60, 120.0), 1)
    309.8
    """
    return gpu_hours(v.integer("gpus", gpus), expected_lost_seconds(interval_seconds, restart_seconds))


def waste_cost_per_failure(gpus, interval_seconds, price_per_gpu_hour, restart_seconds=0.0):
    """Dollars lost per failure: GPU-hours lost times the price per GPU-hour.

    Parameters
    ----------
    gpus : int or array_like of int
        ``>= 1``.
    interval_seconds : float or array_like
        ``tau``, ``> 0``.
    price_per_gpu_hour : float or array_like
        Dollars per GPU-hour, ``>= 0``.
    restart_seconds : float or array_like, optional
        ``R``, ``>= 0``.

    Returns
    -------
    float or ndarray
        Dollars.

    Notes
    -----
    Source: workbook exercise 7.4.

    Examples
    --------
    >>> round(waste_cost_per_failure(512, 68.6 * 60, 2.0, 120.0))   # workbook 7.4: ~$619
    620
    """
    lost = expected_lost_seconds(interval_seconds, restart_seconds)
    return gpu_cost(v.integer("gpus", gpus), lost, price_per_gpu_hour)


def waste_gpu_hours_per_hour(gpus, interval_seconds, checkpoint_seconds, mtbf_seconds, restart_seconds=0.0):
    """GPU-hours wasted per wall-clock hour: ``N * waste_fraction``.

    Parameters
    ----------
    gpus : int or array_like of int
        ``>= 1``.
    interval_seconds, checkpoint_seconds, mtbf_seconds, restart_seconds
        As in :func:`waste_fraction`.

    Returns
    -------
    float or ndarray
        GPU-hours per hour.

    Notes
    -----
    Source: Young 1974 (waste fraction) times the GPU count.

    Examples
    --------
    >>> round(waste_gpu_hours_per_hour(512, young_interval(98.0, 86400.0), 98.0, 86400.0), 1)
    24.4
    """
    n = v.integer("gpus", gpus)
    w = waste_fraction(interval_seconds, checkpoint_seconds, mtbf_seconds, restart_seconds)
    return v.scalar_or_array(n * np.asarray(w))


def waste_cost_per_hour(gpus, interval_seconds, checkpoint_seconds, mtbf_seconds,
                        price_per_gpu_hour, restart_seconds=0.0):
    """Dollars wasted per wall-clock hour: ``N * price * waste_fraction``.

    Parameters
    ----------
    gpus : int or array_like of int
        ``>= 1``.
    interval_seconds, checkpoint_seconds, mtbf_seconds
        As in :func:`waste_fraction`.
    price_per_gpu_hour : float or array_like
        Dollars per GPU-hour, ``>= 0``.
    restart_seconds : float or array_like, optional
        ``R``, ``>= 0``.

    Returns
    -------
    float or ndarray
        Dollars per hour.

    Notes
    -----
    Source: Young 1974 (waste fraction) times the hourly bill.

    Examples
    --------
    >>> round(waste_cost_per_hour(512, young_interval(98.0, 86400.0), 98.0, 86400.0, 2.0), 2)
    48.77
    """
    price = v.non_negative("price_per_gpu_hour", price_per_gpu_hour)
    gh = waste_gpu_hours_per_hour(gpus, interval_seconds, checkpoint_seconds, mtbf_seconds, restart_seconds)
    return v.scalar_or_array(price * np.asarray(gh))


def sharded_checkpoint_monthly_savings(bill, checkpoint_seconds, shards, mtbf_seconds, restart_seconds=0.0):
    """Dollars a month saved when ``shards`` ranks each write ``1/shards`` of the checkpoint.

    Checkpoint writes plus rework after failures waste the share
    ``w(delta) = delta / tau + (tau / 2 + R) / M`` of the time at Young's interval
    ``tau = sqrt(2 delta M)``. One rank writing the whole checkpoint wastes
    ``w(delta)``; ZeRO's ranks writing their shards in parallel waste
    ``w(delta / shards)`` (an upper bound on the gain: storage must absorb all
    the writers). For the same progress the bill shrinks by
    ``(1 - w(delta)) / (1 - w(delta / shards))``::

        saved = bill - bill * (1 - w(delta)) / (1 - w(delta / shards))

    Parameters
    ----------
    bill : float or array_like
        Today's monthly bill, dollars, ``>= 0``.
    checkpoint_seconds : float or array_like
        Time ``delta`` for one rank to write the full checkpoint, ``> 0``.
    shards : int or array_like of int
        Ranks writing shards in parallel, ``>= 1`` (ZeRO: the data-parallel degree).
    mtbf_seconds : float or array_like
        Mean time between failures of the whole job ``M``, ``> 0``
        (:func:`~course.core.reliability.cluster_mtbf`).
    restart_seconds : float or array_like, optional
        Restart time ``R`` after a failure, ``>= 0``.

    Returns
    -------
    float or ndarray
        Dollars per month.

    Notes
    -----
    Sources: Young 1974, "A first order approximation to the optimum checkpoint
    interval"; Rajbhandari et al. 2020, ZeRO (optimizer state sharded over the
    data-parallel ranks, so each writes its own shard).

    Examples
    --------
    >>> round(sharded_checkpoint_monthly_savings(1e6, 98.0, 1, 3600.0), 6)   # one shard: nothing changes
    0.0
    >>> round(sharded_checkpoint_monthly_savings(1e6, 98.0, 1024, 50_000 * 3600 / 1024, 120.0))
    32404
    """
    b = v.non_negative("bill", bill)
    delta = v.positive("checkpoint_seconds", checkpoint_seconds)
    n = v.integer("shards", shards)

    def waste(write_seconds):
        interval = young_interval(write_seconds, mtbf_seconds)
        return np.asarray(waste_fraction(interval, write_seconds, mtbf_seconds, restart_seconds))

    return v.scalar_or_array(b - b * (1.0 - waste(delta)) / (1.0 - waste(delta / n)))


#: The three ways to run a synchronous data-parallel job that :func:`strategy_monthly_costs` compares.
SYNC_STRATEGIES = ("sync (today)", "async", "sync + ZeRO")
#: Where each strategy's dollars go, in the order of :func:`strategy_monthly_costs`'s last axis.
COST_COMPONENTS = ("useful work", "waiting for stragglers", "checkpoints + rework", "extra steps (staleness)")


def strategy_monthly_costs(bill, workers, straggler_fraction, slowdown, checkpoint_seconds, mtbf_seconds,
                           restart_seconds=0.0, extra_steps=0.0):
    """Monthly dollars of sync, async and sync + ZeRO, split by where they go, for the same progress.

    Today's synchronous job spends ``bill`` a month: a share ``i``
    (:func:`~course.core.sgd.sync_idle_fraction`) waiting for stragglers and a
    share ``w0`` (:func:`waste_fraction` at Young's interval, one rank writing
    the whole checkpoint in ``delta``) on checkpoints and rework. With the
    useful work ``U = bill (1 - i)(1 - w0)`` held fixed:

    * sync (today): ``[U, bill i (1 - w0), bill w0, 0]``;
    * async: nobody waits, the bill becomes ``A = bill (1 + e) / S`` with
      ``S`` :func:`~course.core.sgd.async_speedup` and ``e`` the extra steps
      stale gradients need: ``[U, 0, A w0, A (1 - w0) - U]``;
    * sync + ZeRO: each of ``N`` ranks writes its shard (``delta / N``, waste
      ``w1``), so the bill becomes ``Z = U / ((1 - i)(1 - w1))``:
      ``[U, Z i (1 - w1), Z w1, 0]``.

    Each strategy's total equals ``bill`` minus the savings of
    :func:`~course.core.economics.async_monthly_savings` and
    :func:`sharded_checkpoint_monthly_savings`.

    Parameters
    ----------
    bill : float
        Today's monthly bill, dollars, ``>= 0``.
    workers : int
        Data-parallel workers ``N`` (also the ZeRO shards), ``>= 1``.
    straggler_fraction, slowdown : float
        Share of workers slow in a step (``0..1``) and their slowdown (``>= 1``).
    checkpoint_seconds : float
        Time ``delta`` for one rank to write the full checkpoint, ``> 0``.
    mtbf_seconds : float
        Mean time between failures of the whole job, ``> 0``.
    restart_seconds : float, optional
        Restart time after a failure, ``>= 0``.
    extra_steps : float, optional
        Extra steps async needs for the same loss, as a share (``0.1`` = 10 %), ``>= 0``.

    Returns
    -------
    ndarray, shape (3, 4)
        Dollars; rows follow :data:`SYNC_STRATEGIES`, columns :data:`COST_COMPONENTS`.

    Notes
    -----
    Sources: Young 1974 (interval and waste); Dutta et al. 2018, "Slow and stale
    gradients can win the race" (async throughput and staleness); Rajbhandari et
    al. 2020, ZeRO (each rank writes its own optimizer shard).

    Examples
    --------
    >>> costs = strategy_monthly_costs(1e6, 1024, 0.05, 1.5, 98.0, 50_000 * 3600 / 1024, 120.0)
    >>> costs.shape, round(float(costs[0].sum()))
    ((3, 4), 1000000)
    """
    b = float(v.non_negative("bill", bill))
    delta = float(v.positive("checkpoint_seconds", checkpoint_seconds))
    n = int(v.integer("workers", workers))
    e = float(v.non_negative("extra_steps", extra_steps))
    idle = float(sync_idle_fraction(n, straggler_fraction, slowdown))
    speedup = float(async_speedup(n, straggler_fraction, slowdown))
    deltas = np.array([delta, delta / n])
    w0, w1 = np.asarray(waste_fraction(young_interval(deltas, mtbf_seconds), deltas, mtbf_seconds, restart_seconds),
                        float)
    useful = b * (1 - idle) * (1 - w0)
    async_bill = b * (1 + e) / speedup
    zero_bill = useful / ((1 - idle) * (1 - w1))
    return np.array([
        [useful, b * idle * (1 - w0), b * w0, 0.0],
        [useful, 0.0, async_bill * w0, async_bill * (1 - w0) - useful],
        [useful, zero_bill * idle * (1 - w1), zero_bill * w1, 0.0],
    ])


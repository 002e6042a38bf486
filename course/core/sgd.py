"""Synchronous vs asynchronous SGD with stragglers: step time, throughput, staleness.

Straggler model (used by every function here): ``N`` workers; in each step
each worker is, independently, a straggler with probability ``f``
(``straggler_fraction``) and then needs ``s`` times (``slowdown``) its normal
step time ``t``. The same averages hold when a fixed share ``f`` of the
workers is always slow, except for the synchronous step, which then always
waits ``s * t`` (the limit of the formula below for large ``N``).

* Synchronous SGD waits for the slowest worker every step ("wait for all").
* Asynchronous SGD (parameter server, Dean et al. 2012) applies each worker's
  gradient as soon as it arrives; nobody waits, but gradients are *stale*:
  computed on weights that other workers have updated meanwhile.

Units: seconds, samples per second. Every function broadcasts.

Sources: Dean et al. 2012, "Large Scale Distributed Deep Networks" (Downpour
SGD); Chen et al. 2016, "Revisiting Distributed Synchronous SGD" (stragglers
and the cost of waiting for all); Dutta et al. 2018, "Slow and Stale Gradients
Can Win the Race" (error-runtime trade-off of sync vs async); Mitliagkas et al.
2016, "Asynchrony begets Momentum" (N workers: staleness about N - 1); Lab 05
plan, Part 3.
"""

from __future__ import annotations

import numpy as np

from . import _validate as v

__all__ = [
    "sync_step_time",
    "async_worker_step_time",
    "sync_throughput",
    "async_throughput",
    "async_speedup",
    "sync_idle_fraction",
    "mean_staleness",
    "straggler_staleness",
]


def _inputs(step_seconds, n_workers, straggler_fraction, slowdown):
    t = v.positive("step_seconds", step_seconds)
    n = v.integer("n_workers", n_workers)
    f = v.fraction("straggler_fraction", straggler_fraction)
    s = v.finite("slowdown", slowdown)
    if np.any(s < 1.0):
        raise ValueError(f"slowdown must be >= 1 (a straggler is never faster), got {slowdown!r}")
    return t, n, f, s


def sync_step_time(step_seconds, n_workers, straggler_fraction, slowdown):
    """Expected synchronous step time (the slowest of ``N`` workers).

    A step is slow when at least one worker straggles, with probability
    ``1 - (1 - f)**N``::

        E[T_sync] = t * (1 + (s - 1) * (1 - (1 - f)**N))

    Never below ``t``; approaches ``s * t`` as ``N`` grows.

    Parameters
    ----------
    step_seconds : float or array, > 0
        ``t``, a normal (fast) worker's step time.
    n_workers : int or array, >= 1
    straggler_fraction : float or array in [0, 1]
        ``f``, probability that a worker straggles in a step.
    slowdown : float or array, >= 1
        ``s``, a straggler's step time divided by ``t``.

    Returns
    -------
    float or ndarray
        Seconds.

    Notes
    -----
    Source: see module docstring (Chen et al. 2016; Dutta et al. 2018); Lab 05 plan, Part 3.

    Examples
    --------
    >>> round(sync_step_time(1.0, 64, 0.05, 3.0), 3)   # 5 % stragglers, 3x slow
    2.925
    """
    t, n, f, s = _inputs(step_seconds, n_workers, straggler_fraction, slowdown)
    any_slow = 1.0 - (1.0 - f) ** n
    return v.scalar_or_array(t * (1.0 + (s - 1.0) * any_slow))


def async_worker_step_time(step_seconds, straggler_fraction, slowdown):
    """Mean step time of one asynchronous worker: ``t * (1 + (s - 1) * f)``.

    Parameters
    ----------
    step_seconds : float or array_like
        ``t``, a normal step, ``> 0``.
    straggler_fraction : float or array_like
        ``f`` in ``[0, 1]``.
    slowdown : float or array_like
        ``s >= 1``.

    Returns
    -------
    float or ndarray
        Seconds.

    Notes
    -----
    Source: see module docstring (Chen et al. 2016; Dutta et al. 2018); Lab 05 plan, Part 3.

    Examples
    --------
    >>> async_worker_step_time(1.0, 0.05, 3.0)
    1.1
    """
    t, _, f, s = _inputs(step_seconds, 1, straggler_fraction, slowdown)
    return v.scalar_or_array(t * (1.0 + (s - 1.0) * f))


def sync_throughput(samples_per_worker, step_seconds, n_workers, straggler_fraction, slowdown):
    """Synchronous throughput in samples/s: ``N * b / E[T_sync]``.

    Parameters
    ----------
    samples_per_worker : float or array_like
        ``b``, samples per worker and step, ``> 0``.
    step_seconds, n_workers, straggler_fraction, slowdown
        As in :func:`sync_step_time`.

    Returns
    -------
    float or ndarray
        Samples per second.

    Notes
    -----
    Source: see module docstring (Chen et al. 2016; Dutta et al. 2018); Lab 05 plan, Part 3.

    Examples
    --------
    >>> round(sync_throughput(32, 1.0, 64, 0.05, 3.0), 1)
    700.2
    """
    b = v.positive("samples_per_worker", samples_per_worker)
    n = v.integer("n_workers", n_workers)
    return v.scalar_or_array(n * b / np.asarray(sync_step_time(step_seconds, n, straggler_fraction, slowdown)))


def async_throughput(samples_per_worker, step_seconds, n_workers, straggler_fraction, slowdown):
    """Asynchronous throughput in samples/s: ``N * b / (t * (1 + (s - 1) f))``.

    Every worker runs at its own mean rate (renewal-reward theorem); nobody waits.

    Parameters
    ----------
    samples_per_worker : float or array_like
        ``b``, samples per worker and step, ``> 0``.
    step_seconds, n_workers, straggler_fraction, slowdown
        As in :func:`sync_step_time`.

    Returns
    -------
    float or ndarray
        Samples per second.

    Notes
    -----
    Source: see module docstring (Chen et al. 2016; Dutta et al. 2018); Lab 05 plan, Part 3.

    Examples
    --------
    >>> round(async_throughput(32, 1.0, 64, 0.05, 3.0), 1)
    1861.8
    """
    b = v.positive("samples_per_worker", samples_per_worker)
    n = v.integer("n_workers", n_workers)
    mean_step = np.asarray(async_worker_step_time(step_seconds, straggler_fraction, slowdown))
    return v.scalar_or_array(n * b / mean_step)


def async_speedup(n_workers, straggler_fraction, slowdown):
    """Raw-throughput ratio async / sync: ``E[T_sync] / E[t_worker]`` (>= 1).

    It counts samples per second only; stale gradients can need more steps to
    reach the same loss (Dutta et al. 2018), which this ratio does not include.

    Parameters
    ----------
    n_workers, straggler_fraction, slowdown
        As in :func:`sync_step_time`.

    Returns
    -------
    float or ndarray
        Dimensionless, ``>= 1``.

    Notes
    -----
    Source: see module docstring (Chen et al. 2016; Dutta et al. 2018); Lab 05 plan, Part 3.

    Examples
    --------
    >>> round(async_speedup(64, 0.05, 3.0), 3)
    2.659
    """
    sync = np.asarray(sync_step_time(1.0, n_workers, straggler_fraction, slowdown))
    worker = np.asarray(async_worker_step_time(1.0, straggler_fraction, slowdown))
    return v.scalar_or_array(sync / worker)


def sync_idle_fraction(n_workers, straggler_fraction, slowdown):
    """Share of GPU time that synchronous workers spend waiting for stragglers.

    ``1 - E[t_worker] / E[T_sync]`` (busy time of an average worker over the
    step it must wait out).

    Parameters
    ----------
    n_workers, straggler_fraction, slowdown
        As in :func:`sync_step_time`.

    Returns
    -------
    float or ndarray
        Dimensionless, in ``[0, 1)``.

    Notes
    -----
    Source: see module docstring (Chen et al. 2016; Dutta et al. 2018); Lab 05 plan, Part 3.

    Examples
    --------
    >>> round(sync_idle_fraction(64, 0.05, 3.0), 3)
    0.624
    >>> sync_idle_fraction(64, 0.0, 3.0)    # no stragglers, no waiting
    0.0
    """
    idle = 1.0 - 1.0 / np.asarray(async_speedup(n_workers, straggler_fraction, slowdown))
    return v.scalar_or_array(np.maximum(idle, 0.0))  # N = 1 can round to -2e-16


def mean_staleness(n_workers):
    """Mean staleness of an asynchronous update: ``N - 1`` updates.

    While a worker computes one gradient, the other ``N - 1`` workers apply
    theirs. Averaged over all updates this is exactly ``N - 1`` whatever the
    workers' speeds: an update from worker ``i`` (rate ``r_i``) lasts ``1/r_i``
    and sees ``sum_{j != i} r_j / r_i`` others; weighting by ``r_i`` and
    dividing by ``R = sum r_i`` gives ``(N - 1) R / R``.

    Parameters
    ----------
    n_workers : int or array_like of int
        ``N >= 1``.

    Returns
    -------
    int or ndarray of int
        Updates applied by others between a gradient's read and its write.

    Notes
    -----
    Sources: Dean et al. 2012; Mitliagkas et al. 2016 (staleness with ``N``
    asynchronous workers, implicit momentum ``1 - 1/N``).

    Examples
    --------
    >>> mean_staleness([1, 8, 64])
    array([ 0,  7, 63])
    """
    n = v.integer("n_workers", n_workers)
    out = n - 1
    return int(out) if out.ndim == 0 else out


def straggler_staleness(n_workers, straggler_fraction, slowdown):
    """Expected staleness of the update from a straggling (slow) step.

    During the slow step of ``s * t`` the other ``N - 1`` workers each apply
    updates at mean rate ``1 / (t * (1 + (s - 1) f))``::

        staleness_slow = (N - 1) * s / (1 + (s - 1) * f)

    Stragglers deliver the stalest gradients: ``s / (1 + (s - 1) f)`` times the
    mean staleness.

    Parameters
    ----------
    n_workers, straggler_fraction, slowdown
        As in :func:`sync_step_time`.

    Returns
    -------
    float or ndarray
        Updates.

    Notes
    -----
    Source: see module docstring (Chen et al. 2016; Dutta et al. 2018); Lab 05 plan, Part 3.

    Examples
    --------
    >>> round(straggler_staleness(64, 0.05, 3.0), 1)
    171.8
    """
    _, n, f, s = _inputs(1.0, n_workers, straggler_fraction, slowdown)
    return v.scalar_or_array((n - 1) * s / (1.0 + (s - 1.0) * f))

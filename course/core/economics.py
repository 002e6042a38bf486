"""Training compute, time, energy and cost: 6ND, PF-days, days at an MFU, kWh and dollars.

SI inside: FLOP, FLOP/s, seconds, watts, joules; energy helpers return kWh
because electricity is priced per kWh. Every function broadcasts.

Sources: Kaplan et al. 2020, "Scaling Laws for Neural Language Models", section
2.1 (C = 6ND); Brown et al. 2020, GPT-3, Table D.1 (3.14e23 FLOPs, PF-day =
1e15 FLOP/s x 1 day); Dubey et al. 2024, "The Llama 3 Herd of Models"
(405B params, 15.6T tokens, 3.8e25 FLOPs); NVIDIA H100 SXM data sheet (989
TFLOPS dense BF16, 700 W); workbook chapter 9.
"""

from __future__ import annotations

from . import _validate as v
from .data_parallel import compute_time
from .sgd import async_speedup
from .units import PF_day, day, hour, kWh

__all__ = [
    "training_flops",
    "pf_days",
    "training_seconds",
    "training_days",
    "energy_kwh",
    "energy_cost",
    "gpu_hours",
    "gpu_cost",
    "HOURS_PER_MONTH",
    "monthly_bill",
    "async_monthly_savings",
]

#: Hours in an average month: 365.25 days x 24 h / 12 months.
HOURS_PER_MONTH = 365.25 * 24 / 12


def training_flops(params, tokens):
    """Training compute ``C = 6 * N * D`` FLOP.

    2ND for the forward pass and 4ND for the backward pass of a dense
    transformer (attention-score FLOPs and recomputation are left out).

    Parameters
    ----------
    params : float or array, > 0
        ``N``, non-embedding (or total) parameter count.
    tokens : float or array, > 0
        ``D``, training tokens.

    Returns
    -------
    float or ndarray
        FLOP.

    Notes
    -----
    Source: Kaplan et al. 2020, section 2.1.

    Examples
    --------
    >>> training_flops(405e9, 15.6e12)   # Llama 3 405B: ~3.8e25
    3.7908e+25
    """
    n = v.positive("params", params)
    d = v.positive("tokens", tokens)
    return v.scalar_or_array(6.0 * n * d)


def pf_days(flops):
    """Compute in petaFLOP/s-days: ``C / (1e15 * 86400)``.

    Parameters
    ----------
    flops : float or array_like
        Compute, FLOP, ``>= 0``.

    Returns
    -------
    float or ndarray
        petaFLOP/s-days.

    Notes
    -----
    Source: Brown et al. 2020, Table D.1 (1 PF-day = 1e15 FLOP/s x 86400 s).

    Examples
    --------
    >>> round(pf_days(training_flops(405e9, 15.6e12)))   # workbook 9.4
    438750
    """
    c = v.non_negative("flops", flops)
    return v.scalar_or_array(c / PF_day)


def training_seconds(flops, n_gpus, peak_flops_per_second, mfu):
    """Wall-clock seconds to execute ``flops``: ``C / (N * P_peak * MFU)``.

    Parameters
    ----------
    flops : float or array, >= 0
    n_gpus : int or array, >= 1
    peak_flops_per_second : float or array, > 0
        Dense peak of one GPU in the training precision (H100 SXM BF16: 989e12).
    mfu : float or array in (0, 1]
        Model FLOPs utilization achieved.

    Returns
    -------
    float or ndarray
        Seconds.

    Notes
    -----
    Source: definition of MFU (Chowdhery et al. 2022, appendix B); workbook 9.5.

    Examples
    --------
    >>> round(training_seconds(1e21, 1, 989e12, 0.5))
    2022245
    """
    c = v.non_negative("flops", flops)
    n = v.integer("n_gpus", n_gpus)
    p = v.positive("peak_flops_per_second", peak_flops_per_second)
    u = v.fraction("mfu", mfu, low_open=True)
    return compute_time(c, n * p * u)  # work over the achieved rate of all GPUs


def training_days(flops, n_gpus, peak_flops_per_second, mfu):
    """Days to execute ``flops`` (:func:`training_seconds` / 86400).

    Parameters
    ----------
    flops, n_gpus, peak_flops_per_second, mfu
        As in :func:`training_seconds`.

    Returns
    -------
    float or ndarray
        Days.

    Notes
    -----
    Source: workbook exercise 9.5.

    Examples
    --------
    >>> round(training_days(training_flops(405e9, 15.6e12), 16384, 989e12, 0.40), 1)   # workbook 9.5
    67.7
    """
    return v.scalar_or_array(training_seconds(flops, n_gpus, peak_flops_per_second, mfu) / day)


def energy_kwh(n_gpus, watts_per_gpu, seconds, pue=1.0):
    """Electrical energy in kWh: ``N * P * t * PUE / 3.6e6``.

    ``pue`` (power usage effectiveness, >= 1) adds cooling and facility
    overhead; 1.0 counts the GPUs only.

    Parameters
    ----------
    n_gpus : int or array_like of int
        GPUs, ``>= 1``.
    watts_per_gpu : float or array_like
        Average power per GPU, W, ``>= 0``.
    seconds : float or array_like
        Run time, ``>= 0``.
    pue : float or array_like, optional
        Power usage effectiveness, ``>= 1``.

    Returns
    -------
    float or ndarray
        kWh.

    Notes
    -----
    Source: definition (energy = power x time); PUE per The Green Grid 2007; workbook 9.9.

    Examples
    --------
    >>> round(energy_kwh(16384, 700.0, 77 * 86400), 1)   # workbook 9.9
    21194342.4
    """
    n = v.integer("n_gpus", n_gpus)
    w = v.non_negative("watts_per_gpu", watts_per_gpu)
    t = v.non_negative("seconds", seconds)
    pue_arr = v.finite("pue", pue)
    if (pue_arr < 1.0).any():
        raise ValueError(f"pue must be >= 1, got {pue!r}")
    return v.scalar_or_array(n * w * t * pue_arr / kWh)


def energy_cost(kwh, price_per_kwh):
    """Electricity cost in dollars: ``kWh * price``.

    Parameters
    ----------
    kwh : float or array_like
        Energy, kWh, ``>= 0``.
    price_per_kwh : float or array_like
        Dollars per kWh, ``>= 0``.

    Returns
    -------
    float or ndarray
        Dollars.

    Notes
    -----
    Source: workbook exercise 9.9.

    Examples
    --------
    >>> round(energy_cost(energy_kwh(16384, 700.0, 77 * 86400), 0.05), 2)   # workbook 9.9
    1059717.12
    """
    e = v.non_negative("kwh", kwh)
    p = v.non_negative("price_per_kwh", price_per_kwh)
    return v.scalar_or_array(e * p)


def gpu_hours(n_gpus, seconds):
    """GPU-hours: ``N * t / 3600``.

    Parameters
    ----------
    n_gpus : int or array_like of int
        GPUs, ``>= 1``.
    seconds : float or array_like
        Wall-clock time, ``>= 0``.

    Returns
    -------
    float or ndarray
        GPU-hours.

    Notes
    -----
    Source: definition.

    Examples
    --------
    >>> gpu_hours(16384, 77 * 86400)
    30277632.0
    """
    n = v.integer("n_gpus", n_gpus)
    t = v.non_negative("seconds", seconds)
    return v.scalar_or_array(n * t / hour)


def gpu_cost(n_gpus, seconds, price_per_gpu_hour):
    """Rental cost in dollars: GPU-hours times the price per GPU-hour.

    Parameters
    ----------
    n_gpus : int or array_like of int
        GPUs, ``>= 1``.
    seconds : float or array_like
        Wall-clock time, ``>= 0``.
    price_per_gpu_hour : float or array_like
        Dollars per GPU-hour, ``>= 0``.

    Returns
    -------
    float or ndarray
        Dollars.

    Notes
    -----
    Source: workbook 9.9 discussion; cloud list prices in :mod:`course.core.catalog`.

    Examples
    --------
    >>> gpu_cost(16384, 77 * 86400, 2.0)   # ~$60.6M (workbook 9.9 discussion)
    60555264.0
    """
    p = v.non_negative("price_per_gpu_hour", price_per_gpu_hour)
    return v.scalar_or_array(p * gpu_hours(n_gpus, seconds))


def monthly_bill(gpus, price_per_gpu_hour, hours_per_month=HOURS_PER_MONTH):
    """Dollars a month for ``gpus`` rented around the clock: ``N * price * hours``.

    Parameters
    ----------
    gpus : int or array_like of int
        GPUs, ``>= 1``.
    price_per_gpu_hour : float or array_like
        Dollars per GPU-hour, ``>= 0`` (list prices in :mod:`course.core.catalog`).
    hours_per_month : float or array_like, optional
        ``> 0``; default 730.5 h (365.25 x 24 / 12).

    Returns
    -------
    float or ndarray
        Dollars per month.

    Notes
    -----
    Source: Lab 05 plan, Part 3 ("wait-for-all wastes about $1M a month").

    Examples
    --------
    >>> monthly_bill(1024, 2.0)   # 1024 x $2 x 730.5 h
    1496064.0
    """
    n = v.integer("gpus", gpus)
    p = v.non_negative("price_per_gpu_hour", price_per_gpu_hour)
    h = v.positive("hours_per_month", hours_per_month)
    return v.scalar_or_array(n * p * h)


def async_monthly_savings(bill, workers, straggler_fraction, slowdown, extra_steps=0.0):
    """Dollars a month saved by asynchronous SGD for the same training progress.

    Synchronous workers wait for the slowest; asynchronous ones never wait, so
    the same samples cost ``bill / async_speedup``. Stale gradients may need
    ``extra_steps`` (a share, 0.1 = 10 % more steps) to reach the same loss::

        saved = bill - bill * (1 + extra_steps) / async_speedup(N, f, s)

    Parameters
    ----------
    bill : float or array_like
        Today's synchronous monthly bill, dollars, ``>= 0`` (:func:`monthly_bill`).
    workers : int or array_like of int
        Data-parallel workers ``N >= 1``.
    straggler_fraction : float or array_like
        Share ``f`` of workers slow in a step, in ``[0, 1]``.
    slowdown : float or array_like
        A straggler's step time over a healthy one's, ``s >= 1``.
    extra_steps : float or array_like, optional
        Extra steps stale gradients cost, ``>= 0`` (default 0: staleness not charged).

    Returns
    -------
    float or ndarray
        Dollars per month (negative when async costs more).

    Notes
    -----
    Sources: Chen et al. 2016, "Revisiting Distributed Synchronous SGD" (stragglers,
    :func:`~course.core.sgd.async_speedup`); Dutta et al. 2018 (staleness costs steps).

    Examples
    --------
    >>> round(async_monthly_savings(1e6, 1024, 0.05, 1.15))   # 1e6 (1 - 1.0075 / 1.15)
    123913
    """
    b = v.non_negative("bill", bill)
    e = v.non_negative("extra_steps", extra_steps)
    return v.scalar_or_array(b - b * (1.0 + e) / async_speedup(workers, straggler_fraction, slowdown))

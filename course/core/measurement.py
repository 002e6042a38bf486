"""Measured collective times: honest summaries, the alpha-beta fit and its trust, crossovers.

A timing is a set of repeats after warm-up; it is summarised by its median and quartiles
(:func:`timing_summary`), because a shared machine adds rare long delays that a mean would
absorb (Hoefler & Belli 2015, rules 5 and 6: report medians with a non-parametric spread).
The alpha-beta (Hockney) model of :mod:`course.core.collectives` is linear in ``alpha`` and
``beta``, so both are found by linear least squares on the medians (:func:`fit_alpha_beta`),
with the fit's standard errors from its covariance, and with the reasons the fit cannot be
trusted when it cannot. :func:`measured_crossover` finds where two measured curves cross, to
hold against :func:`~course.core.collectives.crossover_message_bytes` from the fitted values.

Sources
-------
- R. W. Hockney, "The communication challenge for MPP: Intel Paragon and Meiko CS-2",
  Parallel Computing 20(3), 1994 (t = alpha + n beta, fitted from ping-pong).
- T. Hoefler, R. Belli, "Scientific Benchmarking of Parallel Computing Systems", SC15, 2015
  (medians and quartiles over repeats, warm-up, report the spread and the environment).
- R. Thakur, R. Rabenseifner, W. Gropp, IJHPCA 19(1), 2005 (the all-reduce costs fitted here).
- Weighted linear least squares and its covariance: P. R. Bevington, D. K. Robinson, "Data
  Reduction and Error Analysis for the Physical Sciences", 3rd ed., 2003, ch. 7.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Tuple

import numpy as np

from . import _validate as v

__all__ = [
    "AlphaBetaFit",
    "TimingSummary",
    "timing_summary",
    "fit_alpha_beta",
    "measured_crossover",
    "FIT_MIN_SIZES",
    "FIT_MAX_RELATIVE_ERROR",
    "TIMING_MAX_SPREAD",
]

#: fewest distinct message sizes for a fit whose uncertainty means something: two points fix
#: a line exactly (no residual, no error bar) and three leave one degree of freedom
FIT_MIN_SIZES = 4
#: the largest relative standard error of beta (and of alpha, when alpha is resolved at all)
#: a trusted fit may have; a convention of this course, stated to the student with the reason
FIT_MAX_RELATIVE_ERROR = 0.25
#: the largest interquartile range over median of a timing before it counts as too noisy
TIMING_MAX_SPREAD = 0.5


@dataclass(frozen=True)
class TimingSummary:
    """Median and quartiles of repeated timings (seconds), over the last axis.

    ``spread`` is the interquartile range over the median (dimensionless), the relative
    spread a chart shows as an error bar; ``repeats`` the samples per timing.
    """

    median: np.ndarray
    q1: np.ndarray
    q3: np.ndarray
    spread: np.ndarray
    repeats: int


def timing_summary(samples, warmup: int = 0) -> TimingSummary:
    """Median, quartiles and relative spread of repeated timings, after dropping warm-up runs.

    Formula: over the last axis, after dropping its first ``warmup`` entries,
    ``median``, ``q1`` and ``q3`` (linear interpolation of the order statistics, NumPy's
    default) and ``spread = (q3 - q1) / median``.

    Parameters
    ----------
    samples : array_like
        Seconds, ``> 0``, repeats along the last axis (any leading shape: sizes, algorithms).
    warmup : int, optional
        Leading repeats to drop (first calls pay for connection set-up and page faults).

    Returns
    -------
    TimingSummary

    Source: Hoefler & Belli 2015, sec. 3 (rules 5, 6: medians and non-parametric spread).

    Examples
    --------
    >>> s = timing_summary([[9.0, 1.0, 1.1, 1.2, 5.0]], warmup=1)
    >>> float(s.median[0]), round(float(s.spread[0]), 3)
    (1.15, 1.0)
    """
    arr = v.positive("samples", samples)
    if arr.ndim == 0:
        raise ValueError("samples must have repeats along its last axis, got a single number")
    w = int(v.integer("warmup", warmup, minimum=0))
    if arr.shape[-1] - w < 1:
        raise ValueError(f"warmup must leave at least one repeat: {arr.shape[-1]} samples, warmup={w}")
    kept = arr[..., w:]
    q1, median, q3 = np.percentile(kept, [25.0, 50.0, 75.0], axis=-1)
    return TimingSummary(median=median, q1=q1, q3=q3, spread=(q3 - q1) / median, repeats=kept.shape[-1])


@dataclass(frozen=True)
class AlphaBetaFit:
    """The result of :func:`fit_alpha_beta`, like SciPy's ``OptimizeResult``.

    Attributes
    ----------
    latency, latency_error : float
        alpha and its standard error, seconds.
    bandwidth, bandwidth_error : float
        1/beta and its standard error (first-order propagation), bytes/s.
    beta, beta_error : float
        Seconds per byte.
    covariance : ndarray, shape (2, 2)
        Of (alpha, beta).
    residual : float
        Root mean square of the relative residuals ``(t - model) / t``.
    sizes : int
        Distinct message sizes fitted.
    trusted : bool
        No reason below applies.
    reasons : tuple of (code, sentence)
        Why the fit cannot be trusted: ``"too_few_sizes"``, ``"too_noisy"``,
        ``"bandwidth_unresolved"``, ``"more_ranks_than_cores"``, ``"latency_unresolved"``; each
        sentence says why.
    """

    latency: float
    latency_error: float
    beta: float
    beta_error: float
    bandwidth: float
    bandwidth_error: float
    covariance: np.ndarray
    residual: float
    sizes: int
    reasons: Tuple[Tuple[str, str], ...] = field(default_factory=tuple)

    @property
    def trusted(self) -> bool:
        return not self.reasons

    @property
    def codes(self) -> Tuple[str, ...]:
        return tuple(code for code, _ in self.reasons)

    def predict(self, message_bytes, latency_count=1.0, bandwidth_factor=1.0):
        """Seconds the fitted model gives: ``a * alpha + b * n * beta``."""
        n = v.non_negative("message_bytes", message_bytes)
        return v.scalar_or_array(np.asarray(latency_count) * self.latency
                                 + np.asarray(bandwidth_factor) * n * self.beta)


def fit_alpha_beta(message_bytes, seconds, latency_count=1.0, bandwidth_factor=1.0, *,
                   spread=None, ranks=None, cores=None) -> AlphaBetaFit:
    """Fit latency alpha and bandwidth 1/beta to measured times by weighted least squares.

    Model: ``t_i = a_i * alpha + b_i * n_i * beta``, with ``a_i`` and ``b_i`` the latency
    count and bandwidth factor of the operation timed (one-way ping-pong: ``a = b = 1``; ring
    all-reduce on p ranks: ``a = 2(p-1)``, ``b = 2(p-1)/p``, from
    :func:`~course.core.collectives.allreduce_coefficients`). Points are weighted by ``1/t_i``
    (relative residuals), since the sizes span decades and an unweighted fit would let the
    largest message decide alpha too. Covariance ``s^2 (X^T W X)^-1`` with ``s^2`` the weighted
    residual variance on ``N - 2`` degrees of freedom; ``bandwidth_error = beta_error / beta^2``.
    A negative alpha (latency lost in the noise) is refitted with alpha = 0.

    The fit is *not trusted* (``reasons``) when: fewer than :data:`FIT_MIN_SIZES` distinct
    sizes; the relative error of beta exceeds :data:`FIT_MAX_RELATIVE_ERROR` or a timing's
    spread exceeds :data:`TIMING_MAX_SPREAD` (too noisy); more ranks than cores (ranks wait
    for a core, so the times measure the scheduler); alpha is not resolved (its error is
    larger than itself, or it came out negative); the bandwidth is not resolved (the times do
    not grow with size: ``beta``, ``bandwidth`` and their errors are NaN).

    Parameters
    ----------
    message_bytes : array_like
        Message size of each point, bytes, ``> 0``; at least two distinct sizes.
    seconds : array_like
        Measured time of each point (a median), seconds, ``> 0``, same length.
    latency_count, bandwidth_factor : float or array_like, optional
        ``a`` and ``b`` of the operation, ``> 0`` (default 1: one point-to-point message).
    spread : array_like, optional
        Relative spread (IQR / median) of each point, from :func:`timing_summary`.
    ranks, cores : int, optional
        Processes that took part and cores they had; both or neither.

    Returns
    -------
    AlphaBetaFit

    Source: Hockney 1994 (the model); Bevington & Robinson 2003, ch. 7 (weighted linear
    least squares, covariance); Hoefler & Belli 2015 (trusting a measurement).

    Examples
    --------
    Exact times of a 2 us, 10 GB/s link are recovered:

    >>> n = np.array([1e3, 1e4, 1e5, 1e6, 1e7])
    >>> fit = fit_alpha_beta(n, 2e-6 + n / 10e9)
    >>> round(fit.latency * 1e6, 6), round(fit.bandwidth / 1e9, 6), fit.trusted
    (2.0, 10.0, True)
    >>> fit_alpha_beta(n[:3], 2e-6 + n[:3] / 10e9).codes
    ('too_few_sizes',)

    Flat times (the bandwidth lost in the noise) give an untrusted fit, not an error:

    >>> flat = fit_alpha_beta(n[:4], np.array([3e-6, 2e-6, 1e-6, 1e-6]))
    >>> flat.codes, bool(np.isnan(flat.bandwidth))
    (('bandwidth_unresolved',), True)
    """
    n = v.positive("message_bytes", message_bytes)
    t = v.positive("seconds", seconds)
    if n.ndim != 1 or t.shape != n.shape:
        raise ValueError(f"message_bytes and seconds must be 1-D arrays of one length, got shapes {n.shape} and {t.shape}")
    a = np.broadcast_to(v.positive("latency_count", latency_count), n.shape).astype(float)
    b = np.broadcast_to(v.positive("bandwidth_factor", bandwidth_factor), n.shape).astype(float)
    distinct = int(np.unique(n).size)
    if distinct < 2:
        raise ValueError(f"message_bytes must hold at least 2 distinct sizes to fit a line, got {distinct}")
    if (ranks is None) != (cores is None):
        raise ValueError("ranks and cores must be given together")

    weight = 1.0 / t                                   # relative residuals
    design = np.column_stack([a, b * n]) * weight[:, None]
    target = t * weight
    coef = np.linalg.lstsq(design, target, rcond=None)[0]
    negative_alpha = coef[0] < 0
    if negative_alpha:                                 # latency lost in noise: fit beta alone
        coef = np.array([0.0, float(np.sum(design[:, 1] * target) / np.sum(design[:, 1] ** 2))])
    residuals = target - design @ coef
    dof = max(n.size - 2, 1)
    s2 = float(np.sum(residuals**2)) / dof
    covariance = s2 * np.linalg.pinv(design.T @ design)
    alpha, beta = float(coef[0]), float(coef[1])
    alpha_err, beta_err = (float(np.sqrt(max(covariance[i, i], 0.0))) for i in range(2))
    # Times that do not grow with size are a measurement (small messages on a busy machine), not bad
    # input: the fit says so and gives no bandwidth, rather than raising in the student's face.
    flat = beta <= 0
    if flat:
        beta = beta_err = float("nan")

    reasons = []
    if distinct < FIT_MIN_SIZES:
        reasons.append(("too_few_sizes", f"only {distinct} message sizes: a line through fewer than "
                        f"{FIT_MIN_SIZES} has no honest error bar; measure more sizes"))
    noisy_spread = None
    if spread is not None:
        sp = np.broadcast_to(v.non_negative("spread", spread), n.shape)
        noisy_spread = float(np.max(sp))
    if flat:
        reasons.append(("bandwidth_unresolved", "the times do not grow with message size over these sizes, so "
                        "the bandwidth is lost in the noise: add larger messages or more repeats"))
    elif beta_err / beta > FIT_MAX_RELATIVE_ERROR or (noisy_spread is not None and noisy_spread > TIMING_MAX_SPREAD):
        worst = f"; the widest timing varies by {noisy_spread:.0%} of its median" if noisy_spread is not None else ""
        reasons.append(("too_noisy", f"the bandwidth is uncertain by {beta_err / beta:.0%}{worst}: other programs "
                        f"share the machine; close them or measure more repeats"))
    if ranks is not None:
        p = int(v.integer("ranks", ranks, minimum=1))
        c = int(v.integer("cores", cores, minimum=1))
        if p > c:
            reasons.append(("more_ranks_than_cores", f"{p} ranks on {c} cores: ranks take turns on a core, so "
                            f"the times measure the scheduler, not the machine's links; use at most {c} ranks"))
    if negative_alpha or alpha_err > alpha:
        reasons.append(("latency_unresolved", "the latency is lost in the noise (its error is larger than "
                        "itself): add smaller messages or more repeats"))
    return AlphaBetaFit(latency=alpha, latency_error=alpha_err, beta=beta, beta_error=beta_err,
                        bandwidth=1.0 / beta, bandwidth_error=beta_err / beta**2, covariance=covariance,
                        residual=float(np.sqrt(np.mean(residuals**2))), sizes=distinct, reasons=tuple(reasons))


def measured_crossover(message_bytes, seconds_a, seconds_b) -> float:
    """The message size where measured algorithm a stops being faster than b.

    Looks for the first sign change of ``log(t_a / t_b)`` along increasing sizes and
    interpolates linearly in ``log(size)`` between the two sizes around it. Returns ``0.0``
    when b is already no slower at the smallest size, ``inf`` when a is faster at every size.

    Parameters
    ----------
    message_bytes : array_like
        Increasing sizes, bytes, ``> 0``.
    seconds_a, seconds_b : array_like
        Measured times (medians) of the two algorithms at those sizes, seconds, ``> 0``.

    Returns
    -------
    float
        Bytes.

    Source: the crossover of two alpha-beta costs (Thakur, Rabenseifner & Gropp 2005, sec. 4),
    located on measurements instead of the model.

    Examples
    --------
    a is twice as fast at 1 kB, as fast at 10 kB, twice as slow at 100 kB:

    >>> measured_crossover([1e3, 1e4, 1e5], [1.0, 2.0, 4.0], [2.0, 2.0, 2.0])
    10000.0
    """
    n = v.positive("message_bytes", message_bytes)
    ta = v.positive("seconds_a", seconds_a)
    tb = v.positive("seconds_b", seconds_b)
    if n.ndim != 1 or ta.shape != n.shape or tb.shape != n.shape:
        raise ValueError("message_bytes, seconds_a and seconds_b must be 1-D arrays of one length")
    if np.any(np.diff(n) <= 0):
        raise ValueError("message_bytes must increase strictly")
    gap = np.log(ta / tb)                               # < 0 where a is faster
    if gap[0] >= 0:
        return 0.0
    after = np.nonzero(gap >= 0)[0]
    if after.size == 0:
        return float("inf")
    k = int(after[0])
    x0, x1 = np.log(n[k - 1]), np.log(n[k])
    g0, g1 = gap[k - 1], gap[k]
    return float(np.exp(x0 + (x1 - x0) * (-g0) / (g1 - g0)))

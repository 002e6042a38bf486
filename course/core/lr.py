"""Learning-rate scaling rules for large batches, warm-up and the warm-up + cosine schedule.

Learning rates are dimensionless; batches are in samples (or tokens, as long as
base and new batch use the same unit); steps are optimizer steps. Every
function broadcasts.

Sources: Goyal et al. 2017, "Accurate, Large Minibatch SGD: Training ImageNet
in 1 Hour" (linear scaling rule, gradual warm-up); Krizhevsky 2014, "One weird
trick for parallelizing convolutional neural networks" and Hoffer et al. 2017,
"Train longer, generalize better" (square-root scaling); Loshchilov & Hutter
2017, "SGDR" (cosine decay); workbook chapter 3 (warm-up heuristic).
"""

from __future__ import annotations

import numpy as np

from . import _validate as v

__all__ = [
    "linear_scaled_lr",
    "sqrt_scaled_lr",
    "warmup_steps_heuristic",
    "warmup_lr",
    "warmup_cosine_lr",
]


def linear_scaled_lr(base_lr, base_batch, new_batch):
    """Linear scaling rule: ``lr_new = lr_base * B_new / B_base``.

    Keeps the expected parameter change per sample seen constant; it holds
    until the batch approaches the critical batch size (Goyal et al. 2017,
    section 2.1).

    Parameters
    ----------
    base_lr : float or array, > 0
    base_batch, new_batch : float or array, > 0
        Batch sizes in the same unit (samples or tokens).

    Returns
    -------
    float or ndarray
        Learning rate, dimensionless.

    Notes
    -----
    Source: Goyal et al. 2017, section 2.1; workbook exercise 3.1.

    Examples
    --------
    >>> linear_scaled_lr(3e-4, 256, 2048)   # workbook 3.1
    0.0024
    """
    lr = v.positive("base_lr", base_lr)
    b0 = v.positive("base_batch", base_batch)
    b1 = v.positive("new_batch", new_batch)
    return v.scalar_or_array(lr * b1 / b0)


def sqrt_scaled_lr(base_lr, base_batch, new_batch):
    """Square-root scaling rule: ``lr_new = lr_base * sqrt(B_new / B_base)``.

    Keeps the variance of the parameter update per sample constant: the
    gradient noise of a mean over B samples has variance ~ 1/B (Krizhevsky
    2014; Hoffer et al. 2017).

    Parameters
    ----------
    base_lr : float or array_like
        Learning rate tuned at ``base_batch``, ``> 0``.
    base_batch, new_batch : float or array_like
        Batch sizes in the same unit, ``> 0``.

    Returns
    -------
    float or ndarray
        Learning rate, dimensionless.

    Notes
    -----
    Source: Krizhevsky 2014; Hoffer et al. 2017; workbook exercise 3.2.

    Examples
    --------
    >>> round(sqrt_scaled_lr(3e-4, 256, 2048), 7)   # workbook 3.2
    0.0008485
    """
    lr = v.positive("base_lr", base_lr)
    b0 = v.positive("base_batch", base_batch)
    b1 = v.positive("new_batch", new_batch)
    return v.scalar_or_array(lr * np.sqrt(b1 / b0))


def warmup_steps_heuristic(base_batch, new_batch, steps_per_unit_scale=1000):
    """Warm-up length rule of thumb: ``W = (B_new / B_base) * 1000`` steps.

    A heuristic from workbook chapter 3 (not a law): a larger batch multiplier
    gets a longer ramp. Check it against the other rule of thumb, 5-10 % of the
    total steps (Goyal et al. 2017 use 5 epochs).

    Returns
    -------
    float or ndarray, optimizer steps

    Parameters
    ----------
    base_batch, new_batch : float or array_like
        Batch sizes in the same unit, ``> 0``.
    steps_per_unit_scale : float or array_like, optional
        Warm-up steps per unit of batch multiplier, ``> 0`` (default 1000).

    Notes
    -----
    Source: workbook chapter 3 rule of thumb (exercise 3.3).

    Examples
    --------
    >>> warmup_steps_heuristic(256, 2048)   # workbook 3.3
    8000.0
    """
    b0 = v.positive("base_batch", base_batch)
    b1 = v.positive("new_batch", new_batch)
    k = v.positive("steps_per_unit_scale", steps_per_unit_scale)
    return v.scalar_or_array(b1 / b0 * k)


def warmup_lr(step, peak_lr, warmup_steps, start_lr=0.0):
    """Gradual (linear) warm-up: ramp from ``start_lr`` to ``peak_lr`` over ``warmup_steps``.

    ``lr(t) = start + (peak - start) * min(t / W, 1)``

    Parameters
    ----------
    step : int or array, >= 0
    peak_lr : float or array, > 0
    warmup_steps : int or array, >= 1
    start_lr : float or array, >= 0

    Returns
    -------
    float or ndarray
        Learning rate at ``step``, dimensionless.

    Notes
    -----
    Source: Goyal et al. 2017, section 2.2 ("gradual warmup").

    Examples
    --------
    >>> warmup_lr([0, 4000, 8000, 9000], 2.4e-3, 8000)
    array([0.    , 0.0012, 0.0024, 0.0024])
    """
    t = v.integer("step", step, minimum=0)
    peak = v.positive("peak_lr", peak_lr)
    w = v.integer("warmup_steps", warmup_steps)
    start = v.non_negative("start_lr", start_lr)
    return v.scalar_or_array(start + (peak - start) * np.minimum(t / w, 1.0))


def warmup_cosine_lr(step, peak_lr, warmup_steps, total_steps, min_lr=0.0):
    """Linear warm-up, then cosine decay from ``peak_lr`` to ``min_lr`` at ``total_steps``.

    For ``t < W``: ``peak * t / W``. For ``W <= t <= T``:
    ``min + (peak - min) * (1 + cos(pi * (t - W) / (T - W))) / 2``.
    After ``T`` the rate stays at ``min_lr``. Workbook 3.5: when doubling the
    batch halves the steps, decay over the *actual* ``total_steps``.

    Parameters
    ----------
    step : int or array_like of int
        Optimizer step ``t``, ``>= 0``.
    peak_lr : float or array_like
        Rate at the end of warm-up, ``> 0``.
    warmup_steps : int or array_like of int
        ``W >= 1``.
    total_steps : int or array_like of int
        ``T > W``, where the decay reaches ``min_lr``.
    min_lr : float or array_like, optional
        Final rate, ``0 <= min_lr <= peak_lr``.

    Returns
    -------
    float or ndarray
        Learning rate at ``step``, dimensionless.

    Notes
    -----
    Sources: Goyal et al. 2017 (warm-up); Loshchilov & Hutter 2017, SGDR, eq. 5
    (cosine annealing without restarts).

    Examples
    --------
    >>> warmup_cosine_lr([0, 1000, 50500, 100000], 3e-4, 1000, 100000)
    array([0.     , 0.0003 , 0.00015, 0.     ])
    """
    t = v.integer("step", step, minimum=0)
    peak = v.positive("peak_lr", peak_lr)
    w = v.integer("warmup_steps", warmup_steps)
    total = v.integer("total_steps", total_steps)
    if np.any(total <= w):
        raise ValueError(f"total_steps must be > warmup_steps, got {total_steps!r} <= {warmup_steps!r}")
    lo = v.non_negative("min_lr", min_lr)
    if np.any(lo > peak):
        raise ValueError(f"min_lr must be <= peak_lr, got {min_lr!r} > {peak_lr!r}")
    progress = np.clip((t - w) / (total - w), 0.0, 1.0)
    cosine = lo + (peak - lo) * 0.5 * (1.0 + np.cos(np.pi * progress))
    return v.scalar_or_array(np.where(t < w, peak * t / w, cosine))

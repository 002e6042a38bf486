"""Number formats for training (FP32, FP16, BF16, FP8 E4M3/E5M2) and dynamic loss scaling.

Format limits follow from the bit layout: with ``e`` exponent bits, ``m``
mantissa bits and bias ``b``, the smallest normal is ``2**(1 - b)``, the
smallest subnormal ``2**(1 - b - m)``, machine epsilon ``2**-m``, and the
largest finite value ``(2 - 2**-m) * 2**(2**e - 2 - b)`` for IEEE-style formats
(top exponent reserved for inf/NaN). FP8 E4M3 keeps the top exponent for
numbers and reserves only the all-ones mantissa there for NaN, so its largest
value is ``1.75 * 2**8 = 448``.

Sources: IEEE 754-2008 (binary16, binary32); Google Brain bfloat16 (Kalamkar et
al. 2019, "A Study of BFLOAT16 for Deep Learning Training"); Micikevicius et
al. 2022, "FP8 Formats for Deep Learning", Table 1; PyTorch
``torch.amp.GradScaler`` (``_amp_update_scale_``) for loss scaling;
Micikevicius et al. 2018, "Mixed Precision Training" (loss scaling).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _validate as v

__all__ = [
    "FloatFormat",
    "FLOAT_FORMATS",
    "float_format",
    "bytes_per_element",
    "flushes_to_zero",
    "below_normal_range",
    "overflows",
    "loss_scale_to_lift",
    "max_safe_loss_scale",
    "dynamic_loss_scale",
    "loss_scale_history",
]


@dataclass(frozen=True)
class FloatFormat:
    """Bit layout and limits of a binary floating-point format (all limits positive)."""

    name: str
    bits: int
    exponent_bits: int
    mantissa_bits: int
    bias: int
    max: float
    min_normal: float
    min_subnormal: float
    epsilon: float
    has_inf: bool
    source: str

    @property
    def ulp_at_max(self) -> float:
        """Spacing of representable numbers just below ``max``."""
        return 2.0 ** (np.floor(np.log2(self.max)) - self.mantissa_bits)

    @property
    def overflow_threshold(self) -> float:
        """Magnitude from which round-to-nearest no longer returns a finite value."""
        return self.max + self.ulp_at_max / 2.0


def _ieee(name, exponent_bits, mantissa_bits, source):
    bias = 2 ** (exponent_bits - 1) - 1
    max_exponent = 2**exponent_bits - 2 - bias  # all-ones exponent is inf/NaN
    return FloatFormat(
        name=name,
        bits=1 + exponent_bits + mantissa_bits,
        exponent_bits=exponent_bits,
        mantissa_bits=mantissa_bits,
        bias=bias,
        max=(2.0 - 2.0**-mantissa_bits) * 2.0**max_exponent,
        min_normal=2.0 ** (1 - bias),
        min_subnormal=2.0 ** (1 - bias - mantissa_bits),
        epsilon=2.0**-mantissa_bits,
        has_inf=True,
        source=source,
    )


#: The formats of mixed-precision and FP8 training, by name.
FLOAT_FORMATS = {
    "fp32": _ieee("fp32", 8, 23, "IEEE 754-2008 binary32"),
    "fp16": _ieee("fp16", 5, 10, "IEEE 754-2008 binary16"),
    "bf16": _ieee("bf16", 8, 7, "bfloat16: FP32 exponent, 7-bit mantissa (Kalamkar et al. 2019)"),
    "fp8_e5m2": _ieee("fp8_e5m2", 5, 2, "Micikevicius et al. 2022, Table 1 (IEEE-style E5M2)"),
    "fp8_e4m3": FloatFormat(
        name="fp8_e4m3", bits=8, exponent_bits=4, mantissa_bits=3, bias=7,
        max=1.75 * 2.0**8,          # S.1111.110; S.1111.111 is NaN, no infinities
        min_normal=2.0**-6, min_subnormal=2.0**-9, epsilon=2.0**-3, has_inf=False,
        source="Micikevicius et al. 2022, Table 1 (E4M3: no inf, one NaN mantissa)",
    ),
}


def float_format(name):
    """The :class:`FloatFormat` called ``name`` (one of ``FLOAT_FORMATS``).

    Parameters
    ----------
    name : str
        A key of :data:`FLOAT_FORMATS`.

    Returns
    -------
    FloatFormat
        Bit layout and limits (magnitudes, dimensionless).

    Notes
    -----
    Source: IEEE 754-2008; Kalamkar et al. 2019; Micikevicius et al. 2022, Table 1.

    Examples
    --------
    >>> float_format("fp16").min_normal      # workbook 8.1: 2**-14
    6.103515625e-05
    >>> float_format("fp8_e4m3").max, float_format("fp8_e5m2").max
    (448.0, 57344.0)
    """
    return _format("name", name)


def _format(param: str, name) -> FloatFormat:
    """The format called ``name``; an unknown one is a ValueError naming ``param``."""
    return FLOAT_FORMATS[v.choice(param, name, FLOAT_FORMATS)]


def bytes_per_element(fmt):
    """Storage bytes of one number in format ``fmt`` (bits / 8).

    Parameters
    ----------
    fmt : str
        A key of :data:`FLOAT_FORMATS`.

    Returns
    -------
    float
        Bytes.

    Notes
    -----
    Source: IEEE 754-2008; Micikevicius et al. 2022 (8-bit formats).

    Examples
    --------
    >>> bytes_per_element("bf16"), bytes_per_element("fp8_e4m3")
    (2.0, 1.0)
    """
    return _format("fmt", fmt).bits / 8.0


def flushes_to_zero(values, fmt):
    """True where a nonzero value rounds to zero in ``fmt`` (total underflow).

    Round-to-nearest-even sends ``0 < |x| <= min_subnormal / 2`` to zero (the
    tie goes to the even neighbour, zero).

    Parameters
    ----------
    values : float or array_like
        Finite numbers.
    fmt : str
        A key of :data:`FLOAT_FORMATS`.

    Returns
    -------
    bool or ndarray of bool

    Notes
    -----
    Source: IEEE 754-2008, section 4.3.1 (round to nearest, ties to even).

    Examples
    --------
    >>> flushes_to_zero([1e-8, 2**-25, 1e-7, 0.0], "fp16")
    array([ True,  True, False, False])
    """
    x = np.abs(v.finite("values", values))
    f = _format("fmt", fmt)
    out = (x > 0) & (x <= f.min_subnormal / 2.0)
    return out if out.ndim else bool(out)


def below_normal_range(values, fmt):
    """True where a nonzero value is smaller in magnitude than ``fmt``'s smallest normal.

    Such values are stored as subnormals with fewer significant bits, or lost.

    Parameters
    ----------
    values : float or array_like
        Finite numbers.
    fmt : str
        A key of :data:`FLOAT_FORMATS`.

    Returns
    -------
    bool or ndarray of bool

    Notes
    -----
    Source: IEEE 754-2008, section 3.4 (subnormal numbers).

    Examples
    --------
    >>> below_normal_range([1e-4, 5e-5, 0.0], "fp16")
    array([False,  True, False])
    """
    x = np.abs(v.finite("values", values))
    f = _format("fmt", fmt)
    out = (x > 0) & (x < f.min_normal)
    return out if out.ndim else bool(out)


def overflows(values, fmt):
    """True where a value does not round to a finite number of ``fmt``.

    Round-to-nearest-even overflows from ``max + ulp(max) / 2`` on; at exactly
    that tie it overflows only if ``max``'s last mantissa bit is odd (IEEE
    formats; E4M3's max 1.110b x 2**8 is even, so 464 still rounds to 448).

    Parameters
    ----------
    values : float or array_like
        Finite numbers.
    fmt : str
        A key of :data:`FLOAT_FORMATS`.

    Returns
    -------
    bool or ndarray of bool

    Notes
    -----
    Source: IEEE 754-2008, section 7.4 (overflow under round to nearest); Micikevicius et al. 2022.

    Examples
    --------
    >>> overflows([65504.0, 65519.0, 65520.0], "fp16")
    array([False, False,  True])
    >>> overflows([464.0, 465.0], "fp8_e4m3")
    array([False,  True])
    """
    x = np.abs(v.finite("values", values))
    f = _format("fmt", fmt)
    max_mantissa = round((f.max / 2.0 ** np.floor(np.log2(f.max)) - 1.0) * 2**f.mantissa_bits)
    tie_overflows = max_mantissa % 2 == 1
    t = f.overflow_threshold
    out = (x >= t) if tie_overflows else (x > t)
    return out if out.ndim else bool(out)


def loss_scale_to_lift(magnitude, fmt="fp16"):
    """Smallest power-of-two loss scale that lifts ``|magnitude|`` into the normal range.

    ``S = 2**max(0, ceil(log2(min_normal / |g|)))``

    Parameters
    ----------
    magnitude : float or array_like
        Smallest gradient magnitude to keep, nonzero, finite.
    fmt : str, optional
        A key of :data:`FLOAT_FORMATS` (default ``"fp16"``).

    Returns
    -------
    float or ndarray
        Loss scale, a power of two ``>= 1``.

    Notes
    -----
    Source: Micikevicius et al. 2018, section 3.2 (loss scaling).

    Examples
    --------
    >>> loss_scale_to_lift(1e-7)    # a 1e-7 gradient needs 2**10 in FP16
    1024.0
    """
    g = v.positive("magnitude", np.abs(v.finite("magnitude", magnitude)))
    f = _format("fmt", fmt)
    return v.scalar_or_array(2.0 ** np.maximum(0.0, np.ceil(np.log2(f.min_normal / g))))


def max_safe_loss_scale(max_magnitude, fmt="fp16"):
    """Largest power-of-two loss scale that keeps ``|max_magnitude| * S <= max``.

    ``S = 2**floor(log2(max / |g|))`` (may be below 1 for huge values).

    Parameters
    ----------
    max_magnitude : float or array_like
        Largest gradient magnitude before scaling, nonzero, finite.
    fmt : str, optional
        A key of :data:`FLOAT_FORMATS` (default ``"fp16"``).

    Returns
    -------
    float or ndarray
        Loss scale, a power of two.

    Notes
    -----
    Source: Micikevicius et al. 2018, section 3.2 (loss scaling).

    Examples
    --------
    >>> max_safe_loss_scale(10.0)   # 10 * 4096 = 40960 <= 65504 < 81920
    4096.0
    """
    g = v.positive("max_magnitude", np.abs(v.finite("max_magnitude", max_magnitude)))
    f = _format("fmt", fmt)
    return v.scalar_or_array(2.0 ** np.floor(np.log2(f.max / g)))


def _check_scaler(overflows_seq, init_scale, growth_factor, backoff_factor, growth_interval):
    arr = np.asarray(overflows_seq)
    if arr.dtype != bool:
        try:
            numeric = np.asarray(arr, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"overflows must be a sequence of booleans, got {overflows_seq!r}") from None
        if not np.all((numeric == 0) | (numeric == 1)):
            raise ValueError(f"overflows must be a sequence of booleans (or 0/1), got {overflows_seq!r}")
        arr = numeric.astype(bool)
    if arr.ndim == 0:
        raise ValueError(f"overflows must be a sequence (one boolean per step), got {overflows_seq!r}")
    scale = v.positive("init_scale", init_scale)
    growth = v.finite("growth_factor", growth_factor)
    if np.any(growth <= 1.0):
        raise ValueError(f"growth_factor must be > 1, got {growth_factor!r}")
    backoff = v.fraction("backoff_factor", backoff_factor, low_open=True, high_open=True)
    interval = v.integer("growth_interval", growth_interval)
    return arr, scale, growth, backoff, interval


def loss_scale_history(overflows, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                       growth_interval=2000):
    """Step-by-step trace of PyTorch ``GradScaler`` dynamic loss scaling.

    Per step, given whether the scaled gradients contained inf/NaN:

    * overflow: the optimizer step is skipped, ``scale *= backoff_factor``,
      the growth tracker resets to 0;
    * otherwise the tracker counts up; when it reaches ``growth_interval`` the
      scale is multiplied by ``growth_factor`` (only if the result is finite in
      FP32) and the tracker resets to 0.

    Parameters
    ----------
    overflows : sequence of bool, shape (..., steps)
        ``True`` where a step's gradients overflowed. Leading axes are
        independent runs (vectorized).
    init_scale : float, > 0
    growth_factor : float, > 1
    backoff_factor : float in (0, 1)
    growth_interval : int, >= 1

    Returns
    -------
    dict of ndarray, each of shape (..., steps)
        ``scale_used`` (scale applied to the loss in that step),
        ``skipped`` (optimizer step skipped), ``growth_tracker`` (after the
        step), ``scale_after`` (scale after the update).

    Notes
    -----
    Source: PyTorch ``torch.amp.GradScaler`` and ``_amp_update_scale_``
    (defaults 2**16, 2.0, 0.5, 2000); Micikevicius et al. 2018.

    Examples
    --------
    >>> h = loss_scale_history([False, True, False, True, False])   # workbook 8.2
    >>> h["scale_after"]
    array([65536., 32768., 32768., 16384., 16384.])
    >>> h["growth_tracker"]
    array([1, 0, 1, 0, 1])
    """
    arr, scale0, growth, backoff, interval = _check_scaler(
        overflows, init_scale, growth_factor, backoff_factor, growth_interval)
    lead = arr.shape[:-1]
    scale = np.broadcast_to(np.float32(scale0), lead).astype(np.float32)
    tracker = np.zeros(lead, dtype=np.int64)
    used = np.empty(arr.shape, dtype=np.float64)
    after = np.empty(arr.shape, dtype=np.float64)
    trackers = np.empty(arr.shape, dtype=np.int64)
    f32_growth, f32_backoff = np.float32(growth), np.float32(backoff)
    with np.errstate(over="ignore"):
        for step in range(arr.shape[-1]):
            bad = arr[..., step]
            used[..., step] = scale
            counted = tracker + 1
            grow = ~bad & (counted >= interval)
            grown = scale * f32_growth
            scale = np.where(bad, scale * f32_backoff,
                             np.where(grow & np.isfinite(grown), grown, scale)).astype(np.float32)
            tracker = np.where(bad | grow, 0, counted)
            after[..., step] = scale
            trackers[..., step] = tracker
    return {"scale_used": used, "skipped": arr.copy(), "growth_tracker": trackers, "scale_after": after}


def dynamic_loss_scale(overflows, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                       growth_interval=2000):
    """Final loss scale after a sequence of steps, with PyTorch ``GradScaler`` semantics.

    See :func:`loss_scale_history` for the update rule and sources. An empty
    sequence returns ``init_scale``.

    Parameters
    ----------
    overflows : sequence of bool, shape (..., steps)
        One boolean per step, ``True`` where the gradients overflowed.

    Returns
    -------
    float, or ndarray of shape (...) for several runs

    Notes
    -----
    Source: PyTorch ``torch.amp.GradScaler``; workbook exercises 8.2 and 8.6.

    Examples
    --------
    >>> dynamic_loss_scale([False, True, False, True, False])   # workbook 8.2
    16384.0
    >>> dynamic_loss_scale([False] * 4, init_scale=1.0, growth_interval=2)
    4.0
    """
    arr, scale0, *_ = _check_scaler(overflows, init_scale, growth_factor, backoff_factor, growth_interval)
    if arr.shape[-1] == 0:
        return v.scalar_or_array(np.broadcast_to(np.float32(scale0), arr.shape[:-1]).astype(float))
    hist = loss_scale_history(arr, init_scale, growth_factor, backoff_factor, growth_interval)
    return v.scalar_or_array(hist["scale_after"][..., -1])

"""Chapter 8 - mixed precision: workbook exercises 8.1-8.6.

Keys come from ``course.core`` (``float_format``, ``bytes_per_element``,
``dynamic_loss_scale``). Sources: IEEE 754-2008; Micikevicius et al. 2018 (mixed-precision
training) and 2022 (FP8 formats); PyTorch ``torch.amp.GradScaler`` semantics.
"""

from __future__ import annotations

import math
import random

from course import core
from course.core import units as u
from course.assess.activity import Chapter
from course.assess.authoring import build_exercise, exact, rounded, values_exercise

CHAPTER = {
    "title": "Chapter 8 \u00b7 Mixed precision",
    "intro": ("Training in 16 or 8 bits halves or quarters the bytes of activations and gradients "
              "and runs on the tensor cores' fastest paths, but small formats have little range or "
              "little precision. This chapter works out where the limits are and how loss scaling "
              "keeps gradients inside them."),
    "concept": [r"""
## Number formats

| format | exponent / mantissa bits | largest finite | smallest normal | source |
|---|---|---|---|---|
| FP32 | 8 / 23 | $3.4\times10^{38}$ | $2^{-126}\approx1.2\times10^{-38}$ | IEEE 754-2008 |
| FP16 | 5 / 10 | 65504 | $2^{-14}\approx6.1\times10^{-5}$ | IEEE 754-2008 |
| BF16 | 8 / 7 | $3.4\times10^{38}$ | $2^{-126}$ | bfloat16 (Kalamkar et al. 2019) |
| FP8 E4M3 | 4 / 3 | 448 | $2^{-6}$ | Micikevicius et al. 2022 |
| FP8 E5M2 | 5 / 2 | 57344 | $2^{-14}$ | Micikevicius et al. 2022 |

A format with $e$ exponent bits stores exponents with a bias of $2^{e-1}-1$; the smallest
exponent of a normal number is $1-\text{bias}$. Below the smallest normal number come the
subnormals (FP16: down to $2^{-24}\approx6\times10^{-8}$) with fewer significant bits, and
below those, zero. `course.core.float_format("fp16")` returns these limits.

## Mixed-precision training

Micikevicius et al. (2018) run the forward and backward passes in 16 bits but keep an FP32
*master* copy of the weights and FP32 optimizer state. With Adam that is 2 (16-bit weights)
+ 2 (16-bit gradients) + 4 (master weights) + 4 + 4 (two moments) = **16 bytes per
parameter**. What shrinks is activation memory and the bytes that cross the network.
""", r"""
## Dynamic loss scaling

Small gradients underflow in FP16. Multiplying the loss by a scale $S$ multiplies every
gradient by $S$ (chain rule), lifting them into range; the optimizer divides by $S$ again
before the update. PyTorch's `GradScaler` adapts $S$:

1. start at $S = 2^{16}$;
2. a step whose gradients contain inf or NaN is **skipped**, $S$ is **halved** and the count
   of good steps is reset to 0;
3. any other step adds 1 to the count; when it reaches the growth interval (2000) $S$ is
   **doubled** and the count is reset.

In `course.core`: `dynamic_loss_scale(overflows, init_scale=2.0**16, growth_factor=2.0,
backoff_factor=0.5, growth_interval=2000)`, with `overflows` a sequence of booleans.

## FP8

E4M3 spends its bits on precision, E5M2 on range. The usual recipe (Micikevicius et al.
2022) stores forward tensors (weights, activations) in E4M3 and gradients in E5M2, each with
a per-tensor scale factor.
"""],
}

#: this chapter as one activity (listed in :mod:`course.activities`); the exercises below add to it
ACTIVITY = CH = Chapter('ch08', 'ch08_mixed_precision', **CHAPTER)


# 8.1 -----------------------------------------------------------------------------------
def _key_8_1(s):
    return {"fp16_min_normal": core.float_format(s["fmt"]).min_normal}


def _deriv_8_1(s):
    f = core.float_format(s["fmt"])
    return (f"Bias $= 2^{{{f.exponent_bits}-1}}-1 = {f.bias}$; smallest normal exponent "
            f"$1-{f.bias} = {1 - f.bias}$; $2^{{{1 - f.bias}}} = 1/{2 ** (f.bias - 1)}$ = "
            f"**{rounded(f.min_normal, 5)}**. Gradients of $10^{{-6}}$ or $10^{{-7}}$ are common deep in a "
            "network: without loss scaling they become subnormal (few bits left) or zero.")


values_exercise(
    CH, "8.1", "FP16 range", kind="Derive", spec={"fmt": "fp16"},
    prompt=lambda s: ("FP16 has 5 exponent bits with bias 15, so its smallest positive normal number "
                      "is $2^{1-15}$. What is that number? Give the plain value (e.g. `1.5e-3`, "
                      "not `1.5`)."),
    answers={"fp16_min_normal": "a plain number"}, key=_key_8_1, derivation=_deriv_8_1,
    solution=lambda s: "fp16_min_normal = 2.0 ** (1 - 15)")


# 8.2 -----------------------------------------------------------------------------------
def _key_8_2(s):
    return {"final_scale": float(core.dynamic_loss_scale(
        s["overflows"], init_scale=s["init_scale"], growth_interval=s["growth_interval"]))}


def _deriv_8_2(s):
    history = core.loss_scale_history(s["overflows"], init_scale=s["init_scale"],
                                      growth_interval=s["growth_interval"])
    rows = [f"- step {i}: " + ("overflow: skip the update, halve S" if ov else "no overflow: count it")
            + f"; counter {int(c)}, S = {exact(float(sc))}"
            for i, (ov, c, sc) in enumerate(zip(s["overflows"], history["growth_tracker"],
                                                history["scale_after"]), 1)]
    final = _key_8_2(s)["final_scale"]
    return ("\n".join(rows) + f"\n\nFinal **S = {exact(final)}** $= 2^{{{int(math.log2(final))}}}$. Each "
            f"overflow halves S and resets the counter; doubling needs {s['growth_interval']} good steps in "
            "a row.")


def _vary_8_2(s, rng):
    # the answer is a power of two: start from 2^6..2^20 (15 exponents, not 4) so classmates' answers spread
    n = rng.choice([5, 6, 7, 8])
    overflows = [rng.random() < 0.35 for _ in range(n)]
    return dict(s, init_scale=2.0 ** rng.randrange(6, 21), growth_interval=rng.choice([2, 3, 2000]),
                overflows=overflows)


values_exercise(
    CH, "8.2", "Trace loss scaling", kind="Trace",
    spec={"init_scale": 65536.0, "growth_interval": 2000, "overflows": [False, True, False, True, False]},
    vary=_vary_8_2,
    prompt=lambda s: (f"GradScaler starts at $S$ = {exact(s['init_scale'])} with a growth interval of "
                      f"{s['growth_interval']} steps. Steps 1 to {len(s['overflows'])} see: "
                      + ", ".join("overflow" if o else "no overflow" for o in s["overflows"])
                      + f". What is $S$ after step {len(s['overflows'])}?"),
    answers={"final_scale": "loss scale"}, key=_key_8_2, rtol=0.0, derivation=_deriv_8_2,
    solution=lambda s: (f"overflows = {s['overflows']!r}\n"
                        f"final_scale, good = {s['init_scale']!r}, 0\n"
                        "for overflow in overflows:\n"
                        "    good = 0 if overflow else good + 1\n"
                        "    final_scale *= 0.5 if overflow else 1.0\n"
                        f"    if good == {s['growth_interval']}:\n"
                        "        final_scale, good = final_scale * 2, 0"))


# 8.3 -----------------------------------------------------------------------------------
def _key_8_3(s):
    # Adam model state per parameter: mixed 2 + 2 + 4 + 4 + 4, pure FP32 4 + 4 + 4 + 4
    mixed = core.bytes_per_param(weights="fp16", optimizer="adam")
    pure = core.bytes_per_param(weights="fp32", optimizer="adam")
    return {"memory_ratio": mixed / pure}


values_exercise(
    CH, "8.3", "Memory of mixed precision", kind="Derive", spec={"params_b": 13.0},
    prompt=lambda s: (f"A {s['params_b']:g}B model is trained with Adam. Mixed precision keeps FP16 "
                      "weights and gradients, FP32 master weights and two FP32 Adam moments; pure FP32 "
                      "training keeps FP32 weights, gradients and two moments. What is the ratio of "
                      "model-state memory, mixed / pure FP32?"),
    answers={"memory_ratio": "ratio"}, key=_key_8_3,
    solution=lambda s: "memory_ratio = (2 + 2 + 4 + 4 + 4) / (4 + 4 + 4 + 4)",
    derivation=lambda s: (
        "Mixed: 2 (FP16 weights) + 2 (FP16 gradients) + 4 (FP32 master) + 4 + 4 (moments) = 16 B/param. "
        "Pure FP32: 4 + 4 + 4 + 4 = 16 B/param. Ratio **" + f"{_key_8_3(s)['memory_ratio']:.3g}" + "**: "
        f"{16 * s['params_b']:g} GB of model state either way for {s['params_b']:g}B parameters. Mixed "
        "precision saves activation memory and communication, not model state; ZeRO is what shards "
        "the model state."))


# 8.4 -----------------------------------------------------------------------------------
values_exercise(
    CH, "8.4", "FP8: E4M3 or E5M2?", kind="Trace", spec={"formats": ["E4M3", "E5M2"]},
    prompt=lambda s: ("E4M3 (3 mantissa bits) reaches at most 448; E5M2 (2 mantissa bits) reaches "
                      "57344. Gradients routinely span six or more orders of magnitude, with rare "
                      "large outliers. Which FP8 format do standard recipes use for **gradients**?"),
    answers={"gradient_format": "format"}, key=lambda s: {"gradient_format": "E5M2"}, rtol=0.0,
    options={"gradient_format": ["E4M3", "E5M2"]},
    solution=lambda s: 'gradient_format = "E5M2"',
    derivation=lambda s: (
        "**E5M2 for gradients, E4M3 for forward tensors.** Forward activations and weights are kept in "
        "a bounded range by normalisation and activation functions, so the extra mantissa bit of E4M3 "
        "(finer steps) is worth more than range. Gradients have outliers across many orders of "
        "magnitude, so E5M2's extra exponent bit (range up to 57344) matters more, and their coarser "
        "rounding averages out over many optimizer steps."),
    manual={"prompt": "Why is that choice right for gradients, and why do forward activations use the "
                      "other format? Answer in three to five sentences.",
            "answer": ("**Model answer.** Gradients span many orders of magnitude and have outliers "
                       "(loss spikes, early training), so they need E5M2's extra exponent bit and its "
                       "range; their coarse 2-bit mantissa is tolerable because the optimizer averages "
                       "many noisy steps. Forward activations and weights are bounded by normalisation "
                       "and activation functions, so E4M3's extra mantissa bit (precision) pays off.\n\n"
                       "**Mark scheme (2 points).** 1 point: gradients need range (exponent bits / "
                       "outliers / dynamic range). 1 point: forward tensors are bounded and benefit "
                       "from precision (mantissa bits). A mention of per-tensor scaling is welcome but "
                       "earns nothing extra."),
            "points": 2.0})


# 8.5 -----------------------------------------------------------------------------------
def _activation_bytes(s, fmt):
    # the workbook's model: 2 b s d elements kept per layer (inputs of attention and MLP)
    return core.workbook_activation_bytes(s["b"], s["s"], s["d"], s["layers"], precision=fmt)


def _key_8_5(s):
    return {"fp8_saving_gb": (_activation_bytes(s, "fp16") - _activation_bytes(s, "fp8_e4m3")) / u.GB}


values_exercise(
    CH, "8.5", "FP8 activation savings", kind="Derive", spec={"b": 4, "s": 4096, "d": 8192, "layers": 80},
    vary=lambda s, rng: dict(s, b=rng.choice([1, 2, 4, 8]), s=rng.choice([2048, 4096, 8192]),
                             d=rng.choice([4096, 5120, 8192]), layers=rng.choice([32, 40, 60, 80])),
    prompt=lambda s: (f"A model ($d = {s['d']}$, {s['layers']} layers) keeps about $2\\,b\\,s\\,d$ "
                      "activation **elements** per layer for the backward pass (the inputs of attention "
                      f"and of the MLP), with batch $b = {s['b']}$ and sequence length $s = {s['s']}$. "
                      "How many GB ($10^9$ bytes) does storing them in FP8 (1 byte each) instead of "
                      "FP16 (2 bytes) save?"),
    answers={"fp8_saving_gb": "GB"}, key=_key_8_5,
    solution=lambda s: (f"b, seq, d, layers = {s['b']}, {s['s']}, {s['d']}, {s['layers']}\n"
                        "elements = layers * 2 * b * seq * d\n"
                        "fp8_saving_gb = elements * (2 - 1) / 1e9"),
    derivation=lambda s: (
        f"Elements per layer: $2\\,b\\,s\\,d = 2\\times{s['b']}\\times{s['s']}\\times{s['d']}$ = "
        f"{2 * s['b'] * s['s'] * s['d']:,}; all {s['layers']} layers: "
        f"{s['layers'] * 2 * s['b'] * s['s'] * s['d']:,}. FP16 (2 B each): "
        f"{_activation_bytes(s, 'fp16') / u.GB:.4g} GB; FP8 (1 B each): "
        f"{_activation_bytes(s, 'fp8_e4m3') / u.GB:.4g} GB. Saved: **{_key_8_5(s)['fp8_saving_gb']:.4g} GB**, "
        "half of the FP16 total."),
    note=("The workbook reports 172 GB saved: its totals carry an unexplained extra factor. Count "
          "only the elements stated here, at 2 and at 1 byte each."))


# 8.6 -----------------------------------------------------------------------------------
def _reference_8_6(steps, init_scale, grow_interval):
    return float(core.dynamic_loss_scale(steps, init_scale=init_scale, growth_interval=grow_interval))


def _probes_8_6(seed):
    rng = random.Random(f"8.6:{seed}")
    valid = [[[False, True, False, True, False], 65536.0, 2000], [[], 65536.0, 2000],
             [[False, False, False], 1024.0, 3], [[False] * 4 + [True], 8.0, 2], [[True] * 20, 65536.0, 2000],
             [[False] * 7, 1.0, 1]]
    for _ in range(40):
        n = rng.randint(0, 60)
        p_overflow = rng.choice([0.0, 0.05, 0.3, 0.8])
        valid.append([[rng.random() < p_overflow for _ in range(n)], 2.0 ** rng.randint(0, 24),
                      rng.randint(1, 12)])
    invalid = [[[False], 0.0, 2000], [[False], -1.0, 2000], [[False], 65536.0, 0], [[False], 65536.0, 2.5]]
    return {"valid": valid, "invalid": invalid}


build_exercise(
    CH, "8.6", "Implement dynamic_loss_scale",
    spec={"example": [[False, False, True, False, False, False], 1024.0, 2]},
    vary=lambda s, rng: dict(s, example=[[rng.random() < 0.3 for _ in range(rng.choice([5, 6, 7, 8]))],
                                         2.0 ** rng.choice([8, 10, 12]), rng.choice([2, 3])]),
    prompt=lambda s: ("Write `dynamic_loss_scale(steps, init_scale, grow_interval)` that simulates "
                      "GradScaler. `steps` is a list of booleans, `True` meaning the step overflowed. "
                      "On an overflow halve the scale and reset the good-step counter; otherwise add 1 "
                      "to the counter and, when it reaches `grow_interval`, double the scale and reset "
                      "the counter. Return the final scale as a float. Raise `ValueError` if "
                      "`init_scale` is not positive or `grow_interval` is not a whole number \u2265 1. "
                      f"Worked example: `dynamic_loss_scale({s['example'][0]!r}, {s['example'][1]!r}, "
                      f"{s['example'][2]!r})` returns {_reference_8_6(*s['example'])!r}."),
    function="dynamic_loss_scale", signature="(steps, init_scale, grow_interval)",
    docstring="Final loss scale after the steps (True = overflow), GradScaler rules.",
    body=("if not init_scale > 0:\n"
          "    raise ValueError(f\"init_scale must be > 0, got {init_scale!r}\")\n"
          "if grow_interval < 1 or grow_interval != int(grow_interval):\n"
          "    raise ValueError(f\"grow_interval must be a whole number >= 1, got {grow_interval!r}\")\n"
          "scale, good = float(init_scale), 0\n"
          "for overflow in steps:\n"
          "    if overflow:\n"
          "        scale, good = scale * 0.5, 0\n"
          "    else:\n"
          "        good += 1\n"
          "        if good == grow_interval:\n"
          "            scale, good = scale * 2.0, 0\n"
          "return scale"),
    reference=_reference_8_6, probes=_probes_8_6,
    examples=[[[False, False, True, False, False, False], 1024.0, 2], [[False, False, False], 1024.0, 3]],
    derivation=lambda s: (
        "**Keep two pieces of state**: the scale and the count of good steps since the last change. An "
        "overflow halves the scale and zeroes the count; a good step increments the count, and at "
        "the growth interval the scale doubles and the count restarts. The count must reset on a "
        "doubling too, or the scale would double on every later step. An empty list returns the "
        "initial scale."))

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
from course.assess.variants import MODEL_SIZES_B

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
#: formats of the literature a student's layout may coincide with (exponent bits, mantissa bits) -> name
_KNOWN_LAYOUTS = {(5, 10): "FP16", (8, 7): "BF16", (5, 2): "FP8 E5M2", (4, 3): "FP8 E4M3",
                  (3, 2): "FP6 E3M2", (6, 9): "IBM's DLFloat16", (8, 10): "TF32"}


def _format_8_1(s):
    # IEEE 754 rules for any layout: bias 2^(e-1) - 1, normals down to 2^(1 - bias), subnormals to
    # 2^(1 - bias - m) (E4M3 differs from IEEE only at the top of its range, not here)
    return core.precision._ieee(f"e{s['exponent_bits']}m{s['mantissa_bits']}", s["exponent_bits"],
                                s["mantissa_bits"], "IEEE 754-2008 rules")


def _key_8_1(s):
    f = _format_8_1(s)
    return {"min_normal": f.min_normal, "min_subnormal": f.min_subnormal}


def _deriv_8_1(s):
    f = _format_8_1(s)
    e, m = f.exponent_bits, f.mantissa_bits
    return (f"Bias $= 2^{{{e}-1}}-1 = {f.bias}$; smallest normal exponent $1-{f.bias} = {1 - f.bias}$: "
            f"$2^{{{1 - f.bias}}}$ = **{rounded(f.min_normal, 5)}**. Below it the subnormals keep the smallest "
            f"exponent and give up leading mantissa bits, one per halving, down to "
            f"$2^{{{1 - f.bias}-{m}}} = 2^{{{1 - f.bias - m}}}$ = **{rounded(f.min_subnormal, 5)}**. A gradient "
            "smaller than the smallest normal keeps fewer significant bits; one below half the smallest subnormal "
            "becomes zero. Loss scaling lifts gradients above these limits.")


def _vary_8_1(s, rng):
    # 6 exponent widths x 9 mantissa widths: the pair of keys is shared by two students about once in 50
    return dict(s, exponent_bits=rng.choice([3, 4, 5, 6, 7, 8]), mantissa_bits=rng.choice(range(2, 11)))


values_exercise(
    CH, "8.1", "The range of a float format", kind="Derive", spec={"exponent_bits": 5, "mantissa_bits": 10},
    vary=_vary_8_1,
    prompt=lambda s: (f"A floating-point format has e = {s['exponent_bits']} exponent bits and m = "
                      f"{s['mantissa_bits']} mantissa bits and follows the IEEE 754 rules (exponent bias "
                      "$2^{e-1}-1$, subnormals below the smallest normal number)"
                      + (f"; this is the layout of {_KNOWN_LAYOUTS[(s['exponent_bits'], s['mantissa_bits'])]}"
                         if (s["exponent_bits"], s["mantissa_bits"]) in _KNOWN_LAYOUTS else "")
                      + ". What are its smallest positive normal number and its smallest positive subnormal "
                        "number? Give plain values (e.g. `1.5e-3`, not `1.5`)."),
    answers={"min_normal": "a plain number", "min_subnormal": "a plain number"}, key=_key_8_1,
    derivation=_deriv_8_1,
    solution=lambda s: (f"e, m = {s['exponent_bits']}, {s['mantissa_bits']}\n"
                        "bias = 2 ** (e - 1) - 1\n"
                        "min_normal = 2.0 ** (1 - bias)\n"
                        "min_subnormal = 2.0 ** (1 - bias - m)"))


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
#: optimizer -> (its name in prose, FP32 state tensors it keeps)
_OPTIMIZERS_8_3 = {"adam": "Adam", "sgd_momentum": "SGD with momentum", "sgd": "plain SGD"}


def _breakdown_8_3(s):
    mixed = core.param_bytes_breakdown("bf16", s["optimizer"], grads="fp32" if s["fp32_grads"] else None,
                                       master="auto" if s["master"] else None)
    pure = core.param_bytes_breakdown("fp32", s["optimizer"])
    return mixed, pure


def _key_8_3(s):
    mixed, pure = _breakdown_8_3(s)
    return {"memory_ratio": mixed["total"] / pure["total"], "mixed_gb": s["params_b"] * mixed["total"]}


def _recipe_8_3(s):
    moments = core.OPTIMIZERS[s["optimizer"]]
    grads = "FP32 gradients (4 bytes)" if s["fp32_grads"] else "BF16 gradients (2 bytes)"
    master = ("an FP32 master copy of the weights (4 bytes)" if s["master"]
              else "no FP32 master copy (the update is applied to the BF16 weights directly)")
    state = (f"which keeps {moments} FP32 state tensor{'s' if moments != 1 else ''} per parameter (4 bytes each)"
             if moments else "which keeps no optimizer state")
    return grads, master, state, moments


def _prompt_8_3(s):
    grads, master, state, moments = _recipe_8_3(s)
    return (f"A {s['params_b']:g}B model is trained with {_OPTIMIZERS_8_3[s['optimizer']]}, {state}. The "
            f"mixed-precision recipe keeps BF16 weights (2 bytes), {grads} and {master}; pure FP32 training keeps "
            f"FP32 weights and gradients (4 bytes each) and the same optimizer state. What is the ratio of "
            "model-state memory, mixed / pure FP32, and how many GB ($10^9$ bytes) of model state does the mixed "
            "recipe need?")


def _vary_8_3(s, rng):
    return dict(s, params_b=rng.choice(MODEL_SIZES_B), optimizer=rng.choice(list(_OPTIMIZERS_8_3)),
                fp32_grads=rng.random() < 0.5, master=rng.random() < 0.7)


values_exercise(
    CH, "8.3", "Memory of mixed precision", kind="Derive",
    spec={"params_b": 13.0, "optimizer": "adam", "fp32_grads": False, "master": True}, vary=_vary_8_3,
    prompt=_prompt_8_3,
    answers={"memory_ratio": "ratio", "mixed_gb": "GB"}, key=_key_8_3,
    solution=lambda s: (f"moments = {core.OPTIMIZERS[s['optimizer']]}\n"
                        f"mixed = 2 + {4 if s['fp32_grads'] else 2} + {4 if s['master'] else 0} + 4 * moments\n"
                        "pure = 4 + 4 + 4 * moments\n"
                        "memory_ratio = mixed / pure\n"
                        f"mixed_gb = {s['params_b']!r} * mixed"),
    derivation=lambda s: (
        f"Mixed: 2 (BF16 weights) + {_breakdown_8_3(s)[0]['gradients']:g} (gradients) + "
        f"{_breakdown_8_3(s)[0]['master']:g} (master) + {_breakdown_8_3(s)[0]['moments']:g} (optimizer state) = "
        f"{_breakdown_8_3(s)[0]['total']:g} B/param. Pure FP32: 4 + 4 + {_breakdown_8_3(s)[1]['moments']:g} = "
        f"{_breakdown_8_3(s)[1]['total']:g} B/param. Ratio **{_key_8_3(s)['memory_ratio']:.4g}**; "
        f"{s['params_b']:g}B parameters \u00d7 {_breakdown_8_3(s)[0]['total']:g} B = "
        f"**{_key_8_3(s)['mixed_gb']:.4g} GB** of model state. With an FP32 master copy and FP32 optimizer state, "
        "mixed precision saves little or nothing on model state (Adam: 16 B/param either way); it saves "
        "activation memory and communication. ZeRO is what shards the model state."))


# 8.4 -----------------------------------------------------------------------------------
#: tensors a student's profile may list, in the order a layer produces them
_TENSORS_8_4 = ("weights", "activations", "attention scores", "activation gradients", "weight gradients",
                "embedding gradients")


def _normal_range(fmt):
    """The span of normal numbers of an FP8 format: largest finite / smallest normal (E4M3 2^14.8, E5M2 2^29.8)."""
    f = core.float_format(fmt)
    return f.max / f.min_normal


def _key_8_4(s):
    # per-tensor scaling maps a tensor's largest magnitude onto the format's largest finite number; the
    # tensor fits a format when its smallest magnitude that must stay normal then stays above the smallest
    # normal, i.e. when amax / amin fits in the format's normal range. E4M3 (more precision) when it fits.
    fits = _normal_range("fp8_e4m3")
    return {"formats": ["E4M3" if a / b <= fits else "E5M2" for a, b in zip(s["amax"], s["amin"])]}


def _vary_8_4(s, rng):
    # five tensors, each measured with a span of 10^2..10^4 (fits E4M3's 2.9 x 10^4) or 10^5..10^7: one
    # format or the other, independently, so a copied list matches about once in 32
    names = sorted(rng.sample(_TENSORS_8_4, 5), key=_TENSORS_8_4.index)
    amax = [rng.choice([0.5, 2.0, 4.0, 12.0, 40.0, 100.0, 300.0]) for _ in names]
    amin = [float(f"{a / 10.0 ** rng.choice([2, 3, 4, 5, 6, 7]):.3g}") for a in amax]
    return dict(s, tensors=names, amax=amax, amin=amin)


def _grouped(text):
    """``5 × 10⁻⁷`` in parentheses after a division sign, a plain number as it is."""
    return f"({text})" if "\u00d7" in text else text


def _deriv_8_4(s):
    fits = _normal_range("fp8_e4m3")
    rows = [f"- {t}: {exact(a)} / {_grouped(exact(b))} = {rounded(a / b, 3)}: **{k}**"
            for t, a, b, k in zip(s["tensors"], s["amax"], s["amin"], _key_8_4(s)["formats"])]
    return (f"E4M3's normal numbers span 448 / $2^{{-6}}$ = {fits:,.0f}; E5M2's span 57344 / $2^{{-14}}$ = "
            f"{_normal_range('fp8_e5m2'):,.0f}. Each tensor's span (largest / smallest magnitude to keep):\n\n"
            + "\n".join(rows)
            + "\n\nE4M3 wherever the span fits (its extra mantissa bit halves the rounding error), E5M2 where only "
              "its extra exponent bit keeps the small values normal. Gradients usually need the range, which is "
              "why the standard recipe (Micikevicius et al. 2022) stores them in E5M2; with finer scaling "
              "(per block instead of per tensor, as DeepSeek-V3 does) every span shrinks and E4M3 can serve "
              "them too.")


values_exercise(
    CH, "8.4", "FP8: E4M3 or E5M2?", kind="Trace",
    spec={"tensors": ["weights", "activations", "weight gradients"], "amax": [2.0, 40.0, 4.0],
          "amin": [0.002, 0.004, 4e-06]},
    vary=_vary_8_4,
    prompt=lambda s: ("E4M3 (3 mantissa bits) reaches at most 448 and its smallest normal number is $2^{-6}$; "
                      "E5M2 (2 mantissa bits) reaches 57344, with smallest normal $2^{-14}$. Each tensor gets its "
                      "own scale factor, which maps its largest magnitude onto the format's largest number. A "
                      "profile of one layer gives, per tensor, the largest magnitude and the smallest magnitude "
                      "that must stay a normal number: "
                      + "; ".join(f"{t}: largest {exact(a)}, smallest {exact(b)}"
                                  for t, a, b in zip(s["tensors"], s["amax"], s["amin"]))
                      + ". Which format should each tensor use: E4M3 (the finer steps) wherever its values fit "
                        "in E4M3's normal range, else E5M2? Give a list of \"E4M3\" or \"E5M2\", one per "
                        "tensor, in the order listed."),
    answers={"formats": "list of formats, in the order listed"}, key=_key_8_4, rtol=0.0,
    solution=lambda s: (f"amax, amin = {s['amax']!r}, {s['amin']!r}\n"
                        "e4m3_span = 448 / 2.0 ** -6\n"
                        "formats = ['E4M3' if a / b <= e4m3_span else 'E5M2' for a, b in zip(amax, amin)]"),
    derivation=_deriv_8_4,
    manual={"prompt": "Why is range what gradients usually need, and what does a forward tensor gain from the "
                      "other format? Answer in three to five sentences.",
            "answer": ("**Model answer.** Gradients span many orders of magnitude and have outliers "
                       "(loss spikes, early training), so a single per-tensor scale leaves their small values "
                       "below E4M3's smallest normal number: they need E5M2's extra exponent bit and its range; "
                       "their coarse 2-bit mantissa is tolerable because the optimizer averages many noisy steps. "
                       "Forward activations and weights are bounded by normalisation and activation functions, so "
                       "their span fits E4M3, whose extra mantissa bit halves the rounding error.\n\n"
                       "**Mark scheme (2 points).** 1 point: gradients need range (exponent bits / outliers / "
                       "dynamic range). 1 point: forward tensors are bounded and benefit from precision (mantissa "
                       "bits). A mention of finer (per-block) scaling is welcome but earns nothing extra."),
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

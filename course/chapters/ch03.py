"""Chapter 3: learning-rate scaling (workbook exercises 3.1-3.5).

Keys come from :mod:`course.core.lr` (linear_scaled_lr, sqrt_scaled_lr,
warmup_steps_heuristic).
"""

from __future__ import annotations

from course import core

from course.assess.activity import Chapter
from course.assess.authoring import values_exercise, written_exercise

CHAPTER = {
    "title": "Chapter 3 \u00b7 Learning-rate scaling",
    "intro": (
        "A learning rate tuned at one batch size is wrong at another. Scaling out data parallelism grows the "
        "batch, so it also forces a decision about the learning rate and its warm-up."
    ),
    "concept": [
        "## Concepts\n\n"
        "A mini-batch gradient is the mean of B per-sample gradients; its variance falls like \u03c3\u00b2/B.\n\n"
        "* **Linear scaling** (Goyal et al. 2017, *Accurate, Large Minibatch SGD*, \u00a72.1): "
        "$\\eta_\\text{new} = \\eta_\\text{base} \\cdot B_\\text{new}/B_\\text{base}$. k small steps with batch B move the "
        "weights about as far as one step with batch kB and k times the rate, as long as the gradient changes "
        "little over those k steps.\n"
        "* **Square-root scaling** (Krizhevsky 2014; Hoffer et al. 2017, \u00a74): "
        "$\\eta_\\text{new} = \\eta_\\text{base} \\sqrt{B_\\text{new}/B_\\text{base}}$ keeps the variance of the update "
        "constant; it is the more conservative rule, used for adaptive optimizers and very large batches.\n"
        "* **Warm-up**: start near zero and ramp to the peak over W steps, because early gradients are large and "
        "noisy. A rule of thumb from the workbook: $W \\approx (B_\\text{new}/B_\\text{base}) \\times 1000$ steps, "
        "to be compared with 5\u201310 % of the run.\n"
        "* **Critical batch size** (McCandlish et al. 2018, *An Empirical Model of Large-Batch Training*): "
        "below it, doubling the batch nearly halves the number of steps; above it the steps barely fall while "
        "the compute per step doubles.",
    ],
}

#: this chapter as one activity (listed in :mod:`course.activities`); the exercises below add to it
ACTIVITY = CH = Chapter('ch03', 'ch03_lr_scaling', **CHAPTER)

LR = {"base_lr": 3e-4, "base_batch": 256, "new_batch": 2048}


def _vary_lr(s, rng):
    # batches of 1, 1.5 and 2 x a power of two, so the ratio new/base (the warm-up of 3.3 is 1000 x it)
    # takes some 30 values, not 5
    base = rng.choice([64, 96, 128, 192, 256, 384, 512])
    new = rng.choice([b for b in (512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384) if b >= 2 * base])
    return dict(s, base_lr=rng.choice([1e-4, 2e-4, 3e-4, 6e-4, 1e-3]), base_batch=base, new_batch=new)

values_exercise(
    CH, "3.1", "Linear scaling", kind="Derive", spec=dict(LR), vary=_vary_lr,
    prompt=lambda s: (f"The learning rate {s['base_lr']:g} was tuned at batch {s['base_batch']}. The new batch is "
                      f"{s['new_batch']}. What learning rate does the linear scaling rule give?"),
    answers={"lr_linear": "learning rate, no unit"},
    key=lambda s: {"lr_linear": core.linear_scaled_lr(s["base_lr"], s["base_batch"], s["new_batch"])},
    solution=lambda s: f"lr_linear = {s['base_lr']!r} * {s['new_batch']} / {s['base_batch']}",
    derivation=lambda s: (
        f"\u03b7 = {s['base_lr']:g} \u00d7 {s['new_batch']}/{s['base_batch']} = "
        f"**{core.linear_scaled_lr(s['base_lr'], s['base_batch'], s['new_batch']):.4g}**: a "
        f"{s['new_batch'] / s['base_batch']:g}\u00d7 batch gets a {s['new_batch'] / s['base_batch']:g}\u00d7 learning rate "
        "(with warm-up)."),
)

values_exercise(
    CH, "3.2", "Square-root scaling", kind="Derive", spec=dict(LR), vary=_vary_lr,
    prompt=lambda s: (f"Same setting: {s['base_lr']:g} at batch {s['base_batch']}, new batch {s['new_batch']}. What "
                      "learning rate does square-root scaling give?"),
    answers={"lr_sqrt": "learning rate, no unit"},
    key=lambda s: {"lr_sqrt": core.sqrt_scaled_lr(s["base_lr"], s["base_batch"], s["new_batch"])},
    solution=lambda s: f"lr_sqrt = {s['base_lr']!r} * ({s['new_batch']} / {s['base_batch']}) ** 0.5",
    derivation=lambda s: (
        f"\u03b7 = {s['base_lr']:g} \u00d7 \u221a({s['new_batch']}/{s['base_batch']}) = "
        f"**{core.sqrt_scaled_lr(s['base_lr'], s['base_batch'], s['new_batch']):.4g}**, a factor "
        f"{(s['new_batch'] / s['base_batch']) ** 0.5:.3g} instead of {s['new_batch'] / s['base_batch']:g}."),
)

values_exercise(
    CH, "3.3", "Warm-up steps", kind="Derive", spec={"base_batch": 256, "new_batch": 2048, "total_steps": 100_000},
    vary=lambda s, rng: dict(_vary_lr(s, rng), total_steps=rng.choice([50_000, 100_000, 150_000, 200_000, 300_000])),
    prompt=lambda s: (f"A run of {s['total_steps']:,} steps uses batch {s['new_batch']}, scaled up from "
                      f"{s['base_batch']}. With the rule of thumb W = (B_new / B_base) \u00d7 1000 steps, how many "
                      "warm-up steps?"),
    answers={"warmup_steps": "optimizer steps"},
    key=lambda s: {"warmup_steps": core.warmup_steps_heuristic(s["base_batch"], s["new_batch"])},
    solution=lambda s: f"warmup_steps = {s['new_batch']} / {s['base_batch']} * 1000",
    derivation=lambda s: (
        f"W = {s['new_batch']}/{s['base_batch']} \u00d7 1000 = "
        f"**{core.warmup_steps_heuristic(s['base_batch'], s['new_batch']):.0f} steps**, i.e. "
        f"{core.warmup_steps_heuristic(s['base_batch'], s['new_batch']) / s['total_steps']:.1%} of the run (the usual "
        "range is 5\u201310 %; much less risks early divergence, much more wastes the high learning rate)."),
)

written_exercise(
    CH, "3.4", "Critical batch size", spec={},
    prompt=lambda s: ("The critical batch size B_crit is where the gradient noise is about as large as the "
                      "signal. What is the practical consequence of training with a batch well above B_crit? "
                      "Answer in two or three sentences, in terms of optimizer steps and total compute."),
    model_answer=("Below B_crit, doubling the batch almost halves the number of optimizer steps to reach a given "
                  "loss, so more GPUs buy time at little extra compute. Above B_crit the gradient is already "
                  "accurate: doubling the batch barely reduces the steps, so the total compute (samples processed) "
                  "almost doubles for the same result. Hence batch-size ramp-up schedules (Llama 3 grows its "
                  "batch as training proceeds) and a ceiling on useful data parallelism."),
    mark_scheme=("1 point: steps to a target loss stop falling (diminishing returns) above B_crit. 1 point: "
                 "compute/samples per unit progress grows (wasted compute), or names a consequence such as batch "
                 "ramp-up or a limit on data-parallel scaling."),
)


def _decay(s):
    # the same tokens at a larger batch: the run is base_steps x base_batch / new_batch steps long,
    # and the schedule must end where the run ends
    steps = s["base_steps"] * s["base_batch"] / s["new_batch"]
    return {"decay_steps": int(round(steps))}


def _vary_decay(s, rng):
    # the run length, the batch and its growth (2x to 8x) all vary, so the steps actually run (the key)
    # take some 60 values; every draw divides evenly
    base, factor = rng.choice([128, 256, 512, 1024]), rng.choice([2, 3, 4, 5, 6, 8])
    lengths = [n for n in range(50_000, 300_001, 10_000) if n % factor == 0]
    return dict(s, base_steps=rng.choice(lengths), base_batch=base, new_batch=base * factor,
                peak_lr=rng.choice([1e-4, 2e-4, 3e-4, 6e-4]))


values_exercise(
    CH, "3.5", "Schedule length", kind="Trace",
    spec={"base_steps": 100_000, "base_batch": 512, "new_batch": 1024, "peak_lr": 3e-4}, vary=_vary_decay,
    prompt=lambda s: (f"A cosine schedule peaks at {s['peak_lr']:g} and decays over {s['base_steps']:,} steps at "
                      f"batch {s['base_batch']}. A colleague raises the batch to {s['new_batch']}, applies linear "
                      "scaling (peak "
                      f"{core.linear_scaled_lr(s['peak_lr'], s['base_batch'], s['new_batch']):g}) and cuts the number "
                      "of steps so the same tokens are seen. Over how many steps should the cosine decay now?"),
    answers={"decay_steps": "steps"},
    key=_decay,
    solution=lambda s: f"decay_steps = {s['base_steps']} * {s['base_batch']} // {s['new_batch']}",
    manual={"prompt": "Why? One or two sentences.", "points": 1.0,
            "answer": ("**Model answer.** The schedule describes progress through the run, so it must reach its "
                       "minimum at the last step actually taken. Over the old number of steps it would stop part "
                       "way down, with the learning rate still high and the loss not annealed.\n\n**Mark scheme "
                       "(1 point).** Says the decay must end when training ends / follow the actual number of "
                       "steps.")},
    derivation=lambda s: (
        f"The same tokens at a {s['new_batch'] / s['base_batch']:g}\u00d7 batch take {s['base_steps']:,} \u00d7 "
        f"{s['base_batch']}/{s['new_batch']} = **{_decay(s)['decay_steps']:,} steps**, and the cosine must decay over "
        "the steps actually run. The schedule is a function of training progress: it must reach its minimum at the "
        f"end of the run. Decaying over {s['base_steps']:,} steps would stop at "
        f"{_decay(s)['decay_steps'] / s['base_steps']:.0%} of the cosine with a learning rate still far from its "
        "minimum."),
)

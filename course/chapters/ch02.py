"""Chapter 2: gradient accumulation (workbook exercises 2.1-2.5).

Keys come from :mod:`course.core.data_parallel` (effective_batch,
required_accum_steps, allreduce_time_saved, accumulation_step_time,
samples_per_second).
"""

from __future__ import annotations

from course import core
from course.core.units import ms

from course.assess.activity import Chapter
from course.assess.authoring import build_exercise, rounded, values_exercise
from course.assess.probes import make_probes

CHAPTER = {
    "title": "Chapter 2 \u00b7 Gradient accumulation",
    "intro": (
        "The batch size is a training hyper-parameter, but the micro-batch a GPU can hold is set by its "
        "memory. Gradient accumulation decouples the two: run several micro-batches, add their gradients "
        "in place, and step the optimizer (and all-reduce the gradients) once per accumulation cycle."
    ),
    "concept": [
        "## Concepts\n\n"
        "$$B_\\text{eff} = b_\\text{micro} \\cdot k_\\text{accum} \\cdot N_\\text{DP} \\quad [\\text{samples per optimizer step}]$$\n\n"
        "To reach a target batch, round up: $k = \\lceil B_\\text{target} / (b_\\text{micro} N_\\text{DP}) \\rceil$ "
        "(the batch is then exactly the target only when $b_\\text{micro} N_\\text{DP}$ divides it).\n\n"
        "* **Memory**: the same as one micro-batch; gradients are summed into the same buffers.\n"
        "* **Compute**: k forward+backward passes, one after the other: time grows linearly with k.\n"
        "* **Communication**: one gradient all-reduce per optimizer step instead of one per micro-batch, "
        "so with k micro-batches you save (k\u22121) all-reduces per step.\n\n"
        "Step time without overlap: $T_\\text{step} = k\\,t_\\text{micro} + T_\\text{allreduce} + T_\\text{opt}$; "
        "throughput = $B_\\text{eff} / T_\\text{step}$.\n\n"
        "Source: Goyal et al., *Accurate, Large Minibatch SGD*, 2017; PyTorch DDP `no_sync()` "
        "(Li et al., VLDB 2020). Accumulation gives the same gradient as one big batch (up to "
        "floating-point order and batch-norm statistics), so it changes speed, not the maths of the update.",
    ],
}

#: this chapter as one activity (listed in :mod:`course.activities`); the exercises below add to it
ACTIVITY = CH = Chapter('ch02', 'ch02_gradient_accumulation', **CHAPTER)

def _vary_accumulation(s, rng):
    # draw the answer first, uniformly from 3..64: with power-of-two batches and degrees the answer
    # was one of 7 powers of two, so a copied one passed for about one classmate in 6
    micro_batch, dp = rng.choice([1, 2, 4, 8]), rng.choice([8, 12, 16, 24, 32, 48, 64])
    return dict(s, target_batch=rng.randrange(3, 65) * micro_batch * dp, micro_batch=micro_batch, dp=dp)


values_exercise(
    CH, "2.1", "Accumulation steps", kind="Derive",
    spec={"target_batch": 2048, "micro_batch": 4, "dp": 8},
    vary=_vary_accumulation,
    prompt=lambda s: (f"Target effective batch {s['target_batch']} sequences, micro-batch {s['micro_batch']} "
                      f"per GPU, data-parallel degree {s['dp']}. How many accumulation steps per optimizer step?"),
    answers={"accum_steps": "steps"},
    key=lambda s: {"accum_steps": core.required_accum_steps(s["target_batch"], s["micro_batch"], s["dp"])},
    solution=lambda s: f"accum_steps = {s['target_batch']} // ({s['micro_batch']} * {s['dp']})",
    derivation=lambda s: (
        f"k = {s['target_batch']} / ({s['micro_batch']} \u00d7 {s['dp']}) = "
        f"**{core.required_accum_steps(s['target_batch'], s['micro_batch'], s['dp'])}** micro-batches per optimizer "
        "step; the gradient all-reduce runs once per step, not once per micro-batch."),
)


def _saved_ms(s):
    return core.allreduce_time_saved(s["allreduce_ms"] * ms, s["accum_steps"]) / ms


values_exercise(
    CH, "2.2", "Communication saved", kind="Derive",
    spec={"accum_steps": 64, "allreduce_ms": 50.0},
    vary=lambda s, rng: dict(s, accum_steps=rng.choice([8, 16, 24, 32, 48, 64, 96, 128]),
                             allreduce_ms=float(rng.choice([20, 35, 50, 65, 80]))),
    prompt=lambda s: (f"Without accumulation you all-reduce after each of the {s['accum_steps']} micro-batches; with "
                      f"accumulation once per {s['accum_steps']}. One all-reduce takes {s['allreduce_ms']:g} ms. "
                      "How much all-reduce time do you save per optimizer step?"),
    answers={"saved_ms": "ms"},
    key=lambda s: {"saved_ms": _saved_ms(s)},
    solution=lambda s: f"saved_ms = ({s['accum_steps']} - 1) * {s['allreduce_ms']!r}",
    derivation=lambda s: (
        f"Without: {s['accum_steps']} \u00d7 {s['allreduce_ms']:g} ms; with: 1 \u00d7 {s['allreduce_ms']:g} ms; "
        f"saved: ({s['accum_steps']} \u2212 1) \u00d7 {s['allreduce_ms']:g} = **{_saved_ms(s):.5g} ms**. "
        f"The two runs are not the same training, though: without accumulation you take {s['accum_steps']} "
        f"optimizer steps with a {s['accum_steps']}\u00d7 smaller batch."),
)


def _step_and_throughput(s):
    step = core.accumulation_step_time(s["micro_ms"] * ms, s["accum_steps"], s["allreduce_ms"] * ms,
                                       s["optimizer_ms"] * ms)
    return {"step_time_s": step, "throughput_seq_s": core.samples_per_second(s["batch"], step)}


def _vary_step(s, rng):
    accum = rng.choice([16, 32, 48, 64, 96])
    # 4 sequences per micro-batch on each of 8 GPUs, as in the workbook
    return dict(s, micro_ms=float(rng.choice([80, 100, 120, 150, 200])), accum_steps=accum,
                allreduce_ms=float(rng.choice([30, 50, 80])), optimizer_ms=float(rng.choice([1, 2, 5])),
                batch=4 * accum * 8)


values_exercise(
    CH, "2.3", "Throughput with accumulation", kind="Derive",
    spec={"micro_ms": 120.0, "accum_steps": 64, "allreduce_ms": 50.0, "optimizer_ms": 1.0, "batch": 2048},
    vary=lambda s, rng: _vary_step(s, rng),
    prompt=lambda s: (f"One micro-batch (forward + backward) takes {s['micro_ms']:g} ms on each GPU; the all-reduce "
                      f"takes {s['allreduce_ms']:g} ms and the optimizer step {s['optimizer_ms']:g} ms. With "
                      f"{s['accum_steps']} accumulation steps the effective batch is {s['batch']} sequences over all "
                      "8 GPUs. What is the wall-clock time of one optimizer step, and the throughput?"),
    answers={"step_time_s": "s", "throughput_seq_s": "sequences per second, all GPUs"},
    key=_step_and_throughput,
    solution=lambda s: (f"step_time_s = ({s['accum_steps']} * {s['micro_ms']!r} + {s['allreduce_ms']!r} + "
                        f"{s['optimizer_ms']!r}) / 1000\nthroughput_seq_s = {s['batch']} / step_time_s"),
    derivation=lambda s: (
        f"Compute {s['accum_steps']} \u00d7 {s['micro_ms']:g} ms + all-reduce {s['allreduce_ms']:g} ms + optimizer "
        f"{s['optimizer_ms']:g} ms = **{_step_and_throughput(s)['step_time_s']:.4g} s**; throughput "
        f"{s['batch']} / {_step_and_throughput(s)['step_time_s']:.4g} s = "
        f"**{_step_and_throughput(s)['throughput_seq_s']:.4g} sequences/s**. Communication is now "
        f"{100 * s['allreduce_ms'] / 1000 / _step_and_throughput(s)['step_time_s']:.2g} % of the step."),
)

_batch_probes = make_probes(
    fixed=[[4, 64, 8], [1, 1, 1], [16, 3, 128]],
    random_args=lambda r: [r.randint(1, 64), r.randint(1, 512), r.randint(1, 4096)],
    invalid=[[0, 4, 8], [4, 0, 8], [4, 4, 0], [-2, 4, 8], [2.5, 4, 8]])
_accum_probes = make_probes(
    fixed=[[2048, 4, 8], [100, 4, 8], [1, 1, 1], [4096, 8, 8], [1000, 3, 7]],
    random_args=lambda r: [r.randint(1, 1 << 20), r.randint(1, 64), r.randint(1, 1024)],
    invalid=[[0, 4, 8], [2048, 0, 8], [2048, 4, 0], [-2048, 4, 8], [2048, 2.5, 8]])

build_exercise(
    CH, "2.4", "effective_batch and required_accum_steps", spec={"example": [4, 64, 8]},
    vary=lambda s, rng: dict(s, example=[rng.choice([1, 2, 4, 8, 16]), rng.choice([3, 8, 16, 32, 64]),
                                         rng.choice([4, 8, 16, 64])]),
    prompt=lambda s: (
        "Write two functions (all arguments are whole numbers \u2265 1; raise `ValueError` otherwise; return a "
        "plain `int`):\n\n"
        "* `effective_batch(micro_batch, accum_steps, dp)`: samples per optimizer step.\n"
        "* `required_accum_steps(target_batch, micro_batch, dp)`: the fewest accumulation steps whose effective "
        "batch is at least `target_batch`.\n\n"
        f"Worked examples: `effective_batch({', '.join(map(str, s['example']))})` = "
        f"{core.effective_batch(*s['example'])}; "
        f"`required_accum_steps(2048, 4, 8)` = {core.required_accum_steps(2048, 4, 8)}; "
        f"`required_accum_steps(100, 4, 8)` = {core.required_accum_steps(100, 4, 8)}."),
    function="effective_batch", signature="(micro_batch, accum_steps, dp)",
    docstring="Samples per optimizer step: micro_batch * accum_steps * dp.",
    body=("for name, value in (('micro_batch', micro_batch), ('accum_steps', accum_steps), ('dp', dp)):\n"
          "    if value != int(value) or value < 1:\n"
          "        raise ValueError(f'{name} must be a whole number >= 1, got {value!r}')\n"
          "return int(micro_batch) * int(accum_steps) * int(dp)"),
    reference=lambda *a: core.effective_batch(*a), probes=_batch_probes,
    examples=[[4, 64, 8]], returns="int", points=2.0,
    extra_functions=[dict(
        function="required_accum_steps", signature="(target_batch, micro_batch, dp)",
        docstring="Fewest accumulation steps with micro_batch * steps * dp >= target_batch.",
        body=("for name, value in (('target_batch', target_batch), ('micro_batch', micro_batch), ('dp', dp)):\n"
              "    if value != int(value) or value < 1:\n"
              "        raise ValueError(f'{name} must be a whole number >= 1, got {value!r}')\n"
              "per_pass = int(micro_batch) * int(dp)\n"
              "return -(-int(target_batch) // per_pass)   # integer ceiling"),
        reference=lambda *a: core.required_accum_steps(*a), probes=_accum_probes,
        examples=[[2048, 4, 8], [100, 4, 8]], points=2.0, returns="int")],
    derivation=lambda s: (
        "`effective_batch` multiplies the three factors. `required_accum_steps` divides and rounds **up** "
        "(integer ceiling, `-(-a // b)`, which avoids float rounding for large numbers): "
        "100 / (4 \u00d7 8) = 3.125, so 4 steps (128 samples) are needed; rounding down would miss the target."),
)


def _micro_ms(s, micro, checkpointing):
    # a micro-batch costs a fixed overhead (kernel launches, per-micro-batch synchronisation) plus a time
    # per sample; recomputing the forward pass adds its share to the whole micro-batch
    return (s["fixed_ms"] + micro * s["per_sample_ms"]) * ((1 + s["recompute_overhead"]) if checkpointing else 1)


def _step_ms(s):
    steps_plain = core.required_accum_steps(s["batch"], s["micro_plain"], s["dp"])
    steps_ckpt = core.required_accum_steps(s["batch"], s["micro_ckpt"], s["dp"])
    return steps_plain * _micro_ms(s, s["micro_plain"], False), steps_ckpt * _micro_ms(s, s["micro_ckpt"], True)


def _tradeoff(s):
    t_plain, t_ckpt = _step_ms(s)
    return {"faster": "no_checkpointing" if t_plain < t_ckpt else "checkpointing",
            "slowdown": max(t_plain, t_ckpt) / min(t_plain, t_ckpt)}


def _vary_tradeoff(s, rng):
    # checkpointing lets the micro-batch grow 2x or 4x; whether that pays for the recomputation depends on
    # how much of a micro-batch's time is fixed overhead, so either option can win (never within 5 %)
    while True:
        plain = rng.choice([1, 2, 4, 8])
        v = dict(s, micro_plain=plain, micro_ckpt=plain * rng.choice([2, 4]), batch=rng.choice([1024, 2048, 4096]),
                 dp=rng.choice([4, 8, 16]), recompute_overhead=rng.choice([0.2, 0.25, 0.33, 0.4]),
                 fixed_ms=float(rng.choice([0, 5, 10, 20, 30, 40, 60])),
                 per_sample_ms=float(rng.choice([4, 6, 8, 10, 12, 15])))
        if _tradeoff(v)["slowdown"] > 1.05:
            return v


values_exercise(
    CH, "2.5", "Memory versus speed", kind="Trace",
    spec={"batch": 2048, "dp": 8, "micro_plain": 8, "micro_ckpt": 16, "recompute_overhead": 0.33,
          "fixed_ms": 0.0, "per_sample_ms": 10.0},
    vary=_vary_tradeoff,
    prompt=lambda s: (f"Option A: micro-batch {s['micro_plain']} with activation checkpointing off. Option B: "
                      f"micro-batch {s['micro_ckpt']} with activation checkpointing on, which recomputes the forward "
                      f"pass and makes every micro-batch take {s['recompute_overhead']:.0%} longer. Both reach "
                      f"B_eff = {s['batch']} on {s['dp']} GPUs by accumulation. Without checkpointing a micro-batch "
                      f"takes {s['fixed_ms']:g} ms (launches and synchronisation, whatever its size) plus "
                      f"{s['per_sample_ms']:g} ms per sample. Which is faster per optimizer step, and how many times "
                      "longer does the slower option take?"),
    answers={"faster": "choice", "slowdown": "ratio slower/faster"},
    options={"faster": ["no_checkpointing", "checkpointing"]},
    key=_tradeoff,
    solution=lambda s: (f"batch, dp, fixed, per_sample, r = {s['batch']}, {s['dp']}, {s['fixed_ms']!r}, "
                        f"{s['per_sample_ms']!r}, {s['recompute_overhead']!r}\n"
                        f"t_plain = -(-batch // ({s['micro_plain']} * dp)) * (fixed + {s['micro_plain']} * per_sample)\n"
                        f"t_ckpt = -(-batch // ({s['micro_ckpt']} * dp)) * (fixed + {s['micro_ckpt']} * per_sample) "
                        "* (1 + r)\n"
                        "faster = 'no_checkpointing' if t_plain < t_ckpt else 'checkpointing'\n"
                        "slowdown = max(t_plain, t_ckpt) / min(t_plain, t_ckpt)"),
    derivation=lambda s: (
        f"A: {core.required_accum_steps(s['batch'], s['micro_plain'], s['dp'])} micro-batches \u00d7 "
        f"({s['fixed_ms']:g} + {s['micro_plain']} \u00d7 {s['per_sample_ms']:g}) ms = {rounded(_step_ms(s)[0])} ms. B: "
        f"{core.required_accum_steps(s['batch'], s['micro_ckpt'], s['dp'])} micro-batches \u00d7 "
        f"({s['fixed_ms']:g} + {s['micro_ckpt']} \u00d7 {s['per_sample_ms']:g}) ms \u00d7 "
        f"{1 + s['recompute_overhead']:g} = {rounded(_step_ms(s)[1])} ms. "
        f"**{'No checkpointing' if _tradeoff(s)['faster'] == 'no_checkpointing' else 'Checkpointing'}** wins, the "
        f"other takes **{_tradeoff(s)['slowdown']:.3g}\u00d7** as long. Both process the same samples; B pays the "
        "recomputation on every sample but the fixed overhead on fewer, larger micro-batches. When little of a "
        "micro-batch's time is fixed, checkpointing buys memory, not speed; when much of it is, the larger "
        "micro-batch it allows can win."),
)

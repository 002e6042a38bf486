"""Chapter 5 - pipeline parallelism: workbook exercises 5.1-5.6.

Keys come from ``course.core`` (``bubble_overhead``, ``bubble_fraction``) applied to each
exercise's spec. Source of the physics: Narayanan et al., "Efficient Large-Scale Language
Model Training on GPU Clusters Using Megatron-LM", SC21, section 2.2.
"""

from __future__ import annotations

import random

from course import core
from course.core import units as u
from course.assess.activity import Chapter
from course.assess.authoring import debug_exercise, values_exercise, workbook_listing

CHAPTER = {
    "title": "Chapter 5 \u00b7 Pipeline parallelism",
    "intro": ("Cut a model between its layers, give each piece to a GPU, and stream micro-batches "
              "through the pieces. This chapter measures what that costs: idle time (the bubble), "
              "activation memory, and point-to-point traffic."),
    "concept": [r"""
## Stages, micro-batches and the bubble

With pipeline parallelism of degree $p$ the $L$ layers are split into $p$ consecutive
*stages*, one per GPU. Stage $i$ runs its layers and hands its activations to stage $i+1$ in
the forward pass; gradients flow back from stage $i+1$ to stage $i$ in the backward pass. So
that more than one stage works at a time, the batch of a step is cut into $m$
*micro-batches* that follow each other down the pipe.

The last stage cannot start before the first micro-batch has crossed the other $p-1$
stages, and the first stage idles at the end of the step while the last backward pass
drains back to it. With $t_f$ and $t_b$ the forward and backward time (seconds) of one
micro-batch on one stage, every stage idles for

$$t_\text{bubble} = (p-1)\,(t_f+t_b)\qquad\text{beside its useful work}\qquad t_\text{ideal} = m\,(t_f+t_b)$$

(Narayanan et al., SC21, section 2.2). The same bubble is quoted in two ways, so always say
which one you mean:

| quantity | formula | $p=8,\ m=32$ | in `course.core` |
|---|---|---|---|
| bubble **overhead**: bubble time relative to ideal compute time | $(p-1)/m$ | 21.9 % | `bubble_overhead(p, m)` |
| bubble **share**: fraction of the whole step spent idle | $(p-1)/(m+p-1)$ | 17.9 % | `bubble_fraction(p, m)` |

An overhead $o$ and a share $f$ of the same bubble satisfy $f = o/(1+o)$. An overhead can
exceed 100 %; a share never reaches 100 %.
""", r"""
## Schedules

* **GPipe** (Huang et al. 2019): all $m$ forward passes, then all $m$ backward passes. The
  first stage keeps the activations of all $m$ micro-batches until their backward pass.
* **1F1B** (PipeDream-Flush; Narayanan et al. 2021): stage 0 runs $p-1$ warm-up forward
  passes, then alternates one forward with one backward, then drains. A stage never holds more
  than $p$ micro-batches in flight. 1F1B has **the same bubble** as GPipe; what it saves is
  activation memory.
* **Interleaved 1F1B**: each GPU holds $v$ non-adjacent chunks of layers ("virtual
  stages"). The bubble overhead falls to $(p-1)/(v\,m)$, but a micro-batch now crosses
  $p\,v-1$ chunk boundaries instead of $p-1$: about $v$ times the point-to-point traffic.

## Point-to-point traffic

At every boundary a micro-batch sends its activation tensor forward and later receives a
gradient of the same size: $b\,s\,h$ elements of 2 bytes in FP16/BF16 ($b$ micro-batch size,
$s$ sequence length, $h$ hidden size).
"""],
}

#: this chapter as one activity (listed in :mod:`course.activities`); the exercises below add to it
ACTIVITY = CH = Chapter('ch05', 'ch05_pipeline', **CHAPTER)


# 5.1 -----------------------------------------------------------------------------------
def _key_5_1(s):
    return {"bubble_overhead_pct": 100 * core.bubble_overhead(s["p"], s["m"])}


values_exercise(
    CH, "5.1", "Pipeline bubble", kind="Derive", spec={"p": 4, "m": 12},
    vary=lambda s, rng: dict(s, p=rng.choice([2, 4, 8, 16]), m=rng.choice([8, 12, 16, 24, 32])),
    prompt=lambda s: (f"A pipeline of $p = {s['p']}$ stages runs $m = {s['m']}$ micro-batches per "
                      "step with the 1F1B schedule. What is the **bubble overhead**, the idle time "
                      "relative to the ideal compute time, in percent (write `12.5` for 12.5 %)?"),
    answers={"bubble_overhead_pct": "%"}, key=_key_5_1,
    solution=lambda s: f"p, m = {s['p']}, {s['m']}\nbubble_overhead_pct = 100 * (p - 1) / m",
    derivation=lambda s: (
        f"Each stage idles for $(p-1)(t_f+t_b)$ and computes for $m(t_f+t_b)$, so the overhead is "
        f"$(p-1)/m = {s['p'] - 1}/{s['m']}$ = **{_key_5_1(s)['bubble_overhead_pct']:.4g} %**. The "
        f"same bubble as a share of the step: $(p-1)/(m+p-1) = {s['p'] - 1}/{s['m'] + s['p'] - 1}$ = "
        f"{100 * core.bubble_fraction(s['p'], s['m']):.4g} %."),
    note=("The workbook calls this number the \"bubble fraction\". It is the overhead relative to "
          "ideal compute time; the share of the whole step is smaller (9.6 asks for both)."))


# 5.2 -----------------------------------------------------------------------------------
def _key_5_2(s):
    # stage 0's 1F1B peak is min(p, m) micro-batches: p - 1 warm-up forwards, then one more
    # in steady state before the first backward (Narayanan et al. 2021, sec. 2.2.1)
    # (with fewer micro-batches than stages, the warm-up runs all m: min(p - 1, m))
    warmup = min(core.in_flight_microbatches(s["p"], s["m"], "1f1b"), s["p"] - 1)
    return {"warmup_activations_gb": warmup * s["act_gb"]}


values_exercise(
    CH, "5.2", "Activation memory of 1F1B", kind="Derive", spec={"p": 4, "m": 12, "act_gb": 2.0},
    vary=lambda s, rng: dict(s, p=rng.choice([2, 4, 6, 8, 16]), m=rng.choice([16, 24, 32]),
                             act_gb=rng.choice([0.5, 1.0, 1.5, 2.0, 3.0])),
    prompt=lambda s: (f"With 1F1B on $p = {s['p']}$ stages and $m = {s['m']}$ micro-batches, stage 0 "
                      "first runs its warm-up forward passes, one for each later stage, before it can "
                      f"start its first backward pass. Each micro-batch leaves {s['act_gb']:g} GB of "
                      "activations stashed on the stage until its backward pass. How many GB of "
                      "activations does stage 0 hold at the end of its warm-up?"),
    answers={"warmup_activations_gb": "GB"}, key=_key_5_2,
    solution=lambda s: (f"p, act_gb = {s['p']}, {s['act_gb']}\n"
                        "warmup_activations_gb = (p - 1) * act_gb"),
    derivation=lambda s: (
        f"Warm-up forwards on stage 0: $p-1 = {s['p'] - 1}$. Stashed: ${s['p'] - 1}\\times{s['act_gb']:g}$ GB "
        f"= **{_key_5_2(s)['warmup_activations_gb']:g} GB**. The first steady-state forward adds one "
        f"more micro-batch before the first backward frees one, so the peak is $p$ micro-batches = "
        f"{s['p'] * s['act_gb']:g} GB. GPipe keeps all $m = {s['m']}$: {s['m'] * s['act_gb']:g} GB."),
    note=("The workbook says 1F1B keeps $p-1$ micro-batches in flight. That is the count at the end "
          "of the warm-up, which is what this exercise asks; the peak, one forward later, is $p$."))


# 5.3 -----------------------------------------------------------------------------------
def _key_5_3(s):
    return {"interleaved_overhead_pct": 100 * core.bubble_overhead(s["p"], s["m"], s["v"])}


values_exercise(
    CH, "5.3", "Interleaved 1F1B", kind="Derive", spec={"p": 4, "m": 12, "v": 4},
    vary=lambda s, rng: dict(s, p=rng.choice([4, 6, 8]), m=rng.choice([8, 12, 16, 24]), v=rng.choice([2, 3, 4])),
    prompt=lambda s: (f"A pipeline of $p = {s['p']}$ stages runs $m = {s['m']}$ micro-batches per step "
                      "(this exercise's own numbers, set independently of 5.1's), but each GPU now holds "
                      f"$v = {s['v']}$ virtual stages (interleaved 1F1B). What is the bubble "
                      "overhead in percent?"),
    answers={"interleaved_overhead_pct": "%"}, key=_key_5_3,
    solution=lambda s: (f"p, m, v = {s['p']}, {s['m']}, {s['v']}\n"
                        "interleaved_overhead_pct = 100 * (p - 1) / (v * m)"),
    derivation=lambda s: (
        f"Overhead $=(p-1)/(v\\,m) = {s['p'] - 1}/({s['v']}\\times{s['m']})$ = "
        f"**{_key_5_3(s)['interleaved_overhead_pct']:.4g} %**, {s['v']} times less than without "
        f"interleaving. The price: each micro-batch crosses $p\\,v-1 = {s['p'] * s['v'] - 1}$ chunk "
        f"boundaries instead of $p-1 = {s['p'] - 1}$ (counts for this exercise's own numbers, set independently of 5.4's; "
        "exercise 5.4 turns counts like these into traffic)."))


# 5.4 -----------------------------------------------------------------------------------
def _key_5_4(s):
    # (p v - 1) boundaries x m micro-batches x (activation forward + gradient backward)
    return {"p2p_total_gb": core.p2p_bytes_per_step(s["act_mb"] * u.MB, s["p"], s["m"], s["v"]) / u.GB}


values_exercise(
    CH, "5.4", "Point-to-point traffic", kind="Derive", spec={"p": 4, "m": 12, "v": 4, "act_mb": 500.0},
    vary=lambda s, rng: dict(s, p=rng.choice([2, 4, 8]), m=rng.choice([8, 12, 16]), v=rng.choice([1, 2, 4]),
                             act_mb=float(rng.choice([250, 400, 500, 800]))),
    prompt=lambda s: (f"At a stage boundary each micro-batch's activation tensor is {s['act_mb']:g} MB "
                      "(FP16); the gradient sent back in the backward pass has the same size. With "
                      f"$p = {s['p']}$, $m = {s['m']}$ and $v = {s['v']}$ virtual stages per GPU the "
                      "model is a chain of $p\\,v$ chunks. How many GB cross chunk boundaries per "
                      "step, forward and backward together, summed over all boundaries?"),
    answers={"p2p_total_gb": "GB"}, key=_key_5_4,
    solution=lambda s: (f"p, m, v, act_mb = {s['p']}, {s['m']}, {s['v']}, {s['act_mb']}\n"
                        "p2p_total_gb = (p * v - 1) * m * 2 * act_mb / 1000"),
    derivation=lambda s: (
        f"Chunk boundaries: $p\\,v-1 = {s['p'] * s['v'] - 1}$. Per boundary and micro-batch: "
        f"{s['act_mb']:g} MB forward + {s['act_mb']:g} MB backward. Total: "
        f"${s['p'] * s['v'] - 1}\\times{s['m']}\\times{2 * s['act_mb']:g}$ MB = "
        f"**{_key_5_4(s)['p2p_total_gb']:.4g} GB** per step. At 600 GB/s that is "
        f"{_key_5_4(s)['p2p_total_gb'] / 600 * 1e3:.0f} ms of transfers, mostly overlapped with "
        "compute, which is why neighbouring chunks must sit on fast links."))


# 5.5 -----------------------------------------------------------------------------------
#: the listing; ``?x|`` lines are optional (each student's listing shows some, so the buggy line's number
#: varies) and change nothing ``bubble_fraction`` does
LISTING_5_5 = '''
?a|"""Schedule arithmetic for pipeline parallelism."""
?b|# A slot is the time one stage takes for one micro-batch's forward and backward pass.
?c|__all__ = ["bubble_fraction"]
?c|
?d|def percent(share):
?d|    """A share in [0, 1] as a percentage."""
?d|    return 100 * share
?d|
?e|def layers_per_stage(layers, pp):
?e|    """Transformer layers on each of pp pipeline stages (layers divisible by pp)."""
?e|    return layers // pp
?e|
?f|def samples_per_step(samples_per_microbatch, microbatches):
?f|    """Samples in one step: every micro-batch once."""
?f|    return samples_per_microbatch * microbatches
?f|
?g|def microbatch_size(global_batch, microbatches):
?g|    """Samples in each micro-batch (global_batch divisible by microbatches)."""
?g|    return global_batch // microbatches
?g|
def bubble_fraction(pp, microbatches, virtual_stages=1):
    """Share of a pipeline step spent in the bubble, in [0, 1)."""
?h|    # pp: pipeline stages, microbatches: per step, virtual_stages: model chunks per GPU
?i|    # idle slots per GPU in one step
    bubble_slots = pp
?j|    # busy slots per GPU in one step
    work_slots = microbatches * virtual_stages
    return bubble_slots / (bubble_slots + work_slots)
'''
#: the workbook's listing (the one a kernel with no student id shows)
BUGGY_5_5 = workbook_listing(LISTING_5_5)


def _reference_5_5(pp, microbatches, virtual_stages=1):
    return float(core.bubble_fraction(pp, microbatches, virtual_stages))


def _probes_5_5(seed):
    rng = random.Random(f"5.5:{seed}")
    valid = [[4, 12, 1], [4, 12, 4], [1, 8, 1], [1, 1, 3], [16, 4, 2], [2, 1, 1]]
    valid += [[rng.randint(1, 64), rng.randint(1, 256), rng.randint(1, 8)] for _ in range(40)]
    return {"valid": valid, "invalid": []}


debug_exercise(
    CH, "5.5", "Find the bug", spec={"example": [4, 12, 1]},
    vary=lambda s, rng: dict(s, example=[rng.choice([2, 4, 6, 8, 16]), rng.choice([8, 12, 16, 32]), rng.choice([1, 2])]),
    prompt=lambda s: ("The function below should return the **share** of a pipeline step that is "
                      "bubble, $(p-1)/(v\\,m+p-1)$, for $p$ stages, $m$ micro-batches and $v$ virtual "
                      "stages per GPU. One of its lines is wrong. Hint: what should a pipeline of a "
                      "single stage return? Worked example: "
                      f"`bubble_fraction({', '.join(map(str, s['example']))})` should be "
                      f"{_reference_5_5(*s['example']):.6g}."),
    buggy_source=LISTING_5_5, buggy_line=3, function="bubble_fraction",
    signature="(pp, microbatches, virtual_stages=1)",
    docstring="Share of a pipeline step spent in the bubble, in [0, 1).",
    body=("bubble_slots = pp - 1\n"
          "work_slots = microbatches * virtual_stages\n"
          "return bubble_slots / (bubble_slots + work_slots)"),
    reference=_reference_5_5, probes=_probes_5_5, examples=[[4, 12, 1], [1, 8, 1]],
    derivation=lambda s: (
        f"**Line {s['buggy_line']} (`bubble_slots = pp`) is the bug**: a pipeline of $p$ stages has $p-1$ "
        "bubble slots (the warm-up of the "
        "stages after the first), not $p$. The give-away is a single stage: it has no bubble, yet "
        "the buggy function returns $1/(1+m) > 0$. With `bubble_slots = pp - 1` it returns "
        "$(p-1)/(v\\,m+p-1)$, the share that `course.core.bubble_fraction` computes; for "
        f"$p={s['example'][0]}$, $m={s['example'][1]}$, $v={s['example'][2]}$ that is "
        f"{100 * _reference_5_5(*s['example']):.4g} %."),
    note=("This is not the workbook's 5.5. The workbook's version flagged a correct formula as the "
          "bug, because it treated the share $(p-1)/(p-1+m)$ and the overhead $(p-1)/m$ as two "
          "different bubbles (the pipeline-bubble entry above). This function has a real bug."))


# 5.6 -----------------------------------------------------------------------------------
def _key_5_6(s):
    m = core.min_microbatches_for_bubble(s["p"], s["target_pct"] / 100, s["v"], measure="overhead")
    # cross-check by scanning: the overhead at m is below the target, at m - 1 it is not
    assert core.bubble_overhead(s["p"], m, s["v"]) < s["target_pct"] / 100
    assert m == 1 or not core.bubble_overhead(s["p"], m - 1, s["v"]) < s["target_pct"] / 100 * (1 - 1e-12)
    return {"min_microbatches": int(m)}


values_exercise(
    CH, "5.6", "How many micro-batches?", kind="Trace", spec={"p": 8, "v": 1, "target_pct": 5.0},
    vary=lambda s, rng: dict(s, p=rng.choice([3, 4, 6, 8, 12, 16]), target_pct=float(rng.choice([2, 3, 5, 8, 10]))),
    prompt=lambda s: (f"A pipeline has $p = {s['p']}$ stages and no interleaving. Its bubble overhead "
                      f"must be **strictly below** {s['target_pct']:g} %. What is the smallest number "
                      "of micro-batches per step (an int)?"),
    answers={"min_microbatches": "micro-batches"}, key=_key_5_6, rtol=0.0,
    solution=lambda s: (f"p, v, target_pct = {s['p']}, {s['v']}, {s['target_pct']}\n"
                        "min_microbatches = next(m for m in range(1, 10**6)\n"
                        "                        if 100 * (p - 1) / (v * m) < target_pct)"),
    derivation=lambda s: (
        f"Require $(p-1)/m < {s['target_pct'] / 100:g}$, so $m > {s['p'] - 1}/{s['target_pct'] / 100:g} = "
        f"{(s['p'] - 1) / (s['target_pct'] / 100):g}$. At exactly that $m$ the overhead equals "
        f"{s['target_pct']:g} %, so the smallest $m$ that keeps it strictly below is "
        f"**{_key_5_6(s)['min_microbatches']}**. Interleaving needs far fewer: $v=2$ needs "
        f"{_key_5_6(dict(s, v=2))['min_microbatches']} and $v=4$ needs "
        f"{_key_5_6(dict(s, v=4))['min_microbatches']} micro-batches."))

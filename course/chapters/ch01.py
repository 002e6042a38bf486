"""Chapter 1: ZeRO stages (workbook exercises 1.1-1.6).

Keys come from :func:`course.core.model_state_bytes` (Rajbhandari et al. 2020,
ZeRO, section 3 and Figure 1) and the all-gather / reduce-scatter costs of
:mod:`course.core.collectives`.
"""

from __future__ import annotations

from course import core

from course.core.units import GB, billion

from course.assess.activity import Chapter
from course.assess.authoring import values_exercise
from course.assess.variants import MODEL_SIZES_B

#: an H100's memory as the course writes it everywhere: the bytes a process can allocate, in GB = 10⁹ bytes
_H100_GB = core.catalog.accelerator("H100").memory_capacity / 1e9

CHAPTER = {
    "title": "Chapter 1 \u00b7 ZeRO stages",
    "intro": (
        "A 7B-parameter model is 14 GB of FP16 weights, yet training it with Adam needs far more memory per "
        "GPU. Plain data parallelism stores all of it on every GPU; ZeRO (the Zero Redundancy Optimizer) "
        "removes that duplication in three stages."
    ),
    "concept": [
        "## Concepts\n\n"
        "**Model states per parameter**, mixed-precision Adam (Micikevicius et al. 2018; Rajbhandari et al. "
        "2020, \u00a73.1):\n\n"
        "| state | bytes per parameter |\n|---|---|\n"
        "| FP16 weights | 2 |\n| FP16 gradients | 2 |\n"
        "| FP32 master weights, momentum, variance (K = 12) | 4 + 4 + 4 |\n| **total, no ZeRO** | **16** |\n\n"
        "**ZeRO** partitions these states over the N data-parallel GPUs (Rajbhandari et al., *ZeRO: Memory "
        "Optimizations Toward Training Trillion Parameter Models*, SC 2020, Figure 1):\n\n"
        "* Stage 1 (optimizer states): $2 + 2 + 12/N$ bytes per parameter.\n"
        "* Stage 2 (+ gradients): $2 + (2 + 12)/N$.\n"
        "* Stage 3 (+ weights): $16/N$.\n\n"
        "Per-GPU memory = bytes per parameter \u00d7 parameters (GB = 10\u2079 bytes). The paper's check: 7.5B "
        "parameters on 64 GPUs need 120, 31.4, 16.6 and 1.9 GB for stages 0\u20133.\n\n"
        "**The price of stage 3.** Weights are no longer resident, so each layer's weights are all-gathered "
        "before its forward pass and again before its backward pass, and the gradients are reduce-scattered "
        "after backward. An all-gather or a reduce-scatter of M bytes moves $M(N-1)/N$ bytes per GPU (half of a "
        "ring all-reduce, which is exactly one reduce-scatter plus one all-gather).\n\n"
        "Activations come on top of the model states (chapter 8 and the labs).",
    ],
}

#: this chapter as one activity (listed in :mod:`course.activities`); the exercises below add to it
ACTIVITY = CH = Chapter('ch01', 'ch01_zero', **CHAPTER)

MODEL = {"params_b": 7.0, "dp": 64}


def _state_gb(params_b, stage, dp):
    return core.model_state_bytes(params_b * billion, zero_stage=stage, dp=dp) / GB


def _zero_exercise(number, title, stage, spec, extra=""):
    # one variable per exercise: the autograder reads all answers after the whole notebook ran
    var = f"memory_zero{stage}_gb"
    values_exercise(
        CH, number, title, kind="Derive", spec=dict(spec, stage=stage),
        vary=lambda s, rng: dict(s, params_b=rng.choice(MODEL_SIZES_B),
                                 dp=rng.choice([8, 16, 32, 64, 128, 256])),
        prompt=lambda s: (f"{s['params_b']:g}B parameters, mixed-precision Adam, "
                          + ("no ZeRO" if s["stage"] == 0 else f"ZeRO stage {s['stage']} on N = {s['dp']} GPUs")
                          + ". How much memory do the model states (weights, gradients, optimizer states) take "
                          "on each GPU?" + extra),
        answers={var: "GB per GPU"},
        key=lambda s: {var: _state_gb(s["params_b"], s["stage"], s["dp"])},
        solution=lambda s: var + " = " + {
            0: f"16 * {s['params_b']!r}",
            1: f"(2 + 2 + 12 / {s['dp']}) * {s['params_b']!r}",
            2: f"(2 + 14 / {s['dp']}) * {s['params_b']!r}",
            3: f"16 / {s['dp']} * {s['params_b']!r}",
        }[s["stage"]],
        derivation=lambda s: (
            {0: "16", 1: f"(2 + 2 + 12/{s['dp']})", 2: f"(2 + 14/{s['dp']})", 3: f"16/{s['dp']}"}[s["stage"]]
            + f" bytes/param \u00d7 {s['params_b']:g}\u00d710\u2079 params = "
            f"**{_state_gb(s['params_b'], s['stage'], s['dp']):.4g} GB** per GPU. "
            + {0: f"Compare with the {_H100_GB:.3g} GB an H100 holds, before a single activation is stored.",
               1: "The 4 bytes/param of FP16 weights and gradients are now the floor.",
               2: "Sharding the gradients too divides 14 of the 16 bytes per parameter by N.",
               3: "Memory now falls as 1/N, paid for with extra all-gathers (exercise 1.5)."}[s["stage"]]),
    )


_zero_exercise("1.1", "Model states without ZeRO", 0, MODEL)
_zero_exercise("1.2", "Model states with ZeRO stage 1", 1, MODEL)
_zero_exercise("1.3", "Model states with ZeRO stage 2", 2, MODEL)
_zero_exercise("1.4", "Model states with ZeRO stage 3", 3, MODEL)


def _collective_gb(message_bytes, n):
    # All-gather volume per GPU, M(N-1)/N: the all-gather time at 1 byte/s equals the bytes moved.
    return core.all_gather_time(message_bytes, n, 1.0) / GB


def _zero3_traffic_gb(s):
    weights = s["params_b"] * billion * 2  # FP16 weights, 2 bytes each
    gather = _collective_gb(weights, s["dp"])
    scatter = core.reduce_scatter_time(weights, s["dp"], 1.0) / GB
    return 2 * gather + scatter


values_exercise(
    CH, "1.5", "ZeRO-3 communication per step", kind="Derive",
    spec={"params_b": 7.0, "dp": 64, "bw_gbs": 100.0},
    vary=lambda s, rng: dict(s, params_b=rng.choice(MODEL_SIZES_B),
                             dp=rng.choice([8, 16, 32, 64, 128]), bw_gbs=float(rng.choice([50, 100, 200, 400]))),
    prompt=lambda s: (f"ZeRO-3 with a {s['params_b']:g}B model (FP16 weights: {2 * s['params_b']:g} GB) on "
                      f"{s['dp']} GPUs: one all-gather of the weights for forward, one for backward, one "
                      "reduce-scatter of the gradients after backward. Each moves M(N\u22121)/N bytes per GPU. How "
                      "many GB does each GPU communicate per training step?"),
    answers={"traffic_gb": "GB per GPU per step"},
    key=lambda s: {"traffic_gb": _zero3_traffic_gb(s)},
    solution=lambda s: f"traffic_gb = 3 * {2 * s['params_b']!r} * ({s['dp']} - 1) / {s['dp']}",
    derivation=lambda s: (
        f"One collective: {2 * s['params_b']:g} GB \u00d7 {s['dp'] - 1}/{s['dp']} = "
        f"{_collective_gb(s['params_b'] * billion * 2, s['dp']):.4g} GB; three per step: "
        f"**{_zero3_traffic_gb(s):.4g} GB**, i.e. about {_zero3_traffic_gb(s) / s['bw_gbs'] * 1000:.0f} ms at "
        f"{s['bw_gbs']:g} GB/s. ZeRO-1/2 move one all-reduce, 2 \u00d7 {_collective_gb(s['params_b'] * billion * 2, s['dp']):.4g} "
        "GB: stage 3 costs 1.5\u00d7 the traffic for a 1/N memory footprint."),
)


def _min_stage(s):
    for stage in (0, 1, 2, 3):
        need = core.model_state_bytes(s["params_b"] * billion, zero_stage=stage, dp=s["dp"]) + s["activations_gb"] * GB
        if need <= s["gpu_gb"] * GB:
            return stage
    return -1  # nothing fits


def _stage_needs_gb(s):
    return [_state_gb(s["params_b"], stage, s["dp"]) + s["activations_gb"] for stage in (0, 1, 2, 3)]


def _vary_min_stage(s, rng):
    # some stage must fit, and no stage may sit within 2 % of the memory (no knife-edge answers)
    while True:
        v = dict(s, params_b=float(rng.choice([7, 13, 30, 70])), dp=rng.choice([8, 16, 32, 64]),
                 gpu_gb=float(rng.choice([40, 80, 141])), activations_gb=float(rng.choice([10, 15, 20, 30])))
        needs = _stage_needs_gb(v)
        if _min_stage(v) in (1, 2, 3) and all(abs(n - v["gpu_gb"]) > 0.02 * v["gpu_gb"] for n in needs):
            return v


def _key_1_6(s):
    stage = _min_stage(s)
    return {"min_stage": stage, "headroom_gb": s["gpu_gb"] - _stage_needs_gb(s)[stage]}


values_exercise(
    CH, "1.6", "Which ZeRO stage?", kind="Trace",
    # the workbook's 20 GB of activations fill the 80 GB exactly at stage 3 (no headroom at all): 15 GB here
    spec={"params_b": 30.0, "dp": 8, "gpu_gb": 80.0, "activations_gb": 15.0},
    vary=_vary_min_stage,
    prompt=lambda s: (f"{s['dp']} GPUs with {s['gpu_gb']:g} GB each train a {s['params_b']:g}B model with "
                      f"mixed-precision Adam; activations need about {s['activations_gb']:g} GB per GPU. What is the "
                      "smallest ZeRO stage whose model states plus activations fit in a GPU's memory, and how many "
                      "GB of the GPU's memory does that stage leave free?"),
    answers={"min_stage": "ZeRO stage", "headroom_gb": "GB per GPU"},
    options={"min_stage": [0, 1, 2, 3]},
    key=_key_1_6,
    solution=lambda s: (f"P, N, A = {s['params_b']!r}, {s['dp']!r}, {s['activations_gb']!r}\n"
                        "need_gb = [16 * P + A, (4 + 12 / N) * P + A, (2 + 14 / N) * P + A, 16 / N * P + A]\n"
                        f"min_stage = next(stage for stage, gb in enumerate(need_gb) if gb <= {s['gpu_gb']!r})\n"
                        f"headroom_gb = {s['gpu_gb']!r} - need_gb[min_stage]"),
    derivation=lambda s: (
        "Model states plus activations per GPU, stages 0 to 3: "
        + ", ".join(f"{n:.4g} GB" for n in _stage_needs_gb(s))
        + f". The first that fits in {s['gpu_gb']:g} GB is **stage {_min_stage(s)}**"
        + (f", with **{s['gpu_gb'] - _stage_needs_gb(s)[_min_stage(s)]:.4g} GB** of headroom"
           if _min_stage(s) >= 0 else "")
        + ". The CUDA context and allocator fragmentation need a few GB too; with too little headroom add "
        "activation checkpointing or more GPUs."),
)

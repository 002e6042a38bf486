"""Chapter 9 - capstone, Llama 3.1 405B: workbook exercises 9.1-9.9.

Keys come from ``course.core`` (``training_flops``, ``pf_days``, ``training_days``,
``bubble_overhead``, ``bubble_fraction``, ``allreduce_traffic_bytes``, ``energy_kwh``,
``energy_cost``). Model and run facts: Llama Team, "The Llama 3 Herd of Models", 2024.
"""

from __future__ import annotations

from course import core
from course.core import units as u

from course.assess.activity import Chapter
from course.assess.authoring import exact, values_exercise

#: an H100's memory as the course writes it everywhere: the bytes a process can allocate, in GB = 10⁹ bytes
_H100_GB = core.catalog.accelerator("H100").memory_capacity / 1e9


def _tex(x):
    """``3.79e+25`` -> ``3.79\\times10^{25}`` for derivations."""
    mantissa, exponent = f"{x:.3e}".split("e")
    return f"{float(mantissa):.4g}\\times10^{{{int(exponent)}}}"

CHAPTER = {
    "title": "Chapter 9 \u00b7 Capstone: training Llama 3.1 405B",
    "intro": ("Everything so far in one real run: Llama 3.1 405B, trained on 15.6 trillion tokens "
              "with 16,384 H100 GPUs. Choose the parallel layout, check the memory, count the "
              "communication, and project the time and the electricity bill."),
    "concept": [r"""
## The model and the machine

Llama 3.1 405B (Llama Team 2024): hidden size $d = 16384$, $L = 126$ layers, 128 query heads
and 8 key/value heads (grouped-query attention), SwiGLU feed-forward width $d_{ff} = 53248$,
vocabulary 128256, sequence length 8192 in the main pre-training phase. A layer holds about
$4d^2$ attention parameters (Q, K, V, output; GQA makes K and V smaller, which we ignore as the
workbook does) plus $3\,d\,d_{ff}$ in the three SwiGLU matrices.

The run used **4D parallelism**: tensor parallelism (TP = 8, inside a node, NVLink),
pipeline parallelism (PP = 16), context parallelism (CP, for long sequences) and data
parallelism over the rest, with $\text{TP}\times\text{CP}\times\text{PP}\times\text{DP}$ = GPUs.
Exercises 9.1-9.7 leave context parallelism out, as the workbook's main phase does; 9.8 brings
it back. Each exercise states its own layout (TP, PP, DP, CP) and number of micro-batches $m$.

## Compute, time and energy

Training costs about $6ND$ FLOPs for $N$ parameters and $D$ tokens (Kaplan et al. 2020): 2
for the forward pass and 4 for the backward, per parameter and token. One petaFLOP/s-day is
$10^{15}\times86400 = 8.64\times10^{19}$ FLOPs. Wall-clock time = FLOPs / (GPUs × peak ×
MFU), with the H100's **dense** BF16 peak of 989 TFLOPS (1979 is with 2:4 sparsity).
Energy in kWh = GPUs × watts / 1000 × hours.

In `course.core`: `training_flops`, `pf_days`, `training_days`, `bubble_overhead`,
`bubble_fraction`, `allreduce_time`, `energy_kwh`, `energy_cost`.
"""],
}

#: this chapter as one activity (listed in :mod:`course.activities`); the exercises below add to it
ACTIVITY = CH = Chapter('ch09', 'ch09_capstone', **CHAPTER)


# 9.1 -----------------------------------------------------------------------------------
def _key_9_1(s):
    return {"dp_degree": s["gpus"] // (s["tp"] * s["pp"])}


def _vary_9_1(rng):
    tp, pp = rng.choice([2, 4, 8]), rng.choice([2, 4, 8, 12, 16])
    # the answer is the DP degree itself: draw it from 8..256 in steps of 4 (63 values; 8 gave one
    # classmate in 8 the same answer)
    return {"gpus": tp * pp * rng.randrange(8, 257, 4), "tp": tp, "pp": pp}


values_exercise(
    CH, "9.1", "Verify TP \u00d7 PP \u00d7 DP", kind="Derive", spec={"gpus": 16384, "tp": 8, "pp": 16},
    vary=lambda s, rng: _vary_9_1(rng),
    prompt=lambda s: (f"TP = {s['tp']}, PP = {s['pp']} and {s['gpus']:,} GPUs in total (CP = 1). What "
                      "is the data-parallel degree (an int)?"),
    answers={"dp_degree": "GPUs"}, key=_key_9_1, rtol=0.0,
    solution=lambda s: f"dp_degree = {s['gpus']} // ({s['tp']} * {s['pp']})",
    derivation=lambda s: (f"DP = GPUs / (TP × PP) = {s['gpus']} / ({s['tp']} × {s['pp']}) = "
                          f"**{_key_9_1(s)['dp_degree']}**: {s['tp'] * s['pp']} GPUs hold one copy of "
                          f"the model, and there are {_key_9_1(s)['dp_degree']} copies."))


# 9.2 -----------------------------------------------------------------------------------
def _key_9_2(s):
    return {"max_layers_per_stage": int(core.max_layers_per_stage(s["layers"], s["pp"])),
            "stages_with_max": int(core.stages_with_max_layers(s["layers"], s["pp"]))}


def _deriv_9_2(s):
    k = _key_9_2(s)
    a, n = k["max_layers_per_stage"], k["stages_with_max"]
    return (f"{s['layers']}/{s['pp']} = {s['layers'] / s['pp']:g}, so stages get {a} or {a - 1} layers. "
            f"With $n$ stages of {a}: ${a}n + {a - 1}({s['pp']}-n) = {s['layers']}$ gives $n = {n}$: "
            f"**{n} stages of {a} layers** and {s['pp'] - n} of {a - 1} "
            f"(${n}\\times{a} + {s['pp'] - n}\\times{a - 1} = {s['layers']}$). The lighter stages go "
            "first and last: they also hold the embedding and the output head (in Llama 3.1 405B, "
            "128256 × 16384 ≈ 2.1 B parameters each).")


values_exercise(
    CH, "9.2", "Layers per pipeline stage", kind="Derive", spec={"layers": 126, "pp": 16},
    vary=lambda s, rng: dict(s, layers=rng.choice([62, 78, 94, 100, 118, 126, 130]), pp=rng.choice([4, 8, 12, 16])),
    prompt=lambda s: (f"{s['layers']} layers are spread as evenly as possible over PP = {s['pp']} "
                      "stages. How many layers do the fuller stages hold, and how many stages are "
                      "fuller (ints)?"),
    answers={"max_layers_per_stage": "layers", "stages_with_max": "stages"}, key=_key_9_2, rtol=0.0,
    solution=lambda s: (f"layers, pp = {s['layers']}, {s['pp']}\n"
                        "max_layers_per_stage = -(-layers // pp)\n"
                        "stages_with_max = layers - (max_layers_per_stage - 1) * pp"),
    derivation=_deriv_9_2)


# 9.3 -----------------------------------------------------------------------------------
_MODEL = {"d": 16384, "d_ff": 53248, "layers_per_stage": 8, "tp": 8, "bytes_per_param": 2}


def _vary_model(s, rng):
    d = rng.choice([4096, 8192, 12288, 16384])
    return dict(s, d=d, d_ff=int(d * rng.choice([3.25, 3.5, 4.0])), layers_per_stage=rng.choice([4, 6, 8, 10]),
                tp=rng.choice([4, 8]))


def _params_per_layer(s):
    # 4 d^2 attention (GQA ignored, as in the workbook) + 3 d d_ff SwiGLU
    return core.transformer_layer_params(s["d"], s["d_ff"], gated=True)


def _weight_bytes_per_gpu(s):
    return core.tp_weight_bytes_per_gpu(_params_per_layer(s), s["layers_per_stage"], s["tp"], s["bytes_per_param"])


def _key_9_3(s):
    return {"weights_per_gpu_gb": _weight_bytes_per_gpu(s) / u.GB}


values_exercise(
    CH, "9.3", "Weight memory per GPU", kind="Derive", spec=dict(_MODEL), vary=lambda s, rng: _vary_model(s, rng),
    prompt=lambda s: (f"A layer of a Llama-style model has $4d^2$ attention and $3\\,d\\,d_{{ff}}$ SwiGLU "
                      f"parameters with $d = {s['d']}$ and $d_{{ff}} = {s['d_ff']}$. In this exercise's own "
                      f"layout (set independently of 9.2's), a fuller pipeline stage holds {s['layers_per_stage']} layers, "
                      f"split TP = {s['tp']} ways. How many GB of FP16 weights does one GPU hold?"),
    answers={"weights_per_gpu_gb": "GB"}, key=_key_9_3,
    solution=lambda s: (f"d, d_ff, layers_per_stage, tp = {s['d']}, {s['d_ff']}, {s['layers_per_stage']}, {s['tp']}\n"
                        f"weights_per_gpu_gb = layers_per_stage * (4 * d**2 + 3 * d * d_ff) / tp * "
                        f"{s['bytes_per_param']} / 1e9"),
    derivation=lambda s: (
        f"Per layer: $4d^2 + 3\\,d\\,d_{{ff}}$ = {4 * s['d'] ** 2 / 1e9:.3g} B + "
        f"{3 * s['d'] * s['d_ff'] / 1e9:.3g} B = {_params_per_layer(s) / 1e9:.4g} B parameters. One GPU: "
        f"{s['layers_per_stage']} layers / TP {s['tp']} = "
        f"{s['layers_per_stage'] * _params_per_layer(s) / s['tp'] / 1e9:.4g} B parameters × 2 B = "
        f"**{_key_9_3(s)['weights_per_gpu_gb']:.4g} GB**, leaving "
        f"{_H100_GB - _key_9_3(s)['weights_per_gpu_gb']:.3g} of an H100's {_H100_GB:.3g} GB for optimizer "
        "state, activations and buffers."))


# 9.4 -----------------------------------------------------------------------------------
def _key_9_4(s):
    return {"pf_days": core.pf_days(core.training_flops(s["params"], s["tokens"]))}


values_exercise(
    CH, "9.4", "Training compute", kind="Derive", spec={"params": 405e9, "tokens": 15.6e12},
    vary=lambda s, rng: dict(s, params=rng.choice([7e9, 8e9, 13e9, 34e9, 70e9, 175e9, 405e9]),
                             tokens=rng.choice([1e12, 2e12, 3e12, 9e12, 15e12, 15.6e12])),
    prompt=lambda s: (f"Training costs about $6ND$ FLOPs. For $N$ = {exact(s['params'])} parameters and "
                      f"$D$ = {exact(s['tokens'])} tokens, how many petaFLOP/s-days is that (1 PF-day = "
                      "$10^{15}\\times86400$ FLOPs)?"),
    answers={"pf_days": "PF-days"}, key=_key_9_4,
    solution=lambda s: f"pf_days = 6 * {s['params']!r} * {s['tokens']!r} / (1e15 * 86400)",
    derivation=lambda s: (
        f"$6ND = 6\\times{_tex(s['params'])}\\times{_tex(s['tokens'])}$ = "
        f"${_tex(core.training_flops(s['params'], s['tokens']))}$ FLOPs (for 405B and 15.6 T tokens Meta "
        "reports $3.8\\times10^{25}$). "
        f"Divided by $8.64\\times10^{{19}}$ FLOPs per PF-day: **{_key_9_4(s)['pf_days']:,.0f} PF-days**."))


# 9.5 -----------------------------------------------------------------------------------
def _key_9_5(s):
    flops = core.training_flops(s["params"], s["tokens"])
    return {"training_days": core.training_days(flops, s["gpus"], s["peak_tflops"] * u.TFLOPS, s["mfu"])}


values_exercise(
    CH, "9.5", "Training time", kind="Derive",
    spec={"params": 405e9, "tokens": 15.6e12, "gpus": 16384, "peak_tflops": 989.0, "mfu": 0.40},
    vary=lambda s, rng: dict(s, params=rng.choice([8e9, 34e9, 70e9, 175e9, 405e9]),
                             tokens=rng.choice([2e12, 9e12, 15e12, 15.6e12]),
                             gpus=rng.choice([2048, 4096, 8192, 16384, 24576]), mfu=rng.choice([0.3, 0.35, 0.4, 0.45, 0.5])),
    prompt=lambda s: (f"{s['gpus']:,} H100 GPUs with a dense BF16 peak of {s['peak_tflops']:g} TFLOPS "
                      f"each run at {s['mfu']:.0%} MFU. How many days does $6ND$ take for "
                      f"$N$ = {exact(s['params'])} and $D$ = {exact(s['tokens'])}?"),
    answers={"training_days": "days"}, key=_key_9_5,
    solution=lambda s: (f"flops = 6 * {s['params']!r} * {s['tokens']!r}\n"
                        f"training_days = flops / ({s['gpus']} * {s['peak_tflops']:g}e12 * {s['mfu']:g}) / 86400"),
    derivation=lambda s: (
        f"Sustained rate: ${s['gpus']}\\times{_tex(s['peak_tflops'] * 1e12)}\\times{s['mfu']:g}$ = "
        f"${_tex(s['gpus'] * s['peak_tflops'] * 1e12 * s['mfu'])}$ FLOP/s. Time: "
        f"${_tex(core.training_flops(s['params'], s['tokens']))}$ FLOPs / that rate = "
        f"**{_key_9_5(s)['training_days']:.3g} days** of uninterrupted training. (For 405B on 16,384 "
        "GPUs Meta reports about 54 days of pre-training, which implies more than 40 % MFU.)"))


# 9.6 -----------------------------------------------------------------------------------
def _key_9_6(s):
    p, m, v = s["pp"], s["m"], s["v"]
    return {"overhead_1f1b_pct": 100 * core.bubble_overhead(p, m),
            "share_1f1b_pct": 100 * core.bubble_fraction(p, m),
            "overhead_interleaved_pct": 100 * core.bubble_overhead(p, m, v),
            "share_interleaved_pct": 100 * core.bubble_fraction(p, m, v)}


def _deriv_9_6(s):
    k, p, m, v = _key_9_6(s), s["pp"], s["m"], s["v"]
    return (f"1F1B: overhead $(p-1)/m = {p - 1}/{m}$ = **{k['overhead_1f1b_pct']:.4g} %**"
            + (" (more idle time than compute)" if p - 1 > m else "")
            + f"; share $(p-1)/(m+p-1) = {p - 1}/{m + p - 1}$ = **{k['share_1f1b_pct']:.3g} %**. "
            f"Interleaved, $v = {v}$: overhead $(p-1)/(v\\,m) = {p - 1}/{v * m}$ = "
            f"**{k['overhead_interleaved_pct']:.4g} %**; share $(p-1)/(v\\,m+p-1) = {p - 1}/{v * m + p - 1}$ "
            f"= **{k['share_interleaved_pct']:.3g} %**. "
            + (f"Either way, PP = {p} with only {m} micro-batches is mostly bubble: a real run needs many more "
               "micro-batches per step or a smarter schedule." if k["share_1f1b_pct"] > 50 else
               f"Interleaving divides the overhead by {v}, at the price of {v} times the point-to-point traffic."))


values_exercise(
    CH, "9.6", "Pipeline bubble, plain and interleaved", kind="Derive", spec={"pp": 16, "m": 4, "v": 2},
    vary=lambda s, rng: dict(s, pp=rng.choice([4, 8, 12, 16]), m=rng.choice([4, 6, 8, 16, 32]), v=rng.choice([2, 3, 4])),
    prompt=lambda s: (f"PP = {s['pp']} stages, $m = {s['m']}$ micro-batches per step, 1F1B. Give the "
                      "bubble both ways, in percent: the **overhead** (bubble time relative to ideal "
                      "compute time) and the **share** of the step. Then the same with interleaving, "
                      f"$v = {s['v']}$."),
    answers={"overhead_1f1b_pct": "%", "share_1f1b_pct": "%", "overhead_interleaved_pct": "%",
             "share_interleaved_pct": "%"}, key=_key_9_6, derivation=_deriv_9_6,
    solution=lambda s: (f"pp, m, v = {s['pp']}, {s['m']}, {s['v']}\n"
                        "overhead_1f1b_pct = 100 * (pp - 1) / m\n"
                        "share_1f1b_pct = 100 * (pp - 1) / (m + pp - 1)\n"
                        "overhead_interleaved_pct = 100 * (pp - 1) / (v * m)\n"
                        "share_interleaved_pct = 100 * (pp - 1) / (v * m + pp - 1)"),
    note=("The workbook gives one \"bubble\" above 100 % without saying that it is the overhead "
          "relative to ideal compute; a share of the step can never exceed 100 %. Here you give both."))


# 9.7 -----------------------------------------------------------------------------------
def _key_9_7(s):
    gradient_bytes = _weight_bytes_per_gpu(s)         # FP16 gradients, same size as the weights
    # every GPU sends 2 (N-1)/N * S in a ring all-reduce (Patarasuk & Yuan 2009)
    return {"dp_allreduce_gb_per_gpu": core.allreduce_traffic_bytes(gradient_bytes, s["dp"], algorithm="ring") / u.GB}


values_exercise(
    CH, "9.7", "DP all-reduce volume", kind="Derive", spec=dict(_MODEL, dp=128),
    vary=lambda s, rng: dict(_vary_model(s, rng), dp=rng.choice([8, 16, 32, 64, 128, 256])),
    prompt=lambda s: (f"A GPU holds {s['layers_per_stage']} layers of a Llama-style model ($4d^2$ attention and "
                      f"$3\\,d\\,d_{{ff}}$ SwiGLU parameters per layer, $d = {s['d']}$, $d_{{ff}} = {s['d_ff']}$), "
                      f"split TP = {s['tp']} ways (this exercise's own model and layout, set independently of 9.3's). Its FP16 "
                      "gradients (the same "
                      f"size as its FP16 weights) are all-reduced over DP = {s['dp']} GPUs with a ring. How many "
                      "GB does each GPU send per step?"),
    answers={"dp_allreduce_gb_per_gpu": "GB"}, key=_key_9_7,
    solution=lambda s: (f"d, d_ff, layers_per_stage, tp, dp = {s['d']}, {s['d_ff']}, {s['layers_per_stage']}, "
                        f"{s['tp']}, {s['dp']}\n"
                        f"S = layers_per_stage * (4 * d**2 + 3 * d * d_ff) / tp * {s['bytes_per_param']}\n"
                        "dp_allreduce_gb_per_gpu = 2 * (dp - 1) / dp * S / 1e9"),
    derivation=lambda s: (
        f"Gradients per GPU: $S$ = {_weight_bytes_per_gpu(s) / u.GB:.4g} GB. Ring: "
        f"$2\\,\\frac{{N-1}}{{N}}\\,S = 2\\times\\frac{{{s['dp'] - 1}}}{{{s['dp']}}}\\times"
        f"{_weight_bytes_per_gpu(s) / u.GB:.4g}$ GB = **{_key_9_7(s)['dp_allreduce_gb_per_gpu']:.4g} GB** "
        f"per GPU. At 50 GB/s (InfiniBand NDR) that is "
        f"{_key_9_7(s)['dp_allreduce_gb_per_gpu'] / 50 * 1e3:.0f} ms, mostly hidden behind the "
        "backward pass by bucketing."),
    note=("The workbook's derivation contradicts itself: it halves the volume and then takes that "
          "back. The ring volume per GPU is $2\\frac{N-1}{N}S$, applied once."))


# 9.8 -----------------------------------------------------------------------------------
#: the placement of Llama 3 (Llama Team 2024, sec. 3.3.2), innermost first
_ORDER_9_8 = ("TP", "CP", "PP", "DP")
_DIM_TEXT = {"TP": "all-reduces on every layer, on the critical path",
             "PP": "point-to-point activations between stages",
             "CP": "context parallelism: ring attention passes key/value blocks inside every attention layer",
             "DP": "gradient all-reduce, overlapped with the backward pass"}


def _key_9_8(s):
    # ranks are numbered innermost dimension first: a group's neighbours are the product of the sizes
    # of the dimensions inside it apart; a dimension of size 1 has no group and no place
    order = [d for d in _ORDER_9_8 if s[d.lower()] > 1]
    strides, inner = [], 1
    for d in order:
        strides.append(inner)
        inner *= s[d.lower()]
    return {"order": order, "strides": strides}


def _vary_9_8(s, rng):
    # which dimensions exist (CP and PP may be 1) and their sizes vary: 4 orders, some 60 stride lists
    return dict(s, tp=rng.choice([2, 4, 8]), cp=rng.choice([1, 1, 2, 4, 8]), pp=rng.choice([1, 2, 4, 8, 16]),
                dp=rng.choice([8, 16, 32, 64, 128]), shown=rng.sample(list(_ORDER_9_8), 4))


values_exercise(
    CH, "9.8", "Order the parallelism dimensions", kind="Design",
    spec={"tp": 8, "cp": 2, "pp": 16, "dp": 128, "shown": ["TP", "PP", "CP", "DP"]}, vary=_vary_9_8,
    prompt=lambda s: ("A job uses "
                      + "; ".join(f"{d} = {s[d.lower()]} ({_DIM_TEXT[d]})" for d in s["shown"])
                      + ". Order the dimensions larger than 1 from **innermost** (neighbouring GPUs, the fastest "
                        "links) to **outermost** (the slowest links); a dimension of size 1 has no group and is "
                        "left out. Give `order`, a list of those names (\"TP\", \"CP\", \"PP\" or \"DP\"), "
                        "innermost first. Ranks are numbered innermost dimension first (rank 0, 1, 2, ... step "
                        "through the innermost group first). Give `strides`: for each dimension in your `order`, how "
                        "many ranks apart two neighbouring members of one of its groups are."),
    answers={"order": "list, innermost first", "strides": "list of rank distances, one per dimension"},
    key=_key_9_8, rtol=0.0,
    solution=lambda s: (f"sizes = {{'TP': {s['tp']}, 'CP': {s['cp']}, 'PP': {s['pp']}, 'DP': {s['dp']}}}\n"
                        "order = [d for d in ['TP', 'CP', 'PP', 'DP'] if sizes[d] > 1]\n"
                        "strides, inner = [], 1\n"
                        "for d in order:\n"
                        "    strides.append(inner)\n"
                        "    inner *= sizes[d]"),
    derivation=lambda s: (
        f"**{', '.join(_key_9_8(s)['order'])}**, innermost first (Llama Team 2024, sec. 3.3.2: TP, CP, PP, DP; "
        "the workbook's TP, PP, CP, DP puts the pipeline inside context parallelism), leaving out the "
        "dimensions of size 1. TP all-reduces activations twice per layer in each pass and nothing overlaps "
        "them: it must stay on NVLink. CP passes key/value blocks around a ring inside every attention layer: "
        "also on the critical path, with less data. PP sends one activation tensor per micro-batch and stage "
        "boundary, point to point, overlapped with the other micro-batches. DP all-reduces gradients once per "
        "step, overlapped with the backward pass: it tolerates the slowest links. With ranks numbered "
        "innermost first, a group's neighbours are the product of the inner sizes apart: strides **"
        + ", ".join(str(x) for x in _key_9_8(s)["strides"]) + "**, so the "
        + _key_9_8(s)["order"][-1] + " group's members sit "
        + str(_key_9_8(s)["strides"][-1]) + " ranks apart, on other nodes."),
    note=("The workbook's own answer to this exercise disagrees with the order Meta reports in the "
          "Llama 3 paper. The key follows the paper; your feedback explains the difference."))


# 9.9 -----------------------------------------------------------------------------------
def _key_9_9(s):
    kwh = core.energy_kwh(s["gpus"], s["watts"] * u.W, s["days"] * u.day)
    return {"electricity_usd": core.energy_cost(kwh, s["usd_per_kwh"])}


values_exercise(
    CH, "9.9", "Electricity cost", kind="Derive",
    spec={"gpus": 16384, "watts": 700.0, "days": 77.0, "usd_per_kwh": 0.05},
    vary=lambda s, rng: dict(s, gpus=rng.choice([2048, 4096, 8192, 16384, 24576]), watts=float(rng.choice([400, 700, 1000])),
                             days=float(rng.choice([30, 54, 60, 77, 90])), usd_per_kwh=rng.choice([0.05, 0.08, 0.1, 0.12])),
    prompt=lambda s: (f"{s['gpus']:,} GPUs draw {s['watts']:g} W each for {s['days']:g} days (including "
                      f"crash recovery); electricity costs \\${s['usd_per_kwh']:g} per kWh. What is the "
                      "electricity bill of the GPUs, in dollars? (Graded to 0.1 %: the arithmetic "
                      "is exact.)"),
    answers={"electricity_usd": "$"}, key=_key_9_9, rtol=0.001,
    solution=lambda s: (f"kwh = {s['gpus']} * {s['watts']:g} / 1000 * {s['days']:g} * 24\n"
                        f"electricity_usd = kwh * {s['usd_per_kwh']:g}"),
    derivation=lambda s: (
        f"Power: {s['gpus']} × {s['watts']:g} W = {s['gpus'] * s['watts'] / 1e3:,.1f} kW. Hours: "
        f"{s['days']:g} × 24 = {s['days'] * 24:g} h. Energy: "
        f"{core.energy_kwh(s['gpus'], s['watts'], s['days'] * u.day):,.0f} kWh. Cost at "
        f"\\${s['usd_per_kwh']:g}/kWh: **\\${_key_9_9(s)['electricity_usd']:,.0f}**. Cooling and the rest "
        "of the data centre (PUE ≈ 1.4) add about 40 %; GPU rental at \\$2/GPU-h would be about "
        f"\\${s['gpus'] * s['days'] * 24 * 2 / 1e6:.1f} M. (Dollar signs here are currency, written "
        "\\$ so Markdown does not read them as maths.)"),
    note=("The workbook's product of kW and hours is off (it prints 21,233,448 kWh and $1,061,672); "
          "multiply carefully."))

"""Training frameworks and FP8 recipes as named, sourced baselines, each with the range its sources leave open.

The planner's one calibrated number (``compute_efficiency``, fitted on Megatron-LM SC21 Table 1) stands for
Megatron's kernels. Other stacks run the same FLOPs at another speed, and what they overlap differs; a
:class:`Framework` says by how much, where that was measured and how sure it is (a ``(low, high)`` range
beside each point). :data:`FP8_RECIPES` does the same for the FP8 scaling recipes.

Every number below is either read from a published measurement (the source says which) or fitted on rows of
``notebooks/validation.ipynb`` that the notebook names as *fitted*; the rows it names *held out* were chosen
before these numbers were set and no number here was tuned to them.

Examples
--------
>>> framework("torchtitan").efficiency_factor
0.95
>>> framework("megatron-core").ep_overlap_credit
0.37
>>> fp8_recipe("mxfp8").relative_speed
0.954
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Framework", "FRAMEWORKS", "framework", "Fp8Recipe", "FP8_RECIPES", "fp8_recipe"]


@dataclass(frozen=True)
class Framework:
    """A training framework as the planner prices it.

    ``efficiency_factor`` multiplies the calibrated ``compute_efficiency`` (Megatron-Core: 1), with the
    range ``efficiency_range`` (factors, low = slow) its fitted rows spread over. ``ep_overlap_credit`` is
    the measured share of the ideal all-to-all overlap the framework's overlap achieves (the ideal hides
    everything behind the compute beside it), with ``ep_overlap_range``. ``moe_host_per_expert`` is the
    seconds the GPU waits for the host per local expert and MoE layer pass (a forward and backward pass of one
    layer for one micro-batch: the per-expert kernels, their launches and PyTorch overhead), with
    ``moe_host_range``; dense layers' host time is inside ``compute_efficiency``.
    ``source`` says where the efficiency comes from, ``overlap_source`` the overlap credit (the host time's
    source is ``MEGATRON_MOE_HOST_PER_EXPERT``'s).
    """

    name: str
    efficiency_factor: float
    efficiency_range: tuple
    ep_overlap_credit: float
    ep_overlap_range: tuple
    moe_host_per_expert: float
    moe_host_range: tuple
    source: str
    overlap_source: str = ""


#: Seconds an MoE step of Megatron-Core waits for the host per local expert and MoE layer pass, and the range.
#: The mechanism is NVIDIA's measurement (Megatron-LM docs, "Optimizing DeepSeek-V3 Training Performance on
#: NVIDIA GB200 NVL72", sec. 2): the GPU idles between kernels because "the CPU kernel launch speed cannot keep
#: up", worst "before the GEMM in the Expert part" (per-expert scale allocations, swizzles, a grouped GEMM
#: "implemented using multi-stream + cuBLAS"), and what is left after CUDA Graphs sits in "the routed experts
#: part": work per local expert, paid on every layer pass, whatever the tokens in it. NVIDIA publishes the
#: host time only as end-to-end gains (494 -> 970 TFLOPS), not per expert, so the constant is fitted: the
#: median of the six Megatron-Core BF16 MoE rows named *fitted* in notebooks/validation.ipynb (published step
#: less the planned step without host time, over layer passes x local experts: -0.28, 0.05, 0.08, 0.30, 0.33,
#: 0.84 ms), 0.19 ms; the range: none to their largest, 0.84 ms. The held-out MoE rows were not used.
MEGATRON_MOE_HOST_PER_EXPERT = (0.19e-3, (0.0, 0.84e-3))

#: Megatron-Core's measured all-to-all overlap credit, and where it comes from.
MEGATRON_OVERLAP_SOURCE = ("--overlap-moe-expert-parallel-comm: NVIDIA measured it saving 2.1 s of a 19.7 s "
                           "Qwen3-235B-A22B step on 256 H100 where the ideal overlap saves 5.6 s, 37 % "
                           "(Megatron-MoE-ModelZoo, best_practice/Qwen3; notebooks/validation.ipynb, 'Measured "
                           "alternatives'); range none to ideal")
#: What a framework without a measured all-to-all overlap is credited.
NO_OVERLAP_SOURCE = "no all-to-all overlap measured for this framework: none credited, range up to Megatron-Core's 37 %"

FRAMEWORKS = {f.name: f for f in [
    Framework("megatron-core", 1.0, (0.85, 1.20), 0.37, (0.0, 1.0), *MEGATRON_MOE_HOST_PER_EXPERT,
              "the calibration itself (Megatron-LM SC21 Table 1); range: what the 24 fitted dense rows of Megatron "
              "and its relatives need (SC21, Korthikanti et al., BLOOM, OPT, Llama 3, Megatron-Bridge 25.11 on A100 "
              "to GB300: factors 0.854 to 1.194 put each on its published figure)", MEGATRON_OVERLAP_SOURCE),
    Framework("torchtitan", 0.95, (0.89, 1.03), 0.0, (0.0, 0.37), *MEGATRON_MOE_HOST_PER_EXPERT,
              "fitted on torchtitan's three Llama 3 rows on 64 A100 (pytorch/torchtitan docs/performance.md; fitted "
              "rows of notebooks/validation.ipynb: the geometric mean of published / planned with factor 1 is 0.947); "
              "range what those rows need (0.895 to 1.025); MoE host time as Megatron-Core's (none measured)",
              NO_OVERLAP_SOURCE),
    Framework("llm-foundry", 1.11, (1.03, 1.18), 0.0, (0.0, 0.37), *MEGATRON_MOE_HOST_PER_EXPERT,
              "fitted on llm-foundry's three MPT rows on A100 (mosaicml/llm-foundry scripts/train/benchmarking/"
              "README.md; fitted rows of notebooks/validation.ipynb); range what those rows need (1.039 to 1.177)",
              NO_OVERLAP_SOURCE),
    Framework("maxtext", 1.03, (0.98, 1.10), 0.0, (0.0, 0.37), *MEGATRON_MOE_HOST_PER_EXPERT,
              "JAX (MaxText, Pax; XLA SPMD): fitted on the MaxText and Pax rows on A100, H100 and H200 "
              "(NVIDIA/dgxc-benchmarking, AI-Hypercomputer/gpu-recipes, NVIDIA/JAX-Toolbox; fitted rows of "
              "notebooks/validation.ipynb); range what those rows need (0.987 to 1.097)", NO_OVERLAP_SOURCE),
]}


def framework(name):
    """The :class:`Framework` called ``name`` (ValueError listing the known ones).

    >>> framework("maxtext").name
    'maxtext'
    """
    if name not in FRAMEWORKS:
        raise ValueError(f"framework must be one of {tuple(FRAMEWORKS)}; got {name!r}")
    return FRAMEWORKS[name]


@dataclass(frozen=True)
class Fp8Recipe:
    """An FP8 scaling recipe: the throughput of its FP8 GEMMs and casts relative to per-tensor current scaling
    (``relative_speed``, with ``speed_range``), whether it needs Blackwell's block-scaled tensor cores, and
    its source."""

    name: str
    relative_speed: float
    speed_range: tuple
    needs_block_scaling: bool
    source: str


FP8_RECIPES = {r.name: r for r in [
    Fp8Recipe("tensorwise", 1.0, (1.0, 1.0), False,
              "per-tensor current scaling (Transformer Engine Float8CurrentScaling, NVIDIA's 'FP8-CS'; torchao "
              "'tensorwise'): the reference the planner's FP8 model describes (casts read in 16-bit, written in "
              "FP8, operand and transpose)"),
    Fp8Recipe("delayed", 1.0, (1.0, 1.03), False,
              "per-tensor delayed scaling (Transformer Engine DelayedScaling, amax history): scales from earlier "
              "steps skip current scaling's amax pass over each tensor; no published end-to-end comparison found, "
              "so priced as tensorwise, range up to the cast traffic that pass costs"),
    Fp8Recipe("blockwise", 1.0, (0.95, 1.0), False,
              "1 x 128 activation and 128 x 128 weight tiles (DeepSeek-AI 2024, sec. 3.3.2; Transformer Engine "
              "Float8BlockScaling on Hopper): partial sums promoted to FP32 every 128 elements on the CUDA cores; "
              "no published end-to-end comparison with tensorwise found: priced as tensorwise, range down to "
              "MXFP8's measured cost"),
    Fp8Recipe("mxfp8", 0.954, (0.944, 0.964), True,
              "MXFP8, 1 x 32 blocks with E8M0 scales (OCP MX; Blackwell tensor cores): NVIDIA's Megatron-Bridge "
              "25.11 performance summary measures Llama 3 8B at 36,108 / 37,556 (GB300), 29,789 / 31,508 (GB200), "
              "29,521 / 30,624 (B200) and Llama 3.1 405B at 624 / 661 (B200) tokens/s per GPU with MXFP8 / "
              "FP8-CS: 0.961, 0.945, 0.964, 0.944, mean 0.954 (range: the lowest and highest)"),
]}


def fp8_recipe(name):
    """The :class:`Fp8Recipe` called ``name`` (ValueError listing the known ones).

    >>> fp8_recipe("delayed").needs_block_scaling
    False
    """
    if name not in FP8_RECIPES:
        raise ValueError(f"fp8_recipe must be one of {tuple(FP8_RECIPES)}; got {name!r}")
    return FP8_RECIPES[name]

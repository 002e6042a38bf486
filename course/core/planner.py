"""5D-parallel training planner: step time, per-GPU memory, MFU, feasibility and notes.

:func:`plan` evaluates one configuration (TP x CP x PP x DP for attention, ETP x EP x
expert-DP for the experts of a mixture of experts, micro-batching, ZeRO stage, activation
recomputation, sequence parallelism, pipeline schedule, uneven stages, precision) of a
:class:`~course.core.catalog.Model` on a :class:`~course.core.catalog.Cluster`.
:func:`sweep` enumerates every configuration of a cluster and evaluates all of them in
one vectorized NumPy pass; :func:`evaluate` is the same pass on arrays the caller builds
(an instrument's 256-point curve); :func:`explain` says why the best rows of a sweep
beat the next ones, and what each named term assumes.

The pass builds a configuration record (:class:`~course.core.plan_terms.Config`) and adds
up terms, one function each (:mod:`course.core.plan_terms`), whose physics lives in the
core module it belongs to:

=================  ===========================================================================
term               physics (module, source)
=================  ===========================================================================
compute            FLOPs (:mod:`~course.core.layer_cost`, Narayanan et al. 2021 eq. 3, active
                   weights of an MoE, causal attention as FlashAttention-2 computes it) /
                   (GPUs x peak x ``compute_efficiency``; FP8 GEMMs at the FP8 peak,
                   :mod:`~course.core.fp8`), paced by the slowest stage and, for an MoE, the
                   busiest expert rank (:func:`~course.core.moe.moe_straggler_factor`); expert
                   GEMMs no faster than streaming their weights from HBM
                   (:func:`~course.core.moe.expert_weight_stream_time`, roofline); a fused
                   attention kernel at its measured share of peak where the accelerator has
                   one (:func:`~course.core.layer_cost.attention_kernel_extra_time`;
                   FlashAttention-2 on H100: 0.35, Shah et al. 2024)
memory_bound       element-wise kernel bytes / HBM bandwidth (:mod:`~course.core.layer_cost`,
                   roofline), plus FP8 casts
tp_comm            :func:`~course.core.tensor.tp_comm_time_per_layer` (Shoeybi et al. 2019); an MoE
                   layer's attention half (and shared experts), :func:`~course.core.moe.moe_layer_tp_share`; with
                   ``tp_overlap`` partly hidden behind the layer GEMMs, at Transformer Engine's
                   measured overlap efficiency (:func:`~course.core.tensor.tp_overlap_exposed_time`,
                   Chang et al. 2024)
cp_comm            :func:`~course.core.context_parallel.cp_comm_time_per_layer` (Dubey et al.
                   2024); the ring overlaps it with attention (``cp_algorithm``)
ep_comm            :func:`~course.core.moe.moe_all_to_all_time_per_layer` (GShard; DeepSeek-V3's
                   group-limited routing, a node limit where a group is a node; DeepEP's one copy
                   per remote node); hidden by DualPipe
                   and by Megatron-Core's 1F1B all-to-all overlap (``ep_overlap``); plus expert-TP's
                   all-gather / reduce-scatter of the routed tokens
                   (:func:`~course.core.moe.expert_tp_comm_time_per_layer`, Megatron-Core's dispatcher)
bubble             :func:`~course.core.pipeline.schedule_bubble_overhead` x busy time (1F1B,
                   interleaved, ZB-H1, DualPipe)
pp_comm            point-to-point sends of :func:`~course.core.pipeline.p2p_bytes_per_microbatch`
dp_comm_exposed    ZeRO traffic per micro-batch and per step (``grad_bytes`` per gradient), overlapped per layer
                   (:mod:`~course.core.zero`; Rajbhandari et al. 2020, Zhao et al. 2023); expert
                   gradients over the expert-DP group
memory             :func:`~course.core.memory.model_state_breakdown` (ZeRO over DP x CP; experts
                   over expert-DP) + :func:`~course.core.layer_cost.layer_activation_bytes` / CP
                   x the layer-micro-batches of the fullest stage
                   (:func:`~course.core.pipeline.in_flight_microbatches_at_stage`); DeepSeek-V3's
                   storage (``memory_recipe``: :func:`~course.core.moe.mla_activation_bytes_per_token`,
                   FP8-cached MoE inputs, BF16 Adam moments; DeepSeek-AI 2024 sec. 3.2.3, 3.3.3)
recompute          a mode, or a checkpoint policy whose kept bytes replace the activation count and
                   whose recomputed GEMMs and attention join the FLOPs
                   (:mod:`~course.core.checkpointing`; MaxText ``remat_policy``, torchtitan AC)
=================  ===========================================================================

Every collective runs at its link's bandwidth times a measured collective efficiency
(:data:`~course.core.collectives.NVLINK_COLLECTIVE_EFFICIENCY`,
:data:`~course.core.collectives.NETWORK_COLLECTIVE_EFFICIENCY`, from nccl-tests).
Ranks are placed TP innermost, then CP, PP and DP (Dubey et al. 2024, sec. 3.3.2): a
group stays on NVLink while the ranks it spans fit in one NVLink domain (8 GPUs of a DGX node, 72 of an NVL72 rack;
:attr:`~course.core.catalog.Cluster.nvlink_domain`); experts fold the GPUs of a
stage ETP innermost, then EP (Liu et al. 2025), with the stage's GPUs consecutive, as
Megatron-Core's order tp-cp-ep-dp-pp places them (so DeepSeek-V3's EP 64 spans 8 nodes,
DeepSeek-AI 2024 sec. 3.2).

No made-up penalty terms (erratum 5 of the source material): step time is compute +
memory-bound + TP + CP + EP communication + bubble + point-to-point + exposed DP traffic,
each derived from FLOPs, bytes and bandwidths. ``Plan.assumptions`` lists what each term
assumes; MFU is given in both conventions (``mfu``: 6N per token; ``mfu_attention``:
PaLM's 6N + 12 l h s).

Simplifications (say so where students see a number): embeddings and the output layer
are spread evenly over stages (their activations and the logits are not in the
activation memory); the optimizer step, kernel launch and framework overheads are inside
``compute_efficiency``; MoE routing is uniform (a balanced router); hidden communication
costs only the SMs it occupies.

Framework rules that are not physics (DeepSpeed's ban of ZeRO-2/3 with pipelines) and
uneven stages are *notes*, not violations. So is an MoE layout outside the planner's validated
range (fewer tokens per expert and micro-batch than ``min_tokens_per_expert``, 4,096 by default: the
held-out fine-grained runs below it miss by a third to two thirds, ``notebooks/validation.ipynb``); :func:`sweep`
leaves such layouts out unless asked; and expert GEMMs smaller than any measured grouped GEMM
(``starved_expert_gemms``). Every plan gives a
range beside its point (``step_time_low`` / ``step_time_high``, ``range_driver``, ``range_sources``), from the
uncertain assumptions of :data:`~course.core.plan_terms.RANGE_ASSUMPTIONS`.

Example (GPT-3 175B on 1,024 H100s)::

    >>> p = plan("gpt3-175b", "h100-1024", tp=8, pp=8, dp=16, global_batch=1536,
    ...          recompute="selective", sequence_parallel=True)
    >>> p.feasible, round(p.memory_total / 1e9)
    (True, 54)
    >>> p16 = plan("gpt3-175b", "h100-1024", tp=16, pp=4, dp=16, global_batch=1536,
    ...            recompute="full", zero_stage=1)
    >>> [code for code, _ in p16.violations]
    ['tp_crosses_node']
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

import numpy as np

from . import _validate as v
from . import catalog as _cat
from . import checkpointing as _ckpt
from . import layer_cost as _lc
from . import plan_terms as _pt
from . import zero as _zero
from .plan_terms import (DEFAULT_COMPUTE_EFFICIENCY, DEFAULT_MIN_TOKENS_PER_EXPERT, RECOMPUTE_MODES, SCHEDULES,
                         STEP_TERMS, Config, PlanSettings, _as_cluster, _as_model, min_tokens_setting)
from .plan_terms import broadcast_columns as _broadcast_columns
from .plan_terms import columns as _columns
from .plan_terms import rate_columns as _rate_columns
from .plan_terms import term_assumptions
from .sweep_table import GridRows, SweepTable

__all__ = [
    "Plan", "SweepTable", "Config", "PlanSettings", "plan", "sweep", "evaluate", "explain", "iteration_flops",
    "DEFAULT_COMPUTE_EFFICIENCY", "DEFAULT_MIN_TOKENS_PER_EXPERT", "RECOMPUTE_MODES", "SCHEDULES", "VIOLATION_CODES",
    "NOTE_CODES",
    "STEP_TERMS", "megatron_table1", "format_megatron_table1",
]

#: code -> what it means (the sentences in Plan.violations carry the numbers).
VIOLATION_CODES = {
    "gpus_mismatch": "TP x CP x PP x DP must equal the number of GPUs",
    "tp_crosses_node": "tensor parallelism must stay inside one NVLink domain (a node of 8, an NVL72 rack of 72)",
    "heads_not_divisible": "attention heads must divide evenly over TP",
    "cp_not_divisible": "the sequence must split into 2 x CP equal chunks",
    "batch_not_divisible": "global batch must be micro-batch x DP x micro-batches",
    "too_few_microbatches": "a pipeline needs at least as many micro-batches as stages",
    "interleave_needs_multiple": "the interleaved schedule needs micro-batches in multiples of PP",
    "dualpipe_needs_even": "DualPipe needs an even number of stages and an even number of micro-batches, at least 2 x PP",
    "out_of_memory": "the per-GPU memory exceeds the accelerator's",
    "experts_not_divisible": "the routed experts must divide evenly over EP",
    "ep_not_divisible": "ETP x EP must divide the TP x CP x DP GPUs of a stage (parallel folding)",
}
#: code -> what it means: true of the configuration, costed, but not a reason to reject it.
NOTE_CODES = {
    "uneven_stages": "layers split unevenly over pipeline stages: the busiest stage sets the pace",
    "deepspeed_zero_with_pipeline": "DeepSpeed allows only ZeRO-1 with its pipeline engine",
    "few_tokens_per_expert": "each expert multiplies fewer tokens per micro-batch than the planner was validated "
                             "at: the step estimate is likely optimistic (sweep leaves such layouts out)",
    "starved_expert_gemms": "expert GEMMs smaller than any measured grouped GEMM (fewer than 256 rows per expert, "
                            "or a reduced width under 2,048): priced by extrapolation from kernel measurements, and "
                            "the launches and setup of such small GEMMs are not measured: the step is likely "
                            "optimistic",
}


# --------------------------------------------------------------------------- FLOPs


def iteration_flops(model, global_batch, recompute="none"):
    """FLOPs of one training iteration (all GPUs together), counting recomputation.

    Per token and transformer layer a forward pass costs ``2 P_layer`` (matrix
    multiplications) + ``4 s h`` (attention scores and their weighted sum); the
    output layer costs ``2 V h`` per token. The backward pass costs twice the
    forward. Recomputation adds a forward pass of every layer (``"full"``) or of
    the attention-score part only (``"selective"``, Korthikanti et al. 2022)::

        F = B s [ l (3 f + r) + 6 V h ],   f = 2 P_layer + 4 s h,
        r = f (full), 4 s h (selective), 0 (none)

    With GPT shapes (``P_layer = 12 h^2``) and full recomputation this is
    Megatron-LM's eq. 3, ``96 B s l h^2 (1 + s/(6h) + V/(16 l h))`` (Narayanan
    et al. 2021). Context parallelism leaves it unchanged.

    Parameters
    ----------
    model : Model or str
        A transformer from :mod:`course.core.catalog`.
    global_batch : int or array, >= 1
        Sequences per iteration ``B``.
    recompute : {"none", "selective", "full"}

    Returns
    -------
    float or ndarray, FLOP

    Source: Narayanan et al. 2021 (SC21), eq. 3 (full recomputation); Korthikanti et al.
    2022, sec. 5 (selective recomputation re-runs only the attention scores).

    Examples
    --------
    >>> m = _cat.model("megatron-145.6b")
    >>> B, s, l, h, V = 2304, 2048, 80, 12288, 51200
    >>> eq3 = 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    >>> round(iteration_flops(m, B, "full") / eq3, 9)
    1.0
    """
    m = _as_model(model)
    v.choice("recompute", recompute, RECOMPUTE_MODES)
    B = v.integer("global_batch", global_batch)
    return v.scalar_or_array(B * _lc.flops_per_sequence(m, recompute))


# --------------------------------------------------------------------------- result types


@dataclass
class Plan:
    """One evaluated configuration. Times in seconds per iteration, memory in bytes per GPU.

    The step time is the sum of its parts (:data:`STEP_TERMS`): ``compute +
    memory_bound + tp_comm + cp_comm + bubble + pp_comm + dp_comm_exposed``; the memory
    total the sum of ``weights + gradients + optimizer + activations``. ``violations``
    make a plan infeasible; ``notes`` (uneven stages, framework rules, an MoE layout outside the
    validated range of ``tokens_per_expert``) do not.
    """

    model: str
    cluster: str
    gpus: int
    tp: int
    pp: int
    dp: int
    micro_batch: int
    num_microbatches: int
    global_batch: int
    zero_stage: int
    recompute: str
    sequence_parallel: bool
    schedule: str
    interleave: int
    overlap: bool
    compute_efficiency: float
    # step time breakdown (seconds)
    compute: float
    memory_bound: float
    tp_comm: float
    bubble: float
    pp_comm: float
    dp_comm: float
    dp_comm_exposed: float
    step_time: float
    # memory per GPU (bytes)
    weights: float
    gradients: float
    optimizer: float
    activations: float
    memory_total: float
    memory_capacity: float
    # rates
    flops_per_iteration: float
    model_flops: float
    achieved_flops_per_gpu: float
    mfu: float
    tokens_per_second: float
    samples_per_second: float
    scaling_efficiency: float
    bubble_fraction: float
    violations: list = field(default_factory=list)
    # context parallelism and uneven stages (after the fields callers built before them)
    cp: int = 1
    cp_comm: float = 0.0
    stage_layers: int = 0
    first_stage_layers: int = 0
    last_stage_layers: int = 0
    notes: list = field(default_factory=list)
    # mixture of experts: expert mapping ETP x EP x EDP, all-to-all seconds, busiest-rank load
    ep: int = 1
    etp: int = 1
    expert_dp: int = 1
    ep_comm: float = 0.0
    moe_straggler: float = 1.0
    #: tokens each expert's GEMMs multiply per micro-batch (:func:`~course.core.moe.tokens_per_expert`);
    #: 0 without experts
    tokens_per_expert: float = 0.0
    #: MFU with attention counted (PaLM, Appendix B: 6N + 12 l h s per token); ``mfu`` is 6N per token
    mfu_attention: float = 0.0
    #: term (and "memory") -> the assumptions behind its number
    assumptions: dict = field(default_factory=dict)
    #: share of the GEMM peak this configuration's layer GEMMs reach by their shape (:mod:`course.core.gemm`;
    #: 0 with ``gemm_shapes=False``); ``compute_efficiency`` is the share the plan used
    gemm_efficiency: float = 0.0
    #: the range of the step (seconds) and of MFU that follows from the uncertain assumptions
    #: (:data:`~course.core.plan_terms.RANGE_ASSUMPTIONS`): every one at its fast / slow end
    step_time_low: float = 0.0
    step_time_high: float = 0.0
    mfu_low: float = 0.0
    mfu_high: float = 0.0
    #: the assumption whose range alone moves the step most, and each assumption's point, range and source
    range_driver: str = ""
    range_sources: dict = field(default_factory=dict)

    @property
    def step_time_range(self) -> tuple:
        """``(low, high)`` seconds per iteration: the range the point ``step_time`` sits in."""
        return (self.step_time_low, self.step_time_high)

    @property
    def mfu_range(self) -> tuple:
        """``(low, high)`` MFU (6N per token), from the slow and the fast end of the step's range."""
        return (self.mfu_low, self.mfu_high)

    @property
    def tokens_per_second_range(self) -> tuple:
        """``(low, high)`` tokens per second over the cluster."""
        tokens_per_step = self.tokens_per_second * self.step_time
        return (tokens_per_step / self.step_time_high, tokens_per_step / self.step_time_low)

    @property
    def feasible(self) -> bool:
        return not self.violations

    def as_dict(self) -> dict:
        d = asdict(self)
        d["feasible"] = self.feasible
        d["violations"] = [list(x) for x in self.violations]
        d["notes"] = [list(x) for x in self.notes]
        return d

    def breakdown(self) -> dict:
        """Step-time parts in seconds, in the order they add up (:data:`STEP_TERMS`)."""
        return {k: getattr(self, k) for k in STEP_TERMS}

    def memory(self) -> dict:
        """Per-GPU memory parts in bytes."""
        return {"weights": self.weights, "gradients": self.gradients,
                "optimizer": self.optimizer, "activations": self.activations}


# --------------------------------------------------------------------------- the vectorized pass


def evaluate(model, cluster, *, tp, pp, dp, cp=1, micro_batch=1, num_microbatches=4, zero_stage=0,
             recompute="none", sequence_parallel=False, interleave=1, first_stage_layers=0, last_stage_layers=0,
             ep=1, etp=1, settings=None, **options):
    """Evaluate configurations given as broadcastable arrays, in one vectorized pass.

    ``tp, cp, pp, dp, micro_batch, num_microbatches, zero_stage, interleave,
    first_stage_layers, last_stage_layers`` and ``sequence_parallel`` broadcast against
    each other; ``recompute`` is a mode name or an integer array of indices into
    ``RECOMPUTE_MODES``. Builds a :class:`Config` and adds up the term functions.
    Returns a dict of NumPy columns (the fields of :class:`Plan` plus one boolean
    column per violation code, ``viol_<code>``, one per note code, ``note_<code>``,
    and ``feasible``). :func:`plan` and :func:`sweep` are built on it.

    Parameters
    ----------
    model : Model or str
        A transformer of :mod:`course.core.catalog`.
    cluster : Cluster or str
        A cluster of :mod:`course.core.catalog`.
    tp, cp, pp, dp, micro_batch, num_microbatches, interleave : int or array of int, >= 1
        Parallel degrees, sequences per micro-batch, micro-batches per step, chunks per stage.
    ep, etp : int or array of int, >= 1, optional
        Expert- and expert-tensor-parallel degrees (mixtures of experts only).
    zero_stage : int or array of int in 0..3
    recompute : str, CheckpointPolicy or array of int
        A mode of ``RECOMPUTE_MODES`` or indices into it, or one checkpoint policy for every configuration
        (a preset name or a :class:`~course.core.checkpointing.CheckpointPolicy`, as in :func:`plan`).
    sequence_parallel : bool or array of bool
    first_stage_layers, last_stage_layers : int or array of int, >= 0
    settings : PlanSettings, optional
        The pass's settings (:class:`~course.core.plan_terms.PlanSettings`: schedule, precision, overlaps,
        efficiencies, collectives, storage, MoE dispatch...); defaults for every field.
    **options
        Any :class:`~course.core.plan_terms.PlanSettings` field, overriding ``settings``
        (``evaluate(..., precision="fp8")``); an unknown name raises ValueError listing the settings.

    Returns
    -------
    dict of ndarray
        Seconds per iteration, bytes per GPU, FLOP, FLOP/s, tokens/s and booleans, one
        element per configuration.

    Source: the module docstring lists the source of every term.

    Examples
    --------
    >>> import numpy as np
    >>> cols = evaluate("llama3-70b", "h100-1024", tp=8, pp=4, dp=np.array([8, 16, 32]),
    ...                 num_microbatches=16, recompute="full")
    >>> cols["step_time"].shape
    (3,)
    """
    cfg = Config(model, cluster, tp=tp, cp=cp, pp=pp, dp=dp, micro_batch=micro_batch,
                 num_microbatches=num_microbatches, zero_stage=zero_stage, recompute=recompute,
                 sequence_parallel=sequence_parallel, interleave=interleave, first_stage_layers=first_stage_layers,
                 last_stage_layers=last_stage_layers, ep=ep, etp=etp, settings=PlanSettings.of(settings, **options))
    return _broadcast_columns(_columns(cfg), cfg.shape, cfg)


# --------------------------------------------------------------------------- plan


def _domain_words(c):
    """``"8-GPU node"`` where the NVLink domain is the node, ``"72-GPU NVLink domain"`` where it is a rack."""
    g = c.nvlink_domain
    return f"{g}-GPU node" if g == c.gpus_per_node else f"{g}-GPU NVLink domain"


def _sentences(cols, i, m, c, requested_batch):
    """Student-facing sentences for the violations of row ``i``."""
    g = lambda k: cols[k][i].item()  # noqa: E731 -- a one-line helper local to this function
    tp, cp, pp, dp = g("tp"), g("cp"), g("pp"), g("dp")
    b, nmb = g("micro_batch"), g("num_microbatches")
    out = []
    if g("viol_gpus_mismatch"):
        out.append(("gpus_mismatch",
                    f"TP x CP x PP x DP = {tp} x {cp} x {pp} x {dp} = {tp * cp * pp * dp} GPUs, but "
                    f"{c.name} has {c.gpus}: every GPU needs exactly one (TP, CP, PP, DP) position."))
    if g("viol_tp_crosses_node"):
        out.append(("tp_crosses_node",
                    f"TP = {tp} spans more than one {_domain_words(c)}: its all-reduces after "
                    f"every layer would leave NVLink ({c.intra_bandwidth / 1e9:.0f} GB/s) for the "
                    f"network ({c.inter_bandwidth / 1e9:.1f} GB/s per GPU). Keep TP <= "
                    f"{c.nvlink_domain} and dividing it."))
    if g("viol_heads_not_divisible"):
        out.append(("heads_not_divisible",
                    f"TP = {tp} cannot split {m.heads} attention heads evenly: each GPU must hold "
                    f"whole heads."))
    if g("viol_cp_not_divisible"):
        out.append(("cp_not_divisible",
                    f"CP = {cp} cannot split a {m.seq_len}-token sequence into 2 x CP = {2 * cp} equal "
                    f"chunks (each rank takes one early and one late chunk to balance causal attention)."))
    if requested_batch is not None and requested_batch != g("global_batch"):
        if requested_batch % (b * dp):
            why = (f"cannot be split: micro-batch x DP = {b} x {dp} = {b * dp} does not divide it "
                   f"(planned with {g('global_batch')} instead)")
        else:
            why = (f"does not match micro-batch x DP x micro-batches = {b} x {dp} x {nmb} = "
                   f"{g('global_batch')}")
        out.append(("batch_not_divisible",
                    f"A global batch of {requested_batch} sequences {why}."))
    if g("viol_too_few_microbatches"):
        out.append(("too_few_microbatches",
                    f"Only {nmb} micro-batches for {pp} pipeline stages: some stages would never be "
                    f"busy at the same time. Use at least {pp} (many more to shrink the bubble)."))
    if g("viol_interleave_needs_multiple"):
        out.append(("interleave_needs_multiple",
                    f"The interleaved schedule needs the number of micro-batches ({nmb}) to be a "
                    f"multiple of PP = {pp}."))
    if g("viol_experts_not_divisible"):
        out.append(("experts_not_divisible",
                    f"EP = {g('ep')} cannot split the {m.experts} routed experts of each MoE layer evenly."))
    if g("viol_ep_not_divisible"):
        out.append(("ep_not_divisible",
                    f"ETP x EP = {g('etp')} x {g('ep')} does not divide the TP x CP x DP = {tp * cp * dp} GPUs "
                    f"of a pipeline stage, which the experts fold as ETP x EP x expert-DP."))
    if g("viol_dualpipe_needs_even"):
        out.append(("dualpipe_needs_even",
                    f"DualPipe feeds micro-batches from both ends of the pipeline: PP = {pp} and the {nmb} "
                    f"micro-batches must both be even, with at least 2 x PP = {2 * pp} micro-batches (DeepSeek-AI "
                    f"2024, sec. 3.2.1; DeepSeek's dualpipe.py asserts num_chunks >= num_ranks * 2)."))
    if g("viol_out_of_memory"):
        gbs = lambda k: g(k) / 1e9  # noqa: E731 -- a one-line helper local to this function
        out.append(("out_of_memory",
                    f"Out of memory: {gbs('memory_total'):.1f} GB per GPU needed (weights "
                    f"{gbs('weights'):.1f} + gradients {gbs('gradients'):.1f} + optimizer "
                    f"{gbs('optimizer'):.1f} + activations {gbs('activations'):.1f}) but the "
                    f"{c.accelerator.name} has {gbs('memory_capacity'):.1f} GB."))
    return out


def _note_sentences(cols, i, m, min_tokens_per_expert=DEFAULT_MIN_TOKENS_PER_EXPERT):
    """Sentences for the notes of row ``i`` (true, costed, not a reason to reject)."""
    g = lambda k: cols[k][i].item()  # noqa: E731 -- a one-line helper local to this function
    out = []
    if g("note_uneven_stages"):
        pp, busiest = g("pp"), g("stage_layers")
        first, last = g("first_stage_layers"), g("last_stage_layers")
        pinned = "".join([f", {first} pinned on the first stage" if first else "",
                          f", {last} pinned on the last" if last else ""])
        out.append(("uneven_stages",
                    f"The {m.layers} layers split unevenly over PP = {pp} stages{pinned}: the busiest stage "
                    f"has {busiest} layers and sets the pace of all, so compute takes "
                    f"{busiest * pp / m.layers:.3f}x the balanced time ({busiest} x {pp} / {m.layers})."))
    if g("note_deepspeed_zero_with_pipeline"):
        out.append(("deepspeed_zero_with_pipeline",
                    f"ZeRO-{g('zero_stage')} with PP = {g('pp')}: " + _zero.FRAMEWORK_NOTES[
                        "deepspeed_zero_with_pipeline"]))
    if g("note_few_tokens_per_expert"):
        out.append(("few_tokens_per_expert",
                    f"Each expert multiplies {g('tokens_per_expert'):,.0f} tokens per micro-batch (b s / (CP x TP) "
                    f"x ETP x EP x k / E), below the {min_tokens_per_expert:,.0f} the planner has been validated at: "
                    f"this estimate is outside its validated range and likely optimistic. NVIDIA's measured "
                    f"layouts of Qwen3-235B-A22B on 256 H100 (Megatron-MoE-ModelZoo, best_practice/Qwen3, "
                    f"compared in notebooks/validation.ipynb) took 1.1 and 1.1 times the planned step at 1,024 "
                    f"and 512 tokens per expert (the plan 12 % and 7 % short, with its expert GEMMs priced by "
                    f"their shapes and the host time of their 16 local experts charged; 1.4 and 1.6 times before), "
                    f"where the planner was within 9 % at 4,096: what is left of the gap is what NVIDIA calls "
                    f"MoE's compute efficiency wall, small expert GEMMs and host overhead (Megatron-Bridge "
                    f"documentation, MoE Training Optimization), which the planner prices only as far as measured. "
                    f"More tokens per expert: a larger micro-batch or EP, less TP or CP."))
    if g("note_starved_expert_gemms"):
        local = m.experts // g("ep")
        out.append(("starved_expert_gemms",
                    f"The expert GEMMs are smaller than any grouped GEMM whose speed was measured: {local} of the "
                    f"{m.experts} routed experts per GPU, each {m.expert_ffn // g('etp'):,} wide on this GPU and "
                    f"multiplying {g('tokens_per_expert'):,.0f} tokens per micro-batch, against DeepGEMM's smallest "
                    f"measured shapes (256 rows, a reduced width of 2,048). The planner prices them by extrapolation "
                    f"(its dense K sweep for short widths), and what such small GEMMs cost beyond that (launches, "
                    f"casts, per-group setup: NVIDIA's 'compute efficiency wall' of MoE, Megatron-Bridge "
                    f"documentation) is not measured, so treat the step (range {g('step_time_low'):.2f}-"
                    f"{g('step_time_high'):.2f} s) as optimistic: in notebooks/validation.ipynb the held-out "
                    f"fine-grained runs ran slower than planned. Fewer experts per GPU, a larger micro-batch or CUDA "
                    f"Graphs (Megatron-Core --cuda-graph-scope) are what NVIDIA used against it."))
    return out


def plan(model, cluster, tp, pp, dp, *, cp=1, micro_batch=1, global_batch=None, num_microbatches=None,
         zero_stage=0, recompute="none", sequence_parallel=False, interleave=1, first_stage_layers=0,
         last_stage_layers=0, ep=1, etp=1, settings=None, **options) -> Plan:
    """Plan one 4D-parallel configuration: step-time and memory breakdown, MFU, feasibility, notes.

    Parameters
    ----------
    model : Model or str
        A transformer of :mod:`course.core.catalog` (``"llama3-70b"``...).
    cluster : Cluster or str
        ``"h100-1024"``, or :func:`~course.core.catalog.make_cluster`.
    tp, pp, dp : int >= 1
        Tensor-, pipeline- and data-parallel degrees.
    cp : int >= 1, optional
        Context-parallel degree: each sequence split over ``cp`` GPUs (``GPUs = TP x CP x
        PP x DP``).
    micro_batch : int >= 1
        Sequences per micro-batch ``b``.
    global_batch, num_microbatches : int >= 1, optional
        Sequences per iteration ``B`` and micro-batches per pipeline ``m``, with
        ``B = b * dp * m``. Give either; with neither, ``m = 4 * pp`` (bubble overhead
        below 25 %). A ``global_batch`` that ``b * dp`` does not divide is rounded down
        and reported as ``batch_not_divisible``.
    zero_stage : {0, 1, 2, 3}
        ZeRO-1 is Megatron's distributed optimizer; 2 and 3 are DeepSpeed's / FSDP's,
        with their traffic per micro-batch (:mod:`~course.core.zero`).
    recompute : {"none", "selective", "full"}, a preset name or a CheckpointPolicy
        A recomputation mode, or an activation-checkpoint policy (:mod:`~course.core.checkpointing`):
        a preset of :data:`~course.core.checkpointing.POLICIES` (``"maxtext:save_dot_except_mlp"``,
        ``"torchtitan:op"``, ``"torchtitan:layer-2"``...) or a save list
        (:func:`~course.core.checkpointing.checkpoint_policy`), whose saved bytes and recomputed FLOPs are
        charged (dense models).
    sequence_parallel : bool
    interleave : int >= 1
        Model chunks per GPU ``v`` (interleaved 1F1B): bubble / v, point-to-point x v.
    first_stage_layers, last_stage_layers : int >= 0, optional
        Pin the layers of the first / last pipeline stage (0: balanced split).
    ep, etp : int >= 1, optional
        Expert parallelism (mixtures of experts): the routed experts of each MoE layer
        spread over ``ep`` GPUs, each expert split ``etp`` ways. The experts fold the
        ``TP x CP x DP`` GPUs of a stage as ``ETP x EP x EDP`` (Megatron-Core parallel
        folding); their gradients reduce over EDP.
    settings : PlanSettings, optional
        The run's settings, one documented, validated record (:class:`~course.core.plan_terms.PlanSettings`:
        schedule, overlap, compute_efficiency, precision, fused_attention, attention_kernel, gemm_shapes,
        collective_efficiency, cp_algorithm, tp_overlap, grad_bytes, gather_bytes, reshard_after_forward,
        memory_recipe, recompute_modules, capacity_factor, dispatcher, ep_overlap, min_tokens_per_expert);
        ``None``: its defaults.
    **options
        Any of those fields by name, overriding ``settings`` (``plan(..., precision="fp8")``, as before the
        record existed); an unknown name raises ValueError listing the settings.
    Returns
    -------
    Plan
        Seconds per iteration, bytes per GPU, FLOP/s, tokens/s; ``violations`` and
        ``notes`` are lists of ``(code, sentence)``; ``feasible`` is True when there are
        no violations.

    Source: Narayanan et al. 2021 (SC21); Korthikanti et al. 2022; Rajbhandari et al.
    2020; Dubey et al. 2024; Thakur et al. 2005 (the module docstring maps each term to
    its source).

    Examples
    --------
    >>> p = plan("llama3-70b", "research-256", tp=8, pp=4, dp=8, num_microbatches=16,
    ...          recompute="full")
    >>> abs(sum(p.breakdown().values()) - p.step_time) < 1e-12 * p.step_time
    True
    >>> [code for code, _ in plan("llama3-405b", "h100-16384", tp=8, pp=16, dp=128,
    ...                          num_microbatches=16, zero_stage=1, recompute="full").notes]
    ['uneven_stages']
    """
    m, c = _as_model(model), _as_cluster(cluster)
    for name, val in (("tp", tp), ("cp", cp), ("pp", pp), ("dp", dp), ("micro_batch", micro_batch), ("ep", ep),
                      ("etp", etp)):
        if not isinstance(val, (int, np.integer)) or val < 1:
            raise ValueError(f"{name} must be a whole number >= 1; got {val!r}")
    requested = None
    if num_microbatches is not None:
        nmb = int(v.integer("num_microbatches", num_microbatches))
        if global_batch is not None:
            requested = int(v.integer("global_batch", global_batch))
    elif global_batch is not None:
        requested = int(v.integer("global_batch", global_batch))
        nmb = requested // (micro_batch * dp)
        if nmb < 1:
            raise ValueError(f"global_batch must be >= micro_batch x dp = {micro_batch * dp}; "
                             f"got {global_batch!r}")
    else:
        nmb = 4 * pp
    cfg = Config(m, c, tp=tp, cp=cp, pp=pp, dp=dp, micro_batch=micro_batch, num_microbatches=nmb,
                 zero_stage=zero_stage, recompute=recompute, sequence_parallel=sequence_parallel,
                 interleave=interleave, first_stage_layers=first_stage_layers, last_stage_layers=last_stage_layers,
                 ep=ep, etp=etp, settings=PlanSettings.of(settings, **options))
    cols = _broadcast_columns(_columns(cfg), (1,), cfg)
    record = {k: cols[k][0].item() for k in cols}
    # what a checkpoint policy keeps and recomputes, beside the terms it changes
    record["assumptions"] = _policy_assumptions(
        term_assumptions(m, c, cfg.settings, used_efficiency=record["compute_efficiency"]), cfg)
    if cfg.checkpoint_policy is not None:  # the plan's own numbers for it
        recomputed = float(np.sum(cfg.policy_flops_per_token())) * m.seq_len * record["global_batch"]
        record["assumptions"]["memory"] += f"; this plan keeps {record['activations'] / 1e9:.1f} GB of activations per GPU"
        record["assumptions"]["compute"] += (f"; this plan recomputes {recomputed / 1e15:.3g} PFLOP per step "
                                             f"({recomputed / record['flops_per_iteration']:.1%} of its FLOPs)")
    record["range_driver"] = _pt.RANGE_ASSUMPTIONS[int(record["range_driver"])]
    record["range_sources"] = _pt.range_sources(m, c, cfg.settings)
    record.update(model=m.name, cluster=c.name, recompute=cfg.recompute_name or recompute, schedule=cfg.schedule,
                  overlap=cfg.overlap,
                  violations=_sentences(cols, 0, m, c, requested),
                  notes=_note_sentences(cols, 0, m, cfg.min_tokens_per_expert))
    return Plan(**{f.name: record[f.name] for f in fields(Plan)})


# --------------------------------------------------------------------------- sweep


def _divisors(n, up_to=None):
    """Divisors of ``n`` that are <= ``up_to`` (all of them by default), ascending."""
    limit = n if up_to is None else min(n, up_to)
    return [d for d in range(1, limit + 1) if n % d == 0]


def sweep(model, cluster, tp=None, pp=None, cp=(1, 2, 4, 8, 16), micro_batches=(1, 2, 4, 8),
          global_batch=None, zero_stages=(0, 1, 2, 3), recompute=RECOMPUTE_MODES,
          sequence_parallel=(False, True), interleave=(1, 2, 4, 8), *, ep=None, etp=(1,),
          include_infeasible=False, include_unvalidated=False, settings=None, **options) -> SweepTable:
    """Every configuration of ``cluster`` for ``model``, evaluated in one vectorized pass.

    Enumerates TP (default: divisors of the GPUs per node), CP, PP (default: divisors of
    GPUs / (TP x CP) up to the layer count), DP = GPUs / (TP x CP x PP), micro-batch
    sizes, ZeRO stages, recompute modes, sequence parallelism and interleaving, for a
    fixed ``global_batch`` (default: the Llama 3 batch of about 16M tokens, ``2**24 //
    seq_len`` sequences; Dubey et al. 2024, section 3.4). Combinations that are not
    configurations are skipped: micro-batch x DP not dividing the global batch, CP not
    splitting the sequence into ``2 x CP`` chunks, interleaving without a pipeline, with
    more chunks per stage than the busiest stage has layers (``v > ceil(layers / pp)``) or
    with micro-batches that PP does not divide. Sequence parallelism splits nothing without
    TP, so a TP = 1 layout appears once, with SP off, when ``sequence_parallel`` includes False.

    Parameters
    ----------
    model, cluster
        As in :func:`plan`.
    tp, pp : sequence of int, optional
        Degrees to try (defaults above).
    cp, micro_batches, zero_stages, recompute, sequence_parallel, interleave : sequence
        Values to try for each setting. ``interleave`` reaches 8 chunks per stage by default: Llama 3 405B ran
        one layer per chunk, 8 per stage of 16 (Dubey et al. 2024, sec. 3.3.2). ``recompute`` is modes, or
        one checkpoint policy for every row (a preset name or a policy, as in :func:`plan`).
    global_batch : int, optional
        Sequences per iteration, ``>= 1``.
    ep, etp : sequence of int, optional
        Expert-parallel and expert-tensor-parallel degrees to try (mixtures of experts);
        ``ep`` defaults to the powers of two that divide the routed experts, ``(1,)`` for a
        dense model. Pairs whose ``ETP x EP`` does not divide ``TP x CP x DP`` are skipped.
    include_infeasible : bool, optional
        Keep rows with violations.
    settings : PlanSettings, optional
        The settings of every row (:class:`~course.core.plan_terms.PlanSettings`), as in :func:`plan`;
        ``min_tokens_per_expert`` (default 4,096, the fewest tokens per expert and micro-batch at which the
        planner's MoE step times were checked against NVIDIA's measurements; ``None`` or 0: no limit) also
        decides which MoE rows the sweep keeps.
    **options
        Any :class:`~course.core.plan_terms.PlanSettings` field, overriding ``settings``.
    include_unvalidated : bool, optional
        Keep MoE rows below ``min_tokens_per_expert`` (they carry the note ``few_tokens_per_expert``).
        By default they are left out, as infeasible rows are: there the planner's held-out validation finds its
        step a third to two thirds short of the measured one (fine-grained runs on DGX B200), so it would recommend
        layouts that run slower than it says.

    Source: as :func:`plan`; Dubey et al. 2024, sec. 3.4 (the default batch); the validated range:
    NVIDIA Megatron-MoE-ModelZoo ``best_practice/Qwen3`` (measured layouts, compared in
    ``notebooks/validation.ipynb``) and the Megatron-Bridge documentation, "MoE Training Optimization"
    (the compute efficiency wall).

    Returns
    -------
    SweepTable
        One row per configuration, with every :class:`Plan` number, a ``recompute``
        column of mode names, ``violations`` and ``notes`` (``;``-joined codes, in place of
        :func:`evaluate`'s boolean ``viol_*`` / ``note_*`` columns) and ``feasible``.
        Only feasible rows unless ``include_infeasible``, and only rows inside the validated range
        unless ``include_unvalidated``; sorted by tokens/s, exact ties by lower ``memory_total``.
        ``meta["min_tokens_per_expert"]`` is the limit applied (0: none) and
        ``meta["unvalidated_left_out"]`` the rows it left out.

    Examples
    --------
    >>> t = sweep("llama3-70b", "research-256", zero_stages=(1,), recompute=("full",),
    ...           sequence_parallel=(True,))
    >>> best = t.row(0)
    >>> best["tp"] * best["cp"] * best["pp"] * best["dp"]
    256
    """
    m, c = _as_model(model), _as_cluster(cluster)
    chosen = PlanSettings.of(settings, **options)
    limit = min_tokens_setting(chosen.min_tokens_per_expert)
    if not isinstance(include_unvalidated, (bool, np.bool_)):
        raise ValueError(f"include_unvalidated must be True or False; got {include_unvalidated!r}")
    n = c.gpus
    B = int(v.integer("global_batch", global_batch if global_batch is not None else max(1, 2**24 // m.seq_len)))
    # TP inside the NVLink domain; powers of two (every catalog model's head count is one times an odd number)
    tps = list(tp) if tp is not None else [d for d in _divisors(c.nvlink_domain) if d & (d - 1) == 0]
    if ep is None:
        eps = [e for e in (2**i for i in range(12)) if m.experts and m.experts % e == 0] or [1]
    else:
        eps = list(ep)
    etps = list(etp) if m.is_moe else [1]
    for name, values in (("tp", tps), ("cp", cp), ("pp", pp or ()), ("micro_batches", micro_batches),
                         ("interleave", interleave), ("ep", eps), ("etp", etps)):
        for value in values:
            v.integer(name, value)
    policy, rc_axis = _sweep_recompute(recompute)
    if chosen.schedule != "1f1b":  # interleaving is a form of 1F1B
        interleave = (1,)
    folds = [(e, et) for e in eps for et in etps if not m.is_moe or m.experts % e == 0]
    base = _layouts(n, B, m, tps, list(cp), list(pp) if pp is not None else _divisors(n, up_to=m.layers),
                    list(micro_batches), list(interleave), folds)
    if not len(base):
        raise ValueError(f"global_batch = {B} admits no configuration of {n} GPUs with micro-batches "
                         f"{tuple(micro_batches)}")
    # one axis per setting (ZeRO stage, recompute, SP, base layouts): every term computes on the axes
    # it depends on, and only the sums broadcast to the whole grid. The base layouts, by far the longest
    # axis, are the last: NumPy's loops then run along one long contiguous axis when operands broadcast
    # differently (on the axes the other way round, with the 2 SP values innermost, the same pass takes a
    # fifth longer). Rows are still listed in the grid's order, base layout outermost (_rows_in_grid_order).
    on = lambda values, axis: np.reshape(values, [-1 if a == axis else 1 for a in range(4)])  # noqa: E731 -- a one-line helper local to this function
    b = lambda j: on(base[:, j], 3)  # noqa: E731 -- a one-line helper local to this function
    cfg = Config(m, c, tp=b(0), cp=b(1), pp=b(2), dp=b(3), micro_batch=b(4), num_microbatches=b(5),
                 interleave=b(6), ep=b(7), etp=b(8), zero_stage=on(np.array(zero_stages, dtype=np.int64), 0),
                 recompute=policy if policy is not None else on(rc_axis, 1), sequence_parallel=on(np.array(sequence_parallel, dtype=bool), 2),
                 settings=chosen)
    cols = _columns(cfg, rates=False)
    keep = np.ones(cfg.shape, bool) if include_infeasible else np.broadcast_to(cols["feasible"], cfg.shape)
    sp = np.array(sequence_parallel, dtype=bool)
    if not sp.all():  # SP splits nothing without TP: TP = 1 layouts only once, with SP off
        keep = keep & ~((b(0) == 1) & on(sp, 2))
    left_out = 0
    if m.is_moe and limit > 0 and not include_unvalidated:  # outside the validated range: left out as well
        few = np.broadcast_to(cols["note_few_tokens_per_expert"], cfg.shape)
        left_out = int(np.count_nonzero(keep & few))
        keep = keep & ~few
    rows = _rows_in_grid_order(keep)
    speed = np.broadcast_to(cols["tokens_per_second"], cfg.shape).reshape(-1)[rows]
    memory = np.broadcast_to(cols["memory_total"], cfg.shape).reshape(-1)[rows]
    rows = rows[_fastest_first(speed, memory)]  # fastest first; ties: less memory first, then the grid's order
    derived = {"violations": lambda t: _joined_codes(t, "viol_"), "notes": lambda t: _joined_codes(t, "note_"),
               "recompute": ((lambda t: np.full(np.shape(t["recompute_code"]), cfg.recompute_name, dtype=object))
                             if policy is not None else
                             (lambda t: np.array(RECOMPUTE_MODES, dtype=object)[t["recompute_code"]])),
               **{name: (lambda t, rate=rate: rate(t)) for name, rate in _rate_columns(cfg).items()}}
    return SweepTable(GridRows(cols, cfg.shape, rows, derived, hidden=("viol_", "note_", "rw_")),
                      meta={"model": m.name, "cluster": c.name, "global_batch": B, "is_moe": m.is_moe,
                            "min_tokens_per_expert": limit if m.is_moe else 0.0,
                            "include_unvalidated": bool(include_unvalidated), "unvalidated_left_out": left_out,
                            "assumptions": _policy_assumptions(term_assumptions(m, c, chosen), cfg),
                            "range_sources": _pt.range_sources(m, c, chosen),
                            "settings": chosen})


def _rows_in_grid_order(keep):
    """Flat indices of the true cells of ``keep`` (axes ZeRO stage, recompute, SP, base layout), listed in the
    order of the grid with the base layout outermost (the order :func:`sweep` promises for exact ties).

    >>> keep = np.zeros((1, 1, 2, 3), bool)   # 2 SP values x 3 layouts
    >>> keep[0, 0, 0, 1] = keep[0, 0, 1, 0] = True   # cells 1 (SP 0, layout 1) and 3 (SP 1, layout 0)
    >>> _rows_in_grid_order(keep).tolist()   # layout 0 first
    [3, 1]
    """
    z, r, s, n = keep.shape
    layout, rest = np.divmod(np.flatnonzero(np.moveaxis(keep, 3, 0).reshape(-1)), z * r * s)
    return rest * n + layout


def _sweep_recompute(recompute):
    """A sweep's ``recompute``: (``None``, mode codes) for recompute modes, (the policy, ``None``) for one
    checkpoint policy (:mod:`~course.core.checkpointing`)."""
    if isinstance(recompute, (str, _ckpt.CheckpointPolicy)):
        recompute = (recompute,)
    recompute = tuple(recompute)
    if any(not (isinstance(r, str) and r in RECOMPUTE_MODES) for r in recompute):
        if len(recompute) != 1:
            raise ValueError(f"recompute: a sweep tries recompute modes {RECOMPUTE_MODES} or one checkpoint policy; "
                             f"got {recompute!r}")
        return _ckpt.checkpoint_policy(recompute[0]), None
    return None, np.array([RECOMPUTE_MODES.index(r) for r in recompute], dtype=np.int64)


def _policy_assumptions(assumptions, cfg):
    """``assumptions`` with what ``cfg``'s checkpoint policy keeps and recomputes added to compute and memory."""
    if cfg.checkpoint_policy is None:
        return assumptions
    said = _ckpt.policy_summary(cfg.checkpoint_policy, cfg.model, cfg.fused_attention, cfg.attention_fraction)
    repeats = RECOMPUTE_MODES[int(np.asarray(cfg.recompute_code).flat[0])]
    out = dict(assumptions)
    out["compute"] = f"{out['compute']}; {said}; its TP / CP collectives repeated as with recompute={repeats!r}"
    out["memory"] = (f"{out['memory']}; activations: {said}, plus one layer's recomputed tensors (and its input) "
                     f"during its backward pass")
    return out


def _fastest_first(speed, memory=None):
    """``np.argsort(-speed, kind="stable")`` in a quarter of the time: an unstable sort, then the
    runs of equal speed put back in their original order by a sort of unique integer keys.
    With ``memory``, exact ties in speed go lowest memory first (then original order).

    >>> _fastest_first(np.array([1.0, 3.0, 2.0, 3.0, 1.0])).tolist()
    [1, 3, 2, 0, 4]
    >>> _fastest_first(np.array([1.0, 3.0, 2.0, 3.0, 1.0]), memory=np.array([5.0, 9.0, 1.0, 8.0, 4.0])).tolist()
    [3, 1, 2, 4, 0]
    """
    order = np.argsort(-speed)
    ranked = speed[order]
    run = np.concatenate(([0], np.cumsum(ranked[1:] != ranked[:-1])))
    if run[-1] + 1 == run.size:  # no ties
        return order
    if memory is None:
        return order[np.argsort(run * run.size + order)]
    tied = np.flatnonzero(np.bincount(run)[run] > 1)  # only the runs of equal speed are sorted again
    rows = order[tied]
    order[tied] = rows[np.lexsort((rows, np.asarray(memory)[rows], run[tied]))]
    return order


def _layouts(n, batch, model, tps, cps, pps, micro_batches, interleave, folds):
    """Every (TP, CP, PP, DP, b, m, v, EP, ETP) of ``n`` GPUs and ``batch`` sequences, one row each.

    Rows in the order of nested loops over TP, CP, PP, micro-batch, interleave and expert
    folding; combinations that are not configurations are left out: TP x CP x PP not
    dividing the GPUs, CP not splitting the sequence into 2 x CP chunks, b x DP not dividing
    the batch, interleaving without a pipeline, with micro-batches that PP does not divide
    or more chunks per stage than the busiest stage's ``ceil(layers / PP)`` layers, ETP x EP
    not dividing TP x CP x DP.
    """
    fold = np.array(folds, dtype=np.int64).reshape(-1, 2)
    grid = np.meshgrid(np.array(tps, dtype=np.int64), np.array(cps, dtype=np.int64), np.array(pps, dtype=np.int64),
                       np.array(micro_batches, dtype=np.int64), np.array(interleave, dtype=np.int64),
                       np.arange(len(fold)), indexing="ij")
    t, k, p, b, v, f = (a.reshape(-1) for a in grid)
    ok = (n % (t * k) == 0) & (model.seq_len % (2 * k) == 0) & ((n // (t * k)) % p == 0)
    d = np.maximum(n // (t * k * p), 1)
    ok &= batch % (b * d) == 0
    nmb = np.maximum(batch // (b * d), 1)
    # a stage's v chunks need a layer each on the busiest stage, ceil(L / p) (Llama 3 405B: 16 x 8 = 128
    # chunks for 126 layers, the first and last stage one layer short; Dubey et al. 2024, sec. 3.3.2)
    ok &= ~((v > 1) & ((p == 1) | (nmb % p != 0) | (v > -(-model.layers // p))))
    e, et = fold[f, 0], fold[f, 1]
    ok &= (t * k * d) % (e * et) == 0
    return np.stack([t, k, p, d, b, nmb, v, e, et], axis=1)[ok]


def _joined_codes(rows, prefix):
    """``;``-joined codes of the true ``prefix*`` flags of each row, joined once per distinct combination."""
    keys = [k for k in rows._cols if k.startswith(prefix)]
    bits = sum(rows[k].astype(np.int64) << i for i, k in enumerate(keys))
    combos, which = np.unique(bits, return_inverse=True)
    names = [";".join(k[len(prefix):] for i, k in enumerate(keys) if combo >> i & 1) for combo in combos]
    return np.array(names, dtype=object)[which]


# --------------------------------------------------------------------------- explaining a ranking

_TERM_WORDS = {"compute": "compute", "memory_bound": "memory-bound kernels", "tp_comm": "TP all-reduces",
               "cp_comm": "CP key/value exchange", "ep_comm": "EP all-to-alls and expert-TP gathers", "bubble": "pipeline bubble", "pp_comm": "pipeline sends",
               "dp_comm_exposed": "exposed DP/ZeRO traffic"}
_SETTING_NAMES = ("tp", "cp", "pp", "dp", "ep", "etp", "micro_batch", "num_microbatches", "interleave",
                  "zero_stage", "recompute", "sequence_parallel")


def _setting(row):
    experts = f"EP {row['ep']} ETP {row['etp']} EDP {row['expert_dp']} " if row.get("ep", 1) * row.get("etp", 1) > 1 else ""
    return (f"TP {row['tp']} CP {row['cp']} PP {row['pp']} DP {row['dp']} {experts}b {row['micro_batch']} "
            f"m {row['num_microbatches']} v {row['interleave']} ZeRO-{row['zero_stage']} "
            f"{row['recompute']} recompute{' + SP' if row['sequence_parallel'] else ''}")


def _mfu_words(row):
    return (f"MFU {row['mfu']:.1%} counting 6N per token, {row['mfu_attention']:.1%} counting attention "
            f"(6N + 12 l h s)")


def _range_words(row, meta):
    """For an MoE sweep: the tokens per expert of ``row`` and the validated range the sweep applied."""
    if not meta.get("is_moe"):
        return ""
    limit, left = meta.get("min_tokens_per_expert", 0.0), meta.get("unvalidated_left_out", 0)
    if limit <= 0:
        return (f" Each expert of #1 multiplies {row['tokens_per_expert']:,.0f} tokens per micro-batch; no "
                f"validated-range limit was applied (min_tokens_per_expert off).")
    where = "inside" if row["tokens_per_expert"] >= limit else "below"
    kept = (f"{left:,} layouts below it left out" if left else "none below it left out")
    return (f" Each expert of #1 multiplies {row['tokens_per_expert']:,.0f} tokens per micro-batch, {where} the "
            f"planner's validated range (at least {limit:,.0f}: NVIDIA's measured Qwen3-235B-A22B layouts, "
            f"Megatron-MoE-ModelZoo; {kept}).")


def _width_words(row, meta):
    """The range of ``row``'s step, the assumption that drives its width, and every ranged assumption's source."""
    if "step_time_low" not in row:
        return ""
    driver = _pt.RANGE_ASSUMPTIONS[int(row["range_driver"])]
    sources = meta.get("range_sources", {})
    listed = "; ".join(f"{name}: {said}" for name, said in sources.items())
    return (f" #1's step lies between {row['step_time_low']:.2f} and {row['step_time_high']:.2f} s; the widest "
            f"share of that range comes from the {driver} assumption. Ranged assumptions and their sources: "
            f"{listed}.")


def explain(table, k=3, terms=2):
    """Why the best rows of a sweep beat the next ones, term by term.

    For ``i = 2..k`` compares row 1 with row ``i`` of ``table`` (sorted fastest first):
    the settings that differ, the step-time terms (:data:`STEP_TERMS`) whose difference is
    largest, the per-GPU memory of both and the share of peak each one's GEMMs were charged (set by their
    shapes, :mod:`course.core.gemm`).

    Parameters
    ----------
    table : SweepTable
        A :func:`sweep` result (sorted by tokens/s).
    k : int >= 2, optional
        Rows to compare.
    terms : int >= 1, optional
        Step-time terms named per comparison.

    Returns
    -------
    list of str
        One sentence per comparison, ``"#1 beats #2 because ..."`` (or ``"#1 and #2 tie
        ..."`` when their steps differ by less than half a millisecond), ending with the
        assumptions behind the terms it names (:func:`~course.core.plan_terms.term_assumptions`)
        and, for a mixture of experts, #1's tokens per expert against the validated range
        (``min_tokens_per_expert`` of :func:`sweep`) and how many layouts the range left out.
        An empty mixture-of-experts sweep whose layouts were all below that range gets one
        sentence saying so.

    Source: the terms of :func:`evaluate`.

    Examples
    --------
    GPT-3 on 1,024 H100s, TP 8, PP 8, with and without interleaving:

    >>> t = sweep("gpt3-175b", "h100-1024", tp=(8,), pp=(8,), cp=(1,), micro_batches=(1,),
    ...           zero_stages=(1,), recompute=("full",), sequence_parallel=(False,),
    ...           interleave=(1, 2), global_batch=1536)
    >>> print(explain(t, k=2)[0].split(";")[0])  # doctest: +ELLIPSIS
    #1 beats #2 because its step is ... ms shorter (... s vs ... s): pipeline bubble -... ms, ...
    """
    if not isinstance(table, SweepTable):
        raise ValueError(f"table must be a sweep() result to rank; got {type(table).__name__} (one plan's terms and "
                         f"the assumptions behind each are in its .assumptions)")
    k = int(v.integer("k", k, minimum=2))
    terms = int(v.integer("terms", terms, minimum=1))
    left_out = table.meta.get("unvalidated_left_out", 0)
    if len(table) == 0 and left_out:  # say why a mixture-of-experts search came back empty
        return [f"No layout to rank: all {left_out:,} feasible layouts give each expert fewer than "
                f"{table.meta['min_tokens_per_expert']:,.0f} tokens per micro-batch, below the planner's validated "
                f"range (NVIDIA's measured Qwen3-235B-A22B layouts, Megatron-MoE-ModelZoo), where its estimates "
                f"are optimistic; sweep(..., min_tokens_per_expert=None) ranks them anyway."]
    if len(table) < 2:
        return []
    best = table.row(0)
    scope = _range_words(best, table.meta) + _width_words(best, table.meta)
    out = []
    for i in range(1, min(k, len(table))):
        other = table.row(i)
        changed = [f"{name} {other[name]} -> {best[name]}" for name in _SETTING_NAMES if other[name] != best[name]]
        diffs = sorted(((other[t] - best[t], t) for t in STEP_TERMS), key=lambda x: -abs(x[0]))[:terms]
        why = ", ".join(f"{_TERM_WORDS[t]} {'-' if d > 0 else '+'}{abs(d) * 1e3:.0f} ms" for d, t in diffs)
        gap = other["step_time"] - best["step_time"]
        settings = ", ".join(changed) or "identical"
        memory = f"memory {best['memory_total'] / 1e9:.1f} vs {other['memory_total'] / 1e9:.1f} GB per GPU"
        if "compute_efficiency" in best:  # the share of peak each row's GEMMs were charged, set by their shapes
            memory += (f"; GEMMs at {best['compute_efficiency']:.3f} vs {other['compute_efficiency']:.3f} of peak "
                       f"(their shapes)")
        if gap < 0.5e-3:  # a tie: say what differs instead of inventing a winner
            out.append(f"#1 and #{i + 1} tie ({best['step_time']:.2f} s per step): they differ in {settings}, "
                       f"which moves no step-time term by a millisecond; {memory}. #1 is {_setting(best)}, "
                       f"{_mfu_words(best)}.{scope}")
            continue
        assumes = table.meta.get("assumptions", {})
        because = "; ".join(f"{_TERM_WORDS[t]}: {assumes[t]}" for _, t in diffs if t in assumes)
        out.append(f"#1 beats #{i + 1} because its step is {gap * 1e3:.0f} ms shorter "
                   f"({best['step_time']:.2f} s vs {other['step_time']:.2f} s): {why}; "
                   f"settings {settings}; {memory}. #1 is {_setting(best)}, {_mfu_words(best)}."
                   + (f" Assumed ({because})." if because else "") + scope)
    return out


# --------------------------------------------------------------------------- calibration


def megatron_table1(compute_efficiency=DEFAULT_COMPUTE_EFFICIENCY):
    """Predicted vs published TFLOP/s per GPU for every row of Megatron-LM SC21 Table 1.

    Each row runs as the paper and its reproduction script
    (NVIDIA/Megatron-LM ``examples/sc21/run_table_1.sh``) describe it: A100 80GB in DGX
    nodes with 8 HDR ports (Selene), BF16, full activation recomputation, the script's
    micro-batch size and interleaving, 1F1B schedule, no sequence parallelism (it came
    later), ZeRO off, DP all-reduce after the pipeline flush (Megatron's "local" DDP does
    not overlap). "Achieved TFLOP/s" counts eq. 3 FLOPs, as the paper does. The only
    tuned number is ``compute_efficiency``.

    Parameters
    ----------
    compute_efficiency : float in (0, 1], optional
        Share of dense peak the matrix multiplications sustain.

    Source: Narayanan et al. 2021 (SC21), Table 1 (published TFLOP/s per GPU);
    NVIDIA/Megatron-LM ``examples/sc21/run_table_1.sh`` (micro-batch, interleaving).

    Returns
    -------
    list of dict
        ``params_b, tp, pp, gpus, global_batch, published_tflops, predicted_tflops,
        error`` (relative) per row.

    Examples
    --------
    >>> rows = megatron_table1()
    >>> len(rows), all(abs(r["error"]) < 0.15 for r in rows)
    (6, True)
    """
    out = []
    for mdl, tp, pp, gpus, batch, published, mbs, chunks in _cat.MEGATRON_TABLE1:
        cl = _cat.make_cluster("DGX A100", gpus)
        p = plan(mdl, cl, tp=tp, pp=pp, dp=gpus // (tp * pp), micro_batch=mbs, global_batch=batch,
                 recompute="full", overlap=False, interleave=chunks, fused_attention=False,
                 compute_efficiency=compute_efficiency)
        out.append(dict(model=mdl.name, params_b=mdl.params / 1e9, tp=tp, pp=pp, gpus=gpus,
                        global_batch=batch, micro_batch=mbs, interleave=chunks,
                        published_tflops=published / 1e12,
                        predicted_tflops=p.achieved_flops_per_gpu / 1e12,
                        error=p.achieved_flops_per_gpu / published - 1.0, feasible=p.feasible,
                        violations=[code for code, _ in p.violations]))
    return out


def format_megatron_table1(compute_efficiency=DEFAULT_COMPUTE_EFFICIENCY) -> str:
    """The predicted-vs-published table of :func:`megatron_table1` as text.

    Parameters
    ----------
    compute_efficiency : float in (0, 1], optional
        As in :func:`megatron_table1`.

    Returns
    -------
    str
        A header line, a column line and one line per row (TFLOP/s per GPU, relative error).

    Source: Narayanan et al. 2021 (SC21), Table 1.

    Examples
    --------
    >>> print(format_megatron_table1().splitlines()[0])
    Megatron-LM SC21 Table 1 (A100 80GB, 312 TFLOPS) vs course.core.planner, compute_efficiency = 0.64
    """
    lines = [f"Megatron-LM SC21 Table 1 (A100 80GB, 312 TFLOPS) vs course.core.planner, "
             f"compute_efficiency = {compute_efficiency}",
             f"{'params':>8} {'TP':>3} {'PP':>3} {'v':>2} {'b':>3} {'GPUs':>5} {'batch':>6} "
             f"{'published':>10} {'predicted':>10} {'error':>7}"]
    for r in megatron_table1(compute_efficiency):
        lines.append(f"{r['params_b']:>7.1f}B {r['tp']:>3} {r['pp']:>3} {r['interleave']:>2} "
                     f"{r['micro_batch']:>3} {r['gpus']:>5} {r['global_batch']:>6} "
                     f"{r['published_tflops']:>10.0f} {r['predicted_tflops']:>10.1f} "
                     f"{r['error']:>+7.1%}")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    import sys

    if "--megatron" in sys.argv:
        print(format_megatron_table1())
    else:
        print("usage: python -m course.core.planner --megatron")

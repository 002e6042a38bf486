"""The terms of the planner's step time and memory, one function each, over a configuration record.

:class:`Config` validates and broadcasts one batch of configurations and derives what
every term needs (the busiest stage, the links of the TP, CP, PP and DP groups with ranks
placed TP, CP, PP, DP). Each ``*_term`` function takes the record (keyword-only) and
returns seconds per iteration or bytes per GPU; the physics it uses lives in the core
module named in its docstring. :func:`columns` adds them up into the columns
:func:`course.core.planner.evaluate` returns. Sources: the module docstring of
:mod:`course.core.planner` maps every term to its source.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Optional

import numpy as np

from . import _validate as v
from . import catalog as _cat
from . import checkpointing as _ckpt
from . import collectives as _coll
from . import context_parallel as _cp
from . import data_parallel as _dp
from . import economics as _econ
from . import fp8 as _fp8
from . import frameworks as _fw
from . import gemm as _gemm
from . import layer_cost as _lc
from . import memory as _mem
from . import moe as _moe
from . import pipeline as _pipe
from . import tensor as _tp
from . import zero as _zero

__all__ = ["REFERENCE_GEMM_EFFICIENCY", "PlanSettings", "Config", "columns", "broadcast_columns", "rate_columns", "term_assumptions",
           "range_terms", "range_sources", "RANGE_ASSUMPTIONS", "FRAMEWORKS", "FP8_RECIPES", "DEFAULT_COMPUTE_EFFICIENCY", "RECOMPUTE_MODES", "SCHEDULES", "STEP_TERMS",
           "CP_ALGORITHMS", "MEMORY_RECIPES", "DISPATCHERS", "DEFAULT_MIN_TOKENS_PER_EXPERT", "min_tokens_setting",
           "grad_bytes_setting", "gather_bytes_setting", "ATTENTION_KERNELS", "RECOMPUTE_MODULES", "recompute_modules_setting"]

#: Share of dense peak that a training step's matrix multiplications sustain on the calibration runs: the
#: planner's single calibrated assumption. Fitted once on Megatron-LM SC21 Table 1 (A100, 16-bit, full
#: recomputation), with every collective at its measured efficiency (nccl-tests) and each row's GEMMs at
#: the share their shapes allow (``gemm_shapes``, :data:`REFERENCE_GEMM_EFFICIENCY`): with this value every row's
#: predicted TFLOP/s per GPU lies within 5 % of the published one (-4.6 % to +3.5 %;
#: tests/core/test_megatron_table1.py, ``python -m course.core.planner --megatron``). Before GEMM shapes
#: were priced one constant 0.63 did the same for every accelerator and shape.
DEFAULT_COMPUTE_EFFICIENCY = 0.64

#: The GEMM efficiency ``compute_efficiency`` stands for: the A100's measured BF16 ceiling (86.9 %, the
#: accelerator of the calibration runs; :mod:`course.core.gemm`). With ``gemm_shapes`` on, a configuration's
#: matrix multiplications run at ``compute_efficiency x E(shape) / REFERENCE_GEMM_EFFICIENCY``, where
#: ``E(shape)`` is :func:`~course.core.gemm.layer_gemm_efficiency` of its own GEMMs on its own accelerator:
#: ``compute_efficiency / REFERENCE_GEMM_EFFICIENCY`` (:value:`course.core.DEFAULT_COMPUTE_EFFICIENCY / course.core.plan_terms.REFERENCE_GEMM_EFFICIENCY | .2f`
#: by default) is then the share of GEMM time a training step keeps
#: (launches, element-wise kernels between the GEMMs, the optimizer step), calibrated once on SC21 Table 1.
REFERENCE_GEMM_EFFICIENCY = 0.869

RECOMPUTE_MODES = _lc.RECOMPUTE_MODES
#: Pipeline schedules (:mod:`~course.core.pipeline`): 1F1B (interleaved with ``interleave > 1``),
#: GPipe, zero-bubble ZB-H1 (Qi et al. 2023) and DeepSeek-V3's DualPipe.
SCHEDULES = ("1f1b", "gpipe", "zb-h1", "dualpipe")
#: How context parallelism exchanges keys and values: Llama 3's all-gather before attention
#: (exposed; Dubey et al. 2024, sec. 3.3.2) or the ring of Megatron-Core / Transformer
#: Engine (``cp_comm_type="p2p"``), which sends the next K/V block while attention runs on
#: the current one (Liu et al. 2023, Ring Attention, sec. 3).
CP_ALGORITHMS = ("ring", "all_gather")
#: How weights, optimizer states and activations are stored. ``"standard"``: 16-bit weights and
#: gradients, FP32 master weights and Adam moments (12 bytes), Korthikanti et al.'s activations.
#: ``"deepseek-v3"``: DeepSeek-V3's measures (DeepSeek-AI 2024): AdamW moments in BF16 with FP32 master
#: weights (8 bytes) and FP32 gradients "used for batch size accumulation" (4 bytes; sec. 3.3.3); every
#: RMSNorm and the MLA up-projections recomputed in the backward pass (sec. 3.2.3); linear-layer inputs
#: cached in FP8, the attention output in E5M6, SwiGLU inputs in FP8 with the product recomputed (sec.
#: 3.3.3). Its other measures change nothing the planner counts: the EMA of the weights lives in CPU
#: memory, and the embedding and output head the multi-token-prediction module shares (sec. 3.2.3) are
#: not in the planner's model. Needs a model with multi-head latent attention (``Model.mla``).
MEMORY_RECIPES = ("standard", "deepseek-v3")

#: How MoE tokens reach their experts, each priced from its measurement (:data:`~course.core.moe.DISPATCHER_MEASUREMENTS`):
#: Megatron-Core's ``alltoall`` dispatcher (one network copy per remote expert), DeepEP's normal kernels
#: (``deepep``, ``--moe-token-dispatcher-type flex``: one copy per remote node, forwarded over NVLink there;
#: DeepSeek-AI 2024 sec. 3.2.2) and low-latency kernels (``deepep-ll``, pure RDMA), NVIDIA's ``hybridep`` and
#: Megatron-Core's ``allgather`` dispatcher.
DISPATCHERS = tuple(_moe.DISPATCHER_MEASUREMENTS)
#: Training frameworks with measured baselines (``course.core.frameworks.FRAMEWORKS``).
FRAMEWORKS = tuple(_fw.FRAMEWORKS)
#: FP8 scaling recipes (``course.core.frameworks.FP8_RECIPES``).
FP8_RECIPES = tuple(_fw.FP8_RECIPES)
#: The uncertain assumptions a plan's range follows (``step_time_low`` / ``step_time_high``), in the order of
#: the ``range_driver`` codes; each named with where its range comes from in :func:`range_sources`.
RANGE_ASSUMPTIONS = ("compute efficiency", "accelerator peak", "FP8 recipe", "grouped GEMMs", "all-to-all overlap",
                     "dispatcher", "MoE host time")

#: Submodules Megatron-Core can recompute beside ``recompute`` (``--recompute-modules``) that the planner
#: charges: ``"mla_up_proj"``, "the MLA up projection and RoPE applying parts" (models with MLA), and
#: ``"mlp"``, "the dense MLP submodule" (the dense layers of a mixture of experts, or every layer of a dense
#: model). Source: Megatron-Core ``TransformerConfig.recompute_modules``.
RECOMPUTE_MODULES = ("mla_up_proj", "mlp")

#: Fewest tokens per expert and micro-batch at which an MoE plan is inside the planner's validated range
#: (:data:`~course.core.moe.VALIDATED_MIN_TOKENS_PER_EXPERT`: NVIDIA's measured Qwen3-235B-A22B layouts on
#: H100, Megatron-MoE-ModelZoo). Below it a plan carries the note ``few_tokens_per_expert`` and
#: :func:`~course.core.planner.sweep` leaves the layout out unless asked to keep it.
DEFAULT_MIN_TOKENS_PER_EXPERT = _moe.VALIDATED_MIN_TOKENS_PER_EXPERT

#: Fused attention kernels the planner can run, with their measured H100 curves
#: (:data:`~course.core.gemm.ATTENTION_KERNEL_TFLOPS`; Shah et al. 2024): applied where the accelerator has a
#: measured ``attention_efficiency`` (Hopper), relative to FlashAttention-2's, which the catalog states.
ATTENTION_KERNELS = tuple(_gemm.ATTENTION_KERNEL_TFLOPS)
#: Query tokens from which FlashAttention-2's measured speed is its plateau (the catalog's ``attention_efficiency``).
ATTENTION_PLATEAU_TOKENS = 8192

#: Step-time terms in the order they add up (``Plan.breakdown()``).
STEP_TERMS = ("compute", "memory_bound", "tp_comm", "cp_comm", "ep_comm", "bubble", "pp_comm", "dp_comm_exposed")

#: Share of a GPU's SMs that collectives running beside computation occupy, so hiding T seconds of
#: traffic behind computation still costs T x this share of compute time. DeepSeek-V3 dedicates 20
#: of the H800's 132 SMs to communication to saturate InfiniBand and NVLink (DeepSeek-AI 2024, sec.
#: 3.2.2); NCCL's collectives likewise run as kernels on SMs. Charged where the planner overlaps
#: CP's ring and DualPipe's all-to-alls; the DP/ZeRO overlap keeps the model of
#: :func:`~course.core.data_parallel.data_parallel_step_curve` (no SM share), as the course teaches it.
OVERLAP_SM_SHARE = 20 / 132

#: 16-bit (BF16/FP16) activations and gradients on the wire.
_WIRE_BYTES = 2.0


# --------------------------------------------------------------------------- configuration record


def grad_bytes_setting(grad_bytes, memory_recipe="standard"):
    """``grad_bytes`` as a float: ``None`` takes the memory recipe's (``deepseek-v3``: FP32, 4; else 2).

    DeepSeek-V3 keeps "master weights and gradients (used for the optimizer)" in FP32
    (DeepSeek-AI 2024, sec. 3.3.3), so its gradients are held and reduced in 4 bytes.

    >>> grad_bytes_setting(None), grad_bytes_setting(None, "deepseek-v3"), grad_bytes_setting(2, "deepseek-v3")
    (2.0, 4.0, 2.0)
    """
    if grad_bytes is None:
        return 4.0 if memory_recipe == "deepseek-v3" else _WIRE_BYTES
    return float(v.positive("grad_bytes", grad_bytes))


def gather_bytes_setting(gather_bytes):
    """``gather_bytes`` as a float: ``None`` takes 2 (BF16 parameters, as FSDP2's ``param_dtype`` and
    Megatron's distributed optimizer gather them).

    >>> gather_bytes_setting(None), gather_bytes_setting(4)
    (2.0, 4.0)
    """
    return _WIRE_BYTES if gather_bytes is None else float(v.positive("gather_bytes", gather_bytes))


def recompute_modules_setting(modules, model, memory_recipe="standard"):
    """``recompute_modules`` as a sorted tuple of :data:`RECOMPUTE_MODULES` names (``None``: none).

    >>> recompute_modules_setting(["mlp", "mla_up_proj"], "deepseek-v3")
    ('mla_up_proj', 'mlp')
    """
    if modules is None:
        return ()
    if isinstance(modules, str) or not all(isinstance(x, str) for x in modules):
        raise ValueError(f"recompute_modules must be a list of names from {RECOMPUTE_MODULES}; got {modules!r}")
    chosen = tuple(sorted(set(modules)))
    for name in chosen:
        if name not in RECOMPUTE_MODULES:
            raise ValueError(f"recompute_modules names one of {RECOMPUTE_MODULES}; got {name!r}")
    m = _as_model(model)
    if "mla_up_proj" in chosen and not m.mla:
        raise ValueError(f"recompute_modules 'mla_up_proj' needs a model with multi-head latent attention; "
                         f"got {m.name}")
    return chosen


def min_tokens_setting(value):
    """``min_tokens_per_expert`` as a float: ``None`` or 0 turn the validated-range check off.

    >>> min_tokens_setting(None), min_tokens_setting(4096)
    (0.0, 4096.0)
    """
    if value is None:
        return 0.0
    if isinstance(value, (bool, np.bool_)) or np.ndim(value) != 0:
        raise ValueError(f"min_tokens_per_expert must be one number >= 0 or None; got {value!r}")
    return float(v.non_negative("min_tokens_per_expert", value))


def _as_model(model):
    m = _cat.model(model) if isinstance(model, str) else model
    if not isinstance(m, _cat.Model) or not m.is_transformer:
        raise ValueError(f"model must be a transformer Model from the catalog (or its name); got {model!r}")
    return m


def _as_cluster(cluster):
    c = _cat.cluster(cluster) if isinstance(cluster, str) else cluster
    if not isinstance(c, _cat.Cluster):
        raise ValueError(f"cluster must be a Cluster from the catalog (or its name); got {cluster!r}")
    return c


# Results of pure core functions already computed for one layout's numbers (see _numbers_cached).
_NUMBERS_CACHE = {}


# Config.layer_gemm_efficiency of single layouts already computed (see Config._layout_gemm_efficiency).
_LAYOUT_GEMM_EFFICIENCY = {}


def _numbers_cached(fn, *args):
    """``fn(*args)``, looked up once computed where every argument is a number, a name or a 0-d array.

    For pure core functions of numbers whose result for such arguments is a Python number (immutable, so it can be
    handed out again): an instrument's curve over DP asks the same layout-wide questions (the busiest stage's layers,
    the attention kernel's speed at the chunk's length) on every call. Arrays with elements are computed as they come.
    Keys keep each argument's type beside its value (8, 8.0 and True are different keys).
    """
    key = [fn]
    for a in args:
        if type(a) is np.ndarray:
            if a.ndim:
                return fn(*args)
            a = a.item()
        elif type(a) not in (int, float, bool, str, np.float64):
            return fn(*args)
        key.append(type(a))
        key.append(a)
    return _remembered(_NUMBERS_CACHE, tuple(key), lambda: fn(*args), (int, float))


def _remembered(cache, key, compute, kinds):
    """``cache[key]``, or ``compute()`` kept there when its type is one of ``kinds`` (immutable numbers, safe
    to hand out again); the cache is emptied when it reaches 4,096 entries."""
    hit = cache.get(key)
    if hit is None:
        hit = compute()
        if type(hit) not in kinds:
            return hit
        if len(cache) >= 4096:
            cache.clear()
        cache[key] = hit
    return hit


def _by_mode(recompute_code, fn):
    """Evaluate ``fn(mode)`` for each recompute mode present and pick per element."""
    # arrays keep their own broadcastable shapes (a sweep puts each setting on its own axis), so a
    # term computes on the axes it depends on and broadcasts only when combined
    first = int(recompute_code.flat[0]) if recompute_code.size else 0
    if recompute_code.ndim == 0 or v.all_true(recompute_code == first):  # one mode everywhere: no selection needed
        return np.asarray(fn(RECOMPUTE_MODES[first]), dtype=float)
    out = None
    for code, mode in enumerate(RECOMPUTE_MODES):
        mask = recompute_code == code
        if not v.any_true(mask):
            continue
        val = np.asarray(fn(mode), dtype=float)
        out = np.where(mask, val, 0.0) if out is None else np.where(mask, val, out)
    return out


@dataclass(frozen=True)
class PlanSettings:
    """The planner's settings for a whole pass: one documented, validated record.

    :func:`~course.core.planner.plan`, :func:`~course.core.planner.evaluate`,
    :func:`~course.core.planner.sweep`, :class:`Config` and :func:`term_assumptions` take it as
    ``settings=`` and any of its fields as keyword options (``plan(..., precision="fp8")``), which
    override the record's (as SciPy's ``options=``). The parallel layout (TP, CP, PP, DP, EP, ETP,
    micro-batching, ZeRO stage, recomputation mode, sequence parallelism, interleaving, pinned stages)
    is not a setting: it is what a sweep varies.

    Parameters
    ----------
    schedule : {"1f1b", "gpipe", "zb-h1", "dualpipe"}
        1F1B and GPipe have the same bubble; 1F1B keeps at most ``pp`` micro-batches in flight, GPipe
        all ``m``. ZB-H1 fills the bubble with weight-gradient work (a third of 1F1B's bubble, same
        memory; Qi et al. 2023). DualPipe (DeepSeek-V3) feeds both ends of the pipeline, keeps two copies
        of the stage's weights and ``pp + 1`` micro-batches, and hides the expert all-to-alls
        (:func:`~course.core.pipeline.schedule_bubble_overhead`).
    overlap : bool
        Overlap DP/ZeRO traffic with compute, one bucket per layer (prefetch for ZeRO-3).
    compute_efficiency : float in (0, 1]
        The calibrated share of dense peak (:data:`DEFAULT_COMPUTE_EFFICIENCY`); with ``gemm_shapes`` each
        layout's GEMMs scale it by their shapes (:data:`REFERENCE_GEMM_EFFICIENCY`).
    precision : str
        Peak-FLOP/s key of the accelerator. ``"fp8"``: the layer GEMMs run at the FP8 peak and attention,
        the output layer and the router at the BF16 one; every GEMM operand pays a memory-bound cast; the
        weights gain a cached FP8 copy; GEMM inputs are kept in FP8; MoE tokens are dispatched in FP8
        (:mod:`~course.core.fp8`, DeepSeek-AI 2024 sec. 3.3). MFU is then quoted against the BF16 peak.
    fused_attention : bool
        A fused causal attention kernel: the ``s x s`` scores never reach HBM and the blocks above the
        causal diagonal are skipped (:func:`~course.core.layer_cost.causal_attention_fraction`). ``False``
        for runs before 2022 (Megatron's fused softmax on the full score matrix).
    attention_kernel : {"flash-attention-2", "flash-attention-3", "cudnn"}
        The fused kernel, at its measured H100 speed by sequence length (Shah et al. 2024,
        FlashAttention-3, figure "Attention forward speed", causal, head dim 128); on accelerators without a
        measured attention efficiency (A100, Blackwell) attention runs at the GEMMs' share.
    gemm_shapes : bool
        Price each layout's GEMMs by their shapes on their accelerator (:mod:`course.core.gemm`); ``False``:
        every GEMM at ``compute_efficiency``.
    collective_efficiency : float in (0, 1], optional
        Achieved bus bandwidth over link bandwidth for every collective (and all-to-all); by default the
        measured NVLink and network values of :mod:`~course.core.collectives` (NCCL's all-to-all its own,
        :data:`~course.core.collectives.ALL_TO_ALL_NETWORK_EFFICIENCY`) and DeepEP's
        (:data:`~course.core.moe.DEEPEP_NVLINK_EFFICIENCY`).
    cp_algorithm : {"ring", "all_gather"}
        Context-parallel K/V exchange: the ring overlaps each block's send with attention (Megatron-Core /
        Transformer Engine default), Llama 3's all-gather is exposed.
    tp_overlap : bool
        Overlap the TP all-gathers and reduce-scatters of sequence parallelism with the layer GEMMs they
        feed (Transformer Engine userbuffers), saving the measured share
        :data:`~course.core.tensor.TP_OVERLAP_EFFICIENCY` of their time
        (:func:`~course.core.tensor.tp_overlap_exposed_time`). Needs sequence parallelism; off by default.
    grad_bytes : float > 0, optional
        Bytes per gradient element, held (unsharded below ZeRO-2) and reduced over DP x CP. ``None``: the
        memory recipe's (4 for ``"deepseek-v3"``, else 2). 4: Megatron-LM in BF16, which accumulates and
        reduces gradients in FP32 (``megatron/training/arguments.py``; its distributed optimizer holds
        ``6 + 12/d`` bytes per parameter, Megatron-LM README).
    gather_bytes : float > 0, optional
        Bytes per parameter element that ZeRO / FSDP all-gathers (``None``: 2, BF16, as FSDP2's
        ``param_dtype`` and Megatron's distributed optimizer gather them), priced apart from the reduction
        (:func:`~course.core.zero.sharded_traffic_time`).
    reshard_after_forward : bool
        ZeRO-3 only (FSDP2 ``fully_shard(reshard_after_forward=...)``; ``False`` is FSDP's ``SHARD_GRAD_OP``):
        ``False`` keeps the stage's gathered parameters from the forward to the backward pass.
    memory_recipe : {"standard", "deepseek-v3"}
        How weights, optimizer states and activations are stored (:data:`MEMORY_RECIPES`).
    recompute_modules : sequence of {"mla_up_proj", "mlp"}
        Submodules recomputed beside the recomputation mode, as Megatron-Core's ``--recompute-modules``
        (:data:`RECOMPUTE_MODULES`): FLOPs charged (2 per weight and token); the dense MLPs keep only their
        input (:meth:`Config.recomputed_mlp_bytes`).
    capacity_factor : float > 0, optional
        Token-dropping MoE: each expert computes ``capacity_factor x`` its mean load. ``None``: dropless,
        the busiest EP rank is a straggler.
    dispatcher : {"alltoall", "deepep", "deepep-ll", "hybridep", "allgather"}
        MoE token dispatch (:data:`DISPATCHERS`), each at its measured speed.
    ep_overlap : bool
        Megatron-Core's 1F1B all-to-all overlap (``--overlap-moe-expert-parallel-comm``), credited with the
        framework's measured share of the ideal overlap (``ep_overlap_credit``).
    framework : {"megatron-core", "torchtitan", "llm-foundry", "maxtext"}
        The training framework (``course.core.frameworks.FRAMEWORKS``): its measured compute efficiency
        relative to Megatron-Core's, all-to-all overlap credit and MoE host time, each with a range.
    fp8_recipe : {"tensorwise", "delayed", "blockwise", "mxfp8"}
        The FP8 scaling recipe under ``precision="fp8"`` (``course.core.frameworks.FP8_RECIPES``); MXFP8
        needs Blackwell's block-scaled tensor cores.
    ep_overlap_credit : float in [0, 1], optional
        Share of the ideal all-to-all overlap credited (``None``: the framework's measured share; DualPipe: 1).
    moe_host_per_expert : float >= 0, optional
        Seconds an MoE step waits for the host per local expert and MoE layer pass (``None``: the framework's,
        ``course.core.frameworks.MEGATRON_MOE_HOST_PER_EXPERT``).
    min_tokens_per_expert : float >= 0 or None
        The validated range for mixtures of experts (default :data:`DEFAULT_MIN_TOKENS_PER_EXPERT`): below it
        a plan carries the note ``few_tokens_per_expert`` and a sweep leaves the layout out. ``None`` or 0:
        no limit.

    Raises ValueError naming the setting for a value out of range, and for an unknown option name.

    Source: each field's own (above); the module docstring of :mod:`course.core.planner`.

    Examples
    --------
    >>> s = PlanSettings.of(precision="fp8", tp_overlap=True)
    >>> s.precision, s.tp_overlap, s.schedule
    ('fp8', True, '1f1b')
    >>> PlanSettings.of(s, schedule="dualpipe").as_kwargs()["precision"]
    'fp8'
    >>> PlanSettings.of(precison="fp8")
    Traceback (most recent call last):
    ...
    ValueError: unknown planner setting 'precison'; the settings are schedule, overlap, ...
    """

    schedule: str = "1f1b"
    overlap: bool = True
    compute_efficiency: float = DEFAULT_COMPUTE_EFFICIENCY
    precision: str = "bf16"
    fused_attention: bool = True
    attention_kernel: str = "flash-attention-2"
    gemm_shapes: bool = True
    collective_efficiency: Optional[float] = None
    cp_algorithm: str = "ring"
    tp_overlap: bool = False
    grad_bytes: Optional[float] = None
    gather_bytes: Optional[float] = None
    reshard_after_forward: bool = True
    memory_recipe: str = "standard"
    recompute_modules: tuple = ()
    capacity_factor: Optional[float] = None
    dispatcher: str = "alltoall"
    ep_overlap: bool = False
    min_tokens_per_expert: Optional[float] = DEFAULT_MIN_TOKENS_PER_EXPERT
    framework: str = "megatron-core"
    fp8_recipe: str = "tensorwise"
    ep_overlap_credit: Optional[float] = None
    moe_host_per_expert: Optional[float] = None

    def __post_init__(self):
        v.choice("schedule", self.schedule, SCHEDULES)
        v.choice("cp_algorithm", self.cp_algorithm, CP_ALGORITHMS)
        v.choice("memory_recipe", self.memory_recipe, MEMORY_RECIPES)
        v.choice("dispatcher", self.dispatcher, DISPATCHERS)
        v.choice("framework", self.framework, FRAMEWORKS)
        v.choice("fp8_recipe", self.fp8_recipe, FP8_RECIPES)
        if self.ep_overlap_credit is not None:
            v.fraction("ep_overlap_credit", self.ep_overlap_credit)
        if self.moe_host_per_expert is not None:
            v.non_negative("moe_host_per_expert", self.moe_host_per_expert)
        v.choice("attention_kernel", self.attention_kernel, ATTENTION_KERNELS)
        if not isinstance(self.precision, str):
            raise ValueError(f"precision must be a name (str) such as 'bf16' or 'fp8'; got {self.precision!r}")
        for name in ("tp_overlap", "ep_overlap", "gemm_shapes", "reshard_after_forward"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False; got {getattr(self, name)!r}")
        v.fraction("compute_efficiency", self.compute_efficiency, low_open=True)
        if self.collective_efficiency is not None:
            v.fraction("collective_efficiency", self.collective_efficiency, low_open=True)
        for name in ("capacity_factor", "grad_bytes", "gather_bytes"):
            if getattr(self, name) is not None:
                v.positive(name, getattr(self, name))
        min_tokens_setting(self.min_tokens_per_expert)
        modules = self.recompute_modules
        if modules is None:
            modules = ()
        if isinstance(modules, str) or not all(isinstance(x, str) for x in modules):
            raise ValueError(f"recompute_modules must be a list of names from {RECOMPUTE_MODULES}; got {modules!r}")
        for name in modules:
            if name not in RECOMPUTE_MODULES:
                raise ValueError(f"recompute_modules names one of {RECOMPUTE_MODULES}; got {name!r}")
        object.__setattr__(self, "recompute_modules", tuple(sorted(set(modules))))

    @classmethod
    def of(cls, settings=None, **options):
        """``settings`` (a :class:`PlanSettings`, or ``None`` for the defaults) with ``options`` replacing fields."""
        if settings is not None and not isinstance(settings, cls):
            raise ValueError(f"settings must be a PlanSettings; got {type(settings).__name__}")
        for name in options:
            if name not in _SETTING_NAMES:
                raise ValueError(f"unknown planner setting {name!r}; the settings are {', '.join(_SETTING_NAMES)}")
        base = settings if settings is not None else _DEFAULT_SETTINGS  # frozen: one shared record of defaults
        return replace(base, **options) if options else base

    def as_kwargs(self) -> dict:
        """The settings as keyword arguments (field name -> value)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


_SETTING_NAMES = tuple(f.name for f in fields(PlanSettings))
_DEFAULT_SETTINGS = PlanSettings()


@dataclass
class _Link:
    """Achieved bandwidth (bytes/s) and latency (s) of the link a parallel group uses."""

    bandwidth: np.ndarray
    latency: np.ndarray


class Config:
    """A configuration record: validated, broadcast parallel degrees and the settings of one pass.

    Built once by :func:`evaluate`; every term function reads it. Array fields (one
    element per configuration): ``tp, cp, pp, dp, micro_batch, num_microbatches,
    zero_stage, recompute_code, sequence_parallel, interleave, first_stage_layers,
    last_stage_layers``. Derived: ``gpus``, ``global_batch``, ``stage_layers`` (the
    busiest stage), ``imbalance`` (its layers over the balanced share) and the links of
    the TP, CP, PP and DP groups (ranks ordered TP, CP, PP, DP).

    Parameters
    ----------
    model, cluster
        As in :func:`plan`.
    tp, cp, pp, dp, micro_batch, num_microbatches, zero_stage, interleave, sequence_parallel
        Broadcastable arrays.
    recompute : str or array of int
        A mode of ``RECOMPUTE_MODES`` or indices into it.
    first_stage_layers, last_stage_layers : int or array, >= 0
        Pinned layer counts (0: balanced).
    ep, etp : int or array, >= 1
        Expert- and expert-tensor-parallel degrees.
    settings : PlanSettings, optional
        The settings of the pass; ``options`` (any :class:`PlanSettings` field) override its fields.

    Source: Dubey et al. 2024, sec. 3.3.2 (placement order TP, CP, PP, DP).
    """

    def __init__(self, model, cluster, *, tp, pp, dp, cp=1, micro_batch=1, num_microbatches=4,
                 zero_stage=0, recompute="none", sequence_parallel=False, interleave=1,
                 first_stage_layers=0, last_stage_layers=0, ep=1, etp=1, settings=None, **options):
        self.model, self.cluster = _as_model(model), _as_cluster(cluster)
        s = self.settings = PlanSettings.of(settings, **options)  # validated: names, choices, ranges
        self.gemm_shapes = bool(s.gemm_shapes)
        self.recompute_modules = recompute_modules_setting(s.recompute_modules, self.model, s.memory_recipe)
        # checked by PlanSettings (min_tokens_setting); None or 0 turn the validated-range check off
        self.min_tokens_per_expert = 0.0 if s.min_tokens_per_expert is None else float(s.min_tokens_per_expert)
        self.dispatcher, self.ep_overlap, self.memory_recipe = s.dispatcher, bool(s.ep_overlap), s.memory_recipe
        if self.memory_recipe == "deepseek-v3" and not self.model.mla:
            raise ValueError(f"memory_recipe='deepseek-v3' recomputes MLA up-projections: it needs a model with "
                             f"multi-head latent attention (deepseek-v3); got {self.model.name}")
        self.tp_overlap = bool(s.tp_overlap)
        fw = self.framework = _fw.framework(s.framework)
        self.recipe = _fw.fp8_recipe(s.fp8_recipe)
        # the measured share of the ideal all-to-all overlap (DualPipe hides it all: DeepSeek-AI 2024, sec. 3.2.1)
        credit = fw.ep_overlap_credit if s.ep_overlap_credit is None else float(s.ep_overlap_credit)
        self.ep_overlap_credit = 1.0 if s.schedule == "dualpipe" else credit
        self.moe_host_per_expert = (fw.moe_host_per_expert if s.moe_host_per_expert is None
                                    else float(s.moe_host_per_expert))
        # bytes per gradient element, held and reduced (Megatron-LM in BF16 keeps FP32 main grads: 4)
        self.grad_bytes = grad_bytes_setting(s.grad_bytes, self.memory_recipe)
        # bytes per parameter element ZeRO / FSDP all-gathers: the compute dtype (BF16) unless told otherwise
        self.gather_bytes = gather_bytes_setting(s.gather_bytes)
        self.reshard_after_forward = bool(s.reshard_after_forward)
        self.schedule = s.schedule
        # the calibrated share of peak; ``compute_efficiency`` becomes per-configuration once shapes are known
        self.base_efficiency = float(s.compute_efficiency) * self.framework.efficiency_factor
        self.compute_efficiency = self.base_efficiency
        # FP8 runs its layer GEMMs at the FP8 peak and everything else (attention, output layer,
        # router) in BF16 (DeepSeek-AI 2024, sec. 3.3.1); MFU is then quoted against the BF16 peak
        precision = self.precision = s.precision
        self.fp8 = precision == "fp8"
        if self.fp8 and self.recipe.needs_block_scaling and "fp4" not in self.cluster.accelerator.peak_flops:
            raise ValueError(f"fp8_recipe={self.recipe.name!r} needs block-scaled (MX) tensor cores (Blackwell); the "
                             f"{self.cluster.accelerator.name} has none")
        self.gemm_peak = self.cluster.accelerator.peak(precision)
        self.peak = self.cluster.accelerator.peak("bf16") if self.fp8 else self.gemm_peak
        self.overlap, self.fused_attention = bool(s.overlap), bool(s.fused_attention)
        self.attention_kernel = s.attention_kernel
        self.cp_algorithm = s.cp_algorithm
        # a fused causal kernel skips the score blocks above the diagonal (FlashAttention-2)
        self.attention_fraction = (float(_numbers_cached(_lc.causal_attention_fraction, self.model.seq_len))
                                   if self.fused_attention else 1.0)
        # a fused attention kernel runs at its own measured share of peak where the catalog has one
        # (FlashAttention-2 on Hopper, 0.35); unfused attention is batched GEMMs at compute_efficiency
        measured = self.cluster.accelerator.attention_efficiency
        self.attention_measured = self.fused_attention and measured is not None
        self.attention_efficiency = float(measured) if self.attention_measured else self.base_efficiency
        recompute = self._resolve_policy(recompute)
        arrays = dict(
            tp=v.integer("tp", tp), cp=v.integer("cp", cp), pp=v.integer("pp", pp), dp=v.integer("dp", dp),
            ep=v.integer("ep", ep), etp=v.integer("etp", etp),
            micro_batch=v.integer("micro_batch", micro_batch),
            num_microbatches=v.integer("num_microbatches", num_microbatches),
            zero_stage=v.integer("zero_stage", zero_stage, minimum=0),
            interleave=v.integer("interleave", interleave),
            first_stage_layers=v.integer("first_stage_layers", first_stage_layers, minimum=0),
            last_stage_layers=v.integer("last_stage_layers", last_stage_layers, minimum=0),
            sequence_parallel=np.asarray(sequence_parallel, dtype=bool),
            recompute_code=self._recompute_codes(recompute))
        if v.any_true(arrays["zero_stage"] > 3):
            raise ValueError(f"zero_stage must be 0, 1, 2 or 3; got {zero_stage!r}")
        if v.any_true(arrays["interleave"] > 1) and self.schedule != "1f1b":
            raise ValueError("interleave > 1 needs schedule='1f1b' (the interleaved 1F1B schedule)")
        if not self.model.is_moe and (v.any_true(arrays["ep"] > 1) or v.any_true(arrays["etp"] > 1)):
            raise ValueError(f"ep and etp must be 1 for {self.model.name}, which has no experts; "
                             f"got ep={ep!r}, etp={etp!r}")
        self.capacity_factor = None if s.capacity_factor is None else float(s.capacity_factor)
        if v.any_true(arrays["pp"] > self.model.layers):
            raise ValueError(f"pp must be <= the {self.model.layers} layers of {self.model.name}; got {pp!r}")
        # not broadcast: each array keeps its shape (see _by_mode); ``shape`` is the broadcast one
        self.shape = np.broadcast(*arrays.values()).shape  # NumPy's C broadcast, not broadcast_shapes' Python
        for name, arr in arrays.items():
            keep = name in ("sequence_parallel", "recompute_code") or arr.dtype == np.int64
            setattr(self, name, arr if keep else arr.astype(np.int64))
        with v.inputs_checked():  # every input is checked above: the derived terms need no re-check
            self._derive_all(s.collective_efficiency)

    def _derive_all(self, collective_efficiency):
        """What every term needs, from the checked settings and arrays (links, experts, GEMM efficiency)."""
        self._derive(collective_efficiency)
        if self.attention_measured:
            # the fused kernel's measured share of peak (FlashAttention-2's plateau from 8K queries), scaled to the
            # kernel in use and, with GEMM shapes priced, to the CP chunk's length (shorter chunks run slower)
            length = self.seq_local if self.gemm_shapes else ATTENTION_PLATEAU_TOKENS
            self.attention_efficiency = self.attention_efficiency * np.asarray(
                _numbers_cached(_gemm.attention_length_factor, length, self.attention_kernel))
        if self.gemm_shapes:
            self.gemm_efficiency = np.asarray(self._layout_gemm_efficiency())
            self.compute_efficiency = np.minimum(
                self.base_efficiency * self.gemm_efficiency / REFERENCE_GEMM_EFFICIENCY, 1.0)

    def _layout_gemm_efficiency(self):
        """:meth:`layer_gemm_efficiency`, looked up once computed where the layout is one configuration (every array
        it reads 0-d: a plan, an instrument's curve over DP), keyed by the model, the accelerator and the numbers."""
        layout = (self.tp, self.cp, self.micro_batch, self.etp, self.tokens_per_expert)
        if any(x.ndim for x in layout):
            return self.layer_gemm_efficiency()
        key = (self.model, self.cluster.accelerator, self.precision, self.fp8) + tuple(x.item() for x in layout)
        try:
            hash(key)
        except TypeError:  # a hand-built model or accelerator with an unhashable field: computed as it comes
            return self.layer_gemm_efficiency()
        return _remembered(_LAYOUT_GEMM_EFFICIENCY, key, self.layer_gemm_efficiency, (float,))

    def layer_gemm_efficiency(self):
        """Share of the GEMM peak this configuration's layer GEMMs reach (:func:`~course.core.gemm.layer_gemm_efficiency`).

        The forward GEMMs of an average layer on one GPU, weighted by their FLOPs: rows ``M`` = the
        micro-batch's tokens after CP (``b s / CP``; sequence parallelism gathers them before the GEMM),
        columns and reduced width sliced by TP: query/key/value ``(a + 2 kv) d / TP`` x ``h``, output ``h``
        x ``a d / TP``, MLP up ``(mlp_matrices - 1) f / TP`` x ``h`` and down ``h`` x ``f / TP``; an MoE's
        routed experts with ``M`` = tokens per expert and widths over ETP, its shared experts over TP. The
        backward GEMMs are taken to run as fast as the forward ones (same FLOPs, transposed shapes).
        """
        m, acc = self.model, self.cluster.accelerator
        h, tp = m.hidden, self.tp
        rows = self.micro_batch * m.seq_len / self.cp
        prec = "fp8" if self.fp8 else ("bf16" if self.precision not in acc.peak_flops else self.precision)
        att = m.attention_layer_params
        if m.mla or m.attention_params is not None:
            qkv_width = o_width = att / (2.0 * h)
        else:
            qkv_width = (m.heads + 2 * (m.kv_heads or m.heads)) * m.head_dim
            o_width = m.heads * m.head_dim
        up = m.mlp_matrices - 1
        parts = [(att, [(rows, qkv_width / tp, h, qkv_width * h), (rows, h, o_width / tp, o_width * h)])]
        dense_share = (m.dense_layers / m.layers) if m.is_moe else 1.0
        f = m.ffn or 4 * h
        if dense_share:
            parts.append((dense_share * m.mlp_matrices * h * f,
                          [(rows, up * f / tp, h, up * f * h), (rows, h, f / tp, f * h)]))
        if m.is_moe:
            moe_share = m.moe_layers / m.layers
            if m.shared_experts:
                sf = (m.shared_ffn or m.expert_ffn) * (1 if m.shared_ffn else m.shared_experts)
                parts.append((moe_share * m.mlp_matrices * h * sf,
                              [(rows, up * sf / tp, h, up * sf * h), (rows, h, sf / tp, sf * h)]))
            ef, et = m.expert_ffn, self.etp
            tokens = np.maximum(self.tokens_per_expert, 1.0)
            parts.append((moe_share * m.top_k * m.mlp_matrices * h * ef,
                          [(tokens, up * ef / et, h, up * ef * h), (tokens, h, ef / et, ef * h)]))
        shapes = []
        for weight, gemms in parts:
            total = sum(w for *_, w in gemms)
            for mm, n, k, w in gemms:  # count = this GEMM's share of the FLOPs / its own FLOPs
                shapes.append((mm, n, k, weight * w / total / (2.0 * mm * n * k)))
        return _gemm.layer_gemm_efficiency(shapes, acc, prec, 1.0 if self.fp8 else _WIRE_BYTES)

    @staticmethod
    def _recompute_codes(recompute):
        if isinstance(recompute, str):
            return np.asarray(RECOMPUTE_MODES.index(v.choice("recompute", recompute, RECOMPUTE_MODES)))
        rc = v.integer("recompute", recompute, minimum=0).astype(np.int64)
        if v.any_true(rc >= len(RECOMPUTE_MODES)):
            raise ValueError(f"recompute codes must index {RECOMPUTE_MODES}; got {recompute!r}")
        return rc

    def _resolve_policy(self, recompute):
        """``recompute`` as a mode for the terms; a checkpoint policy (:mod:`~course.core.checkpointing`) is kept
        in ``checkpoint_policy`` with its cost, and the mode its collectives repeat as is returned."""
        self.checkpoint_policy, self.policy_cost = None, None
        self.recompute_name = recompute if isinstance(recompute, str) else None
        is_policy = isinstance(recompute, _ckpt.CheckpointPolicy) or (isinstance(recompute, str)
                                                                       and recompute not in RECOMPUTE_MODES)
        if not is_policy:
            return recompute
        policy = _ckpt.checkpoint_policy(recompute)
        self.recompute_name = policy.name
        if policy.mode is not None:  # "maxtext:none" and the like: the mode's own formulas
            return policy.mode
        if self.recompute_modules or self.memory_recipe != "standard":
            raise ValueError(f"recompute={policy.name!r} says what is saved and recomputed: it takes neither "
                             f"recompute_modules nor memory_recipe='deepseek-v3'")
        self.checkpoint_policy = policy
        cost = self.policy_cost = _ckpt.policy_cost(policy, self.model, self.fused_attention, self.attention_fraction)
        # the collectives a recomputation repeats (TP, CP): those of the nearest mode
        if cost["gemm_flops"] > 0:
            return "full"
        return "selective" if cost["attention_flops"] > 0 else "none"

    def policy_flops_per_token(self):
        """Recomputed FLOPs per token of the whole model under ``checkpoint_policy``: (GEMM, attention)."""
        c, layers = self.policy_cost, self.model.layers
        return layers * c["gemm_flops"] / c["every"], layers * c["attention_flops"] / c["every"]

    def policy_activation_bytes(self):
        """Bytes per (average) layer and micro-batch one GPU keeps under ``checkpoint_policy``, divided by CP.

        :func:`~course.core.checkpointing.saved_bytes_per_token` x ``b s / CP`` tokens; the GEMM inputs it
        keeps in FP8 under ``precision="fp8"`` one byte each instead of two (as ``memory_terms`` counts
        them for the modes).
        """
        c, m = self.policy_cost, self.model
        tokens = self.micro_batch * m.seq_len / self.cp
        kept = _ckpt.saved_bytes_per_token(self.checkpoint_policy, m, self.tp, self.sequence_parallel,
                                           self.fused_attention) * tokens
        if self.fp8:
            k = c["every"]
            kept = kept - self.fp8_tokens * (c["fp8_saved"] + (k - 1) * c["fp8_all"]) / k
        return kept

    def policy_transient_bytes(self):
        """Bytes one layer re-materialises in its backward pass under ``checkpoint_policy`` (its input
        included, as full recomputation is counted), on one GPU, divided by CP."""
        whole, split = self.policy_cost["transient_bytes"]
        tokens = self.micro_batch * self.model.seq_len / self.cp
        return tokens * np.where(self.sequence_parallel, (whole + split) / self.tp, whole + split / self.tp)

    def _derive(self, collective_efficiency):
        m, c = self.model, self.cluster
        self.gpus = self.tp * self.cp * self.pp * self.dp
        self.global_batch = self.micro_batch * self.num_microbatches * self.dp
        self.seq_local = m.seq_len / self.cp  # tokens of each sequence on one CP rank
        # pins are ignored where pp = 1 (one stage holds everything)
        self.stage_layers = np.asarray(_numbers_cached(
            _pipe.slowest_stage_layers, m.layers, self.pp, self.first_stage_layers, self.last_stage_layers)).astype(np.int64)
        # with v chunks per stage the largest chunk sets the pace of every chunk slot
        self.stage_layers = self.interleave * (-(-self.stage_layers // self.interleave))
        self.imbalance = self.stage_layers * self.pp / m.layers
        if collective_efficiency is None:
            eff_in, eff_out = _coll.NVLINK_COLLECTIVE_EFFICIENCY, _coll.NETWORK_COLLECTIVE_EFFICIENCY
        else:
            eff_in = eff_out = float(v.fraction("collective_efficiency", collective_efficiency, low_open=True))
        self.collective_efficiency = (eff_in, eff_out)
        # DeepEP (or DeepSeek's node-limited dispatch, which it implements) runs at its own measured share of
        # the links unless the caller fixed one collective efficiency for everything
        self.a2a_measured = collective_efficiency is None and (self.dispatcher != "alltoall" or bool(m.routing_groups))
        # DeepSeek's node-limited routing is what DeepEP implements: priced as DeepEP where the dispatcher is NCCL's
        name = "deepep" if (self.dispatcher == "alltoall" and m.routing_groups) else self.dispatcher
        d = self.dispatch = _moe.DISPATCHER_MEASUREMENTS[name]
        nvlink = d.large_domain_nvlink if (d.large_domain_nvlink is not None and c.nvlink_domain > 8) else d.nvlink
        self.a2a_range = (nvlink, d.network)  # (point, low, high) shares of each link
        # the all-to-all's own measured share of each link (the dispatcher's kernels)
        if collective_efficiency is not None:
            self.a2a_efficiency = (eff_in, eff_out)
        else:
            self.a2a_efficiency = (nvlink[0], d.network[0])
        self.intra_bw, self.inter_bw = c.intra_bandwidth * eff_in, c.inter_bandwidth * eff_out
        g = c.nvlink_domain
        # a group stays on NVLink while the ranks it spans (its stride x its size) fit in one NVLink domain
        # (8 GPUs of a DGX node, 72 of an NVL72 rack)
        self.tp_link = self._link(self.tp <= g)
        self.cp_link = self._link(self.tp * self.cp <= g)
        self.pp_link = self._link(self.tp * self.cp * self.pp <= g)
        # DP x CP ranks hold the same weights and reduce gradients together: how many share a node
        cp_local = np.where(self.tp * self.cp <= g, self.cp, np.gcd(np.maximum(g // self.tp, 1), self.cp))
        below_dp = self.tp * self.cp * self.pp
        dp_local = np.where(below_dp <= g, np.gcd(np.maximum(g // below_dp, 1), self.dp), 1)
        self.grad_group = self.dp * self.cp
        self.grad_local = cp_local * dp_local
        self.grad_nodes = self.grad_group // self.grad_local
        self._derive_experts()

    def _derive_experts(self):
        """Expert mapping ETP x EP x EDP over the TP x CP x DP GPUs of a stage (parallel folding)."""
        m, g = self.model, self.cluster.nvlink_domain
        stage_gpus = self.tp * self.cp * self.dp
        folds = self.etp * self.ep
        self.expert_dp = np.maximum(stage_gpus // folds, 1)
        if not m.is_moe:  # no experts to place: only the MoE terms read the mapping below
            self.tokens_per_expert = np.zeros(())  # no experts: the column reads 0
            self.moe_tokens = np.zeros(())
            self.moe_straggler = np.ones(())
            self.moe_stage_layers = np.zeros(())
            return
        # GPUs of one pipeline stage on a node. MoE frameworks place PP outermost (Megatron-Core's default
        # order tp-cp-ep-dp-pp), so a stage's TP x CP x DP GPUs are consecutive ranks and fill whole nodes:
        # DeepSeek-V3's EP 64 "spanning 8 nodes" on a stage of 128 GPUs (DeepSeek-AI 2024, sec. 3.2) is
        # possible only so (with PP inside DP, as Llama 3 places it, each of the 64 would sit on its own node)
        stage_local = np.minimum(self.tp * self.cp * self.dp, g)
        # experts fold ETP innermost, then EP, then EDP (Megatron-Core order)
        self.ep_local = np.clip(stage_local // self.etp, 1, self.ep)
        edp_local = np.clip(stage_local // folds, 1, self.expert_dp)
        self.expert_grad_local = np.gcd(edp_local, self.expert_dp)
        self.expert_grad_nodes = self.expert_dp // self.expert_grad_local
        # every GPU dispatches its own tokens: s / (CP x TP) with sequence parallelism (Megatron
        # needs SP for MoE with TP), the micro-batch's b sequences
        self.moe_tokens = self.micro_batch * m.seq_len / (self.cp * self.tp)
        self.moe_straggler = np.asarray(_moe.moe_straggler_factor(
            self.moe_tokens * self.ep, m.top_k, self.ep, self.capacity_factor))
        self.moe_stage_layers = self.stage_layers * m.moe_layers / m.layers
        # the M of an expert GEMM: an EP group's tokens x k / E; with ETP each expert's shard multiplies the
        # tokens its ETP group gathers (Megatron-Core's dispatcher all-gathers them over expert-TP)
        self.tokens_per_expert = np.asarray(_moe.tokens_per_expert(
            self.moe_tokens * self.etp, m.top_k, m.experts, self.ep))

    def _link(self, in_node):
        c = self.cluster
        return _Link(np.where(in_node, self.intra_bw, self.inter_bw),
                     np.where(in_node, c.intra_latency, c.inter_latency))

    @property
    def fp8_tokens(self):
        """Tokens whose GEMM inputs one GPU casts per layer and micro-batch (split over CP and TP)."""
        return self.micro_batch * self.model.seq_len / (self.cp * self.tp)

    @property
    def fp8_gemm_inputs(self):
        """GEMM input elements per token and (average) layer: 3h + the MLP width, + routed copies."""
        m, h = self.model, self.model.hidden
        mlp = m.active_layer_params - m.attention_layer_params
        width = mlp / (m.mlp_matrices * h)
        extra = (m.top_k + m.shared_experts - 1) * h * m.moe_layers / m.layers if m.is_moe else 0.0
        return float(_fp8.fp8_gemm_input_elements_per_token(h, width)) + extra

    def moe_activation_delta(self, mode):
        """Bytes an MoE block keeps beyond the dense MLP of Korthikanti's count (0 with full recompute)."""
        m = self.model
        if mode == "full":
            return np.zeros(())
        s, b, h, t, sp = m.seq_len / self.cp, self.micro_batch, m.hidden, self.tp, self.sequence_parallel
        # the dense MLP part of layer_activation_bytes: its input and dropout mask (whole without SP)
        # and its inner tensors (split over TP)
        whole = 2.0 + (1.0 if m.dropout else 0.0)
        inner = ((m.mlp_matrices - 1) * 2.0 + 2.0) * (m.ffn or 4 * h) / h
        dense_mlp = np.where(sp, (whole + inner) / t, whole + inner / t) * s * b * h
        moe = _moe.moe_mlp_activation_bytes_per_layer(
            self.moe_tokens, h, m.expert_ffn, m.top_k, m.shared_experts, m.shared_ffn or None, m.experts,
            self.etp, self.moe_straggler)
        return moe - dense_mlp

    def recipe_activation_bytes(self):
        """Bytes per (average) layer and micro-batch one GPU keeps under ``memory_recipe="deepseek-v3"``.

        MLA with recomputed norms and up-projections
        (:func:`~course.core.moe.mla_activation_bytes_per_token`), then the MLP block: its norm
        input (16-bit) and, FP8-cached, the inputs of its GEMMs and SwiGLU
        (:func:`~course.core.moe.moe_mlp_activation_bytes_per_layer` with ``cached_bytes`` and
        ``recompute_activation``; a dense layer keeps ``c (h + 2 f)``), averaged over dense and MoE
        layers. Tensors split over TP and CP (sequence parallelism).
        """
        m, c = self.model, _moe.FP8_CACHED_BYTES
        h = m.hidden
        tokens = self.micro_batch * m.seq_len / (self.cp * self.tp)
        q_latent, kv_latent, rope, dv = m.mla
        attention = _moe.mla_activation_bytes_per_token(h, m.heads, q_latent, kv_latent, rope, dv)
        dense_mlp = 2.0 * h + c * (h + 2.0 * (m.ffn or 4 * h))
        moe = 0.0
        if m.is_moe:
            moe = np.asarray(_moe.moe_mlp_activation_bytes_per_layer(
                self.moe_tokens, h, m.expert_ffn, m.top_k, m.shared_experts, m.shared_ffn or None, m.experts,
                self.etp, self.moe_straggler, cached_bytes=c, recompute_activation=True)) / self.moe_tokens + 2.0 * h
        mlp = (m.dense_layers * dense_mlp + m.moe_layers * moe) / m.layers if m.is_moe else dense_mlp
        return tokens * (attention + mlp)

    def head_width_delta(self, mode):
        """Bytes per layer and micro-batch that Korthikanti's count misses when ``heads x head_dim != hidden``.

        Korthikanti et al. count the query and the output projection's input as ``2 s b h`` and the
        keys and values as ``4 s b h kv / a``; their real widths are ``a d`` and ``kv d``
        (Qwen3-235B-A22B: ``a d = 8,192`` on a 4,096-wide model): ``s b [4 (a d - h) + 4 kv (d - h / a)] / t``
        more (split over TP, divided by CP). 0 with full recomputation and when ``a d = h``. Not for
        multi-head latent attention, whose stored tensors depend on what is recomputed (the DeepSeek-V3
        recipe counts them, :func:`~course.core.moe.mla_activation_bytes_per_token`).
        """
        m = self.model
        if mode == "full" or m.head_size is None or m.mla:
            return np.zeros(())
        a, d, h, kv = m.heads, m.head_dim, m.hidden, m.kv_heads or m.heads
        per_token = 4.0 * (a * d - h) + 4.0 * kv * (d - h / a)
        return self.micro_batch * m.seq_len / self.cp * per_token / self.tp

    def recomputed_mlp_bytes(self):
        """Bytes per dense layer and micro-batch that recomputing the MLP (``recompute_modules=["mlp"]``) frees.

        Korthikanti et al.'s MLP tensors past its input (:func:`~course.core.layer_cost.layer_activation_bytes`):
        the ``mlp_matrices - 1`` pre-activation outputs and the activation's output, ``2 s b f`` each, split
        over TP, and the dropout mask ``s b h`` (whole without sequence parallelism); divided by CP.
        """
        m = self.model
        f = m.ffn or 4 * m.hidden
        tokens = self.micro_batch * m.seq_len / self.cp
        inner = tokens * f * 2.0 * m.mlp_matrices / self.tp
        mask = tokens * m.hidden * (1.0 if m.dropout else 0.0) / np.where(self.sequence_parallel, self.tp, 1)
        return inner + mask

    def per_mode(self, fn):
        """``fn(recompute mode)`` evaluated per element of ``recompute_code``."""
        return _by_mode(self.recompute_code, fn)

    def activation_bytes(self, mode):
        """Activation bytes per layer and micro-batch kept for the backward pass, on one GPU.

        Korthikanti et al.'s count for ``mode`` (:meth:`korthikanti_bytes`), except that a
        fused attention kernel never stores the ``s x s`` scores (it keeps ``O(s)`` softmax
        statistics and recomputes the rest: Dao et al. 2022, FlashAttention, sec. 3.1), so
        without recomputation it keeps what selective recomputation keeps.
        """
        if mode == "none" and self.fused_attention:
            mode = "selective"
        return self.korthikanti_bytes(mode)

    def korthikanti_bytes(self, mode):
        """Korthikanti bytes per layer and micro-batch on one GPU for ``mode``, divided by CP."""
        cache = self.__dict__.setdefault("_act_cache", {})
        if mode not in cache:
            m, sp = self.model, self.sequence_parallel
            # Korthikanti et al.'s per-tensor count for the layer's real shape (GQA, SwiGLU, dropout or not)
            per_flag = {flag: _numbers_cached(_lc.layer_activation_bytes, m.seq_len, self.micro_batch, m.hidden,
                                              m.heads, m.kv_heads or m.heads, m.ffn or 4 * m.hidden, m.mlp_matrices,
                                              m.dropout, self.tp, flag, mode)
                        for flag in (False, True) if v.any_true(sp == flag)}
            act = (np.where(sp, per_flag[True], per_flag[False]) if len(per_flag) == 2
                   else next(iter(per_flag.values())))
            # each CP rank keeps s/c tokens and the scores of its s/c queries against all s keys
            cache[mode] = act / self.cp
        return cache[mode]


# --------------------------------------------------------------------------- the terms


def compute_term(*, cfg):
    """FLOPs per iteration and the compute seconds of the slowest stage (Narayanan et al. eq. 3).

    Every FLOP at ``compute_efficiency`` of peak, except that a fused attention kernel runs at the
    accelerator's measured ``attention_efficiency``
    (:func:`~course.core.layer_cost.attention_kernel_extra_time`).
    """
    m = cfg.model
    if cfg.checkpoint_policy is not None:  # a forward and backward pass and what the policy recomputes
        policy_gemm, policy_attention = cfg.policy_flops_per_token()
        flops = cfg.global_batch * (_lc.flops_per_sequence(m, "none", cfg.attention_fraction)
                                    + m.seq_len * (policy_gemm + policy_attention))
    else:
        flops = cfg.global_batch * cfg.per_mode(lambda mode: _lc.flops_per_sequence(m, mode, cfg.attention_fraction))
    # submodules recomputed beside the mode (a full recomputation already re-runs them): 2 FLOPs per weight
    # and token of the MLA up-projections (DeepSeek-V3's recipe recomputes them too) and of the dense MLPs
    weights = 0.0
    if cfg.memory_recipe == "deepseek-v3" or "mla_up_proj" in cfg.recompute_modules:
        weights = m.layers * _moe.mla_up_projection_params(m.heads, m.head_dim, *m.mla)
    if "mlp" in cfg.recompute_modules:
        dense = m.dense_layers if m.is_moe else m.layers
        weights = weights + dense * m.mlp_matrices * m.hidden * (m.ffn or 4 * m.hidden)
    recomputed = 0.0
    if weights:
        recomputed = cfg.per_mode(lambda mode: 0.0 if mode == "full" else cfg.global_batch * m.seq_len * 2.0 * weights)
        flops = flops + recomputed
    extra = attention_kernel_term(cfg=cfg)
    if not cfg.fp8:
        return flops, flops / (cfg.gpus * cfg.peak * cfg.compute_efficiency) * cfg.imbalance + extra
    passes = _gemm_passes(cfg)
    gemm = cfg.global_batch * m.seq_len * passes * _fp8.fp8_gemm_flops_per_token(m.active_layer_params, m.layers)
    gemm = gemm + recomputed
    seconds = _fp8.fp8_compute_time(gemm, flops - gemm, cfg.gemm_peak, cfg.peak, cfg.compute_efficiency)
    return flops, seconds / cfg.gpus * cfg.imbalance + extra


def _gemm_passes(cfg):
    """Passes over the layer GEMMs per micro-batch: 3, 4 with full recomputation, ``3 + recomputed share``
    under a checkpoint policy."""
    if cfg.checkpoint_policy is not None:
        m = cfg.model
        return 3.0 + cfg.policy_flops_per_token()[0] / (2.0 * m.active_layer_params * m.layers)
    return cfg.per_mode(lambda mode: 4.0 if mode == "full" else 3.0)


def attention_kernel_term(*, cfg):
    """Seconds the slowest stage's fused attention kernels take beyond ``compute_efficiency`` (0 unless the
    accelerator has a measured ``attention_efficiency``): :func:`~course.core.layer_cost.attention_kernel_extra_time`
    of :func:`~course.core.layer_cost.attention_flops_per_token` x tokens x layers, per GPU, x the imbalance."""
    if not cfg.attention_measured:
        return np.zeros(())
    m = cfg.model
    if cfg.checkpoint_policy is not None:  # three passes and the attention the policy recomputes
        per_token = (_lc.attention_flops_per_token(m.seq_len, m.score_width, "none", cfg.attention_fraction)
                     + cfg.policy_flops_per_token()[1] / m.layers)
    else:
        per_token = cfg.per_mode(lambda mode: _lc.attention_flops_per_token(m.seq_len, m.score_width, mode,
                                                                            cfg.attention_fraction))
    flops = cfg.global_batch * m.seq_len * m.layers * per_token / cfg.gpus
    return _lc.attention_kernel_extra_time(flops, cfg.peak, cfg.attention_efficiency,
                                           cfg.compute_efficiency) * cfg.imbalance


def memory_bound_term(*, cfg):
    """Seconds of element-wise kernels: their HBM bytes (:mod:`~course.core.layer_cost`) / bandwidth."""
    # a fused attention kernel (FlashAttention) never writes the s x s scores to memory
    stored = cfg.korthikanti_bytes("selective") if cfg.fused_attention else cfg.korthikanti_bytes("none")
    if cfg.model.is_moe and cfg.memory_recipe != "deepseek-v3":
        # Korthikanti's count sees one MLP of width ``ffn``; an MoE layer's element-wise kernels (SwiGLU,
        # permute / unpermute, the weighted sum of the k expert outputs) touch each token's k routed copies and
        # its shared experts: the same bytes the activation memory counts (Config.moe_activation_delta)
        stored = stored + cfg.moe_activation_delta("selective") * cfg.model.moe_layers / cfg.model.layers
    needs_scores = v.any_true(cfg.recompute_code == 1) and not cfg.fused_attention
    scores = cfg.korthikanti_bytes("none") - cfg.korthikanti_bytes("selective") if needs_scores else 0.0
    if cfg.checkpoint_policy is not None:  # the recomputed forward re-runs the kernels of what it re-materialises
        share = cfg.policy_cost["recomputed_share"] / cfg.policy_cost["every"]
        traffic = _lc.elementwise_traffic_per_layer(stored, 0.0, "none") + 2.0 * share * stored
    else:
        traffic = cfg.per_mode(lambda mode: _lc.elementwise_traffic_per_layer(stored, scores, mode))
    if cfg.fp8:  # every GEMM operand is cast to FP8 (and transposed) by a memory-bound kernel
        traffic = traffic + cfg.fp8_tokens * _fp8.fp8_cast_bytes_per_token(cfg.fp8_gemm_inputs)
    if cfg.model.is_moe:  # the router's element-wise kernels over each token's E scores, per MoE layer
        m = cfg.model
        traffic = traffic + (cfg.micro_batch * m.seq_len / (cfg.cp * cfg.tp) * float(_moe.router_bytes_per_token(m.experts))
                             * m.moe_layers / m.layers)
    if cfg.memory_recipe == "deepseek-v3":  # RMSNorms and SwiGLU products recomputed (sec. 3.2.3, 3.3.3)
        m = cfg.model
        widths = ((m.dense_layers * (m.ffn or 4 * m.hidden) + m.moe_layers
                   * (m.top_k * m.expert_ffn + m.shared_experts * (m.shared_ffn or m.expert_ffn))) / m.layers)
        recomputed = _moe.recomputed_elementwise_bytes_per_token(m.hidden, m.mla[0], m.mla[1], widths)
        traffic = traffic + cfg.per_mode(lambda mode: 0.0 if mode == "full" else
                                         cfg.micro_batch * m.seq_len / (cfg.cp * cfg.tp) * recomputed)
    return cfg.num_microbatches * cfg.stage_layers * traffic / cfg.cluster.accelerator.memory_bandwidth


def tp_comm_term(*, cfg):
    """Seconds of TP all-reduces of ``b (s/cp) h`` per layer and micro-batch (Shoeybi et al. 2019).

    An MoE layer pays only the attention half, and the MLP half too when it has shared experts
    (:func:`~course.core.moe.moe_layer_tp_share`): its routed experts use the expert-TP group
    (:func:`etp_comm_term`), not the attention TP group.
    """
    m, link = cfg.model, cfg.tp_link
    per_layer = cfg.per_mode(lambda mode: _tp.tp_comm_time_per_layer(
        cfg.seq_local, cfg.micro_batch, m.hidden, cfg.tp, link.bandwidth, link.latency, _WIRE_BYTES,
        recompute=mode))
    layers = cfg.stage_layers
    if m.is_moe:  # the busiest stage's MoE layers move a share of a dense layer's TP traffic
        layers = layers - cfg.moe_stage_layers * (1.0 - float(_moe.moe_layer_tp_share(m.shared_experts)))
    return cfg.num_microbatches * layers * per_layer


def tp_exposed(tp_comm, *, cfg):
    """The TP traffic left exposed: all of it, unless ``tp_overlap`` hides part of it behind the layer GEMMs it
    feeds, at Transformer Engine's measured overlap efficiency (:func:`~course.core.tensor.tp_overlap_exposed_time`,
    :data:`~course.core.tensor.TP_OVERLAP_EFFICIENCY`; Transformer Engine needs sequence parallelism for it, so
    rows without SP keep it exposed). The GEMMs: ``2 P_layer`` FLOPs per token of the GPU's ``b s / (CP x TP)``
    tokens, x3 (x4 with full recomputation), at the GEMM peak x ``compute_efficiency``."""
    if not cfg.tp_overlap:
        return tp_comm
    m = cfg.model
    passes = _gemm_passes(cfg)
    gemm = (cfg.num_microbatches * cfg.stage_layers * 2.0 * m.active_layer_params * cfg.micro_batch
            * cfg.seq_local / cfg.tp * passes / (cfg.gemm_peak * cfg.compute_efficiency))
    hidden = _tp.tp_overlap_exposed_time(tp_comm, gemm, _tp.TP_OVERLAP_EFFICIENCY)
    return np.where(cfg.sequence_parallel & (cfg.tp > 1), hidden, tp_comm)


def cp_comm_term(*, cfg):
    """Seconds of CP key/value all-gathers and reduce-scatters per layer and micro-batch."""
    if not v.any_true(cfg.cp > 1):
        return np.zeros(())
    m, link = cfg.model, cfg.cp_link
    # a recomputed ring attention (selective recomputation re-runs the core attention) passes the
    # K/V blocks around the ring again, as full recomputation does
    ring = cfg.cp_algorithm == "ring"
    per_layer = cfg.per_mode(lambda mode: _cp.cp_comm_time_per_layer(
        m.seq_len, cfg.micro_batch, m.kv_heads or m.heads, m.head_dim, cfg.tp, cfg.cp, link.bandwidth,
        link.latency, "full" if ring and mode == "selective" else mode, _WIRE_BYTES))
    if ring:
        # the ring sends the next K/V block while attention runs on this one: only the time the
        # attention of this rank's queries (forward, backward, recomputed) cannot cover is exposed
        attention_flops = cfg.per_mode(lambda mode: 4.0 * m.score_width * m.seq_len * cfg.attention_fraction
                                       * (4.0 if mode != "none" else 3.0))
        attention = (cfg.micro_batch * cfg.seq_local / cfg.tp * attention_flops
                     / (cfg.peak * cfg.attention_efficiency))
        # exposed part, plus the SMs the hidden part takes from attention
        per_layer = np.maximum(per_layer - attention, 0.0) + np.minimum(per_layer, attention) * OVERLAP_SM_SHARE
    return cfg.num_microbatches * cfg.stage_layers * per_layer


def ep_comm_term(*, cfg):
    """Seconds of expert all-to-alls (dispatch + combine, forward and backward) per iteration.

    :func:`~course.core.moe.moe_all_to_all_time_per_layer` for the tokens of one GPU, the
    EP ranks per node and the model's node limit, x MoE layers of the busiest stage x
    micro-batches. Not overlapped with compute (1F1B as in Megatron-Core without its
    all-to-all overlap).
    """
    m = cfg.model
    if not m.is_moe or not v.any_true(cfg.ep > 1):
        return np.zeros(())
    c = cfg.cluster
    groups = (m.routing_groups, m.routing_group_topk) if m.routing_groups else (None, None)
    # FP8 dispatch (1 byte + a 4-byte scale per 128) and BF16 combine (DeepSeek-AI 2024, sec. 3.3.3)
    wire = (1.0 + 4.0 / _fp8.FP8_SCALE_TILE + _WIRE_BYTES) / 2 if cfg.fp8 else _WIRE_BYTES
    # the dispatcher's kernels, each at its measured share of NVLink and of the NIC
    intra, inter = c.intra_bandwidth * cfg.a2a_efficiency[0], c.inter_bandwidth * cfg.a2a_efficiency[1]
    copies = cfg.dispatch.copies
    if copies == "gather":  # every EP rank receives every token (all-gather), outputs reduce-scattered back
        r = np.minimum(cfg.ep_local, cfg.ep)
        count = cfg.per_mode(lambda mode: float(_moe.MOE_ALL_TO_ALLS_PER_LAYER[mode]))
        nvlink = count * cfg.moe_tokens * (r - 1) * m.hidden * wire / intra
        network = count * cfg.moe_tokens * (cfg.ep - r) * m.hidden * wire / inter
        per_layer = np.where(cfg.ep > 1, np.maximum(nvlink, network), 0.0)
    else:
        # "network": every remote copy crosses the NIC (DeepEP low-latency: pure RDMA), as if each rank were a node
        local = 1 if copies == "network" else cfg.ep_local
        per_layer = cfg.per_mode(lambda mode: _moe.moe_all_to_all_time_per_layer(
            cfg.moe_tokens, m.hidden, m.top_k, cfg.ep, local, intra, inter,
            c.intra_latency, c.inter_latency, *groups, mode, wire, copies == "node"))
    if cfg.dispatch.latency:  # the kernels' own measured time per all-to-all
        per_layer = per_layer + cfg.per_mode(lambda mode: _moe.MOE_ALL_TO_ALLS_PER_LAYER[mode] * cfg.dispatch.latency)
    return cfg.num_microbatches * cfg.moe_stage_layers * per_layer


def etp_comm_term(*, cfg):
    """Seconds of expert-TP all-gathers and reduce-scatters of the routed tokens per iteration.

    :func:`~course.core.moe.expert_tp_comm_time_per_layer` for the tokens one GPU dispatches
    (``b s / (CP x TP)``) x top-k, over the ETP group (innermost in Megatron-Core's expert order, so on
    NVLink while ``ETP`` fits in an NVLink domain), x MoE layers of the busiest stage x micro-batches.
    Priced at the measured collective efficiency of the link (nccl-tests:
    :data:`~course.core.collectives.NVLINK_COLLECTIVE_EFFICIENCY`,
    :data:`~course.core.collectives.NETWORK_COLLECTIVE_EFFICIENCY`), or at DeepEP's where DeepEP dispatches
    (its flex dispatcher sends the ETP copies inside the all-to-all). 0 with ``ETP = 1``. Added to the EP
    term and exposed: Megatron-Core runs the gathers in ``MoELayer.routed_experts_compute`` (``dispatch_postprocess``
    and ``combine_preprocess``), with the expert GEMMs they feed, not in the dispatch and combine that the 1F1B
    all-to-all overlap puts on the communication stream (``megatron/core/models/gpt/fine_grained_callables.py``).
    """
    m = cfg.model
    if not m.is_moe or not v.any_true(cfg.etp > 1):
        return np.zeros(())
    c, g = cfg.cluster, cfg.cluster.nvlink_domain
    in_domain = (cfg.etp <= g) & (g % np.minimum(cfg.etp, g) == 0)
    measured = cfg.a2a_measured and cfg.dispatch.copies == "node"  # DeepEP / HybridEP send the copies themselves
    eff_in, eff_out = cfg.a2a_efficiency if measured else cfg.collective_efficiency
    bandwidth = np.where(in_domain, c.intra_bandwidth * eff_in, c.inter_bandwidth * eff_out)
    latency = np.where(in_domain, c.intra_latency, c.inter_latency)
    # the same bytes per element as the dispatch and combine (FP8 dispatch, BF16 combine under precision="fp8")
    wire = (1.0 + 4.0 / _fp8.FP8_SCALE_TILE + _WIRE_BYTES) / 2 if cfg.fp8 else _WIRE_BYTES
    per_layer = cfg.per_mode(lambda mode: _moe.expert_tp_comm_time_per_layer(
        cfg.moe_tokens, m.hidden, m.top_k, cfg.etp, bandwidth, latency, mode, wire))
    return cfg.num_microbatches * cfg.moe_stage_layers * per_layer


def ep_exposed(ep_comm, *, cfg, compute, credit=None):
    """The all-to-all time left exposed: all of it, except under DualPipe, which runs one
    micro-batch's dispatch and combine while another computes (DeepSeek-AI 2024, sec. 3.2.1:
    "both all-to-all and PP communication can be fully hidden"), and with Megatron-Core's 1F1B
    all-to-all overlap (``ep_overlap``: ``--overlap-moe-expert-parallel-comm``, which runs the forward
    of one micro-batch beside the backward of another, as DualPipe does, in the steady state of
    1F1B; Megatron-Core MoE README). The hidden part still takes the SMs the communication kernels
    occupy (``OVERLAP_SM_SHARE``). Only the framework's measured share of that ideal is credited
    (``Config.ep_overlap_credit``: Megatron-Core's 37 %, ``course.core.frameworks.FRAMEWORKS``; DualPipe's
    "fully hidden", 1); ``credit`` overrides it (the range's ends)."""
    if cfg.schedule != "dualpipe" and not cfg.ep_overlap:
        return ep_comm
    credit = cfg.ep_overlap_credit if credit is None else credit
    ideal = np.maximum(ep_comm - compute, 0.0) + np.minimum(ep_comm, compute) * OVERLAP_SM_SHARE
    return ep_comm - credit * (ep_comm - ideal)


def moe_straggler_term(*, cfg):
    """Extra compute seconds the busiest EP rank spends on its routed experts (dropless).

    Routed-expert FLOPs (``2 k P_e`` per token and MoE layer, forward; x3 for training, x4
    with full recomputation) x (:func:`~course.core.moe.moe_straggler_factor` - 1), over
    the GPUs at the compute efficiency, paced by the busiest stage.
    """
    m = cfg.model
    if not m.is_moe:
        return np.zeros(())
    routed = 2.0 * m.top_k * float(_moe.expert_params(m.hidden, m.expert_ffn, m.mlp_matrices))
    passes = cfg.per_mode(lambda mode: 4.0 if mode == "full" else 3.0)
    flops = cfg.global_batch * m.seq_len * m.moe_layers * routed * passes
    return flops * (cfg.moe_straggler - 1.0) / (cfg.gpus * cfg.gemm_peak * cfg.compute_efficiency) * cfg.imbalance


def routed_expert_compute(*, cfg):
    """Seconds the busiest GPU's routed-expert GEMMs take per iteration at the plan's GEMM speed: ``2 k P_e`` FLOPs
    per token and MoE layer, x3 (x4 with full recomputation), x the straggler factor, over the GPUs, x the
    imbalance of stages (0 without experts)."""
    m = cfg.model
    if not m.is_moe:
        return np.zeros(())
    p_e = float(_moe.expert_params(m.hidden, m.expert_ffn, m.mlp_matrices))
    passes = cfg.per_mode(lambda mode: 4.0 if mode == "full" else 3.0)
    flops = (cfg.global_batch * m.seq_len * m.moe_layers * 2.0 * m.top_k * p_e * passes * cfg.moe_straggler
             / cfg.gpus * cfg.imbalance)
    return flops / (cfg.gemm_peak * cfg.compute_efficiency)


def grouped_gemm_term(*, cfg, bound="point"):
    """Extra seconds the routed-expert grouped GEMMs take beyond their shapes' price, at few rows per expert and
    at short reduced widths: :func:`routed_expert_compute` x ``(slowdown / grouped - 1)``, with ``grouped`` =
    :func:`~course.core.moe.grouped_gemm_factor` of the rows per expert (DeepGEMM's measured grouped-GEMM speed) and
    ``slowdown`` the FLOP-weighted ``1 / short_k_factor`` of the up projections (reducing over ``hidden``) and the
    down projection (over ``expert_ffn / ETP``) (:func:`~course.core.moe.short_k_factor`: DeepGEMM's dense K sweep;
    1 where every K is 2,048 or more, as DeepSeek-V3's)."""
    m = cfg.model
    if not m.is_moe:
        return np.zeros(())
    factor = np.asarray(_moe.grouped_gemm_factor(np.maximum(cfg.tokens_per_expert, 1.0), bound))
    up_share = (m.mlp_matrices - 1) / m.mlp_matrices  # gate and up (SwiGLU) or up: all but the down projection
    slowdown = (up_share / np.asarray(_moe.short_k_factor(m.hidden, bound))
                + (1.0 - up_share) / np.asarray(_moe.short_k_factor(m.expert_ffn / cfg.etp, bound)))
    return routed_expert_compute(cfg=cfg) * (slowdown / factor - 1.0)


def moe_host_term(*, cfg, per_expert=None):
    """Seconds an MoE step waits for the host on the busiest GPU: micro-batches x the stage's MoE layers x local
    experts (``E / EP``) x the framework's host seconds per local expert and layer pass
    (``course.core.frameworks.MEGATRON_MOE_HOST_PER_EXPERT``: NVIDIA's host-bound expert kernels, the constant
    fitted on the validation's fitted rows). 0 for a dense model, whose host time is inside the calibrated
    ``compute_efficiency``."""
    m = cfg.model
    if not m.is_moe:
        return np.zeros(())
    t = cfg.moe_host_per_expert if per_expert is None else per_expert
    return cfg.num_microbatches * cfg.moe_stage_layers * (m.experts / cfg.ep) * t


def moe_weight_stream_term(*, cfg):
    """Seconds the busiest GPU's expert GEMMs wait for HBM beyond their compute time (roofline).

    :func:`~course.core.moe.expert_weight_stream_time` of the routed-expert weights on one GPU of
    the busiest stage (``moe_stage_layers x E x P_e / (EP x ETP)``), less the time the same GPU
    computes its routed experts (``2 k P_e`` FLOPs per token and MoE layer, x3 for training, x4
    with full recomputation, x the straggler factor, at the GEMM peak x ``compute_efficiency``):
    ``max(0, T_stream - T_compute)``. It bites when each expert sees few tokens
    (:func:`~course.core.moe.tokens_per_expert`: EP small against the expert count, small
    micro-batches), where a grouped GEMM is memory-bound.
    """
    m = cfg.model
    if not m.is_moe:
        return np.zeros(())
    p_e = float(_moe.expert_params(m.hidden, m.expert_ffn, m.mlp_matrices))
    local = cfg.moe_stage_layers * m.experts * p_e / (cfg.ep * cfg.etp)
    weight_bytes = 1.0 if cfg.fp8 else _WIRE_BYTES
    stream = cfg.per_mode(lambda mode: _moe.expert_weight_stream_time(
        local, cfg.num_microbatches, cfg.cluster.accelerator.memory_bandwidth, mode, weight_bytes))
    passes = cfg.per_mode(lambda mode: 4.0 if mode == "full" else 3.0)
    flops = (cfg.global_batch * m.seq_len * m.moe_layers * 2.0 * m.top_k * p_e * passes * cfg.moe_straggler
             / cfg.gpus * cfg.imbalance)
    compute = flops / (cfg.gemm_peak * cfg.compute_efficiency)
    return np.maximum(stream - compute, 0.0)


def bubble_term(*, cfg, busy):
    """Pipeline bubble: :func:`~course.core.pipeline.schedule_bubble_overhead` x the busy time of a stage."""
    if cfg.schedule in ("zb-h1", "dualpipe"):
        return _pipe.schedule_bubble_overhead(cfg.pp, cfg.num_microbatches, cfg.schedule) * busy
    return _pipe.bubble_overhead(cfg.pp, cfg.num_microbatches, cfg.interleave) * busy


def pp_comm_term(*, cfg):
    """Seconds of point-to-point sends: ``b (s/cp) h / tp`` 16-bit values, forward and backward, x v."""
    if not v.any_true(cfg.pp > 1):
        return np.zeros(())
    m, link = cfg.model, cfg.pp_link
    # Megatron's scatter/gather optimisation splits each send over the TP group (sec. 4.1)
    message = _pipe.p2p_bytes_per_microbatch(cfg.seq_local, cfg.micro_batch, m.hidden, _WIRE_BYTES) / cfg.tp
    send = _coll.point_to_point_time(message, link.bandwidth, link.latency)
    return np.where(cfg.pp > 1, 2 * cfg.interleave * cfg.num_microbatches * send, 0.0)


def dp_comm_term(*, cfg, busy):
    """ZeRO traffic over the DP x CP group: total seconds and the part left exposed.

    One all-reduce of the GPU's 16-bit gradients (hierarchical: in-node members first)
    times the stage's all-reduce equivalents (:mod:`~course.core.zero`), overlapped per
    layer with the forward / backward pass of one micro-batch of the busiest stage.
    """
    m, c = cfg.model, cfg.cluster
    params = (m.params - m.routed_expert_params) / (cfg.tp * cfg.pp)
    # overlapped traffic moves one bucket per layer, each paying the collective's latency;
    # without overlap one collective over the whole gradient buffer (Megatron's local DDP)
    buckets = cfg.stage_layers if cfg.overlap else np.ones((), np.int64)

    def allreduce(width):  # one all-reduce of this GPU's parameters at ``width`` bytes each
        t = buckets * _coll.hierarchical_allreduce_time(
            params * width / buckets, cfg.grad_local, cfg.grad_nodes, cfg.intra_bw, cfg.inter_bw, c.intra_latency,
            c.inter_latency)
        if m.is_moe:  # expert gradients reduce over the expert-data-parallel group (parallel folding)
            experts = _moe.expert_params_per_gpu(m.routed_expert_params, cfg.ep, cfg.etp, cfg.pp) * width
            t = t + buckets * _coll.hierarchical_allreduce_time(
                experts / buckets, cfg.expert_grad_local, cfg.expert_grad_nodes, cfg.intra_bw, cfg.inter_bw,
                c.intra_latency, c.inter_latency)
        return t

    # an all-gather or a reduce-scatter is half an all-reduce (Thakur et al. 2005): parameters gathered at
    # ``gather_bytes``, gradients reduced at ``grad_bytes`` (FSDP2's param_dtype / reduce_dtype)
    reduce = 0.5 * allreduce(cfg.grad_bytes)
    gather = reduce if cfg.gather_bytes == cfg.grad_bytes else 0.5 * allreduce(cfg.gather_bytes)
    microbatch = busy / cfg.num_microbatches
    if cfg.checkpoint_policy is not None:  # the recomputation runs inside the backward pass
        m = cfg.model
        forward = _lc.flops_per_sequence(m, "none", cfg.attention_fraction) / 3.0 - 2.0 * m.vocab * m.hidden * m.seq_len
        extra = sum(cfg.policy_flops_per_token()) * m.seq_len / forward
        fwd, bwd = microbatch / (3.0 + extra), microbatch * (2.0 + extra) / (3.0 + extra)
    else:
        fwd = microbatch * cfg.per_mode(_lc.forward_share)
        bwd = microbatch * cfg.per_mode(_lc.backward_share)
    total, exposed = _zero.sharded_traffic_time(gather, reduce, cfg.zero_stage, cfg.num_microbatches, fwd, bwd,
                                                buckets, cfg.overlap, cfg.reshard_after_forward)
    return np.asarray(total), np.asarray(exposed)


def memory_terms(*, cfg):
    """Per-GPU bytes: model states (ZeRO over DP x CP) and activations of the busiest stage."""
    m = cfg.model
    params_gpu = (m.params - m.routed_expert_params) / (cfg.tp * cfg.pp)
    # DeepSeek-V3: FP32 gradients, FP32 master weights + BF16 moments (MEMORY_RECIPES)
    state = (dict(grad_bytes=cfg.grad_bytes, optimizer_bytes=8.0) if cfg.memory_recipe == "deepseek-v3"
             else dict(grad_bytes=cfg.grad_bytes))
    parts = _mem.model_state_breakdown(params_gpu, cfg.zero_stage, cfg.grad_group, **state)
    if m.is_moe:  # routed experts: sharded ETP x EP x PP, ZeRO over the expert-DP group
        experts = _mem.model_state_breakdown(
            _moe.expert_params_per_gpu(m.routed_expert_params, cfg.ep, cfg.etp, cfg.pp), cfg.zero_stage,
            cfg.expert_dp, **state)
        parts = {k: parts[k] + experts[k] for k in ("weights", "gradients", "optimizer")}
    out = {k: np.asarray(parts[k]) for k in ("weights", "gradients", "optimizer")}
    if not cfg.reshard_after_forward:  # ZeRO-3 keeps the stage's gathered parameters from forward to backward
        out["weights"] = out["weights"] + np.where(cfg.zero_stage == 3, params_gpu * cfg.gather_bytes
                                                   * (1.0 - 1.0 / cfg.grad_group), 0.0)
    if cfg.fp8:  # the FP8 copy of the GPU's weights, cast once per step and cached (1 byte each)
        weights_gpu = params_gpu + (_moe.expert_params_per_gpu(m.routed_expert_params, cfg.ep, cfg.etp, cfg.pp)
                                    if m.is_moe else 0.0)
        out["weights"] = out["weights"] + weights_gpu * 1.0
    if cfg.schedule == "dualpipe":  # two copies of the stage's parameters (DeepSeek-V3, Table 2)
        copies = np.where(cfg.pp > 1, 2.0, 1.0)
        out["weights"], out["gradients"] = out["weights"] * copies, out["gradients"] * copies
    # the fullest GPU: stage s holds p - s micro-batches (1F1B), so a first stage with fewer layers
    # pinned on it can be lighter than the second; layer-micro-batches of the fullest stage
    kind = np.where(cfg.interleave > 1, 1, 0)
    schedules = {"gpipe": ("gpipe", "gpipe"), "dualpipe": ("dualpipe", "dualpipe")}.get(
        cfg.schedule, ("1f1b", "interleaved"))  # ZB-H1 keeps 1F1B's activations (Qi et al. 2023)
    first_layers = np.where((cfg.pp > 1) & (cfg.first_stage_layers > 0), cfg.first_stage_layers, cfg.stage_layers)
    last_layers = np.where((cfg.pp > 1) & (cfg.last_stage_layers > 0), cfg.last_stage_layers, cfg.stage_layers)
    held = None
    for code, name in enumerate(schedules):
        if not v.any_true(kind == code):
            continue
        if name == "dualpipe":  # both ends of the pipeline on every device: p + 1 everywhere
            at_first = at_middle = at_last = _pipe.schedule_memory(cfg.pp, cfg.num_microbatches, "dualpipe")[0]
        else:  # the first, second and last stage in one call: the three stage numbers on a leading axis
            stages = np.zeros((3,) + np.broadcast(cfg.pp, cfg.num_microbatches, cfg.interleave).shape, np.int64)
            stages[1], stages[2] = np.minimum(1, cfg.pp - 1), cfg.pp - 1
            at_first, at_middle, at_last = np.asarray(_pipe.in_flight_microbatches_at_stage(
                cfg.pp, cfg.num_microbatches, stages, name, cfg.interleave))
        h = np.maximum(np.maximum(first_layers * at_first, cfg.stage_layers * at_middle), last_layers * at_last)
        held = h if held is None else np.where(kind == code, h, held)
    stage_share = held / cfg.stage_layers  # stage-sized micro-batches in flight on the fullest GPU
    if cfg.checkpoint_policy is not None:  # the policy's saved tensors, and one layer re-materialised in its backward
        activations = cfg.policy_activation_bytes() * held
        if v.any_true(cfg.policy_cost["gemm_flops"] + cfg.policy_cost["attention_flops"] > 0):
            activations = activations + cfg.policy_transient_bytes()
    elif cfg.memory_recipe == "deepseek-v3":  # the recipe's own count (Config.recipe_activation_bytes)
        activations = cfg.per_mode(lambda mode: cfg.activation_bytes(mode) if mode == "full"
                                   else cfg.recipe_activation_bytes()) * held
    else:
        activations = cfg.per_mode(lambda mode: cfg.activation_bytes(mode) + cfg.head_width_delta(mode)) * held
        if cfg.fp8:  # GEMM inputs kept for the backward pass in FP8: one byte saved per element
            saved = cfg.per_mode(lambda mode: 0.0 if mode == "full" else cfg.fp8_tokens * cfg.fp8_gemm_inputs)
            activations = activations - saved * held
        if m.is_moe:
            activations = activations + cfg.per_mode(cfg.moe_activation_delta) * cfg.moe_stage_layers * stage_share
        if "mlp" in cfg.recompute_modules:  # the dense MLPs keep only their input (Megatron-Core recompute_modules)
            dense_share = (m.dense_layers / m.layers) if m.is_moe else 1.0
            activations = activations - cfg.per_mode(
                lambda mode: 0.0 if mode == "full" else cfg.recomputed_mlp_bytes()) * held * dense_share
    # full recomputation still materialises one layer's activations during its backward
    if cfg.checkpoint_policy is None and v.any_true(cfg.recompute_code == 2):
        activations = activations + np.where(cfg.recompute_code == 2, cfg.activation_bytes("none"), 0.0)
    out["activations"] = activations
    out["memory_total"] = out["weights"] + out["gradients"] + out["optimizer"] + activations
    return out


def violation_terms(*, cfg, memory_total):
    """One boolean array per code of :data:`VIOLATION_CODES` (batch mismatches are the caller's)."""
    m, c = cfg.model, cfg.cluster
    g = c.nvlink_domain
    return {
        "gpus_mismatch": cfg.gpus != c.gpus,
        "tp_crosses_node": (cfg.tp > g) | (g % np.minimum(cfg.tp, g) != 0),
        "heads_not_divisible": m.heads % cfg.tp != 0,
        "cp_not_divisible": m.seq_len % (2 * cfg.cp) != 0,
        "batch_not_divisible": np.zeros((), bool),
        "too_few_microbatches": (cfg.pp > 1) & (cfg.num_microbatches < cfg.pp),
        "interleave_needs_multiple": (cfg.interleave > 1) & (cfg.num_microbatches % cfg.pp != 0),
        "dualpipe_needs_even": np.asarray(cfg.schedule == "dualpipe")
                               & ((cfg.pp % 2 != 0) | (cfg.num_microbatches % 2 != 0)
                                  | (cfg.num_microbatches < 2 * cfg.pp)),
        "out_of_memory": memory_total > cfg.cluster.accelerator.memory_capacity,
        "experts_not_divisible": (cfg.ep > 1) & ((m.experts or 1) % cfg.ep != 0),
        "ep_not_divisible": (cfg.tp * cfg.cp * cfg.dp) % (cfg.etp * cfg.ep) != 0,
    }


def note_terms(*, cfg):
    """One boolean array per code of :data:`NOTE_CODES`.

    ``few_tokens_per_expert``: an MoE layout whose experts multiply fewer tokens per micro-batch
    (``Config.tokens_per_expert``) than ``min_tokens_per_expert``, the fewest at which the planner was
    checked against measurements (:data:`DEFAULT_MIN_TOKENS_PER_EXPERT`); never for a dense model.
    """
    few = (np.asarray(cfg.model.is_moe and cfg.min_tokens_per_expert > 0)
           & (cfg.tokens_per_expert < cfg.min_tokens_per_expert))
    return {
        "uneven_stages": (cfg.pp > 1) & (cfg.stage_layers * cfg.pp != cfg.model.layers),
        "deepspeed_zero_with_pipeline": (cfg.pp > 1) & (cfg.zero_stage >= 2),
        "few_tokens_per_expert": few,
        "starved_expert_gemms": (np.asarray(_moe.starved_expert_gemms(
            cfg.tokens_per_expert, cfg.model.expert_ffn / cfg.etp, cfg.model.hidden), dtype=bool)
            if cfg.model.is_moe else np.zeros((), bool)),
    }


def range_terms(*, cfg, step, busy, bubble, compute, grouped, ep_raw, ep_comm):
    """The plan's range: ``step_time_low`` (every uncertain assumption at its fast end) and ``step_time_high``
    (at its slow end), and one column ``rw_<i>`` per entry of :data:`RANGE_ASSUMPTIONS`, the width that assumption's
    range alone gives the busy time (:func:`rate_columns` names the widest, ``range_driver``).

    Each assumption's ends come from its source (:func:`range_sources`): the framework's efficiency range
    scales the compute; the accelerator's peak range (a power-capped part whose clocks are not published)
    scales it too; the FP8 recipe's measured speed range; DeepGEMM's grouped-GEMM range; the all-to-all
    overlap credit from none to the ideal; the dispatcher's measured share of each link; the framework's
    host seconds per local expert and layer pass. Every shift is a change of busy time, which the pipeline
    bubble multiplies, so the ends are ``step + (1 + bubble / busy) x`` the summed shifts (first order: the
    assumptions' separate effects added). Each shift keeps the shape of the settings it depends on, so a sweep
    pays for the full grid only in the two sums.
    """
    m, acc = cfg.model, cfg.cluster.accelerator
    zero = np.zeros(())
    fw = cfg.framework
    point = fw.efficiency_factor
    shifts = [(compute * (point / fw.efficiency_range[0] - 1.0), compute * (point / fw.efficiency_range[1] - 1.0))]
    precision = "fp8" if cfg.fp8 else cfg.precision
    low, high = acc.peak_range.get(precision, (cfg.gemm_peak, cfg.gemm_peak))
    shifts.append((compute * (cfg.gemm_peak / low - 1.0), compute * (cfg.gemm_peak / high - 1.0)))
    r = cfg.recipe
    shifts.append((compute * (r.relative_speed / r.speed_range[0] - 1.0),
                   compute * (r.relative_speed / r.speed_range[1] - 1.0)) if cfg.fp8 else (zero, zero))
    if m.is_moe:
        shifts.append((grouped_gemm_term(cfg=cfg, bound="low") - grouped,
                       grouped_gemm_term(cfg=cfg, bound="high") - grouped))
        if cfg.schedule == "dualpipe" or cfg.ep_overlap:
            credit_low, credit_high = (1.0, 1.0) if cfg.schedule == "dualpipe" else fw.ep_overlap_range
            shifts.append((ep_exposed(ep_raw, cfg=cfg, compute=compute, credit=credit_low) - ep_comm,
                           ep_exposed(ep_raw, cfg=cfg, compute=compute, credit=credit_high) - ep_comm))
        else:
            shifts.append((zero, zero))
        nvlink, network = cfg.a2a_range
        crosses = cfg.ep > cfg.ep_local
        share_slow = np.where(crosses, network[0] / network[1], nvlink[0] / nvlink[1]) - 1.0
        share_fast = np.where(crosses, network[0] / network[2], nvlink[0] / nvlink[2]) - 1.0
        shifts.append((ep_comm * share_slow, ep_comm * share_fast))  # the exposed all-to-all, at the link's ends
        low, high = fw.moe_host_range
        t = cfg.moe_host_per_expert
        per_expert = moe_host_term(cfg=cfg, per_expert=1.0)
        shifts.append((per_expert * (max(high, t) - t), per_expert * (min(low, t) - t)))
    else:
        shifts += [(zero, zero)] * 4
    # an assumption without a range here (both ends the 0-d ``zero``) adds +0.0 to the sums, which changes no bit of
    # them (they start from +0.0 and never hold -0.0), and has the width 0.0: skipped, not computed
    ranged = [i for i, (a, b) in enumerate(shifts) if not (a is zero and b is zero)]
    slow = {i: np.maximum(np.asarray(shifts[i][0], dtype=float), 0.0) for i in ranged}
    fast = {i: np.minimum(np.asarray(shifts[i][1], dtype=float), 0.0) for i in ranged}
    stretch = 1.0 + bubble / np.maximum(busy, 1e-30)
    out = dict(step_time_low=step + stretch * _summed(fast.values()),
               step_time_high=step + stretch * _summed(slow.values()))
    out.update({f"rw_{i}": slow[i] - fast[i] if i in slow else np.float64(0.0) for i in range(len(shifts))})
    return out


def _summed(arrays):
    """``sum(arrays)`` (left to right, from 0) into one buffer of their broadcast shape, not one per addition."""
    arrays = tuple(arrays)
    total = np.zeros(np.broadcast(*arrays).shape)
    for a in arrays:
        total += a
    return total


def range_driver(cols):
    """Index into :data:`RANGE_ASSUMPTIONS` of the widest ``rw_<i>`` column of ``cols`` (per row)."""
    # np.argmax over the stacked columns, without broadcasting them all first: the first widest wins ties
    widest = np.asarray(cols["rw_0"])
    index = np.zeros(widest.shape, np.int64)
    for i in range(1, len(RANGE_ASSUMPTIONS)):
        width = np.asarray(cols[f"rw_{i}"])
        if width.ndim == 0 and width == 0:  # an assumption without a range here (widths are >= 0): never wider
            continue
        wider = width > widest
        index, widest = np.where(wider, i, index), np.where(wider, width, widest)
    return index


def range_sources(model, cluster, settings=None, **options):
    """Each uncertain assumption of :data:`RANGE_ASSUMPTIONS` -> its point, range and source, as one sentence.

    >>> "Megatron-LM SC21" in range_sources("llama3-70b", "h100-1024")["compute efficiency"]
    True
    """
    m, c = _as_model(model), _as_cluster(cluster)
    s = PlanSettings.of(settings, **options)
    fw, recipe, acc = _fw.framework(s.framework), _fw.fp8_recipe(s.fp8_recipe), c.accelerator
    out = {"compute efficiency": f"{fw.name}: x{fw.efficiency_factor:g} of the calibrated share (range "
                                 f"x{fw.efficiency_range[0]:g} to x{fw.efficiency_range[1]:g}); {fw.source}"}
    precision = "fp8" if s.precision == "fp8" else s.precision
    if acc.peak_range and precision in acc.peak_range:
        lo, hi = acc.peak_range[precision]
        out["accelerator peak"] = (f"{acc.name}: {acc.peak(precision) / 1e12:.0f} TFLOP/s {precision} (range "
                                   f"{lo / 1e12:.0f} to {hi / 1e12:.0f}); {acc.peak_range_source}")
    else:
        out["accelerator peak"] = f"{acc.name}: the data sheet's {precision} peak (no range: {acc.source.split(':')[0]})"
    if s.precision == "fp8":
        out["FP8 recipe"] = (f"{recipe.name}: x{recipe.relative_speed:g} the speed of per-tensor current scaling "
                             f"(range x{recipe.speed_range[0]:g} to x{recipe.speed_range[1]:g}); {recipe.source}")
    if m.is_moe:
        out["grouped GEMMs"] = ("expert GEMMs at DeepGEMM's measured grouped-GEMM speed by rows per expert (1 from "
                                "4,096 rows, 0.895 at 1,024, range 0.84 to 0.95; 0.818 at 512, 0.730 at 256) and, where "
                                "they reduce over fewer than 2,048 elements, at its dense K sweep's K / (K + 750) "
                                "(K0 range 673 to 824; deepseek-ai/DeepGEMM README, H800, FP8)")
        credit = 1.0 if s.schedule == "dualpipe" else (fw.ep_overlap_credit if s.ep_overlap_credit is None
                                                        else s.ep_overlap_credit)
        out["all-to-all overlap"] = (("DualPipe hides the all-to-alls but their SMs (DeepSeek-AI 2024, sec. 3.2.1)"
                                      if s.schedule == "dualpipe" else
                                      f"{credit:.0%} of the ideal overlap credited (range {fw.ep_overlap_range[0]:.0%} "
                                      f"to {fw.ep_overlap_range[1]:.0%}); {fw.overlap_source}") if (s.ep_overlap or s.schedule == "dualpipe")
                                     else "no all-to-all overlap: exposed")
        name = "deepep" if (s.dispatcher == "alltoall" and m.routing_groups) else s.dispatcher
        d = _moe.DISPATCHER_MEASUREMENTS[name]
        out["dispatcher"] = (f"{d.name}: NVLink {d.nvlink[0]:.0%} (range {d.nvlink[1]:.0%}-{d.nvlink[2]:.0%})"
                             + (f", on NVLink domains above 8 GPUs {d.large_domain_nvlink[0]:.0%}" if d.large_domain_nvlink else "")
                             + f", network {d.network[0]:.0%} (range {d.network[1]:.0%}-{d.network[2]:.0%}) of each link; "
                             f"{d.source}")
        t = fw.moe_host_per_expert if s.moe_host_per_expert is None else s.moe_host_per_expert
        out["MoE host time"] = (f"{t * 1e3:.2f} ms of host time per local expert and MoE layer pass (range "
                                f"{fw.moe_host_range[0] * 1e3:.2f} to {fw.moe_host_range[1] * 1e3:.2f} ms): the "
                                f"host-bound expert kernels NVIDIA measured (Megatron-LM docs, 'Optimizing DeepSeek-V3 "
                                f"Training Performance on NVIDIA GB200 NVL72'), the constant fitted on the fitted "
                                f"Megatron-Core BF16 MoE rows of notebooks/validation.ipynb")
    return out


def rate_columns(cfg):
    """Rates derived from the other columns, as functions of any mapping holding them.

    ``achieved_flops_per_gpu``, ``mfu`` (6N per token against the dense BF16 or the chosen
    precision's peak), ``mfu_attention`` (PaLM's 6N + 12 l h s), ``samples_per_second``,
    ``scaling_efficiency`` (compute / step) and ``bubble_fraction``. A sweep computes them
    only for the rows it is asked about.
    """
    peak, per_token = cfg.peak, _lc.model_flops_per_token(cfg.model)
    seq = cfg.model.seq_len
    return {
        "achieved_flops_per_gpu": lambda c: c["flops_per_iteration"] / (c["step_time"] * c["gpus"]),
        "mfu": lambda c: _dp.mfu(c["model_flops"], c["step_time"], peak, c["gpus"]),
        "mfu_attention": lambda c: _dp.mfu(c["global_batch"] * seq * per_token, c["step_time"], peak, c["gpus"]),
        "samples_per_second": lambda c: c["global_batch"] / c["step_time"],
        "mfu_low": lambda c: _dp.mfu(c["model_flops"], c["step_time_high"], peak, c["gpus"]),
        "range_driver": range_driver,
        "mfu_high": lambda c: _dp.mfu(c["model_flops"], c["step_time_low"], peak, c["gpus"]),
        "scaling_efficiency": lambda c: c["compute"] / c["step_time"],
        "bubble_fraction": lambda c: c["bubble"] / c["step_time"],
    }


def columns(cfg, rates=True):
    """Every term of ``cfg`` added up: the columns of :func:`~course.core.planner.evaluate`.

    Each column keeps the shape of the settings it depends on (broadcastable to
    ``cfg.shape``); :func:`broadcast_columns` gives them all the full shape. With
    ``rates=False`` the columns of :func:`rate_columns` are left out.
    """
    with v.inputs_checked():  # ``Config`` checked every input: the core functions below need not re-check
        return _added_up(cfg, rates)


def _added_up(cfg, rates):
    """The body of :func:`columns`."""
    flops, compute = compute_term(cfg=cfg)
    if cfg.fp8:  # the recipe's measured speed relative to per-tensor current scaling
        compute = compute / cfg.recipe.relative_speed
    memory_bound = memory_bound_term(cfg=cfg)
    tp_comm = tp_exposed(tp_comm_term(cfg=cfg), cfg=cfg)
    cp_comm = cp_comm_term(cfg=cfg)
    grouped = grouped_gemm_term(cfg=cfg)
    compute = compute + moe_straggler_term(cfg=cfg) + moe_weight_stream_term(cfg=cfg) + grouped
    # expert-TP's gathers run with the expert GEMMs, outside the dispatch and combine the overlaps hide
    ep_raw, etp = ep_comm_term(cfg=cfg), etp_comm_term(cfg=cfg)
    ep_comm = ep_exposed(ep_raw, cfg=cfg, compute=compute) + etp
    gpu_busy = compute + memory_bound + tp_comm + cp_comm + ep_comm
    host = moe_host_term(cfg=cfg)
    compute = compute + host  # the GPU idles while the host launches: charged to the compute it delays
    busy = gpu_busy + host
    bubble = bubble_term(cfg=cfg, busy=busy)
    pp_comm = pp_comm_term(cfg=cfg)
    dp_comm, dp_exposed = dp_comm_term(cfg=cfg, busy=busy)
    step = compute + memory_bound + tp_comm + cp_comm + ep_comm + bubble + pp_comm + dp_exposed
    ranges = range_terms(cfg=cfg, step=step, busy=busy, bubble=bubble, compute=compute - host, grouped=grouped,
                         ep_raw=ep_raw, ep_comm=ep_comm - etp)
    mem = memory_terms(cfg=cfg)

    gpus, gb = cfg.gpus, cfg.global_batch
    tokens = gb * cfg.model.seq_len
    # 6 N D with N the weights a token passes through (all of them for a dense model)
    model_flops = np.asarray(_econ.training_flops(cfg.model.active_params, tokens))
    cols = dict(
        gpus=gpus, tp=cfg.tp, cp=cfg.cp, pp=cfg.pp, dp=cfg.dp, micro_batch=cfg.micro_batch,
        num_microbatches=cfg.num_microbatches, global_batch=gb, zero_stage=cfg.zero_stage,
        recompute_code=cfg.recompute_code, sequence_parallel=cfg.sequence_parallel, interleave=cfg.interleave,
        first_stage_layers=cfg.first_stage_layers, last_stage_layers=cfg.last_stage_layers,
        stage_layers=cfg.stage_layers,
        ep=cfg.ep, etp=cfg.etp, expert_dp=cfg.expert_dp, moe_straggler=cfg.moe_straggler,
        tokens_per_expert=cfg.tokens_per_expert,
        compute_efficiency=np.asarray(cfg.compute_efficiency),
        gemm_efficiency=np.asarray(getattr(cfg, "gemm_efficiency", 0.0)),
        compute=compute, memory_bound=memory_bound, tp_comm=tp_comm, cp_comm=cp_comm, ep_comm=ep_comm,
        bubble=bubble,
        pp_comm=pp_comm, dp_comm=dp_comm, dp_comm_exposed=dp_exposed, step_time=step, **ranges,
        memory_capacity=np.asarray(cfg.cluster.accelerator.memory_capacity),
        flops_per_iteration=flops, model_flops=model_flops, tokens_per_second=tokens / step,
        **mem,
    )
    if rates:
        cols.update({name: rate(cols) for name, rate in rate_columns(cfg).items()})
    infeasible = np.zeros((), bool)
    for code, mask in violation_terms(cfg=cfg, memory_total=mem["memory_total"]).items():
        cols["viol_" + code] = mask
        infeasible = infeasible | mask  # broadcasts only as far as the masks do
    cols["feasible"] = np.broadcast_to(~infeasible, cfg.shape)
    for code, mask in note_terms(cfg=cfg).items():
        cols["note_" + code] = np.asarray(mask)
    return cols


def broadcast_columns(cols, shape, cfg=None):
    """``cols`` (as :func:`columns` returns them) as writable arrays of one ``shape``, none shared with another
    column or with ``cfg`` (the :class:`Config` they were computed from, which holds the caller's input arrays)."""
    shape = tuple(shape)
    # ids of the arrays that may not be handed out as they are: the Config's (the caller's input arrays among
    # them), then every array already kept under another name (a new copy is never met again)
    taken = set() if cfg is None else {id(x) for x in vars(cfg).values() if isinstance(x, np.ndarray)}
    out, empty, ndarray = {}, np.empty, np.ndarray
    for k, a in cols.items():
        if type(a) is not ndarray:
            a = np.asarray(a)
        # a full-shape array the pass computed itself, owned and writable and not already handed out under another
        # name, is kept as it is; everything else (broadcastable parts, views, the caller's own input arrays)
        # is copied into a new array (a filled ``np.empty``: a third of ``np.array(np.broadcast_to(a, shape))``)
        if a.shape == shape and id(a) not in taken and a.flags.owndata and a.flags.writeable:
            out[k] = a
            taken.add(id(a))
        else:
            out[k] = full = empty(shape, a.dtype)
            full[...] = a
    return out


def term_assumptions(model, cluster, settings=None, *, used_efficiency=None, **options):
    """The assumptions behind each step-time term and the memory, as short sentences.

    One entry per name of :data:`STEP_TERMS` and ``"memory"``. What a number assumes is printed beside it
    (``Plan.assumptions``, :func:`~course.core.planner.explain`).

    Parameters
    ----------
    model, cluster
        As in :func:`~course.core.planner.plan`.
    settings : PlanSettings, optional
        The settings of the plan or sweep; ``options`` (any :class:`PlanSettings` field) override its fields.
    used_efficiency : float, optional
        The share of peak one plan's GEMMs were charged (``Plan.compute_efficiency``), quoted when given.

    Returns
    -------
    dict of str
        Term name -> its assumptions.

    Source: the module docstring of :mod:`course.core.planner` (one source per term).

    Examples
    --------
    >>> term_assumptions("llama3-70b", "h100-1024")["cp_comm"].split(";")[0]
    "ring K/V exchange overlapped with this rank's attention (Megatron-Core / Transformer Engine p2p)"
    """
    return _term_assumptions(model, cluster, used_efficiency=used_efficiency,
                             **PlanSettings.of(settings, **options).as_kwargs())


def _term_assumptions(model, cluster, *, used_efficiency, schedule, overlap, compute_efficiency, precision,
                      fused_attention, attention_kernel, gemm_shapes, collective_efficiency, cp_algorithm, tp_overlap,
                      grad_bytes, gather_bytes, reshard_after_forward, memory_recipe, recompute_modules,
                      capacity_factor, dispatcher, ep_overlap, min_tokens_per_expert, framework, fp8_recipe,
                      ep_overlap_credit, moe_host_per_expert):
    """:func:`term_assumptions` with every :class:`PlanSettings` field spelt out (no defaults: the record has them)."""
    ranges = range_sources(model, cluster, dispatcher=dispatcher, ep_overlap=ep_overlap, schedule=schedule,
                           framework=framework, fp8_recipe=fp8_recipe, precision=precision,
                           ep_overlap_credit=ep_overlap_credit, moe_host_per_expert=moe_host_per_expert)
    m, c = _as_model(model), _as_cluster(cluster)
    grad_bytes = grad_bytes_setting(grad_bytes, memory_recipe)
    modules = recompute_modules_setting(recompute_modules, m, memory_recipe)
    eff_in, eff_out = ((_coll.NVLINK_COLLECTIVE_EFFICIENCY, _coll.NETWORK_COLLECTIVE_EFFICIENCY)
                       if collective_efficiency is None else (collective_efficiency, collective_efficiency))
    links = (f"NVLink at {eff_in:.0%} and the network at {eff_out:.0%} of link bandwidth (nccl-tests), "
             f"latency {c.intra_latency * 1e6:.0f} / {c.inter_latency * 1e6:.0f} us per hop (order of magnitude)")
    compute = _compute_assumptions(m, c, ranges, used_efficiency=used_efficiency,
                                   compute_efficiency=compute_efficiency, precision=precision,
                                   gemm_shapes=gemm_shapes, attention_kernel=attention_kernel,
                                   fused_attention=fused_attention, modules=modules,
                                   capacity_factor=capacity_factor, min_tokens_per_expert=min_tokens_per_expert)
    bubble = {"1f1b": "1F1B (interleaved with v chunks): (p-1)/(v m)", "gpipe": "GPipe: (p-1)/m",
              "zb-h1": "ZB-H1: a third of 1F1B's bubble", "dualpipe": "DualPipe: (p/2-1)/(3m)"}[schedule]
    cp = ("ring K/V exchange overlapped with this rank's attention (Megatron-Core / Transformer Engine p2p); "
          f"the hidden part still takes {OVERLAP_SM_SHARE:.0%} of the SMs" if cp_algorithm == "ring"
          else "all-gather of K/V before attention, exposed (Llama 3)")
    ep = _ep_assumption(m, ranges, dispatcher=dispatcher, collective_efficiency=collective_efficiency,
                        schedule=schedule, ep_overlap=ep_overlap)
    deepseek = memory_recipe == "deepseek-v3"
    if deepseek:
        compute.append("MLA up-projections computed twice (recomputed in the backward pass, DeepSeek-V3)")
    return {
        "compute": "; ".join(compute) + "; stages paced by the busiest; framework " + ranges["compute efficiency"]
                   + ("; accelerator peak " + ranges["accelerator peak"] if c.accelerator.peak_range else "")
                   + ("; FP8 recipe " + ranges["FP8 recipe"] if precision == "fp8" else ""),
        "memory_bound": ("element-wise kernels move Korthikanti et al.'s activation bytes at HBM bandwidth"
                         + ("; an MoE layer's for each token's k routed copies and its shared experts (permutation, "
                            "un-permutation, the weighted sum)" if m.is_moe and memory_recipe != "deepseek-v3" else "")
                         + (f"; the router's {_moe.ROUTER_KERNELS} fused element-wise kernels over each token's "
                            f"{m.experts} FP32 scores (NVIDIA's GB200 guide, sec. 2.1.4)" if m.is_moe else "")
                         + ("; FP8 casts of every GEMM operand" if precision == "fp8" else "")),
        "tp_comm": (("ring all-reduces / SP all-gathers per layer; with SP overlapped with the layer GEMMs "
                     f"(Transformer Engine userbuffers) at its measured overlap efficiency {_tp.TP_OVERLAP_EFFICIENCY:.0%} "
                     "(TE 1.4 on 8 H800 NVLink, GPT-3 175B GEMMs; Chang et al. 2024, Flux, sec. 6): that share of "
                     "the traffic's time is saved, the rest (split GEMMs, SMs shared) stays on the step; " if tp_overlap
                     else "ring all-reduces / SP all-gathers per layer, not overlapped; ") + links
                    + ("; an MoE layer's routed experts use no attention-TP collective (Megatron-Core: each GPU "
                       "dispatches its own s / TP tokens), so it pays the attention half of a dense layer's traffic"
                       + (" and its shared experts' half (TP-sharded over the attention TP group)"
                          if m.shared_experts else "") if m.is_moe else "")),
        "cp_comm": cp,
        "ep_comm": (ep + "; overlap: " + ranges["all-to-all overlap"]) if m.is_moe else "no experts",
        "bubble": f"{bubble}; forward, input-gradient and weight-gradient passes equally long",
        "pp_comm": "point-to-point sends split over TP (Megatron scatter/gather), not overlapped",
        "dp_comm_exposed": (("ZeRO traffic in one bucket per layer, overlapped with the backward pass" if overlap
                             else "gradient all-reduce after the pipeline flush, not overlapped")
                            + f"; gradients reduced in {grad_bytes * 8:g}-bit, parameters gathered in "
                            f"{gather_bytes_setting(gather_bytes) * 8:g}-bit"
                            + ("" if reshard_after_forward else "; ZeRO-3 keeps the gathered parameters from forward "
                               "to backward (reshard_after_forward=False: no second gather, their memory held)")),
        "memory": (("16-bit weights, " + ("FP32 gradients" if grad_bytes == 4 else f"{grad_bytes:g}-byte gradients")
                    + ", FP32 master weights + BF16 Adam moments (8 bytes), ZeRO over DP x CP" if deepseek else
                    "16-bit weights, " + ("16-bit gradients" if grad_bytes == 2 else
                                          f"{grad_bytes:g}-byte gradients (Megatron's FP32 main grads)"
                                          if grad_bytes == 4 else f"{grad_bytes:g}-byte gradients")
                    + ", 12 bytes of Adam state per weight, ZeRO over DP x CP")
                   + (" (experts over expert-DP)" if m.is_moe else "")
                   + ("; activations: DeepSeek-V3's (norms and MLA up-projections recomputed, GEMM and SwiGLU "
                      "inputs cached in FP8, attention output in E5M6)" if deepseek else
                      "; activations: Korthikanti et al.'s per-tensor count for the layer's shape")
                   + ", the fullest stage holding p - s micro-batches (1F1B)"),
    }


def _compute_assumptions(m, c, ranges, *, used_efficiency, compute_efficiency, precision, gemm_shapes,
                         attention_kernel, fused_attention, modules, capacity_factor, min_tokens_per_expert) -> list:
    """The compute term's assumptions, one phrase each (GEMMs, attention, recomputation, experts)."""
    peak = c.accelerator.peak("fp8" if precision == "fp8" else precision)
    if gemm_shapes:
        ceiling = _gemm.matmul_ceiling(c.accelerator, "fp8" if precision == "fp8" else precision)
        compute = [(f"layer GEMMs at {used_efficiency:.3f} of the dense {precision} peak" if used_efficiency is not None
                    else "layer GEMMs at a share of peak set by each layout's GEMM shapes")
                   + f" = {compute_efficiency:.2f} (fitted once on Megatron-LM SC21 Table 1) x E(shape) / "
                   f"{REFERENCE_GEMM_EFFICIENCY} (the A100's measured GEMM ceiling); E(shape): the {c.accelerator.name}'s "
                   f"measured ceiling {ceiling:.1%} (Bekman, MAMF table) x wave quantization of its "
                   f"{c.accelerator.sms or 'unknown'} SMs over 128 x 256 / 128 x 128 tiles (NVIDIA, Matrix "
                   f"Multiplication Background) x the HBM roofline, for b s / CP tokens and widths over TP"
                   + (" (routed experts: tokens per expert, widths over ETP)" if m.is_moe else "")]
    else:
        compute = [f"every matrix multiplication sustains {compute_efficiency:.2f} of the dense {precision} peak "
                   f"({peak / 1e12:.0f} TFLOP/s; fitted once on Megatron-LM SC21 Table 1)"]
    if precision == "fp8":
        compute.append("layer GEMMs at the FP8 peak; attention, output layer and router in BF16 (DeepSeek-V3)")
    measured = c.accelerator.attention_efficiency
    kernel_words = {"flash-attention-2": "FlashAttention-2", "flash-attention-3": "FlashAttention-3",
                    "cudnn": "cuDNN's fused attention"}[v.choice("attention_kernel", attention_kernel, ATTENTION_KERNELS)]
    if measured is not None and attention_kernel != "flash-attention-2":
        measured = measured * float(_gemm.attention_length_factor(ATTENTION_PLATEAU_TOKENS, attention_kernel))
    compute.append((f"causal {kernel_words} skips the masked 128 x 128 score tiles"
                    + (f" and sustains {measured:.2f} of peak on the {c.accelerator.name} (Shah et al. 2024)"
                       + (" from 8K queries per CP rank, less on shorter chunks (its measured H100 curve, "
                          "FlashAttention-3 paper)" if gemm_shapes else "")
                       if measured is not None else ""))
                   if fused_attention else "unfused attention computes the full s x s score matrix")
    if modules:
        compute.append("recomputed beside the recomputation mode, charged in FLOPs"
                       + (" and, for the dense MLPs, in memory (only their input kept; the MLA up-projections' "
                          "outputs still counted as stored)" if "mlp" in modules else
                          " (their activations still counted as stored)") + ": " + ", ".join({"mla_up_proj": "the MLA up-projections",
                                                         "mlp": "the dense MLPs"}[x] for x in modules)
                       + " (Megatron-Core recompute_modules)")
    if m.is_moe:
        compute.append("dropless routing, busiest EP rank from balls-into-bins with a uniform router"
                       if capacity_factor is None else f"token dropping, experts padded to capacity {capacity_factor}")
        compute.append("expert GEMMs take at least the time to stream their weights from HBM three times per "
                       "micro-batch (roofline; few tokens per expert make them memory-bound)")
        compute.append("host time per local expert and layer pass, " + ranges["MoE host time"] + "; "
                       + ranges["grouped GEMMs"] + " (what Megatron-Core calls MoE's compute-efficiency wall: small "
                       "expert GEMMs and host overhead)")
        limit = min_tokens_setting(min_tokens_per_expert)
        compute.append(f"validated down to {limit:,.0f} tokens per expert and micro-batch: below that the step is "
                       "likely underestimated (NVIDIA's measured Qwen3-235B-A22B layouts on H100, "
                       "Megatron-MoE-ModelZoo: within 9 % at 4,096 tokens per expert, 12-7 % at 1,024-512 with host time charged), so "
                       "plans there carry a note and sweeps leave them out" if limit > 0 else
                       "no validated-range limit on tokens per expert (min_tokens_per_expert off): below 4,096 "
                       "tokens per expert the step is likely underestimated (NVIDIA's measured Qwen3-235B-A22B "
                       "layouts, Megatron-MoE-ModelZoo: 12-7 % short at 1,024-512)")
    return compute


def _ep_assumption(m, ranges, *, dispatcher, collective_efficiency, schedule, ep_overlap) -> str:
    """The expert-parallel all-to-alls' assumptions: dispatcher, link shares, overlap, expert TP."""
    return ("dispatch + combine all-to-alls, NVLink and network in parallel" +
            (f"; each token picks {m.routing_group_topk} of {m.routing_groups} expert groups (group-limited "
             f"routing: at most {m.routing_group_topk} nodes per token only where a group is a node)"
             if m.routing_groups else "") +
            (("; one network copy per remote node" if dispatcher in ("deepep", "hybridep") or m.routing_groups
              else "; every remote copy over the network" if dispatcher == "deepep-ll"
              else "; every EP rank gathers every token" if dispatcher == "allgather"
              else "; one network copy per remote expert (Megatron-Core's NCCL all-to-all)")
             + f", at the fixed {collective_efficiency:.0%} of each link" if collective_efficiency is not None else
             "; dispatcher " + ranges.get("dispatcher", "")) +
            ("; DualPipe hides them behind compute except their SMs" if schedule == "dualpipe" else
             "; the 1F1B all-to-all overlap hides the measured share of what the ideal overlap would (all but their "
             "SMs)" if ep_overlap else "; exposed")
            + "; with expert TP (ETP > 1) the received tokens (top-k copies of each dispatched token) are all-gathered "
            "over the ETP group after the dispatch and the expert outputs reduce-scattered before the combine "
            "(Megatron-Core MoEAlltoAllTokenDispatcher.dispatch_postprocess / combine_preprocess; DeepEP's flex "
            "dispatcher sends the same copies inside its all-to-all), forward and backward, "
            + (f"at the fixed {collective_efficiency:.0%} of each link" if collective_efficiency is not None else
               "at the dispatcher's measured share of each link (above)" if dispatcher in ("deepep", "hybridep")
               or m.routing_groups else
               f"at NCCL's measured {_coll.NVLINK_COLLECTIVE_EFFICIENCY:.0%} of NVLink (nccl-tests issue #212) and "
               f"{_coll.NETWORK_COLLECTIVE_EFFICIENCY:.0%} of the NIC (nccl-tests issue #290)")
            + "; counted in this term, exposed (Megatron-Core runs them in MoELayer.routed_experts_compute, beside the "
            "expert GEMMs, outside the dispatch and combine the all-to-all overlaps hide)")


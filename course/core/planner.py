"""3D-parallel training planner: step time, per-GPU memory, MFU and feasibility.

:func:`plan` evaluates one configuration (TP x PP x DP, micro-batching, ZeRO stage,
activation recomputation, sequence parallelism, pipeline schedule) of a
:class:`~course.core.catalog.Model` on a :class:`~course.core.catalog.Cluster`.
:func:`sweep` enumerates every configuration of a cluster and evaluates all of
them in one vectorized NumPy pass; :func:`evaluate` is the same pass on arrays the
caller builds (an instrument's 256-point curve).

The physics lives in the other core modules; this module only composes it:

- step FLOPs: Narayanan et al. 2021 (SC21), eq. 3, generalised to GQA / SwiGLU
  shapes and to the three recomputation modes (see :func:`iteration_flops`);
- compute time = FLOPs / (GPUs x dense peak x ``compute_efficiency``), the one
  calibrated constant (``DEFAULT_COMPUTE_EFFICIENCY``, from Megatron-LM Table 1);
- memory-bound time of the element-wise kernels (layer norm, dropout, GeLU,
  softmax) = bytes they move / HBM bandwidth (roofline: Williams et al. 2009),
  counting each activation byte of Korthikanti et al. 2022 as written once and
  read once per forward pass and twice that per backward pass;
- tensor-parallel all-reduces per layer and micro-batch:
  :func:`~course.core.tensor.tp_comm_time_per_layer` (Shoeybi et al. 2019: 2 in the
  forward, 2 in the backward pass, 2 more when the forward is recomputed), on NVLink
  inside a node and on the NIC when TP spans nodes;
- pipeline bubble: :func:`~course.core.pipeline.bubble_overhead` times the ideal
  pipeline time (Narayanan et al. 2021, section 2.2);
- pipeline point-to-point sends of ``b s h`` 16-bit activations, split over the TP
  group (Megatron's scatter/gather optimisation, section 4.1), ``v`` times with
  interleaving;
- data-parallel gradient all-reduce:
  :func:`~course.core.collectives.hierarchical_allreduce_time` over the DP group
  (DP peers inside a node first), 1.5x the volume for ZeRO-3 (Rajbhandari et al.
  2020, section 7), overlapped with the backward pass of the last micro-batch by
  :func:`~course.core.data_parallel.exposed_comm_time`;
- memory: :func:`~course.core.memory.model_state_breakdown` (ZeRO stages) and
  :func:`~course.core.memory.activation_bytes_per_layer` (Korthikanti et al. 2022)
  times the layers of a stage and
  :func:`~course.core.pipeline.in_flight_microbatches` of the schedule; with full
  recomputation one layer's activations are materialised again during its backward.

No made-up penalty terms (erratum 5 of the source material): step time is compute
+ memory-bound time + TP communication + bubble + point-to-point + exposed DP
all-reduce, each derived from FLOPs, bytes and bandwidths.

Simplifications (say so where students see a number): when PP does not divide the
layers, every stage runs as long as the fullest one; embeddings and the output
layer are spread evenly over stages (their activations and the logits are not in
the activation memory); the optimizer step, kernel launch and framework overheads
are inside ``compute_efficiency``; communication runs at the link's nominal
bandwidth.

Example (GPT-3 175B on 1,024 H100s)::

    >>> from course.core import catalog
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

from dataclasses import asdict, dataclass, field
from itertools import product
from typing import Optional

import numpy as np

from . import _validate as v
from . import catalog as _cat
from . import collectives as _coll
from . import data_parallel as _dp
from . import economics as _econ
from . import memory as _mem
from . import pipeline as _pipe
from . import tensor as _tp

__all__ = [
    "Plan", "SweepTable", "plan", "sweep", "evaluate", "iteration_flops",
    "DEFAULT_COMPUTE_EFFICIENCY", "RECOMPUTE_MODES", "SCHEDULES", "VIOLATION_CODES",
    "megatron_table1", "format_megatron_table1",
]

#: Share of dense peak that the matrix multiplications sustain, one number for every
#: configuration: the planner's single calibrated assumption. Fitted once on
#: Megatron-LM SC21 Table 1 (A100, 16-bit, full recomputation): with 0.62 every row's
#: predicted TFLOP/s per GPU lies within 5 % of the published one (the test allows
#: 15 %; tests/core/test_megatron_table1.py, ``python -m course.core.planner --megatron``).
DEFAULT_COMPUTE_EFFICIENCY = 0.62

RECOMPUTE_MODES = ("none", "selective", "full")
SCHEDULES = ("1f1b", "gpipe")

#: 16-bit (BF16/FP16) activations and gradients on the wire.
_WIRE_BYTES = 2.0
#: ZeRO-3 moves 1.5x the bytes of an all-reduce (weights gathered in forward and
#: backward, gradients reduce-scattered): Rajbhandari et al. 2020, section 7.2.
_ZERO3_VOLUME = 1.5

#: code -> what it means (the sentences in Plan.violations carry the numbers).
VIOLATION_CODES = {
    "gpus_mismatch": "TP x PP x DP must equal the number of GPUs",
    "tp_crosses_node": "tensor parallelism must stay inside one node",
    "heads_not_divisible": "attention heads must divide evenly over TP",
    "layers_not_divisible": "layers must divide evenly over PP x interleave",
    "batch_not_divisible": "global batch must be micro-batch x DP x micro-batches",
    "too_few_microbatches": "a pipeline needs at least as many micro-batches as stages",
    "interleave_needs_multiple": "the interleaved schedule needs micro-batches in multiples of PP",
    "zero_with_pipeline": "ZeRO-2/3 shard gradients that pipeline micro-batches still accumulate",
    "out_of_memory": "the per-GPU memory exceeds the accelerator's",
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
    et al. 2021).

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
    return v.scalar_or_array(B * _flops_per_sequence(m, recompute))


def _flops_per_sequence(m, recompute):
    s, h = m.seq_len, m.hidden
    attention = 4.0 * s * h
    fwd = 2.0 * m.layer_params + attention
    extra = {"none": 0.0, "selective": attention, "full": fwd}[recompute]
    return s * (m.layers * (3.0 * fwd + extra) + 6.0 * m.vocab * h)


# --------------------------------------------------------------------------- result types


@dataclass
class Plan:
    """One evaluated configuration. Times in seconds per iteration, memory in bytes per GPU.

    The step time is the sum of its parts: ``compute + memory_bound + tp_comm +
    bubble + pp_comm + dp_comm_exposed``; the memory total the sum of ``weights +
    gradients + optimizer + activations``.
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

    @property
    def feasible(self) -> bool:
        return not self.violations

    def as_dict(self) -> dict:
        d = asdict(self)
        d["feasible"] = self.feasible
        d["violations"] = [list(x) for x in self.violations]
        return d

    def breakdown(self) -> dict:
        """Step-time parts in seconds, in the order they add up."""
        return {"compute": self.compute, "memory_bound": self.memory_bound, "tp_comm": self.tp_comm, "bubble": self.bubble,
                "pp_comm": self.pp_comm, "dp_comm_exposed": self.dp_comm_exposed}

    def memory(self) -> dict:
        """Per-GPU memory parts in bytes."""
        return {"weights": self.weights, "gradients": self.gradients,
                "optimizer": self.optimizer, "activations": self.activations}


class SweepTable:
    """Columns of equal length (NumPy arrays) with a few table verbs.

    ``table["throughput"]``, ``len(table)``, ``table.sort_by("tokens_per_second")``,
    ``table.top(5)``, ``table.feasible_only()``, ``table.row(0)`` (a dict),
    ``table.to_pandas()``.
    """

    def __init__(self, columns: dict, meta: Optional[dict] = None):
        self.columns = {k: np.asarray(c) for k, c in columns.items()}
        lengths = {len(c) for c in self.columns.values()}
        if len(lengths) > 1:
            raise ValueError("columns must all have the same length")
        self.meta = dict(meta or {})

    def __len__(self):
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __getitem__(self, name):
        if name not in self.columns:
            raise ValueError(f"column must be one of {', '.join(self.columns)}; got {name!r}")
        return self.columns[name]

    def __repr__(self):
        return f"SweepTable({len(self)} rows: {', '.join(self.columns)})"

    def take(self, index) -> "SweepTable":
        return SweepTable({k: c[index] for k, c in self.columns.items()}, self.meta)

    def sort_by(self, column="tokens_per_second", descending=True) -> "SweepTable":
        key = self[column]
        order = np.argsort(-key if descending else key, kind="stable")
        return self.take(order)

    def top(self, k=10, column="tokens_per_second", feasible_only=True) -> "SweepTable":
        t = self.feasible_only() if feasible_only else self
        return t.sort_by(column).take(slice(0, k))

    def feasible_only(self) -> "SweepTable":
        return self.take(self.columns["feasible"])

    def row(self, i) -> dict:
        return {k: c[i].item() if hasattr(c[i], "item") else c[i] for k, c in self.columns.items()}

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self.columns)


# --------------------------------------------------------------------------- the vectorized pass


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


def _by_mode(recompute_code, fn):
    """Evaluate ``fn(mode)`` for each recompute mode present and pick per element."""
    first = int(recompute_code.flat[0]) if recompute_code.size else 0
    if np.all(recompute_code == first):  # one mode everywhere: no selection needed
        return np.broadcast_to(np.asarray(fn(RECOMPUTE_MODES[first]), dtype=float), recompute_code.shape)
    out = None
    for code, mode in enumerate(RECOMPUTE_MODES):
        mask = recompute_code == code
        if not np.any(mask):
            continue
        val = np.broadcast_to(np.asarray(fn(mode), dtype=float), recompute_code.shape)
        out = np.where(mask, val, 0.0) if out is None else np.where(mask, val, out)
    return out


def evaluate(model, cluster, tp, pp, dp, micro_batch=1, num_microbatches=4, zero_stage=0,
             recompute="none", sequence_parallel=False, schedule="1f1b", interleave=1,
             overlap=True, compute_efficiency=DEFAULT_COMPUTE_EFFICIENCY, precision="bf16",
             fused_attention=False):
    """Evaluate configurations given as broadcastable arrays, in one vectorized pass.

    ``tp, pp, dp, micro_batch, num_microbatches, zero_stage, interleave`` and
    ``sequence_parallel`` broadcast against each other; ``recompute`` is a mode name or
    an integer array of indices into ``RECOMPUTE_MODES``. Returns a dict of NumPy
    columns (the fields of :class:`Plan` plus one boolean column per violation code,
    ``viol_<code>``, and ``feasible``). :func:`plan` and :func:`sweep` are built on it.

    Parameters
    ----------
    model : Model or str
        A transformer of :mod:`course.core.catalog`.
    cluster : Cluster or str
        A cluster of :mod:`course.core.catalog`.
    tp, pp, dp, micro_batch, num_microbatches, interleave : int or array of int, >= 1
        Parallel degrees, sequences per micro-batch, micro-batches per step, chunks per stage.
    zero_stage : int or array of int in 0..3
    recompute : str or array of int
        A mode of ``RECOMPUTE_MODES`` or indices into it.
    sequence_parallel : bool or array of bool
    schedule, overlap, compute_efficiency, precision, fused_attention
        As in :func:`plan`.

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
    m, c = _as_model(model), _as_cluster(cluster)
    v.choice("schedule", schedule, SCHEDULES)
    eff = float(v.fraction("compute_efficiency", compute_efficiency, low_open=True))
    peak = c.accelerator.peak(precision)
    tp = v.integer("tp", tp)
    pp = v.integer("pp", pp)
    dp = v.integer("dp", dp)
    b = v.integer("micro_batch", micro_batch)
    nmb = v.integer("num_microbatches", num_microbatches)
    zero = v.integer("zero_stage", zero_stage, minimum=0)
    if np.any(zero > 3):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3; got {zero_stage!r}")
    vchunks = v.integer("interleave", interleave)
    if np.any(vchunks > 1) and schedule != "1f1b":
        raise ValueError("interleave > 1 needs schedule='1f1b' (the interleaved 1F1B schedule)")
    sp = np.asarray(sequence_parallel, dtype=bool)
    if isinstance(recompute, str):
        rc = np.asarray(RECOMPUTE_MODES.index(v.choice("recompute", recompute, RECOMPUTE_MODES)))
    else:
        rc = v.integer("recompute", recompute, minimum=0)
        if np.any(rc >= len(RECOMPUTE_MODES)):
            raise ValueError(f"recompute codes must index {RECOMPUTE_MODES}; got {recompute!r}")
    tp, pp, dp, b, nmb, zero, vchunks, sp, rc = np.broadcast_arrays(tp, pp, dp, b, nmb, zero, vchunks, sp, rc)

    s, h, L, heads = m.seq_len, m.hidden, m.layers, m.heads
    gpus = tp * pp * dp
    gb = b * nmb * dp
    g_node = c.gpus_per_node
    # the busiest stage holds ceil(L / pp) layers; with uneven splits the others wait for it
    layers_stage = np.asarray(_pipe.max_layers_per_stage(L, pp)).astype(np.int64)
    imbalance = layers_stage * pp / L

    # ---- compute
    flops = gb * _by_mode(rc, lambda mode: _flops_per_sequence(m, mode))
    compute = flops / (gpus * peak * eff) * imbalance

    # ---- memory-bound operations (layer norm, dropout, GeLU, softmax...): each activation
    # byte that Korthikanti et al. count is written once and read once by such a kernel in a
    # forward pass; a backward pass moves twice that; full recompute repeats the forward
    act_cache = {}

    def act(mode):
        """Korthikanti bytes per layer for ``mode``, with or without SP per element (cached)."""
        if mode not in act_cache:
            per_flag = {flag: _mem.activation_bytes_per_layer(s, b, h, heads, tp, flag, mode)
                        for flag in (False, True) if np.any(sp == flag)}
            act_cache[mode] = (np.where(sp, per_flag[True], per_flag[False]) if len(per_flag) == 2
                               else np.broadcast_to(next(iter(per_flag.values())), sp.shape))
        return act_cache[mode]

    # a fused attention kernel (FlashAttention) never writes the s x s scores to memory
    stored = act("selective") if fused_attention else act("none")
    score_bytes = act("none") - act("selective") if np.any(rc == 1) and not fused_attention else 0.0
    traffic = np.select([rc == 2, rc == 1], [8.0 * stored, 6.0 * stored + 2.0 * score_bytes], 6.0 * stored)
    memory_bound = nmb * layers_stage * traffic / c.accelerator.memory_bandwidth

    # ---- tensor parallel: 4 all-reduces of b*s*h per layer and micro-batch, 6 with full recompute
    tp_in_node = tp <= g_node
    tp_bw = np.where(tp_in_node, c.intra_bandwidth, c.inter_bandwidth)
    tp_lat = np.where(tp_in_node, c.intra_latency, c.inter_latency)
    tp_layer = _by_mode(rc, lambda mode: _tp.tp_comm_time_per_layer(
        s, b, h, tp, tp_bw, tp_lat, _WIRE_BYTES, recompute=mode))
    tp_comm = nmb * layers_stage * tp_layer

    # ---- pipeline bubble and point-to-point
    busy = compute + memory_bound + tp_comm
    bubble = _pipe.bubble_overhead(pp, nmb, vchunks) * busy
    # pipeline neighbours are tp*dp ranks apart (ranks ordered TP, then DP, then PP); with
    # more than one node some stage boundary crosses the network (every boundary does when
    # tp*dp >= g_node), and every micro-batch must cross the slowest boundary
    p2p_in_node = gpus <= g_node
    p2p_bw = np.where(p2p_in_node, c.intra_bandwidth, c.inter_bandwidth)
    p2p_lat = np.where(p2p_in_node, c.intra_latency, c.inter_latency)
    if np.any(pp > 1):
        send = _coll.point_to_point_time(_pipe.p2p_bytes_per_microbatch(s, b, h, _WIRE_BYTES) / tp,
                                         p2p_bw, p2p_lat)
        pp_comm = np.where(pp > 1, 2 * vchunks * nmb * send, 0.0)
    else:
        pp_comm = np.zeros(gpus.shape)

    # ---- data parallel gradient all-reduce (16-bit gradients of this GPU's shard)
    params_gpu = m.params / (tp * pp)
    volume = np.where(zero == 3, _ZERO3_VOLUME, 1.0) * params_gpu * _WIRE_BYTES
    dp_local = np.where(tp_in_node, np.gcd(np.maximum(g_node // tp, 1), dp), 1)
    dp_nodes = dp // dp_local
    dp_comm = _coll.hierarchical_allreduce_time(volume, dp_local, dp_nodes, c.intra_bandwidth,
                                                c.inter_bandwidth, c.intra_latency, c.inter_latency)
    # backward share of one micro-batch's compute: 2f / (3f + r)
    bwd_share = _by_mode(rc, lambda mode: {"none": 2 / 3, "selective": 2 / 3, "full": 3 / 4}[mode])
    last_backward = busy / nmb * bwd_share
    if overlap:
        dp_exposed = np.where(dp_comm > 0, _dp.exposed_comm_time(last_backward, dp_comm, layers_stage), 0.0)
    else:
        dp_exposed = dp_comm

    step = compute + memory_bound + tp_comm + bubble + pp_comm + dp_exposed

    # ---- memory per GPU
    parts = _mem.model_state_breakdown(params_gpu, zero, dp)
    state, weights, grads, optimizer = (np.broadcast_to(parts[k], gpus.shape) for k in
                                        ("total", "weights", "gradients", "optimizer"))
    act_layer = _by_mode(rc, act)
    in_flight = _pipe.in_flight_microbatches(pp, nmb, schedule, 1)
    if np.any(vchunks > 1):
        in_flight = np.where(vchunks > 1, _pipe.in_flight_microbatches(pp, nmb, "interleaved", vchunks),
                             in_flight)
    activations = act_layer * layers_stage * in_flight
    # full recomputation still materialises one layer's activations during its backward
    if np.any(rc == 2):
        activations = activations + np.where(rc == 2, act("none"), 0.0)
    memory = state + activations
    capacity = c.accelerator.memory_bytes

    # ---- rates
    tokens = gb * s
    model_flops = np.broadcast_to(_econ.training_flops(m.params, tokens), gpus.shape)
    cols = dict(
        gpus=gpus, tp=tp, pp=pp, dp=dp, micro_batch=b, num_microbatches=nmb, global_batch=gb,
        zero_stage=zero, recompute_code=rc, sequence_parallel=sp, interleave=vchunks,
        compute=compute, memory_bound=memory_bound, tp_comm=tp_comm, bubble=bubble, pp_comm=pp_comm, dp_comm=dp_comm,
        dp_comm_exposed=dp_exposed, step_time=step,
        weights=weights, gradients=grads, optimizer=optimizer, activations=activations,
        memory_total=memory, memory_capacity=np.full(gpus.shape, capacity),
        flops_per_iteration=flops, model_flops=model_flops,
        achieved_flops_per_gpu=flops / (step * gpus),
        mfu=_dp.mfu(model_flops, step, peak, gpus),
        tokens_per_second=tokens / step, samples_per_second=gb / step,
        scaling_efficiency=compute / step,
        bubble_fraction=bubble / step,
    )

    # ---- feasibility, one boolean column per code
    viol = {
        "gpus_mismatch": gpus != c.gpus,
        "tp_crosses_node": (tp > g_node) | (g_node % np.minimum(tp, g_node) != 0),
        "heads_not_divisible": heads % tp != 0,
        "layers_not_divisible": L % (pp * vchunks) != 0,
        "batch_not_divisible": np.zeros(gpus.shape, bool),
        "too_few_microbatches": (pp > 1) & (nmb < pp),
        "interleave_needs_multiple": (vchunks > 1) & (nmb % pp != 0),
        "zero_with_pipeline": (pp > 1) & (zero >= 2),
        "out_of_memory": memory > capacity,
    }
    feasible = np.ones(gpus.shape, bool)
    for code, mask in viol.items():
        cols["viol_" + code] = mask
        feasible &= ~mask
    cols["feasible"] = feasible
    return cols


# --------------------------------------------------------------------------- plan


def _sentences(cols, i, m, c, requested_batch):
    """Student-facing sentences for the violations of row ``i``."""
    g = lambda k: cols[k][i].item()  # noqa: E731
    tp, pp, dp, b, nmb, v_ = g("tp"), g("pp"), g("dp"), g("micro_batch"), g("num_microbatches"), g("interleave")
    out = []
    if g("viol_gpus_mismatch"):
        out.append(("gpus_mismatch",
                    f"TP x PP x DP = {tp} x {pp} x {dp} = {tp * pp * dp} GPUs, but {c.name} has "
                    f"{c.gpus}: every GPU needs exactly one (TP, PP, DP) position."))
    if g("viol_tp_crosses_node"):
        out.append(("tp_crosses_node",
                    f"TP = {tp} spans more than one {c.gpus_per_node}-GPU node: its all-reduces after "
                    f"every layer would leave NVLink ({c.intra_bandwidth / 1e9:.0f} GB/s) for the "
                    f"network ({c.inter_bandwidth / 1e9:.1f} GB/s per GPU). Keep TP <= "
                    f"{c.gpus_per_node} and dividing it."))
    if g("viol_heads_not_divisible"):
        out.append(("heads_not_divisible",
                    f"TP = {tp} cannot split {m.heads} attention heads evenly: each GPU must hold "
                    f"whole heads."))
    if g("viol_layers_not_divisible"):
        stages = pp * v_
        out.append(("layers_not_divisible",
                    f"The {m.layers} layers do not split evenly into PP x interleave = {stages} stages: "
                    f"the busiest stage gets {-(-m.layers // stages)} layers and the others wait for it."))
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
    if g("viol_zero_with_pipeline"):
        out.append(("zero_with_pipeline",
                    f"ZeRO stage {g('zero_stage')} shards gradients, but with PP = {pp} every "
                    f"micro-batch adds to the full gradients of its stage; use ZeRO-1 with pipelines "
                    f"(as Megatron-LM and DeepSpeed do)."))
    if g("viol_out_of_memory"):
        gbs = lambda k: g(k) / 1e9  # noqa: E731
        out.append(("out_of_memory",
                    f"Out of memory: {gbs('memory_total'):.1f} GB per GPU needed (weights "
                    f"{gbs('weights'):.1f} + gradients {gbs('gradients'):.1f} + optimizer "
                    f"{gbs('optimizer'):.1f} + activations {gbs('activations'):.1f}) but a "
                    f"{c.accelerator.name} has {gbs('memory_capacity'):.0f} GB."))
    return out


def plan(model, cluster, tp, pp, dp, micro_batch=1, global_batch=None, num_microbatches=None,
         zero_stage=0, recompute="none", sequence_parallel=False, overlap=True, schedule="1f1b",
         interleave=1, compute_efficiency=DEFAULT_COMPUTE_EFFICIENCY, precision="bf16",
         fused_attention=False) -> Plan:
    """Plan one 3D-parallel configuration: step-time and memory breakdown, MFU, feasibility.

    Parameters
    ----------
    model : Model or str
        A transformer of :mod:`course.core.catalog` (``"llama3-70b"``...).
    cluster : Cluster or str
        ``"h100-1024"``, or :func:`~course.core.catalog.make_cluster`.
    tp, pp, dp : int >= 1
        Tensor-, pipeline- and data-parallel degrees.
    micro_batch : int >= 1
        Sequences per micro-batch ``b``.
    global_batch, num_microbatches : int >= 1, optional
        Sequences per iteration ``B`` and micro-batches per pipeline ``m``, with
        ``B = b * dp * m``. Give either; with neither, ``m = 4 * pp`` (bubble overhead
        below 25 %). A ``global_batch`` that ``b * dp`` does not divide is rounded down
        and reported as ``batch_not_divisible``.
    zero_stage : {0, 1, 2, 3}
    recompute : {"none", "selective", "full"}
    sequence_parallel : bool
    overlap : bool
        Overlap the DP all-reduce with the last micro-batch's backward pass
        (bucketed, one bucket per layer).
    schedule : {"1f1b", "gpipe"}
        Same bubble; 1F1B keeps at most ``pp`` micro-batches in flight, GPipe all ``m``.
    interleave : int >= 1
        Model chunks per GPU ``v`` (interleaved 1F1B): bubble / v, point-to-point x v.
    compute_efficiency : float in (0, 1]
        Share of dense peak sustained by the computation (see
        ``DEFAULT_COMPUTE_EFFICIENCY``).
    precision : str
        Peak-FLOP/s key of the accelerator.
    fused_attention : bool
        A fused attention kernel (FlashAttention) keeps the ``s x s`` scores out of
        HBM, so the memory-bound time leaves them out (activation *memory* still
        follows Korthikanti et al.'s table for the chosen ``recompute``).

    Returns
    -------
    Plan
        Seconds per iteration, bytes per GPU, FLOP/s, tokens/s; ``violations`` is a list of
        ``(code, sentence)``; ``feasible`` is True when it is empty.

    Source: Narayanan et al. 2021 (SC21); Korthikanti et al. 2022; Rajbhandari et al.
    2020; Thakur et al. 2005 (the module docstring maps each term to its source).

    Examples
    --------
    >>> p = plan("llama3-70b", "research-256", tp=8, pp=4, dp=8, num_microbatches=16,
    ...          recompute="full")
    >>> total = p.compute + p.memory_bound + p.tp_comm + p.bubble + p.pp_comm + p.dp_comm_exposed
    >>> abs(total - p.step_time) < 1e-12 * p.step_time
    True
    """
    m, c = _as_model(model), _as_cluster(cluster)
    for name, val in (("tp", tp), ("pp", pp), ("dp", dp), ("micro_batch", micro_batch)):
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
    cols = evaluate(m, c, tp, pp, dp, micro_batch, nmb, zero_stage, recompute, sequence_parallel,
                    schedule, interleave, overlap, compute_efficiency, precision, fused_attention)
    cols = {k: np.reshape(a, (1,)) for k, a in cols.items()}
    violations = _sentences(cols, 0, m, c, requested)
    f = lambda k: cols[k][0].item()  # noqa: E731
    return Plan(
        model=m.name, cluster=c.name, gpus=c.gpus, tp=tp, pp=pp, dp=dp, micro_batch=micro_batch,
        num_microbatches=nmb, global_batch=int(f("global_batch")), zero_stage=int(zero_stage),
        recompute=recompute, sequence_parallel=bool(sequence_parallel), schedule=schedule,
        interleave=int(interleave), overlap=bool(overlap), compute_efficiency=float(compute_efficiency),
        compute=f("compute"), memory_bound=f("memory_bound"), tp_comm=f("tp_comm"), bubble=f("bubble"), pp_comm=f("pp_comm"),
        dp_comm=f("dp_comm"), dp_comm_exposed=f("dp_comm_exposed"), step_time=f("step_time"),
        weights=f("weights"), gradients=f("gradients"), optimizer=f("optimizer"),
        activations=f("activations"), memory_total=f("memory_total"),
        memory_capacity=f("memory_capacity"), flops_per_iteration=f("flops_per_iteration"),
        model_flops=f("model_flops"), achieved_flops_per_gpu=f("achieved_flops_per_gpu"),
        mfu=f("mfu"), tokens_per_second=f("tokens_per_second"),
        samples_per_second=f("samples_per_second"), scaling_efficiency=f("scaling_efficiency"),
        bubble_fraction=f("bubble_fraction"), violations=violations,
    )


# --------------------------------------------------------------------------- sweep


def _divisors(n, up_to=None):
    """Divisors of ``n`` that are <= ``up_to`` (all of them by default), ascending."""
    limit = n if up_to is None else min(n, up_to)
    return [d for d in range(1, limit + 1) if n % d == 0]


def sweep(model, cluster, tp=None, pp=None, micro_batches=(1, 2, 4, 8), global_batch=None,
          zero_stages=(0, 1, 2, 3), recompute=RECOMPUTE_MODES, sequence_parallel=(False, True),
          interleave=(1,), schedule="1f1b", overlap=True,
          compute_efficiency=DEFAULT_COMPUTE_EFFICIENCY, precision="bf16",
          fused_attention=False, include_infeasible=False) -> SweepTable:
    """Every configuration of ``cluster`` for ``model``, evaluated in one vectorized pass.

    Enumerates TP (default: divisors of the GPUs per node), PP (default: divisors of
    GPUs / TP up to the layer count), DP = GPUs / (TP x PP), micro-batch sizes, ZeRO
    stages, recompute modes, sequence parallelism and interleaving, for a fixed
    ``global_batch`` (default: the Llama 3 batch of about 16M tokens, ``2**24 //
    seq_len`` sequences; Dubey et al. 2024, section 3.4). Combinations whose micro-batch
    x DP does not divide the global batch are skipped (they are not configurations).

    Parameters
    ----------
    model, cluster
        As in :func:`plan`.
    tp, pp : sequence of int, optional
        Degrees to try (defaults above).
    micro_batches, zero_stages, recompute, sequence_parallel, interleave : sequence
        Values to try for each setting.
    global_batch : int, optional
        Sequences per iteration, ``>= 1``.
    schedule, overlap, compute_efficiency, precision, fused_attention
        As in :func:`plan`, one value for the whole sweep.
    include_infeasible : bool, optional
        Keep rows with violations.

    Source: as :func:`plan`; Dubey et al. 2024, sec. 3.4 (the default batch).

    Returns
    -------
    SweepTable
        One row per configuration, with every :class:`Plan` number, a ``recompute``
        column of mode names, ``violations`` (``;``-joined codes) and ``feasible``.
        Only feasible rows unless ``include_infeasible``; sorted by tokens/s.

    Examples
    --------
    >>> t = sweep("llama3-70b", "research-256", zero_stages=(1,), recompute=("full",),
    ...           sequence_parallel=(True,))
    >>> best = t.row(0)
    >>> best["tp"] * best["pp"] * best["dp"]
    256
    """
    m, c = _as_model(model), _as_cluster(cluster)
    n = c.gpus
    B = int(v.integer("global_batch", global_batch if global_batch is not None else max(1, 2**24 // m.seq_len)))
    tps = list(tp) if tp is not None else _divisors(c.gpus_per_node)
    for r in recompute:
        v.choice("recompute", r, RECOMPUTE_MODES)
    rows = []
    for t in tps:
        if n % t:
            continue
        pps = list(pp) if pp is not None else _divisors(n // t, up_to=m.layers)
        for p in pps:
            if (n // t) % p:
                continue
            d = n // (t * p)
            for b in micro_batches:
                if B % (b * d):
                    continue
                rows.append((t, p, d, b, B // (b * d)))
    if not rows:
        raise ValueError(f"global_batch = {B} admits no configuration of {n} GPUs with micro-batches "
                         f"{tuple(micro_batches)}")
    base = np.array(rows, dtype=np.int64)
    extra = np.array(list(product(zero_stages, range(len(recompute)), sequence_parallel, interleave)),
                     dtype=np.int64)
    rc_codes = np.array([RECOMPUTE_MODES.index(r) for r in recompute])
    grid_b = np.repeat(base, len(extra), axis=0)
    grid_e = np.tile(extra, (len(base), 1))
    cols = evaluate(m, c, grid_b[:, 0], grid_b[:, 1], grid_b[:, 2], grid_b[:, 3], grid_b[:, 4],
                    grid_e[:, 0], rc_codes[grid_e[:, 1]], grid_e[:, 2].astype(bool), schedule,
                    grid_e[:, 3], overlap, compute_efficiency, precision, fused_attention)
    codes = [k[5:] for k in cols if k.startswith("viol_")]
    reasons = np.full(len(grid_b), "", dtype=object)
    for code in codes:
        mask = cols["viol_" + code]
        reasons[mask] = reasons[mask] + np.where(reasons[mask] == "", "", ";") + code
    cols["violations"] = reasons
    cols["recompute"] = np.array(RECOMPUTE_MODES, dtype=object)[cols["recompute_code"]]
    table = SweepTable(cols, meta={"model": m.name, "cluster": c.name, "global_batch": B})
    if not include_infeasible:
        table = table.feasible_only()
    return table.sort_by("tokens_per_second")


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
                 recompute="full", overlap=False, interleave=chunks,
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
    Megatron-LM SC21 Table 1 (A100 80GB, 312 TFLOPS) vs course.core.planner, compute_efficiency = 0.62
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

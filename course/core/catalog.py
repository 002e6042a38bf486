"""Catalog of accelerators, links, models, nodes and clusters, each value with its source.

All numbers are SI (FLOP/s, bytes, bytes/s, seconds, watts); see
:mod:`course.core.units`. Peak FLOP/s are *dense* (no 2:4 sparsity) unless a key
says otherwise: the sparse "headline" numbers of data sheets are twice the dense
ones, and using them for MFU is erratum 1 of the source material (1979 vs 989
TFLOPS on H100). Link bandwidths are bytes per second *per direction* of one
port or one GPU's share of a fabric (erratum 2: InfiniBand HDR is 200 Gbit/s =
25 GB/s, not 400 GB/s).

Latencies are one-way, small-message alpha terms for the alpha-beta (Hockney)
model. Vendors do not publish them as one number, so they are order-of-magnitude
assumptions and say so in their source.

Look entries up by name (case, spaces, dashes and underscores do not matter)::

    >>> accelerator("H100").peak("bf16") / 1e12
    989.0
    >>> link("ib-hdr").bandwidth / 1e9
    25.0
    >>> model("llama3-70b").layers
    80
    >>> cluster("h100-1024").gpus
    1024
"""

from __future__ import annotations

import functools
import math
import types
from dataclasses import dataclass, field, replace
from typing import Mapping, Optional

from . import moe as _moe
from . import tensor as _tensor
from . import units as u

__all__ = [
    "Accelerator", "Link", "Model", "Node", "Cluster", "Track",
    "ACCELERATORS", "LINKS", "MODELS", "NODES", "CLUSTERS", "TRACKS", "MEGATRON_TABLE1",
    "accelerator", "link", "model", "node", "cluster", "track", "make_cluster",
]


# --------------------------------------------------------------------------- types


@dataclass(frozen=True)
class Accelerator:
    """One accelerator (GPU, NPU, MCU).

    ``peak_flops`` maps a precision name (``"fp64"``, ``"fp32"``, ``"tf32"``,
    ``"bf16"``, ``"fp16"``, ``"fp8"``, ``"int8"``) to dense peak FLOP/s (OP/s for
    integer formats). Memory is stated once, one way: ``memory_bytes`` is the device memory a
    process sees (what NVML/CUDA report where that is known, else the data sheet's bytes), in
    bytes, shown in GB = 10⁹ bytes everywhere (the planner's out-of-memory line,
    :attr:`memory_capacity`); ``memory_marketed_gb`` is the number in the vendor's name for it
    where that differs (the "80" of "H100 80GB", which is 85.5 GB), explained where it first
    appears (:attr:`memory_name`). ``usable_memory_bytes`` is an older spelling kept for entries
    that still use it (leave it ``None``). ``memory_bandwidth`` in
    bytes/s, ``tdp_watts`` the board power limit, ``price_per_hour`` US dollars per
    device-hour where a public list price exists (else ``None``). ``attention_efficiency`` is
    the share of the dense 16-bit peak a fused causal attention kernel sustains, where it is
    measured and differs from the GEMMs' (else ``None``: the planner's ``compute_efficiency``;
    :func:`~course.core.layer_cost.attention_kernel_extra_time`). ``matmul_ceilings`` the measured
    share of each precision's peak the best-shaped BF16 GEMM reaches and ``sms`` the streaming multiprocessors
    (:mod:`course.core.gemm` prices a GEMM from its shape with them).
    """

    name: str
    peak_flops: Mapping[str, float] = field(hash=False)
    memory_bytes: float
    memory_bandwidth: float
    tdp_watts: float
    source: str
    price_per_hour: Optional[float] = None
    price_source: str = ""
    notes: str = ""
    usable_memory_bytes: Optional[float] = None
    attention_efficiency: Optional[float] = None
    memory_marketed_gb: Optional[float] = None
    #: precision -> measured share of its dense peak the best-shaped GEMM reaches (the "maximum achievable
    #: matmul FLOPS", MAMF), where one is published; empty: not measured (:func:`~course.core.gemm.matmul_ceiling`
    #: then takes the H100's BF16 one)
    matmul_ceilings: Mapping[str, float] = field(default_factory=dict, hash=False)
    #: streaming multiprocessors (the wave size of a GEMM's output tiles; 0 where not a GPU)
    sms: int = 0
    #: precision -> (low, high) dense peak FLOP/s where the sustained clock is not published (a power-capped
    #: part): the planner's range spans it (:func:`~course.core.plan_terms.range_terms`); empty: the data sheet's
    peak_range: Mapping[str, tuple] = field(default_factory=dict, hash=False)
    #: where ``peak_range`` comes from
    peak_range_source: str = ""

    def __post_init__(self):
        object.__setattr__(self, "peak_flops", types.MappingProxyType(dict(self.peak_flops)))
        object.__setattr__(self, "matmul_ceilings", types.MappingProxyType(dict(self.matmul_ceilings)))
        object.__setattr__(self, "peak_range", types.MappingProxyType(dict(self.peak_range)))

    @property
    def memory_capacity(self) -> float:
        """Bytes a training process can allocate: ``usable_memory_bytes`` where known, else ``memory_bytes``.

        >>> round(accelerator("H100").memory_capacity / 1e9, 2), accelerator("H100").memory_marketed_gb
        (85.52, 80.0)
        """
        return float(self.usable_memory_bytes if self.usable_memory_bytes is not None else self.memory_bytes)

    @property
    def memory_name(self) -> str:
        """The capacity in the course's one convention, with the vendor's name for it explained once.

        >>> accelerator("H100").memory_name
        '85.5 GB (sold as "80 GB"; NVML reports 81,559 MiB = 85.5 GB, with GB = 10⁹ bytes)'
        >>> accelerator("B200").memory_name
        '180 GB'
        """
        gb = self.memory_capacity / 1e9
        if self.memory_marketed_gb is None or math.isclose(self.memory_marketed_gb, gb, rel_tol=5e-3):
            return f"{gb:.3g} GB"
        return (f'{gb:.3g} GB (sold as "{self.memory_marketed_gb:g} GB"; NVML reports '
                f"{self.memory_capacity / 2**20:,.0f} MiB = {gb:.3g} GB, with GB = 10⁹ bytes)")

    def peak(self, precision: str = "bf16") -> float:
        """Dense peak FLOP/s for ``precision``; ValueError listing the known ones."""
        if precision not in self.peak_flops:
            known = ", ".join(sorted(self.peak_flops))
            raise ValueError(f"precision must be one of {known} for {self.name}; got {precision!r}")
        return self.peak_flops[precision]


@dataclass(frozen=True)
class Link:
    """A point-to-point link or fabric port: ``bandwidth`` bytes/s per direction,
    ``latency`` one-way seconds."""

    name: str
    bandwidth: float
    latency: float
    source: str


@dataclass(frozen=True)
class Model:
    """A model. Transformer shape fields are ``None`` for non-transformers.

    ``params`` parameters, ``layers`` transformer blocks, ``hidden`` model width,
    ``heads`` attention heads, ``kv_heads`` key/value heads (GQA), ``ffn`` MLP
    inner width, ``vocab`` vocabulary size, ``seq_len`` training sequence length,
    ``mlp_matrices`` weight matrices of the MLP (2 for GELU, 3 for SwiGLU).
    """

    name: str
    params: float
    source: str
    layers: Optional[int] = None
    hidden: Optional[int] = None
    heads: Optional[int] = None
    kv_heads: Optional[int] = None
    ffn: Optional[int] = None
    vocab: Optional[int] = None
    seq_len: Optional[int] = None
    mlp_matrices: int = 2
    # dropout layers in the block (GPT-3, BLOOM); Llama, Mixtral, Qwen2 and DeepSeek-V3 train without
    # (their released config.json files set attention_dropout 0.0 and have no hidden dropout)
    dropout: bool = True
    # mixture of experts (0 = dense): routed experts, experts per token, their inner width,
    # shared experts and their width (default expert_ffn), leading dense layers (inner width ffn)
    experts: int = 0
    top_k: int = 0
    expert_ffn: int = 0
    shared_experts: int = 0
    shared_ffn: int = 0
    dense_layers: int = 0
    # group-limited routing: experts split into this many equal groups, each token picks its experts from
    # ``routing_group_topk`` of them (0: no limit); DeepSeek-V3's "node-limited routing" where a group is a node
    routing_groups: int = 0
    routing_group_topk: int = 0
    # attention that is not plain multi-head / GQA (DeepSeek's MLA): weights per layer, and the
    # width ``heads x (d_qk + d_v) / 2`` that replaces ``h`` in the ``4 s h`` score FLOPs
    attention_params: Optional[float] = None
    attention_width: Optional[int] = None
    # width of one attention head where the model card gives it (Qwen3: 128 with 64 heads on a 4,096-wide
    # model, so queries are 8,192 wide); ``None``: ``hidden // heads``
    head_size: Optional[int] = None
    # multi-head latent attention (DeepSeek-V2/V3): (query latent, key/value latent, decoupled RoPE width,
    # value head width); empty for other attention
    mla: tuple = ()

    @property
    def is_transformer(self) -> bool:
        return None not in (self.layers, self.hidden, self.heads, self.seq_len)

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def moe_layers(self) -> int:
        """Transformer blocks whose MLP is a mixture of experts (0 for a dense model)."""
        return self.layers - self.dense_layers if self.is_moe else 0

    @functools.cached_property  # pure in the frozen fields; the planner reads it in every term
    def attention_layer_params(self) -> float:
        """Weights of one attention block (``attention_params`` when given, else Q, K, V, O)."""
        if self.attention_params is not None:
            return float(self.attention_params)
        if self.head_size is not None:  # Q and O of heads x head_dim, K and V of kv_heads x head_dim
            return float(2 * self.hidden * self.head_dim * (self.heads + (self.kv_heads or self.heads)))
        return float(_tensor.transformer_layer_params(self.hidden, self.ffn or self.hidden, False,
                                                      self.heads, self.kv_heads or self.heads)
                     - 2.0 * self.hidden * (self.ffn or self.hidden))

    @property
    def score_width(self) -> int:
        """``h`` of the ``4 s h`` attention-score FLOPs: ``attention_width`` for MLA, else ``heads x head_dim``."""
        return self.attention_width or self.heads * self.head_dim

    @functools.cached_property  # pure in the frozen fields; the planner reads it in every term
    def routed_expert_params(self) -> float:
        """Weights of every routed expert of every MoE layer: what EP shards."""
        if not self.is_moe:
            return 0.0
        return float(self.moe_layers * self.experts * _moe.expert_params(self.hidden, self.expert_ffn,
                                                                          self.mlp_matrices))

    @functools.cached_property  # pure in the frozen fields; the planner reads it in every term
    def active_params(self) -> float:
        """Weights a token passes through (``params`` for a dense model): the ``N`` of ``6N``."""
        if not self.is_moe:
            return float(self.params)
        return float(self.params - self.routed_expert_params * (1.0 - self.top_k / self.experts))

    @functools.cached_property  # pure in the frozen fields; the planner reads it in every term
    def active_layer_params(self) -> float:
        """Weights a token passes through in an average block (``layer_params`` when dense)."""
        if not self.is_moe:
            return float(self.layer_params)
        _, active_mlp = _moe.moe_mlp_params(self.hidden, self.expert_ffn, self.experts, self.top_k,
                                            self.shared_experts, self.shared_ffn or None, self.mlp_matrices)
        dense_mlp = self.mlp_matrices * self.hidden * self.ffn
        att = self.attention_layer_params
        return float(att + (self.dense_layers * dense_mlp + self.moe_layers * active_mlp) / self.layers)

    @property
    def head_dim(self) -> int:
        """Width of one attention head: ``head_size`` where the model card gives it, else ``hidden // heads``."""
        return self.head_size or self.hidden // self.heads

    @functools.cached_property  # pure in the frozen fields; the planner reads it in every term
    def layer_params(self) -> int:
        """Weights of one transformer block, biases and norms left out:
        ``2 h^2`` (query, output) + ``2 h d_kv`` (key, value; ``d_kv = kv_heads * h / heads``)
        + ``mlp_matrices * h * ffn`` (2 for a GELU MLP, 3 for SwiGLU). GPT-3 shapes give
        ``12 h^2`` (Narayanan et al. 2021, eq. 2)."""
        return _tensor.transformer_layer_params(self.hidden, self.ffn, self.mlp_matrices == 3,
                                                self.heads, self.kv_heads or self.heads)


@dataclass(frozen=True)
class Node:
    """A server: ``gpus_per_node`` accelerators joined by ``intra_link`` (per GPU,
    per direction), with ``nics`` network ports of type ``inter_link``.

    ``nvlink_domain`` is how many GPUs one NVLink switch fabric joins: the node's own
    ``gpus_per_node`` in a DGX/HGX server (``None``), 72 for a GB200 / GB300 NVL72 rack, whose
    compute trays (the "nodes", 4 GPUs each) share nine NVLink switch trays. The fast domain
    that TP, CP and EP must stay inside is this domain, not the node.
    """

    name: str
    accelerator: Accelerator
    gpus_per_node: int
    intra_link: Link
    nics: int
    inter_link: Link
    source: str
    nvlink_domain: Optional[int] = None

    @property
    def domain_gpus(self) -> int:
        """GPUs one NVLink fabric joins (``nvlink_domain``, else ``gpus_per_node``)."""
        return int(self.nvlink_domain or self.gpus_per_node)


@dataclass(frozen=True)
class Cluster:
    """``nodes`` copies of ``node`` on a ``fabric`` (defaults to the node's NIC type)."""

    name: str
    node: Node
    nodes: int
    source: str
    fabric: Optional[Link] = None

    def __post_init__(self):
        if self.fabric is None:
            object.__setattr__(self, "fabric", self.node.inter_link)

    @property
    def gpus(self) -> int:
        return self.node.gpus_per_node * self.nodes

    @property
    def gpus_per_node(self) -> int:
        return self.node.gpus_per_node

    @property
    def nvlink_domain(self) -> int:
        """GPUs that reach each other over NVLink: the node's NVLink domain (8 in a DGX H100, 72 in an
        NVL72 rack), never more than the cluster's GPUs. TP, CP and EP placement use it.

        >>> cluster("h100-1024").nvlink_domain, cluster("gb200-nvl72-4608").nvlink_domain
        (8, 72)
        """
        return int(min(self.node.domain_gpus, self.gpus))

    @property
    def accelerator(self) -> Accelerator:
        return self.node.accelerator

    @property
    def intra_bandwidth(self) -> float:
        """Bytes/s per direction from one GPU to its NVLink-domain peers."""
        return self.node.intra_link.bandwidth

    @property
    def inter_bandwidth(self) -> float:
        """Bytes/s per direction of one GPU's share of the node's NICs."""
        return self.fabric.bandwidth * self.node.nics / self.node.gpus_per_node

    @property
    def intra_latency(self) -> float:
        return self.node.intra_link.latency

    @property
    def inter_latency(self) -> float:
        return self.fabric.latency


@dataclass(frozen=True)
class Track:
    """One deployment context of the Lab 05 plan (Cloud, Edge, Mobile, Tiny)."""

    name: str
    persona: str
    accelerator: Accelerator
    link: Link
    model: Model
    devices: int
    story: str


# --------------------------------------------------------------------------- accelerators

_NV_H100 = "NVIDIA H100 Tensor Core GPU data sheet (SXM5 column), 2023"
_NV_A100 = "NVIDIA A100 Tensor Core GPU data sheet (80GB SXM column), 2021"
_NV_B200 = "NVIDIA HGX B200 / DGX B200 specifications (8-GPU totals divided by 8), 2024"
_NV_ORIN = "NVIDIA Jetson Orin NX series data sheet (16GB module), 2023"
_MAMF = ("S. Bekman, Machine Learning Engineering, compute/accelerator/README.md, 'Maximum Achievable Matmul "
         "FLOPS comparison table' (mamf-finder.py, mean of 100 runs, BF16 and FP8 tables)")
_NV_H200 = "NVIDIA H200 Tensor Core GPU data sheet (H200 SXM column), 2024"
_NV_GB200 = ("NVIDIA GB200 NVL72 specifications (rack totals with sparsity, divided by 72 GPUs and by 2 for dense), "
             "and NVIDIA DGX GB200 user guide: 18 compute trays of 2 GB200 superchips (4 GPUs), 72 single-port "
             "ConnectX-7 400 Gbit/s compute ports")
_NV_GB300 = ("NVIDIA GB300 NVL72 specifications (rack totals with sparsity, divided by 72 GPUs and by 2 for dense) "
             "and NVIDIA Enterprise Reference Architecture 'NVL72 AI factory', Components: compute trays of 4 "
             "Blackwell Ultra GPUs with 4 ConnectX-8 HCAs (800 Gbit/s), 9 NVSwitch trays, 130 TB/s NVLink")

#: Device memory of an "80 GB" H100 (and H800) SXM5 as CUDA sees it: NVML (``nvidia-smi``) reports
#: 81,559 MiB = 85.52e9 bytes (79.65 GiB), not 80e9; the data sheet's "80 GB" is a round marketing
#: name (``memory_marketed_gb``); this is ``memory_bytes``, the one capacity the course states. Source: J. Belotti (Modal), "Why does an NVIDIA H100 80GB card offer 85.52 GB?",
#: https://thundergolfer.com/blog/nvidia-gpu-memory-capacity (NVML-reported capacity per GPU: H100
#: 80 GB 81,559 MiB; A100 80GB 81,920 MiB). The planner's out-of-memory line is this number; the CUDA
#: context, NCCL buffers and allocator fragmentation (about 1-3 GB) are not modelled.
H100_MEMORY_BYTES = 81_559 * u.MiB

#: Share of the H100's dense BF16 peak that FlashAttention-2 sustains: "FlashAttention-2 achieving only
#: 35% utilization on the H100 GPU" (Shah et al. 2024, FlashAttention-3, arXiv 2407.08608, abstract),
#: against :value:`course.core.DEFAULT_COMPUTE_EFFICIENCY` for large GEMMs (the planner's compute_efficiency). It was the open fused kernel
#: for the H100 until FlashAttention-3 (up to 75 % in its forward pass) was released in July 2024; the
#: H800 has the same SMs. Pass another accelerator (dataclasses.replace) to plan with a faster kernel.
FLASH_ATTENTION_2_H100 = 0.35

#: Every accelerator of the catalog by name (:func:`accelerator` looks one up), each with its sources.
ACCELERATORS: dict[str, Accelerator] = {
    a.name: a
    for a in [
        Accelerator(
            name="H100 SXM",
            peak_flops={"fp64": 34e12, "fp32": 67e12, "tf32": 494.5e12, "bf16": 989e12,
                        "fp16": 989e12, "fp8": 1979e12, "int8": 1979e12},
            memory_bytes=H100_MEMORY_BYTES, memory_marketed_gb=80.0, memory_bandwidth=3.35 * u.TB_per_s,
            attention_efficiency=FLASH_ATTENTION_2_H100, matmul_ceilings={"bf16": 0.803, "fp8": 0.709}, sms=132,
            tdp_watts=700.0, source=_NV_H100 + ": dense BF16/FP16 989 TFLOPS (1979 only with 2:4 sparsity), "
                   "dense FP8 1979 TFLOPS, 80 GB HBM3 at 3.35 TB/s, up to 700 W; 81,559 MiB = 85.52e9 bytes "
                   "as NVML reports it (H100_MEMORY_BYTES)",
            # An assumption, not a quote: cloud GPU prices move (see price_source).
            price_per_hour=98.32 / 8,
            price_source="ASSUMPTION (order of magnitude): AWS EC2 p5.48xlarge (8x H100 SXM) "
                         "on-demand, us-east-1, $98.32 per instance-hour = $12.29 per GPU-hour, "
                         "the launch-era list price as reported by The Next Platform, 'H100 GPU "
                         "Instance Pricing On AWS: Grin And Bear It', 2023-07-27, and used by "
                         "later price comparisons. Not checked against aws.amazon.com; AWS cut "
                         "P5 on-demand prices by up to 45 % in June 2025 (usage.ai, 'LLM Cost "
                         "Optimization on AWS', 2026), and specialist clouds list H100s at about "
                         "$2-3 per GPU-hour. Pass your own price where a bill matters",
        ),
        Accelerator(
            name="H100 SXM 96GB (500 W)",
            # the sustained peak of a 500 W H100 is not published: between the H100 NVL's (400 W) and the SXM's
            peak_flops={"fp64": 34e12, "fp32": 67e12, "tf32": 494.5e12, "bf16": 912e12, "fp16": 912e12,
                        "fp8": 1824e12, "int8": 1824e12},
            peak_range={"bf16": (835e12, 989e12), "fp16": (835e12, 989e12), "fp8": (1670e12, 1979e12)},
            peak_range_source="pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md: 'HBM2e-based SXM "
                              "H100 with lower TDP, the actual peak TFLOPs number is between SXM and NVL, and we don't "
                              "know its exact value'; H100 NVL dense BF16 835, FP8 1,670 TFLOPS (NVIDIA H100 data "
                              "sheet, half the sparse 1,671 / 3,341); H100 SXM 989 / 1,979; point: the midpoint",
            memory_bytes=96 * u.GB, memory_bandwidth=2.4 * u.TB_per_s,
            attention_efficiency=FLASH_ATTENTION_2_H100, matmul_ceilings={"bf16": 0.803, "fp8": 0.709}, sms=132,
            tdp_watts=500.0, source="Meta's Grand Teton H100 as pytorch/torchtitan benchmarks/"
                   "llama3_h100_202412_torchtitan.md describes it: 'Each H100 GPU is equipped with 96GB HBM2e with "
                   "2.4 TB/sec peak memory bandwidth', 'the default 500W power limit'; device memory taken as 96e9 "
                   "bytes (not measured here); the H100 SXM's SMs, GEMM ceilings and FlashAttention-2 share",
        ),
        Accelerator(
            name="H800 SXM",
            peak_flops={"fp64": 1e12, "fp32": 67e12, "tf32": 494.5e12, "bf16": 989e12,
                        "fp16": 989e12, "fp8": 1979e12, "int8": 1979e12},
            memory_bytes=H100_MEMORY_BYTES, memory_marketed_gb=80.0, memory_bandwidth=3.35 * u.TB_per_s,
            attention_efficiency=FLASH_ATTENTION_2_H100, matmul_ceilings={"bf16": 0.803, "fp8": 0.709}, sms=132,
            tdp_watts=700.0, source="NVIDIA H800 SXM5 (export variant of H100 SXM5): the H100's tensor-core peaks "
                   "(dense BF16 989, FP8 1979 TFLOPS), 80 GB HBM3 at 3.35 TB/s, 700 W; FP64 cut to "
                   "1 TFLOPS and NVLink to 400 GB/s total. DeepSeek-AI 2024 (DeepSeek-V3), sec. 3.1, "
                   "trains on 2,048 of them",
        ),
        Accelerator(
            name="A100 80GB SXM",
            peak_flops={"fp64": 9.7e12, "fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12,
                        "fp16": 312e12, "int8": 624e12},
            memory_bytes=80 * u.GB, memory_bandwidth=2.039 * u.TB_per_s, tdp_watts=400.0,
            matmul_ceilings={"bf16": 0.869}, sms=108,
            source=_NV_A100 + ": dense BF16/FP16 312 TFLOPS, 80 GB HBM2e at 2,039 GB/s, 400 W, 108 SMs; "
                   "Narayanan et al. 2021 (SC21) use the same 312 TFLOPS peak; GEMM ceiling BF16 86.9 % "
                   "(" + _MAMF + ")",
        ),
        Accelerator(
            name="B200",
            peak_flops={"fp32": 75e12, "tf32": 1125e12, "bf16": 2250e12, "fp16": 2250e12,
                        "fp8": 4500e12, "fp4": 9000e12},
            memory_bytes=180 * u.GB, memory_bandwidth=8.0 * u.TB_per_s, tdp_watts=1000.0,
            matmul_ceilings={"bf16": 0.776, "fp8": 0.763}, sms=148,
            source=_NV_B200 + ": dense BF16 2.25 PFLOPS, dense FP8 4.5 PFLOPS per GPU, "
                   "180 GB HBM3e at 8 TB/s, 1,000 W per GPU; 148 SMs (NVIDIA Blackwell architecture "
                   "technical brief); GEMM ceilings BF16 77.6 %, FP8 76.3 % (" + _MAMF + ")",
        ),
        Accelerator(
            name="H200 SXM",
            peak_flops={"fp64": 34e12, "fp32": 67e12, "tf32": 494.5e12, "bf16": 989e12,
                        "fp16": 989e12, "fp8": 1979e12, "int8": 1979e12},
            # memory as the data sheet states it (141 GB); usable bytes not yet measured here
            memory_bytes=141 * u.GB, memory_bandwidth=4.8 * u.TB_per_s, tdp_watts=700.0,
            attention_efficiency=FLASH_ATTENTION_2_H100, matmul_ceilings={"bf16": 0.803, "fp8": 0.734}, sms=132,
            source=_NV_H200 + ": the H100's tensor cores (dense BF16 989, FP8 1,979 TFLOPS), 141 GB HBM3e at "
                   "4.8 TB/s, up to 700 W, NVLink 900 GB/s; GEMM ceilings BF16 80.3 % ('H200 is the same' as "
                   "H100), FP8 73.4 % (" + _MAMF + "); FlashAttention-2's H100 share (same SMs)",
        ),
        Accelerator(
            name="GB200",
            peak_flops={"fp32": 80e12, "tf32": 1250e12, "bf16": 2500e12, "fp16": 2500e12,
                        "fp8": 5000e12, "fp4": 10000e12},
            # memory as the NVL72 specification states it: 13.4 TB HBM3e for 72 GPUs = 186 GB each
            memory_bytes=186 * u.GB, memory_bandwidth=8.0 * u.TB_per_s, tdp_watts=1200.0,
            matmul_ceilings={"bf16": 0.729, "fp8": 0.723}, sms=148,
            source=_NV_GB200 + ": FP16/BF16 360 PFLOPS, FP8 720 PFLOPS, FP4 1,440 PFLOPS per rack with "
                   "sparsity = dense BF16 2.5, FP8 5, FP4 10 PFLOPS per GPU; HBM3e 13.4 TB at 576 TB/s = "
                   "186 GB at 8 TB/s per GPU; about 1.2 kW per GPU (superchip 2.7 kW with its Grace CPU); "
                   "GEMM ceilings BF16 72.9 % (of 2.5 PFLOPS), FP8 72.3 % (" + _MAMF + ")",
        ),
        Accelerator(
            name="GB300",
            peak_flops={"fp32": 80e12, "tf32": 1250e12, "bf16": 2500e12, "fp16": 2500e12,
                        "fp8": 5000e12, "fp4": 15000e12},
            # memory as the data sheet states it: 288 GB HBM3e per Blackwell Ultra GPU (about 20 TB per rack)
            memory_bytes=288 * u.GB, memory_bandwidth=8.0 * u.TB_per_s, tdp_watts=1400.0,
            matmul_ceilings={"bf16": 0.786, "fp8": 0.745}, sms=148,
            source=_NV_GB300 + ": FP16/BF16 360 PFLOPS, FP8 720 PFLOPS per rack with sparsity = dense BF16 "
                   "2.5, FP8 5 PFLOPS per GPU, dense FP4 about 15 PFLOPS (1.1 EFLOPS per rack); 288 GB HBM3e "
                   "at 8 TB/s per GPU; 1.4 kW per GPU; GEMM ceilings: no GB300 row was measured, the B300's "
                   "(BF16 78.6 %, FP8 74.5 %, " + _MAMF + ")",
        ),
        Accelerator(
            name="Jetson Orin NX 16GB",
            peak_flops={"fp16": 25e12, "int8": 50e12},
            memory_bytes=16 * u.GB, memory_bandwidth=102.4 * u.GB_per_s, tdp_watts=25.0,
            source=_NV_ORIN + ": 100 TOPS INT8 *with sparsity* (GPU + 2 DLAs), 16 GB LPDDR5 "
                   "at 102.4 GB/s, 10-25 W. Dense INT8 is half the sparse headline; the "
                   "25 TFLOP/s dense 16-bit figure follows mlsysim's spec fix (100 -> 25 "
                   "TFLOP/s, mlsysim 0.1.0), which stopped treating the sparse INT8 "
                   "headline as FLOP/s",
        ),
        Accelerator(
            name="Phone NPU (A17 Pro)",
            peak_flops={"int8": 35e12},
            memory_bytes=8 * u.GB, memory_bandwidth=51.2 * u.GB_per_s, tdp_watts=5.0,
            source="Apple A17 Pro announcement, Sept 2023: 16-core Neural Engine, 35 trillion "
                   "operations per second (precision not stated; marketing peak). 8 GB "
                   "LPDDR5 (iPhone 15 Pro); 51.2 GB/s = LPDDR5-6400 on a 64-bit bus and 5 W "
                   "sustained phone power are estimates, not Apple figures",
        ),
        Accelerator(
            name="Cortex-M7 MCU (STM32H743)",
            peak_flops={"fp32": 0.96e9, "int8": 1.92e9},
            memory_bytes=1 * u.MB, memory_bandwidth=1.92 * u.GB_per_s, tdp_watts=0.4,
            source="STMicroelectronics STM32H743 data sheet (DS12110): Arm Cortex-M7 at 480 MHz, "
                   "1 MB RAM, 2 MB flash. Derived: one single-precision FMA (2 FLOP) per cycle "
                   "= 0.96 GFLOP/s; SMLAD dual 16-bit MAC (4 OP) per cycle = 1.92 GOP/s for "
                   "int8 kernels (Arm CMSIS-NN); AXI SRAM 64-bit at 240 MHz = 1.92 GB/s; "
                   "~0.4 W = run-mode current at 480 MHz x 3.3 V (estimate)",
        ),
    ]
}


# --------------------------------------------------------------------------- links

_LAT_NOTE = "latency: order-of-magnitude assumption, not a vendor figure"

#: Every interconnect and network fabric by name (:func:`link` looks one up), each with its sources.
LINKS: dict[str, Link] = {
    k.name: k
    for k in [
        Link("NVLink 4", 450 * u.GB_per_s, 1 * u.us,
             "NVIDIA H100 data sheet: NVLink 900 GB/s total per GPU = 450 GB/s per direction "
             "(18 links x 25 GB/s); " + _LAT_NOTE),
        Link("NVLink 3", 300 * u.GB_per_s, 1 * u.us,
             "NVIDIA A100 data sheet: NVLink 600 GB/s total per GPU = 300 GB/s per direction "
             "(12 links x 25 GB/s); " + _LAT_NOTE),
        Link("NVLink 4 (H800)", 200 * u.GB_per_s, 1 * u.us,
             "NVIDIA H800 SXM5: NVLink 400 GB/s total per GPU = 200 GB/s per direction (the export "
             "variant of H100 with fewer NVLink lanes); DeepSeek-AI 2024 (DeepSeek-V3), sec. 3.2.2, "
             "measure 160 GB/s achievable; " + _LAT_NOTE),
        Link("NVLink 5", 900 * u.GB_per_s, 1 * u.us,
             "NVIDIA HGX B200 specifications: NVLink 1.8 TB/s total per GPU = 900 GB/s per "
             "direction; " + _LAT_NOTE),
        Link("NVLink 5 (NVL72)", 900 * u.GB_per_s, 1.5 * u.us,
             "NVIDIA GB200 / GB300 NVL72: 130 TB/s of NVLink for 72 GPUs = 1.8 TB/s total per GPU = 900 GB/s "
             "per direction, every GPU one NVSwitch hop from every other of the rack; " + _LAT_NOTE),
        Link("PCIe Gen4 x16", 31.5 * u.GB_per_s, 2 * u.us,
             "PCI-SIG PCIe 4.0: 16 GT/s per lane x 16 lanes x 128b/130b = 31.5 GB/s per "
             "direction; " + _LAT_NOTE),
        Link("PCIe Gen5 x16", 63 * u.GB_per_s, 2 * u.us,
             "PCI-SIG PCIe 5.0: 32 GT/s per lane x 16 lanes x 128b/130b = 63 GB/s per "
             "direction; " + _LAT_NOTE),
        Link("InfiniBand HDR", 200 * u.Gbit_per_s, 5 * u.us,
             "InfiniBand Trade Association roadmap / NVIDIA ConnectX-6: HDR 200 Gbit/s per "
             "port = 25 GB/s per direction (not 400 GB/s: erratum 2); " + _LAT_NOTE),
        Link("InfiniBand NDR", 400 * u.Gbit_per_s, 5 * u.us,
             "InfiniBand Trade Association roadmap / NVIDIA ConnectX-7: NDR 400 Gbit/s per "
             "port = 50 GB/s per direction; " + _LAT_NOTE),
        Link("InfiniBand XDR", 800 * u.Gbit_per_s, 5 * u.us,
             "InfiniBand Trade Association roadmap / NVIDIA ConnectX-8: XDR 800 Gbit/s per "
             "port = 100 GB/s per direction; " + _LAT_NOTE),
        Link("Ethernet 10G", 10 * u.Gbit_per_s, 50 * u.us,
             "IEEE 802.3ae: 10 Gbit/s = 1.25 GB/s per direction; latency: TCP stack, " + _LAT_NOTE),
        Link("Ethernet 100G", 100 * u.Gbit_per_s, 50 * u.us,
             "IEEE 802.3ba: 100 Gbit/s = 12.5 GB/s per direction; latency: TCP stack, " + _LAT_NOTE),
        Link("Ethernet 400G", 400 * u.Gbit_per_s, 10 * u.us,
             "IEEE 802.3bs: 400 Gbit/s = 50 GB/s per direction; latency: RDMA (RoCE v2), "
             + _LAT_NOTE),
        Link("5G", 50e6 * u.bit, 4 * u.ms,
             "ITU-R M.2410 (IMT-2020 minimum requirements): user-experienced uplink data "
             "rate 50 Mbit/s (peak 10 Gbit/s is a cell-wide figure), eMBB user-plane "
             "latency 4 ms"),
        Link("Bluetooth LE", 2e6 * u.bit, 7.5 * u.ms,
             "Bluetooth Core Specification 5.0: LE 2M PHY 2 Mbit/s raw symbol rate "
             "(application throughput is lower); minimum connection interval 7.5 ms"),
    ]
}


# --------------------------------------------------------------------------- models

_LLAMA3 = "Dubey et al. 2024, The Llama 3 Herd of Models, Table 3"
_MEGATRON = ("Narayanan et al. 2021 (SC21), Efficient Large-Scale Language Model Training on "
             "GPU Clusters Using Megatron-LM, Table 1 (seq 2048, vocab 51,200, FFN 4h)")


_MPT = ("MosaicML llm-foundry, scripts/train/yamls/pretrain/mpt-{size}.yaml (d_model, n_heads, n_layers, "
        "expansion_ratio 4, vocab_size 50,368, max_seq_len 2,048; commit 8c8dd48f7) with the defaults of "
        "llmfoundry/models/mpt/configuration_mpt.py (GELU MLP, learned positions, tied embeddings, biases, no "
        "dropout); parameters: the NumParams column at 2,048 tokens of scripts/train/benchmarking/README.md{note}")


def _mpt(size: str, params: int, layers: int, hidden: int, heads: int, note: str = "") -> Model:
    # the configurations llm-foundry's throughput tables were measured with (GPT-shaped, multi-head attention)
    return Model(name=f"mpt-{size}", params=float(params), source=_MPT.format(size=size, note=note),
                 layers=layers, hidden=hidden, heads=heads, kv_heads=heads, ffn=4 * hidden, vocab=50368,
                 seq_len=2048, dropout=False)


def _megatron(params_b: float, heads: int, hidden: int, layers: int) -> Model:
    return Model(name=f"megatron-{params_b:g}b", params=params_b * u.billion, source=_MEGATRON,
                 layers=layers, hidden=hidden, heads=heads, kv_heads=heads, ffn=4 * hidden,
                 vocab=51200, seq_len=2048)


#: Every row of Megatron-LM SC21 Table 1 (A100 80 GB, 312 TFLOPS peak, full recomputation):
#: (model, TP, PP, GPUs, global batch, achieved FLOP/s per GPU, micro-batch, interleave v).
#: Micro-batch sizes and interleaving come from the authors' reproduction script,
#: NVIDIA/Megatron-LM examples/sc21/run_table_1.sh (``--num-layers-per-virtual-pipeline-stage``
#: 5 for 76B and 145B, 1 for 530B: v = layers / (PP x that)).
MEGATRON_TABLE1 = (
    (_megatron(1.7, 24, 2304, 24), 1, 1, 32, 512, 137e12, 16, 1),
    (_megatron(18.4, 48, 6144, 40), 8, 1, 256, 1024, 135e12, 8, 1),
    (_megatron(76.1, 80, 10240, 60), 8, 4, 1024, 1792, 140e12, 2, 3),
    (_megatron(145.6, 96, 12288, 80), 8, 8, 1536, 2304, 148e12, 2, 2),
    (_megatron(529.6, 128, 20480, 105), 8, 35, 2520, 2520, 163e12, 1, 3),
    (_megatron(1008, 160, 25600, 128), 8, 64, 3072, 3072, 163e12, 1, 1),
)

#: Every model of the catalog by name (:func:`model` looks one up), each with its sources.
MODELS: dict[str, Model] = {
    m.name: m
    for m in [
        Model("gpt3-175b", 175 * u.billion,
              "Brown et al. 2020, Language Models are Few-Shot Learners, Table 2.1 "
              "(n_layers 96, d_model 12288, 96 heads, context 2048; vocab 50,257 BPE)",
              layers=96, hidden=12288, heads=96, kv_heads=96, ffn=4 * 12288, vocab=50257,
              seq_len=2048),
        Model("llama3-8b", 8 * u.billion, _LLAMA3, layers=32, hidden=4096, heads=32,
              kv_heads=8, ffn=14336, vocab=128000, seq_len=8192, mlp_matrices=3,
              dropout=False),
        # Lab 07's sparse twin of Llama 3 8B: the same attention, each MLP replaced by 64 experts of 1/8 its width,
        # 8 per token, so a token passes through as many weights as in the dense model
        Model("llama3-8b-moe", 8 * u.billion + 32 * (4096 * 64 + 64 * 3 * 4096 * 1792 - 3 * 4096 * 14336),
              "Constructed for Lab 07 (not a released model): Llama 3 8B (" + _LLAMA3 + ") with each SwiGLU MLP "
              "(inner width 14,336) replaced by a router and 64 fine-grained experts of inner width 1,792, 8 per "
              "token (fine-grained expert segmentation, Dai et al. 2024, DeepSeekMoE, sec. 3.1): 8x the MLP "
              "weights, the same active weights plus the router",
              layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128000, seq_len=8192, mlp_matrices=3,
              dropout=False, experts=64, top_k=8, expert_ffn=1792),
        Model("llama3-70b", 70 * u.billion, _LLAMA3, layers=80, hidden=8192, heads=64,
              kv_heads=8, ffn=28672, vocab=128000, seq_len=8192, mlp_matrices=3,
              dropout=False),
        Model("llama3-405b", 405 * u.billion, _LLAMA3, layers=126, hidden=16384, heads=128,
              kv_heads=8, ffn=53248, vocab=128000, seq_len=8192, mlp_matrices=3,
              dropout=False),
        Model("llama2-7b", 7 * u.billion,
              "Touvron et al. 2023, Llama 2, Table 1 and the released config "
              "(32 layers, d 4096, 32 heads, FFN 11008, vocab 32,000, context 4096)",
              layers=32, hidden=4096, heads=32, kv_heads=32, ffn=11008, vocab=32000,
              seq_len=4096, mlp_matrices=3, dropout=False),
        _mpt("7b", 6_658_859_008, 32, 4096, 32),
        _mpt("30b", 29_975_214_080, 48, 7168, 56, "; the released MPT-30B checkpoint has 64 heads and 8K context"),
        _mpt("70b", 64_862_437_376, 80, 8192, 64, "; a training configuration, no released checkpoint"),
        Model("resnet50", 25.6 * u.million,
              "He et al. 2016, Deep Residual Learning, Table 1 (ResNet-50, ~25.6M parameters)"),
        Model("mobilenetv2", 3.4 * u.million,
              "Sandler et al. 2018, MobileNetV2, Table 4 (1.0x width, 3.4M parameters)"),
        Model("ds-cnn-s", 38.6 * u.thousand,
              "Zhang et al. 2017, Hello Edge: Keyword Spotting on Microcontrollers, Table 7 "
              "(DS-CNN small, 38.6K parameters)"),
        *(row[0] for row in MEGATRON_TABLE1),
        # mixtures of experts: ``params`` is the total, ``active_params`` the per-token share
        Model("deepseek-v3", 671 * u.billion,
              "DeepSeek-AI 2024, DeepSeek-V3 Technical Report (arXiv 2412.19437), sec. 4.2: 61 layers, "
              "hidden 7168, 128 heads of 128, MLA with KV compression 512, query compression 1536, "
              "decoupled RoPE 64; every FFN but the first 3 is MoE with 1 shared and 256 routed "
              "experts of inner width 2048, 8 routed per token, at most 4 nodes per token (released "
              "config.json: n_group 8, topk_group 4, i.e. 4 of 8 expert groups); 671B total, "
              "37B activated; pre-training sequence 4K; vocabulary 128K (129,280 in the released "
              "config.json, whose intermediate_size 18432 is the dense layers' FFN). MLA weights per "
              "layer: 7168x1536 + 1536x128x192 + 7168x576 + 512x128x256 + 128x128x7168 = 187.1M; "
              "score width 128 x (192 + 128) / 2 = 20,480",
              layers=61, hidden=7168, heads=128, kv_heads=128, ffn=18432, vocab=129280, seq_len=4096,
              mlp_matrices=3, dropout=False, experts=256, top_k=8, expert_ffn=2048, shared_experts=1, dense_layers=3,
              routing_groups=8, routing_group_topk=4,
              attention_params=7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168,
              attention_width=128 * (192 + 128) // 2, head_size=128, mla=(1536, 512, 64, 128)),
        Model("mixtral-8x7b", 46.7 * u.billion,
              "Jiang et al. 2024, Mixtral of Experts (arXiv 2401.04088), Table 1 and sec. 2.1: dim 4096, "
              "32 layers, 32 heads of 128, 8 KV heads, expert hidden_dim 14336, 8 experts, top-2, "
              "vocab 32,000, context 32,768; 47B total (46.7B in the model card), 13B active",
              layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=32000, seq_len=32768,
              mlp_matrices=3, dropout=False, experts=8, top_k=2, expert_ffn=14336),
        Model("mixtral-8x22b", 141 * u.billion,
              "Mistral AI 2024, 'Cheaper, Better, Faster, Stronger' (Mixtral 8x22B announcement: 141B "
              "total, 39B active, 64K context) and the mistralai/Mixtral-8x22B-v0.1 config.json: hidden "
              "6144, 56 layers, 48 heads, 8 KV heads, intermediate 16384, 8 experts, top-2, vocab 32,000",
              layers=56, hidden=6144, heads=48, kv_heads=8, ffn=16384, vocab=32000, seq_len=65536,
              mlp_matrices=3, dropout=False, experts=8, top_k=2, expert_ffn=16384),
        Model("qwen2-57b-a14b", 57 * u.billion,
              "Yang et al. 2024, Qwen2 Technical Report (arXiv 2407.10671), Table 1: hidden 3584, 28 "
              "layers, 28 query / 4 KV heads, 64 routed experts of inner width 2560, 8 activated, shared "
              "experts 20,480 wide in all (shared_expert_intermediate_size in the released config.json), "
              "vocab 151,646 (151,936 padded); 57B total, 14B active; pre-training sequence 4,096",
              layers=28, hidden=3584, heads=28, kv_heads=4, ffn=2560, vocab=151936, seq_len=4096,
              mlp_matrices=3, dropout=False, experts=64, top_k=8, expert_ffn=2560, shared_experts=1, shared_ffn=20480),
        Model("qwen3-30b-a3b", 30.5 * u.billion,
              "Qwen Team 2025, Qwen3 Technical Report (arXiv 2505.09388), Table 2, and the released config.json "
              "(Qwen/Qwen3-30B-A3B): 48 layers, hidden 2,048, 32 query / 4 KV heads of head_dim 128 (queries 4,096 "
              "wide), every layer MoE with 128 routed experts of inner width 768 (moe_intermediate_size), 8 per "
              "token, no shared experts, vocab 151,936; 30.5B total, 3.3B activated; pre-training sequence 4,096. "
              "Fine-grained experts: each is 768 wide on a 2,048-wide model",
              layers=48, hidden=2048, heads=32, kv_heads=4, ffn=768, vocab=151936, seq_len=4096,
              mlp_matrices=3, dropout=False, experts=128, top_k=8, expert_ffn=768, head_size=128),
        Model("qwen3-235b-a22b", 235 * u.billion,
              "Qwen Team 2025, Qwen3 Technical Report (arXiv 2505.09388), Table 2, and the released "
              "config.json (Qwen/Qwen3-235B-A22B): 94 layers, hidden 4096, 64 query / 4 KV heads of "
              "head_dim 128 (queries 8,192 wide), every layer MoE with 128 routed experts of inner width "
              "1,536 (moe_intermediate_size), 8 per token, no shared experts, vocab 151,936; 235B total, "
              "22B activated; pre-training sequence 4,096. head_dim 128 is the card's (not 4096 / 64 = 64): "
              "attention weights per layer 4096x8192 + 2 x 4096x512 + 8192x4096 = 71.3M; score width "
              "64 x 128 = 8,192",
              layers=94, hidden=4096, heads=64, kv_heads=4, ffn=1536, vocab=151936, seq_len=4096,
              mlp_matrices=3, dropout=False, experts=128, top_k=8, expert_ffn=1536, head_size=128),
    ]
}


# --------------------------------------------------------------------------- nodes and clusters

#: Every server of the catalog (its accelerators, their links and NICs) by name (:func:`node` looks one up).
NODES: dict[str, Node] = {
    n.name: n
    for n in [
        Node("DGX H100", ACCELERATORS["H100 SXM"], 8, LINKS["NVLink 4"], 8,
             LINKS["InfiniBand NDR"],
             "NVIDIA DGX H100 data sheet: 8x H100 SXM5 on 4 NVSwitch chips (NVLink 4), "
             "8x ConnectX-7 400 Gbit/s compute ports (one per GPU)"),
        Node("Grand Teton H100 96GB", ACCELERATORS["H100 SXM 96GB (500 W)"], 8, LINKS["NVLink 4"], 8,
             LINKS["Ethernet 400G"], "Meta Grand Teton (pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md): "
             "8 H100 per host fully connected with NVLink, 'backend RDMA network with 400 Gb/s per GPU'"),
        Node("DGX H800", ACCELERATORS["H800 SXM"], 8, LINKS["NVLink 4 (H800)"], 8, LINKS["InfiniBand NDR"],
             "DeepSeek-AI 2024 (DeepSeek-V3), sec. 3.1: nodes of 8 H800 GPUs on NVLink / NVSwitch, "
             "InfiniBand between nodes; sec. 3.2.2: IB 50 GB/s per GPU (one 400 Gbit/s NDR port each), "
             "NVLink 160 GB/s achieved"),
        Node("DGX A100", ACCELERATORS["A100 80GB SXM"], 8, LINKS["NVLink 3"], 8,
             LINKS["InfiniBand HDR"],
             "NVIDIA DGX A100 data sheet and Narayanan et al. 2021 (Selene): 8x A100 80GB "
             "(NVLink 3 via NVSwitch), 8x Mellanox 200 Gbit/s HDR InfiniBand HCAs"),
        Node("DGX B200", ACCELERATORS["B200"], 8, LINKS["NVLink 5"], 8, LINKS["InfiniBand XDR"],
             "NVIDIA DGX B200 data sheet: 8x B200 (NVLink 5), 8 compute ports; XDR "
             "(ConnectX-8) assumed for the fabric"),
        Node("DGX B200 (NDR)", ACCELERATORS["B200"], 8, LINKS["NVLink 5"], 8, LINKS["InfiniBand NDR"],
             "NVIDIA DGX B200 data sheet: 8x B200 (NVLink 5), 8x ConnectX-7 400 Gbit/s compute ports "
             "(the DGX B200 ships with ConnectX-7 NDR; the DGX SuperPOD B200 reference architecture)"),
        Node("DGX H200", ACCELERATORS["H200 SXM"], 8, LINKS["NVLink 4"], 8, LINKS["InfiniBand NDR"],
             "NVIDIA DGX H200 data sheet: 8x H200 on 4 NVSwitch chips (NVLink 4, 900 GB/s per GPU), "
             "8x ConnectX-7 400 Gbit/s compute ports (one per GPU)"),
        Node("GB200 NVL72", ACCELERATORS["GB200"], 4, LINKS["NVLink 5 (NVL72)"], 4, LINKS["InfiniBand NDR"],
             _NV_GB200 + ": a compute tray (the node) holds 4 GPUs and 4 ConnectX-7 400 Gbit/s ports; "
             "NVLink joins all 72 GPUs of the rack (nvlink_domain 72)", nvlink_domain=72),
        Node("GB300 NVL72", ACCELERATORS["GB300"], 4, LINKS["NVLink 5 (NVL72)"], 4, LINKS["InfiniBand XDR"],
             _NV_GB300 + ": a compute tray (the node) holds 4 GPUs and 4 ConnectX-8 800 Gbit/s ports; "
             "NVLink joins all 72 GPUs of the rack (nvlink_domain 72)", nvlink_domain=72),
    ]
}


def make_cluster(node_or_name, gpus: int, fabric=None, name: Optional[str] = None) -> Cluster:
    """A cluster of ``gpus`` accelerators built from whole nodes.

    Parameters
    ----------
    node_or_name : Node or str
        The server type (a :data:`NODES` entry or its name).
    gpus : int
        GPUs in all, a positive multiple of the node's ``gpus_per_node``.
    fabric : Link or str, optional
        Inter-node link; default the node's own NIC type.
    name : str, optional
        Cluster name; default ``"<gpus>x <accelerator> (<fabric>)"``.

    Returns
    -------
    Cluster
        ``gpus / gpus_per_node`` nodes; bandwidths in bytes/s, latencies in seconds.

    Source: the node's and the fabric's ``source`` fields.

    Examples
    --------
    >>> make_cluster("DGX A100", 256).nodes
    32
    >>> make_cluster("DGX H100", 12)
    Traceback (most recent call last):
    ...
    ValueError: gpus must be a positive multiple of 8 (GPUs per DGX H100); got 12
    """
    nd = node(node_or_name) if isinstance(node_or_name, str) else node_or_name
    g = nd.gpus_per_node
    try:
        whole = float(gpus).is_integer()
    except (TypeError, ValueError):
        whole = False
    if not whole or gpus < g or gpus % g:
        raise ValueError(f"gpus must be a positive multiple of {g} (GPUs per {nd.name}); got {gpus}")
    fab = link(fabric) if isinstance(fabric, str) else fabric
    fab = fab or nd.inter_link
    return Cluster(name or f"{int(gpus)}x {nd.accelerator.name} ({fab.name})", nd, int(gpus) // g,
                   f"{int(gpus) // g} x {nd.name} on {fab.name}", fabric=fab)


#: Every cluster of the catalog (copies of a node on a fabric) by name (:func:`cluster` looks one up).
CLUSTERS: dict[str, Cluster] = {
    c.name: c
    for c in [
        Cluster("research-256", NODES["DGX H100"], 32,
                "The solver tutorial's research cluster (mlsysim Systems.Clusters.Research_256): "
                "32 DGX H100 nodes, each of their 8 ports on 100 GbE instead of NDR",
                fabric=LINKS["Ethernet 100G"]),
        Cluster("h100-1024", NODES["DGX H100"], 128,
                "128 DGX H100 nodes on InfiniBand NDR (Lab 05 Act II's 1,024 H100s)"),
        Cluster("h100-16384", NODES["DGX H100"], 2048,
                "2,048 DGX H100-class nodes on 400 Gbit/s per GPU: the size of Meta's Llama 3 "
                "405B run (Dubey et al. 2024, Section 3.3: 16K H100s, 8 GPUs and 8 NICs per server)"),
        Cluster("h800-2048", NODES["DGX H800"], 256,
                "DeepSeek-AI 2024 (DeepSeek-V3), sec. 3.1: 2,048 H800 GPUs, 256 nodes of 8"),
        Cluster("h100-2048", NODES["DGX H100"], 256,
                "256 DGX H100 nodes on InfiniBand NDR: the 2,048-GPU scale of the MoE sweeps"),
        Cluster("h200-1024", NODES["DGX H200"], 128,
                "128 DGX H200 nodes on InfiniBand NDR"),
        Cluster("gb200-nvl72-rack", NODES["GB200 NVL72"], 18,
                "One GB200 NVL72 rack: 18 compute trays of 4 GPUs, one NVLink domain of 72"),
        Cluster("gb200-nvl72-4608", NODES["GB200 NVL72"], 1152,
                "64 GB200 NVL72 racks (4,608 GPUs) on 400 Gbit/s InfiniBand per GPU"),
        Cluster("gb300-nvl72-4608", NODES["GB300 NVL72"], 1152,
                "64 GB300 NVL72 racks (4,608 GPUs) on 800 Gbit/s InfiniBand per GPU"),
        Cluster("selene-3072", NODES["DGX A100"], 384,
                "Narayanan et al. 2021: Selene, up to 3,072 A100 80GB in DGX A100 nodes, HDR IB"),
    ]
}


# --------------------------------------------------------------------------- tracks

#: The deployment contexts of the Lab 05 plan (Cloud, Edge, Mobile, Tiny) by name (:func:`track` looks one up).
TRACKS: dict[str, Track] = {
    t.name: t
    for t in [
        Track("Cloud", "LLM architect", ACCELERATORS["H100 SXM"], LINKS["InfiniBand NDR"],
              MODELS["llama3-70b"], 1024,
              "Train large language models on a DGX H100 cluster: balance data, tensor and pipeline "
              "parallelism so every GPU you add pays off."),
        Track("Edge", "AV systems lead", ACCELERATORS["Jetson Orin NX 16GB"], LINKS["5G"],
              MODELS["resnet50"], 10000,
              "Learn from the logs of 10,000 cars whose gradients travel over 5G uplinks: "
              "slow links make stale gradients."),
        Track("Mobile", "AR glasses developer", ACCELERATORS["Phone NPU (A17 Pro)"], LINKS["5G"],
              MODELS["mobilenetv2"], 1000,
              "Personalise a filter across 1,000 devices: every global sync costs battery."),
        Track("Tiny", "Hearable lead", ACCELERATORS["Cortex-M7 MCU (STM32H743)"],
              LINKS["Bluetooth LE"], MODELS["ds-cnn-s"], 100,
              "100 hearables learn a noise profile together over Bluetooth LE: too slow for a "
              "full weight sync, so they gossip."),
    ]
}


# --------------------------------------------------------------------------- lookup

_ALIASES = {
    "h100": "H100 SXM", "a100": "A100 80GB SXM", "h200": "H200 SXM", "orin": "Jetson Orin NX 16GB",
    "jetson": "Jetson Orin NX 16GB", "npu": "Phone NPU (A17 Pro)", "phone": "Phone NPU (A17 Pro)",
    "mcu": "Cortex-M7 MCU (STM32H743)", "cortexm7": "Cortex-M7 MCU (STM32H743)",
    "nvlink": "NVLink 4", "ibhdr": "InfiniBand HDR", "ibndr": "InfiniBand NDR",
    "ibxdr": "InfiniBand XDR", "hdr": "InfiniBand HDR", "ndr": "InfiniBand NDR",
    "xdr": "InfiniBand XDR", "100gbe": "Ethernet 100G", "10gbe": "Ethernet 10G",
    "400gbe": "Ethernet 400G", "ble": "Bluetooth LE", "pcie4": "PCIe Gen4 x16",
    "pcie5": "PCIe Gen5 x16", "gpt3": "gpt3-175b", "llama27b": "llama2-7b", "7b": "llama2-7b",
}


@functools.lru_cache(maxsize=512)
def _key(name: str) -> str:
    return "".join(ch for ch in str(name).lower() if ch.isalnum())


_INDEX: dict[int, dict[str, str]] = {}


def _lookup(kind: str, table: dict, name):
    if not isinstance(name, str):
        raise ValueError(f"{kind} must be a name (str); got {name!r}")
    wanted = _key(name)
    index = _INDEX.get(id(table))
    if index is None or len(index) != len(table):
        index = _INDEX[id(table)] = {_key(full): full for full in table}
    if wanted in index:
        return table[index[wanted]]
    alias = _ALIASES.get(wanted)
    if alias in table:
        return table[alias]
    raise ValueError(f"{kind} must be one of {', '.join(map(repr, table))}; got {name!r}")


def _lookup_doc(kind: str, table_name: str, example: str, result: str):
    """Give a lookup function the numpydoc text the six lookups share, with its own example."""
    def decorate(fn):
        fn.__doc__ = f"""The {kind} called ``name`` in :data:`{table_name}`.

    Case, spaces, dashes and underscores do not matter, and a few short aliases
    (``"h100"``, ``"ndr"``, ``"gpt3"``...) are understood.

    Parameters
    ----------
    name : str
        A key of :data:`{table_name}` or an alias.

    Returns
    -------
    {fn.__annotations__["return"]}
        Frozen record whose fields are SI numbers; its ``source`` field cites the data sheet or paper.

    Raises ValueError listing the known names for an unknown ``name``.

    Source: the ``source`` field of each entry (vendor data sheets, papers).

    Examples
    --------
    >>> {example}
    {result}
    """
        return fn
    return decorate


@_lookup_doc("accelerator", "ACCELERATORS", 'accelerator("H100").memory_marketed_gb', "80.0")
def accelerator(name: str) -> Accelerator:
    return _lookup("accelerator", ACCELERATORS, name)


@_lookup_doc("link", "LINKS", 'link("ndr").bandwidth / 1e9', "50.0")
def link(name: str) -> Link:
    return _lookup("link", LINKS, name)


@_lookup_doc("model", "MODELS", 'model("llama3-405b").layers', "126")
def model(name: str) -> Model:
    return _lookup("model", MODELS, name)


@_lookup_doc("node", "NODES", 'node("DGX H100").gpus_per_node', "8")
def node(name: str) -> Node:
    return _lookup("node", NODES, name)


@_lookup_doc("cluster", "CLUSTERS", 'cluster("research-256").inter_bandwidth / 1e9', "12.5")
def cluster(name: str) -> Cluster:
    return _lookup("cluster", CLUSTERS, name)


@_lookup_doc("Lab 05 track", "TRACKS", 'track("tiny").link.name', "'Bluetooth LE'")
def track(name: str) -> Track:
    return _lookup("track", TRACKS, name)


def with_fabric(c: Cluster, fabric) -> Cluster:
    """The same cluster on another fabric: the NICs' link type changes, nothing else.

    Parameters
    ----------
    c : Cluster
        The cluster to copy.
    fabric : Link or str
        The new inter-node link (a :data:`LINKS` entry or its name).

    Returns
    -------
    Cluster
        A copy named ``"<name> on <fabric>"``; per-GPU inter-node bandwidth is
        ``fabric.bandwidth * nics / gpus_per_node`` bytes/s.

    Source: the fabric's own ``source`` field.

    Examples
    --------
    >>> with_fabric(cluster("h100-1024"), "hdr").inter_bandwidth / 1e9
    25.0
    """
    fab = link(fabric) if isinstance(fabric, str) else fabric
    return replace(c, name=f"{c.name} on {fab.name}", fabric=fab)


__all__.append("with_fabric")

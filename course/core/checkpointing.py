"""Activation checkpointing as a policy: which of a layer's activations are saved for the backward pass.

A transformer layer's forward pass produces named activations (Korthikanti et al. 2022, Table 2, as
:func:`~course.core.layer_cost.layer_activation_bytes` counts them, plus the two GEMM outputs the
backward pass does not need but a policy may save). A **policy** is the set of names kept in memory;
every activation the backward pass needs and the policy does not keep is recomputed in the backward
pass, with the chain of its inputs back to the nearest kept tensor. Its memory is the bytes of what is
kept; its extra FLOPs are the GEMMs and attention on the recomputed chains.

The graph of one pre-norm layer (names as MaxText's ``checkpoint_name`` calls them where it names them)::

    layer_input -> attention_norm -> query_proj, key_proj, value_proj -> [attention_scores] -> context
      -> out_proj -> residual (= layer_input + out_proj) -> mlp_norm -> mlpwi_0, mlpwi_1 (or mlpwi)
      -> mlp_activation -> mlpwo

``attention_scores`` (softmax and its dropout, ``s x s`` per head) exists only without a fused attention
kernel; the dropout masks only where the model trains with dropout. ``out_proj`` and ``mlpwo`` are never
needed by the backward pass (a residual add and a dropout need no inputs), so saving them costs memory and
only shortens recomputation chains.

Presets (:data:`POLICIES`) with their sources:

- ``"none"``, ``"selective"``, ``"full"``: the planner's recompute modes (Korthikanti et al. 2022); these
  three are priced exactly as the planner always priced them.
- ``"maxtext:<remat_policy>"``: MaxText's ``remat_policy`` values, as its decoder maps them to
  ``jax.checkpoint_policies.save_only_these_names`` (AI-Hypercomputer/maxtext,
  ``MaxText/layers/decoders.py`` ``Decoder.get_remat_policy`` and ``minimal_policy``): ``minimal`` saves
  every weight GEMM's output (``query_proj, key_proj, value_proj, out_proj, mlpwi_0, mlpwi_1, mlpwi,
  mlpwo``), ``minimal_with_context`` adds ``context``, ``save_dot_with_context_except_mlp`` saves
  ``query_proj, key_proj, value_proj, context, out_proj``, ``save_dot_except_mlpwi`` saves the projections,
  ``out_proj`` and ``mlpwo``, ``save_dot_except_mlp`` the projections and ``out_proj``, ``save_qkv_proj``
  the projections, ``save_out_proj`` only ``out_proj``, ``full`` nothing (``nothing_saveable``: the
  layer's input, which the scan carries, only); ``qkv_proj_offloaded`` and ``minimal_offloaded`` move the
  named tensors to host memory (not recomputed, no device memory; the host transfers are not priced).
- ``"torchtitan:op"``: torchtitan's per-op selective AC (``activation_checkpoint.mode = "selective"``,
  ``selective_ac_option = "op"``; pytorch/torchtitan ``torchtitan/distributed/activation_checkpoint.py``,
  ``_apply_op_sac``; formerly ``torchtitan/models/llama3/infra/parallelize.py``): the outputs of the ops in
  its save list (``aten.mm``, the SDPA flash / efficient / cuDNN attention kernels, and with TP the
  reduce-scatters) are saved, "except every second mm", counted per transformer block in forward order.
  In a Llama block (``wq, wk, wv`` in ``Attention.forward``; ``w2(silu(w1(x)) * w3(x))``) that saves
  ``wq, wv, w1, w2`` (``query_proj, value_proj, mlpwi_0, mlpwo``) and the attention output (``context``)
  and recomputes ``wk, wo, w3``.
- ``"torchtitan:layer-<k>"``: ``selective_ac_option = "<k>"``: every k-th block fully checkpointed
  (``_apply_layer_sac``), the others keep everything.

Custom policies: :func:`checkpoint_policy` with ``saved=[names]`` (and ``every=k``), as
``jax.checkpoint_policies.save_only_these_names`` does (JAX documentation, "Gradient checkpointing with
jax.checkpoint").

Source: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", sec. 4
and Table 2 (the per-tensor bytes), sec. 5 (selective recomputation); Chen et al. 2016 (checkpointing:
recompute from the nearest saved tensor); Narayanan et al. 2021, eq. 3 (2 FLOPs per weight and token,
``4 s h`` for attention).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

from . import _validate as v
from . import catalog as _cat

__all__ = ["ACTIVATION_NAMES", "POLICIES", "CheckpointPolicy", "checkpoint_policy", "activation_graph",
           "policy_cost", "saved_bytes_per_token", "recomputed_flops_per_token", "policy_summary"]

#: Every activation name a policy may list (a model has the subset its shape gives it: ``mlpwi_0`` and
#: ``mlpwi_1`` for a gated MLP, ``mlpwi`` otherwise; ``attention_scores`` without a fused attention kernel;
#: the dropout masks with dropout). ``qkv_proj`` (MaxText's fused projection) names the three projections;
#: ``mlpwi`` on a gated MLP names both of its input GEMMs.
ACTIVATION_NAMES = ("layer_input", "attention_norm", "query_proj", "key_proj", "value_proj", "qkv_proj",
                    "attention_scores", "context", "out_proj", "attention_dropout_mask", "residual", "mlp_norm",
                    "mlpwi_0", "mlpwi_1", "mlpwi", "mlp_activation", "mlpwo", "mlp_dropout_mask")

_MAXTEXT_MINIMAL = ("query_proj", "value_proj", "key_proj", "qkv_proj", "out_proj", "mlpwi_0", "mlpwi_1", "mlpwi",
                    "mlpwo")
_QKV = ("query_proj", "value_proj", "key_proj", "qkv_proj")
_MAXTEXT = "AI-Hypercomputer/maxtext MaxText/layers/decoders.py, Decoder.get_remat_policy"
_TORCHTITAN = ("pytorch/torchtitan torchtitan/distributed/activation_checkpoint.py "
               "(formerly torchtitan/models/llama3/infra/parallelize.py)")


@dataclass(frozen=True)
class CheckpointPolicy:
    """What one transformer layer keeps for its backward pass.

    Attributes
    ----------
    name : str
        The preset's name, or ``"custom"``.
    saved : tuple of str
        Names of :data:`ACTIVATION_NAMES` kept in device memory (the layer input is always kept: it is
        the checkpoint). ``None`` for the modes (``mode`` given), which keep what Korthikanti et al. count.
    offloaded : tuple of str
        Names kept in host memory: not recomputed, no device memory (host transfers not priced).
    every : int >= 1
        Checkpoint every ``every``-th layer with this policy; the others keep everything (torchtitan's
        per-layer selective AC).
    mode : {"none", "selective", "full"} or None
        The planner's recompute mode this preset is, priced by the mode's own formulas.
    every_other_gemm : bool
        torchtitan's per-op rule: save every odd-numbered weight GEMM of the block (resolved per model).
    prune : bool
        Recompute only what the backward pass needs (JAX: XLA drops recomputation whose result no
        gradient reads, so a layer's last GEMM is never recomputed). ``False``: once a gradient reads a
        tensor that was not kept, the backward pass re-runs the layer's forward, skipping only the saved ops
        (PyTorch's non-reentrant checkpoint without
        ``early_stop``, Megatron's checkpointed layer), which makes "save only the input" the planner's full
        recomputation.
    source : str
        Where the policy comes from.
    """

    name: str = "custom"
    saved: Optional[tuple] = ()
    offloaded: tuple = ()
    every: int = 1
    mode: Optional[str] = None
    every_other_gemm: bool = False
    prune: bool = False
    source: str = ""


def _maxtext(name, saved, offloaded=()):
    return CheckpointPolicy(f"maxtext:{name}", tuple(saved), tuple(offloaded), prune=True, source=_MAXTEXT)


#: The named policies (see the module docstring for each one's source). ``torchtitan:layer-<k>`` is
#: accepted for any k >= 1.
POLICIES = {
    "none": CheckpointPolicy("none", None, mode="none", source="Korthikanti et al. 2022, Table 2"),
    "selective": CheckpointPolicy("selective", None, mode="selective", source="Korthikanti et al. 2022, sec. 5"),
    "full": CheckpointPolicy("full", None, mode="full", source="Korthikanti et al. 2022, sec. 4"),
    "maxtext:none": CheckpointPolicy("maxtext:none", None, mode="none", source=_MAXTEXT + " (no remat)"),
    "maxtext:full": _maxtext("full", ()),
    "maxtext:minimal": _maxtext("minimal", _MAXTEXT_MINIMAL),
    "maxtext:minimal_with_context": _maxtext("minimal_with_context", _MAXTEXT_MINIMAL + ("context",)),
    "maxtext:save_dot_with_context_except_mlp": _maxtext("save_dot_with_context_except_mlp",
                                                         _QKV + ("context", "out_proj")),
    "maxtext:save_dot_except_mlpwi": _maxtext("save_dot_except_mlpwi", _QKV + ("out_proj", "mlpwo")),
    "maxtext:save_dot_except_mlp": _maxtext("save_dot_except_mlp", _QKV + ("out_proj",)),
    "maxtext:save_qkv_proj": _maxtext("save_qkv_proj", _QKV),
    "maxtext:save_out_proj": _maxtext("save_out_proj", ("out_proj",)),
    "maxtext:qkv_proj_offloaded": _maxtext("qkv_proj_offloaded", (), ("query_proj", "value_proj", "key_proj")),
    "maxtext:minimal_offloaded": _maxtext("minimal_offloaded", (), _MAXTEXT_MINIMAL),
    "torchtitan:full": CheckpointPolicy("torchtitan:full", (), source=_TORCHTITAN + ", _apply_full_ac"),
    "torchtitan:op": CheckpointPolicy("torchtitan:op", ("context",), every_other_gemm=True,
                                      source=_TORCHTITAN + ", _apply_op_sac (save list: mm, SDPA, "
                                      "reduce-scatter; every second mm recomputed)"),
}


@dataclass(frozen=True)
class _Node:
    """One activation per token of a whole layer: ``elements x bytes_per_element`` bytes (split over TP
    always when ``split``, else only with sequence parallelism), produced by an op of ``flops`` FLOPs per
    token from ``inputs``; ``needed`` when the backward pass reads it."""

    elements: float
    bytes_per_element: float
    split: bool
    needed: bool
    flops: float
    inputs: tuple
    kind: str  # "gemm", "attention" or "elementwise"


def activation_graph(model, fused_attention=True, attention_fraction=1.0):
    """The named activations of one transformer layer of ``model``, per token, with the op making each.

    Each entry is ``(bytes, split, needed, flops, inputs, kind)``: bytes per token of the whole layer
    (16-bit tensors, 1-byte dropout masks; before any TP split), whether TP splits it without sequence
    parallelism (``split``; with SP every tensor is split), whether the backward pass reads it
    (``needed``: Korthikanti et al.'s stored tensors), the forward FLOPs per token of the op that makes it
    (2 per weight for a GEMM; ``4 s w a`` for a fused attention kernel, half each for the scores and the
    weighted sum without one), its inputs, and ``"gemm"``, ``"attention"`` or ``"elementwise"``.

    Weights: the attention block's (``Model.attention_layer_params``) split over query, key, value and
    output in proportion ``a d : kv d : kv d : a d``; the MLP's (the rest of ``Model.active_layer_params``)
    ``(m - 1) / m`` in its input GEMMs, ``1 / m`` in its output GEMM, so that every weight GEMM together is
    ``2 P_layer`` FLOPs per token, as :func:`~course.core.layer_cost.layer_flops_per_token` counts.

    Parameters
    ----------
    model : Model or str
        A dense transformer of :mod:`course.core.catalog`.
    fused_attention : bool, optional
        A fused attention kernel (FlashAttention): no ``attention_scores`` tensor.
    attention_fraction : float in (0, 1], optional
        Share of the score matrix computed (:func:`~course.core.layer_cost.causal_attention_fraction`).

    Returns
    -------
    dict
        Name -> ``(bytes, split, needed, flops, inputs, kind)``, in forward order.

    Source: Korthikanti et al. 2022, Table 2 (per-tensor bytes); Narayanan et al. 2021, eq. 3 (FLOPs);
    Ainslie et al. 2023 (GQA widths); Shazeer 2020 (gated MLP: two input GEMMs).

    Examples
    --------
    A GPT-3 175B layer keeps 34 h bytes per token outside attention (``sbh (10 + 24)`` with TP 1):

    >>> g = activation_graph("gpt3-175b")
    >>> sum(b for b, _, needed, *_ in g.values() if needed) / 12288
    34.0
    """
    m = _dense_model(model)
    frac = float(v.fraction("attention_fraction", attention_fraction, low_open=True))
    return {name: (n.elements * n.bytes_per_element, n.split, n.needed, n.flops, n.inputs, n.kind)
            for name, n in _graph(m, bool(fused_attention), frac).items()}


def _dense_model(model):
    m = _cat.model(model) if isinstance(model, str) else model
    if not isinstance(m, _cat.Model) or not m.is_transformer:
        raise ValueError(f"model must be a transformer Model from the catalog (or its name); got {model!r}")
    if m.is_moe or m.mla or m.attention_params is not None:
        raise ValueError(f"recompute: checkpoint policies cover dense transformers (named activations of a "
                         f"GQA attention and a dense MLP); {m.name} has experts or latent attention: use "
                         f"recompute='none' / 'selective' / 'full' with recompute_modules")
    return m


@functools.lru_cache(maxsize=256)
def _graph(m, fused, frac):
    h, a, d = float(m.hidden), float(m.heads), float(m.head_dim)
    kv = float(m.kv_heads or m.heads)
    q, kvw = a * d, kv * d
    s, w = float(m.seq_len), float(m.score_width)
    att = m.attention_layer_params
    share = att / (2.0 * q + 2.0 * kvw)  # weights per unit of width: q, k, v, o widths
    mlp = m.active_layer_params - att
    mm = m.mlp_matrices
    f = mlp / (mm * h)  # the MLP's inner width, as the planner's weights give it
    drop = bool(m.dropout)
    g = {"layer_input": _Node(h, 2.0, False, True, 0.0, (), "elementwise"),
         "attention_norm": _Node(h, 2.0, False, True, 0.0, ("layer_input",), "elementwise"),
         "query_proj": _Node(q, 2.0, True, True, 2.0 * q * share, ("attention_norm",), "gemm"),
         "key_proj": _Node(kvw, 2.0, True, True, 2.0 * kvw * share, ("attention_norm",), "gemm"),
         "value_proj": _Node(kvw, 2.0, True, True, 2.0 * kvw * share, ("attention_norm",), "gemm")}
    attention = 4.0 * s * w * frac
    if fused:
        g["context"] = _Node(q, 2.0, True, True, attention, ("query_proj", "key_proj", "value_proj"), "attention")
    else:  # softmax output (2 bytes), its dropout mask (1) and output (2) per score; 2 bytes without dropout
        g["attention_scores"] = _Node(a * s, 5.0 if drop else 2.0, True, True, attention / 2,
                                      ("query_proj", "key_proj"), "attention")
        g["context"] = _Node(q, 2.0, True, True, attention / 2, ("attention_scores", "value_proj"), "attention")
    g["out_proj"] = _Node(h, 2.0, False, False, 2.0 * q * share, ("context",), "gemm")
    if drop:
        g["attention_dropout_mask"] = _Node(h, 1.0, False, True, 0.0, (), "elementwise")
    g["residual"] = _Node(h, 2.0, False, True, 0.0, ("layer_input", "out_proj"), "elementwise")
    g["mlp_norm"] = _Node(h, 2.0, False, True, 0.0, ("residual",), "elementwise")
    ups = ("mlpwi_0", "mlpwi_1") if mm == 3 else ("mlpwi",)
    for up in ups:
        g[up] = _Node(f, 2.0, True, True, 2.0 * h * f, ("mlp_norm",), "gemm")
    g["mlp_activation"] = _Node(f, 2.0, True, True, 0.0, ups, "elementwise")
    g["mlpwo"] = _Node(h, 2.0, False, False, 2.0 * h * f, ("mlp_activation",), "gemm")
    if drop:
        g["mlp_dropout_mask"] = _Node(h, 1.0, False, True, 0.0, (), "elementwise")
    return g


def _expand(names, graph, what):
    """Names as the graph has them: aliases expanded, names the model lacks dropped, unknown ones refused."""
    out = set()
    for name in names:
        if not isinstance(name, str) or name not in ACTIVATION_NAMES:
            raise ValueError(f"{what} names activations of {ACTIVATION_NAMES}; got {name!r}")
        if name == "qkv_proj":
            out.update(("query_proj", "key_proj", "value_proj"))
        elif name == "mlpwi" and "mlpwi" not in graph:
            out.update(("mlpwi_0", "mlpwi_1"))
        elif name in graph:
            out.add(name)
    return out


def checkpoint_policy(policy=None, model=None, *, saved=None, offloaded=(), every=1, prune=False):
    """A :class:`CheckpointPolicy` from a preset name, a policy, or a list of saved names.

    Parameters
    ----------
    policy : str or CheckpointPolicy, optional
        A name of :data:`POLICIES` (or ``"torchtitan:layer-<k>"``), or a policy (returned as is, checked).
        Leave out to build one from ``saved``.
    model : Model or str, optional
        Checks the names against the model's layer; not needed for a preset.
    saved, offloaded : sequence of str, optional
        Names of :data:`ACTIVATION_NAMES` kept on the device / in host memory (a custom policy).
    every : int >= 1, optional
        Checkpoint every ``every``-th layer (the others keep everything).
    prune : bool, optional
        Recompute only what the backward pass reads (JAX), not the whole forward but the saved ops
        (PyTorch, Megatron; :class:`CheckpointPolicy`).

    Returns
    -------
    CheckpointPolicy

    Raises ValueError naming ``recompute`` for an unknown preset, ``saved`` / ``offloaded`` for an unknown
    activation name, ``every`` below 1.

    Source: the presets' own (module docstring).

    Examples
    --------
    >>> checkpoint_policy("maxtext:save_qkv_proj").saved
    ('query_proj', 'value_proj', 'key_proj', 'qkv_proj')
    >>> checkpoint_policy(saved=["context", "mlpwo"], every=2).every
    2
    >>> checkpoint_policy("maxtext:save_everything")
    Traceback (most recent call last):
    ...
    ValueError: recompute must be 'none', 'selective', 'full', a preset of POLICIES (maxtext:..., torchtitan:op, torchtitan:layer-<k>) or a CheckpointPolicy; got 'maxtext:save_everything'
    """
    if policy is None:
        if saved is None:
            raise ValueError("saved must list the activations a custom policy keeps (names of ACTIVATION_NAMES)")
        if isinstance(saved, str) or isinstance(offloaded, str):
            raise ValueError(f"saved and offloaded must be lists of names; got {saved!r}, {offloaded!r}")
        for what, names in (("saved", saved), ("offloaded", offloaded)):
            for name in names:
                if not isinstance(name, str) or name not in ACTIVATION_NAMES:
                    raise ValueError(f"{what} names activations of {ACTIVATION_NAMES}; got {name!r}")
        k = int(v.integer("every", every))
        if not isinstance(prune, (bool, np.bool_)):
            raise ValueError(f"prune must be True or False; got {prune!r}")
        policy = CheckpointPolicy("custom", tuple(saved), tuple(offloaded), every=k, prune=bool(prune),
                                  source="a save list (jax.checkpoint_policies.save_only_these_names, "
                                  "torch.utils.checkpoint selective checkpointing)")
    elif isinstance(policy, str):
        found = POLICIES.get(policy)
        layer = re.fullmatch(r"torchtitan:layer-(\d+)", policy)
        if found is None and layer and int(layer.group(1)) >= 1:
            found = CheckpointPolicy(policy, (), every=int(layer.group(1)),
                                     source=_TORCHTITAN + ", _apply_layer_sac (every k-th block fully checkpointed)")
        if found is None:
            raise ValueError("recompute must be 'none', 'selective', 'full', a preset of POLICIES (maxtext:..., "
                             f"torchtitan:op, torchtitan:layer-<k>) or a CheckpointPolicy; got {policy!r}")
        policy = found
    elif not isinstance(policy, CheckpointPolicy):
        raise ValueError(f"recompute must be a mode, a preset name or a CheckpointPolicy; got {policy!r}")
    if policy.mode is None:
        v.integer("every", policy.every)
        for what in ("saved", "offloaded"):
            names = getattr(policy, what)
            if names is None or isinstance(names, str):
                raise ValueError(f"{what} must be a tuple of names of ACTIVATION_NAMES; got {names!r}")
            for name in names:
                if not isinstance(name, str) or name not in ACTIVATION_NAMES:
                    raise ValueError(f"{what} names activations of {ACTIVATION_NAMES}; got {name!r}")
    if model is not None and policy.mode is None:
        _dense_model(model)
    return policy


def _torchtitan_saved(graph):
    """torchtitan's per-op rule on this block: the 1st, 3rd, 5th... weight GEMM in forward order saved."""
    gemms = [name for name, n in graph.items() if n.kind == "gemm"]
    return {name for i, name in enumerate(gemms) if i % 2 == 0}


@functools.lru_cache(maxsize=512)
def _cost(policy, m, fused, frac):
    g = _graph(m, fused, frac)
    keep = _expand(policy.saved, g, "saved") | {"layer_input"}
    if policy.every_other_gemm:
        keep |= _torchtitan_saved(g)
    off = _expand(policy.offloaded, g, "offloaded") - keep
    available = keep | off
    # JAX recomputes what a gradient reads; PyTorch / Megatron re-run the forward but the saved ops, once a
    # gradient reads a tensor that was not kept
    todo = [n for n, node in g.items() if node.needed and n not in available]
    recomputed = set() if policy.prune or not todo else set(g) - available
    while todo:  # each needed tensor not kept, and its inputs' chain back to the nearest kept one
        name = todo.pop()
        if name in recomputed:
            continue
        recomputed.add(name)
        todo.extend(i for i in g[name].inputs if i not in available)
    needed = [n for n, node in g.items() if node.needed]

    def split_bytes(names):  # (bytes split only with SP, bytes always split) per token
        whole = sum(g[n].elements * g[n].bytes_per_element for n in names if not g[n].split)
        return whole, sum(g[n].elements * g[n].bytes_per_element for n in names if g[n].split)

    transient = sorted({n for n in recomputed if g[n].needed} | ({"layer_input"} if recomputed else set()))
    # GEMM inputs the planner keeps in FP8 under precision="fp8" (Korthikanti widths: 3 h + f)
    fp8_widths = {"attention_norm": m.hidden, "context": m.hidden, "mlp_norm": m.hidden,
                  "mlp_activation": g["mlp_activation"].elements}
    total_needed = sum(g[n].elements * g[n].bytes_per_element for n in needed)
    return dict(
        saved=tuple(n for n in g if n in keep), offloaded=tuple(n for n in g if n in off),
        recomputed=tuple(n for n in g if n in recomputed),
        saved_bytes=split_bytes([n for n in g if n in keep]), all_bytes=split_bytes(needed),
        transient_bytes=split_bytes(transient),
        gemm_flops=sum(g[n].flops for n in recomputed if g[n].kind == "gemm"),
        attention_flops=sum(g[n].flops for n in recomputed if g[n].kind == "attention"),
        forward_flops=sum(node.flops for node in g.values()),
        fp8_saved=sum(w for n, w in fp8_widths.items() if n in keep), fp8_all=sum(fp8_widths.values()),
        recomputed_share=(sum(g[n].elements * g[n].bytes_per_element for n in transient) / total_needed))


def policy_cost(policy, model, fused_attention=True, attention_fraction=1.0):
    """What a policy keeps and recomputes in one checkpointed layer, per token.

    Parameters
    ----------
    policy : str or CheckpointPolicy
        A preset name or a policy (not one of the three modes, which the planner prices itself).
    model : Model or str
        A dense transformer.
    fused_attention : bool, optional
    attention_fraction : float in (0, 1], optional
        As in :func:`activation_graph`.

    Returns
    -------
    dict
        ``saved``, ``offloaded``, ``recomputed`` (names), ``saved_bytes``, ``all_bytes`` (what saving
        everything keeps) and ``transient_bytes`` (what one layer re-materialises in its backward pass, its
        input included, as the planner counts full recomputation) as ``(bytes split over TP only with SP,
        bytes always split)`` per token of a whole layer; ``gemm_flops`` and ``attention_flops``
        recomputed per token; ``forward_flops`` of the layer per token; ``every``.

    Source: Chen et al. 2016, sec. 3 (recompute from the nearest saved tensor); Korthikanti et al. 2022,
    Table 2.

    Examples
    --------
    torchtitan's per-op AC on Llama 3 8B recomputes ``wk``, ``wo`` and ``w3``:

    >>> policy_cost("torchtitan:op", "llama3-8b")["recomputed"]
    ('attention_norm', 'key_proj', 'out_proj', 'residual', 'mlp_norm', 'mlpwi_1', 'mlp_activation')
    """
    p = checkpoint_policy(policy)
    if p.mode is not None:
        raise ValueError(f"recompute {p.name!r} is a mode, priced by the planner's own formulas "
                         f"(layer_cost.layer_flops_per_token, layer_cost.layer_activation_bytes)")
    m = _dense_model(model)
    frac = float(v.fraction("attention_fraction", attention_fraction, low_open=True))
    out = dict(_cost(p, m, bool(fused_attention), frac))
    out["every"] = p.every
    return out


def saved_bytes_per_token(policy, model, tp=1, sequence_parallel=False, fused_attention=True):
    """Activation bytes one GPU keeps per token and (average) layer under ``policy``.

    ``sum over kept tensors of bytes / t`` (tensors outside attention and the MLP whole on every TP rank
    without sequence parallelism); with ``every = k`` one layer in k keeps the policy's tensors and the others
    everything: ``(kept + (k - 1) x all) / k``.

    Parameters
    ----------
    policy : str or CheckpointPolicy
    model : Model or str
    tp : int or array_like, >= 1, optional
    sequence_parallel : bool or array_like of bool, optional
    fused_attention : bool, optional

    Returns
    -------
    float or ndarray
        Bytes per token (of the micro-batch's sequences, before CP) and layer.

    Source: Korthikanti et al. 2022, Table 2 and sec. 4.2.2 (sequence parallelism splits the rest).

    Examples
    --------
    Saving only the layer input keeps ``2 h`` bytes per token (full recomputation):

    >>> saved_bytes_per_token("maxtext:full", "llama3-8b") / 4096
    2.0

    Saving every name on GPT-3 keeps Korthikanti et al.'s ``34 h`` and the outputs of the output
    projection and the MLP's second GEMM, which no gradient reads (``2 h`` each):

    >>> saved_bytes_per_token(checkpoint_policy(saved=ACTIVATION_NAMES), "gpt3-175b") / 12288
    38.0
    """
    c = policy_cost(policy, model, fused_attention)
    t = v.integer("tp", tp).astype(float)
    sp = np.asarray(sequence_parallel, dtype=bool)

    def per_gpu(parts):
        whole, split = parts
        return np.where(sp, (whole + split) / t, whole + split / t)

    k = c["every"]
    return v.scalar_or_array((per_gpu(c["saved_bytes"]) + (k - 1) * per_gpu(c["all_bytes"])) / k)


def recomputed_flops_per_token(policy, model, fused_attention=True, attention_fraction=1.0):
    """FLOPs per token and (average) layer that ``policy`` recomputes in the backward pass.

    The op of every recomputed tensor (:func:`policy_cost`): 2 per weight for a GEMM, the attention
    kernel's ``4 s w a`` (half each for scores and weighted sum when unfused), over ``every``. Saving only
    the layer input gives the full recomputation's ``2 P_layer + 4 s w a``; saving everything 0.

    Parameters
    ----------
    policy : str or CheckpointPolicy
    model : Model or str
    fused_attention : bool, optional
    attention_fraction : float in (0, 1], optional

    Returns
    -------
    float
        FLOP per token and layer.

    Source: Narayanan et al. 2021, eq. 3; Chen et al. 2016.

    Examples
    --------
    MaxText's ``minimal`` saves every weight GEMM and recomputes attention only (``4 s w``):

    >>> from course.core import catalog
    >>> m = catalog.model("llama3-8b")
    >>> recomputed_flops_per_token("maxtext:minimal", m) == 4 * m.seq_len * m.score_width
    True
    """
    c = policy_cost(policy, model, fused_attention, attention_fraction)
    return (c["gemm_flops"] + c["attention_flops"]) / c["every"]


def policy_summary(policy, model, fused_attention=True, attention_fraction=1.0):
    """One sentence: the policy, its source, what it saves, the memory it keeps and the FLOPs it recomputes.

    Parameters
    ----------
    policy : str or CheckpointPolicy
    model : Model or str
    fused_attention : bool, optional
    attention_fraction : float in (0, 1], optional

    Returns
    -------
    str

    Source: :func:`policy_cost`.

    Examples
    --------
    Llama 3 8B (``h`` = 4,096, 8 KV heads, ``f`` = 14,336): the projections keep ``2 h + 2 (h / 4)`` bytes
    beside the input's ``2 h``; attention, the output projection and both MLP input GEMMs are recomputed,
    ``4 s h + 2 h^2 + 4 h f`` = 0.40 GFLOP per token (attention counted whole here):

    >>> print(policy_summary("maxtext:save_qkv_proj", "llama3-8b"))  # doctest: +ELLIPSIS
    checkpoint policy maxtext:save_qkv_proj (...): saves layer_input, query_proj, key_proj, value_proj (5.0 h bytes per token and layer at TP 1, 15% of saving everything); recomputes ..., 0.4 GFLOP per token and layer (0.71 of a forward pass)
    """
    p = checkpoint_policy(policy)
    c = policy_cost(p, model, fused_attention, attention_fraction)
    m = _dense_model(model)
    kept, every = sum(c["saved_bytes"]), c["every"]
    flops = (c["gemm_flops"] + c["attention_flops"]) / every
    layers = f"one layer in {every}: " if every > 1 else ""
    offloaded = f"; offloads {', '.join(c['offloaded'])} to host memory (transfers not priced)" if c["offloaded"] else ""
    return (f"checkpoint policy {p.name} ({p.source}): {layers}saves {', '.join(c['saved'])} "
            f"({kept / m.hidden:.1f} h bytes per token and layer at TP 1, {kept / sum(c['all_bytes']):.0%} of saving "
            f"everything){offloaded}; recomputes {', '.join(c['recomputed']) or 'nothing'}, "
            f"{flops / 1e9:.1f} GFLOP per token and layer ({flops / c['forward_flops']:.2f} of a forward pass)")

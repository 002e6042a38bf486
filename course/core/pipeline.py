"""Pipeline parallelism: bubble, schedules, in-flight micro-batches, point-to-point traffic.

``p`` stages, ``m`` micro-batches per step, ``v`` model chunks per stage
(interleaved schedule), ``t_f``/``t_b`` the forward/backward time of one
micro-batch on one stage.

The pipeline bubble lasts ``(p-1)(t_f + t_b)`` for GPipe and for 1F1B alike;
1F1B only lowers the number of micro-batches whose activations a stage keeps.
Interleaving with ``v`` chunks divides the bubble by ``v`` and multiplies the
point-to-point traffic by ``v``. The same bubble is quoted two ways:

- overhead, relative to the ideal compute time ``m (t_f + t_b)``:
  ``(p-1)/(v m)`` (can exceed 1);
- fraction of the whole step: ``(p-1)/(v m + p-1)`` (always below 1);
  ``fraction = overhead / (1 + overhead)``.

Source: D. Narayanan et al., "Efficient Large-Scale Language Model Training on
GPU Clusters Using Megatron-LM", SC21, sec. 2.2 (GPipe, 1F1B, interleaved);
Y. Huang et al., "GPipe", NeurIPS 2019; V. Korthikanti et al. 2022, sec. 4.2.3.
"""

from __future__ import annotations

import numpy as np

from . import _validate as v_
from .tensor import tp_allreduce_bytes

__all__ = [
    "PIPELINE_SCHEDULES",
    "FBW_SHARES",
    "bubble_overhead",
    "bubble_fraction",
    "pipeline_step_time",
    "in_flight_microbatches",
    "in_flight_microbatches_at_stage",
    "min_microbatches_for_bubble",
    "max_layers_per_stage",
    "stages_with_max_layers",
    "layers_per_stage",
    "slowest_stage_layers",
    "p2p_bytes_per_microbatch",
    "p2p_bytes_per_step",
    "pipeline_schedule",
    "TIMELINE_SCHEDULES",
    "NAMED_SCHEDULES",
    "schedule_bubble_overhead",
    "schedule_memory",
]

#: Schedules in use today whose bubble and memory :func:`schedule_bubble_overhead` and
#: :func:`schedule_memory` know (``"interleaved"`` is 1F1B with ``v`` chunks per stage).
NAMED_SCHEDULES = ("gpipe", "1f1b", "interleaved", "zb-h1", "dualpipe")

#: Share of a micro-batch's work in its forward (F), input-gradient (B) and weight-gradient (W)
#: passes: equal thirds, as the zero-bubble paper assumes (Qi et al. 2023, sec. 2: T_F ~ T_B ~ T_W).
FBW_SHARES = (1 / 3, 1 / 3, 1 / 3)

#: Schedules :func:`in_flight_microbatches` knows.
PIPELINE_SCHEDULES = ("gpipe", "1f1b", "interleaved")
#: Schedules :func:`pipeline_schedule` lays out pass by pass: the three above, zero-bubble ZB-H1
#: (forward F, input-gradient B and weight-gradient W passes) and DualPipe (micro-batches fed
#: from both ends of the pipeline).
TIMELINE_SCHEDULES = PIPELINE_SCHEDULES + ("zb-h1", "dualpipe")


def _pmv(p, m, v):
    return (v_.integer("p", p, minimum=1).astype(float),
            v_.integer("m", m, minimum=1).astype(float),
            v_.integer("v", v, minimum=1).astype(float))


def bubble_overhead(p, m, v=1):
    """Bubble time relative to the ideal compute time: ``(p-1) / (v m)``.

    Parameters
    ----------
    p : int or array_like of int
        Pipeline stages, ``>= 1``.
    m : int or array_like of int
        Micro-batches per step, ``>= 1``.
    v : int or array_like of int, optional
        Model chunks per stage (interleaved schedule), ``>= 1``.

    Returns
    -------
    float or ndarray
        Dimensionless; may exceed 1 (workbook 9.6: p = 16, m = 4 gives 3.75).

    Source: Narayanan et al. 2021 (SC21), sec. 2.2.1 and 2.2.2.

    Examples
    --------
    >>> bubble_overhead(4, 12), bubble_overhead(4, 12, 4)
    (0.25, 0.0625)
    """
    p_, m_, vv = _pmv(p, m, v)
    return v_.scalar_or_array((p_ - 1.0) / (vv * m_))


def bubble_fraction(p, m, v=1):
    """Share of the pipeline step that is bubble: ``(p-1) / (v m + p-1)``.

    Equals ``o / (1 + o)`` for the overhead ``o`` of :func:`bubble_overhead`;
    the same for GPipe and 1F1B. Lies in ``[0, 1)``.

    Parameters
    ----------
    p, m, v : int or array_like of int
        As in :func:`bubble_overhead`.

    Returns
    -------
    float or ndarray
        Dimensionless, in ``[0, 1)``.

    Source: Narayanan et al. 2021 (SC21), sec. 2.2.1; Huang et al. 2019 (GPipe), sec. 2.3.

    Examples
    --------
    >>> bubble_fraction(4, 12)
    0.2
    >>> round(bubble_fraction(16, 4), 3)
    0.789
    """
    # one bubble, two denominators: the share is overhead / (1 + overhead)
    overhead = np.asarray(bubble_overhead(p, m, v))
    return v_.scalar_or_array(overhead / (1.0 + overhead))


def pipeline_step_time(p, m, t_forward, t_backward, v=1):
    """Seconds of one pipeline step without communication: ``(m + (p-1)/v)(t_f + t_b)``.

    Parameters
    ----------
    p, m, v : int or array_like of int
        As in :func:`bubble_overhead`.
    t_forward, t_backward : float or array_like
        Forward and backward time of one micro-batch on one stage (all its
        chunks), seconds, ``> 0``.

    Returns
    -------
    float or ndarray
        Seconds.

    Source: Narayanan et al. 2021 (SC21), sec. 2.2.

    Examples
    --------
    >>> pipeline_step_time(4, 8, 1.0, 2.0)
    33.0
    """
    m_ = v_.integer("m", m, minimum=1).astype(float)
    tf = v_.positive("t_forward", t_forward)
    tb = v_.positive("t_backward", t_backward)
    # ideal compute time m (t_f + t_b), stretched by the bubble overhead (p-1)/(v m)
    return v_.scalar_or_array(m_ * (tf + tb) * (1.0 + np.asarray(bubble_overhead(p, m, v))))


def in_flight_microbatches(p, m, schedule="1f1b", v=1):
    """Micro-batches whose activations the first stage holds at its peak.

    - ``gpipe``: all ``m`` forwards run before any backward.
    - ``1f1b``: ``min(p, m)``: ``p-1`` warm-up forwards plus the one in
      steady state.
    - ``interleaved``: Megatron runs ``2(p-1) + (v-1)p`` warm-up chunk
      forwards plus one, each holding ``1/v`` of the stage's layers, which is
      ``p (1 + (p-1)/(p v))`` stage-sized micro-batches; capped at ``m``.
      With ``v = 1`` it is 1F1B: ``min(p, m)``.

    Parameters
    ----------
    p, m, v : int or array_like of int
        As in :func:`bubble_overhead`.
    schedule : str
        One of :data:`PIPELINE_SCHEDULES`.

    Returns
    -------
    float or ndarray
        Micro-batches (stage-sized activation units; fractional for interleaving).

    Source: Narayanan et al. 2021 (SC21), sec. 2.2; Korthikanti et al. 2022,
    sec. 4.2.3 (the factor 1 + (p-1)/(p v)).

    Examples
    --------
    >>> in_flight_microbatches(4, 12, "gpipe"), in_flight_microbatches(4, 12, "1f1b")
    (12.0, 4.0)
    >>> in_flight_microbatches(4, 12, "interleaved", v=2)
    5.5
    """
    v_.choice("schedule", schedule, PIPELINE_SCHEDULES)
    p_, m_, vv = _pmv(p, m, v)
    if schedule == "gpipe":
        out = m_ * np.ones_like(p_ * vv)
    elif schedule == "1f1b":
        out = np.minimum(p_, m_) * np.ones_like(vv)
    else:  # with one chunk the interleaved schedule is 1F1B
        out = np.minimum(np.where(vv > 1, p_ + (p_ - 1.0) / vv, p_), m_)
    return v_.scalar_or_array(out)


def in_flight_microbatches_at_stage(p, m, stage, schedule="1f1b", v=1):
    """Micro-batches whose activations pipeline stage ``stage`` (0 = first) holds at its peak.

    A later stage starts its backward passes sooner, so it holds fewer:

    - ``gpipe``: all ``m`` on every stage.
    - ``1f1b``: ``min(p - stage, m)`` (``p - stage - 1`` warm-up forwards plus one).
    - ``interleaved``: Megatron's ``2(p - stage - 1) + (v-1)p`` warm-up chunk forwards
      plus one, each ``1/v`` of the stage: ``p + (p - 1 - 2 stage)/v`` stage-sized
      micro-batches, capped at ``m``.

    Stage 0 gives :func:`in_flight_microbatches`.

    Parameters
    ----------
    p, m, v : int or array_like of int
        As in :func:`bubble_overhead`.
    stage : int or array_like of int, ``0 <= stage < p``
    schedule : str
        One of :data:`PIPELINE_SCHEDULES`.

    Returns
    -------
    float or ndarray
        Stage-sized micro-batches.

    Source: Narayanan et al. 2021 (SC21), sec. 2.2 (1F1B: stage ``s`` runs ``p - s - 1``
    warm-up forwards); Megatron-LM ``schedules.py``
    (``forward_backward_pipelining_with_interleaving``: ``(p - rank - 1) * 2 + (v - 1) * p``
    warm-up micro-batches); Korthikanti et al. 2022, sec. 4.2.3.

    Examples
    --------
    >>> [float(in_flight_microbatches_at_stage(4, 12, s)) for s in range(4)]
    [4.0, 3.0, 2.0, 1.0]
    >>> in_flight_microbatches_at_stage(4, 12, 1, "interleaved", v=2)
    4.5
    """
    v_.choice("schedule", schedule, PIPELINE_SCHEDULES)
    p_, m_, vv = _pmv(p, m, v)
    s = v_.integer("stage", stage, minimum=0)
    if v_.any_true(s >= p_):
        raise ValueError(f"stage must be below p; got stage={stage!r}, p={p!r}")
    if schedule == "gpipe":
        out = m_ * np.ones_like(p_ * vv * (s + 1))
    elif schedule == "1f1b":
        out = np.minimum(p_ - s, m_) * np.ones_like(vv)
    else:
        out = np.minimum(np.where(vv > 1, p_ + (p_ - 1.0 - 2.0 * s) / vv, p_ - s), m_)
    return v_.scalar_or_array(out)


def _smallest_int_above(x):
    """Smallest whole number strictly above ``x >= 0``, robust to float rounding of exact ratios."""
    nearest = np.round(x)
    on_integer = np.abs(x - nearest) <= 1e-9 * np.maximum(x, 1.0)
    return np.where(on_integer, nearest + 1.0, np.floor(x) + 1.0)


def min_microbatches_for_bubble(p, target, v=1, measure="overhead"):
    """Fewest micro-batches that make the bubble strictly smaller than ``target``.

    ``measure="overhead"``: ``(p-1)/(v m) < target``, so ``m > (p-1)/(v target)``;
    ``measure="fraction"``: ``(p-1)/(v m + p-1) < target``, so
    ``m > (p-1)(1 - target)/(v target)``. At least 1.

    Parameters
    ----------
    p : int or array_like of int
        Stages, ``>= 1``.
    target : float or array_like
        Bubble bound, ``> 0`` (a fraction also ``< 1``).
    v : int or array_like of int, optional
        Chunks per stage, ``>= 1``.
    measure : str, optional
        ``"overhead"`` (workbook 5.6) or ``"fraction"``.

    Returns
    -------
    int or ndarray of int
        Micro-batches.

    Source: Narayanan et al. 2021 (SC21), sec. 2.2; workbook exercise 5.6
    (p = 8, below 5 %: 141, since 140 gives exactly 5 %).

    Examples
    --------
    >>> min_microbatches_for_bubble(8, 0.05)
    141
    >>> min_microbatches_for_bubble(8, 0.05, v=2)
    71
    """
    v_.choice("measure", measure, ("overhead", "fraction"))
    p_ = v_.integer("p", p, minimum=1).astype(float)
    vv = v_.integer("v", v, minimum=1).astype(float)
    if measure == "overhead":
        t = v_.positive("target", target)
        x = (p_ - 1.0) / (vv * t)
    else:
        t = v_.fraction("target", target, low_open=True, high_open=True)
        x = (p_ - 1.0) * (1.0 - t) / (vv * t)
    m = np.maximum(_smallest_int_above(x), 1.0).astype(np.int64)
    return int(m) if m.ndim == 0 else m


def _layers_pp(layers, pp):
    n_layers = v_.integer("layers", layers, minimum=1)
    p_ = v_.integer("pp", pp, minimum=1)
    if v_.any_true(n_layers < p_):
        raise ValueError(f"layers must be >= pp (every stage needs a layer), got layers={layers!r}, pp={pp!r}")
    return n_layers, p_


def max_layers_per_stage(layers, pp):
    """Layers on the fullest stage of a balanced split: ``ceil(layers / pp)``.

    Parameters
    ----------
    layers : int or array_like of int
        Transformer layers, ``>= pp``.
    pp : int or array_like of int
        Stages, ``>= 1``.

    Returns
    -------
    int or ndarray of int
        Layers.

    Source: workbook exercise 9.2 (126 layers on 16 stages: 8 on the fullest).

    Examples
    --------
    >>> max_layers_per_stage(126, 16)
    8
    """
    n_layers, p_ = _layers_pp(layers, pp)
    out = -(-n_layers // p_)
    return int(out) if out.ndim == 0 else out


def stages_with_max_layers(layers, pp):
    """How many stages hold ``max_layers_per_stage`` layers in a balanced split.

    Formula: ``layers - (ceil(layers/pp) - 1) * pp``; the other stages hold
    one layer fewer.

    Parameters
    ----------
    layers, pp : int or array_like of int
        As in :func:`max_layers_per_stage`.

    Returns
    -------
    int or ndarray of int
        Stages.

    Source: workbook exercise 9.2 (14 stages of 8 layers, 2 of 7).

    Examples
    --------
    >>> stages_with_max_layers(126, 16), stages_with_max_layers(128, 16)
    (14, 16)
    """
    n_layers, p_ = _layers_pp(layers, pp)
    out = n_layers - (-(-n_layers // p_) - 1) * p_
    return int(out) if out.ndim == 0 else out


def layers_per_stage(layers, pp):
    """Layers of each stage in a balanced split, fuller stages first.

    Parameters
    ----------
    layers : int
        Transformer layers, ``>= pp``.
    pp : int
        Stages, ``>= 1``.

    Returns
    -------
    ndarray of int
        Shape ``(pp,)``; sums to ``layers``, entries differ by at most one.

    Source: workbook exercise 9.2.

    Examples
    --------
    >>> layers_per_stage(10, 4).tolist()
    [3, 3, 2, 2]
    """
    n_layers, p_ = _layers_pp(layers, pp)
    n_layers, p_ = int(n_layers), int(p_)
    return np.where(np.arange(p_) < n_layers % p_, n_layers // p_ + 1, n_layers // p_).astype(np.int64)


def slowest_stage_layers(layers, pp, first_stage_layers=0, last_stage_layers=0):
    """Layers on the busiest stage when the first and last stage may hold a pinned count.

    Unpinned (``0``): a balanced split, ``ceil(layers / pp)``. With the first and/or last
    stage pinned (Megatron-LM ``--decoder-first-pipeline-num-layers`` /
    ``--decoder-last-pipeline-num-layers``, used to leave room for the embedding and the
    output layer), the other stages share the rest evenly::

        max(first, last, ceil((layers - first - last) / (pp - pinned stages)))

    The slowest stage sets the pace of the whole pipeline.

    Parameters
    ----------
    layers, pp : int or array_like of int
        As in :func:`max_layers_per_stage`.
    first_stage_layers, last_stage_layers : int or array_like of int, optional
        Layers pinned to the first / last stage, ``>= 0`` (0: not pinned). Ignored when
        ``pp = 1``; with ``pp = 2`` and both pinned they must add up to ``layers``.

    Returns
    -------
    int or ndarray of int
        Layers.

    Source: NVIDIA Megatron-LM, ``megatron/core/transformer/transformer_block.py``
    (``get_num_layers_to_build`` with first/last pipeline stage layer counts); Dubey et
    al. 2024, sec. 3.3.2 (Llama 3 405B: one layer fewer on the first and the last stage).

    Examples
    --------
    Llama 3 405B (126 layers) on 16 stages: 8 per stage balanced; 7 on the first and last
    stage leaves 112 for 14 stages, still 8.

    >>> slowest_stage_layers(126, 16), slowest_stage_layers(126, 16, 7, 7)
    (8, 8)
    >>> slowest_stage_layers(126, 16, 6, 6)
    9
    """
    n_layers, p_ = _layers_pp(layers, pp)
    first = v_.integer("first_stage_layers", first_stage_layers, minimum=0)
    last = v_.integer("last_stage_layers", last_stage_layers, minimum=0)
    pinned = (first > 0).astype(np.int64) + (last > 0)
    rest_stages = np.maximum(p_ - pinned, 1)
    rest = n_layers - first - last
    if v_.any_true((p_ > 1) & (rest < 0)):
        raise ValueError(f"first_stage_layers + last_stage_layers must be <= layers; got "
                         f"{first_stage_layers!r} + {last_stage_layers!r} > {layers!r}")
    even = -(-n_layers // p_)
    pinned_max = np.maximum(np.maximum(first, last), -(-np.maximum(rest, 0) // rest_stages))
    out = np.where((p_ > 1) & (pinned > 0), pinned_max, even).astype(np.int64)
    return int(out) if out.ndim == 0 else out


def p2p_bytes_per_microbatch(seq, micro_batch, hidden, bytes_per_element=2.0, v=1):
    """Bytes one stage sends downstream per micro-batch: ``v * b * s * h * bytes``.

    Each of the stage's ``v`` chunks hands an activation tensor of ``b x s x
    h`` elements to the next stage (and receives as many gradient bytes back
    in the backward pass).

    Parameters
    ----------
    seq, micro_batch, hidden : int or array_like
        ``s, b, h``, ``>= 1``.
    bytes_per_element : float or array_like, optional
        2 for 16-bit activations, ``> 0``.
    v : int or array_like of int, optional
        Chunks per stage, ``>= 1``.

    Returns
    -------
    float or ndarray
        Bytes per micro-batch, one direction.

    Source: Narayanan et al. 2021 (SC21), sec. 2.2.2 and 3.

    Examples
    --------
    >>> p2p_bytes_per_microbatch(2048, 1, 12288) / 1e6
    50.331648
    """
    vv = v_.integer("v", v, minimum=1)
    # the tensor at a stage boundary is the same b x s x h activation that TP all-reduces
    return v_.scalar_or_array(vv * np.asarray(tp_allreduce_bytes(seq, micro_batch, hidden, bytes_per_element)))


def p2p_bytes_per_step(activation_bytes, p, m, v=1):
    """Point-to-point bytes of one step over all stage boundaries, both directions.

    Formula: ``(p v - 1) * m * 2 * activation_bytes``: ``p v - 1`` boundaries
    between virtual stages, each crossed by every micro-batch's activation
    forward and its gradient backward.

    Parameters
    ----------
    activation_bytes : float or array_like
        Bytes of one micro-batch's activation tensor at a boundary, ``>= 0``.
    p, m, v : int or array_like of int
        As in :func:`bubble_overhead`.

    Returns
    -------
    float or ndarray
        Bytes.

    Source: Narayanan et al. 2021 (SC21), sec. 2.2.2; workbook exercise 5.4
    (500 MB, p = 4, m = 12, v = 4: 180 GB).

    Examples
    --------
    >>> p2p_bytes_per_step(500e6, 4, 12, 4) / 1e9
    180.0
    """
    a = v_.non_negative("activation_bytes", activation_bytes)
    p_, m_, vv = _pmv(p, m, v)
    return v_.scalar_or_array((p_ * vv - 1.0) * m_ * 2.0 * a)


# --------------------------------------------------------------------------- schedules

def _stage_orders(p, m, v, schedule):
    """Per stage, the ordered list of (microbatch, chunk, is_forward) it runs."""
    orders = []
    if schedule == "gpipe":
        for _ in range(p):
            orders.append([(i, 0, True) for i in range(m)] + [(i, 0, False) for i in range(m)])
        return orders
    if schedule == "1f1b" or v == 1:
        for s in range(p):
            warm = min(p - s - 1, m)
            order = [(i, 0, True) for i in range(warm)]
            for k in range(m - warm):
                order += [(warm + k, 0, True), (k, 0, False)]
            order += [(i, 0, False) for i in range(m - warm, m)]
            orders.append(order)
        return orders
    # interleaved (Megatron-LM): micro-batches go in groups of p; a stage runs
    # chunk 0 of a group, then chunk 1, ...; backward walks the chunks in reverse.
    groups = [list(range(g, g + p)) for g in range(0, m, p)]  # m is a multiple of p
    fwd = [(i, c, True) for grp in groups for c in range(v) for i in grp]
    bwd = [(i, c, False) for grp in groups for c in reversed(range(v)) for i in grp]
    total = m * v
    for s in range(p):
        warm = min(2 * (p - s - 1) + (v - 1) * p, total)
        order = fwd[:warm]
        for k in range(total - warm):
            order += [fwd[warm + k], bwd[k]]
        order += bwd[total - warm:]
        orders.append(order)
    return orders


def _list_schedule(orders, ready, finish):
    """Run each device's ordered list of passes, each as soon as the device is free and its input
    is ready; no communication cost. ``ready(device, op)`` is the time the op's input exists (NaN:
    not yet), ``finish(device, op, start, end) -> duration`` records it. Returns
    ``(device, op, start, end)`` rows sorted by device, then start."""
    free, nxt, rows = [0.0] * len(orders), [0] * len(orders), []
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for d, order in enumerate(orders):
            while nxt[d] < len(order):
                op = order[nxt[d]]
                at = ready(d, op)
                if np.isnan(at):
                    break
                start = max(free[d], at)
                end = free[d] = start + finish(d, op, start)
                rows.append((d, op, start, end))
                nxt[d] += 1
                remaining -= 1
                progressed = True
        if not progressed:  # pragma: no cover - the orders above never deadlock (tested)
            raise RuntimeError("pipeline schedule deadlocked")
    rows.sort(key=lambda r: (r[0], r[2]))
    return rows


def _simulate(p, m, v, orders, tf, tb):
    """1F1B, interleaved and GPipe: each stage's (micro-batch, chunk, is_forward) list run by
    :func:`_list_schedule`; chunk ``c`` of stage ``s`` is virtual stage ``c p + s``."""
    n_virtual = p * v
    f_end = np.full((m, n_virtual), np.nan)
    b_end = np.full((m, n_virtual), np.nan)

    def ready(s, op):
        i, c, forward = op
        k = c * p + s
        if forward:
            return 0.0 if k == 0 else f_end[i, k - 1]
        return f_end[i, k] if k == n_virtual - 1 else b_end[i, k + 1]

    def finish(s, op, start):
        i, c, forward = op
        duration = (tf if forward else tb) / v
        (f_end if forward else b_end)[i, c * p + s] = start + duration
        return duration

    return [(s, i, c, forward, start, end) for s, (i, c, forward), start, end in _list_schedule(orders, ready, finish)]


def _zb_h1_orders(p, m):
    """ZB-H1 per stage: 1F1B's warm-up and order, the backward split into B then W, and stage
    ``s`` holding back its first ``s`` weight-gradient passes, run in the drain where 1F1B idles."""
    orders = []
    for s in range(p):
        warm = min(p - s - 1, m)
        order = [("F", 0, i) for i in range(warm)]
        w = 0
        for k in range(m - warm):
            order += [("F", 0, warm + k), ("B", 0, k)]
            if k >= s:
                order.append(("W", 0, w))
                w += 1
        for j in range(m - warm, m):
            order += [("B", 0, j), ("W", 0, w)]
            w += 1
        order += [("W", 0, i) for i in range(w, m)]
        orders.append(order)
    return orders


def _dualpipe_orders(p, m):
    """DualPipe per device, the eight steps of DeepSeek's ``dualpipe.py`` (``DualPipe.step``).

    Direction 0 enters at device 0, direction 1 at device ``p - 1``; on the first half of the
    devices phase 0 is direction 0, on the second half direction 1. A forward-and-backward pair
    (``F&B``) runs as the forward then the whole backward (B then W), so it takes ``F + B + W``,
    as :func:`schedule_bubble_overhead` takes ``F&B``; a zero-bubble backward leaves its W in a
    queue that the ``W`` steps drain, first in first out.
    """
    half, halves = m // 2, p // 2
    orders = []
    for d in range(p):
        hr, second = min(d, p - 1 - d), int(d >= halves)
        nf, nb, queue, order = [0, 0], [0, 0], [], []

        def forward(phase):
            k = phase ^ second
            order.append(("F", k, nf[k]))
            nf[k] += 1

        def backward(phase, zero_bubble=False):
            k = phase ^ second
            order.append(("B", k, nb[k]))
            (queue.append if zero_bubble else order.append)(("W", k, nb[k]))
            nb[k] += 1

        for _ in range((halves - hr - 1) * 2):                 # step 1: nF0
            forward(0)
        for _ in range(hr + 1):                                 # step 2: nF0F1
            forward(0)
            forward(1)
        for _ in range(halves - hr - 1):                        # step 3: nB1W1F1 (zero bubble)
            backward(1, True)
            order.append(queue.pop(0))
            forward(1)
        for _ in range(half - p + hr + 1):                      # step 4: nF0B1F1B0
            forward(0)
            backward(1)
            forward(1)
            backward(0)
        for _ in range(halves - hr - 1):                        # step 5: nB1F1B0
            backward(1)
            forward(1)
            backward(0)
        zero_bubble = False
        for i in range(hr + 1):                                 # step 6: nB1B0, second half zero bubble
            zero_bubble |= i == (hr + 1) // 2 and hr % 2 == 1
            backward(1, zero_bubble)
            zero_bubble |= i == (hr + 1) // 2 and hr % 2 == 0
            backward(0, zero_bubble)
        for _ in range(halves - hr - 1):                        # step 7: nWB0
            order.append(queue.pop(0))
            backward(0, True)
        order += queue                                          # step 8: nW
        orders.append(order)
    return orders


def _simulate_fbw(p, n, orders, durations, bidirectional):
    """ZB-H1 and DualPipe: each device's (pass, direction, micro-batch) list run by
    :func:`_list_schedule`, each pass once its input exists (the upstream forward, the downstream
    input gradient, its own B for a W). Direction 1 runs from device ``p - 1`` to device 0."""
    f_end = np.full((2, n, p), np.nan)
    b_end = np.full((2, n, p), np.nan)

    def ready(d, op):
        kind, k, i = op
        step = 1 if k == 0 else -1
        first, last = (d == 0, d == p - 1) if k == 0 else (d == p - 1, d == 0)
        if kind == "F":
            return 0.0 if first else f_end[k, i, d - step]
        if kind == "B":
            return f_end[k, i, d] if last else b_end[k, i, d + step]
        return b_end[k, i, d]

    def finish(d, op, start):
        kind, k, i = op
        if kind != "W":
            (f_end if kind == "F" else b_end)[k, i, d] = start + durations[kind]
        return durations[kind]

    return [(d, k * n + i if bidirectional else i, k, kind, start, end)
            for d, (kind, k, i), start, end in _list_schedule(orders, ready, finish)]


def pipeline_schedule(p, m, v=1, schedule="1f1b", t_forward=1.0, t_backward=2.0):
    """Every forward and backward pass of one pipeline step, with start and end times.

    Each stage runs its passes in the order of its schedule, each as early as
    its input allows (the previous virtual stage's forward, or the next one's
    backward); communication takes no time.

    - ``zb-h1`` (zero bubble, Qi et al. 2023, sec. 3.1): the backward pass splits into the
      input gradient B and the weight gradient W (``t_b/2`` each); stages keep 1F1B's order
      but stage ``s`` holds back its first ``s`` W passes and runs them in the drain, where
      1F1B idles. Measured, the idle time is ``(p-1)(F + B - W)`` (the share of
      :func:`schedule_bubble_overhead`) whenever ``m >= p`` and ``W <= F`` (``t_b <= 2 t_f``),
      and the peak in flight stays 1F1B's ``p``.
    - ``dualpipe`` (DeepSeek-AI 2024, sec. 3.2.1; the eight steps of ``dualpipe.py``): half of
      the micro-batches enter at stage 0, the other half at stage ``p-1`` (``direction`` 0 and
      1; micro-batch ``m/2 + i`` is the i-th of direction 1); every device holds one stage of
      each direction. A forward-and-backward pair ``F&B`` runs as F then B then W (``F&B = F
      + B + W``). Measured, the idle time is ``(p/2 - 1)(F&B + B - 3W)`` whenever ``W <= F``
      and the peak in flight is ``p + 1`` (DeepSeek-V3, Table 2). Needs an even ``p`` and an
      even ``m >= 2p``, as DeepSeek's implementation does.

    - ``gpipe``: all ``m`` forwards, then all ``m`` backwards.
    - ``1f1b`` (PipeDream-Flush): stage ``s`` runs ``min(p-s-1, m)`` warm-up
      forwards, then alternates one forward and one backward, then drains.
    - ``interleaved`` (Megatron-LM): stage ``s`` holds chunks ``s, s+p, ...``
      (``v`` of them, each ``1/v`` of its layers, so a chunk pass takes
      ``t/v``); micro-batches go in groups of ``p`` through chunk 0, chunk 1,
      ...; ``2(p-s-1) + (v-1)p`` warm-up chunk forwards, then 1F1B. With
      ``v = 1`` it is 1F1B.

    Measured on the result, the idle share ``1 - busy / (p * makespan)``
    equals :func:`bubble_fraction` ``(p-1)/(v m + p-1)`` for all three
    schedules (``v = 1`` for GPipe and 1F1B) at any ``t_b/t_f`` (tested for
    ``p <= 8``, ``v <= 4``, ``m <= 3p``), and the makespan equals
    :func:`pipeline_step_time`. The interleaved schedule needs ``m`` to be a
    multiple of ``p``, as in Megatron-LM; otherwise it raises ``ValueError``.

    Parameters
    ----------
    p : int
        Stages, ``>= 1``.
    m : int
        Micro-batches, ``>= 1``; a multiple of ``p`` for the interleaved
        schedule with ``v > 1``.
    v : int, optional
        Chunks per stage (interleaved only; ignored otherwise), ``>= 1``.
    schedule : str, optional
        One of :data:`TIMELINE_SCHEDULES`.
    t_forward, t_backward : float, optional
        Forward and backward time of one micro-batch on one stage (all its
        chunks), any time unit, ``> 0``. ZB-H1 and DualPipe split the backward
        into equal B and W passes.

    Returns
    -------
    dict of ndarray
        One row per pass (``2 m v p`` rows; ``3 m p`` for ZB-H1 and DualPipe), sorted
        by stage then start: ``stage``, ``microbatch``, ``chunk``, ``direction``
        (ints), ``phase`` (``"forward"``, ``"backward"``, or ``"weight"`` for a W
        pass), ``start``, ``end`` (floats).

    Source: Narayanan et al. 2021 (SC21), sec. 2.2, Figures 3 and 4; Huang
    et al. 2019 (GPipe); Qi et al. 2023, Zero Bubble Pipeline Parallelism (ICLR 2024),
    sec. 3.1 and Figure 3 (ZB-H1); DeepSeek-AI 2024 (DeepSeek-V3), sec. 3.2.1, Figure 5
    and Table 2, and ``DualPipe.step`` in github.com/deepseek-ai/DualPipe (DualPipe).

    Examples
    --------
    >>> t = pipeline_schedule(4, 8, schedule="1f1b")
    >>> makespan = float(t["end"].max() - t["start"].min())
    >>> makespan, float(1 - (t["end"] - t["start"]).sum() / (4 * makespan))
    (33.0, 0.2727272727272727)
    >>> bubble_fraction(4, 8)
    0.2727272727272727

    ZB-H1 and DualPipe, measured against :func:`schedule_bubble_overhead` (F = B = W):

    >>> def idle(t, p):
    ...     span = t["end"].max() - t["start"].min()
    ...     return round(float(1 - (t["end"] - t["start"]).sum() / (p * span)), 4)
    >>> o = float(schedule_bubble_overhead(4, 8, "zb-h1"))
    >>> idle(pipeline_schedule(4, 8, schedule="zb-h1"), 4), round(o / (1 + o), 4)
    (0.1111, 0.1111)
    >>> o = float(schedule_bubble_overhead(8, 16, "dualpipe"))
    >>> idle(pipeline_schedule(8, 16, schedule="dualpipe"), 8), round(o / (1 + o), 4)
    (0.0588, 0.0588)
    """
    v_.choice("schedule", schedule, TIMELINE_SCHEDULES)
    p_ = int(v_.integer("p", p, minimum=1))
    m_ = int(v_.integer("m", m, minimum=1))
    vv = int(v_.integer("v", v, minimum=1)) if schedule == "interleaved" else 1
    if vv > 1 and m_ % p_:
        raise ValueError(f"m must be a multiple of p for the interleaved schedule (as in Megatron-LM), "
                         f"got m={m!r}, p={p!r}")
    if schedule == "dualpipe" and (p_ % 2 or m_ % 2 or m_ < 2 * p_):
        raise ValueError(f"DualPipe needs an even p and an even m >= 2p (DeepSeek's dualpipe.py); "
                         f"got p={p!r}, m={m!r}")
    tf = float(v_.positive("t_forward", t_forward))
    tb = float(v_.positive("t_backward", t_backward))
    if schedule in ("zb-h1", "dualpipe"):
        durations = {"F": tf, "B": tb / 2, "W": tb / 2}
        if schedule == "zb-h1":
            rows = _simulate_fbw(p_, m_, _zb_h1_orders(p_, m_), durations, False)
        else:
            rows = _simulate_fbw(p_, m_ // 2, _dualpipe_orders(p_, m_), durations, True)
        stage, mb, direction, kind, start, end = (np.array(col) for col in zip(*rows))
        phase = np.select([kind == "F", kind == "B"], ["forward", "backward"], "weight")
        chunk = np.zeros_like(stage)
    else:
        rows = _simulate(p_, m_, vv, _stage_orders(p_, m_, vv, schedule), tf, tb)
        stage, mb, chunk, forward, start, end = (np.array(col) for col in zip(*rows))
        phase = np.where(forward.astype(bool), "forward", "backward")
        direction = np.zeros_like(stage)
    return {
        "stage": stage.astype(np.int64),
        "microbatch": mb.astype(np.int64),
        "chunk": chunk.astype(np.int64),
        "direction": direction.astype(np.int64),
        "phase": phase,
        "start": start.astype(float),
        "end": end.astype(float),
    }


def schedule_bubble_overhead(p, m, schedule="1f1b", v=1, shares=FBW_SHARES):
    """Bubble of a named schedule relative to the ideal compute time ``m (F + B + W)``.

    With ``F``, ``B``, ``W`` the forward, input-gradient and weight-gradient time of one
    micro-batch on one stage (:data:`FBW_SHARES`, equal thirds):

    ============  ============================================  ===========================
    schedule      bubble (time)                                 overhead (F = B = W)
    ============  ============================================  ===========================
    gpipe, 1f1b   ``(p-1)(F + B + W)``                           ``(p-1)/m``
    interleaved   ``(p-1)(F + B + W)/v``                         ``(p-1)/(v m)``
    zb-h1         ``(p-1)(F + B - W)``                           ``(p-1)/(3 m)``
    dualpipe      ``(p/2 - 1)(F&B + B - 3W)``, ``F&B = F+B+W``    ``(p/2-1)/(3 m)``
    ============  ============================================  ===========================

    Parameters
    ----------
    p, m, v : int or array_like of int, >= 1
        Stages, micro-batches, chunks per stage (interleaved only).
    schedule : str
        One of :data:`NAMED_SCHEDULES`.
    shares : (float, float, float), optional
        Relative durations ``(F, B, W)`` of the forward, input-gradient and weight-gradient
        passes, each ``> 0``; default :data:`FBW_SHARES` (equal thirds). The pipeline timeline
        passes ``(t_f, t_b/2, t_b/2)``.

    Returns
    -------
    float or ndarray

    Source: Narayanan et al. 2021 (SC21), sec. 2.2 (1F1B, interleaved); Qi et al. 2023,
    Zero Bubble Pipeline Parallelism (ICLR 2024), sec. 3.1 (ZB-H1: ``(p-1)(T_F + T_B -
    T_W)``); DeepSeek-AI 2024 (DeepSeek-V3), sec. 3.2.1 and Table 2 (DualPipe bubble;
    ``F&B``, the time of a forward and a backward chunk executed overlapped, taken as their sum).

    Examples
    --------
    >>> [round(float(schedule_bubble_overhead(16, 32, s)), 4) for s in ("1f1b", "zb-h1", "dualpipe")]
    [0.4688, 0.1562, 0.0729]
    >>> round(float(schedule_bubble_overhead(4, 8, "zb-h1", shares=(1.0, 0.5, 0.5))), 4)  # t_b = t_f
    0.1875
    """
    v_.choice("schedule", schedule, NAMED_SCHEDULES)
    p_, m_, vv = _pmv(p, m, v)
    if len(shares) != 3:
        raise ValueError(f"shares must be three durations (F, B, W); got {shares!r}")
    f, b, w = (float(v_.positive("shares", x)) for x in shares)
    if schedule in ("gpipe", "1f1b"):
        bubble = (p_ - 1) * (f + b + w) * np.ones_like(vv)
    elif schedule == "interleaved":
        bubble = (p_ - 1) * (f + b + w) / vv
    elif schedule == "zb-h1":
        bubble = (p_ - 1) * (f + b - w) * np.ones_like(vv)
    else:
        bubble = np.maximum(p_ / 2 - 1, 0.0) * ((f + b + w) + b - 3 * w) * np.ones_like(vv)
    return v_.scalar_or_array(bubble / (m_ * (f + b + w)))


def schedule_memory(p, m, schedule="1f1b", v=1):
    """Activations (stage-sized micro-batches) and parameter copies the fullest stage holds.

    ``1f1b`` and ``zb-h1``: ``min(p, m)`` micro-batches, one copy of the weights (ZB-H1
    keeps 1F1B's peak memory); ``interleaved``: ``p + (p-1)/v``; ``gpipe``: ``m``;
    ``dualpipe``: ``p + 1`` micro-batches and two copies of the stage's parameters (each
    device runs both ends of a bidirectional pipeline).

    Parameters
    ----------
    p, m, v : int or array_like of int, >= 1
    schedule : str
        One of :data:`NAMED_SCHEDULES`.

    Returns
    -------
    (activations, parameter_copies) : tuple of float or ndarray

    Source: Narayanan et al. 2021, sec. 2.2; Korthikanti et al. 2022, sec. 4.2.3; Qi et al.
    2023, sec. 3.1 (ZB-H1 keeps 1F1B's memory); DeepSeek-AI 2024 (DeepSeek-V3), Table 2
    (DualPipe: parameters 2x, activations PP + 1).

    Examples
    --------
    >>> schedule_memory(16, 32, "dualpipe"), schedule_memory(16, 32, "zb-h1")
    ((17.0, 2.0), (16.0, 1.0))
    """
    v_.choice("schedule", schedule, NAMED_SCHEDULES)
    p_, m_, vv = _pmv(p, m, v)
    if schedule == "dualpipe":
        return v_.scalar_or_array(np.minimum(p_ + 1, m_) * np.ones_like(vv)), v_.scalar_or_array(2.0 + 0 * p_)
    name = "1f1b" if schedule == "zb-h1" else schedule
    return in_flight_microbatches(p, m, name, v), v_.scalar_or_array(1.0 + 0 * p_)

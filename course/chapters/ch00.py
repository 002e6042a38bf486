"""Chapter 0: ring all-reduce (workbook exercises 0.1-0.6).

Keys come from :func:`course.core.allreduce_time` and
:func:`course.core.bus_bandwidth` (alpha-beta costs of Thakur, Rabenseifner &
Gropp 2005; nccl-tests bus bandwidth).
"""

from __future__ import annotations

import math

from course import core
from course.core.units import GB, GB_per_s, ms, us

from course.assess.activity import Chapter
from course.assess.authoring import build_exercise, debug_exercise, values_exercise, workbook_listing
from course.assess.probes import log_uniform, make_probes

CHAPTER = {
    "title": "Chapter 0 \u00b7 Ring all-reduce",
    "intro": (
        "Data-parallel training keeps one copy of the model on every GPU. After each backward pass "
        "every GPU holds its *own* gradient, and every GPU needs the *sum* of all of them before the "
        "optimizer step. That operation is an **all-reduce**. This chapter derives what a ring "
        "all-reduce costs, why it is the bandwidth-optimal way to do it for large messages, and when "
        "a tree wins instead.\n\n"
        "You need: the parameter count of a transformer (about 12\u00b7L\u00b7d\u00b2) and the meaning "
        "of bandwidth (bytes per second) and latency (seconds per message). Units in this notebook: "
        "GB = 10\u2079 bytes, GB/s = 10\u2079 bytes per second, ms = 10\u207b\u00b3 s, "
        "\u00b5s = 10\u207b\u2076 s."
    ),
    "concept": [
        "## Concepts\n\n"
        "**The naive way.** Every GPU sends its M bytes to GPU 0, which adds them and sends the sum "
        "back. GPU 0's network port then carries (N\u22121)\u00b7M bytes in and (N\u22121)\u00b7M bytes "
        "out while every other port idles, so the time grows like N\u00b7M/B.\n\n"
        "**The ring.** Put the N GPUs in a logical ring and cut every gradient into N chunks of M/N "
        "bytes.\n\n"
        "1. *Reduce-scatter* (N\u22121 steps): in every step each GPU sends one chunk to its right "
        "neighbour and adds the chunk arriving from its left neighbour to its own copy. After N\u22121 "
        "steps each GPU owns the complete sum of one chunk.\n"
        "2. *All-gather* (N\u22121 steps): the finished chunks travel once more around the ring until "
        "every GPU holds all N of them.\n\n"
        "Each GPU sends M/N bytes per step for 2(N\u22121) steps, so it sends (and receives)\n\n"
        "$$V_\\text{ring} = 2\\,\\frac{N-1}{N}\\,M \\quad [\\text{bytes per GPU}]$$\n\n"
        "which tends to 2M as N grows: adding GPUs barely adds traffic per GPU. No all-reduce can move "
        "less per GPU, so this is the bandwidth lower bound.\n\n"
        "**Time (\u03b1-\u03b2 model).** With per-step latency \u03b1 (s) and link bandwidth B "
        "(bytes/s in one direction; all links work at once):\n\n"
        "$$T_\\text{ring} = 2(N-1)\\,\\alpha + 2\\,\\frac{N-1}{N}\\,\\frac{M}{B}$$\n\n"
        "Source: Thakur, Rabenseifner & Gropp, *Optimization of Collective Communication Operations "
        "in MPICH*, IJHPCA 19(1), 2005; Patarasuk & Yuan, *Bandwidth optimal all-reduce algorithms "
        "for clusters of workstations*, JPDC 69(2), 2009.\n\n"
        "**A binomial tree** reduces to a root in \u2308log\u2082N\u2309 rounds and broadcasts back in "
        "as many; without pipelining each round moves the whole message, so "
        "$T_\\text{tree} = 2\\lceil\\log_2 N\\rceil(\\alpha + M/B)$. Fewer steps (less latency) but "
        "the full message on every round: trees win for small messages, rings for large ones.\n\n"
        "**Bus bandwidth.** nccl-tests reports *algbw* = M / T and *busbw* = algbw \u00b7 2(N\u22121)/N. "
        "busbw is the rate at which each GPU actually moved data, so it can be compared with the link's "
        "peak; it is not itself a link speed.",
    ],
}

#: this chapter as one activity (listed in :mod:`course.activities`); the exercises below add to it
ACTIVITY = CH = Chapter('ch00', 'ch00_ring_allreduce', **CHAPTER)


def _ring_seconds(message_gb, n, bw_gbs, latency_us=0.0):
    return core.allreduce_time(message_gb * GB, n, bw_gbs * GB_per_s, latency_us * us, algorithm="ring")


def _bytes_per_gpu(message_bytes, n):
    # bytes each rank sends in a ring all-reduce: 2(N-1)/N * M
    return core.allreduce_traffic_bytes(message_bytes, n, algorithm="ring")


# 0.1 ---------------------------------------------------------------------------
values_exercise(
    CH, "0.1", "All-reduce volume per GPU", kind="Derive",
    spec={"message_gb": 1.0, "n": 8},
    vary=lambda s, rng: dict(s, message_gb=float(rng.choice([0.5, 1, 2, 4, 10])), n=rng.choice([4, 8, 16, 64])),
    prompt=lambda s: (f"{s['n']} GPUs each hold a gradient of M = {s['message_gb']:g} GB. How many GB does "
                      "**each** GPU send during one ring all-reduce (reduce-scatter plus all-gather)?"),
    answers={"volume_gb": "GB"},
    key=lambda s: {"volume_gb": _bytes_per_gpu(s["message_gb"] * GB, s["n"]) / GB},
    solution=lambda s: f"volume_gb = 2 * {s['message_gb']!r} * ({s['n']} - 1) / {s['n']}",
    derivation=lambda s: (
        f"V = 2\u00b7M\u00b7(N\u22121)/N = 2 \u00d7 {s['message_gb']:g} GB \u00d7 {s['n'] - 1}/{s['n']} = "
        f"**{_bytes_per_gpu(s['message_gb'] * GB, s['n']) / GB:.4g} GB**: half in the reduce-scatter, half "
        f"in the all-gather. With 1000 GPUs it would be {_bytes_per_gpu(s['message_gb'] * GB, 1000) / GB:.4g} GB: "
        "the volume per GPU hardly depends on N."),
)

# 0.2 ---------------------------------------------------------------------------
values_exercise(
    CH, "0.2", "Ring all-reduce time", kind="Derive",
    spec={"message_gb": 2.0, "n": 8, "bw_gbs": 50.0},
    vary=lambda s, rng: dict(s, message_gb=float(rng.choice([0.5, 1, 2, 4, 8])), n=rng.choice([4, 8, 16, 32]),
                             bw_gbs=float(rng.choice([25, 50, 100, 200]))),
    prompt=lambda s: (f"{s['n']} GPUs form a ring; every link carries {s['bw_gbs']:g} GB/s in each direction. "
                      f"The gradient is M = {s['message_gb']:g} GB. Ignoring latency, how long does the ring "
                      "all-reduce take?"),
    answers={"time_ms": "ms"},
    key=lambda s: {"time_ms": _ring_seconds(s["message_gb"], s["n"], s["bw_gbs"]) / ms},
    solution=lambda s: f"time_ms = 2 * {s['message_gb']!r} * ({s['n']} - 1) / {s['n']} / {s['bw_gbs']!r} * 1000",
    derivation=lambda s: (
        f"Each GPU sends 2\u00b7M\u00b7(N\u22121)/N = {_bytes_per_gpu(s['message_gb'] * GB, s['n']) / GB:.4g} GB, "
        f"and all links work in parallel at {s['bw_gbs']:g} GB/s, so T = "
        f"{_bytes_per_gpu(s['message_gb'] * GB, s['n']) / GB:.4g} / {s['bw_gbs']:g} s = "
        f"**{_ring_seconds(s['message_gb'], s['n'], s['bw_gbs']) / ms:.4g} ms**. A latency of 5 \u00b5s per step "
        f"would add only 2(N\u22121)\u00b75 \u00b5s = {2 * (s['n'] - 1) * 5} \u00b5s: bandwidth dominates large messages."),
)

# 0.3 ---------------------------------------------------------------------------
def _utilization_pct(s):
    busbw = core.bus_bandwidth(s["message_gb"] * GB, s["n"], s["measured_ms"] * ms)
    return 100.0 * busbw / (s["peak_gbs"] * GB_per_s)


def _vary_utilization(s, rng):
    # choose the utilisation first so the measured time always means 45-90 % of the peak
    s = dict(s, message_gb=float(rng.choice([1, 2, 4, 8])), n=rng.choice([4, 8, 16]),
             peak_gbs=float(rng.choice([300, 450, 900])))
    # 18 shares of the peak, each more than 4 % from the next (6 let a copied answer pass one pair in 7)
    busbw_gbs = rng.choice([0.40, 0.42, 0.44, 0.46, 0.48, 0.50, 0.53, 0.56, 0.59, 0.62, 0.65, 0.68, 0.71, 0.75,
                            0.79, 0.83, 0.87, 0.91]) * s["peak_gbs"]
    s["measured_ms"] = round(_bytes_per_gpu(s["message_gb"] * GB, s["n"]) / GB / busbw_gbs * 1000, 1)
    return s


values_exercise(
    CH, "0.3", "Bandwidth utilization", kind="Trace",
    spec={"message_gb": 4.0, "n": 8, "measured_ms": 30.0, "peak_gbs": 300.0},
    vary=lambda s, rng: _vary_utilization(s, rng),
    prompt=lambda s: (f"{s['n']} GPUs are linked by NVLink with a peak of {s['peak_gbs']:g} GB/s per GPU. A ring "
                      f"all-reduce of {s['message_gb']:g} GB is measured at {s['measured_ms']:g} ms. What share "
                      "of the peak did each GPU achieve (its bus bandwidth over the peak)?"),
    answers={"utilization_pct": "% of peak"},
    key=lambda s: {"utilization_pct": _utilization_pct(s)},
    solution=lambda s: (f"busbw_gbs = 2 * {s['message_gb']!r} * ({s['n']} - 1) / {s['n']} / ({s['measured_ms']!r} / 1000)\n"
                        f"utilization_pct = 100 * busbw_gbs / {s['peak_gbs']!r}"),
    derivation=lambda s: (
        f"Each GPU moved 2\u00b7{s['message_gb']:g}\u00b7{s['n'] - 1}/{s['n']} = "
        f"{_bytes_per_gpu(s['message_gb'] * GB, s['n']) / GB:.4g} GB in {s['measured_ms']:g} ms, a bus bandwidth of "
        f"{core.bus_bandwidth(s['message_gb'] * GB, s['n'], s['measured_ms'] * ms) / GB_per_s:.4g} GB/s; "
        f"over the {s['peak_gbs']:g} GB/s peak that is **{_utilization_pct(s):.3g} %**. Well-tuned NCCL typically "
        "reaches 75-85 %: protocol overhead, chunking and synchronisation take the rest."),
)

# 0.4 ---------------------------------------------------------------------------
def _ring_tree(s):
    ring = _ring_seconds(s["message_gb"], s["n"], s["bw_gbs"]) / ms
    tree = core.allreduce_time(s["message_gb"] * GB, s["n"], s["bw_gbs"] * GB_per_s, algorithm="tree") / ms
    return {"ring_ms": ring, "tree_ms": tree, "faster": "ring" if ring < tree else "tree"}


values_exercise(
    CH, "0.4", "Ring versus tree", kind="Trace",
    spec={"message_gb": 4.0, "n": 8, "bw_gbs": 50.0},
    vary=lambda s, rng: dict(s, message_gb=float(rng.choice([0.5, 1, 2, 4, 8])), n=rng.choice([4, 8, 16, 32, 64]),
                             bw_gbs=float(rng.choice([25, 50, 100, 200]))),
    prompt=lambda s: (f"Compare a ring all-reduce with a binomial-tree all-reduce (reduce to a root, then "
                      f"broadcast back, not pipelined) for M = {s['message_gb']:g} GB on N = {s['n']} GPUs with "
                      f"{s['bw_gbs']:g} GB/s per link. Ignore latency. In the tree every one of the "
                      "\u2308log\u2082N\u2309 reduce rounds and \u2308log\u2082N\u2309 broadcast rounds moves the full "
                      "message over one link."),
    answers={"ring_ms": "ms", "tree_ms": "ms", "faster": "'ring' or 'tree'"},
    options={"faster": ["ring", "tree"]},
    key=_ring_tree,
    solution=lambda s: (f"ring_ms = 2 * {s['message_gb']!r} * ({s['n']} - 1) / {s['n']} / {s['bw_gbs']!r} * 1000\n"
                        f"tree_ms = 2 * {math.ceil(math.log2(s['n']))} * {s['message_gb']!r} / {s['bw_gbs']!r} * 1000"
                        f"   # 2 * ceil(log2 {s['n']}) rounds\n"
                        "faster = 'ring' if ring_ms < tree_ms else 'tree'"),
    note=("The workbook calls this a \"binary tree\". What it computes is a binomial tree without "
          "pipelining, 2\u2308log\u2082N\u2309(\u03b1 + M/B), as used here. Pipelined trees (NCCL's double "
          "binary tree) split the message into chunks and get close to the ring's bandwidth term."),
    derivation=lambda s: (
        f"Ring: 2\u00b7M\u00b7(N\u22121)/(N\u00b7B) = **{_ring_tree(s)['ring_ms']:.4g} ms**. Tree: "
        f"2\u00b7\u2308log\u2082 {s['n']}\u2309 rounds \u00d7 M/B = **{_ring_tree(s)['tree_ms']:.4g} ms**. The tree "
        "needs fewer steps but pushes the whole message through one link per round; the ring keeps every link "
        f"busy with M/N bytes. The **{_ring_tree(s)['faster']}** wins for large messages; trees win only when "
        "latency dominates (small messages, many GPUs)."),
)

# 0.5 ---------------------------------------------------------------------------
def _ring_ms_reference(M_gb, N, bw_gbs, latency_us):
    return _ring_seconds(M_gb, N, bw_gbs, latency_us) / ms


build_exercise(
    CH, "0.5", "ring_allreduce_time", spec={"example": [2.0, 8, 50.0, 5.0]},
    vary=lambda s, rng: dict(s, example=[float(rng.choice([0.5, 1, 2, 4, 8])), rng.choice([4, 8, 16, 32]),
                                         float(rng.choice([25, 50, 100, 200])), float(rng.choice([2, 5, 10]))]),
    prompt=lambda s: (
        "Write `ring_allreduce_time(M_gb, N, bw_gbs, latency_us)` that returns the time of a ring all-reduce "
        "in **milliseconds**, with both the bandwidth term and the latency term (one latency per step, "
        "2(N\u22121) steps).\n\n"
        "* `M_gb`: message size in GB (\u2265 0); `N`: number of GPUs (a whole number \u2265 1); "
        "`bw_gbs`: link bandwidth in GB/s (> 0); `latency_us`: latency per step in \u00b5s (\u2265 0).\n"
        "* Raise `ValueError` for any input outside those ranges.\n"
        "* Return a plain Python `float`. Do not call `course.core`: the point is to write it yourself.\n\n"
        f"Worked example: `ring_allreduce_time({', '.join(map(repr, s['example']))})` = "
        f"{_ring_ms_reference(*s['example']):.6g} ms."),
    function="ring_allreduce_time", signature="(M_gb, N, bw_gbs, latency_us)",
    docstring="Ring all-reduce time in ms: 2(N-1) steps of M/N GB each, plus one latency per step.",
    body=("if M_gb < 0 or bw_gbs <= 0 or latency_us < 0 or N < 1 or N != int(N):\n"
          "    raise ValueError('need M_gb >= 0, bw_gbs > 0, latency_us >= 0 and a whole N >= 1')\n"
          "steps = 2 * (N - 1)\n"
          "bandwidth_ms = steps * (M_gb / N) / bw_gbs * 1000\n"
          "latency_ms = steps * latency_us / 1000\n"
          "return float(bandwidth_ms + latency_ms)"),
    reference=_ring_ms_reference,
    probes=make_probes(
        fixed=[[2.0, 8, 50.0, 5.0], [2.0, 8, 50.0, 0.0], [1.0, 1, 10.0, 3.0], [0.001, 1024, 25.0, 10.0],
               [100.0, 2, 900.0, 0.0]],
        random_args=lambda r: [round(log_uniform(r, 1e-3, 100.0), 6), r.randint(2, 4096),
                               round(log_uniform(r, 1.0, 1000.0), 3), round(r.uniform(0.0, 20.0), 3)],
        invalid=[[1.0, 0, 50.0, 5.0], [1.0, -4, 50.0, 5.0], [1.0, 2.5, 50.0, 5.0], [1.0, 8, 0.0, 5.0],
                 [1.0, 8, -50.0, 5.0], [-1.0, 8, 50.0, 5.0], [1.0, 8, 50.0, -5.0]]),
    examples=[[2.0, 8, 50.0, 5.0], [4.0, 8, 50.0, 0.0]],
    derivation=lambda s: (
        "Steps: 2(N\u22121). Each step moves M/N GB at B GB/s and pays one latency: "
        "T = 2(N\u22121)\u00b7(M/N)/B \u00b7 1000 + 2(N\u22121)\u00b7\u03b1/1000 ms. For the worked example "
        f"that is {_ring_ms_reference(s['example'][0], s['example'][1], s['example'][2], 0.0):.6g} ms + "
        f"{2 * (s['example'][1] - 1) * s['example'][3] / 1000:.6g} ms = "
        f"**{_ring_ms_reference(*s['example']):.6g} ms**. Validate before computing: N = 0 would divide by "
        "zero, and a negative bandwidth would give a negative time instead of an error."),
)

# 0.6 ---------------------------------------------------------------------------
#: the listing; ``?x|`` lines are optional (each student's listing shows some, so the buggy line's number
#: varies) and change nothing ``all_reduce_time`` does
LISTING_06 = '''
?a|"""Bandwidth-only timers for collective communication."""
?b|# Units: bytes, bytes per second and seconds throughout.
?c|__all__ = ["all_reduce_time"]
?c|
?d|def gigabytes(n_bytes):
?d|    """n_bytes in GB (10^9 bytes)."""
?d|    return n_bytes / 1e9
?d|
?e|def milliseconds(seconds):
?e|    """seconds in milliseconds."""
?e|    return seconds * 1e3
?e|
?f|def bytes_per_second(gb_per_s):
?f|    """A bandwidth in GB/s (10^9 bytes per second) in bytes per second."""
?f|    return gb_per_s * 1e9
?f|
def all_reduce_time(M, N, BW):
?g|    """Seconds to all-reduce M bytes on each of N GPUs in a ring, links of BW bytes/s."""
?h|    # M: bytes per GPU, N: GPUs in the ring, BW: link bandwidth in bytes/s
?i|    # bytes each GPU sends over the whole all-reduce
    data_per_gpu = 2 * M * (N - 1) / N
?j|    # steps around the ring
    steps = 2 * (N - 1)
?k|    # bytes each GPU sends in one step
    per_step_data = M / N
?l|    # seconds per step
    per_step_time = per_step_data / BW
    total_time = 2 * steps * per_step_time
?m|    # the whole all-reduce, in seconds
    return total_time
'''
#: the workbook's listing (the one a kernel with no student id shows)
BUGGY_06 = workbook_listing(LISTING_06)


def _all_reduce_seconds(M, N, BW):
    return core.allreduce_time(M, N, BW, algorithm="ring")


debug_exercise(
    CH, "0.6", "Find the bug", spec={"example": [2e9, 8, 50e9]},
    vary=lambda s, rng: dict(s, example=[rng.choice([1, 2, 4, 8]) * 1e9, rng.choice([4, 8, 16, 32]),
                                         rng.choice([25, 50, 100]) * 1e9]),
    prompt=lambda s: ("This bandwidth-only ring all-reduce timer (M in bytes, BW in bytes/s, result in "
                      "seconds) returns values twice too large: "
                      f"`all_reduce_time({s['example'][0]:.0e}, {s['example'][1]}, {s['example'][2]:.0e})` should be "
                      f"{_all_reduce_seconds(*s['example']):.6g} s."),
    buggy_source=LISTING_06, buggy_line=6,
    function="all_reduce_time", signature="(M, N, BW)",
    docstring="Bandwidth-only ring all-reduce time in seconds (M bytes, BW bytes/s).",
    body=("steps = 2 * (N - 1)\n"
          "per_step_time = (M / N) / BW\n"
          "return steps * per_step_time"),
    reference=_all_reduce_seconds,
    probes=make_probes(
        fixed=[[2e9, 8, 50e9], [4e9, 8, 50e9], [1e6, 2, 1e9]],
        random_args=lambda r: [round(log_uniform(r, 1e3, 1e11)), r.randint(2, 2048),
                               round(log_uniform(r, 1e9, 1e12))],
        invalid=[]),
    examples=[[2e9, 8, 50e9]],
    derivation=lambda s: (
        f"Line **{s['buggy_line']}** (`total_time = 2 * steps * per_step_time`) is the bug: "
        "`steps = 2 * (N - 1)` already counts both phases, so multiplying by 2 again "
        "doubles the time. The fix is `total_time = steps * per_step_time` (equivalently "
        f"`data_per_gpu / BW`). Example: M = {s['example'][0] / GB:g} GB, N = {s['example'][1]}, "
        f"{s['example'][2] / GB_per_s:g} GB/s gives "
        f"{_all_reduce_seconds(*s['example']) / ms:.4g} ms, not twice that."),
)

"""Lab 06 · The bandwidth invariant, declared once (a :class:`~course.assess.lab.Lab`).

Story (material 002): a 7B model's bf16 gradients (14 GB, which an 80 GB H100
holds next to its weights; Adam's state is sharded with ZeRO-1) must be summed on
128 GPUs over InfiniBand NDR. Act I: how much slower is gathering everything at
one GPU than a ring? Act II: which algorithm for which workload, and when does
communication dominate the step?

Variants (:func:`vary`): Act I's graded ratio is asked for the student's own
GPU count; Act II's graded time is asked for the student's own update (message
size, GPU count and link, drawn so that recursive doubling wins for some students
and Rabenseifner's algorithm for others). The story and the locks keep 128 GPUs
and the 0.5 MB update, so the locks' reveals are about the story's numbers (Act II's says
so, since the student's own N and link move its crossovers); the student's own question
shows the alpha-beta costs with the student's numbers, once Act II is locked (for a student
with no id, its numbers are the story's: it would run the lock's race on the page).
"""

from __future__ import annotations

import random
from typing import Dict, List

from course import core
from course.core import catalog
from course.core.units import GB
from course.assess.items import Lock
from course.assess.lab import Act, Answer, Lab, Reflection, Spec
from course.assess.spec import Cell
from course.instruments.workloads import LARGE_WORKLOAD


NAME = "lab06_bandwidth_invariant"

#: The graded scenario: 128 GPUs on InfiniBand NDR, 7B parameters x 2 bytes of bf16 gradients,
#: a 0.5 MB update (the dashboard's "small update" preset); algorithms within ``tie`` of the
#: fastest count as fastest (the dashboard's tie rule). ``act1_gpus`` is the GPU count of Act I's
#: graded ratio (a student's variant changes it).
SPEC: Spec = {"gpus": 128, "act1_gpus": 128, "link": "InfiniBand NDR", "params": 7e9,
              "gradient_bytes": 7e9 * core.precision_bytes("bf16"),
              "small_bytes": 0.5e-3 * GB, "tie": 0.01,
              "act2_gpus": 128, "act2_link": "InfiniBand NDR", "act2_bytes": 0.5e-3 * GB}


def _act1_gpu_counts(low: int = 16, high: int = 1024, spacing: float = 1.06) -> tuple:
    """Whole 8-GPU nodes from ``low`` to ``high``, each at least ``spacing`` x the one before, without
    the story's 128. The key is about N, so neighbours stay outside each other's 2 % tolerance; 43
    counts make two students share a key about once in 43 pairs (10 counts did once in 10)."""
    counts = [low]
    while (nxt := 8 * -(-counts[-1] * spacing // 8)) <= high:
        counts.append(int(nxt))
    return tuple(n for n in counts if n != 128)


#: The GPU counts Act I draws from (16, 24, ..., 120, 136, ..., 984).
ACT1_GPU_COUNTS = _act1_gpu_counts()


#: Act II's update sizes (bytes) and links a variant draws from: on these links recursive doubling
#: wins below about 160 kB to 1.2 MB (the crossover depends on N and the link), Rabenseifner above
ACT2_BYTES = (20e3, 50e3, 100e3, 200e3, 500e3, 1e6, 2e6, 4e6)
ACT2_LINKS = ("InfiniBand HDR", "InfiniBand NDR", "InfiniBand XDR", "Ethernet 100G", "Ethernet 400G")


def _act2_clear(s: Spec) -> bool:
    """Every algorithm is within the tie of the fastest or at least 5 % slower: the 2 % tolerance of the
    graded time then accepts exactly the fastest (and its ties)."""
    times = allreduce_times(s, s["act2_bytes"], s["act2_gpus"], s["act2_link"]).values()
    best = min(times)
    return all(t <= best * (1 + s["tie"]) or t >= best * 1.05 for t in times)


def vary(s: Spec, rng: random.Random) -> Spec:
    """A student's own GPU count for Act I (the ratio is about N, so every draw has its own key) and
    own update for Act II (size, GPU count, link), never near a crossover."""
    s["act1_gpus"] = rng.choice(ACT1_GPU_COUNTS)
    while True:
        s.update(act2_gpus=rng.choice(ACT1_GPU_COUNTS), act2_link=rng.choice(ACT2_LINKS),
                 act2_bytes=rng.choice(ACT2_BYTES))
        if _act2_clear(s):
            return s


def allreduce_times(s: Spec, message_bytes: float, gpus: int, link_name: str = "") -> Dict[str, float]:
    link = catalog.link(link_name or s["link"])
    return {a: float(core.allreduce_time(message_bytes, gpus, link.bandwidth, link.latency, algorithm=a))
            for a in core.ALLREDUCE_ALGORITHMS}


def naive_over_ring(s: Spec) -> float:
    """Act I key: naive / ring all-reduce time of the gradients on ``act1_gpus`` GPUs (about N)."""
    t = allreduce_times(s, s["gradient_bytes"], s["act1_gpus"])
    return t["naive"] / t["ring"]


def fastest_for_small_update(s: Spec) -> list:
    """Act II key: the algorithms within ``tie`` of the fastest for the small update."""
    t = allreduce_times(s, s["small_bytes"], s["gpus"])
    best = min(t.values())
    return sorted(a for a, seconds in t.items() if seconds <= best * (1 + s["tie"]))


def act2_fastest(s: Spec) -> list:
    """The algorithms within ``tie`` of the fastest for the student's own update (Act II)."""
    t = allreduce_times(s, s["act2_bytes"], s["act2_gpus"], s["act2_link"])
    best = min(t.values())
    return sorted(a for a, seconds in t.items() if seconds <= best * (1 + s["tie"]))


def act2_fastest_us(s: Spec) -> float:
    """Act II key: the time of the fastest all-reduce of the student's own update, in microseconds."""
    return min(allreduce_times(s, s["act2_bytes"], s["act2_gpus"], s["act2_link"]).values()) * 1e6


def _gb_as_on_the_slider(message_bytes: float) -> str:
    """``message_bytes`` in GB as the dashboard's M slider reads it: no exponent (0.00002, not 2e-05).

    >>> [_gb_as_on_the_slider(b) for b in (20e3, 0.5e6, 4e6)]
    ['0.00002', '0.0005', '0.004']
    """
    return f"{message_bytes / GB:.12f}".rstrip("0").rstrip(".")


def _act2_prompt(s: Spec) -> str:
    link = catalog.link(s["act2_link"])
    n, m = s["act2_gpus"], s["act2_bytes"]
    lg = (n - 1).bit_length()  # ceil(log2 N)
    return ("**Your own update: read its time off the dashboard.** Your team's job all-reduces a "
            f"{m / 1e6:g} MB update (M = {m:,.0f} bytes, {_gb_as_on_the_slider(m)} GB on the dashboard's slider) on "
            f"N = {n} GPUs over {link.name} (B = {link.bandwidth / GB:g} GB/s, \u03b1 = {link.latency * 1e6:g} \u00b5s). "
            "Set the dashboard's GPUs, link and M to yours, find the fastest algorithm and assign "
            "`small_update_us`, its time in microseconds (`dashboard.result['best_seconds']` holds it in "
            "seconds).\n\n"
            f"**Math peek for your numbers** (\u2308log\u2082N\u2309 = {lg}): ring 2(N\u22121)\u03b1 + "
            "2(N\u22121)/N \u00b7 M/B; binomial tree 2\u2308log\u2082N\u2309(\u03b1 + M/B); recursive doubling "
            "\u2308log\u2082N\u2309(\u03b1 + M/B); Rabenseifner 2\u2308log\u2082N\u2309\u03b1 + 2(N\u22121)/N \u00b7 M/B. "
            "Few steps win for a small M, few bytes for a large one.")


def act2_numbers(s: Spec) -> Dict[str, float]:
    """What Act II's reveal states, from the core for the act's own scenario (N, link, 0.5 MB):
    the ring/tree crossover of the math peek, the dashboard's crossover where the fastest
    algorithm changes (recursive doubling below, Rabenseifner above) and the times at 0.5 MB."""
    link = catalog.link(s["link"])
    n, b, alpha = s["gpus"], link.bandwidth, link.latency
    times = allreduce_times(s, s["small_bytes"], n)
    return {"ring_tree_crossover": float(core.crossover_message_bytes(n, b, alpha, "ring", "tree")),
            "winner_crossover": float(core.crossover_message_bytes(n, b, alpha, "recursive_doubling",
                                                                   "rabenseifner")),
            **{f"{a}_us": times[a] * 1e6 for a in ("ring", "tree", "rabenseifner", "double_binary_tree")},
            "alpha_us": alpha * 1e6, "bandwidth_gbs": b / GB}


def _act2_reveal(s: Spec) -> str:
    x = act2_numbers(s)
    n, small = s["gpus"], s["small_bytes"] / 1e6
    return (
        f"**What the dashboard shows at {small:g} MB on {n} GPUs.** Ring {x['ring_us']:.0f} µs, binomial tree "
        f"{x['tree_us']:.0f} µs, Rabenseifner {x['rabenseifner_us']:.0f} µs (the double binary tree "
        f"{x['double_binary_tree_us']:.0f} µs, within 1 %). The tree does beat the ring here, but neither wins: "
        "Rabenseifner takes log-many steps like the tree and moves ring-like bytes like the ring.\n\n"
        "**Math peek.** Ring: T = 2(N−1)α + 2(N−1)/N · M/B. Binomial tree: T = 2⌈log₂N⌉(α + M/B). "
        "Rabenseifner: T = 2⌈log₂N⌉α + 2(N−1)/N · M/B, never slower than either. The ring overtakes the "
        "tree once its extra latency costs less than the tree's extra bytes, at "
        f"M ≈ (N−1−⌈log₂N⌉)·α·B / (⌈log₂N⌉−(N−1)/N) = {x['ring_tree_crossover'] / 1e6:.1f} MB "
        f"(N = {n}, α = {x['alpha_us']:g} µs, B = {x['bandwidth_gbs']:g} GB/s): a race between two losers. "
        "The crossover the dashboard marks is where the *fastest* algorithm changes: below "
        f"{x['winner_crossover'] / 1e3:.0f} kB recursive doubling (⌈log₂N⌉ steps, the whole message each) "
        f"wins, above it Rabenseifner; {small:g} MB lies above it.\n\n"
        f"**These are the story's numbers** (N = {n} on {s['link']}). The question below asks about your own "
        "update: its N and link move both crossovers and its size may fall on either side, so set the "
        "dashboard to your numbers and read the fastest algorithm there.")


ACT1 = Act(
    "act1", "One GPU in the middle, or a ring?",
    lock=Lock(
        question="At 128 GPUs, how many times longer does the naive all-reduce take than the ring?",
        # a scale of five, shown as four neighbours, smallest first or largest first (so the right one may sit
        # at either end); the letters of ledgers older than option ids follow the four options shown then
        options={"1x": "about 1x (the same bytes cross the network either way)", "2x": "about 2x",
                 "7x": "about 7x (log2 of 128)", "128x": "about 128x", "16000x": "about 16,000x"},
        correct="128x", ordered=True, shown=4, legacy=("2x", "7x", "128x", "16000x", "1x"),
        banned=("ratio tends to N", "(N-1) M bytes through one port", "(N−1)·M bytes through one port",
                "grows in proportion to N", "about p times slower", "ratio is about p", "naive / ring = 128"),
        explanation="GPU 0 receives and sends (N-1) M bytes through one port, while the ring sends 2(N-1)/N M per "
                    "GPU with all ports busy at once: the ratio tends to N = 128."),
    answers=(Answer(
        "act1_ratio", "naive_over_ring", "Act I: naive / ring time on your cluster", "a plain float, no unit",
        lambda s: ("**Your cluster: read the number off the comparator.** Your team's cluster has "
                   f"N = {s['act1_gpus']} GPUs; the gradients are the same M = {s['gradient_bytes'] / GB:g} GB on "
                   f"{s['link']}. Set the comparator's N to {s['act1_gpus']} and assign `naive_over_ring`, the "
                   "naive time divided by the ring time (`comparator.result` holds both times)."),
        naive_over_ring,
        lambda s: (f"comparator.controls['gpus'].value = {s['act1_gpus']}\n"
                   "naive_over_ring = comparator.result['times']['naive'] / comparator.result['times']['ring']"),
        graded="naive / ring time within 2 %"),),
    reflections=(Reflection(
        "act1_why",
        "Move N on the comparator from 8 to 4096. Why does the ring's time hardly change while the naive time "
        "grows in proportion to N? What, then, *is* the invariant in the lab's title?",
        "Each GPU in a ring sends 2(N−1)/N · M bytes, which tends to 2M: the bytes per GPU (and so the bandwidth "
        "term 2(N−1)/N · M/B) barely depend on N, only the latency term 2(N−1)α grows, and it is tiny for 14 GB. "
        "The naive scheme funnels (N−1)·M bytes through one port each way, so its time grows like N. The "
        "invariant: per-GPU traffic of a ring all-reduce is about 2M whatever N.",
        "1 point: per-GPU bytes 2(N−1)/N·M → 2M, independent of N. 1 point: the naive root port carries (N−1)M, "
        "so its time ∝ N."),),
)

ACT2 = Act(
    "act2", "Which algorithm for which workload?",
    lock=Lock(
        question="For the 0.5 MB update on 128 GPUs, which family wins?",
        options={"ring": "the plain ring", "tree": "a binomial tree", "rabenseifner": "Rabenseifner's algorithm",
                 "naive": "the naive gather at GPU 0"},
        correct="rabenseifner",
        banned=("log-many steps like the tree", "ring-like bytes", "never slower than either", "beat both at every size",
                "winners for the 0.5 MB"),
        explanation=f"At 0.5 MB the ring pays {2 * (SPEC['gpus'] - 1)} latencies; a plain tree pays only "
                    f"{2 * (SPEC['gpus'] - 1).bit_length()} but sends the whole message every round. Rabenseifner "
                    "(and the double binary tree) take log2 N steps and move ring-like bytes, so they win.",
        reveal=_act2_reveal(SPEC)),
    answers=(Answer(
        "act2_small", "small_update_us", "Act II: the fastest all-reduce of your own update", "microseconds",
        _act2_prompt, act2_fastest_us,
        lambda s: ("from course.core import catalog\n"
                   f"dashboard.controls['gpus'].value = {s['act2_gpus']}\n"
                   f"dashboard.controls['link'].value = catalog.link({s['act2_link']!r})\n"
                   f"dashboard.controls['message_gb'].value = {s['act2_bytes'] / GB!r}\n"
                   "small_update_us = dashboard.result['best_seconds'] * 1e6"),
        graded="the fastest algorithm's time within 2 % (an algorithm tied with it within 1 % is accepted)",
        after_lock=True),),  # for a student with no id it is the lock's own race, and its math peek runs it
    reflections=(Reflection(
        "act2_why",
        "NCCL picks its algorithm by message size. Using the dashboard's crossover, explain why a framework "
        "that buckets many small gradients into 25 MB messages runs faster than one that all-reduces every "
        "tensor separately.",
        "Each small all-reduce pays the latency term (2(N−1)α for a ring, about 2 log₂N α for log-step "
        "algorithms) no matter how few bytes it carries; bucketing pays it once per 25 MB and moves into the "
        "bandwidth-bound regime where ring-like algorithms reach nearly the full link bandwidth; it also lets "
        "communication of finished buckets overlap the rest of the backward pass.",
        "1 point: latency per message dominates small messages. 1 point: bigger messages reach the "
        "bandwidth-bound regime (or overlap with backward)."),),
)


#: each instrument of the notebook and the design-ledger entry it restores from and saves to
SAVED = {"comparator": "lab06/comparator", "dashboard": "lab06/dashboard"}


def layout(lab: Lab, s: Spec) -> List[Cell]:
    return [
        Cell("markdown",
             "# Lab 06 · The bandwidth invariant\n\n"
             "Every data-parallel step ends with an all-reduce of the gradients. This lab asks two "
             "questions: how the way GPUs pass data around changes the time of that all-reduce "
             "(Act I), and which algorithm to pick for which message size (Act II).\n\n"
             "**How this lab is graded.** Each prediction you lock earns a completion point (the lock is "
             "saved in `predictions.json` next to this notebook and submitted with it; being wrong costs "
             "nothing). Cells asking for a number or a name are autograded; the written reflections are "
             "graded by hand. A cell marked *Your numbers* shows the numbers of your own question (they "
             "differ from student to student); you are graded on exactly those.\n\n"
             "Units: GB = 10⁹ bytes, GB/s = 10⁹ bytes per second."),
        Cell("setup", lab.setup_source(
            "from course.instruments import AllreduceComparator, AlgorithmDashboard\n"
            "from course.instruments.cards import stakeholder_card, HudFooter\n"
            "hud = HudFooter(prefix='lab06')"), "lab06_setup"),
        Cell("markdown",
             "## Act I · One GPU in the middle, or a ring?\n\n"
             f"Your team trains a {s['params'] / 1e9:g}-billion-parameter model on {s['gpus']} H100 GPUs "
             f"of {catalog.accelerator('H100').memory_name}, {s['gpus'] // 8} nodes joined by {s['link']} "
             f"({catalog.link(s['link']).bandwidth / GB:g} GB/s per direction per GPU). After each backward pass "
             f"every GPU holds {s['gradient_bytes'] / GB:g} GB of bf16 gradients (2 bytes per parameter), next to "
             "the same amount of bf16 weights; ZeRO-1 shards Adam's state across the GPUs so that all of it "
             "fits.\n\n"
             "A colleague proposes the obvious scheme: every GPU sends its gradients to GPU 0, GPU 0 "
             "adds them up and sends the sum back (\"naive\"). The alternative is a ring all-reduce: "
             "each GPU only ever talks to its neighbours and sends 2(N−1)/N · M bytes in total."),
        Cell("code", "stakeholder_card('Infrastructure lead', 'Our step time doubled when we went from 16 to 128 '\n"
                     "                 'GPUs. Is the network too slow, or are we using it badly?', act='Act I')",
             "lab06_act1_story"),
        Cell("markdown", "Pick an option and press **Lock**. The comparator below appears once your prediction is "
                         "locked; the lock is saved in `predictions.json`, which you submit with this notebook."),
        *lab.lock_cells("act1"),
        Cell("code", "comparator = lab.gate('act1', AllreduceComparator(gpus=128, message_gb=14))\n"
                     f"comparator.restore({SAVED['comparator']!r})",
             "lab06_act1_comparator"),
        lab.reveal_cell("act1"),
        *lab.answer_cells("act1_ratio", s),
        *lab.reflection_cells("act1_why"),
        Cell("markdown",
             "## Act II · Which algorithm for which workload?\n\n"
             "Rings minimise the bytes but need 2(N−1) sequential steps, each paying the latency α. Trees "
             "and recursive doubling need only about log₂N steps. The α-β model: "
             "T = (steps) · α + (bytes per GPU) / B.\n\n"
             "**Rabenseifner's algorithm** is a reduce-scatter by recursive halving followed by an all-gather by "
             "recursive doubling; the **double binary tree** (NCCL) pipelines the message through two "
             "complementary trees.\n\n"
             f"Three workloads share the cluster: a 175B model's gradients ({LARGE_WORKLOAD.split('(')[1][:-1]}), "
             "your 7B model's (14 GB) and a small 0.5 MB update (a few layer norms, a learning-rate signal)."),
        *lab.lock_cells("act2"),
        Cell("code", "dashboard = lab.gate('act2', AlgorithmDashboard(gpus=128))\n"
                     f"dashboard.restore({SAVED['dashboard']!r})", "lab06_act2_dashboard"),
        Cell("markdown",
             f"Try every workload preset. With the {LARGE_WORKLOAD.split('(')[1][:-1]} preset the dashboard raises the **communication "
             "over 50 %** warning: the all-reduce takes longer than the compute it follows. Find the crossover "
             "message size where the winner changes."),
        lab.reveal_cell("act2"),
        *lab.answer_cells("act2_small", s),
        *lab.reflection_cells("act2_why"),
        Cell("markdown", "## Ledger and HUD\n\nSave the comparator and the dashboard as you left them (with the failure "
                         "states they showed) to the design ledger; the HUD sums up this lab's entries. The ledger "
                         "only grows: each instrument took back what you saved before, so Run All or a restart "
                         "keeps it, and an instrument still locked behind its prediction saves nothing."),
        Cell("code", "".join(f"{name}.record()\n" for name in SAVED) + "hud.refresh()\nhud", "lab06_hud"),
    ]


ACTIVITY = LAB = Lab(NAME, "lab06", "Lab 06 · The bandwidth invariant", SPEC, (ACT1, ACT2), layout, vary)

"""Lab 05 · The parallelism paradox, declared once (a :class:`~course.assess.lab.Lab`).

Story (materials 000 and 004): Act I, a 7B data-parallel job whose MFU falls
52 % -> 38 % -> 19 % from 8 to 512 GPUs; Act II, a TP x PP x DP design for
GPT-3 175B on 1,024 H100s; Part 3, a synchronization audit (sync vs async,
stragglers, ZeRO checkpoints, and the graded ZeRO-vs-async savings
challenge).

Tracks (material 004): the selector at the top switches the message card of
each act (:mod:`course.labs.tracks`) and the instruments' hardware
(``track.link_to``); Cloud is the default and every graded number is defined
for Cloud, from :data:`SPEC`.

Variants (:func:`vary`): the story and the instruments keep the lead's
numbers; each graded question asks about the student's own job (model size,
GPUs and fabric in Act I, the TP x PP x DP layout in Act II, the cluster in
Part 3), shown by a read-only prompt cell.
"""

from __future__ import annotations

import random
from typing import List

from course import core
from course.core import catalog, memory, units
from course.core.units import GB
from course.assess.items import Lock
from course.assess.lab import Act, Answer, Lab, Reflection, Spec, cases
from course.assess.spec import Cell


#: the lead's GPU: its memory is written the one way the catalog states it (85.5 GB, GB = 10⁹ bytes)
H100 = catalog.accelerator("H100")
NAME = "lab05_parallelism_paradox"

#: The graded inputs (Cloud track), as the lead's story has them; a student's variant replaces
#: them (:func:`vary`). Act I: the 7B model's bf16 gradients on 512 GPUs over InfiniBand NDR.
#: Act II: the source's layout B. Part 3 holds the synchronization audit's defaults: 5 % of the
#: workers straggle at 1.15x the normal step; the full checkpoint takes 98 s from one rank (workbook
#: 7.2: 980 GB at 10 GB/s); 50,000 GPU-hours between failures per GPU (Dubey et al. 2024, sec. 3.3.4:
#: 419 interruptions in 54 days on 16,384 GPUs); 2 minutes to restart (workbook ch. 7).
SPEC: Spec = {
    "act1_params_b": 7, "act1_gpus": 512, "act1_link": "InfiniBand NDR",
    "act2_model": "gpt3-175b", "act2_cluster": "h100-1024", "act2_tp": 8, "act2_pp": 4, "act2_dp": 32,
    "act2_microbatches": 8, "act2_micro_batch": 1,
    "workers": 1024, "straggler_fraction": 0.05, "slowdown": 1.15, "checkpoint_seconds": 98.0,
    "gpu_mtbf_seconds": 50_000 * units.hour, "restart_seconds": 2 * units.minute, "accelerator": "H100",
    "hours_per_month": core.HOURS_PER_MONTH,
}


#: Act I cases a variant draws from: (billions of parameters, link). The ring's time is about
#: 4P / B, so sizes a factor 2 or 4 apart collide across HDR/NDR/XDR; these 44 keep every key more
#: than 5 % from the next (at N = 1,024), so two students share a key about once in 44 pairs.
_HDR, _NDR, _XDR = "InfiniBand HDR", "InfiniBand NDR", "InfiniBand XDR"
ACT1_CASES = cases({
    6.7: (_XDR,), 7: (_HDR, _NDR), 8: (_HDR, _NDR, _XDR), 9: (_HDR, _NDR, _XDR), 11: (_HDR, _NDR, _XDR),
    13: (_HDR, _NDR, _XDR), 14: (_HDR,), 15: (_HDR, _NDR, _XDR), 20: (_HDR, _NDR, _XDR), 22: (_HDR,),
    30: (_HDR,), 32: (_HDR, _NDR), 34: (_HDR, _NDR, _XDR), 40: (_HDR,), 46: (_HDR,), 52: (_HDR, _NDR),
    65: (_HDR,), 70: (_HDR,), 72: (_NDR, _XDR), 104: (_HDR,), 110: (_HDR, _NDR, _XDR), 175: (_HDR, _NDR, _XDR)})

#: Act II cases a variant draws from: (TP, PP, sequences per micro-batch) with DP = 1,024 / (TP x PP).
#: TP in 2..8 (one node), PP in 2..32 (each divides GPT-3's 96 layers), micro-batches of 1 to 8
#: sequences (the configurator's choices); the source's answer TP 8, PP 4 is left out, since its
#: reveal states its memory. Of the 56 such cases, these 33 keep every memory more than 4.5 % from
#: the next under the planner (the others nearly coincide, e.g. 4-8-2 and 4-4-1).
ACT2_CASES = ((2, 2, 1), (2, 2, 2), (2, 2, 4), (2, 2, 8), (2, 4, 2), (2, 4, 4), (2, 8, 1), (2, 8, 4),
              (2, 8, 8), (2, 16, 2), (2, 16, 8), (2, 32, 1), (2, 32, 4), (4, 2, 8), (4, 4, 4), (4, 4, 8),
              (4, 8, 2), (4, 8, 4), (4, 16, 1), (4, 16, 2), (4, 16, 8), (4, 32, 1), (4, 32, 4), (8, 2, 1),
              (8, 2, 8), (8, 8, 2), (8, 8, 8), (8, 16, 1), (8, 16, 4), (8, 16, 8), (8, 32, 1), (8, 32, 2),
              (8, 32, 4))


def vary(s: Spec, rng: random.Random) -> Spec:
    """A student's own inputs for the graded questions (every draw is a valid case whose key
    differs from the others' by more than the 2 % tolerance; Part 3's reveal, async saves more, holds
    for every draw)."""
    s["act1_params_b"], s["act1_link"] = rng.choice(ACT1_CASES)
    s["act1_gpus"] = rng.choice((256, 512, 1024))
    tp, pp, micro_batch = rng.choice(ACT2_CASES)
    cluster = catalog.cluster(s["act2_cluster"])
    s.update(act2_tp=tp, act2_pp=pp, act2_dp=cluster.nodes * cluster.node.gpus_per_node // (tp * pp),
             act2_microbatches=rng.choice(tuple(m for m in (2 * pp, 4 * pp) if m <= 64)),  # the slider's max
             act2_micro_batch=micro_batch)
    s["workers"] = rng.choice((256, 512, 2048, 4096))
    s["straggler_fraction"] = rng.choice((0.03, 0.04, 0.06, 0.08))
    s["slowdown"] = rng.choice((1.1, 1.2, 1.25, 1.3))
    # the same 980 GB checkpoint written at 10 to 20 GB/s, and two per-GPU failure rates: zero_saves
    # depends on N and on delta / MTBF, whose 10 ratios here stay more than 4 % apart (40 keys, not 4);
    # a third MTBF (30,000 h) would let ZeRO out-save async on the largest clusters, against the reveal
    s["checkpoint_seconds"] = rng.choice((98.0, 82.0, 70.0, 58.0, 49.0))
    s["gpu_mtbf_seconds"] = rng.choice((50_000, 80_000)) * units.hour
    return s


def act1_gradient_bytes(s: Spec) -> float:
    """bf16 gradients of the Act I model: 2 bytes per parameter."""
    return s["act1_params_b"] * 1e9 * memory.precision_bytes("bf16")


def act1_allreduce_seconds(s: Spec) -> float:
    """Ring all-reduce of the Act I model's bf16 gradients on ``act1_gpus`` GPUs over ``act1_link``."""
    link = catalog.link(s["act1_link"])
    return float(core.allreduce_time(act1_gradient_bytes(s), s["act1_gpus"], link.bandwidth, link.latency,
                                     algorithm="ring"))


def act2_plain_memory_gb(s: Spec) -> float:
    """Planner memory per GPU (GB) of the Act II layout with ZeRO 0 and no recomputation (errata 5)."""
    return core.plan(s["act2_model"], s["act2_cluster"], tp=s["act2_tp"], pp=s["act2_pp"], dp=s["act2_dp"],
                     micro_batch=s["act2_micro_batch"], num_microbatches=s["act2_microbatches"]).memory_total / GB


def part3_savings(s: Spec) -> dict:
    """Part 3: today's monthly bill and what async SGD and ZeRO-sharded checkpoints save, in dollars.

    The synchronization audit shows the same numbers (both call these core functions).
    """
    n = s["workers"]
    bill = core.monthly_bill(n, catalog.accelerator(s["accelerator"]).price_per_hour, s["hours_per_month"])
    return {"bill": float(bill),
            "async_saves": float(core.async_monthly_savings(bill, n, s["straggler_fraction"], s["slowdown"])),
            "zero_saves": float(core.sharded_checkpoint_monthly_savings(
                bill, s["checkpoint_seconds"], n, core.cluster_mtbf(s["gpu_mtbf_seconds"], n),
                s["restart_seconds"]))}


def _act1_prompt(s: Spec) -> str:
    link = catalog.link(s["act1_link"])
    return (f"**Your team's next job (Cloud track).** A {s['act1_params_b']:g} B-parameter model trained with pure "
            f"data parallelism on {s['act1_gpus']:,} H100s, eight per node, the nodes joined by {link.name} "
            f"(B = {link.bandwidth / GB:g} GB/s per direction per GPU, α = {link.latency * 1e6:.0f} µs). Assign "
            "`act1_allreduce_s`: the time in seconds of one ring all-reduce of its bf16 gradients "
            f"(2 bytes per parameter, M = {act1_gradient_bytes(s) / GB:g} GB) across all {s['act1_gpus']:,} GPUs, "
            f"with the B and α of {link.name}. Use `core.allreduce_time` or "
            "2(N−1)α + 2(N−1)/N · M/B; the comparator above gives the same number once you set N, M and "
            "the link to yours.")


def _act1_solution(s: Spec) -> str:
    return (f"link = core.catalog.link({s['act1_link']!r})\n"
            f"act1_allreduce_s = core.allreduce_time({act1_gradient_bytes(s):g}, {s['act1_gpus']}, link.bandwidth, "
            "link.latency, algorithm='ring')")


def _act2_prompt(s: Spec) -> str:
    return (f"**Your layout (Cloud track).** GPT-3 175B on the 1,024 H100s as TP = {s['act2_tp']}, "
            f"PP = {s['act2_pp']}, DP = {s['act2_dp']}, with {s['act2_microbatches']} micro-batches of "
            f"{s['act2_micro_batch']} sequence{'s' if s['act2_micro_batch'] > 1 else ''} each, ZeRO 0 and no "
            "recomputation. Assign `act2_plain_memory_gb`: its memory per GPU in GB (`core.plan(...).memory_total` "
            "is in bytes; the configurator shows it too once you set these controls).")


def _act2_solution(s: Spec) -> str:
    return (f"act2_plain_memory_gb = core.plan({s['act2_model']!r}, {s['act2_cluster']!r}, tp={s['act2_tp']}, "
            f"pp={s['act2_pp']}, dp={s['act2_dp']},\n"
            f"                                 micro_batch={s['act2_micro_batch']}, "
            f"num_microbatches={s['act2_microbatches']}).memory_total / 1e9")


def _part3_prompt(s: Spec) -> str:
    n = s["workers"]
    return (
        "**Your cluster (Cloud track).** Compute both monthly savings with `course.core` from these "
        "inputs (the audit above starts at the lead's defaults: set its controls to yours to check):\n\n"
        f"* N = {n:,} {s['accelerator']}s at the catalog's price, "
        f"`core.catalog.accelerator({s['accelerator']!r}).price_per_hour` dollars per GPU-hour, "
        f"{s['hours_per_month']:g} hours a month: today's bill B = `core.monthly_bill(N, price)`;\n"
        f"* {s['straggler_fraction']:.0%} of the workers straggle in a step, at {s['slowdown']:g}× the normal "
        "step time;\n"
        f"* the full checkpoint takes δ = {s['checkpoint_seconds']:g} s when one rank writes it; with ZeRO each "
        "of the N ranks writes its 1/N shard in parallel at the same rate (δ/N; an upper bound on the gain, "
        "since the storage must then absorb N times the rate of one writer);\n"
        f"* {s['gpu_mtbf_seconds'] / units.hour:,.0f} hours between failures per GPU (so the job's MTBF is "
        f"M = `core.cluster_mtbf({s['gpu_mtbf_seconds']:g}, N)` seconds), "
        f"{s['restart_seconds'] / units.minute:g} minutes to restart, and checkpoints at Young's interval "
        "τ = √(2δM).\n\n"
        "Count both options for the same training progress:\n\n"
        "* **async**: nobody waits, so the bill becomes B / `core.async_speedup(N, f, s)` (ignore staleness "
        "here; the reflection comes back to it): `core.async_monthly_savings`;\n"
        "* **sync + ZeRO**: the wait stays, but the share of time lost to checkpoints and rework, "
        "w = `core.waste_fraction(τ, δ, M, R)`, falls from w₀ (δ) to w₁ (δ / N), so the bill becomes "
        "B × (1 − w₀) / (1 − w₁): `core.sharded_checkpoint_monthly_savings`.\n\n"
        "Assign `async_saves_usd`, the dollars per month async saves against B.")


def _part3_bill_lines(s: Spec) -> str:
    return (f"n = {s['workers']}\n"
            f"bill = core.monthly_bill(n, core.catalog.accelerator({s['accelerator']!r}).price_per_hour)\n")


def _async_solution(s: Spec) -> str:
    return (_part3_bill_lines(s)
            + f"async_saves_usd = core.async_monthly_savings(bill, n, {s['straggler_fraction']:g}, {s['slowdown']:g})")


def _zero_solution(s: Spec) -> str:
    return (_part3_bill_lines(s)
            + f"mtbf = core.cluster_mtbf({s['gpu_mtbf_seconds']:g}, n)\n"
            f"zero_saves_usd = core.sharded_checkpoint_monthly_savings(bill, {s['checkpoint_seconds']:g}, n, mtbf, "
            f"{s['restart_seconds']:g})")


ACT1 = Act(
    "act1", "The data-parallel wall",
    lock=Lock(
        question="Why does MFU fall as the data-parallel job grows from 8 to 512 GPUs?",
        options={"nccl-overhead": "NCCL's software overhead per call grows with the GPU count",
                 "network": "the gradient all-reduce moves from NVLink onto the slower network",
                 "hbm-pressure": "HBM and cache pressure on each GPU grow with the GPU count",
                 "global-batch": "the global batch grows too large, so more steps are needed"},
        correct="network",
        banned=("gradients leave NVLink", "onto the slower network", "instead of 450 GB/s NVLink",
                "times the job's gradient sum"),
        explanation="Per-GPU compute is fixed (same micro-batch). The ring all-reduce moves about 2x the gradient "
                    "bytes per GPU; beyond one node it runs on 50 GB/s InfiniBand instead of 450 GB/s NVLink, so "
                    "exposed communication eats a growing share of the step.",
        reveal=(
            "On the Edge, Mobile and Tiny tracks the same wall is a sync over 5G or Bluetooth LE.\n\n"
            "**Does the model reproduce the lead's numbers?** Only the first step. Set the fabric to InfiniBand "
            "NDR and move from 8 to 64 GPUs: MFU drops sharply, because the gradients leave NVLink. From 64 "
            "to 512 it hardly moves (about a third on NDR): a ring all-reduce sends 2(N−1)/N of the gradient "
            "bytes per GPU, almost the same for 64 as for 512 GPUs (Lab 06 is about this). The lead's 19 % at "
            "512 needs more than the bandwidth term. A slower fabric is one way (try Ethernet 100G). Things "
            "this model leaves out are others: congestion between switch tiers, stragglers that make every "
            "GPU wait for the slowest (Part 3), and the per-message latency of many small gradient buckets.\n\n"
            "**Math peek.** T_comm = 2(N−1)/N · 2P / B (bytes of bf16 gradients over link bandwidth) and "
            "T_compute = 6 P · b·s / (peak · efficiency); MFU falls by T_compute / (T_compute + exposed T_comm).")),
    captions={"act1_fleet": (
        "The all-reduce comparator times the job's gradient sum on its own: on Cloud the lead's 14 GB of "
        "bf16 gradients on 512 GPUs; on the other tracks the track's fleet, link and model (FP32 gradients).")},
    answers=(Answer("act1_allreduce", "act1_allreduce_s", "Act I: all-reduce time of your job", "s",
                    _act1_prompt, act1_allreduce_seconds, _act1_solution,
                    after_lock=True),),  # it times the all-reduce over the network: the mechanism of the answer
    reflections=(Reflection(
        "act1_why",
        "Turn on *overlap* in the explorer. How do overlapping the all-reduce with the backward pass and "
        "bucketing gradients change the wall, and why can they not remove it?",
        "Bucketing starts all-reducing finished layers' gradients while earlier layers still compute backward, "
        "hiding communication behind the backward pass (about two thirds of the step). Only the part of T_comm "
        "longer than the backward pass stays exposed; once T_comm exceeds it (large N off-node, slow fabric, "
        "faster GPU) MFU still falls.",
        "1: overlap hides comm behind backward via buckets. 1: it cannot hide more than the backward time, so "
        "the comm/compute ratio still matters."),),
)

ACT2 = Act(
    "act2", "GPT-3 175B on 1,024 H100s",
    lock=Lock(
        question="Which layout balances memory, compute and communication best?",
        options={"tp16-pp2": "TP=16, PP=2, DP=32", "tp8-pp4": "TP=8, PP=4, DP=32", "tp8-pp1": "TP=8, PP=1, DP=128",
                 "tp2-pp32": "TP=2, PP=32, DP=16"},
        correct="tp8-pp4",
        banned=("TP=8, PP=4", "TP = 8, PP = 4", "tp=8, pp=4"),
        explanation="TP = 8 keeps the all-reduces of every layer inside one 8-GPU NVLink node; TP = 16 spans "
                    "two nodes and sends them over InfiniBand. PP = 4 splits the 96 layers across nodes: with no "
                    "pipeline (TP = 8, PP = 1) each GPU keeps 175B / 8 ≈ 22 B parameters, about 350 GB of weights, gradients "
                    "and Adam state; it fits only once ZeRO-2 or ZeRO-3 shards the gradients too (ZeRO-2: 78 of the "
                    f"{H100.memory_capacity / 1e9:.3g} GB of an H100), and then reaches a lower MFU than TP = 8, PP = 4 for the same batch. "
                    "32 stages idle (p−1)/(m+p−1) of the step, 49 % at m = 32 against 9 % for 4 stages, and "
                    "need at least 32 micro-batches. DP takes the rest. But TP = 8, PP = 4 only fits with ZeRO or "
                    "recomputation (below).",
        reveal=(
            "**TP = 8, PP = 4, DP = 32 is the right shape, but not yet a plan that fits.** With plain mixed-precision Adam (16 bytes "
            "per parameter: no ZeRO) and no recomputation it needs about "
            f"{act2_plain_memory_gb(SPEC):.0f} GB per GPU by the planner's count ({SPEC['act2_microbatches']} "
            "micro-batches of one sequence; activations after Korthikanti et al.), and the configurator shows "
            "the out-of-memory banner. It fits once ZeRO-1 shards the optimizer state across the DP ranks and "
            "*selective recomputation* (keep each layer's cheap-to-store activations, recompute the attention "
            "scores in the backward pass instead of storing them) trims the activations.\n\n"
            "Now drive the instruments above into each failure state: TP = 16 (the TP group leaves the node: "
            "`tp_crosses_node`), ZeRO 0 with no recomputation (`out_of_memory`), PP = 3, which leaves GPUs "
            "without a place (an invalid configuration: `gpus_mismatch`), fewer micro-batches than stages "
            "(`too_few_microbatches`), and a bubble above 10 % of the step (the bubble chart's "
            "`bubble over ceiling` warning, e.g. PP = 8 with m = 32).")),
    answers=(Answer("act2_memory", "act2_plain_memory_gb", "Act II: memory per GPU of your layout", "GB",
                    _act2_prompt, act2_plain_memory_gb, _act2_solution, graded="within 2 % of the planner",
                    after_lock=True),),  # it names the layout of an option
    reflections=(Reflection(
        "act2_why", "Why must TP stay inside one NVLink domain (a DGX H100 node's 8 GPUs here; a GB200 NVL72 "
        "rack's 72) while PP may cross nodes?",
        "TP all-reduces activations several times per layer on the critical path, so it needs NVLink "
        "(450 GB/s), which reaches only the GPUs of one NVLink domain; PP sends one activation tensor per micro-batch between neighbouring stages, small enough "
        "for 50 GB/s InfiniBand.",
        "1: TP traffic per layer, blocking. 1: PP point-to-point traffic is small and tolerates the slower "
        "link."),),
)

PART3 = Act(
    "part3", "Synchronization audit",
    lock=Lock(
        question="Which saves more money per month on this cluster: switching to async SGD or keeping sync SGD "
                 "with ZeRO-sharded checkpoints?",
        # a scale (async saves more / about the same / checkpoints save more), shown either way round
        options={"async": "async SGD saves more", "same": "about the same",
                 "sharded-checkpoints": "ZeRO-sharded checkpoints save more"},
        correct="async", ordered=True, legacy=("async", "sharded-checkpoints", "same"),
        banned=("straggler wait, ~12", "only part of a ~3"),
        explanation="Async recovers the straggler wait, ~12 % of the bill; faster checkpoints recover only part "
                    "of a ~3 % failure waste. But async pays in staleness (see the audit)."),
    answers=(Answer("part3_async_saves", "async_saves_usd", "Part 3: monthly dollars saved by async SGD",
                    "$ per month", _part3_prompt, lambda s: part3_savings(s)["async_saves"], _async_solution,
                    graded="within 2 % of the key", after_lock=True),  # both savings settle the prediction
             Answer("part3_zero_saves", "zero_saves_usd", "Part 3: monthly dollars saved by ZeRO-sharded checkpoints",
                    "$ per month",
                    lambda s: (f"Assign `zero_saves_usd`, the dollars per month ZeRO-sharded checkpoints save "
                               f"against B on your {s['workers']:,} GPUs. Who wins the argument?"),
                    lambda s: part3_savings(s)["zero_saves"], _zero_solution, graded="within 2 % of the key",
                    after_lock=True)),
    reflections=(Reflection(
        "part3_why",
        "The audit shows async saving more dollars. Would you ship it? Use the staleness the audit reports.",
        "Not for a large model: with 1,024 workers each gradient is about a thousand updates stale, which harms "
        "convergence and can cost more steps than the wait saved; the usual choice is synchronous SGD with "
        "straggler mitigation and sharded, frequent checkpoints.",
        "1: names staleness ~N. 1: a reasoned choice weighing convergence against dollars."),),
)


#: each instrument of the notebook and the design-ledger entry it restores from and saves to
SAVED = {"explorer": "lab05/explorer", "fleet": "lab05/fleet", "configurator": "lab05/design",
         "bubbles": "lab05/bubbles", "audit": "lab05/audit"}


def layout(lab: Lab, s: Spec) -> List[Cell]:
    return [
        Cell("markdown",
             "# Lab 05 · The parallelism paradox\n\n"
             "Adding GPUs to a data-parallel job can make every GPU *less* useful. Act I finds out why; "
             "Act II designs a 3D-parallel layout for a model that fits on no single GPU; Part 3 audits how "
             "the replicas synchronize and what that costs in dollars.\n\n"
             "**Grading.** Each locked prediction earns a completion point (saved in `predictions.json` "
             "next to this notebook and submitted with it; a wrong prediction costs nothing). Numbers you "
             "assign are autograded; reflections are graded by hand.\n\n"
             "**Your numbers.** The story and the instruments follow the lead's cluster. Each graded question "
             "asks about a job of your own, with numbers that differ from student to student: a cell marked "
             "*Your numbers* shows them when you run it, and you are graded on exactly those.\n\n"
             "**Tracks.** Pick your deployment context below: *Cloud* (an LLM architect on an H100 cluster), "
             "*Edge* (an autonomous-vehicle fleet on 5G), *Mobile* (AR glasses on 5G) or *Tiny* (hearables on "
             "Bluetooth LE). The track changes each act's message, hardware, link and fleet size, and the "
             "instruments follow it; those built for GPU clusters say so when a track is outside them. "
             "**Cloud is the default and the graded track:** every number you assign is defined for Cloud, "
             "whatever track you explore."),
        Cell("setup", lab.setup_source(
            "from course import core\n"
            "from course.instruments import (ScalingExplorer, AllreduceComparator, Configurator, BubbleChart,\n"
            "                                SyncAudit, TrackSelector, HudFooter)\n"
            "from course.labs.tracks import TrackScene\n"
            "hud = HudFooter(prefix='lab05')\n"
            "track = TrackSelector()\ndisplay(track)"), "lab05_setup"),
        Cell("markdown", "## Act I · The data-parallel wall"),
        Cell("code", "TrackScene(track, 'act1')", "lab05_act1_story"),
        *lab.lock_cells("act1"),
        Cell("code", "explorer = lab.gate('act1', ScalingExplorer(params_b=7, gpus=512))\ntrack.link_to(explorer)\n"
                     f"explorer.restore({SAVED['explorer']!r}, track)", "lab05_act1_explorer"),
        lab.caption_cell("act1_fleet"),
        Cell("code", "fleet = lab.gate('act1', AllreduceComparator(gpus=512, message_gb=14))\ntrack.link_to(fleet)\n"
                     f"fleet.restore({SAVED['fleet']!r}, track)", "lab05_act1_fleet"),
        lab.reveal_cell("act1"),
        *lab.answer_cells("act1_allreduce", s),
        *lab.reflection_cells("act1_why"),
        Cell("markdown",
             "## Act II · GPT-3 175B on 1,024 H100s\n\n"
             "175 B parameters need 2.8 TB of weights, gradients and Adam state: no GPU holds that (an H100 "
             f"holds {H100.memory_name}; every memory figure of this lab uses that one capacity). Choose "
             "TP × PP × DP = 1,024."),
        Cell("code", "TrackScene(track, 'act2')", "lab05_act2_story"),
        *lab.lock_cells("act2"),
        Cell("code", "configurator = lab.gate('act2', Configurator(model='gpt3-175b', cluster='h100-1024', tp=4, pp=8))\n"
                     f"track.link_to(configurator)\nconfigurator.restore({SAVED['configurator']!r}, track)", "lab05_act2_configurator"),
        Cell("markdown",
             "The bubble chart below follows the configurator's PP and micro-batches (moving its sliders moves "
             "the configurator too): the share of each step the stages sit idle, (p−1)/(m+p−1), for every "
             "micro-batch count m, with your current m marked."),
        Cell("code", "bubbles = lab.gate('act2', BubbleChart().follow_controls(configurator))\n"
                     f"bubbles.restore({SAVED['bubbles']!r}, track)",
             "lab05_act2_bubbles"),
        lab.reveal_cell("act2"),
        *lab.answer_cells("act2_memory", s),
        *lab.reflection_cells("act2_why"),
        Cell("markdown",
             "## Part 3 · Synchronization audit\n\n"
             "With 1,024 workers, 5 % stragglers slow every synchronous step. Asynchronous SGD removes the wait "
             "but trains on stale gradients; ZeRO shards the checkpoint so restarts after failures are cheaper."),
        Cell("code", "TrackScene(track, 'part3')", "lab05_part3_story"),
        *lab.lock_cells("part3"),
        Cell("code", "audit = lab.gate('part3', SyncAudit())\ntrack.link_to(audit)\n"
                     f"audit.restore({SAVED['audit']!r}, track)", "lab05_part3_audit"),
        lab.reveal_cell("part3"),
        Cell("markdown",
             "### The infrastructure lead's challenge (Cloud track)\n\n"
             "The lead wants to know which saves more, ZeRO-sharded checkpoints or asynchronous updates. Settle "
             "it in dollars for your own cluster."),
        *lab.answer_cells("part3_async_saves", s),
        *lab.answer_cells("part3_zero_saves", s),
        *lab.reflection_cells("part3_why"),
        Cell("markdown", "## Ledger and HUD\n\nSave your instruments, final design and audit (with the track you "
                         "ended on and the failure states they showed) to the design ledger; the HUD sums up this "
                         "lab's entries. The ledger only grows: each instrument above took back what you saved "
                         "before (your design and the failure states you already hit), so Run All or a restart "
                         "keeps them, and an instrument still locked behind its prediction saves nothing."),
        Cell("code", "".join(f"{name}.record(track=track.value)\n" for name in SAVED) +
                     "hud.refresh()\nhud", "lab05_hud"),
    ]


ACTIVITY = LAB = Lab(NAME, "lab05", "Lab 05 · The parallelism paradox", SPEC, (ACT1, ACT2, PART3), layout, vary)

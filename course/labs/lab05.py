"""Lab 05 · The parallelism paradox: cells of the source notebook.

Story (materials 000 and 004): Act I, a 7B data-parallel job whose MFU falls
52 % -> 38 % -> 19 % from 8 to 512 GPUs; Act II, a TP x PP x DP design for
GPT-3 175B on 1,024 H100s; Part 3, a synchronization audit (sync vs async,
stragglers, ZeRO checkpoints, and the graded ZeRO-vs-async savings
challenge). Keys: :mod:`course.exercises.labs`.

Tracks (material 004): the selector at the top switches the message card of
each act (:mod:`course.labs.tracks`) and the instruments' hardware
(``track.link_to``); Cloud is the default and every graded number is defined
for Cloud.
"""

from __future__ import annotations

from typing import List

from course.exercises.spec import Cell

from .lab06 import _hidden

NAME = "lab05_parallelism_paradox"


def _lock_cells(var: str, key: str, gid: str, option: str) -> List[Cell]:
    # No answer cell: students lock with the button; the reference run supplies predictions.json
    # (nbgrader's stub in a solution cell would raise and stop "Run All" after a button lock).
    return [Cell("test", f"# Graded: a locked prediction {key} in predictions.json (completion point)\n" + _hidden(gid),
                 gid, 1.0)]


def cells() -> List[Cell]:
    return [
        Cell("markdown",
             "# Lab 05 · The parallelism paradox\n\n"
             "Adding GPUs to a data-parallel job can make every GPU *less* useful. Act I finds out why; "
             "Act II designs a 3D-parallel layout for a model that fits on no single GPU; Part 3 audits how "
             "the replicas synchronize and what that costs in dollars.\n\n"
             "**Grading.** Each locked prediction earns a completion point (saved in `predictions.json` "
             "next to this notebook and submitted with it; a wrong prediction costs nothing). Numbers you "
             "assign are autograded; reflections are graded by hand.\n\n"
             "**Tracks.** Pick your deployment context below: *Cloud* (an LLM architect on an H100 cluster), "
             "*Edge* (an autonomous-vehicle fleet on 5G), *Mobile* (AR glasses on 5G) or *Tiny* (hearables on "
             "Bluetooth LE). The track changes each act's message, hardware, link and fleet size, and the "
             "instruments follow it; those built for GPU clusters say so when a track is outside them. "
             "**Cloud is the default and the graded track:** every number you assign is defined for Cloud, "
             "whatever track you explore."),
        Cell("code", "from course import core\n"
                     "from course.prediction import PredictionLock\n"
                     "from course.instruments import (ScalingExplorer, AllreduceComparator, Configurator, BubbleChart,\n"
                     "                                SyncAudit, TrackSelector, HudFooter)\n"
                     "from course.labs.tracks import TrackScene\n"
                     "hud = HudFooter(prefix='lab05')\n"
                     "track = TrackSelector()\ntrack", "lab05_setup"),
        Cell("markdown", "## Act I · The data-parallel wall"),
        Cell("code", "TrackScene(track, 'act1')", "lab05_act1_story"),
        Cell("code",
             "lock_act1 = PredictionLock(\n"
             "    'lab05/act1', 'Why does MFU fall as the data-parallel job grows from 8 to 512 GPUs?',\n"
             "    options={'A': 'NCCL software overhead grows with the cluster',\n"
             "             'B': 'once the job spans nodes the gradient all-reduce runs on the network instead of '\n"
             "                  'NVLink while compute per GPU stays the same: comm/compute rises',\n"
             "             'C': 'HBM and cache pressure grow with the number of GPUs',\n"
             "             'D': 'the global batch is too large, so more steps are needed'},\n"
             "    correct='B',\n"
             "    explanations='Per-GPU compute is fixed (same micro-batch). The ring all-reduce moves about 2x the '\n"
             "                 'gradient bytes per GPU; beyond one node it runs on 50 GB/s InfiniBand instead of '\n"
             "                 '450 GB/s NVLink, so exposed communication eats a growing share of the step.')\n"
             "lock_act1", "lab05_act1_lock_cell"),
        *_lock_cells("lock_act1", "lab05/act1", "lab05_act1_lock", "B"),
        Cell("code", "explorer = lock_act1.gate(ScalingExplorer(params_b=7, gpus=512))\ntrack.link_to(explorer)\nexplorer",
             "lab05_act1_explorer"),
        Cell("markdown",
             "The all-reduce comparator runs the same gradient sum on its own: on Cloud the 14 GB of bf16 "
             "gradients on 512 GPUs over InfiniBand NDR; on the other tracks the track's fleet, link and model "
             "(FP32 gradients), where the wall is a sync over 5G or Bluetooth LE."),
        Cell("code", "fleet = lock_act1.gate(AllreduceComparator(gpus=512, message_gb=14))\ntrack.link_to(fleet)\nfleet",
             "lab05_act1_fleet"),
        Cell("code", "lock_act1.reveal()", "lab05_act1_reveal"),
        Cell("markdown",
             "**Does the model reproduce the lead's numbers?** Only the first step. Set the fabric to InfiniBand "
             "NDR and move from 8 to 64 GPUs: MFU drops sharply, because the gradients leave NVLink. From 64 "
             "to 512 it hardly moves (about a third on NDR): a ring all-reduce sends 2(N−1)/N of the gradient "
             "bytes per GPU, almost the same for 64 as for 512 GPUs (Lab 06 is about this). The lead's 19 % at "
             "512 needs more than the bandwidth term. A slower fabric is one way (try Ethernet 100G). Things "
             "this model leaves out are others: congestion between switch tiers, stragglers that make every "
             "GPU wait for the slowest (Part 3), and the per-message latency of many small gradient buckets."),
        Cell("markdown",
             "Assign `act1_allreduce_s` (Cloud track): the time in seconds of one ring all-reduce of the 7B model's bf16 "
             "gradients (14 GB) on 512 GPUs over InfiniBand NDR (50 GB/s, α = 5 µs). Use "
             "`core.allreduce_time` or the formula 2(N−1)α + 2(N−1)/N · M/B."),
        Cell("answer", "# act1_allreduce_s = ...   (s)\n"
                       "### BEGIN SOLUTION\n"
                       "act1_allreduce_s = core.allreduce_time(14e9, 512, 50e9, 5e-6, algorithm='ring')\n"
                       "### END SOLUTION", "lab05_act1_allreduce_answer"),
        Cell("test", "# Graded: within 2 %\n" + _hidden("lab05_act1_allreduce"), "lab05_act1_allreduce", 1.0),
        Cell("markdown",
             "**Math peek.** T_comm = 2(N−1)/N · 2P / B (bytes of bf16 gradients over link bandwidth) and "
             "T_compute = 6 P · b·s / (peak · efficiency); MFU falls by T_compute / (T_compute + exposed T_comm).\n\n"
             "**Reflection (graded by hand).** Turn on *overlap* in the explorer. How do overlapping the "
             "all-reduce with the backward pass and bucketing gradients change the wall, and why can they not "
             "remove it?"),
        Cell("manual",
             "**Model answer.** Bucketing starts all-reducing finished layers' gradients while earlier layers "
             "still compute backward, hiding communication behind the backward pass (about two thirds of the "
             "step). Only the part of T_comm longer than the backward pass stays exposed; once T_comm exceeds "
             "it (large N off-node, slow fabric, faster GPU) MFU still falls.\n\n"
             "**Mark scheme (2 points).** 1: overlap hides comm behind backward via buckets. 1: it cannot hide "
             "more than the backward time, so the comm/compute ratio still matters.", "lab05_act1_why", 2.0),
        Cell("markdown",
             "## Act II · GPT-3 175B on 1,024 H100s\n\n"
             "175 B parameters need 2.8 TB of weights, gradients and Adam state: no GPU holds that. Choose "
             "TP × PP × DP = 1,024."),
        Cell("code", "TrackScene(track, 'act2')", "lab05_act2_story"),
        Cell("code",
             "lock_act2 = PredictionLock(\n"
             "    'lab05/act2', 'Which layout balances memory, compute and communication best?',\n"
             "    options={'A': 'TP=128, PP=1, DP=8', 'B': 'TP=8, PP=4, DP=32', 'C': 'TP=1, PP=1024, DP=1',\n"
             "             'D': 'TP=4, PP=256, DP=1'},\n"
             "    correct='B',\n"
             "    explanations='TP stays inside the 8-GPU NVLink node, PP splits the 96 layers across nodes, DP '\n"
             "                 'takes the rest. But B only fits with ZeRO or recomputation (see the reveal).')\n"
             "lock_act2", "lab05_act2_lock_cell"),
        *_lock_cells("lock_act2", "lab05/act2", "lab05_act2_lock", "B"),
        Cell("code", "configurator = lock_act2.gate(Configurator(model='gpt3-175b', cluster='h100-1024', tp=8, pp=4))\n"
                     "track.link_to(configurator)\nconfigurator", "lab05_act2_configurator"),
        Cell("markdown",
             "The bubble chart below follows the configurator's PP and micro-batches (moving its sliders moves "
             "the configurator too): the share of each step the stages sit idle, (p−1)/(m+p−1), for every "
             "micro-batch count m, with your current m marked."),
        Cell("code", "bubbles = lock_act2.gate(BubbleChart().follow_controls(configurator))\nbubbles",
             "lab05_act2_bubbles"),
        Cell("markdown",
             "Drive the instruments into each failure state: TP = 16 (the TP group leaves the node: "
             "`tp_crosses_node`), ZeRO 0 with no recomputation (`out_of_memory`), PP = 3, which leaves GPUs "
             "without a place (an invalid configuration: `gpus_mismatch`), fewer micro-batches than stages "
             "(`too_few_microbatches`), and a bubble above 10 % of the step (the bubble chart's "
             "`bubble over ceiling` warning, e.g. PP = 8 with m = 32).\n\n"
             "> **Correction to the source lab.** Its \"correct\" answer B, with plain mixed-precision Adam and "
             "no recomputation, needs about 143 GB per GPU by the planner's count (Korthikanti et al. "
             "activations) and trips the lab's own out-of-memory banner. B is the right *shape*; it fits once "
             "ZeRO-1 shards the optimizer and selective recomputation trims activations. The source's bubble "
             "formula (p−1)/(p·m) is also replaced by (p−1)/(m+p−1)."),
        Cell("code", "lock_act2.reveal()", "lab05_act2_reveal"),
        Cell("markdown", "Assign `act2_plain_memory_gb` (Cloud track): the memory per GPU in GB of TP=8, PP=4, DP=32 with 8 "
                         "micro-batches, ZeRO 0 and no recomputation (`core.plan(...).memory_total`, bytes)."),
        Cell("answer", "# act2_plain_memory_gb = ...   (GB)\n"
                       "### BEGIN SOLUTION\n"
                       "act2_plain_memory_gb = core.plan('gpt3-175b', 'h100-1024', tp=8, pp=4, dp=32,\n"
                       "                                 num_microbatches=8).memory_total / 1e9\n"
                       "### END SOLUTION", "lab05_act2_memory_answer"),
        Cell("test", "# Graded: within 2 % of the planner\n" + _hidden("lab05_act2_memory"), "lab05_act2_memory", 1.0),
        Cell("markdown", "**Reflection (graded by hand).** Why must TP stay inside a node while PP may cross nodes?"),
        Cell("manual",
             "**Model answer.** TP all-reduces activations several times per layer on the critical path, so it "
             "needs NVLink (450 GB/s); PP sends one activation tensor per micro-batch between neighbouring "
             "stages, small enough for 50 GB/s InfiniBand.\n\n**Mark scheme (2 points).** 1: TP traffic per "
             "layer, blocking. 1: PP point-to-point traffic is small and tolerates the slower link.",
             "lab05_act2_why", 2.0),
        Cell("markdown",
             "## Part 3 · Synchronization audit\n\n"
             "With 1,024 workers, 5 % stragglers slow every synchronous step. Asynchronous SGD removes the wait "
             "but trains on stale gradients; ZeRO shards the checkpoint so restarts after failures are cheaper."),
        Cell("code", "TrackScene(track, 'part3')", "lab05_part3_story"),
        Cell("code",
             "lock_part3 = PredictionLock(\n"
             "    'lab05/part3', 'Which saves more money per month on this cluster: switching to async SGD or '\n"
             "    'keeping sync SGD with ZeRO-sharded checkpoints?',\n"
             "    options={'A': 'async SGD', 'B': 'ZeRO-sharded checkpoints', 'C': 'about the same'},\n"
             "    correct='A',\n"
             "    explanations='Async recovers the straggler wait, ~12 % of the bill; faster checkpoints recover '\n"
             "                 'only part of a ~3 % failure waste. But async pays in staleness (see the audit).')\n"
             "lock_part3", "lab05_part3_lock_cell"),
        *_lock_cells("lock_part3", "lab05/part3", "lab05_part3_lock", "A"),
        Cell("code", "audit = lock_part3.gate(SyncAudit())\ntrack.link_to(audit)\naudit", "lab05_part3_audit"),
        Cell("code", "lock_part3.reveal('A' if audit.result['async_saves'] > audit.result['zero_saves'] else 'B')",
             "lab05_part3_reveal"),
        Cell("markdown",
             "### The infrastructure lead's challenge (Cloud track)\n\n"
             "The lead wants proof that ZeRO-sharded checkpoints save more than asynchronous updates. Compute both "
             "monthly savings with `course.core` from these inputs (the audit's defaults):\n\n"
             "* N = 1,024 H100s at the catalog's price, `core.catalog.accelerator('H100').price_per_hour` "
             "dollars per GPU-hour, 730.5 hours a month: today's bill B = N × price × 730.5;\n"
             "* 5 % of the workers straggle in a step, at 1.15× the normal step time;\n"
             "* the full checkpoint takes δ = 98 s when one rank writes it; with ZeRO each of the N ranks writes "
             "its 1/N shard in parallel at the same rate (δ/N; an upper bound on the gain, since the storage must "
             "then absorb N times the rate of one writer);\n"
             "* 50,000 hours between failures per GPU (so the job's MTBF is M = 50,000 h / N), 2 minutes to "
             "restart, and checkpoints at Young's interval τ = √(2δM).\n\n"
             "Count both options for the same training progress:\n\n"
             "* **async**: nobody waits, so the bill becomes B / `core.async_speedup(N, 0.05, 1.15)` (ignore "
             "staleness here; the reflection comes back to it);\n"
             "* **sync + ZeRO**: the wait stays, but the share of time lost to checkpoints and rework, "
             "w = `core.waste_fraction(τ, δ, M, R)`, falls from w₀ (δ = 98 s) to w₁ (δ = 98 s / N), so the bill "
             "becomes B × (1 − w₀) / (1 − w₁).\n\n"
             "Assign `async_saves_usd` and `zero_saves_usd`, the dollars per month each option saves against B "
             "(autograded within 2 %). Who wins the argument?"),
        Cell("answer", "# async_saves_usd = ...   ($ per month)\n"
                       "# zero_saves_usd = ...    ($ per month)\n"
                       "### BEGIN SOLUTION\n"
                       "n, straggler_share, slowdown, delta = 1024, 0.05, 1.15, 98.0\n"
                       "bill = n * core.catalog.accelerator('H100').price_per_hour * 730.5\n"
                       "mtbf = core.cluster_mtbf(50_000 * 3600.0, n)\n"
                       "def lost_share(checkpoint_s):\n"
                       "    tau = core.young_interval(checkpoint_s, mtbf)\n"
                       "    return core.waste_fraction(tau, checkpoint_s, mtbf, 120.0)\n"
                       "async_saves_usd = float(bill - bill / core.async_speedup(n, straggler_share, slowdown))\n"
                       "zero_saves_usd = float(bill - bill * (1 - lost_share(delta)) / (1 - lost_share(delta / n)))\n"
                       "### END SOLUTION\n"
                       "print(f'async saves ${async_saves_usd:,.0f} a month, ZeRO checkpoints ${zero_saves_usd:,.0f}')",
             "lab05_part3_savings_answer"),
        Cell("test", "# Graded: within 2 % of the key\n" + _hidden("lab05_part3_async_saves"), "lab05_part3_async_saves", 1.0),
        Cell("test", "# Graded: within 2 % of the key\n" + _hidden("lab05_part3_zero_saves"), "lab05_part3_zero_saves", 1.0),
        Cell("markdown", "**Reflection (graded by hand).** The audit shows async saving more dollars. Would you "
                         "ship it? Use the staleness the audit reports."),
        Cell("manual",
             "**Model answer.** Not for a large model: with 1,024 workers each gradient is about a thousand "
             "updates stale, which harms convergence and can cost more steps than the wait saved; the usual "
             "choice is synchronous SGD with straggler mitigation and sharded, frequent checkpoints.\n\n"
             "**Mark scheme (2 points).** 1: names staleness ~N. 1: a reasoned choice weighing convergence "
             "against dollars.", "lab05_part3_why", 2.0),
        Cell("markdown", "## Ledger and HUD\n\nSave your final design and audit (with the track you ended on) to the "
                         "design ledger; the HUD sums up this lab's entries."),
        Cell("code", "configurator.record('lab05/design', track=track.value)\n"
                     "audit.record('lab05/audit', track=track.value)\n"
                     "hud.refresh()\nhud", "lab05_hud"),
    ]

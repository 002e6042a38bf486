"""Tutorial · 3D parallelism with the planner, declared once (a :class:`~course.assess.lab.Lab`).

Story (material 001, the solver tutorial): Llama-3 70B on the 256-GPU research
cluster (32 DGX H100 nodes). Pure data parallelism first, then the fabric, then
pipeline micro-batches, then the whole configuration space with
:func:`course.core.plan` and :func:`course.core.sweep`.

Variants (:func:`vary`): the walk-through keeps Llama-3 70B on the research
cluster; each graded exercise asks about the student's own case (model and
micro-batch in Exercise 1, the pipeline in Exercise 2, model and cluster size
in Exercise 3).
"""

from __future__ import annotations

import random
from typing import List

from course import core
from course.core import catalog
from course.core.units import GB
from course.assess.items import Lock
from course.assess.lab import Act, Answer, Lab, Reflection, Spec, cases
from course.assess.spec import Cell


#: the cluster's GPU: its memory is written the one way the catalog states it (GB = 10⁹ bytes)
H100 = catalog.accelerator("H100")
NAME = "tutorial_3d_parallelism"

#: The walk-through's model and cluster (the research cluster: 32 DGX H100 nodes on 100 Gb
#: Ethernet) and the graded inputs, as the tutorial has them; a student's variant replaces the
#: graded ones (:func:`vary`): Exercise 1's model and micro-batch, Exercise 2's pipeline and
#: Exercise 3's model and number of GPUs (DGX H100 nodes on the research cluster's fabric). Exercise 3's own
#: case is not the walk-through's (256 GPUs), whose sweep table the page prints: its best row would be the answer.
SPEC: Spec = {"model": "llama3-70b", "cluster": "research-256", "dp": 256,
              "ex1_model": "llama3-70b", "ex1_micro_batch": 1,
              "bubble_stages": 8, "bubble_microbatches": 32,
              "ex3_model": "llama3-70b", "ex3_gpus": 512, "ex3_node": "DGX H100", "ex3_fabric": "Ethernet 100G"}


# The cases a variant draws from. Of all (model, micro-batch), (stages, micro-batches) and
# (model, GPUs) pairs, these keep every key more than 4 % (twice the 2 % tolerance) from the next
# under today's planner, so two students share one about once in 34-49 pairs. The pairs left out
# nearly coincide with a kept one (or, for Exercise 3, the sweep finds no feasible layout).
#: Exercise 1: (model, sequences per micro-batch), 34 cases.
EX1_CASES = cases({"llama2-7b": (1, 2, 4, 8), "llama3-8b": (1, 2, 4, 8), "megatron-1.7b": (1, 2, 4, 8),
                    "megatron-18.4b": (1, 2, 4), "llama3-70b": (2, 4, 8), "megatron-76.1b": (1, 4, 8),
                    "megatron-145.6b": (1, 8), "gpt3-175b": (4, 8), "llama3-405b": (1, 2, 8),
                    "megatron-529.6b": (1, 4, 8), "megatron-1008b": (1, 4, 8)})
#: Exercise 2: (pipeline stages, micro-batches), at least half as many micro-batches as stages, 34 cases.
EX2_CASES = cases({2: (4, 6, 8, 12, 16, 24, 32, 48, 64), 3: (4, 6), 4: (4, 8, 16, 32, 64),
                    6: (6, 12, 16, 24, 32, 48, 64), 8: (4, 6, 12, 24, 48, 64), 12: (8, 12, 16, 24, 48)})
#: Exercise 3: (model, GPUs in DGX H100 nodes on the research cluster's fabric), 45 cases; every key stands more
#: than 4 % from the next (three cases that came within 4 % once attention ran at its measured speed were dropped,
#: and Llama 3 8B on 384 GPUs once GEMMs were priced by their shapes: 3.5 % from Llama 2 7B on 256).
EX3_CASES = cases({"llama2-7b": (32, 64, 96, 128, 192, 256, 384, 512),
                    "llama3-8b": (32, 64, 96, 128, 192, 256, 512),
                    "megatron-1.7b": (32, 64, 96, 128, 192, 256, 384, 512), "megatron-18.4b": (512,),
                    "llama3-70b": (32, 512), "megatron-76.1b": (96, 128, 256, 384),
                    "megatron-145.6b": (32, 96, 128, 256, 384),
                    "gpt3-175b": (64, 96, 128, 192, 256, 384, 512), "llama3-405b": (128, 192, 384)})


def vary(s: Spec, rng: random.Random) -> Spec:
    """A student's own cases (every draw's key differs from the others' by more than 2 %)."""
    s["ex1_model"], s["ex1_micro_batch"] = rng.choice(EX1_CASES)
    s["bubble_stages"], s["bubble_microbatches"] = rng.choice(EX2_CASES)
    s["ex3_model"], s["ex3_gpus"] = rng.choice(EX3_CASES)
    return s


def pure_dp_memory_gb(s: Spec) -> float:
    """Exercise 1 key: planner memory per GPU under pure data parallelism (GB)."""
    return core.plan(s["ex1_model"], s["cluster"], tp=1, pp=1, dp=s["dp"],
                     micro_batch=s["ex1_micro_batch"]).memory_total / GB


def bubble_fraction(s: Spec) -> float:
    """Exercise 2 key: (p-1)/(m+p-1) (Narayanan et al. 2021)."""
    return float(core.bubble_fraction(s["bubble_stages"], s["bubble_microbatches"]))


def ex3_cluster(s: Spec):
    """Exercise 3's cluster: ``ex3_gpus`` GPUs in ``ex3_node`` nodes on ``ex3_fabric``."""
    return core.catalog.make_cluster(s["ex3_node"], s["ex3_gpus"], fabric=s["ex3_fabric"])


def best_tokens_per_second(s: Spec) -> float:
    """Exercise 3 key: tokens/s of the sweep's best feasible configuration."""
    return float(core.sweep(s["ex3_model"], ex3_cluster(s)).row(0)["tokens_per_second"])


EX1 = Act(
    "ex1", "Predict before you observe: pure data parallelism",
    lock=Lock(
        question=f"Pure data parallelism (TP=1, PP=1, DP=256) for Llama-3 70B on H100s of "
                 f"{H100.memory_capacity / GB:.3g} GB:",
        options={"comm-bound": "runs, communication-bound", "compute-bound": "runs, compute-bound",
                 "out-of-memory": "does not fit: out of memory", "bf16-weights": "fits only with bf16 weights"},
        correct="out-of-memory",
        banned=("1.1 TB", "14x an H100"),
        explanation="Mixed-precision Adam needs 16 bytes per parameter (2 weights + 2 gradients + 12 optimizer) = "
                    "1.1 TB for 70B parameters before any activation: 14x an H100."),
    answers=(Answer(
        "ex1_memory", "pure_dp_memory_gb", "Exercise 1: memory per GPU under pure DP", "GB",
        lambda s: (f"**Your case.** Assign `pure_dp_memory_gb`: the memory one GPU would need to train "
                   f"`{s['ex1_model']}` under pure data parallelism (TP = 1, PP = 1, DP = {s['dp']}) on the research "
                   f"cluster with micro-batches of {s['ex1_micro_batch']} sequence"
                   f"{'s' if s['ex1_micro_batch'] > 1 else ''}, in GB (10⁹ bytes), as the planner reports it "
                   "(`core.plan(...).memory_total` is in bytes; the cell above plans the tutorial's own case)."),
        pure_dp_memory_gb,
        lambda s: (f"pure_dp_memory_gb = core.plan({s['ex1_model']!r}, CLUSTER, tp=1, pp=1, dp={s['dp']}, "
                   f"micro_batch={s['ex1_micro_batch']}).memory_total / 1e9"),
        graded="within 2 % of the planner", after_lock=True),),  # the memory settles whether it fits
)

EX2 = Act(
    "ex2", "The micro-batch lever",
    answers=(Answer(
        "ex2_bubble", "pipeline_bubble", "Exercise 2: bubble fraction of your pipeline", "fraction, 0..1",
        lambda s: (f"**Your pipeline.** Assign `pipeline_bubble`: the bubble fraction (a number between 0 and 1) "
                   f"of a pipeline of {s['bubble_stages']} stages with {s['bubble_microbatches']} micro-batches."),
        bubble_fraction,
        lambda s: (f"pipeline_bubble = {s['bubble_stages'] - 1} / "
                   f"({s['bubble_microbatches']} + {s['bubble_stages'] - 1})"),
        graded="within 2 %"),),
)

EX3 = Act(
    "ex3", "Find the optimal configuration",
    answers=(Answer(
        "ex3_best", "best_tokens_per_second", "Exercise 3: best tokens/s of the sweep", "tokens/s",
        lambda s: (f"**Your cluster.** Your group trains `{s['ex3_model']}` on {s['ex3_gpus']} GPUs: "
                   f"{s['ex3_gpus'] // 8} {s['ex3_node']} nodes on the research cluster's {s['ex3_fabric']} "
                   f"(`core.catalog.make_cluster({s['ex3_node']!r}, {s['ex3_gpus']}, fabric={s['ex3_fabric']!r})`). "
                   "Assign `best_tokens_per_second`: the throughput of the best feasible configuration the sweep "
                   "finds for it (tokens per second)."),
        best_tokens_per_second,
        lambda s: (f"my_cluster = core.catalog.make_cluster({s['ex3_node']!r}, {s['ex3_gpus']}, "
                   f"fabric={s['ex3_fabric']!r})\n"
                   f"best_tokens_per_second = core.sweep({s['ex3_model']!r}, my_cluster).row(0)['tokens_per_second']"),
        graded="within 2 % of the sweep's best"),),
    reflections=(Reflection(
        "why",
        "The best rows of the sweep keep the TP × CP group (TP = 1, CP = 4 on the research cluster) inside one "
        "node. Why must the groups that communicate in every layer stay on NVLink, and what would happen to "
        "the step time if such a group spanned two nodes (e.g. TP = 16)?",
        "Tensor parallelism all-reduces activations twice per layer in the forward and twice in the backward "
        "pass, and context parallelism exchanges keys and values for every attention layer, both on the "
        "critical path; inside a node that runs on NVLink 4 at 450 GB/s, across nodes on a "
        "12.5 GB/s Ethernet port, about 36x slower, so TP = 16 would make the step communication-bound.",
        "1 point: TP communicates every layer, on the critical path. 1 point: NVLink vs inter-node bandwidth "
        "(an order of magnitude or more)."),),
)


def layout(lab: Lab, s: Spec) -> List[Cell]:
    """The tutorial's notebook: pure data parallelism, the fabric and the micro-batch lever, the sweep."""
    return [*_data_parallel_cells(lab, s), *_fabric_and_bubble_cells(lab, s), *_sweep_cells(lab, s)]


def _data_parallel_cells(lab: Lab, s: Spec) -> List[Cell]:
    """The introduction and Exercise 1: pure data parallelism, predicted, then planned."""
    return [
        Cell("markdown",
             "# Tutorial · 3D parallelism with the planner\n\n"
             "Training Llama-3 70B on one GPU would take years. This tutorial "
             "splits it over the research cluster: 32 DGX H100 nodes, 256 GPUs, eight per node on NVLink 4, "
             "nodes joined by 100 Gb Ethernet. Every number comes from `course.core.plan` (one "
             "configuration) and `course.core.sweep` (all of them at once).\n\n"
             "**Grading.** Locking the prediction of Exercise 1 earns a completion point; the three numbers "
             "you assign are autograded; the last reflection is graded by hand. Each graded exercise asks "
             "about a case of your own: a cell marked *Your numbers* shows it when you run it (the numbers "
             "differ from student to student), and you are graded on exactly those."),
        Cell("setup", lab.setup_source(f"from course import core\nMODEL, CLUSTER = {s['model']!r}, {s['cluster']!r}"),
             "tut_setup"),
        Cell("markdown",
             "## Exercise 1 · Predict before you observe: pure data parallelism\n\n"
             "Data parallelism keeps a full copy of the model, its gradients and its Adam state on every GPU "
             f"and splits only the batch. Each H100 holds {H100.memory_name}: every memory figure here (the "
             "lock, the planner's verdict, your answer) uses that one capacity. Predict first."),
        *lab.lock_cells("ex1"),
        Cell("code", "pure_dp = core.plan(MODEL, CLUSTER, tp=1, pp=1, dp=256)\n"
                     "# the planner's verdict would give the prediction away: the lock shows it once you lock\n"
                     "verdict = '\\n'.join(f'* `{code}`: {sentence}' for code, sentence in pure_dp.violations)\n"
                     "display(lab.lock('ex1').after_lock('**What the planner says about pure DP.**\\n\\n'\n"
                     "                                   + (verdict or 'No limit is broken.'),\n"
                     "                                   before='The planner\\'s verdict appears here once you lock '\n"
                     "                                          'Exercise 1 (no need to run this cell again).'))\n"
                     "lab.reveal('ex1')", "tut_ex1_plan"),
        *lab.answer_cells("ex1_memory", s),
    ]


def _fabric_and_bubble_cells(lab: Lab, s: Spec) -> List[Cell]:
    """The fabric between the nodes, and Exercise 2: the micro-batch lever."""
    return [
        Cell("markdown",
             "## The fabric between the nodes\n\n"
             "Take a configuration that fits (TP = 4 inside a node, PP = 8, DP = 8, full recomputation) and "
             "change only the network between nodes: 100 Gb Ethernet (12.5 GB/s per port), InfiniBand HDR "
             "(200 Gb/s = 25 GB/s) and NDR (400 Gb/s = 50 GB/s). Network ports are quoted in bits per second: "
             "divide by 8 for bytes."),
        Cell("code",
             "for fabric in ('Ethernet 100G', 'InfiniBand HDR', 'InfiniBand NDR'):\n"
             "    cluster = core.catalog.make_cluster('DGX H100', 256, fabric=fabric)\n"
             "    p = core.plan(MODEL, cluster, tp=4, pp=8, dp=8, num_microbatches=16, recompute='full')\n"
             "    print(f'{fabric:15s} step {p.step_time:6.2f} s   DP all-reduce exposed {p.dp_comm_exposed:6.3f} s'\n"
             "          f'   MFU {p.mfu:5.1%}   feasible {p.feasible}')", "tut_fabric"),
        Cell("markdown",
             "## Exercise 2 · The micro-batch lever\n\n"
             "A pipeline of p stages idles while it fills and drains: the bubble is (p−1)/(m+p−1) of the step "
             "for m micro-batches (Narayanan et al. 2021). The table below is `core.bubble_fraction` for each "
             "pair, except where it equals your own exercise's answer."),
        Cell("code",
             "yours = core.bubble_fraction(lab.spec['bubble_stages'], lab.spec['bubble_microbatches'])\n"
             "print('PP \\\\ m ' + ''.join(f'{m:>8d}' for m in (4, 8, 16, 32)))\n"
             "for pp in (2, 4, 8, 16):\n"
             "    fractions = (core.bubble_fraction(pp, m) for m in (4, 8, 16, 32))\n"
             "    print(f'{pp:6d} ' + ''.join(f'{\"yours\":>8s}' if abs(f - yours) <= 0.02 * yours else f'{f:8.1%}'\n"
             "                                for f in fractions))\n"
             "print('(\"yours\", where it stands: the bubble of your own exercise below; work it out yourself)')",
             "tut_bubble_table"),
        *lab.answer_cells("ex2_bubble", s),
    ]


def _sweep_cells(lab: Lab, s: Spec) -> List[Cell]:
    """Exercise 3 (the sweep's best configuration) and the reflection."""
    return [
        Cell("markdown",
             "## Exercise 3 · Find the optimal configuration\n\n"
             "`core.sweep` evaluates every TP × CP × PP × DP split (CP, *context parallelism*, splits each "
             "sequence's tokens across GPUs so that long sequences' activations are shared out), pipeline "
             "interleaving (each GPU holds v smaller *chunks* of layers instead of one stage, which shrinks the "
             "bubble), micro-batch, ZeRO stage and recompute mode (none, *selective*: recompute only the "
             "attention scores in the backward pass, or *full*: recompute each layer from its input) "
             "for the Llama 3 global batch (about 16 M tokens) and sorts by tokens per second. With "
             "`include_infeasible=True` it also keeps the rows that break a limit, and says which."),
        Cell("code",
             "COLUMNS = ('tp', 'cp', 'pp', 'interleave', 'dp', 'micro_batch', 'sequence_parallel', 'zero_stage', 'recompute',\n"
             "           'tokens_per_second', 'mfu')\n"
             "table = core.sweep(MODEL, CLUSTER)\n"
             "WIDTH = {c: max(len(c), 5) for c in COLUMNS}  # one line per row, whatever the window\n"
             "print('  '.join(f'{c:>{WIDTH[c]}s}' for c in COLUMNS))\n"
             "shown = []  # the five best rows that differ in a column shown here\n"
             "for i in range(len(table)):\n"
             "    row = table.row(i)\n"
             "    line = '  '.join(f'{row[c]:>{WIDTH[c]},.0f}' if c == 'tokens_per_second' else f'{row[c]:>{WIDTH[c]}.3g}'\n"
             "                     if isinstance(row[c], float) else f'{row[c]!s:>{WIDTH[c]}s}' for c in COLUMNS)\n"
             "    if line not in shown:\n"
             "        shown.append(line)\n"
             "        print(line)\n"
             "    if len(shown) == 5:\n"
             "        break\n"
             "everything = core.sweep(MODEL, CLUSTER, include_infeasible=True)\n"
             "infeasible = [i for i in range(len(everything)) if not everything['feasible'][i]]\n"
             "print('\\nWhat each code of an infeasible configuration means:')\n"
             "for code, meaning in core.VIOLATION_CODES.items():\n"
             "    print(f'  {code}: {meaning}')\n"
             "# the infeasible rows would answer Exercise 1's prediction: the lock shows them once you lock\n"
             "reasons = {}\n"
             "for i in infeasible:\n"
             "    row = everything.row(i)\n"
             "    reasons.setdefault(row['violations'], f\"TP={row['tp']} CP={row['cp']} PP={row['pp']} DP={row['dp']} \"\n"
             "                                          f\"ZeRO={row['zero_stage']}: `{row['violations']}`\")\n"
             "# how many are infeasible settles the prediction too: the lock shows the count with the rows\n"
             "lab.lock('ex1').after_lock(f'**{len(infeasible):,} of {len(everything):,} configurations are infeasible.** '\n"
             "                           'One row per reason:\\n\\n' + '\\n'.join(f'* {r}' for r in reasons.values()),\n"
             "                           before='How many configurations are infeasible, and one row per reason, appear '\n"
             "                                  'here once you lock Exercise 1 '\n"
             "                                  '(no need to run this cell again).')",
             "tut_sweep"),
        *lab.answer_cells("ex3_best", s),
        *lab.reflection_cells("why"),
    ]

ACTIVITY = LAB = Lab(NAME, "tutorial", "Tutorial · 3D parallelism solver", SPEC, (EX1, EX2, EX3), layout, vary)

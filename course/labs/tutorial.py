"""Tutorial · 3D parallelism with the planner: cells of the source notebook.

Story (material 001, the solver tutorial): Llama-3 70B on the 256-GPU research
cluster (32 DGX H100 nodes). Pure data parallelism first, then the fabric, then
pipeline micro-batches, then the whole configuration space with
:func:`course.core.plan` and :func:`course.core.sweep`. Keys:
:mod:`course.exercises.labs`.
"""

from __future__ import annotations

from typing import List

from course.exercises.spec import Cell

from .lab06 import _hidden

NAME = "tutorial_3d_parallelism"


def cells() -> List[Cell]:
    return [
        Cell("markdown",
             "# Tutorial · 3D parallelism with the planner\n\n"
             "Llama-3 70B does not fit on one GPU, and training it on one would take years. This tutorial "
             "splits it over the research cluster: 32 DGX H100 nodes, 256 GPUs, eight per node on NVLink 4, "
             "nodes joined by 100 Gb Ethernet. Every number comes from `course.core.plan` (one "
             "configuration) and `course.core.sweep` (all of them at once).\n\n"
             "**Grading.** Locking the prediction of Exercise 1 earns a completion point; the three numbers "
             "you assign are autograded; the last reflection is graded by hand."),
        Cell("code", "from course import core\n"
                     "from course.prediction import PredictionLock\n"
                     "MODEL, CLUSTER = 'llama3-70b', 'research-256'", "tut_setup"),
        Cell("markdown",
             "## Exercise 1 · Predict before you observe: pure data parallelism\n\n"
             "Data parallelism keeps a full copy of the model, its gradients and its Adam state on every GPU "
             "and splits only the batch. Predict first."),
        Cell("code",
             "lock_ex1 = PredictionLock(\n"
             "    'tutorial/ex1', 'Pure data parallelism (TP=1, PP=1, DP=256) for Llama-3 70B on 80 GB H100s:',\n"
             "    options={'A': 'runs, communication-bound', 'B': 'runs, compute-bound',\n"
             "             'C': 'does not fit: out of memory', 'D': 'fits only with bf16 weights'},\n"
             "    correct='C',\n"
             "    explanations='Mixed-precision Adam needs 16 bytes per parameter (2 weights + 2 gradients + 12 '\n"
             "                 'optimizer) = 1.1 TB for 70B parameters before any activation: 14x an H100.')\n"
             "lock_ex1", "tut_ex1_lock_cell"),
        Cell("test", "# Graded: a locked prediction in predictions.json (completion point)\n" + _hidden("tutorial_ex1_lock"),
             "tutorial_ex1_lock", 1.0),
        Cell("code", "pure_dp = core.plan(MODEL, CLUSTER, tp=1, pp=1, dp=256)\n"
                     "for code, sentence in pure_dp.violations:\n    print(code, '-', sentence)\n"
                     "lock_ex1.reveal()", "tut_ex1_plan"),
        Cell("markdown", "Assign `pure_dp_memory_gb`: the memory one GPU would need under pure data parallelism, "
                         "in GB (10⁹ bytes), as the planner reports it (`memory_total` is in bytes)."),
        Cell("answer", "# pure_dp_memory_gb = ...   (GB)\n"
                       "### BEGIN SOLUTION\npure_dp_memory_gb = pure_dp.memory_total / 1e9\n### END SOLUTION",
             "tutorial_ex1_memory_answer"),
        Cell("test", "# Graded: within 2 % of the planner\n" + _hidden("tutorial_ex1_memory"), "tutorial_ex1_memory", 1.0),
        Cell("markdown",
             "## The fabric between the nodes\n\n"
             "Take a configuration that fits (TP = 8 inside a node, PP = 4, DP = 8, full recomputation) and "
             "change only the network between nodes: 100 Gb Ethernet (12.5 GB/s per port), InfiniBand HDR "
             "(200 Gb/s = 25 GB/s) and NDR (400 Gb/s = 50 GB/s).\n\n"
             "> **Correction to the source tutorial.** HDR is 200 Gb/s, i.e. 25 GB/s per direction, not 50; "
             "and the H100's dense BF16 peak is 989 TFLOPS (1979 is the 2:4-sparsity figure)."),
        Cell("code",
             "for fabric in ('Ethernet 100G', 'InfiniBand HDR', 'InfiniBand NDR'):\n"
             "    cluster = core.catalog.make_cluster('DGX H100', 256, fabric=fabric)\n"
             "    p = core.plan(MODEL, cluster, tp=8, pp=4, dp=8, num_microbatches=16, recompute='full')\n"
             "    print(f'{fabric:15s} step {p.step_time:6.2f} s   DP all-reduce exposed {p.dp_comm_exposed:6.3f} s'\n"
             "          f'   MFU {p.mfu:5.1%}   feasible {p.feasible}')", "tut_fabric"),
        Cell("markdown",
             "## Exercise 3 · The micro-batch lever\n\n"
             "A pipeline of p stages idles while it fills and drains: the bubble is (p−1)/(m+p−1) of the step "
             "for m micro-batches (Narayanan et al. 2021). The table below is `core.bubble_fraction` for each "
             "pair."),
        Cell("code",
             "print('PP \\\\ m ' + ''.join(f'{m:>8d}' for m in (4, 8, 16, 32)))\n"
             "for pp in (2, 4, 8, 16):\n"
             "    print(f'{pp:6d} ' + ''.join(f'{core.bubble_fraction(pp, m):8.1%}' for m in (4, 8, 16, 32)))",
             "tut_bubble_table"),
        Cell("markdown", "Assign `bubble_pp8_m32`: the bubble fraction (a number between 0 and 1) of an 8-stage "
                         "pipeline with 32 micro-batches."),
        Cell("answer", "# bubble_pp8_m32 = ...   (fraction, 0..1)\n"
                       "### BEGIN SOLUTION\nbubble_pp8_m32 = 7 / (32 + 7)\n### END SOLUTION",
             "tutorial_ex3_bubble_answer"),
        Cell("test", "# Graded: within 2 %\n" + _hidden("tutorial_ex3_bubble"), "tutorial_ex3_bubble", 1.0),
        Cell("markdown",
             "## Exercise 2 · Find the optimal configuration\n\n"
             "`core.sweep` evaluates every TP × PP × DP split, micro-batch, ZeRO stage and recompute mode "
             "for the Llama 3 global batch (about 16 M tokens) and sorts by tokens per second. With "
             "`include_infeasible=True` it also keeps the rows that break a limit, and says which."),
        Cell("code",
             "COLUMNS = ('tp', 'pp', 'dp', 'micro_batch', 'zero_stage', 'recompute', 'tokens_per_second', 'mfu')\n"
             "table = core.sweep(MODEL, CLUSTER)\n"
             "print('  '.join(f'{c:>10s}' for c in COLUMNS))\n"
             "for i in range(5):\n"
             "    row = table.row(i)\n"
             "    print('  '.join(f'{row[c]:>10.3g}' if isinstance(row[c], float) else f'{row[c]!s:>10s}' for c in COLUMNS))\n"
             "everything = core.sweep(MODEL, CLUSTER, include_infeasible=True)\n"
             "infeasible = [i for i in range(len(everything)) if not everything['feasible'][i]]\n"
             "print(f'\\n{len(infeasible)} of {len(everything)} configurations are infeasible; one per reason:')\n"
             "seen = set()\n"
             "for i in infeasible:\n"
             "    row = everything.row(i)\n"
             "    if row['violations'] not in seen:\n"
             "        seen.add(row['violations'])\n"
             "        print(f\"TP={row['tp']} PP={row['pp']} DP={row['dp']} ZeRO={row['zero_stage']}: {row['violations']}\")\n"
             "print('Each code is a limit: out_of_memory (more than 80 GB per GPU), tp_crosses_node (TP beyond 8 '\n"
             "      'GPUs leaves NVLink), zero_with_pipeline (ZeRO-2/3 sharding fights micro-batched pipelines), ...')",
             "tut_sweep"),
        Cell("markdown", "Assign `best_tokens_per_second`: the throughput of the best feasible configuration "
                         "(tokens per second, from the sweep)."),
        Cell("answer", "# best_tokens_per_second = ...   (tokens/s)\n"
                       "### BEGIN SOLUTION\nbest_tokens_per_second = table.row(0)['tokens_per_second']\n"
                       "### END SOLUTION", "tutorial_ex2_best_answer"),
        Cell("test", "# Graded: within 2 % of the sweep's best\n" + _hidden("tutorial_ex2_best"), "tutorial_ex2_best", 1.0),
        Cell("markdown", "**Reflection (graded by hand).** Why does the best configuration keep tensor parallelism "
                         "inside one node, and what would happen to its step time if TP were 16 (two nodes)?"),
        Cell("manual",
             "**Model answer.** Tensor parallelism all-reduces activations twice per layer in the forward and "
             "twice in the backward pass, on the critical path; inside a node that runs on NVLink 4 at 450 GB/s, "
             "across nodes on a 12.5 GB/s Ethernet port, about 36x slower, so TP = 16 would make the step "
             "communication-bound.\n\n**Mark scheme (2 points).** 1 point: TP communicates every layer, on the "
             "critical path. 1 point: NVLink vs inter-node bandwidth (an order of magnitude or more).",
             "tutorial_why", 2.0),
    ]

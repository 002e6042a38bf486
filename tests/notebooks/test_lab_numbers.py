"""Every number Lab 06 states agrees with the core and with its own instruments (issue 24, deliverable 2).

The expected values are computed here from the physics (bytes = parameters x 2 for bf16, the
alpha-beta costs of :mod:`course.core`) and from the dashboard a student sees, then looked up
in the text the student reads (release markdown, the lock's explanation and reveal).
"""

from __future__ import annotations


import nbformat

from course import core
from course.core import catalog
from course.labs import lab06
from course.instruments import AlgorithmDashboard
from course.instruments.allreduce import WORKLOADS

LAB = lab06.LAB


def _markdown() -> str:
    nb = nbformat.read(f"release/{LAB.name}/{LAB.name}.ipynb", 4)
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def test_the_175b_preset_is_its_bf16_gradients():
    bf16 = 175e9 * 2  # two bytes per bf16 gradient
    assert core.precision_bytes("bf16") == 2
    assert [name for name, size in WORKLOADS.items() if size == bf16] == ["175B gradients (350 GB)"]
    assert "175B model's gradients (350 GB)" in _markdown() and "280 GB" not in _markdown()
    assert "With the 350 GB preset" in _markdown()


def test_the_story_fits_on_the_stated_h100():
    params, n = 7e9, 128
    gradients = params * 2
    # one capacity (85.5 GB, GB = 10^9 bytes), the vendor's "80 GB" explained where it first appears
    assert ('7-billion-parameter model on 128 H100 GPUs of 85.5 GB (sold as "80 GB"; NVML reports 81,559 MiB = '
            "85.5 GB, with GB = 10⁹ bytes)") in _markdown()
    assert "every GPU holds 14 GB of bf16 gradients" in _markdown()
    # bf16 weights and gradients, fp32 master weights and Adam moments (12 bytes) sharded by ZeRO-1
    per_gpu = 2 * params + gradients + 12 * params / n
    assert per_gpu < catalog.accelerator("H100").memory_bytes
    assert LAB.spec["gradient_bytes"] == gradients


def test_math_peek_reveal_and_dashboard_name_the_same_winner_and_crossover():
    link = catalog.link("InfiniBand NDR")
    n, alpha, b, m = 128, link.latency, link.bandwidth, 0.5e6
    log = 7  # ceil(log2 128)
    ring = 2 * (n - 1) * alpha + 2 * (n - 1) / n * m / b
    tree = 2 * log * (alpha + m / b)
    raben = 2 * log * alpha + 2 * (n - 1) / n * m / b
    assert raben < tree < ring
    ring_tree = (n - 1 - log) * alpha * b / (log - (n - 1) / n)
    lock = LAB.lock_of("act2")
    reveal = lock.reveal
    assert f"= {ring_tree / 1e6:.1f} MB" in reveal
    assert f"Ring {ring * 1e6:.0f} µs, binomial tree {tree * 1e6:.0f} µs, Rabenseifner {raben * 1e6:.0f} µs" in reveal
    # the dashboard a student moves to 0.5 MB: its winner and its marked crossover are the reveal's
    dashboard = AlgorithmDashboard(gpus=n)
    dashboard.controls["workload"].value = "small update (< 1 MB)"
    assert dashboard.result["best"] == "rabenseifner" and lock.correct == "rabenseifner"
    assert "Rabenseifner" in lock.options["rabenseifner"] and "rabenseifner" in lab06.fastest_for_small_update(LAB.spec)
    assert LAB.key("act2_small") == dashboard.result["best_seconds"] * 1e6  # the unvaried question: the story's
    (crossing,) = dashboard.result["crossovers"]
    assert (crossing["from"], crossing["to"]) == ("recursive_doubling", "rabenseifner")
    assert f"below {crossing['message_bytes'] / 1e3:.0f} kB recursive doubling" in reveal
    assert f"{2 * (n - 1)} latencies" in lock.explanation and f"only {2 * log}" in lock.explanation
    assert crossing["message_bytes"] < m  # the 0.5 MB update lies above it, as the reveal says
    # the graded question is about each student's own update (N, M, link): the reveal says whose numbers it states
    assert f"These are the story's numbers** (N = {n} on InfiniBand NDR)" in reveal


def test_the_tutorial_reflection_names_the_sweeps_best_row():
    from course.labs import tutorial

    best = core.sweep(tutorial.SPEC["model"], tutorial.SPEC["cluster"]).row(0)
    prompt = tutorial.LAB.reflection("why").prompt
    assert f"(TP = {best['tp']}, CP = {best['cp']} on the research cluster)" in prompt
    assert best["tp"] * best["cp"] <= 8  # one DGX H100 node

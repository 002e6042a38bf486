"""Registry parts of the labs (Lab 06 and the 3D-parallelism tutorial).

Same contract as the workbook (:mod:`course.exercises.registry`): ``harvest``
runs in the student's kernel and only reads plain values; ``judge`` recomputes
the key with :mod:`course.core` in a trusted process.

Three kinds of part:

* ``lock`` -- completion point for a locked prediction. The harvest reads
  ``predictions.json`` in the notebook's folder (it travels with the nbgrader
  submission), never widget state; any locked value earns the point.
* ``derive`` -- a number the student assigns, compared with the core's value.
* ``choice`` -- an algorithm name; every algorithm within 1 % of the fastest
  (the dashboard's tie rule) is accepted.
"""

from __future__ import annotations

from typing import Any, Callable, Dict

from course import core
from course.core.units import GB, GB_per_s, us

from .registry import RAISED, Part, Verdict, judge_plain, register, to_plain

LAB06 = "lab06_bandwidth_invariant"
TUTORIAL = "tutorial_3d_parallelism"

#: Lab 06 scenario: 128 GPUs on InfiniBand NDR (50 GB/s per direction, 5 us per message;
#: catalog link "InfiniBand NDR").
LAB06_GPUS = 128
LAB06_BANDWIDTH = 50 * GB_per_s
LAB06_LATENCY = 5 * us
LAB06_GRADIENT_BYTES = 140 * GB      # 70B parameters x 2 bytes (bf16 gradients)
LAB06_SMALL_BYTES = 0.5e-3 * GB      # a 0.5 MB update (the dashboard's "small update" preset)
TIE = 0.01


def _times(message_bytes: float) -> Dict[str, float]:
    return {a: float(core.allreduce_time(message_bytes, LAB06_GPUS, LAB06_BANDWIDTH, LAB06_LATENCY, algorithm=a))
            for a in core.ALLREDUCE_ALGORITHMS}


def naive_over_ring() -> float:
    """Key of Lab 06 Act I: naive / ring all-reduce time for 140 GB on 128 GPUs (about N = 128)."""
    t = _times(LAB06_GRADIENT_BYTES)
    return t["naive"] / t["ring"]


def fastest_for_small_update() -> list:
    """Key of Lab 06 Act II: the algorithms within 1 % of the fastest for a 0.5 MB all-reduce."""
    t = _times(LAB06_SMALL_BYTES)
    best = min(t.values())
    return sorted(a for a, s in t.items() if s <= best * (1 + TIE))


def lock_part(grade_id: str, key: str, assignment: str, title: str, points: float = 1.0) -> Part:
    """Completion point for the locked prediction ``key`` (read from predictions.json)."""
    def harvest(namespace: dict, probes: Any) -> dict:
        from course.prediction import read_predictions
        entry = read_predictions(".").get(key)
        return {"locked": entry is not None}

    def judge(harvested: dict, seed: int = 0) -> Verdict:
        if harvested.get("locked") is True:
            return Verdict(1.0, f"prediction {key} is locked (completion point)")
        return Verdict(0.0, f"no locked prediction {key} in predictions.json: lock it before exploring")

    return register(Part(grade_id=grade_id, exercise=key, kind="lock", points=points, names=(),
                         harvest=harvest, judge=judge, assignment=assignment,
                         ledger_key=key, title=title))


def number_part(grade_id: str, name: str, key: Callable[[], float], assignment: str, title: str,
                rtol: float = 0.02, points: float = 1.0) -> Part:
    """A number the student assigns to ``name``, within ``rtol`` of ``key()``."""
    def harvest(namespace: dict, probes: Any) -> dict:
        return {"value": to_plain(namespace[name]) if name in namespace else {RAISED: "NameError"}}

    def judge(harvested: dict, seed: int = 0) -> Verdict:
        value = harvested.get("value")
        if type(value) is dict:
            return Verdict(0.0, f"`{name}` is not defined")
        return judge_plain(value, key(), rtol=rtol, name=f"`{name}`")

    return register(Part(grade_id=grade_id, exercise=grade_id, kind="derive", points=points, names=(name,),
                         harvest=harvest, judge=judge, assignment=assignment,
                         ledger_key=grade_id.replace("_", "/", 1), title=title))


def choice_part(grade_id: str, name: str, accepted: Callable[[], list], assignment: str, title: str,
                points: float = 1.0) -> Part:
    """A string the student assigns to ``name``; any of ``accepted()`` (case-insensitive) scores."""
    def harvest(namespace: dict, probes: Any) -> dict:
        return {"value": to_plain(namespace[name]) if name in namespace else {RAISED: "NameError"}}

    def judge(harvested: dict, seed: int = 0) -> Verdict:
        value = harvested.get("value")
        if type(value) is not str:
            return Verdict(0.0, f"`{name}` must be a str naming an algorithm")
        ok = [a.lower() for a in accepted()]
        if value.strip().lower() in ok:
            return Verdict(1.0, "correct")
        return Verdict(0.0, f"`{name}` = {value!r} is not the fastest algorithm for this message")

    return register(Part(grade_id=grade_id, exercise=grade_id, kind="choice", points=points, names=(name,),
                         harvest=harvest, judge=judge, assignment=assignment,
                         ledger_key=grade_id.replace("_", "/", 1), title=title))


lock_part("lab06_act1_lock", "lab06/act1", LAB06, "Act I prediction locked")
number_part("lab06_act1_ratio", "naive_over_ring", naive_over_ring, LAB06,
            "Act I: naive / ring time at 128 GPUs")
lock_part("lab06_act2_lock", "lab06/act2", LAB06, "Act II prediction locked")
choice_part("lab06_act2_small", "small_update_algorithm", fastest_for_small_update, LAB06,
            "Act II: fastest algorithm for a 0.5 MB update")


def pure_dp_memory_gb() -> float:
    """Key of tutorial exercise 1: planner memory per GPU, pure DP of Llama-3 70B on research-256 (GB)."""
    return core.plan("llama3-70b", "research-256", tp=1, pp=1, dp=256).memory_total / GB


def bubble_pp8_m32() -> float:
    """Key of tutorial exercise 3: (p-1)/(m+p-1) for p = 8, m = 32 (Narayanan et al. 2021)."""
    return float(core.bubble_fraction(8, 32))


def best_tokens_per_second() -> float:
    """Key of tutorial exercise 2: tokens/s of the sweep's best feasible configuration."""
    return float(core.sweep("llama3-70b", "research-256").row(0)["tokens_per_second"])


lock_part("tutorial_ex1_lock", "tutorial/ex1", TUTORIAL, "Exercise 1 prediction locked")
number_part("tutorial_ex1_memory", "pure_dp_memory_gb", pure_dp_memory_gb, TUTORIAL,
            "Exercise 1: memory per GPU under pure DP")
number_part("tutorial_ex3_bubble", "bubble_pp8_m32", bubble_pp8_m32, TUTORIAL,
            "Exercise 3: bubble fraction, 8 stages, 32 micro-batches")
number_part("tutorial_ex2_best", "best_tokens_per_second", best_tokens_per_second, TUTORIAL,
            "Exercise 2: best tokens/s of the sweep")

LAB05 = "lab05_parallelism_paradox"


def lab05_allreduce_seconds() -> float:
    """Key of Lab 05 Act I: ring all-reduce of 14 GB on 512 GPUs over NDR (50 GB/s, 5 us)."""
    return float(core.allreduce_time(14 * GB, 512, LAB06_BANDWIDTH, LAB06_LATENCY, algorithm="ring"))


def lab05_plain_memory_gb() -> float:
    """Key of Lab 05 Act II: GB per GPU of TP=8, PP=4, DP=32, m=8, ZeRO 0, no recompute (errata 5)."""
    return core.plan("gpt3-175b", "h100-1024", tp=8, pp=4, dp=32, num_microbatches=8).memory_total / GB


lock_part("lab05_act1_lock", "lab05/act1", LAB05, "Act I prediction locked")
number_part("lab05_act1_allreduce", "act1_allreduce_s", lab05_allreduce_seconds, LAB05,
            "Act I: all-reduce time at 512 GPUs")
lock_part("lab05_act2_lock", "lab05/act2", LAB05, "Act II prediction locked")
number_part("lab05_act2_memory", "act2_plain_memory_gb", lab05_plain_memory_gb, LAB05,
            "Act II: memory per GPU of the source's answer")
lock_part("lab05_part3_lock", "lab05/part3", LAB05, "Part 3 prediction locked")

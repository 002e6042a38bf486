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
from course.core import units
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

#: Lab 05 Part 3 (the synchronization audit's defaults, stated in the notebook): 1,024 H100s, 5 % of
#: the workers straggle in a step at 1.15x the normal step time; the full checkpoint takes 98 s from
#: one rank (workbook 7.2: 980 GB at 10 GB/s), and a ZeRO rank writes only its 1/N shard at the same
#: 10 GB/s; 50,000 GPU-hours between failures per GPU (Dubey et al. 2024, sec. 3.3.4: 419 interruptions
#: in 54 days on 16,384 GPUs); 2 minutes to restart (workbook ch. 7); 730.5 hours per month
#: (365.25 x 24 / 12); the catalog's H100 price per GPU-hour.
LAB05_PART3 = {"workers": 1024, "straggler_fraction": 0.05, "slowdown": 1.15, "checkpoint_seconds": 98.0,
               "storage_bandwidth": 10 * GB_per_s, "gpu_mtbf_seconds": 50_000 * units.hour,
               "restart_seconds": 2 * units.minute, "hours_per_month": 730.5, "accelerator": "H100"}


def lab05_monthly_savings(workers=None, straggler_fraction=None, slowdown=None, checkpoint_seconds=None) -> dict:
    """Key of Lab 05 Part 3: monthly dollars saved by async SGD and by ZeRO-sharded checkpoints.

    Same training progress in both cases, against today's synchronous bill
    ``B = N x price x 730.5 h``:

    * async: nobody waits for stragglers, so the same samples cost
      ``B / async_speedup`` (staleness not charged);
    * sync + ZeRO: the wait stays, the checkpoint-and-rework waste
      ``w = delta/tau + (tau/2 + R)/M`` at Young's ``tau = sqrt(2 delta M)`` falls
      from ``w0`` (one rank writes ``delta``) to ``w1`` (each of the N ranks writes
      ``delta / N``; an upper bound on the gain, as storage must absorb N writers),
      so the bill becomes ``B (1 - w0) / (1 - w1)``.

    Returns ``{"bill", "async_saves", "zero_saves"}`` in US dollars per month.
    Sources: Chen et al. 2016 (stragglers), Young 1974, Rajbhandari et al. 2020
    (ZeRO shards the optimizer state over the N data-parallel ranks).

    >>> s = lab05_monthly_savings()
    >>> s["async_saves"] > s["zero_saves"] > 0
    True
    """
    c = LAB05_PART3
    n = c["workers"] if workers is None else workers
    f = c["straggler_fraction"] if straggler_fraction is None else straggler_fraction
    s = c["slowdown"] if slowdown is None else slowdown
    delta = c["checkpoint_seconds"] if checkpoint_seconds is None else checkpoint_seconds
    bill = n * core.catalog.accelerator(c["accelerator"]).price_per_hour * c["hours_per_month"]
    mtbf = core.cluster_mtbf(c["gpu_mtbf_seconds"], n)
    shard = core.checkpoint_write_time(delta * c["storage_bandwidth"], c["storage_bandwidth"], writers=n)
    deltas = [delta, float(shard)]
    waste = [float(core.waste_fraction(core.young_interval(d, mtbf), d, mtbf, c["restart_seconds"])) for d in deltas]
    return {"bill": float(bill),
            "async_saves": float(bill - bill / core.async_speedup(n, f, s)),
            "zero_saves": float(bill - bill * (1 - waste[0]) / (1 - waste[1]))}


number_part("lab05_part3_async_saves", "async_saves_usd", lambda: lab05_monthly_savings()["async_saves"], LAB05,
            "Part 3: monthly dollars saved by async SGD")
number_part("lab05_part3_zero_saves", "zero_saves_usd", lambda: lab05_monthly_savings()["zero_saves"], LAB05,
            "Part 3: monthly dollars saved by ZeRO-sharded checkpoints")

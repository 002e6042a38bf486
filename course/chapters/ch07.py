"""Chapter 7 - checkpoint and recovery: workbook exercises 7.1-7.5.

Keys come from ``course.core`` (``checkpoint_bytes``, ``checkpoint_write_time``,
``young_interval``, ``waste_cost_per_failure``, ``waste_fraction``). Sources: Young 1974,
Daly 2006 eq. 37, Rajbhandari et al. 2020 section 3.1.
"""

from __future__ import annotations

import random

from course import core
from course.core import units as u
from course.assess.activity import Chapter
from course.assess.authoring import build_exercise, values_exercise
from course.assess.variants import MODEL_SIZES_B

CHAPTER = {
    "title": "Chapter 7 \u00b7 Checkpoint and recovery",
    "intro": ("On thousands of GPUs something fails every few hours. Training survives by writing "
              "checkpoints and restarting from the last one; everything since then is lost. How "
              "big is a checkpoint, how often should you write one, and what does a crash cost?"),
    "concept": [r"""
## What a checkpoint holds

To resume mixed-precision Adam exactly you need, per parameter, the 16-bit working weights
(2 B), the FP32 master weights (4 B) and Adam's two FP32 moments (4 B + 4 B): **14 bytes per
parameter**, plus a few bytes of step counter, learning-rate schedule and RNG state.
Gradients are not saved; the next step recomputes them (Rajbhandari et al. 2020, section 3.1).
`course.core.checkpoint_bytes(params)` returns that size in bytes.

**Write time** = size / storage bandwidth (`checkpoint_write_time`). Sharded checkpoints,
in which every data-parallel rank writes its own piece, divide it by the number of writers
for as long as the storage keeps up.
""", r"""
## How often to checkpoint

Let $\delta$ be the time to write one checkpoint (s), $M$ the job's mean time between
failures (MTBF, s) and $\tau$ the compute time between checkpoints (s). To first order the
share of time wasted is

$$\text{waste}(\tau) \approx \frac{\delta}{\tau} + \frac{\tau}{2M}:$$

writing checkpoints, plus on average half an interval of lost work per failure. Its minimum
is **Young's interval** (Young 1974), $\tau_\text{Young} = \sqrt{2\,\delta\,M}$, where both
terms are equal. Daly (2006, eq. 37) adds higher-order terms,
$\tau = \sqrt{2\delta M}\,\bigl[1 + \tfrac13\sqrt{\delta/(2M)} + \tfrac19\,\delta/(2M)\bigr] - \delta$
for $\delta < 2M$ (else $\tau = M$), which comes out slightly shorter. In `course.core`:
`young_interval(checkpoint_seconds, mtbf_seconds)`, `daly_interval(...)` and
`waste_fraction(interval_seconds, checkpoint_seconds, mtbf_seconds)`.

**Cost of one failure** = GPUs × price per GPU-hour × (expected lost work $\tau/2$ + restart
time): `waste_cost_per_failure(gpus, interval_seconds, price_per_gpu_hour, restart_seconds)`.
"""],
}

#: this chapter as one activity (listed in :mod:`course.activities`); the exercises below add to it
ACTIVITY = CH = Chapter('ch07', 'ch07_checkpointing', **CHAPTER)


# 7.1 -----------------------------------------------------------------------------------
def _key_7_1(s):
    return {"checkpoint_gb": core.checkpoint_bytes(s["params_b"] * u.billion, extra_bytes=s["extra_bytes"]) / u.GB}


def _deriv_7_1(s):
    n = s["params_b"] * u.billion
    return (f"16-bit weights: ${s['params_b']:g}\\times10^9\\times2$ B = {2 * n / u.GB:g} GB; FP32 master: "
            f"{4 * n / u.GB:g} GB; FP32 momentum: {4 * n / u.GB:g} GB; FP32 variance: {4 * n / u.GB:g} GB; "
            f"step counter and learning rate: {s['extra_bytes']} B. Total $14\\times{s['params_b']:g}$ GB "
            f"= **{_key_7_1(s)['checkpoint_gb']:.4g} GB**, seven times the 16-bit weights alone.")


values_exercise(
    CH, "7.1", "Checkpoint size", kind="Derive", spec={"params_b": 70.0, "extra_bytes": 8},
    vary=lambda s, rng: dict(s, params_b=rng.choice(MODEL_SIZES_B)),
    prompt=lambda s: (f"A {s['params_b']:g}B-parameter model is trained with mixed-precision Adam. Its "
                      "checkpoint holds the FP16 weights, the FP32 master weights, Adam's two FP32 "
                      f"moment tensors and {s['extra_bytes']} bytes of step counter and learning rate. "
                      "How many GB ($10^9$ bytes) is one checkpoint?"),
    answers={"checkpoint_gb": "GB"}, key=_key_7_1, derivation=_deriv_7_1,
    solution=lambda s: (f"params = {s['params_b']:g}e9\n"
                        f"checkpoint_gb = (params * (2 + 4 + 4 + 4) + {s['extra_bytes']}) / 1e9"))


# 7.2 -----------------------------------------------------------------------------------
def _key_7_2(s):
    return {"write_seconds": core.checkpoint_write_time(s["checkpoint_gb"] * u.GB, s["storage_gbs"] * u.GB_per_s)}


values_exercise(
    CH, "7.2", "Write time", kind="Derive", spec={"checkpoint_gb": 980.0, "storage_gbs": 10.0},
    vary=lambda s, rng: dict(s, checkpoint_gb=float(rng.choice([98, 182, 420, 980, 2450])),
                             storage_gbs=float(rng.choice([5, 10, 20, 40, 100]))),
    prompt=lambda s: (f"A {s['checkpoint_gb']:g} GB checkpoint is written to a network file system at "
                      f"{s['storage_gbs']:g} GB/s. How many seconds does one write take?"),
    answers={"write_seconds": "s"}, key=_key_7_2,
    solution=lambda s: f"write_seconds = {s['checkpoint_gb']:g} / {s['storage_gbs']:g}",
    derivation=lambda s: (
        f"Time = size / bandwidth = {s['checkpoint_gb']:g} GB / {s['storage_gbs']:g} GB/s = "
        f"**{_key_7_2(s)['write_seconds']:.4g} s**. If 64 data-parallel ranks each write their shard "
        f"at {s['storage_gbs']:g} GB/s and the storage keeps up, it takes "
        f"{_key_7_2(s)['write_seconds'] / 64:.2g} s."))


# 7.3 -----------------------------------------------------------------------------------
def _key_7_3(s):
    return {"interval_minutes": core.young_interval(s["ckpt_seconds"], s["mtbf_hours"] * u.hour) / u.minute}


def _deriv_7_3(s):
    d, M = s["ckpt_seconds"], s["mtbf_hours"] * u.hour
    tau = core.young_interval(d, M)
    return (f"$\\tau = \\sqrt{{2\\,\\delta\\,M}} = \\sqrt{{2\\times{d:g}\\,\\mathrm{{s}}\\times{M:g}\\,\\mathrm{{s}}}}$ "
            f"= {tau:.0f} s = **{tau / u.minute:.3g} min**. Daly's refinement gives "
            f"{core.daly_interval(d, M) / u.minute:.3g} min. The waste at Young's interval is "
            f"$\\delta/\\tau + \\tau/2M$ = {100 * core.waste_fraction(tau, d, M):.3g} %.")


values_exercise(
    CH, "7.3", "Optimal checkpoint interval", kind="Derive", spec={"ckpt_seconds": 98.0, "mtbf_hours": 24.0},
    vary=lambda s, rng: dict(s, ckpt_seconds=float(rng.choice([30, 45, 60, 98, 120, 300])),
                             mtbf_hours=float(rng.choice([3, 6, 12, 24, 48]))),
    prompt=lambda s: (f"The job's MTBF is {s['mtbf_hours']:g} hours and one checkpoint takes "
                      f"{s['ckpt_seconds']:g} s to write. With Young's formula "
                      "$\\tau = \\sqrt{2\\,\\delta\\,M}$, how many **minutes** of training should pass "
                      "between checkpoints?"),
    answers={"interval_minutes": "min"}, key=_key_7_3, derivation=_deriv_7_3,
    solution=lambda s: (f"ckpt_seconds, mtbf_hours = {s['ckpt_seconds']:g}, {s['mtbf_hours']:g}\n"
                        "interval_minutes = (2 * ckpt_seconds * mtbf_hours * 3600) ** 0.5 / 60"))


# 7.4 -----------------------------------------------------------------------------------
def _interval_7_4(s):
    return core.young_interval(s["ckpt_seconds"], s["mtbf_hours"] * u.hour)


def _key_7_4(s):
    return {"cost_per_crash_usd": core.waste_cost_per_failure(
        s["gpus"], _interval_7_4(s), s["usd_per_gpu_hour"], restart_seconds=s["restart_minutes"] * u.minute)}


def _deriv_7_4(s):
    tau = _interval_7_4(s)
    lost = tau / 2 + s["restart_minutes"] * u.minute
    return (f"A crash falls on average half-way through an interval: {tau / 2 / u.minute:.3g} min of "
            f"lost work, plus {s['restart_minutes']:g} min to restart = {lost / u.minute:.3g} min = "
            f"{lost / u.hour:.4g} h. Cost: {s['gpus']} GPUs × \\${s['usd_per_gpu_hour']:g}/GPU-h × "
            f"{lost / u.hour:.4g} h = **\\${_key_7_4(s)['cost_per_crash_usd']:,.0f}**. Over a 30-day run "
            f"with a {s['mtbf_hours']:g} h MTBF that is about "
            f"\\${30 * 24 / s['mtbf_hours'] * _key_7_4(s)['cost_per_crash_usd']:,.0f}.")


values_exercise(
    CH, "7.4", "Wasted compute on a crash", kind="Derive",
    spec={"gpus": 512, "usd_per_gpu_hour": 2.0, "ckpt_seconds": 98.0, "mtbf_hours": 24.0,
          "restart_minutes": 2.0},
    vary=lambda s, rng: dict(s, gpus=rng.choice([128, 256, 512, 1024, 2048]),
                             usd_per_gpu_hour=rng.choice([1.5, 2.0, 2.5, 3.0]),
                             ckpt_seconds=float(rng.choice([30, 60, 98, 120])),
                             mtbf_hours=float(rng.choice([6, 12, 24, 48])), restart_minutes=float(rng.choice([2, 5, 10]))),
    prompt=lambda s: (f"The run uses {s['gpus']} GPUs at \\${s['usd_per_gpu_hour']:g} per GPU-hour and "
                      f"checkpoints at the Young interval (7.3's formula, with this run's own numbers: MTBF "
                      f"{s['mtbf_hours']:g} h, {s['ckpt_seconds']:g} s per checkpoint). After a crash it needs "
                      f"{s['restart_minutes']:g} minutes to reload and restart. On average, how many "
                      "dollars does one crash waste: the work lost since the last checkpoint plus the "
                      "restart time, on all GPUs?"),
    answers={"cost_per_crash_usd": "$"}, key=_key_7_4, derivation=_deriv_7_4,
    solution=lambda s: (f"gpus, price = {s['gpus']}, {s['usd_per_gpu_hour']:g}\n"
                        f"interval_h = (2 * {s['ckpt_seconds']:g} / 3600 * {s['mtbf_hours']:g}) ** 0.5\n"
                        f"cost_per_crash_usd = gpus * price * (interval_h / 2 + {s['restart_minutes']:g} / 60)"),
    note=("The workbook rounds the interval to 68 minutes; the key uses the unrounded Young interval "
          "of 7.3, and both are within the 1 % tolerance."))


# 7.5 -----------------------------------------------------------------------------------
def _reference_7_5(mtbf_hours, ckpt_seconds):
    delta, M = ckpt_seconds * u.s, mtbf_hours * u.hour
    tau = core.young_interval(delta, M)
    return [tau / u.minute, 100 * core.waste_fraction(tau, delta, M)]


def _probes_7_5(seed):
    rng = random.Random(f"7.5:{seed}")
    valid = [[24.0, 98.0], [1.0, 1.0], [1000.0, 3600.0], [0.5, 30.0]]
    valid += [[round(rng.uniform(0.5, 2000.0), 3), round(rng.uniform(1.0, 1800.0), 3)] for _ in range(40)]
    invalid = [[0.0, 98.0], [24.0, 0.0], [-5.0, 98.0], [24.0, -1.0]]
    return {"valid": valid, "invalid": invalid}


build_exercise(
    CH, "7.5", "Implement optimal_checkpoint_interval", spec={"example": [12.0, 60.0]},
    vary=lambda s, rng: dict(s, example=[float(rng.choice([3, 6, 12, 24, 48])), float(rng.choice([30, 60, 98, 120, 300]))]),
    prompt=lambda s: ("Write `optimal_checkpoint_interval(mtbf_hours, ckpt_seconds)` returning a pair "
                      "`(interval_minutes, waste_pct)`: Young's interval in **minutes**, and the "
                      "expected share of time wasted at that interval, "
                      "$100\\,(\\delta/\\tau + \\tau/2M)$ **percent** (writing checkpoints plus half an "
                      "interval lost per failure). Raise `ValueError` if an input is not positive. "
                      f"Worked example: MTBF {s['example'][0]:g} h and {s['example'][1]:g} s per checkpoint give "
                      f"about ({_reference_7_5(*s['example'])[0]:.3g}, {_reference_7_5(*s['example'])[1]:.3g})."),
    function="optimal_checkpoint_interval", signature="(mtbf_hours, ckpt_seconds)",
    docstring="Young's checkpoint interval in minutes and the first-order waste in percent.",
    body=("if not mtbf_hours > 0:\n"
          "    raise ValueError(f\"mtbf_hours must be > 0, got {mtbf_hours!r}\")\n"
          "if not ckpt_seconds > 0:\n"
          "    raise ValueError(f\"ckpt_seconds must be > 0, got {ckpt_seconds!r}\")\n"
          "delta_h = ckpt_seconds / 3600\n"
          "interval_h = (2 * delta_h * mtbf_hours) ** 0.5\n"
          "waste = delta_h / interval_h + interval_h / (2 * mtbf_hours)\n"
          "return interval_h * 60, 100 * waste"),
    reference=_reference_7_5, probes=_probes_7_5, examples=[[12.0, 60.0]], returns="numbers",
    derivation=lambda s: (
        "**Work in one unit (hours).** Convert: $\\delta$ = ckpt_seconds / 3600. Young: "
        "$\\tau = \\sqrt{2\\delta M}$, times 60 for minutes. Waste: $\\delta/\\tau + \\tau/(2M)$; at "
        "Young's $\\tau$ both terms are equal, so the waste is $\\sqrt{2\\delta/M}$: for "
        f"{s['example'][0]:g} h and {s['example'][1]:g} s (the worked example) {_reference_7_5(*s['example'])[1]:.3g} %. Inputs that are not positive have no meaning "
        "and raise `ValueError`."))

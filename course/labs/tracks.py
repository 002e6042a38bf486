"""Lab 05 per track (Cloud, Edge, Mobile, Tiny): who writes, what they ask, what to look at.

The Lab 05 plan (material 004) gives four deployment contexts with their own
persona and crisis; ``course.core.catalog.TRACKS`` holds their hardware, link,
model and fleet size. This module holds the *wording* of each act per track
(:data:`SCENES`) and fills in the numbers it quotes from core calls on those
catalog entries (:func:`track_numbers`); it computes nothing itself.
:class:`TrackScene` is the card a notebook shows at the top of an act: it
follows a :class:`~course.instruments.TrackSelector` and rewrites itself on a
switch.

The Cloud track is the default and the graded one: every autograded number of
Lab 05 is defined for Cloud (7B gradients on 512 GPUs, GPT-3 175B on 1,024
H100s, the synchronization audit on 1,024 H100s).
"""

from __future__ import annotations

import html
import traceback
from typing import Dict, NamedTuple

import ipywidgets as widgets

from course import core
from course.core import catalog

from .lab05 import SPEC as LAB05_SPEC, part3_savings

__all__ = ["Scene", "SCENES", "ACTS", "MODEL_NAMES", "CLOUD_ACT1", "STRAGGLERS", "track_numbers", "scene_text", "TrackScene"]

ACTS = ("act1", "act2", "part3")

#: Cloud Act I (material 000): a 7B model's bf16 gradients (2 bytes per parameter) on 512 GPUs,
#: all-reduced across nodes over InfiniBand NDR (the graded Act I number).
CLOUD_ACT1 = {"params": LAB05_SPEC["act1_params_b"] * 1e9, "gradient_bytes_per_param": 2.0,
              "devices": LAB05_SPEC["act1_gpus"], "link": LAB05_SPEC["act1_link"]}
#: Cloud Act II (material 000): GPT-3 175B on 1,024 H100s.
CLOUD_ACT2_MODEL = "gpt3-175b"
#: Part 3 stragglers (the synchronization audit's defaults): 5 % of the workers at 1.15x the step time.
STRAGGLERS = {k: LAB05_SPEC[k] for k in ("straggler_fraction", "slowdown")}
#: How the messages name the catalog's models.
MODEL_NAMES = {"gpt3-175b": "GPT-3 175B", "resnet50": "ResNet-50", "mobilenetv2": "MobileNetV2", "ds-cnn-s": "DS-CNN-S"}
#: Off the GPU cluster, devices train in FP32 (PyTorch's default dtype): 4 bytes per gradient.
FP32_BYTES = 4.0


class Scene(NamedTuple):
    """One act on one track: the sender of the message, the message, and what to look at."""

    sender: str
    message: str
    look: str


# Placeholders are the keys of track_numbers(); each text is our own wording of the plan's story.
SCENES: Dict[str, Dict[str, Scene]] = {
    "Cloud": {
        "act1": Scene(
            "Training infrastructure lead",
            "Same 7B model, same batch per GPU. MFU was 52 % on 8 GPUs, 38 % on 64 and 19 % on 512. "
            "We only added GPUs and it got worse. Why?",
            "Once you lock, the scaling explorer draws MFU against the GPU count, for the fabric you pick, and a "
            "second instrument below it times one part of the step on {devices} GPUs."),
        "act2": Scene(
            "MLOps architect",
            "GPT-3 175B needs {state} of weights, gradients and Adam state (16 bytes per parameter): "
            "{state_ratio} times the {memory} of one {accelerator}. Lay it out on 1,024 H100s as TP x PP x DP "
            "so that it fits and keeps the GPUs busy.",
            "The configurator shows memory, step time and the failure states; the bubble chart follows its PP "
            "and micro-batches."),
        "part3": Scene(
            "Infrastructure lead",
            "With {devices} GPUs and 5 % stragglers, wait-for-all synchronization leaves {idle} of the cluster "
            "idle: about {idle_dollars} a month at {price} per GPU-hour. Which saves more: ZeRO-sharded "
            "checkpoints, or switching to asynchronous updates? I need it in dollars.",
            "The synchronization audit splits the monthly bill; compute the two savings yourself below."),
    },
    "Edge": {
        "act1": Scene(
            "AV systems lead",
            "We learn from the logs of {devices} cars. One synchronous round all-reduces {gradient} of FP32 "
            "{model} gradients over {link} uplinks ({bandwidth}, {latency} per message): a ring takes {ring}, "
            "{ring_latency} of it just the 2(N-1) latency hops. How much of a round is that?",
            "The scaling explorer models DGX clusters and shows a banner here. The all-reduce comparator below "
            "runs this fleet: N = {devices} devices over {link}. Compare the ring with the tree algorithms."),
        "act2": Scene(
            "AV systems lead",
            "{model} needs {state} of weights, gradients and Adam state: {state_share} of one {accelerator}'s "
            "{memory}. It fits on every car, so there is nothing to split with tensor or pipeline parallelism.",
            "The configurator models GPU clusters and shows a banner here. The bubble chart still tells you what "
            "a pipeline split across cars would leave idle."),
        "part3": Scene(
            "AV systems lead",
            "Asynchronous updates from {devices} cars arrive on average {staleness} updates stale (N - 1), and "
            "stale gradients are making the model diverge. Waiting for all cars instead idles {idle} of the fleet "
            "when 5 % of them lag by 15 %.",
            "The audit prices H100 clusters and shows a banner here: weigh staleness against waiting with these "
            "two numbers, then switch to Cloud for the graded challenge."),
    },
    "Mobile": {
        "act1": Scene(
            "AR glasses developer",
            "A global sync of {gradient} of FP32 {model} gradients across {devices} devices over {link} "
            "({bandwidth}): a ring takes {ring}, {ring_latency} of it latency hops; one upload of the update "
            "to a server takes {upload}. Every second the radio is on is battery the wearer does not get back.",
            "The scaling explorer models DGX clusters and shows a banner here. The all-reduce comparator below "
            "runs this fleet: N = {devices} devices over {link}."),
        "act2": Scene(
            "AR glasses developer",
            "{model} needs {state} of weights, gradients and Adam state: {state_share} of the {memory} of one "
            "{accelerator}. Memory is not the wall on this track: every sync is a radio burst.",
            "The configurator models GPU clusters and shows a banner here; the bubble chart is the same for any "
            "pipeline."),
        "part3": Scene(
            "AR glasses developer",
            "Going asynchronous across {devices} devices makes each update {staleness} updates stale on average; "
            "waiting for all of them idles {idle} of the fleet when 5 % lag by 15 %, radios on all the while.",
            "The audit prices H100 clusters and shows a banner here; switch to Cloud for the graded challenge."),
    },
    "Tiny": {
        "act1": Scene(
            "Hearable lead",
            "{devices} hearables learn a noise profile together. A full weight sync of {gradient} over {link} "
            "({bandwidth}, {latency} per connection event): a ring takes {ring}; one gossip exchange with a single "
            "neighbour takes {upload}. Gossip sends less per round but needs many rounds to spread an update.",
            "The scaling explorer models DGX clusters and shows a banner here. The all-reduce comparator below "
            "runs this swarm: N = {devices} devices over {link}."),
        "act2": Scene(
            "Hearable lead",
            "The {model} keyword model needs {state} of weights, gradients and Adam state: {state_share} of the "
            "{memory} of RAM on one {accelerator}, before a single activation. It fits, barely; splitting it across "
            "hearables would send activations over {link} for every micro-batch.",
            "The configurator models GPU clusters and shows a banner here; the bubble chart shows what such a "
            "pipeline would leave idle."),
        "part3": Scene(
            "Hearable lead",
            "If our {devices} hearables applied each other's updates asynchronously, each would be on average "
            "{staleness} updates stale (N - 1); waiting for all of them idles {idle} of the swarm when 5 % lag by "
            "15 %. Gossip sits in between: each device waits only for its neighbour.",
            "The audit prices H100 clusters and shows a banner here; switch to Cloud for the graded challenge."),
    },
}


def _fmt_time(seconds: float) -> str:
    from course.instruments.base import fmt_time

    return fmt_time(seconds)


def _fmt_bytes(n: float) -> str:
    from course.instruments.base import fmt_bytes

    return fmt_bytes(n)


def track_numbers(name: str) -> dict:
    """Numbers the scene texts of track ``name`` quote, from core calls on ``catalog.TRACKS``.

    Plain values (``*_seconds``, ``*_bytes``, fractions) and, under ``"text"``,
    the same numbers formatted for the message. Cloud quotes the lab's graded
    scenario (``CLOUD_ACT1``, GPT-3 175B, the Part 3 audit); the other tracks
    their own fleet, link and model with FP32 gradients.

    >>> edge = track_numbers("Edge")
    >>> edge["devices"], edge["link"], round(edge["gradient_bytes"] / 1e6, 1)
    (10000, '5G', 102.4)
    >>> round(edge["ring_seconds"], 1)   # 2(N-1) x 4 ms + 2(N-1)/N x 102.4 MB / 6.25 MB/s
    112.8
    """
    entry = catalog.track(name)
    accelerator = entry.accelerator
    if entry.name == "Cloud":
        link = catalog.link(CLOUD_ACT1["link"])
        devices = CLOUD_ACT1["devices"]
        gradient = CLOUD_ACT1["params"] * CLOUD_ACT1["gradient_bytes_per_param"]
        model = catalog.model(CLOUD_ACT2_MODEL)
    else:
        link, devices, model = entry.link, int(entry.devices), entry.model
        gradient = model.params * FP32_BYTES
    ring = float(core.allreduce_time(gradient, devices, link.bandwidth, link.latency, algorithm="ring"))
    ring_bandwidth_part = float(core.allreduce_time(gradient, devices, link.bandwidth, 0.0, algorithm="ring"))
    upload = float(core.point_to_point_time(gradient, link.bandwidth, link.latency))
    state = float(core.model_state_bytes(model.params))
    part3_devices = int(entry.devices)
    idle = float(core.sync_idle_fraction(part3_devices, STRAGGLERS["straggler_fraction"], STRAGGLERS["slowdown"]))
    staleness = int(core.mean_staleness(part3_devices))
    numbers = {
        "track": entry.name, "persona": entry.persona, "accelerator": accelerator.name, "link": link.name,
        "model": model.name, "devices": devices, "part3_devices": part3_devices,
        "bandwidth": float(link.bandwidth), "latency": float(link.latency), "gradient_bytes": float(gradient),
        "ring_seconds": ring, "ring_latency_seconds": ring - ring_bandwidth_part, "upload_seconds": upload,
        "state_bytes": state, "memory_bytes": float(accelerator.memory_bytes),
        "state_share": state / float(accelerator.memory_bytes), "sync_idle_fraction": idle, "staleness": staleness,
    }
    price = accelerator.price_per_hour
    if entry.name == "Cloud":  # the waiting the lead complains about = what async would save (graded Part 3 key)
        numbers["idle_dollars"] = part3_savings({**LAB05_SPEC, "workers": part3_devices})["async_saves"]
    text = {
        "devices": f"{devices:,}", "link": link.name, "model": MODEL_NAMES.get(model.name, model.name), "accelerator": accelerator.name,
        "bandwidth": _fmt_bytes(link.bandwidth) + "/s", "latency": _fmt_time(link.latency),
        "gradient": _fmt_bytes(gradient), "ring": _fmt_time(ring), "ring_latency": _fmt_time(ring - ring_bandwidth_part),
        "upload": _fmt_time(upload), "state": _fmt_bytes(state), "memory": _fmt_bytes(accelerator.memory_bytes),
        "state_ratio": f"{state / accelerator.memory_bytes:,.0f}", "state_share": f"{100 * state / accelerator.memory_bytes:.2g} %",
        "idle": f"{100 * idle:.1f} %", "staleness": f"{staleness:,}",
        "idle_dollars": f"${numbers.get('idle_dollars', 0.0) / 1e6:.1f}M", "price": f"${price or 0:.2f}",
    }
    numbers["text"] = text
    return numbers


def scene_text(name: str, act: str) -> Scene:
    """The scene of ``act`` on track ``name`` with its numbers filled in.

    >>> "10,000 cars" in scene_text("Edge", "act1").message
    True
    """
    if act not in ACTS:
        raise ValueError(f"act must be one of {ACTS}, got {act!r}")
    numbers = track_numbers(name)
    text = dict(numbers["text"])
    if act == "part3":
        text["devices"] = f"{numbers['part3_devices']:,}"
    scene = SCENES[numbers["track"]][act]
    return Scene(scene.sender, scene.message.format(**text), scene.look.format(**text))


class TrackScene:
    """The message card of one act that rewrites itself when the track selector changes.

    ``scene.widget`` is an ``HTML`` widget (CSS classes ``course-track-scene`` and
    ``course-track-scene-<act>``); ``scene.track`` the track shown; ``scene.text``
    the :class:`Scene` shown. A failure to build the text shows a banner, never a
    traceback.
    """

    def __init__(self, selector, act: str):
        if act not in ACTS:
            raise ValueError(f"act must be one of {ACTS}, got {act!r}")
        self.selector, self.act = selector, act
        self.widget = widgets.HTML()
        self.widget.add_class("course-track-scene")
        self.widget.add_class(f"course-track-scene-{act}")
        self.track, self.text, self.last_traceback = None, None, None
        self.update()
        selector.observe(lambda _name: self.update())

    def update(self) -> None:
        from course.instruments.cards import banner_html, stakeholder_card

        name = self.selector.value
        try:
            scene = scene_text(name, self.act)
        except Exception as exc:  # noqa: BLE001 - a banner, never a traceback in the selector's callback
            self.last_traceback = traceback.format_exc()
            self.widget.value = banner_html("instrument_error", f"The {name} track's text could not be built "
                                            f"({type(exc).__name__}: {exc}).")
            return
        label = {"act1": "Act I", "act2": "Act II", "part3": "Part 3"}[self.act]
        card = stakeholder_card(scene.sender, scene.message, act=f"{name} track · {label}").value
        graded = ("" if name == "Cloud" else
                  "<div class='course-banner course-tone-warn' style='font-size:0.85rem'>The graded numbers of this lab are defined for the "
                  "Cloud track; switch back to Cloud before you answer them.</div>")
        self.widget.value = (card + f"<div class='course-ui' style='font-size:0.9rem;margin:2px 0 6px 4px'>"
                             f"<b>On this track:</b> {html.escape(scene.look)}</div>" + graded)
        self.track, self.text = name, scene

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

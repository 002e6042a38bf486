"""Lab 05 tracks: the selector rewrites each act's message and moves the instruments, never a traceback.

Numbers quoted per track are checked against hand computations from the
catalog's inputs (alpha-beta ring: 2(N-1)a + 2(N-1)/N M/B; Hockney point to
point: a + M/B; 16 bytes per parameter of weights, gradients and Adam state).
The lab is built the way the notebook builds it (same constructors, same links).
"""

from __future__ import annotations

import pytest

from course.core import catalog
from course.instruments import (AllreduceComparator, BubbleChart, Configurator, ScalingExplorer, SyncAudit,
                                TrackSelector)
from course.labs.tracks import ACTS, SCENES, TrackScene, scene_text, track_numbers

TRACKS = ("Cloud", "Edge", "Mobile", "Tiny")


def ring_by_hand(message, n, bandwidth, latency):
    return 2 * (n - 1) * latency + 2 * (n - 1) / n * message / bandwidth


@pytest.mark.parametrize("track, params, devices, bandwidth, latency", [
    ("Edge", 25.6e6, 10_000, 50e6 / 8, 4e-3),      # ResNet-50 over 5G (50 Mbit/s uplink, 4 ms)
    ("Mobile", 3.4e6, 1_000, 50e6 / 8, 4e-3),      # MobileNetV2 over 5G
    ("Tiny", 38.6e3, 100, 2e6 / 8, 7.5e-3),        # DS-CNN-S over Bluetooth LE (2 Mbit/s, 7.5 ms)
])
def test_fleet_numbers_by_hand(track, params, devices, bandwidth, latency):
    numbers = track_numbers(track)
    message = 4 * params  # FP32 gradients
    assert numbers["devices"] == devices
    assert numbers["gradient_bytes"] == pytest.approx(message)
    assert numbers["ring_seconds"] == pytest.approx(ring_by_hand(message, devices, bandwidth, latency), rel=1e-9)
    assert numbers["ring_latency_seconds"] == pytest.approx(2 * (devices - 1) * latency, rel=1e-9)
    assert numbers["upload_seconds"] == pytest.approx(latency + message / bandwidth, rel=1e-9)
    assert numbers["state_bytes"] == pytest.approx(16 * params)
    assert numbers["staleness"] == devices - 1


def test_edge_wall_is_the_radio_latency():
    # 10,000 cars: 2 x 9,999 hops of 4 ms = 80 s of the ~113 s ring, more than the bytes take
    edge = track_numbers("Edge")
    assert edge["ring_latency_seconds"] == pytest.approx(79.992)
    assert edge["ring_latency_seconds"] > edge["ring_seconds"] / 2


def test_cloud_quotes_the_graded_scenario():
    cloud = track_numbers("Cloud")
    # Act I: 7B bf16 gradients (14 GB) on 512 GPUs over NDR (50 GB/s, 5 us)
    assert cloud["ring_seconds"] == pytest.approx(ring_by_hand(14e9, 512, 50e9, 5e-6), rel=1e-9)
    # Act II: GPT-3 175B needs 16 B x 175e9 = 2.8 TB, 33 H100s' worth of memory (81,559 MiB = 85.5 GB each)
    assert cloud["state_bytes"] == pytest.approx(2.8e12, rel=0.01)
    message = scene_text("Cloud", "act2").message
    assert "33 times the 85.5 GB" in message and "80 GB" not in message
    # Part 3: the lead's "wasting about $1M a month" is 1,024 GPUs idle 1 - 1.0075/1.15 = 12.4 % of the bill
    idle = 1 - (1 + 0.15 * 0.05) / (1 + 0.15 * (1 - 0.95 ** 1024))
    price = catalog.accelerator("H100").price_per_hour
    assert cloud["idle_dollars"] == pytest.approx(1024 * price * 730.5 * idle, rel=1e-9)
    assert "$1.1M" in scene_text("Cloud", "part3").message
    assert "1,024 GPUs" in scene_text("Cloud", "part3").message


@pytest.mark.parametrize("track", TRACKS)
@pytest.mark.parametrize("act", ACTS)
def test_every_scene_is_filled_in(track, act):
    scene = scene_text(track, act)
    assert scene.sender == SCENES[track][act].sender
    for text in (scene.message, scene.look):
        assert text and "{" not in text and "}" not in text
    if track != "Cloud":
        assert catalog.TRACKS[track].link.name in scene.message + scene.look or act != "act1"


def test_scene_rejects_unknown_act_and_track():
    with pytest.raises(ValueError, match="act"):
        scene_text("Cloud", "act3")
    with pytest.raises(ValueError, match="track"):
        track_numbers("Orbital")


@pytest.fixture(scope="module")
def lab():
    """Lab 05's instruments as the notebook builds and links them."""
    selector = TrackSelector()
    scenes = {act: TrackScene(selector, act) for act in ACTS}
    explorer = ScalingExplorer(params_b=7, gpus=512)
    fleet = AllreduceComparator(gpus=512, message_gb=14)
    configurator = Configurator(model="gpt3-175b", cluster="h100-1024", tp=8, pp=4)
    bubbles = BubbleChart().follow_controls(configurator)
    audit = SyncAudit()
    selector.link_to(explorer, fleet, configurator, audit)
    instruments = {"explorer": explorer, "fleet": fleet, "configurator": configurator, "bubbles": bubbles,
                   "audit": audit}
    yield selector, scenes, instruments
    selector.value = "Cloud"


def set_controls(inst, **values):
    with inst.batch():
        for name, value in values.items():
            inst.controls[name].value = value


#: (instrument, control values, failure code on the Cloud track), one row per failure state of the lab
FAILURE_STATES = [
    ("explorer", {"gpus": 512, "fabric": "NVLink only"}, "forced_onto_infiniband"),
    ("explorer", {"params_b": 175, "zero_stage": 0, "gpus": 8}, "out_of_memory"),
    ("configurator", {"tp": 16}, "tp_crosses_node"),
    ("configurator", {"zero_stage": 0, "recompute": "none"}, "out_of_memory"),
    ("configurator", {"pp": 3}, "gpus_mismatch"),
    ("configurator", {"pp": 4, "microbatches": 2}, "too_few_microbatches"),
    ("bubbles", {"pp": 8, "microbatches": 32}, "bubble_over_ceiling"),
    ("audit", {"mode": "async", "staleness_pct": 50.0}, "async_costs_more"),
]
CLUSTER_ONLY = ("explorer", "configurator", "audit")


def no_traceback(instruments, scenes):
    for name, inst in instruments.items():
        assert "instrument_error" not in inst.failures, (name, inst.last_traceback)
        assert inst.last_traceback is None, name
    for scene in scenes.values():
        assert scene.last_traceback is None
        assert "course-failure" not in scene.widget.value


@pytest.mark.parametrize("track", ("Edge", "Mobile", "Tiny", "Cloud"))
def test_every_track_by_every_failure_state(lab, track):
    selector, scenes, instruments = lab
    selector.value = track
    no_traceback(instruments, scenes)
    for name, values, code in FAILURE_STATES:
        inst = instruments[name]
        defaults = {key: inst.controls[key].value for key in values}
        set_controls(inst, **values)
        no_traceback(instruments, scenes)
        if track == "Cloud" or name not in CLUSTER_ONLY:
            assert code in inst.failures, (track, name, values, inst.failures)
        else:
            assert inst.failures == ["track_not_modelled"], (track, name)
        set_controls(inst, **defaults)
    # switching tracks with a failure state showing: still no traceback
    set_controls(instruments["configurator"], tp=16)
    for other in TRACKS:
        selector.value = other
        no_traceback(instruments, scenes)
    selector.value = track
    set_controls(instruments["configurator"], tp=8)


@pytest.mark.parametrize("track", ("Edge", "Mobile", "Tiny"))
def test_other_tracks_show_their_fleet_not_only_a_banner(lab, track):
    selector, scenes, instruments = lab
    selector.value = track
    entry = catalog.TRACKS[track]
    fleet = instruments["fleet"]
    assert fleet.controls["gpus"].value == entry.devices and fleet.controls["link"].value.name == entry.link.name
    assert fleet.result["times"]["ring"] == pytest.approx(track_numbers(track)["ring_seconds"], rel=0.02)
    for act, scene in scenes.items():
        assert scene.track == track and f"{track} track" in scene.widget.value
        assert "defined for the Cloud track" in scene.widget.value
        assert scene.text == scene_text(track, act)
    assert entry.persona.split()[0].lower() in scenes["act1"].widget.value.lower()


def test_cloud_is_the_default_and_restores_the_graded_setup(lab):
    selector, scenes, instruments = lab
    for track in TRACKS[1:] + ("Cloud",):
        selector.value = track
    assert selector.value == "Cloud"
    assert all("defined for the Cloud track" not in s.widget.value for s in scenes.values())
    fleet = instruments["fleet"]
    assert (fleet.controls["gpus"].value, fleet.controls["link"].value.name) == (512, "InfiniBand NDR")
    assert fleet.result["times"]["ring"] == pytest.approx(ring_by_hand(14e9, 512, 50e9, 5e-6), rel=0.01)
    conf = instruments["configurator"]
    assert (conf.result["tp"], conf.result["pp"], conf.result["dp"]) == (8, 4, 32)
    assert instruments["bubbles"].result["pp"] == 4


def test_source_notebook_is_the_generators_output_and_wires_every_instrument_to_the_track(tmp_path):
    import nbformat

    from course.labs import lab05
    from course.assess.notebook import ROOT, write_sources

    write_sources([lab05.ACTIVITY], tmp_path)
    name = lab05.NAME
    fresh = nbformat.read(str(tmp_path / "source" / name / f"{name}.ipynb"), 4)
    committed = nbformat.read(str(ROOT / "source" / name / f"{name}.ipynb"), 4)
    assert [(c.cell_type, c.source, c.metadata) for c in committed.cells] == \
        [(c.cell_type, c.source, c.metadata) for c in fresh.cells], "run: course build-sources"
    code = "\n".join(c.source for c in committed.cells if c.cell_type == "code")
    for act in ACTS:
        assert f"TrackScene(track, '{act}')" in code
    for instrument in ("explorer", "fleet", "configurator", "audit"):
        assert f"track.link_to({instrument})" in code
    assert "BubbleChart().follow_controls(configurator)" in code


def test_act1_note_on_the_lead_numbers_matches_the_explorer():
    """The note after the Act I reveal: a sharp drop leaving the node, then a plateau near a third
    on NDR (ring bytes per GPU 2(N-1)/N M barely grow), and about the lead's 19 % on Ethernet 100G."""
    explorer = ScalingExplorer(params_b=7, gpus=8)
    mfu = {}
    for fabric in ("InfiniBand NDR", "Ethernet 100G"):
        for gpus in (8, 64, 512):
            set_controls(explorer, fabric=fabric, gpus=gpus)
            mfu[fabric, gpus] = explorer.result["mfu"]
    assert mfu["InfiniBand NDR", 8] - mfu["InfiniBand NDR", 64] > 0.05                 # the node wall
    assert abs(mfu["InfiniBand NDR", 64] - mfu["InfiniBand NDR", 512]) < 0.03           # the plateau
    assert 0.28 < mfu["InfiniBand NDR", 512] < 0.38                                     # "about a third"
    assert 0.15 < mfu["Ethernet 100G", 512] < 0.23                                      # near the lead's 19 %

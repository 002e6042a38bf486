"""The Cloud/Edge/Mobile/Tiny selector drives the instruments (issue 3, track selector).

Expected values come from ``course.core.catalog.TRACKS`` and from fresh
instruments built with their defaults, never from the instrument under test.
"""

import itertools

import pytest

from course.core import catalog
from course.instruments.allreduce import AllreduceComparator, AlgorithmDashboard
from course.instruments.configurator import Configurator
from course.instruments.context import TRACK_LINKS, TrackSelector
from course.instruments.efficiency import EfficiencyPlot
from course.instruments.parallel_map import ParallelMap
from course.instruments.scaling import ScalingExplorer
from course.instruments.sync_audit import SyncAudit

TRACKS = ("Edge", "Mobile", "Tiny")
LINK_FOLLOWERS = (AllreduceComparator, AlgorithmDashboard)
CLUSTER_ONLY = (ScalingExplorer, Configurator, ParallelMap, EfficiencyPlot, SyncAudit)


@pytest.fixture(scope="module")
def linked():
    selector = TrackSelector()
    instruments = {cls.__name__: cls() for cls in LINK_FOLLOWERS + CLUSTER_ONLY}
    defaults = {name: (inst.values(), dict(inst.result)) for name, inst in instruments.items()}
    assert selector.link_to(*instruments.values()) is selector
    yield selector, instruments, defaults
    selector.value = "Cloud"


@pytest.mark.parametrize("track", TRACKS)
def test_link_followers_take_the_tracks_link(linked, track):
    selector, instruments, _ = linked
    selector.value = track
    link = catalog.TRACKS[track].link
    for cls in LINK_FOLLOWERS:
        inst = instruments[cls.__name__]
        assert inst.controls["link"].value.name == link.name
        offered = [option.name for _label, option in inst.controls["link"].options]
        assert offered[0] == link.name and "InfiniBand NDR" not in offered
        assert set(offered) == {link.name, *TRACK_LINKS[track]}
        assert inst.failures == [] or "track_not_modelled" not in inst.failures
        if "bandwidth" in inst.result:
            assert inst.result["bandwidth"] == link.bandwidth
            assert inst.result["latency"] == link.latency
        # fleet size and the model's FP32 gradients (4 bytes per parameter), by hand
        assert inst.controls["gpus"].value == catalog.TRACKS[track].devices
        assert inst.controls["gpus"].description == "Devices N"
        assert inst.controls["message_gb"].value == pytest.approx(catalog.TRACKS[track].model.params * 4 / 1e9,
                                                                  rel=0.02)  # log slider snaps to its step


@pytest.mark.parametrize("track", TRACKS)
def test_cluster_instruments_show_a_banner_not_numbers(linked, track):
    selector, instruments, _ = linked
    selector.value = track
    entry = catalog.TRACKS[track]
    for cls in CLUSTER_ONLY:
        inst = instruments[cls.__name__]
        assert inst.failures == ["track_not_modelled"], cls.__name__
        assert inst.result == {}
        message = inst.failure_messages["track_not_modelled"]
        assert entry.accelerator.name in message and entry.link.name in message
        assert "track not modelled" in inst.banner.value


def test_cloud_restores_every_default(linked):
    selector, instruments, defaults = linked
    for track in TRACKS + ("Cloud",):
        selector.value = track
    for name, inst in instruments.items():
        values, result = defaults[name]
        assert inst.values() == values, name
        assert inst.result == result, name
        assert "Devices" not in str(inst.controls.get("gpus", inst.banner).description)
        if "link" in inst.controls:
            assert [label for label, _ in inst.controls["link"].options] == [
                label for label, _ in type(inst)().controls["link"].options]
        assert "track_not_modelled" not in inst.failures


def test_comparator_numbers_follow_the_link_over_a_grid():
    selector = TrackSelector()
    comparator = AllreduceComparator()
    selector.link_to(comparator)
    for track, gpus in itertools.product(("Cloud",) + TRACKS, (2, 16, 1000)):
        selector.value = track
        comparator.controls["gpus"].value = gpus
        fresh = AllreduceComparator()
        fresh.controls["gpus"].max = comparator.controls["gpus"].max
        with fresh.batch():
            fresh.controls["gpus"].value = gpus
            fresh.controls["message_gb"].value = comparator.controls["message_gb"].value
            fresh.controls["link"].value = comparator.controls["link"].value
        ours, theirs = dict(comparator.result), dict(fresh.result)
        if track != "Cloud":  # only the Cloud track has DGX nodes for the two-level bar
            assert ours.pop("hierarchical_seconds") is None
            theirs.pop("hierarchical_seconds")
        assert ours == theirs
        assert "instrument_error" not in comparator.failures


def test_cluster_instrument_survives_control_changes_on_a_track():
    selector = TrackSelector("Tiny")
    configurator = Configurator()
    selector.link_to(configurator)
    for tp, pp in itertools.product((1, 8), (1, 4)):
        with configurator.batch():
            configurator.controls["tp"].value = tp
            configurator.controls["pp"].value = pp
        assert configurator.failures == ["track_not_modelled"]
    selector.value = "Cloud"
    assert configurator.values() == Configurator().values()


@pytest.mark.parametrize("track", TRACKS)
def test_comparator_ring_time_matches_a_hand_computation(track):
    """Ring all-reduce: 2 (N-1)/N * M / B + 2 (N-1) * latency (Patarasuk & Yuan 2009)."""
    selector = TrackSelector()
    comparator = AllreduceComparator()
    selector.link_to(comparator)
    selector.value = track
    entry = catalog.TRACKS[track]
    n, message = entry.devices, comparator.result["message_bytes"]
    assert message == pytest.approx(entry.model.params * 4, rel=0.02)
    expected = 2 * (n - 1) / n * message / entry.link.bandwidth + 2 * (n - 1) * entry.link.latency
    assert comparator.result["times"]["ring"] == pytest.approx(expected, rel=1e-9)
    # the DGX two-level bar would be a wrong number for a fleet of single devices
    assert comparator.result["hierarchical_seconds"] is None



def test_a_failing_switch_becomes_a_banner_not_a_traceback():
    class Broken(AllreduceComparator):
        def apply_track(self, track):
            if track is not None and track.name == "Tiny":
                raise RuntimeError("no such hardware")
            super().apply_track(track)

    selector = TrackSelector()
    broken = Broken()
    selector.link_to(broken)
    selector.value = "Tiny"  # must not raise
    assert broken.failures == ["instrument_error"] and "Tiny track" in broken.banner.value
    selector.value = "Cloud"
    assert broken.failures == [] and broken.values() == Broken().values()

"""All-reduce comparator and algorithm-selection dashboard driven without a browser."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course import core
from course.core import catalog
from course.instruments.allreduce import WORKLOADS, AlgorithmDashboard, AllreduceComparator
from course.instruments.base import fmt_time

from .helpers import assert_alive, changed, mark_arrays, same_figures


GB = 1e9
NDR = catalog.link("InfiniBand NDR")


@pytest.fixture(scope="module")
def comparator():
    return AllreduceComparator()


@pytest.fixture(scope="module")
def dashboard():
    return AlgorithmDashboard()


def set_controls(inst, **values):
    with inst.batch():
        for name, value in values.items():
            inst.controls[name].value = value


def link_named(inst, name):
    return next(link for _label, link in inst.controls["link"].options if link.name == name)


# -- comparator ---------------------------------------------------------------------
def test_comparator_times_equal_the_core(comparator):
    set_controls(comparator, gpus=64, message_gb=14, link=link_named(comparator, "InfiniBand HDR"))
    hdr = catalog.link("InfiniBand HDR")
    for algorithm, seconds in comparator.result["times"].items():
        expected = core.allreduce_time(14 * GB, 64, hdr.bandwidth, hdr.latency, algorithm=algorithm)
        assert seconds == pytest.approx(expected, rel=1e-12)
    assert set(comparator.result["times"]) >= {"naive", "ring", "tree"}
    # the cards show the core's numbers, not a recomputation
    for card in ("naive", "ring", "tree"):
        expected = core.allreduce_time(14 * GB, 64, hdr.bandwidth, hdr.latency, algorithm=card)
        assert f">{fmt_time(expected)}<" in comparator._cards[card].value


def test_every_bar_stands_above_the_base_hierarchical_included(comparator):
    # Lab 05 Act I: 14.1 GB on 512 GPUs over NDR; hierarchical (125 ms) beats ring (569 ms), and a
    # log-scale bar whose height is under the base is drawn downwards, below the axis
    set_controls(comparator, gpus=512, message_gb=14.1, link=link_named(comparator, "InfiniBand NDR"))
    heights = np.asarray(comparator.bars.y, dtype=float)
    assert heights[-1] < min(comparator.result["times"].values())  # the hierarchical bar is the shortest
    assert np.all(heights > comparator.bars.base)


def test_ring_time_matches_the_alpha_beta_formula_by_hand(comparator):
    # Thakur, Rabenseifner & Gropp 2005: ring = 2(p-1)a + 2(p-1)/p * n * b
    set_controls(comparator, gpus=128, message_gb=140, link=link_named(comparator, "InfiniBand NDR"))
    by_hand = 2 * 127 * NDR.latency + 2 * 127 / 128 * 140 * GB / NDR.bandwidth
    assert comparator.result["times"]["ring"] == pytest.approx(by_hand, rel=1e-9)


def test_naive_over_ring_is_about_n_not_14(comparator):
    # One NIC carries (N-1)M in and (N-1)M out; ring moves 2(N-1)/N M per rank: ratio ~ N.
    set_controls(comparator, gpus=128, message_gb=140, link=link_named(comparator, "InfiniBand NDR"))
    assert comparator.result["naive_over_ring"] == pytest.approx(128, rel=0.02)
    assert "128" in comparator._cards["ratio"].value or "127" in comparator._cards["ratio"].value


def test_ring_efficiency_full_for_large_and_poor_for_tiny_messages(comparator):
    set_controls(comparator, gpus=128, message_gb=280)
    assert comparator.result["ring_efficiency_percent"] == pytest.approx(100, abs=0.5)
    set_controls(comparator, gpus=1024, message_gb=1e-6)  # 1 kB: 2(N-1) latency terms dominate
    assert comparator.result["ring_efficiency_percent"] < 1


def test_comparator_redraws_marks_in_the_same_figure(comparator):
    figs, marks = list(comparator.figures), [m for f in comparator.figures for m in f.marks]
    before = mark_arrays(comparator)
    comparator.controls["gpus"].value = 7 if comparator.controls["gpus"].value != 7 else 9
    assert same_figures(comparator, figs, marks)
    assert changed(before, mark_arrays(comparator))
    np.testing.assert_allclose(comparator.bars.y[:-1], list(comparator.result["times"].values()))


@pytest.mark.parametrize("gpus", [2, 3, 8, 127, 1024, 4096])
@pytest.mark.parametrize("message_gb", [1e-6, 1e-3, 1.0, 1000.0])
def test_comparator_grid_never_fails(comparator, gpus, message_gb):
    for _label, link in comparator.controls["link"].options:
        set_controls(comparator, gpus=gpus, message_gb=message_gb, link=link)
        assert_alive(comparator)
        assert comparator.failures == []
        assert all(t >= 0 and math.isfinite(t) for t in comparator.result["times"].values())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gpus=st.integers(2, 4096), exponent=st.floats(-6, 3), link_index=st.integers(0, 50))
def test_comparator_fuzz(comparator, gpus, exponent, link_index):
    options = comparator.controls["link"].options
    link = options[link_index % len(options)][1]
    set_controls(comparator, gpus=gpus, message_gb=10**exponent, link=link)
    assert_alive(comparator)
    ring = core.allreduce_time(comparator.result["message_bytes"], gpus, link.bandwidth, link.latency)
    assert comparator.result["times"]["ring"] == pytest.approx(ring, rel=1e-12)


def test_core_errors_become_a_banner(comparator, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("n must be >= 1")

    monkeypatch.setattr(core, "allreduce_time", broken)
    comparator.controls["gpus"].value = 33 if comparator.controls["gpus"].value != 33 else 34
    assert comparator.failures == ["invalid_input"] and "n must be &gt;= 1" in comparator.banner.value
    monkeypatch.undo()
    comparator.update()
    assert comparator.failures == []


# -- dashboard ----------------------------------------------------------------------
def test_presets_set_the_message_with_one_update(dashboard):
    n = dashboard.update_count
    dashboard.controls["workload"].value = "7B gradients (14 GB)"
    assert dashboard.controls["message_gb"].value == pytest.approx(14)
    assert dashboard.result["message_bytes"] == pytest.approx(14 * GB)
    assert dashboard.update_count == n + 1
    dashboard.controls["message_gb"].value = 3.0
    assert dashboard.controls["workload"].value == "custom"
    assert set(WORKLOADS.values()) == {175e9 * 2, 7e9 * 2, 0.5e-3 * GB}  # bf16: 2 bytes per gradient


def test_best_algorithm_is_the_core_argmin(dashboard):
    set_controls(dashboard, message_gb=0.01, gpus=256, link=link_named(dashboard, "InfiniBand NDR"))
    times = {a: core.allreduce_time(0.01 * GB, 256, NDR.bandwidth, NDR.latency, algorithm=a)
             for a in dashboard.result["times"]}
    assert dashboard.result["best"] == min(times, key=times.get)
    assert dashboard.result["best_seconds"] == pytest.approx(min(times.values()), rel=1e-12)


def test_small_messages_pick_a_latency_optimal_algorithm_not_ring(dashboard):
    # 1 kB on 128 ranks: ring pays 2(N-1) = 254 latencies, recursive doubling ceil(lg N) = 7.
    set_controls(dashboard, message_gb=1e-6, gpus=128, link=link_named(dashboard, "InfiniBand NDR"))
    assert dashboard.result["best"] != "ring"
    rd_by_hand = 7 * (NDR.latency + 1e3 / NDR.bandwidth)
    assert dashboard.result["times"]["recursive_doubling"] == pytest.approx(rd_by_hand, rel=1e-9)
    assert dashboard.result["best_seconds"] <= rd_by_hand * (1 + 1e-12)


def test_large_messages_ring_is_best_or_tied(dashboard):
    # 280 GB is bandwidth-bound: ring is within 1 % of the fastest (Rabenseifner has the same bandwidth term).
    set_controls(dashboard, message_gb=280, gpus=128)
    assert dashboard.result["best"] == "ring" or "ring" in dashboard.result["ties"]


def test_crossovers_are_where_the_core_curves_meet(dashboard):
    set_controls(dashboard, gpus=512, link=link_named(dashboard, "InfiniBand NDR"), message_gb=1.0)
    crossings = dashboard.result["crossovers"]
    assert crossings, "small and large messages have different winners"
    for c in crossings:
        t_from = core.allreduce_time(c["message_bytes"], 512, NDR.bandwidth, NDR.latency, algorithm=c["from"])
        t_to = core.allreduce_time(c["message_bytes"], 512, NDR.bandwidth, NDR.latency, algorithm=c["to"])
        assert t_from == pytest.approx(t_to, rel=1e-9)  # the analytic crossover of the core
    np.testing.assert_allclose(dashboard.crossings.x, [c["message_bytes"] for c in crossings])


def test_comm_bound_failure_above_half_of_the_step(dashboard):
    set_controls(dashboard, message_gb=280, gpus=128, compute_s=0.01)
    best = dashboard.result["best_seconds"]
    assert best / (best + 0.01) > 0.5 and dashboard.failures == ["comm_bound"]
    assert "course-failure-comm_bound" in dashboard.banner.value
    set_controls(dashboard, compute_s=100.0)
    assert dashboard.result["comm_share"] == pytest.approx(best / (best + 100.0))
    assert dashboard.failures == []
    assert "comm_bound" in dashboard.failures_seen
    np.testing.assert_allclose(dashboard.threshold.y, [100.0, 100.0])


def test_dashboard_redraws_marks_in_the_same_figure(dashboard):
    figs, marks = list(dashboard.figures), [m for f in dashboard.figures for m in f.marks]
    before = mark_arrays(dashboard)
    dashboard.controls["gpus"].value = 17 if dashboard.controls["gpus"].value != 17 else 18
    assert same_figures(dashboard, figs, marks) and changed(before, mark_arrays(dashboard))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gpus=st.integers(2, 4096), exponent=st.floats(-6, 3), compute=st.floats(-3, 2),
       link_index=st.integers(0, 50), preset=st.sampled_from(list(WORKLOADS) + ["custom"]))
def test_dashboard_fuzz(dashboard, gpus, exponent, compute, link_index, preset):
    options = dashboard.controls["link"].options
    dashboard.controls["workload"].value = preset
    set_controls(dashboard, gpus=gpus, message_gb=10**exponent, compute_s=10**compute,
                 link=options[link_index % len(options)][1])
    assert_alive(dashboard)
    share = dashboard.result["comm_share"]
    assert ("comm_bound" in dashboard.failures) == (share > 0.5)
    assert 0 <= share < 1


def test_track_selector_switches_the_link():
    from course.instruments import TrackSelector

    selector = TrackSelector()
    assert list(selector.buttons.options) == ["Cloud", "Edge", "Mobile", "Tiny"]
    comparator = AllreduceComparator().follow(selector)
    assert comparator.controls["link"].value.name == catalog.TRACKS["Cloud"].link.name
    for name in ("Edge", "Tiny", "Cloud"):
        selector.value = name
        link = catalog.TRACKS[name].link
        assert selector.track is catalog.TRACKS[name]
        assert comparator.result["bandwidth"] == link.bandwidth and comparator.result["latency"] == link.latency
        assert link.name in selector.note.value
    with pytest.raises(ValueError, match="value must be one of"):
        TrackSelector("Moon")


def test_hierarchical_bar_on_whole_nodes_only(comparator):
    node = catalog.node("DGX H100")
    set_controls(comparator, gpus=128, message_gb=140, link=link_named(comparator, "InfiniBand NDR"))
    expected = core.hierarchical_allreduce_time(140 * GB, 8, 16, node.intra_link.bandwidth, NDR.bandwidth,
                                                node.intra_link.latency, NDR.latency)
    assert comparator.result["hierarchical_seconds"] == pytest.approx(expected, rel=1e-12)
    assert comparator.bars.y[-1] == pytest.approx(expected)
    # by hand: NVLink phases 2*7/8*M/450e9, inter-node ring on M/8: 2*15/16*(M/8)/50e9 (plus latencies)
    by_hand = (2 * (7 * node.intra_link.latency + 7 / 8 * 140e9 / node.intra_link.bandwidth)
               + 2 * 15 * NDR.latency + 2 * 15 / 16 * 140e9 / 8 / NDR.bandwidth)
    assert expected == pytest.approx(by_hand, rel=1e-9)
    assert expected < comparator.result["times"]["ring"]  # most bytes stay on NVLink
    comparator.controls["gpus"].value = 130
    assert comparator.result["hierarchical_seconds"] is None and "n/a" in comparator._cards["hierarchical"].value
    assert comparator.bars.y[-1] == comparator.bars.base

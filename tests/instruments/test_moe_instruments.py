"""Lab 07's instruments (all-to-all explorer, expert-load view) over every control: alive, drawn once, and
showing the core's numbers.

Expected values are direct core calls with the same inputs; the figures must be the objects built once.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course import core
from course.core import catalog
from course.instruments import AllToAllExplorer, ExpertLoadView
from course.instruments import alltoall, expert_load
from course.instruments.charts import legend_entries

from .helpers import assert_alive, changed, mark_arrays, same_figures


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=st.sampled_from(alltoall.MOE_MODELS), ep=st.sampled_from(alltoall.EP_CHOICES),
       per_node=st.sampled_from((8, 4, 2, 1)), network=st.sampled_from(alltoall.NETWORK_CHOICES),
       nvlink=st.sampled_from(alltoall.NVLINK_CHOICES), tokens=st.sampled_from((512, 4096, 65536)),
       top_k=st.integers(1, 16), routing=st.sampled_from([r for _, r in alltoall.ROUTING_CHOICES]),
       limit=st.integers(1, 8), pp=st.sampled_from((1, 4, 16)), overlap=st.booleans())
def test_the_explorer_stays_alive_and_shows_the_core(model, ep, per_node, network, nvlink, tokens, top_k, routing,
                                                     limit, pp, overlap):
    e = AllToAllExplorer()
    with e.batch():
        for name, value in (("model", model), ("ep", ep), ("ranks_per_node", per_node), ("network", network),
                            ("nvlink", nvlink), ("tokens", tokens), ("top_k", top_k), ("routing", routing),
                            ("node_limit", limit), ("pp", pp), ("overlap", overlap)):
            e.controls[name].value = value
    assert_alive(e)
    if "invalid_input" in e.failures:  # top-k above the model's experts: the core says so, nothing is drawn
        assert top_k > catalog.model(model).experts
        return
    m, nv, net = catalog.model(model), catalog.link(nvlink), catalog.link(network)
    r = min(per_node, ep)
    if routing == "node_limited":
        nodes = max(ep // r, 1)
        kw = dict(groups=nodes, group_topk=min(limit, nodes), per_node=True)
    else:
        kw = dict(per_node=routing == "per_node")
    whole = core.moe_all_to_all_time_per_layer(tokens, m.hidden, top_k, ep, r, nv.bandwidth, net.bandwidth,
                                               nv.latency, net.latency, **kw)
    assert np.isclose(e.result["all_to_all_seconds"], whole, rtol=1e-12)
    assert ("all_to_all_bound" in e.failures) == (e.result["exposed_seconds"] > e.result["compute_seconds"])
    assert ("experts_do_not_fit" in e.failures) == (e.result["expert_state_bytes"] > e.result["memory_capacity"])


def test_the_explorer_redraws_in_place():
    e = AllToAllExplorer()
    figures, marks = list(e.figures), [m for f in e.figures for m in f.marks]
    before = mark_arrays(e)
    e.controls["tokens"].value = 16384
    assert same_figures(e, figures, marks) and changed(before, mark_arrays(e))


@settings(max_examples=40, deadline=None)
@given(experts=st.sampled_from(expert_load.EXPERT_CHOICES), ep=st.sampled_from(expert_load.EP_CHOICES),
       skew=st.floats(0, 1.5), dropless=st.booleans(), capacity=st.floats(0.5, 4.0), share=st.floats(0.05, 0.95))
def test_the_load_view_stays_alive_and_shows_the_core(experts, ep, skew, dropless, capacity, share):
    v = ExpertLoadView()
    with v.batch():
        for name, value in (("experts", experts), ("ep", ep), ("skew", skew), ("dropless", dropless),
                            ("capacity", capacity), ("expert_share", share)):
            v.controls[name].value = value
    assert_alive(v)
    if experts % ep:  # EP must divide the experts: the failure state the planner names, shown as a banner
        assert v.failures == ["experts_not_divisible"] and f"Pick an EP that divides {experts}" in \
            v.failure_messages["experts_not_divisible"]
        return
    s, c, x = v.controls["skew"].value, v.controls["capacity"].value, v.controls["expert_share"].value
    loads = core.skewed_expert_loads(experts, s)
    factor = core.straggler_factor(loads[0], experts, ep, None if dropless else c)
    assert np.isclose(v.result["straggler"], factor)
    assert np.isclose(v.result["straggler_share"], core.straggler_step_share(max(factor, 1.0), x))
    assert np.isclose(v.result["dropped"], 0.0 if dropless else core.dropped_token_share(loads, c))
    # the chart: one bar per expert at x = 1..E, as tall as the core's load, inside an x range of exactly E bars
    heights, lefts = np.asarray(v.loads.y)[1::5], np.asarray(v.loads.x)[0::5]
    top = expert_load.load_axis_top(float(loads[0]), None if dropless else c)
    assert v.loads.scales["y"].max == top  # every bar, the mean and the capacity line inside the axis
    assert np.allclose(heights, np.minimum(loads, top)) and np.allclose(lefts + 0.45, np.arange(1, experts + 1))
    # the dropped tokens: the part of each bar above C, drawn over it in another colour
    over = np.asarray(v.dropped_marks.y)
    if dropless or not np.any(loads > c):
        assert not v.dropped_marks.visible
    else:
        assert v.dropped_marks.visible and np.count_nonzero(np.isnan(over)) == np.count_nonzero(loads > c) - 1
        assert np.allclose(over[0::5], c) and np.allclose(over[1::5], np.minimum(loads[loads > c], top))
    assert v.loads.scales["x"].max == experts + 0.5 and v.loads.scales["x"].min == 0.5


def test_bar_outlines_are_one_closed_rectangle_per_bar_broken_by_nan():
    x, y = expert_load.bar_outlines([3.0, 1.0, 0.0], width=0.8)
    assert x.shape == y.shape == (15,)
    rows_x, rows_y = x.reshape(3, 5), y.reshape(3, 5)
    assert np.isnan(rows_x[:, 4]).all() and np.isnan(rows_y[:, 4]).all()
    assert np.allclose(rows_x[:, :4], [[0.6, 0.6, 1.4, 1.4], [1.6, 1.6, 2.4, 2.4], [2.6, 2.6, 3.4, 3.4]])
    assert np.allclose(rows_y[:, :4], [[0, 3, 3, 0], [0, 1, 1, 0], [0, 0, 0, 0]])
    with pytest.raises(ValueError, match="width"):
        expert_load.bar_outlines([1.0], width=0)


def test_the_load_view_draws_its_bars_as_one_path_with_a_box_in_the_legend():
    from course.instruments.charts import legend_entries

    v = ExpertLoadView(experts=8)
    figures, marks = list(v.figures), [m for f in v.figures for m in f.marks]
    v.controls["experts"].value = 256  # 256 bars: still the same three marks, the bars one filled path
    assert same_figures(v, figures, marks) and len(marks) == 4 and v.loads.fill == "bottom"
    assert np.count_nonzero(np.isnan(np.asarray(v.loads.y))) == 255  # between the bars; none after the last
    assert not np.isnan(np.asarray(v.loads.x)[-1])  # bqplot puts the mark's label at its last point
    assert ("tokens per expert / mean", v.loads.colors[0], "box") in legend_entries(v.figures[0]._course_legend_marks)
    # the mean and capacity lines run across the whole plot whatever E is: their x scale spans exactly their ends
    for line in (v.mean_line, v.capacity_line):
        assert (line.scales["x"].min, line.scales["x"].max) == (0.0, 1.0) and list(line.x) == [0.0, 1.0]
        assert line.scales["y"] is v.loads.scales["y"]


def test_mean_and_capacity_lines_stay_apart_at_high_skew():
    """Issue 48: at skew 1.5 on 256 experts the axis ran to 27 and the mean (1) and C (1.25) lines merged."""
    view = ExpertLoadView()
    with view.batch():
        view.controls["experts"].value = 256
        view.controls["ep"].value = 8
        view.controls["skew"].value = 1.5
        view.controls["dropless"].value = False
        view.controls["capacity"].value = 1.25
    top = view.loads.scales["y"].max
    assert view.result["hottest"] > 20 and top <= 4.2 * 1.25
    assert (1.25 - 1.0) / top > 0.04  # more than 10 px apart on a 250 px plot
    assert "above the axis" in next(iter(view.figure_texts.values())).value  # the cut bars are said to be cut


def test_the_load_view_names_one_expert_per_rank_in_the_singular_and_shows_its_whole_labels():
    view = ExpertLoadView()
    with view.batch():
        view.controls["experts"].value = 64
        view.controls["ep"].value = 64
    assert "1 expert per rank" in view.cards.value and "1 experts" not in view.cards.value
    assert view.controls["expert_share"].style.description_width == "initial"


def test_the_explorer_marks_your_ep_at_the_time_its_card_states():
    explorer = AllToAllExplorer()
    explorer.controls["ep"].value = 16
    explorer.controls["overlap"].value = True
    r = explorer.result
    assert r["exposed_seconds"] < r["all_to_all_seconds"]
    assert list(explorer.mine.y) == [pytest.approx(r["exposed_seconds"] * 1e3)]
    assert "exposed" in explorer.mine.labels[0]


def test_expert_load_legend_names_only_the_lines_drawn():
    view = ExpertLoadView()
    labels = [label for label, _, _ in legend_entries(view.figures[0].marks)]
    assert not any("capacity" in label for label in labels)  # dropless: no capacity line is drawn
    view.controls["dropless"].value = False
    labels = [label for label, _, _ in legend_entries(view.figures[0].marks)]
    assert "capacity C = 1.25" in labels


def test_expert_load_hides_the_last_case_when_ep_does_not_divide_the_experts():
    view = ExpertLoadView()
    view.controls["experts"].value = 8
    view.controls["ep"].value = 16
    assert view.failures == ["experts_not_divisible"] and view.result == {}
    # the chart and cards would still show E = 64's loads: hidden, and the text alternative says why
    assert all(box.layout.display == "none" for box in view._readouts)
    assert "No data" in next(iter(view.figure_texts.values())).value
    view.controls["ep"].value = 8
    assert view.failures == [] and all(box.layout.display is None for box in view._readouts)


def test_the_explorer_states_the_core_s_compute_efficiency():
    # the card and the math peek say what the computation used: the core's calibrated efficiency
    explorer = AllToAllExplorer()
    assert f"{100 * core.DEFAULT_COMPUTE_EFFICIENCY:.0f} % of peak" in explorer.cards.value
    assert f"peak &middot; {core.DEFAULT_COMPUTE_EFFICIENCY:g})" in explorer.math_peek.value

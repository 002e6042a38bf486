"""3D-parallelism map: rank layout by hand, links per group, banners = plan() violations."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course import core
from course.core import catalog
from course.instruments._layout import rank_layout

from .helpers import assert_alive, changed, mark_arrays, same_figures

# -- the layout (no core needed) -------------------------------------------------------
def test_tp_cp_pp_dp_rank_order_by_hand():
    lay = rank_layout(tp=2, pp=2, dp=2, gpus_per_node=4, nodes_per_rack=1)
    # rank = tp_rank + 2 * (stage + 2 * dp_rank)  (CP = 1; order TP, CP, PP, DP as Llama 3)
    assert lay.tp_rank.tolist() == [0, 1, 0, 1, 0, 1, 0, 1]
    assert lay.pp_stage.tolist() == [0, 0, 1, 1, 0, 0, 1, 1]
    assert lay.dp_rank.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert lay.node.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert lay.scope("tensor") == "inside a node"
    assert lay.scope("pipeline") == "inside a node"
    assert lay.scope("data") == "across racks"  # one node per rack here
    assert lay.scope("context") == "single GPU"


def test_cp_ranks_sit_between_tp_and_pp():
    # rank = tp_rank + 2 * (cp_rank + 2 * stage), 8 GPUs per node
    lay = rank_layout(tp=2, pp=2, dp=1, cp=2, gpus_per_node=8)
    assert lay.cp_rank.tolist() == [0, 0, 1, 1, 0, 0, 1, 1]
    assert lay.pp_stage.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert lay.spans["context"] == {"size": 2, "groups": 4, "cross_node": 0, "cross_rack": 0}
    # TP 8 x CP 16 (Llama 3's long-context stage) spans 16 nodes
    assert rank_layout(tp=8, pp=1, dp=1, cp=16).scope("context") == "across racks"


def test_gpt3_on_1024_h100s():
    lay = rank_layout(tp=8, pp=8, dp=16, gpus_per_node=8, nodes_per_rack=4)
    assert lay.gpus == 1024 and lay.nodes == 128
    assert lay.spans["tensor"] == {"size": 8, "groups": 128, "cross_node": 0, "cross_rack": 0}
    assert lay.spans["data"]["groups"] == 64 and lay.spans["data"]["cross_node"] == 64
    # pipeline neighbours are tp * cp = 8 ranks (one node) apart; a replica fills 8 nodes
    assert int(lay.pp_stage[7]) == 0 and int(lay.pp_stage[8]) == 1
    assert int(lay.dp_rank[63]) == 0 and int(lay.dp_rank[64]) == 1
    assert lay.scope("pipeline") == "across racks"


def test_tp_that_does_not_divide_the_node_straddles_nodes():
    lay = rank_layout(tp=3, pp=1, dp=8, gpus_per_node=8)
    assert 0 < lay.spans["tensor"]["cross_node"] < lay.spans["tensor"]["groups"]
    assert lay.scope("tensor") == "across nodes"
    assert rank_layout(tp=16, pp=1, dp=4).scope("tensor") == "across nodes"


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_layout_rejects_non_positive_degrees(bad):
    with pytest.raises(ValueError, match="tp"):
        rank_layout(tp=bad, pp=1, dp=1)


# -- the instrument ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def pmap():
    from course.instruments.parallel_map import ParallelMap

    return ParallelMap()


def set_controls(inst, **values):
    with inst.batch():
        for name, value in values.items():
            inst.controls[name].value = value


def _check(pmap):
    from course.instruments.parallel_map import PLAN_SETTINGS

    assert_alive(pmap)
    v = pmap.values()
    cluster = catalog.cluster(v["cluster"])
    dp = max(cluster.gpus // (v["tp"] * v["cp"] * v["pp"]), 1)
    try:
        p = core.plan(v["model"], v["cluster"], tp=v["tp"], cp=v["cp"], pp=v["pp"], dp=dp, **PLAN_SETTINGS)
    except ValueError as exc:  # the planner refuses the input outright (e.g. more stages than layers)
        assert pmap.failures == ["invalid_input"] and str(exc) in pmap.failure_messages["invalid_input"]
        return
    assert pmap.failures == [code for code, _ in p.violations]
    r = pmap.result
    assert r["dp"] == dp
    color = np.array(pmap.grid.color, dtype=float)
    assert color.shape == (cluster.node.gpus_per_node, r["nodes_shown"])
    assert np.nanmax(color) <= pmap.colors.max
    layers = catalog.model(v["model"]).layers
    if v["pp"] <= layers:
        assert r["layers_per_stage"] == core.layers_per_stage(layers, v["pp"]).tolist()
        assert sum(r["layers_per_stage"]) == layers


def test_links_follow_the_scope(pmap):
    set_controls(pmap, model="gpt3-175b", cluster="h100-1024", tp=8, cp=1, pp=8, nodes_per_rack=4)
    _check(pmap)
    groups = pmap.result["groups"]
    assert groups["tensor"]["link"] == "NVLink 4" and groups["tensor"]["bandwidth"] == 450e9
    assert groups["pipeline"]["link"] == groups["data"]["link"] == "InfiniBand NDR"
    assert pmap.result["layers_per_stage"] == [12] * 8
    pmap.controls["tp"].value = 16
    _check(pmap)
    assert pmap.result["groups"]["tensor"]["link"] == "InfiniBand NDR"
    assert "tp_crosses_node" in pmap.failures
    set_controls(pmap, cluster="research-256", tp=8, pp=4)
    assert pmap.result["groups"]["data"]["link"] == "Ethernet 100G"


def test_colour_by_switches_the_grid_values(pmap):
    set_controls(pmap, model="gpt3-175b", cluster="h100-1024", tp=8, cp=1, pp=8, color_by="pipeline stage")
    figs, marks = list(pmap.figures), [m for f in pmap.figures for m in f.marks]
    before = mark_arrays(pmap)
    stages = np.array(pmap.grid.color, dtype=float)
    assert stages[0, 0] == 0 and stages[0, 1] == 1 and stages[0, 8] == 0  # one node per stage, 8 per replica
    pmap.controls["color_by"].value = "tensor shard"
    assert same_figures(pmap, figs, marks)
    assert changed(before, mark_arrays(pmap))
    np.testing.assert_array_equal(np.array(pmap.grid.color, dtype=float)[:, 0], np.arange(8))


def test_large_cluster_shows_its_first_nodes(pmap):
    set_controls(pmap, cluster="h100-16384", tp=8, cp=1, pp=16)
    _check(pmap)
    assert pmap.result["nodes_shown"] == 128 and pmap.result["nodes"] == 2048
    assert "first 128 of 2048" in pmap.map_figure.title


def test_grid_never_escapes(pmap):
    for cluster, tp, pp, rack in itertools.product(("h100-1024", "research-256"), (1, 8, 64), (1, 3, 64), (1, 16)):
        set_controls(pmap, cluster=cluster, tp=tp, cp=1, pp=pp, nodes_per_rack=rack)
        _check(pmap)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=st.sampled_from(["gpt3-175b", "llama3-8b", "llama3-70b", "llama3-405b", "llama2-7b"]),
       cluster=st.sampled_from(["h100-1024", "h100-16384", "research-256", "selene-3072"]),
       tp=st.sampled_from([1, 2, 4, 8, 16, 32, 64]), pp=st.integers(1, 64), rack=st.integers(1, 16),
       cp=st.sampled_from([1, 2, 4, 8, 16]),
       color=st.sampled_from(["pipeline stage", "tensor shard", "context shard", "data replica"]))
def test_fuzz(pmap, model, cluster, tp, pp, rack, cp, color):
    set_controls(pmap, model=model, cluster=cluster, tp=tp, cp=cp, pp=pp, nodes_per_rack=rack, color_by=color)
    _check(pmap)


def test_layout_doctests():
    import doctest

    import course.instruments._layout as layout

    assert doctest.testmod(layout).failed == 0


def test_map_follows_a_configurator():
    from course.instruments.configurator import Configurator
    from course.instruments.parallel_map import ParallelMap

    conf, pmap = Configurator(), ParallelMap()
    pmap.link_to(conf)
    with conf.batch():
        conf.controls["model"].value = "llama3-70b"
        conf.controls["tp"].value = 4
        conf.controls["pp"].value = 4
        conf.controls["cp"].value = 2
    assert (pmap.result["model"], pmap.result["tp"], pmap.result["cp"], pmap.result["pp"]) == ("llama3-70b", 4, 2, 4)
    assert pmap.result["dp"] == conf.result["dp"] == 32
    assert pmap.result["groups"]["context"]["scope"] == "inside a node"  # TP 4 x CP 2 = one node
    pmap.controls["pp"].value = 2  # the map can still be moved on its own
    assert pmap.result["pp"] == 2 and conf.result["pp"] == 4


def test_gpu0_groups_are_marked_on_their_cells(pmap):
    set_controls(pmap, model="gpt3-175b", cluster="h100-1024", tp=8, cp=1, pp=8, nodes_per_rack=4)
    tp_marks, pp_marks, dp_marks = (pmap.group_marks[k] for k in ("tensor", "pipeline", "data"))
    assert sorted(zip(tp_marks.x, tp_marks.y)) == [(0.5, s + 0.5) for s in range(8)]  # all of node 0, NVLink
    assert list(pp_marks.x) == [s + 0.5 for s in range(8)]  # one GPU every 8 ranks = 1 node
    assert list(dp_marks.x) == [8 * d + 0.5 for d in range(16)] and set(dp_marks.y) == {0.5}  # every 8th node


def test_an_nvl72_cluster_is_drawn_one_rack_per_column_and_tp_8_stays_on_nvlink():
    # GB200 NVL72: compute trays of 4 GPUs, 72 GPUs per NVLink domain (core.catalog.Cluster.nvlink_domain). The
    # map draws a column per domain, so a TP group of 8 (two trays) is inside one column, on NVLink 5
    from course.instruments.parallel_map import ParallelMap

    pmap = ParallelMap()
    with pmap.batch():
        for name, value in dict(cluster="gb200-nvl72-4608", tp=8, cp=1, pp=4).items():
            pmap.controls[name].value = value
    r = pmap.result
    cluster = catalog.cluster("gb200-nvl72-4608")
    assert r["gpus"] == 4608 and r["racks"] == 4608 // 72 and r["nodes"] == cluster.nodes == 1152
    assert pmap.grid.color.shape[0] == 72  # rows: the GPUs of one NVLink domain
    assert r["groups"]["tensor"]["scope"] == "inside the NVLink domain"
    assert r["groups"]["tensor"]["link"] == cluster.node.intra_link.name and r["feasible"]

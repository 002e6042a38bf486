"""Skewed routers (course.core.expert_load): expert loads, the busiest rank, dropped tokens, the step share.

Expected values come from the definitions worked by hand (a Zipf law over four experts, a hot expert on
its own GPU), from a direct simulation of the placement the formula describes (experts dealt to ranks),
and from the limits the physics fixes (a balanced router drops nothing and makes nobody wait).
"""

import numpy as np
import pytest

from course import core
from course.core import catalog, moe


def test_loads_average_one_and_fall_as_a_power_of_the_rank():
    loads = core.skewed_expert_loads(4, 1.0)
    harmonic = 1 + 1 / 2 + 1 / 3 + 1 / 4
    assert loads == pytest.approx([4 / harmonic, 2 / harmonic, 4 / 3 / harmonic, 1 / harmonic])
    assert core.skewed_expert_loads(64, [0.0, 0.5, 1.2]).mean(axis=-1) == pytest.approx([1, 1, 1])
    assert np.all(core.skewed_expert_loads(64, 0.0) == 1.0)


def test_straggler_factor_is_the_busiest_rank_of_the_placement_it_describes():
    # the hottest expert on rank 0 with E/ep - 1 experts of the others' mean load: count it directly
    e, ep, hot = 64, 8, 2.5
    others = np.full(e - 1, (e - hot) / (e - 1))
    loads = np.concatenate([[hot], others])
    ranks = loads.reshape(ep, e // ep).sum(axis=1)
    assert core.straggler_factor(hot, e, ep) == pytest.approx(ranks.max() / ranks.mean())
    assert core.straggler_factor(hot, e, e) == pytest.approx(hot)  # alone on its GPU
    assert core.straggler_factor(hot, e, 1) == pytest.approx(1.0)  # one GPU holds everything
    assert core.straggler_factor(hot, e, ep, capacity_factor=1.25) == 1.25  # padded buffers (Switch)


def test_the_balanced_limit_matches_the_core_without_skew():
    # no skew: nobody waits and nothing is dropped at capacity 1
    loads = core.skewed_expert_loads(32, 0.0)
    assert core.straggler_factor(loads[0], 32, 32) == 1.0
    assert core.dropped_token_share(loads, 1.0) == 0.0
    assert core.straggler_step_share(1.0, 0.5) == 0.0
    # with capacity the pace is the padded buffer, as moe.moe_straggler_factor says
    assert core.straggler_factor(1.7, 64, 8, 1.5) == moe.moe_straggler_factor(4096, 8, 64, 1.5)


def test_dropped_tokens_by_hand_and_falling_with_capacity():
    loads = core.skewed_expert_loads(4, 1.0)
    assert core.dropped_token_share(loads, 1.25) == pytest.approx((loads[0] - 1.25) / 4)
    shares = core.dropped_token_share(core.skewed_expert_loads(64, 0.6), np.array([0.8, 1.0, 1.25, 2.0, 10.0]))
    assert np.all(np.diff(shares) < 0) and shares[-1] == 0.0


def test_step_share_by_hand():
    # experts are 40 % of a balanced step; the hot GPU has twice the mean: 1.4 steps, 0.4 of them waiting
    assert core.straggler_step_share(2.0, 0.4) == pytest.approx(0.4 / 1.4)
    assert core.straggler_step_share(np.array([1.0, 3.0]), 1.0) == pytest.approx([0.0, 2 / 3])


def test_all_to_all_parts_are_the_two_sides_of_the_core_time():
    m = catalog.model("deepseek-v3")
    nvlink, ib = catalog.link("NVLink 4"), catalog.link("InfiniBand NDR")
    for ep, per_node in ((8, False), (16, False), (64, True), (256, False)):
        nv, net = core.moe_all_to_all_parts_per_layer(4096, m.hidden, m.top_k, ep, 8, nvlink.bandwidth, ib.bandwidth,
                                                      nvlink.latency, ib.latency, per_node=per_node)
        whole = core.moe_all_to_all_time_per_layer(4096, m.hidden, m.top_k, ep, 8, nvlink.bandwidth, ib.bandwidth,
                                                   nvlink.latency, ib.latency, per_node=per_node)
        assert max(nv, net) == pytest.approx(whole, rel=1e-12)
    # by hand: EP 16 over two nodes, plain: k (1 - 8/16) copies of h x 2 bytes leave the node, 4 all-to-alls
    nv, net = core.moe_all_to_all_parts_per_layer(4096, 7168, 8, 16, 8, 450e9, 50e9)
    assert net == pytest.approx(4 * 4096 * 8 * 0.5 * 7168 * 2 / 50e9)
    assert nv == pytest.approx(4 * 4096 * 8 * 7 / 16 * 7168 * 2 / 450e9)
    assert core.moe_all_to_all_parts_per_layer(4096, 7168, 8, 1, 1, 450e9, 50e9) == (0.0, 0.0)


def test_training_flops_are_three_forward_passes_of_the_active_weights():
    _, active = core.moe_mlp_params(4096, 1792, 64, 8)
    assert core.moe_mlp_train_flops(1000, 4096, 1792, 64, 8) == pytest.approx(3 * 2 * active * 1000)


def test_overlap_hides_at_most_the_compute_beside_it():
    a2a, compute = np.array([0.5, 2.0, 3.0]), 2.0
    assert core.exposed_all_to_all_time(a2a, compute).tolist() == [0.0, 0.0, 1.0]
    assert core.exposed_all_to_all_time(a2a, compute, overlap=False).tolist() == a2a.tolist()


@pytest.mark.parametrize("call, name", [
    (lambda: core.skewed_expert_loads(0, 1.0), "experts"),
    (lambda: core.skewed_expert_loads(8, -0.1), "skew"),
    (lambda: core.straggler_factor(0.5, 8, 8), "hottest_load"),
    (lambda: core.straggler_factor(2.0, 64, 24), "ep"),
    (lambda: core.straggler_factor(2.0, 64, 8, capacity_factor=0.0), "capacity_factor"),
    (lambda: core.dropped_token_share([1.0, 1.0], -1.0), "capacity_factor"),
    (lambda: core.dropped_token_share(1.0, 1.0), "expert_loads"),
    (lambda: core.straggler_step_share(0.9, 0.4), "factor"),
    (lambda: core.straggler_step_share(2.0, 1.5), "expert_share"),
    (lambda: core.exposed_all_to_all_time(-1.0, 1.0), "all_to_all_seconds"),
    (lambda: core.moe_mlp_train_flops(0, 4096, 1792, 64, 8), "tokens"),
    (lambda: core.moe_all_to_all_parts_per_layer(4096, 4096, 8, 16, 8, 0.0, 50e9), "intra_bandwidth"),
])
def test_invalid_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()

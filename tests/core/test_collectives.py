"""course.core.collectives against hand computations, the workbook and the design facts.

Expected values are worked out by hand in the comments from the alpha-beta
formulas of Thakur, Rabenseifner & Gropp 2005, never read back from the code.
"""

import numpy as np
import pytest

from course import core
from course.core import collectives as co
from course.core.units import GB, GB_per_s, MB, kB, ms, us

ALPHA, BW = 5 * us, 50 * GB_per_s


@pytest.mark.parametrize("algorithm, expected", [
    # 8 ranks, lg 8 = 3, 1 GB at 50 GB/s is 20 ms of beta*n.
    ("ring", 14 * ALPHA + 1.75 * 0.020),
    ("tree", 6 * (ALPHA + 0.020)),
    ("double_binary_tree", 6 * ALPHA + 2 * 0.020),
    ("recursive_doubling", 3 * (ALPHA + 0.020)),
    ("rabenseifner", 6 * ALPHA + 1.75 * 0.020),
    ("naive", 14 * (ALPHA + 0.020)),
])
def test_each_algorithm_by_hand(algorithm, expected):
    assert core.allreduce_time(1 * GB, 8, BW, ALPHA, algorithm=algorithm) == pytest.approx(expected, rel=1e-12)


def test_non_power_of_two_uses_ceil_lg():
    # 5 ranks: ceil(lg 5) = 3
    assert core.allreduce_time(0, 5, BW, 1.0, "recursive_doubling") == 3.0
    assert core.allreduce_time(0, 5, BW, 1.0, "tree") == 6.0
    assert co._ceil_log2(np.array([1, 2, 3, 4, 5, 1024, 1025])).tolist() == [0, 1, 2, 2, 3, 10, 11]


@pytest.mark.parametrize("algorithm", core.ALLREDUCE_ALGORITHMS)
def test_one_rank_costs_nothing(algorithm):
    assert core.allreduce_time(10 * GB, 1, BW, ALPHA, algorithm=algorithm) == 0.0


def test_algorithm_names_are_the_fixed_six():
    assert set(core.ALLREDUCE_ALGORITHMS) == {"ring", "tree", "double_binary_tree", "recursive_doubling",
                                              "rabenseifner", "naive"}


def test_workbook_0_4_ring_140_ms_tree_480_ms():
    assert core.allreduce_time(4 * GB, 8, BW, algorithm="ring") / ms == pytest.approx(140)
    assert core.allreduce_time(4 * GB, 8, BW, algorithm="tree") / ms == pytest.approx(480)


@pytest.mark.parametrize("p", [2, 8, 64, 128, 1024])
def test_naive_over_ring_is_p_not_p_over_2(p):
    # DESIGN.md: the root moves (p-1)n in and (p-1)n out; ring moves 2(p-1)/p n.
    ratio = core.allreduce_time(GB, p, BW, algorithm="naive") / core.allreduce_time(GB, p, BW, algorithm="ring")
    assert ratio == pytest.approx(p)


def test_lab06_header_14x_is_wrong_at_128_gpus():
    ratio = core.allreduce_time(14 * GB, 128, BW, 1.5 * us, "naive") / core.allreduce_time(14 * GB, 128, BW, 1.5 * us)
    assert ratio == pytest.approx(128, rel=1e-3)
    assert ratio > 100  # not 14


def test_lab06_small_message_claim_under_correct_formulas():
    # Lab 06: 128 GPUs, NDR (alpha 1.5 us, 50 GB/s); its answer: ring for large, a logarithmic
    # (recursive halving) algorithm for small messages. With the correct formulas:
    n, alpha = 128, 1.5 * us

    def best(message):
        times = {a: core.allreduce_time(message, n, BW, alpha, a) for a in core.ALLREDUCE_ALGORITHMS}
        return min(times, key=times.get), times

    tiny, times = best(1 * kB)
    assert tiny == "recursive_doubling"        # 7 latencies: 7 * 1.52 us = 10.6 us
    assert times["recursive_doubling"] == pytest.approx(7 * (alpha + 1e3 / BW))
    assert times["ring"] > 30 * times["recursive_doubling"]   # ring pays 254 latencies
    medium, _ = best(1 * MB)
    assert medium == "rabenseifner"            # 14 alpha + 1.98 * 20 us beats 7 * 21.5 us
    # For large messages ring and Rabenseifner share the optimal bandwidth term; the ring costs
    # only its 2(p-1) latencies more, which vanish next to 14 GB of transfer.
    ring, rab = (core.allreduce_time(14 * GB, n, BW, alpha, a) for a in ("ring", "rabenseifner"))
    assert ring / rab == pytest.approx(1.0, abs=1e-3)
    # the binomial tree never wins: recursive doubling has half its latency and bandwidth terms
    for message in (1.0, 1 * kB, 1 * MB, 14 * GB):
        assert best(message)[0] != "tree"


def test_lab06_recursive_halving_as_coded_would_always_win():
    # The lab codes recursive halving as lg N alpha + (1 - 1/N) M beta: half the ring's optimal
    # bandwidth term, which is below the lower bound, so it "wins" at every size. Ours never does.
    n, alpha = 128, 1.5 * us
    for message in (1 * kB, 1 * MB, 14 * GB):
        lab_rh = 7 * alpha + (1 - 1 / n) * message / BW
        assert lab_rh < core.allreduce_lower_bound(message, n, BW, alpha)


def test_broadcasting_over_sizes_and_ranks():
    sizes = np.array([1e3, 1e6, 1e9])
    ranks = np.array([[2], [8]])
    t = core.allreduce_time(sizes, ranks, BW)
    assert t.shape == (2, 3)
    assert t[1, 2] == pytest.approx(1.75 * 1e9 / BW)


def test_traffic_bytes_workbook_0_1():
    assert core.allreduce_traffic_bytes(1 * GB, 8) / GB == pytest.approx(1.75)
    assert core.allreduce_traffic_bytes(1 * GB, 1000) / GB == pytest.approx(1.998)


def test_reduce_scatter_and_all_gather_are_halves_of_the_ring():
    rs = core.reduce_scatter_time(3 * GB, 16, BW, ALPHA)
    ag = core.all_gather_time(3 * GB, 16, BW, ALPHA)
    assert rs == ag == pytest.approx(15 * ALPHA + 15 / 16 * 3 * GB / BW)
    assert rs + ag == pytest.approx(core.allreduce_time(3 * GB, 16, BW, ALPHA))


def test_point_to_point():
    assert core.point_to_point_time(1 * GB, BW, ALPHA) == pytest.approx(ALPHA + 0.02)


def test_bus_bandwidth_nccl_tests_definition():
    # nccl-tests PERFORMANCE.md: busbw = algbw * 2(n-1)/n; workbook 0.3: 7 GB / 30 ms = 233 GB/s.
    assert core.algorithm_bandwidth(4 * GB, 30 * ms) == pytest.approx(4 / 0.03 * GB)
    assert core.bus_bandwidth(4 * GB, 8, 30 * ms) / GB_per_s == pytest.approx(233.33, rel=1e-4)
    assert core.bus_bandwidth(4 * GB, 1, 30 * ms) == 0.0
    # A ring all-reduce that runs at link speed has busbw equal to the link speed.
    t = core.allreduce_time(4 * GB, 8, BW)
    assert core.bus_bandwidth(4 * GB, 8, t) == pytest.approx(BW)


def test_hierarchical_by_hand():
    # 8 GB, 8 GPUs/node at 400 GB/s, 4 nodes at 50 GB/s, latencies 1 us and 5 us.
    g, nodes, bi, be, ai, ae = 8, 4, 400 * GB_per_s, 50 * GB_per_s, 1 * us, 5 * us
    in_node = 2 * (7 * ai + 7 / 8 * 8e9 / bi)
    across = 2 * 3 * ae + 2 * 3 / 4 * 1e9 / be
    got = core.hierarchical_allreduce_time(8 * GB, g, nodes, bi, be, ai, ae)
    assert got == pytest.approx(in_node + across)


def test_hierarchical_reduces_to_flat_rings():
    assert core.hierarchical_allreduce_time(GB, 8, 1, 300e9, 1.0, 2 * us, 1.0) == \
        pytest.approx(core.allreduce_time(GB, 8, 300e9, 2 * us))
    assert core.hierarchical_allreduce_time(GB, 1, 16, 1.0, 25e9, 1.0, 3 * us) == \
        pytest.approx(core.allreduce_time(GB, 16, 25e9, 3 * us))


def test_crossover_is_where_the_times_meet():
    for a, b in [("ring", "recursive_doubling"), ("ring", "tree"), ("rabenseifner", "recursive_doubling"),
                 ("double_binary_tree", "ring")]:
        x = core.crossover_message_bytes(64, BW, ALPHA, a, b)
        assert np.isfinite(x) and x > 0
        assert core.allreduce_time(x, 64, BW, ALPHA, a) == pytest.approx(core.allreduce_time(x, 64, BW, ALPHA, b))


def test_crossover_never_and_always():
    # Rabenseifner is never slower than the ring (same bandwidth term, fewer latencies): no crossing.
    assert core.crossover_message_bytes(64, BW, ALPHA, "ring", "rabenseifner") == np.inf
    assert core.crossover_message_bytes(64, BW, ALPHA, "ring", "ring") == 0.0
    # ring vs recursive doubling on 8 ranks: 11 alpha = 1.25 n beta
    assert core.crossover_message_bytes(8, BW, ALPHA, "ring", "recursive_doubling") == pytest.approx(11 * ALPHA * BW / 1.25)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_ring_schedule_shape_and_neighbours(n):
    t = core.ring_allreduce_schedule(n)
    assert len(t["step"]) == 2 * (n - 1) * n
    assert np.all(t["dst"] == (t["src"] + 1) % n)
    assert np.all(t["reduce"] == (t["phase"] == "reduce-scatter"))
    assert np.sum(t["reduce"]) == (n - 1) * n


@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_ring_schedule_computes_an_allreduce(n):
    # Simulate the schedule on real numbers: every rank must end with the sum of all vectors.
    rng = np.random.default_rng(n)
    data = rng.integers(0, 100, size=(n, n)).astype(float)  # data[rank, chunk]
    expected = data.sum(axis=0)
    t = core.ring_allreduce_schedule(n)
    for s in range(2 * (n - 1)):
        rows = t["step"] == s
        sent = {(int(d), int(c)): data[int(src), int(c)]
                for src, d, c in zip(t["src"][rows], t["dst"][rows], t["chunk"][rows])}
        for (dst, c), value in sent.items():  # all sends of a step happen at once
            data[dst, c] = data[dst, c] + value if s < n - 1 else value
    assert np.array_equal(data, np.tile(expected, (n, 1)))


@pytest.mark.parametrize("call", [
    lambda: core.allreduce_time(GB, 0, BW),
    lambda: core.allreduce_time(GB, 2.5, BW),
    lambda: core.allreduce_time(-1, 8, BW),
    lambda: core.allreduce_time(GB, 8, 0.0),
    lambda: core.allreduce_time(GB, 8, BW, -1e-6),
    lambda: core.allreduce_time(GB, 8, BW, algorithm="butterfly"),
    lambda: core.allreduce_time(np.nan, 8, BW),
    lambda: core.hierarchical_allreduce_time(GB, 0, 2, BW, BW),
    lambda: core.bus_bandwidth(GB, 8, 0.0),
    lambda: core.ring_allreduce_schedule(0),
    lambda: core.crossover_message_bytes(8, BW, ALPHA, "ring", "nope"),
])
def test_invalid_input_raises(call):
    with pytest.raises(ValueError):
        call()


def test_error_names_parameter():
    with pytest.raises(ValueError, match="algorithm"):
        core.allreduce_time(GB, 8, BW, algorithm="butterfly")
    with pytest.raises(ValueError, match="bandwidth"):
        core.allreduce_time(GB, 8, -BW)
    with pytest.raises(ValueError, match="n must"):
        core.allreduce_time(GB, 0, BW)


def test_traffic_of_one_way_phases_counts_one_direction():
    # Naive on 4 ranks: the root receives 3 vectors of 1 GB, then sends 3 (hand count),
    # so its link carries 3 GB each way, not 6 (the time term counts both phases).
    assert core.allreduce_traffic_bytes(1 * GB, 4, "naive") / GB == pytest.approx(3.0)
    # Binomial tree on 8 ranks: the root receives from lg 8 = 3 children, then sends to 3.
    assert core.allreduce_traffic_bytes(1 * GB, 8, "tree") / GB == pytest.approx(3.0)
    # Recursive doubling sends and receives at once: 3 rounds of the whole vector each way.
    assert core.allreduce_traffic_bytes(1 * GB, 8, "recursive_doubling") / GB == pytest.approx(3.0)


def test_hierarchical_equals_its_three_phases_by_hand():
    # 8 GB, 8 GPUs per node at 100 GB/s, 4 nodes at 10 GB/s, latencies 1 us and 5 us:
    # in node 2 * (7 * 1 us + 7/8 * 8 GB / 100 GB/s); across 2 * 3 * 5 us + 2 * 3/4 * 1 GB / 10 GB/s
    in_node = 2 * (7 * 1e-6 + 7 / 8 * 8e9 / 100e9)
    across = 2 * 3 * 5e-6 + 2 * 3 / 4 * 1e9 / 10e9
    got = core.hierarchical_allreduce_time(8e9, 8, 4, 100e9, 10e9, 1e-6, 5e-6)
    assert got == pytest.approx(in_node + across, rel=1e-12)
    with pytest.raises(ValueError, match="nodes must be >= 1"):
        core.hierarchical_allreduce_time(8e9, 8, 0, 100e9, 10e9)

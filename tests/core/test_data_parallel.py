"""Data parallelism: accumulation, overlap with buckets, ratios, MFU, scaling, diminishing returns."""

import math

import numpy as np
import pytest

from course.core import data_parallel as dp


def test_data_parallel_degree():
    assert dp.data_parallel_degree(1024, 8, 4) == 32
    assert dp.data_parallel_degree([64, 128], 8, 1).tolist() == [8, 16]
    with pytest.raises(ValueError, match="gpus must be a multiple of tp"):
        dp.data_parallel_degree(1024, 8, 3)


def test_effective_batch_and_inverse_roundtrip():
    assert dp.effective_batch(4, 64, 8) == 2048
    assert dp.required_accum_steps(2048, 4, 8) == 64
    got = dp.effective_batch([1, 2], [3, 4], 8)
    assert got.tolist() == [24, 64]


def test_required_accum_steps_rounds_up_and_exact_mode():
    # 100 samples with 32 per pass: 3 passes give 96 < 100, so 4 are needed.
    assert dp.required_accum_steps(100, 4, 8) == 4
    assert dp.required_accum_steps(2048, 4, 8, exact=True) == 64
    with pytest.raises(ValueError, match="target_batch must be a multiple"):
        dp.required_accum_steps(100, 4, 8, exact=True)


def test_accumulation_step_time_workbook_2_3():
    # 64 x 120 ms + 50 ms all-reduce + 1 ms optimizer = 7.731 s; 2048 / 7.731 = 264.9 seq/s.
    t = dp.accumulation_step_time(0.120, 64, 0.050, 0.001)
    assert t == pytest.approx(7.731)
    assert dp.samples_per_second(2048, t) == pytest.approx(264.9, rel=1e-3)


def test_allreduce_time_saved_workbook_2_2():
    assert dp.allreduce_time_saved(0.050, 64) == pytest.approx(3.150)
    assert dp.allreduce_time_saved(0.050, 1) == 0.0


def test_compute_time_and_ratio_workbook_4_4():
    compute = dp.compute_time(120e12, 0.5 * 989e12)
    assert compute == pytest.approx(0.2427, rel=1e-3)
    assert dp.comm_compute_ratio(0.350, compute) == pytest.approx(1.45, rel=0.01)


def test_mfu_definition_by_hand():
    # 1e15 model FLOPs in 2 s on 4 GPUs of 1e15 peak: 1e15 / 8e15.
    assert dp.mfu(1e15, 2.0, 1e15, 4) == pytest.approx(0.125)
    # Workbook 4.4: a 50 %-MFU compute step plus 350 ms exposed comm falls to ~20 %.
    compute = 120e12 / (0.5 * 989e12)
    assert dp.mfu(120e12, compute + 0.350, 989e12) == pytest.approx(0.5 * compute / (compute + 0.35))
    assert dp.mfu(120e12, compute + 0.350, 989e12) == pytest.approx(0.20, abs=0.01)


def test_exposed_comm_workbook_4_2():
    # 40 layers x 5 ms backward, 1.5 ms all-reduce per layer: only the last one is exposed.
    assert dp.exposed_comm_time(0.200, 0.060, 40) == pytest.approx(0.0015)
    assert dp.overlap_fraction(0.200, 0.060, 40) == pytest.approx(0.975)


def test_exposed_comm_when_comm_bound_by_hand_simulation():
    # Event simulation of the same pipeline: bucket k ready at k*tb, one comm stream.
    def simulate(tb, tc, k):
        finish = 0.0
        for i in range(1, k + 1):
            finish = max(finish, i * tb) + tc
        return finish - k * tb

    for tb_total, tc_total, k in [(0.2, 0.06, 40), (0.1, 0.3, 10), (0.5, 0.5, 7), (1.0, 0.0, 3)]:
        assert dp.exposed_comm_time(tb_total, tc_total, k) == pytest.approx(
            simulate(tb_total / k, tc_total / k, k), abs=1e-12)


def test_no_buckets_means_no_overlap():
    assert dp.exposed_comm_time(0.2, 0.35, 1) == pytest.approx(0.35)
    assert dp.overlap_fraction(0.2, 0.35, 1) == pytest.approx(0.0)


def test_bucket_count_uses_ddp_default_25_mib():
    assert dp.DDP_BUCKET_BYTES == 25 * 2**20
    assert dp.bucket_count(25 * 2**20) == 1
    assert dp.bucket_count(25 * 2**20 + 1) == 2


def test_data_parallel_step_time_iron_law():
    assert dp.data_parallel_step_time(0.242, 0.350) == pytest.approx(0.592)
    assert dp.data_parallel_step_time(0.242, 0.350, overlap=1.0) == pytest.approx(0.242)


def test_speedup_and_efficiency():
    assert dp.speedup(6000.0, 100.0) == 60.0
    assert dp.scaling_efficiency(6000.0, 100.0, 64) == pytest.approx(60 / 64)
    # Solver tutorial: 80 % efficiency on 256 GPUs is about 205 GPUs' worth of work.
    assert 256 * dp.scaling_efficiency(0.8 * 256 * 10.0, 10.0, 256) == pytest.approx(204.8)


def test_data_parallel_speedup_one_gpu_pays_no_comm():
    s = dp.data_parallel_speedup([1, 2, 8], 1.0, [5.0, 1.0, 1.0])
    assert s.tolist() == pytest.approx([1.0, 1.0, 4.0])


def test_diminishing_returns_matches_closed_form():
    # S(N) = N / (a + b N) with a + b = 1 has S(N+1) - S(N) = a / ((a + bN)(a + b(N+1))).
    a, b = 0.95, 0.05
    n = np.arange(1, 65)
    s = n / (a + b * n)
    by_hand = next(k for k in range(1, 64) if a / ((a + b * k) * (a + b * (k + 1))) < 0.5)
    assert dp.diminishing_returns_gpus(n, s) == by_hand == 9


def test_diminishing_returns_on_sparse_curve_uses_average_per_gpu():
    gpus = [8, 16, 32, 64]
    s = [8.0, 14.0, 20.0, 24.0]  # per added GPU: 0.75, 0.375, 0.125
    assert dp.marginal_speedup(gpus, s).tolist() == pytest.approx([0.75, 0.375, 0.125])
    assert dp.diminishing_returns_gpus(gpus, s) == 16
    assert dp.diminishing_returns_gpus(gpus, s, threshold=0.1) is None


def test_diminishing_returns_with_ring_allreduce_weak_scaling():
    # Weak scaling: S(N) = N t / (t + c (N-1)/N). Marginal gain -> t / (t + c) < 0.5 iff c > t.
    t, c = 1.0, 1.5
    n = np.arange(1, 200)
    comm = c * (n - 1) / n
    s = dp.data_parallel_speedup(n, t, comm)
    k = dp.diminishing_returns_gpus(n, s)
    gains = np.diff(n * t / (t + comm))
    assert k == n[np.argmax(gains < 0.5)]
    assert math.isclose(gains[-1], t / (t + c), rel_tol=0.02)


@pytest.mark.parametrize("call, name", [
    (lambda: dp.effective_batch(0, 1, 1), "micro_batch"),
    (lambda: dp.effective_batch(1, 1.5, 1), "accum_steps"),
    (lambda: dp.required_accum_steps(2048, 4, 0), "dp"),
    (lambda: dp.accumulation_step_time(-1.0, 4), "micro_batch_seconds"),
    (lambda: dp.compute_time(1e12, 0.0), "flops_per_second"),
    (lambda: dp.exposed_comm_time(0.2, 0.1, 0), "buckets"),
    (lambda: dp.overlap_fraction(0.2, 0.0, 4), "comm_seconds"),
    (lambda: dp.data_parallel_step_time(1.0, 1.0, overlap=1.5), "overlap"),
    (lambda: dp.comm_compute_ratio(1.0, float("nan")), "compute_seconds"),
    (lambda: dp.mfu(1e12, 1.0, 1e15, n_gpus=0), "n_gpus"),
    (lambda: dp.scaling_efficiency(1.0, 0.0, 4), "throughput_one"),
    (lambda: dp.diminishing_returns_gpus([1, 1], [1.0, 2.0]), "gpus"),
    (lambda: dp.diminishing_returns_gpus([1, 2], [1.0]), "speedups"),
    (lambda: dp.diminishing_returns_gpus([1], [1.0]), "gpus"),
    (lambda: dp.diminishing_returns_gpus([1, 2], [1.0, 2.0], threshold=0), "threshold"),
])
def test_invalid_inputs_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --- the data-parallel step curve (Lab 05 Act I) ---------------------------------------------------

def test_step_curve_by_hand_inside_and_across_nodes():
    # 1e12 FLOP at 1e12 FLOP/s: 1 s of compute; 1 GB of gradients; 8 GPUs a node, NVLink 100 GB/s, NIC 10 GB/s
    c = dp.data_parallel_step_curve(1e12, 1e12, 1e9, np.array([1, 4, 8, 16]), 8, 100e9, 10e9)
    ring4 = 2 * 3 / 4 * 1e9 / 100e9
    # 16 GPUs: reduce-scatter + all-gather in the node 2 x 7/8 x 1e9 / 100e9, then 2 nodes ring on 1e9/8 bytes
    two_level = 2 * 7 / 8 * 1e9 / 100e9 + 2 * 1 / 2 * (1e9 / 8) / 10e9
    assert c["compute_seconds"] == 1.0
    assert c["comm_seconds"].tolist() == pytest.approx([0.0, ring4, 2 * 7 / 8 * 1e9 / 100e9, two_level])
    assert c["step_seconds"].tolist() == pytest.approx((1.0 + c["comm_seconds"]).tolist())


def test_step_curve_overlap_is_the_planners_term():
    # the planner hides DP traffic with exposed_comm_time(backward, comm, buckets); so does the curve
    c = dp.data_parallel_step_curve(3e12, 1e12, 8e9, 64, 8, 450e9, 50e9, overlap=True, buckets=80)
    comm = c["comm_seconds"]
    backward = 2 / 3 * 3.0
    tc, tb = comm / 80, backward / 80
    assert c["exposed_seconds"] == pytest.approx(tc + 79 * max(0.0, tc - tb))
    # DDP's default: 25 MiB buckets of the 8 GB of gradients
    ddp = dp.data_parallel_step_curve(3e12, 1e12, 8e9, 64, 8, 450e9, 50e9, overlap=True)
    k = math.ceil(8e9 / (25 * 2**20))
    assert ddp["exposed_seconds"] == pytest.approx(comm / k + (k - 1) * max(0.0, comm / k - backward / k))


def test_step_curve_rejects_partial_nodes():
    with pytest.raises(ValueError, match="gpus"):
        dp.data_parallel_step_curve(1e12, 1e12, 1e9, 12, 8, 100e9, 10e9)
    with pytest.raises(ValueError, match="backward_share"):
        dp.data_parallel_step_curve(1e12, 1e12, 1e9, 8, 8, 100e9, 10e9, overlap=True, backward_share=0.0)


def test_step_curve_overlap_agrees_with_the_planner():
    """Pure data parallelism: the planner's DP all-reduce and its exposed part are the curve's,
    given the planner's busy time and the named differences: its buckets (the layers of the stage),
    a latency per bucket and the bandwidths its collectives achieve (nccl-tests efficiency)."""
    from course import core

    cluster, model = core.catalog.cluster("research-256"), core.catalog.model("llama3-8b")
    p = core.plan(model.name, cluster.name, tp=1, pp=1, dp=256, num_microbatches=1, overlap=True)
    busy = p.compute + p.memory_bound + p.tp_comm  # seconds of one micro-batch's work on one GPU
    intra = core.achieved_bandwidth(cluster.intra_bandwidth, core.NVLINK_COLLECTIVE_EFFICIENCY)
    inter = core.achieved_bandwidth(cluster.inter_bandwidth, core.NETWORK_COLLECTIVE_EFFICIENCY)
    curve = dp.data_parallel_step_curve(busy, 1.0, 2.0 * model.params, 256, cluster.node.gpus_per_node,
                                        intra, inter, cluster.intra_latency, cluster.inter_latency,
                                        overlap=True, buckets=model.layers, latency_per_bucket=True)
    assert curve["comm_seconds"] == pytest.approx(p.dp_comm, rel=1e-12)
    assert curve["exposed_seconds"] == pytest.approx(p.dp_comm_exposed, rel=1e-12)

"""The reference all-reduce algorithms of course.launch.bench on real ranks: right for every length
(divisible by p or not), dtype and rank count, checked against sums each rank computes alone."""

import inspect

import numpy as np
import pytest

from course import launch
from course.launch import bench

CASES = [{"length": n, "dtype": d, "seed": 3} for n in (1, 6, 7, 1001) for d in ("float64", "float32", "int32")]


@pytest.mark.parametrize("ranks", [2, 3, 5])
def test_every_reference_algorithm_sums_right(ranks):
    for name in ("ring_allreduce", "recursive_doubling_allreduce", "binomial_tree_allreduce"):
        source = inspect.getsource(getattr(bench, name))
        result = launch.run(bench.check_allreduce, source, name, CASES, ranks=ranks, timeout=90)
        assert result.ok, result.reason
        failed = [c for per_rank in result.values for c in per_rank if not c["ok"]]
        assert failed == [], (name, ranks, failed[:3])


WRONG_CHUNKS = '''
def short_ring(comm, x):
    p, r = comm.Get_size(), comm.Get_rank()
    out = x.copy()
    n = out.size // p          # the bug: the last out.size % p elements are never sent
    buf = np.empty(n, out.dtype)
    for s in range(p - 1):
        send, recv = (r - s) % p, (r - s - 1) % p
        comm.Sendrecv(out[send * n:(send + 1) * n], dest=(r + 1) % p, recvbuf=buf, source=(r - 1) % p)
        out[recv * n:(recv + 1) * n] += buf
    for s in range(p - 1):
        send, recv = (r + 1 - s) % p, (r - s) % p
        comm.Sendrecv(out[send * n:(send + 1) * n].copy(), dest=(r + 1) % p,
                      recvbuf=out[recv * n:(recv + 1) * n], source=(r - 1) % p)
    return out
'''


def test_a_ring_with_short_chunks_is_caught_on_the_leftover_elements():
    cases = [{"length": 6, "dtype": "int32", "seed": 1}, {"length": 7, "dtype": "int32", "seed": 1}]
    result = launch.run(bench.check_allreduce, WRONG_CHUNKS, "short_ring", cases, ranks=3, timeout=60)
    assert result.ok, result.reason
    for per_rank in result.values:
        six, seven = per_rank
        assert six["ok"]                    # 6 = 3 x 2: every element is in a chunk
        assert not seven["ok"] and seven["index"] == 6   # the 7th element is the one left out
        mine = bench.case_input(7, "int32", 1, six["rank"])[6]
        assert seven["got"] == mine         # it kept this rank's own value
        expected = sum(int(bench.case_input(7, "int32", 1, q)[6]) for q in range(3))
        assert seven["expected"] == expected


def test_sweep_times_grow_with_size_and_every_algorithm_is_right():
    sizes = [2**10, 2**16, 2**22]
    result = launch.run(bench.allreduce_sweep, sizes, list(bench.ALGORITHMS), 3, 1, ranks=2, timeout=120)
    assert result.ok, result.reason
    data = result.values[0]
    assert data["correct"] == {name: True for name in bench.ALGORITHMS}
    for name, seconds in data["seconds"].items():
        assert np.asarray(seconds).shape == (3, 4)
        median = np.median(np.asarray(seconds)[:, 1:], axis=1)
        # 4 MiB moves 4096x the bytes of 1 KiB: generous, so a busy machine does not fail it
        assert median[-1] > 3 * median[0], (name, median)

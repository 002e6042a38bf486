"""What runs on the ranks in Lab 08: timed ping-pong and all-reduce sweeps, and the reference algorithms.

Every function whose first parameter is ``comm`` is a target for :func:`course.launch.run`. Timing
follows Hoefler & Belli 2015 (SC15, "Scientific Benchmarking of Parallel Computing Systems"): a
barrier before every repeat, ``warmup`` untimed calls first, and each repeat's time the slowest
rank's (an all-reduce is done when its last rank is done); the launcher's side summarises repeats
by their median and quartiles (:func:`course.core.timing_summary`).

Reference all-reduce algorithms (sum over ranks of a 1-D NumPy array of any length and dtype), as
Thakur, Rabenseifner & Gropp (IJHPCA 2005, sec. 4) describe them:

- :func:`ring_allreduce`: reduce-scatter then all-gather around the ring, 2(p-1) ``Sendrecv`` steps
  of about n/p elements (chunks from ``np.array_split``, so any length works);
- :func:`recursive_doubling_allreduce`: lg p rounds of whole-vector exchange with the rank 2^k away;
  for p not a power of two the ranks beyond the largest power fold their data in first and get the
  result back last;
- :func:`binomial_tree_allreduce`: binomial-tree reduce to rank 0, then binomial-tree broadcast;
- :func:`library_allreduce`: MPI's own ``Allreduce`` (MPICH chooses its algorithm by size).
"""

from __future__ import annotations

import time
from typing import Dict, List, Optional, Sequence

import numpy as np

from .runner import report

#: the algorithms a sweep can time, by the name the lab and the core use
ALGORITHMS = ("ring", "recursive_doubling", "tree", "library")


def _sum_op():
    from mpi4py import MPI

    return MPI.SUM


def ring_allreduce(comm, x: np.ndarray) -> np.ndarray:
    """Sum of ``x`` over all ranks by a ring: reduce-scatter, then all-gather (returns a new array)."""
    p, r = comm.Get_size(), comm.Get_rank()
    out = np.array(x, copy=True)
    if p == 1:
        return out
    # np.array_split's chunks (the first n % p hold one element more), as index bounds
    base, more = divmod(out.size, p)
    starts = [k * base + min(k, more) for k in range(p + 1)]
    bounds = [(starts[k], starts[k + 1]) for k in range(p)]
    right, left = (r + 1) % p, (r - 1) % p
    largest = max(hi - lo for lo, hi in bounds)
    incoming = np.empty(largest, dtype=out.dtype)
    for step in range(p - 1):  # reduce-scatter: after it, rank r holds the full sum of chunk r+1
        send_lo, send_hi = bounds[(r - step) % p]
        recv_lo, recv_hi = bounds[(r - step - 1) % p]
        buf = incoming[:recv_hi - recv_lo]
        comm.Sendrecv(out[send_lo:send_hi], dest=right, recvbuf=buf, source=left)
        out[recv_lo:recv_hi] += buf
    for step in range(p - 1):  # all-gather: pass the finished chunks on
        send_lo, send_hi = bounds[(r + 1 - step) % p]
        recv_lo, recv_hi = bounds[(r - step) % p]
        comm.Sendrecv(out[send_lo:send_hi], dest=right, recvbuf=out[recv_lo:recv_hi], source=left)
    return out


def recursive_doubling_allreduce(comm, x: np.ndarray) -> np.ndarray:
    """Sum of ``x`` over all ranks by recursive doubling (returns a new array)."""
    p, r = comm.Get_size(), comm.Get_rank()
    out = np.array(x, copy=True)
    power = 1 << (p.bit_length() - 1)  # the largest power of two <= p
    extra = np.empty_like(out)
    if r >= power:  # fold in: hand the data to a partner among the first `power` ranks, wait for the sum
        comm.Send(out, dest=r - power)
        comm.Recv(out, source=r - power)
        return out
    if r + power < p:
        comm.Recv(extra, source=r + power)
        out += extra
    distance = 1
    while distance < power:
        partner = r ^ distance
        comm.Sendrecv(out, dest=partner, recvbuf=extra, source=partner)
        out += extra
        distance <<= 1
    if r + power < p:
        comm.Send(out, dest=r + power)
    return out


def binomial_tree_allreduce(comm, x: np.ndarray) -> np.ndarray:
    """Sum of ``x`` over all ranks: binomial-tree reduce to rank 0, then binomial-tree broadcast."""
    p, r = comm.Get_size(), comm.Get_rank()
    out = np.array(x, copy=True)
    extra = np.empty_like(out)
    mask = 1
    while mask < p:  # reduce: at level k, ranks with bit k set send to the rank without it, and leave
        if r & mask:
            comm.Send(out, dest=r - mask)
            break
        if r + mask < p:
            comm.Recv(extra, source=r + mask)
            out += extra
        mask <<= 1
    top = 1 << max((p - 1).bit_length() - 1, 0) if p > 1 else 0
    mask = top
    while mask >= 1:  # broadcast: the same tree, downwards
        if r % (2 * mask) == 0 and r + mask < p:
            comm.Send(out, dest=r + mask)
        elif r % (2 * mask) == mask:
            comm.Recv(out, source=r - mask)
        mask >>= 1
    return out


def library_allreduce(comm, x: np.ndarray) -> np.ndarray:
    """MPI's own ``Allreduce`` (the library picks the algorithm)."""
    out = np.empty_like(x)
    comm.Allreduce(x, out, op=_sum_op())
    return out


_BY_NAME = {"ring": ring_allreduce, "recursive_doubling": recursive_doubling_allreduce,
            "tree": binomial_tree_allreduce, "library": library_allreduce}


def load_function(source: str, name: str):
    """A function defined by ``source`` (a student's cell), with ``np`` and ``MPI`` in its globals."""
    from mpi4py import MPI

    namespace = {"np": np, "numpy": np, "MPI": MPI, "__name__": "__student__"}
    exec(compile(source, "<your function>", "exec"), namespace)
    return namespace[name]


def _slowest(comm, seconds: np.ndarray) -> np.ndarray:
    """Element-wise maximum over ranks (every rank gets it)."""
    from mpi4py import MPI

    out = np.empty_like(seconds)
    comm.Allreduce(seconds, out, op=MPI.MAX)
    return out


def ping_pong(comm, sizes: Sequence[int], repeats: int = 5, warmup: int = 1):
    """One-way time (half the round trip) of ``sizes`` bytes between ranks 0 and 1, ``warmup + repeats``
    samples per size; the other ranks wait. Returns ``(len(sizes), warmup + repeats)`` seconds on every rank."""
    r = comm.Get_rank()
    total = warmup + repeats
    times = np.zeros((len(sizes), total))
    for i, size in enumerate(sizes):
        buf = np.zeros(max(int(size), 1), dtype=np.uint8)
        for k in range(total):
            comm.Barrier()
            if r == 0:
                start = time.perf_counter()
                comm.Send(buf, dest=1)
                comm.Recv(buf, source=1)
                times[i, k] = (time.perf_counter() - start) / 2
            elif r == 1:
                comm.Recv(buf, source=0)
                comm.Send(buf, dest=0)
        if r == 0:
            report(i + 1, len(sizes))
    return _slowest(comm, times)


def allreduce_sweep(comm, sizes: Sequence[int], algorithms: Sequence[str] = ("library",), repeats: int = 5,
                    warmup: int = 1, student: Optional[Dict[str, str]] = None):
    """Times of an all-reduce of ``sizes`` bytes (float64 elements) for each algorithm.

    ``student = {"source": ..., "name": ...}`` adds the student's function as algorithm ``"yours"``.
    Returns ``{"seconds": {algorithm: (len(sizes), warmup + repeats) array}, "correct": {algorithm:
    bool}}``: every rank contributes ``rank + 1`` everywhere, so the sum is ``p (p + 1) / 2``,
    checked on the first call of each size.
    """
    p, r = comm.Get_size(), comm.Get_rank()
    functions = {name: _BY_NAME[name] for name in algorithms}
    if student:
        functions["yours"] = load_function(student["source"], student["name"])
    total = warmup + repeats
    seconds = {name: np.zeros((len(sizes), total)) for name in functions}
    correct = {name: True for name in functions}
    expected = p * (p + 1) / 2
    steps, done = len(sizes) * len(functions), 0
    for i, size in enumerate(sizes):
        x = np.full(max(int(size) // 8, 1), float(r + 1))
        for name, fn in functions.items():
            for k in range(total):
                comm.Barrier()
                start = time.perf_counter()
                out = fn(comm, x)
                seconds[name][i, k] = time.perf_counter() - start
                if k == 0:
                    good = isinstance(out, np.ndarray) and out.shape == x.shape and bool(np.all(out == expected))
                    correct[name] = correct[name] and good
            done += 1
            if r == 0:
                report(done, steps)
    everyone_right = {name: bool(comm.allreduce(int(ok), op=_min_op())) for name, ok in correct.items()}
    return {"seconds": {name: _slowest(comm, t) for name, t in seconds.items()}, "correct": everyone_right}


def _min_op():
    from mpi4py import MPI

    return MPI.MIN


def case_input(length: int, dtype: str, seed: int, rank: int) -> np.ndarray:
    """Rank ``rank``'s input of a correctness case: small whole numbers (exact sums in every dtype)."""
    rng = np.random.default_rng([seed, rank])
    return rng.integers(-50, 50, size=length).astype(dtype)


def check_allreduce(comm, source: str, name: str, cases: List[dict]) -> List[dict]:
    """Run the student's all-reduce on each case (``length``, ``dtype``, ``seed``) and compare it with
    the sum of every rank's input, which each rank computes alone. Per case: ``ok``, and for a wrong
    result the first wrong index, the value got and the value expected (on this rank)."""
    fn = load_function(source, name)
    p, r = comm.Get_size(), comm.Get_rank()
    out = []
    for case in cases:
        mine = case_input(case["length"], case["dtype"], case["seed"], r)
        expected = sum(case_input(case["length"], case["dtype"], case["seed"], q) for q in range(p)).astype(case["dtype"])
        record = dict(case, ok=False, rank=r)
        try:
            got = fn(comm, mine.copy())
        except Exception as exc:
            # the other ranks may wait for this one in a Sendrecv forever: end the launch, naming the case
            raise RuntimeError(f"length {case['length']}, {case['dtype']}: {type(exc).__name__}: {exc}") from exc
        got = np.asarray(got)
        if got.shape != expected.shape:
            record["error"] = f"returned shape {got.shape}, expected {expected.shape}"
        elif got.dtype != expected.dtype:
            record["error"] = f"returned dtype {got.dtype}, expected {expected.dtype}"
        else:
            wrong = np.nonzero(got != expected)[0]
            if wrong.size:
                k = int(wrong[0])
                record.update(index=k, got=got[k].item(), expected=expected[k].item(),
                              error=f"element {k} is {got[k].item()}, the sum is {expected[k].item()}")
            else:
                record["ok"] = True
        out.append(record)
    return out

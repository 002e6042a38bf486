"""Chapter 11's collectives graded on real MPI ranks in the grading sandbox (issue 47).

Each test launches the part's function on 4 real processes (plus the judge's rank) through
:func:`autograder.judging.ranks.evaluate_part`, in bubblewrap where it runs (CI installs it), as every
grading route does (:meth:`autograder.grading.grader.Grader._run_ranks`). Time limits are generous
(a loaded 2-core machine); the tests assert reasons and points, never times.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from autograder.isolation import sandbox
from autograder.judging import ranks
from course.activities import REGISTRY, answer_sources
from course.assess import codes
from course.assess.registry import safe_judge
from course.assess.variants import grading_seed, variant_of

from . import attacks

pytestmark = pytest.mark.slow

ASSIGNMENT = "ch11_collectives_by_hand"
SEED = grading_seed(0, variant_of(ASSIGNMENT, "ada"))


def _runner_processes(work: Path):
    """Live processes of this test's rank launch, once those the kernel is still tearing down (SIGKILL
    sent to the sandbox's PID namespace) have had 10 s to go.

    A process is this launch's when the runner's file name is in its command line and ``work`` (its
    last three parts: the same folder seen through any mount) is in its command line or, inside
    bubblewrap, is the source of one of its mounts. Another test worker may be grading on real ranks
    at the same moment: its processes are not this launch's."""
    mine = "/".join(work.parts[-3:]).encode()
    deadline = time.monotonic() + 10
    while True:
        found = []
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    cmdline = fh.read()
                if b"ranks_runner.py" not in cmdline:
                    continue
                if mine not in cmdline:
                    with open(f"/proc/{pid}/mountinfo", "rb") as fh:
                        if mine not in fh.read():
                            continue
                with open(f"/proc/{pid}/stat") as fh:
                    if fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                        found.append(int(pid))
            except (OSError, ValueError, IndexError):
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def grade(tmp_path: Path, code: str, gid: str = "ch11_ex11_3"):
    """The verdict of ``code`` (the notebook's answer cell) for part ``gid``, graded on real ranks."""
    use_bwrap = sandbox.probe() is None
    work = tmp_path / "work"
    work.mkdir()
    sandbox.prepare_scratch(work, 0, use_bwrap)
    harvest = ranks.evaluate_part(REGISTRY[gid], ["import numpy as np", code, f"print({gid!r})"], work, seed=SEED,
                                  limits=sandbox.Limits(), slot=0, use_bwrap=use_bwrap, timeout=300)
    assert _runner_processes(work) == []  # nothing of the launch outlives it
    return safe_judge(REGISTRY[gid], harvest, SEED)


def test_an_honest_collective_earns_every_point_on_real_ranks(tmp_path):
    verdict = grade(tmp_path, answer_sources(ASSIGNMENT, "ada")["ch11_ex11_3_answer"])
    assert verdict.passed, verdict.reason


def test_the_release_stub_is_not_launched_and_earns_nothing(tmp_path):
    verdict = grade(tmp_path, 'def reduce_scatter(comm, x):\n    """doc"""\n    # YOUR CODE HERE\n    pass')
    assert verdict.score == 0 and verdict.code == codes.NOT_ANSWERED


def test_a_deadlock_ends_at_the_limit_with_zero_and_where_each_rank_waited(tmp_path):
    verdict = grade(tmp_path, attacks.DEADLOCK_BOTH_SEND_FIRST)
    assert verdict.score == 0 and verdict.code == codes.DEADLOCK, verdict.reason
    assert "did not finish on" in verdict.reason and "deadlock" in verdict.reason
    assert "rank 0 was in step 1: send rank 1" in verdict.reason, verdict.reason


def test_a_rank_that_dies_ends_the_part_with_zero_and_names_it(tmp_path):
    verdict = grade(tmp_path, attacks.RANK_DIES)
    assert verdict.score == 0 and verdict.code == codes.RANKS_FAILED, verdict.reason
    assert "the process of rank 1 ended" in verdict.reason


def test_a_rank_cannot_write_another_ranks_result(tmp_path):
    """Rank 0 computes everyone's chunk and sends the judge's rank results "for" rank 1, which returns
    None: results are attributed by MPI's source, so rank 1's own None is what is judged."""
    verdict = grade(tmp_path, attacks.RANK_WRITES_ANOTHERS_RESULT)
    assert not verdict.passed and verdict.score < 0.5, verdict.reason
    assert "does not return a 1-D NumPy array" in verdict.reason


def test_mpi_cannot_reach_outside_the_sandbox(tmp_path):
    marker = f"/tmp/ranks-escaped-{os.getpid()}"
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    heard = []

    def accept():
        while not stop.is_set():
            try:
                heard.append(listener.accept())
            except OSError:
                continue

    stop = threading.Event()
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        verdict = grade(tmp_path, attacks.mpi_reaches_outside(marker, port))
    finally:
        stop.set()
        thread.join(5)
        listener.close()
    assert heard == []
    for path in (marker, marker + ".sh", marker + ".spawn"):
        assert not os.path.exists(path), path
    assert verdict.reason  # graded with a reason (its honest values earn what they deserve)


def test_a_build_that_does_not_refuse_bad_input_is_told_to_raise_value_error_not_deadlock(tmp_path):
    """11.5 asks for ValueError on every rank when p is not a power of two. A function that goes on
    instead hangs on real ranks: the part loses the invalid-input check, with that reason, and keeps the rest."""
    solution = answer_sources(ASSIGNMENT, "ada")["ch11_ex11_5_answer"]
    lenient = solution.replace("raise ValueError('p must be a power of two')", "pass")
    assert lenient != solution
    verdict = grade(tmp_path, lenient, gid="ch11_ex11_5")
    assert verdict.code == codes.PARTIAL and 0 < verdict.score < 1, verdict.reason
    assert "does not raise ValueError on every rank for 3 ranks (it went on communicating" in verdict.reason
    assert [c.name for c in verdict.checks if c.earned < c.share] == ["invalid inputs"], verdict.reason

"""Chapter 11's collectives on simulated ranks: what the visible check and plain nbgrader run.

The graded route (real MPI processes in the sandbox) is in ``tests/autograder/test_ranks_grading.py``.
"""

from __future__ import annotations

import pytest

from course.activities import REGISTRY, SYLLABUS, answer_sources
from course.assess import codes
from course.assess.authoring import workbook_listing
from course.assess.ranks import definitions
from course.assess.simcomm import run_simulated
from course.assess.variants import grading_seed, variant_of
from course.chapters import ch11

ASSIGNMENT = "ch11_collectives_by_hand"


def _seed(student):
    return grading_seed(0, variant_of(ASSIGNMENT, student))


def _honest(student):
    namespace = {}
    for source in answer_sources(ASSIGNMENT, student).values():
        exec(source, namespace)
    return namespace


@pytest.mark.parametrize("student", ["ada", "bob"])
def test_reference_solutions_earn_every_point(student):
    namespace = _honest(student)
    for gid, part in REGISTRY.items():
        if part.assignment == ASSIGNMENT:
            verdict = part.grade(namespace, _seed(student))
            assert verdict.passed, (gid, verdict.reason)


def test_the_simulator_keeps_mpi_semantics():
    """A ring of sendrecv completes; two ranks that both send first deadlock at once, naming the steps."""
    def ring(comm, value):
        return comm.sendrecv(value, dest=(comm.rank + 1) % comm.size, source=(comm.rank - 1) % comm.size)

    out = run_simulated(ring, 3, [[10], [11], [12]])
    assert out["failure"] is None and out["ranks"] == [12, 10, 11]

    def both_send_first(comm, value):
        comm.send(value, dest=1 - comm.rank)
        return comm.recv(source=1 - comm.rank)

    out = run_simulated(both_send_first, 2, [[1], [2]])
    assert out["failure"]["kind"] == "deadlock"
    assert out["failure"]["waiting"] == {"0": "step 1: send to rank 1, waiting for it to receive",
                                         "1": "step 1: send to rank 0, waiting for it to receive"}


def test_a_loop_that_never_ends_is_stopped_at_the_time_limit():
    def spin(comm, value):
        while True:
            pass

    out = run_simulated(spin, 2, [[1], [2]], time_limit=0.5)
    assert out["failure"] == {"kind": "timeout"}
    assert all("__unfinished__" in r for r in out["ranks"])


def test_deadlock_earns_zero_with_a_reason():
    namespace = {}
    exec("def reduce_scatter(comm, x):\n"
         "    comm.send(x, dest=(comm.rank + 1) % comm.size)\n"
         "    return comm.recv(source=(comm.rank - 1) % comm.size)\n", namespace)
    verdict = REGISTRY["ch11_ex11_3"].grade(namespace, _seed("ada"))
    assert verdict.score == 0 and verdict.code == codes.DEADLOCK
    assert "deadlocks" in verdict.reason and "rank 0 waits in step 1: send to rank 1" in verdict.reason


def test_the_wrong_chunk_is_named_by_rank_and_step():
    """The listing of 11.6 sends a partial chunk in the first all-gather step: step p of every rank."""
    namespace = {}
    exec("import numpy as np\n" + workbook_listing(ch11.LISTING_116), namespace)
    verdict = REGISTRY["ch11_ex11_6_fix"].grade(namespace, _seed("ada"))
    assert verdict.score == 0
    example_p = REGISTRY["ch11_ex11_6_fix"].probes(_seed("ada"))["valid"][0]["p"]
    assert (f"first diverge at rank 0, step {example_p} (all-gather step 1)" in verdict.reason), verdict.reason


def test_a_wrong_dtype_and_a_gathered_shortcut_lose_points():
    namespace = {}
    exec("import numpy as np\n"
         "def reduce_scatter(comm, x):\n"          # right values, but always float64
         "    total = np.zeros(len(x))\n"
         "    for r in range(comm.size):\n"
         "        total = total + comm.sendrecv(x, dest=(comm.rank + r) % comm.size,\n"
         "                                      source=(comm.rank - r) % comm.size)\n"
         "    return np.array_split(total, comm.size)[comm.rank]\n", namespace)
    verdict = REGISTRY["ch11_ex11_3"].grade(namespace, _seed("ada"))
    assert 0 <= verdict.score < 1 and "where the input is" in verdict.reason


def test_the_visible_check_runs_the_students_own_example(capsys):
    from course.assess.checks import assess

    ex = SYLLABUS.exercise("11.3")
    variant = variant_of(ASSIGNMENT, "ada")
    lines, shaped, right = assess(ex, _honest("ada"), variant, exam=False)
    assert right and any("your worked example" in line and "every rank returns the right result" in line
                         for line in lines), lines
    lines, shaped, right = assess(ex, {"reduce_scatter": lambda comm, x: x}, variant, exam=False)
    assert not right


def test_the_visible_check_of_11_5_expects_value_error_for_p_not_a_power_of_two():
    from course.assess.checks import assess

    ex = SYLLABUS.exercise("11.5")
    variant = variant_of(ASSIGNMENT, "ada")
    lines, shaped, right = assess(ex, _honest("ada"), variant, exam=False)
    assert right and any("not a power of two" in line and "raises ValueError on every rank" in line
                         for line in lines), lines
    solution = next(src for src in answer_sources(ASSIGNMENT, "ada").values() if "def allreduce_rhd" in src)
    lenient_source = solution.replace("raise ValueError('p must be a power of two')", "pass")  # never refuses
    assert "ValueError" not in lenient_source
    lenient = {}
    exec(lenient_source, lenient)
    lines, shaped, right = assess(ex, lenient, variant, exam=False)
    assert not right, lines
    refused = [line for line in lines if "not a power of two" in line]
    # what is wrong is the missing ValueError; the deadlock that follows is how it showed, not the verdict
    assert refused and "does not raise ValueError on every rank for 3 ranks (it went on communicating and " \
        "deadlocked" in refused[0], lines
    assert "check the input on every rank before any rank sends" in refused[0]
    assert "exchange with sendrecv" not in refused[0] and "not written yet" not in refused[0]


def test_a_build_that_does_not_refuse_loses_only_the_invalid_input_check():
    solution = next(src for src in answer_sources(ASSIGNMENT, "ada").values() if "def allreduce_rhd" in src)
    lenient = {}
    exec(solution.replace("raise ValueError('p must be a power of two')", "pass"), lenient)
    verdict = REGISTRY["ch11_ex11_5"].grade(lenient, _seed("ada"))
    assert verdict.code == codes.PARTIAL and verdict.score == pytest.approx(0.75), verdict.reason
    failed = [check for check in verdict.checks if check.earned < check.share]
    assert [check.name for check in failed] == ["invalid inputs"]
    assert codes.NO_VALUE_ERROR in failed[0].codes
    assert "does not raise ValueError on every rank for 3 ranks (it went on communicating" in verdict.reason


def test_only_definitions_reach_the_ranks():
    cells = ["import numpy as np\nK = 4\nx = np.arange(K)\nprint(x)",
             "def helper(a):\n    return a\n\n@staticmethod\ndef f(comm, x):\n    return helper(x)\nf(None, 1)",
             "for i in range(3):\n    pass", "%time y = 1"]
    assert definitions(cells) == ["import numpy as np", "K = 4", "def helper(a):\n    return a",
                                  "@staticmethod\ndef f(comm, x):\n    return helper(x)"]


def test_listing_of_the_debug_exercise_numbers_its_buggy_line_for_each_student():
    ex = SYLLABUS.exercise("11.6")
    keys = {REGISTRY["ch11_ex11_6_line"].value.key(__import__("course.assess.spec", fromlist=["spec_for"])
                                                    .spec_for(ex, variant_of(ASSIGNMENT, f"s{i}")))["buggy_line"]
            for i in range(40)}
    assert len(keys) >= 8

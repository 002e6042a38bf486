"""The clean room's program, one function at a time (``course/assess/cleanroom_runner.py``).

The whole program runs as ``runner.py`` in a sandbox (``tests/autograder/test_cleanroom.py``) or, for the
visible check, unsandboxed (``tests/exercises/test_check_cells.py``); here each step is driven alone, in
this process, with the forks it makes kept to children that end themselves.
"""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pytest

from course.assess import cleanroom_runner as runner
from course.assess.cleanroom_protocol import rerun


def make_run(request=None, cell_timeout=2):
    request = {"nonce": "n0", "functions": {}, "values": [], **(request or {})}
    return runner.Run(request, io.StringIO(), cell_timeout)


def test_plain_keeps_plain_data_and_marks_the_rest():
    assert runner.plain({"a": [1, 2.5, "x", None, True]}) == {"a": [1, 2.5, "x", None, True]}
    assert runner.plain(np.array([1, 2, 3])) == [1, 2, 3]
    assert runner.plain(np.float64(0.5)) == 0.5 and type(runner.plain(np.int64(3))) is int
    assert runner.plain((1, (2,))) == [1, [2]]
    assert runner.plain({1: "a"}) == {"__unplain__": "dict"}
    assert runner.plain(object()) == {"__unplain__": "object"}

    class AlwaysEqual(float):
        def __eq__(self, other):
            return True

    assert runner.plain(AlwaysEqual(1.0)) == {"__unplain__": "AlwaysEqual"}
    deep = [[[[[1]]]]]
    assert runner.plain(deep) == [[[[{"__unplain__": "list"}]]]]
    assert len(runner.plain(list(range(1000)))) == 256


def test_call_answers_a_value_or_what_was_raised():
    assert runner.call(lambda x: x * 2, [3], 2) == 6
    assert runner.call(lambda x: int("no"), [0], 2) == {"__raised__": "ValueError"}
    assert runner.call(lambda: 1 / 0, [], 2) == {"__raised__": "ZeroDivisionError"}

    def forever():
        while True:
            pass

    assert runner.call(forever, [], 1) == {"__raised__": "Overran"}


def test_a_cell_with_magics_goes_through_ipythons_transformer():
    namespace = runner.fresh_namespace()  # its get_ipython() does nothing: the magic line is skipped
    exec(runner.transformed("%time y = 2\nx = 3"), namespace)
    assert namespace["x"] == 3 and "y" not in namespace
    with pytest.raises(SyntaxError):
        runner.transformed("x = (")


def test_run_cell_keeps_the_namespace_and_notes_failures_when_asked():
    run = make_run({"report": True}, cell_timeout=1)
    runner.run_cell(run, "a = 1", 0)
    runner.run_cell(run, "b = a / 0", 1)
    runner.run_cell(run, "while True:\n    pass", 2)
    runner.run_cell(run, "get_ipython().run_line_magic('x', ''); display(a); c = a + 1", 3)
    assert run.namespace["c"] == 2 and "b" not in run.namespace
    assert run.failed == [[1, "ZeroDivisionError: division by zero"], [2, "Overran: "]]
    quiet = make_run(cell_timeout=1)
    runner.run_cell(quiet, "1 / 0", 0)
    assert quiet.failed == []


def test_progress_is_written_only_when_asked_for():
    silent = make_run()
    runner.progress(silent, "cell", 0)
    assert silent.out.getvalue() == ""
    told = make_run({"progress": "PROGRESS"})
    runner.progress(told, "cell", 3)
    runner.progress(told, "called", "1.1")
    assert told.out.getvalue() == "PROGRESS n0 cell 3\nPROGRESS n0 called 1.1\n"
    forged = make_run({"progress": ["not", "a", "string"]})
    runner.progress(forged, "cell", 0)
    assert forged.out.getvalue() == ""


def test_calls_of_part_survive_a_call_that_never_returns():
    def stubborn(x):
        if x < 0:
            while True:
                try:
                    while True:
                        pass
                except BaseException:
                    pass
        return x + 1

    got = runner.calls_of_part(stubborn, {"valid": [[1], [2], [-1], [3]], "invalid": [["a"]]}, 1)
    assert got["valid"] == [2, 3, {"__raised__": "Overran"}, {"__raised__": "Overran"}]
    assert got["invalid"] == [{"__raised__": "Overran"}]


def test_read_lines_stops_at_the_count_and_at_the_end():
    r, w = os.pipe()
    os.write(w, b"1\n2\n3\npartial")
    os.close(w)
    assert runner.read_lines(r, 2, 1) == [b"1", b"2", b"3"]  # the whole lines of what it read
    os.close(r)
    r, w = os.pipe()
    os.write(w, b"1\npartial")
    os.close(w)
    assert runner.read_lines(r, 5, 1) == [b"1"]
    os.close(r)


def test_answer_holds_calls_values_and_stopped_cells():
    run = make_run({"functions": {"1.1": {"function": "f", "valid": [[2]], "invalid": [[-1]]},
                                  "1.2": {"function": "absent", "valid": [], "invalid": []}},
                    "values": ["x", "missing", "arr"], "report": True})
    run.namespace.update(f=lambda v: v * 10 if v > 0 else int("bad"), x=4, arr=np.arange(3))
    run.stopped, run.exited = [2], [2]
    assert runner.answer(run) == {"functions": {"1.1": {"valid": [20], "invalid": [{"__raised__": "ValueError"}]},
                                                "1.2": {"missing": True}},
                                  "values": {"x": 4, "arr": [0, 1, 2]}, "stopped": [2], "exited": [2], "failed": []}


def test_fork_with_pipes_leaves_nothing_open_when_no_pipe_can_be_had(monkeypatch):
    opened = []
    real_pipe = os.pipe

    def one_pipe_only():
        if opened:
            raise OSError("EMFILE")
        opened.append(real_pipe())
        return opened[-1]

    monkeypatch.setattr(runner.os, "pipe", one_pipe_only)
    assert runner.fork_with_pipes() is None
    for fd in opened[0]:
        with pytest.raises(OSError):
            os.fstat(fd)


def test_the_whole_program_skips_a_cell_that_ends_its_process():
    """End to end (the visible check's unsandboxed run): a cell that exits is stopped, the cells after it
    run from the state before it, and the answer names it."""
    cells = ["a = 1", "import os\nos._exit(3)", "b = a + 1", "def f(x):\n    return x * b"]
    data = rerun(cells, {"functions": {"p": {"function": "f", "valid": [[3]], "invalid": []}}, "values": ["a", "b"]},
                 cell_timeout=5, timeout=60)
    assert data is not None, "no answer"
    assert data["values"] == {"a": 1, "b": 2} and data["functions"] == {"p": {"valid": [6], "invalid": []}}
    assert data["stopped"] == [1] and data["exited"] == [1]
    assert json.loads(json.dumps(data)) == data

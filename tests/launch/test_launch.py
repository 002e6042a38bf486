"""course.launch on real MPI ranks: values back by rank, errors and deadlocks named with their
ranks, and no process left behind after a timeout, an interrupt or a killed owner.

Every launch here uses 2-3 short-lived ranks (the machine is shared); times are never asserted
except as generous upper bounds on how long ending a launch may take.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from course import launch

HELPERS = "tests.launch.helpers"
ROOT = Path(__file__).resolve().parents[2]


def marked(mark):
    """Pids of processes whose environment has I47_MARK=mark (set by the test, inherited by ranks)."""
    needle = f"COURSE_TEST_MARK={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def wait_until(condition, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_each_rank_returns_its_value():
    result = launch.run(f"{HELPERS}:rank_and_size", 2.0, ranks=3, timeout=60)
    assert result.ok, result.reason
    assert [v["rank"] for v in result.values] == [0, 1, 2]
    assert {v["size"] for v in result.values} == {3}
    assert result.values[2]["data"].tolist() == [0.0, 2.0, 4.0]
    assert launch.run(f"{HELPERS}:sum_of_ranks", ranks=3, timeout=60).values == [3, 3, 3]


def test_a_notebook_function_is_shipped_as_source(tmp_path):
    namespace = {}
    exec(textwrap.dedent('''
        def scaled(comm, k):
            return np.full(2, comm.Get_rank() * k)
    '''), namespace)
    # a function with no importable module (as in a notebook) goes as source; inspect needs a file
    source = tmp_path / "cell.py"
    source.write_text("import numpy as np\n\ndef scaled(comm, k):\n    return np.full(2, comm.Get_rank() * k)\n")
    script = tmp_path / "script.py"
    script.write_text("result = comm.Get_rank() * 10\n")
    assert launch.run(script, ranks=2, timeout=60).values == [0, 10]
    import importlib.util

    spec = importlib.util.spec_from_file_location("__main__", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = launch.run(module.scaled, 3, ranks=2, timeout=60)
    assert result.ok, result.reason
    assert [v.tolist() for v in result.values] == [[0, 0], [3, 3]]


def test_a_rank_that_raises_is_named_and_ends_the_launch_early():
    mark = uuid.uuid4().hex
    result = launch.run(f"{HELPERS}:one_rank_raises", ranks=3, timeout=60, env={"COURSE_TEST_MARK": mark})
    assert not result.ok
    assert result.reason.startswith("rank 1 raised ValueError: chunk 3 went to the wrong neighbour")
    assert "Traceback" in result.tracebacks[1]
    assert result.seconds < 30  # ended by the failure, far before the 60 s timeout
    assert not result.timed_out
    assert marked(mark) == []
    with pytest.raises(launch.LaunchError, match="rank 1 raised"):
        result.raise_for_status()


@pytest.mark.parametrize("target, hows", [
    # the exit status is read only if the launcher sees the rank before gforker reaps it
    ("one_rank_exits", ("exited with status 3", "ended (os._exit, a crash or a signal)")),
    ("one_rank_crashes", ("crashed (Fatal Python error: Segmentation fault)",)),
], ids=["os._exit", "segfault"])
def test_a_rank_that_dies_is_named_and_the_others_are_stopped_at_once(target, hows):
    # MPICH's gforker sends SIGINT and SIGQUIT to every other rank when one exits non-zero: the ranks
    # ignore both, so rank 1 alone has ended when the launcher looks, and it is the one named
    mark = uuid.uuid4().hex
    result = launch.run(f"{HELPERS}:{target}", ranks=3, timeout=60, env={"COURSE_TEST_MARK": mark})
    assert not result.ok and not result.timed_out
    assert list(result.ended) == [1]
    assert result.reason in [f"rank 1 ended without returning a value or raising an error: its process {how}; "
                             "ranks 0, 2, waiting for it, were stopped" for how in hows]
    assert result.errors == {} and result.missing == [0, 1, 2]
    assert result.seconds < 30  # noticed at once, far before the 60 s timeout
    assert marked(mark) == []


def test_a_deadlock_times_out_with_its_ranks_and_leaves_no_process():
    mark = uuid.uuid4().hex
    result = launch.run(f"{HELPERS}:both_receive_first", ranks=2, timeout=3, env={"COURSE_TEST_MARK": mark})
    assert result.timed_out and not result.ok
    assert "timed out after 3 s: ranks 0, 1 had not finished" in result.reason
    assert result.missing == [0, 1]
    assert result.seconds < 3 + 10
    assert marked(mark) == []


def test_a_launch_stuck_before_mpi_started_says_no_code_ran(tmp_path):
    # a "Python" that never gets to MPI_Init: the reason blames start-up, not the student's code
    stalls = tmp_path / "python-that-stalls"
    stalls.write_text("#!/bin/sh\nexec sleep 600\n")
    stalls.chmod(0o755)
    mark = uuid.uuid4().hex
    result = launch.run(f"{HELPERS}:sum_of_ranks", ranks=2, timeout=3, python=str(stalls),
                        env={"COURSE_TEST_MARK": mark})
    assert result.timed_out and result.started == []
    assert "ranks 0, 1 never finished starting MPI (MPI_Init), so no code of yours ran" in result.reason
    assert marked(mark) == []


def test_ranks_that_ran_are_listed_as_started():
    result = launch.run(f"{HELPERS}:both_receive_first", ranks=2, timeout=3)
    assert result.started == [0, 1] and "had not finished (a deadlock" in result.reason


def test_a_result_that_would_run_code_is_refused(tmp_path):
    target = tmp_path / "created-by-unpickling"
    result = launch.run(f"{HELPERS}:hostile_result", str(target), ranks=2, timeout=60)
    assert not result.ok
    assert "cannot be read back" in result.reason and "io.open" in result.reason
    assert not target.exists()


def test_progress_reaches_the_bar(capsys):
    result = launch.run(f"{HELPERS}:reports_progress", 5, ranks=2, timeout=60, progress="sweep")
    assert result.ok, result.reason
    assert "5/5" in capsys.readouterr().err


def test_progress_can_feed_a_function():
    seen = []
    result = launch.run(f"{HELPERS}:reports_progress", 4, ranks=2, timeout=60, progress=lambda d, t: seen.append((d, t)))
    assert result.ok, result.reason
    assert seen and seen[-1] == (4, 4)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def _owner(mark, tmp_path):
    """A separate Python process (standing in for the notebook's kernel) that launches 2 sleeping ranks."""
    program = tmp_path / "owner.py"
    program.write_text(textwrap.dedent(f'''
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from course import launch
        launch.run("{HELPERS}:sleep_long", ranks=2, timeout=120, env={{"COURSE_TEST_MARK": {mark!r}}})
    '''))
    owner = subprocess.Popen([sys.executable, str(program)], cwd=ROOT)
    # the guard/launcher and both ranks carry the mark once they are up
    assert wait_until(lambda: len(marked(mark)) >= 3, 60), "the ranks never started"
    return owner


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["owner killed", "owner interrupted"])
def test_no_rank_outlives_its_owner(how, tmp_path):
    mark = uuid.uuid4().hex
    owner = _owner(mark, tmp_path)
    owner.send_signal(how)
    owner.wait(timeout=30)
    assert wait_until(lambda: marked(mark) == [], 10), f"left behind: {marked(mark)}"


def test_interrupt_in_the_owner_stops_the_ranks_and_propagates():
    mark = uuid.uuid4().hex

    def interrupt_soon():
        wait_until(lambda: len(marked(mark)) >= 3, 60)
        os.kill(os.getpid(), signal.SIGINT)

    import threading

    threading.Thread(target=interrupt_soon, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        launch.run(f"{HELPERS}:sleep_long", ranks=2, timeout=120, env={"COURSE_TEST_MARK": mark})
    assert marked(mark) == []


def test_bad_arguments_raise_value_errors_naming_them():
    with pytest.raises(ValueError, match="ranks"):
        launch.run(f"{HELPERS}:pid_of", ranks=0)
    with pytest.raises(ValueError, match="timeout"):
        launch.run(f"{HELPERS}:pid_of", timeout=0)
    with pytest.raises(ValueError, match="backend"):
        launch.run(f"{HELPERS}:pid_of", backend="ucx")
    with pytest.raises(ValueError, match="lambda"):
        launch.run(lambda comm: 1)
    with pytest.raises(ValueError, match="module:function"):
        launch.run("no_colon")


def test_backends_are_found_or_said_missing():
    found, missing = launch.available_backends(), launch.missing_backends()
    assert "mpi" in found
    # torch is optional: gloo and nccl are each either available or missing with a reason
    for name in ("gloo", "nccl"):
        assert (name in found) != (name in missing)
        assert found.get(name) or missing.get(name)

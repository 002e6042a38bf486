"""The fallback process manager: where MPICH's gforker is missing, course.launch uses Hydra's mpiexec.

Hydra is what the ``mpich`` wheel's plain ``mpiexec`` is, and what most clusters and hub images have.
It starts ranks through its proxy (each rank in a session of its own) and, unlike gforker, kills every
rank when one ends; the launcher passes ``-disable-auto-cleanup`` so it can still name the rank that
ended. These tests run Hydra for real, offline, on this machine.
"""

import sys
import uuid
from pathlib import Path

import pytest

from course import launch
from course.launch import processes

from .test_launch import HELPERS, marked, wait_until

VENV_BIN = Path(sys.executable).parent
HYDRA = VENV_BIN / "mpiexec.hydra"


def _fake_python_dir(tmp_path, names):
    """A folder standing for a virtual environment's bin/ that holds only the named launchers."""
    for name in names:
        (tmp_path / name).symlink_to(VENV_BIN / ("mpiexec.hydra" if name == "mpiexec" else name))
    (tmp_path / "python").symlink_to(sys.executable)
    return tmp_path


def test_gforker_is_chosen_first_and_hydra_where_gforker_is_missing(tmp_path, monkeypatch):
    both = tmp_path / "both"
    both.mkdir()
    _fake_python_dir(both, ["mpiexec.gforker", "mpiexec"])
    only_hydra = tmp_path / "hydra"
    only_hydra.mkdir()
    _fake_python_dir(only_hydra, ["mpiexec"])
    nothing = tmp_path / "none"
    nothing.mkdir()
    monkeypatch.setenv("PATH", str(nothing))  # nothing on PATH: only the folder beside "python" counts
    monkeypatch.setattr(sys, "executable", str(both / "python"))
    assert launch.find_mpiexec() == str(both / "mpiexec.gforker")
    monkeypatch.setattr(sys, "executable", str(only_hydra / "python"))
    assert launch.find_mpiexec() == str(only_hydra / "mpiexec")
    assert processes.is_hydra(str(only_hydra / "mpiexec"))  # a plain "mpiexec" is asked for its version
    assert not processes.is_hydra(str(VENV_BIN / "mpiexec.gforker"))
    monkeypatch.setattr(sys, "executable", str(nothing / "python"))
    with pytest.raises(FileNotFoundError, match="dev.py setup"):
        launch.find_mpiexec()


def test_a_run_through_hydra_gives_every_rank_and_names_a_dead_one():
    assert processes.launcher_options(str(HYDRA)) == ["-disable-auto-cleanup"]
    result = launch.run(f"{HELPERS}:rank_and_size", 2.0, ranks=3, timeout=60, mpiexec=str(HYDRA))
    assert result.ok, result.reason + result.launcher_output
    assert [v["rank"] for v in result.values] == [0, 1, 2]
    mark = uuid.uuid4().hex
    died = launch.run(f"{HELPERS}:one_rank_exits", ranks=3, timeout=60, mpiexec=str(HYDRA),
                      env={"COURSE_TEST_MARK": mark})
    assert not died.timed_out and died.reason.startswith("rank 1 ended without returning a value")
    assert died.reason.endswith("ranks 0, 2, waiting for it, were stopped")
    crashed = launch.run(f"{HELPERS}:one_rank_crashes", ranks=3, timeout=60, mpiexec=str(HYDRA),
                         env={"COURSE_TEST_MARK": mark})
    # Hydra kills the others when a rank is killed by a signal: the crash in rank 1's output names it
    assert crashed.reason.startswith("rank 1 ended without returning a value or raising an error: its process "
                                     "crashed (Fatal Python error: Segmentation fault)"), crashed.reason
    deadlock = launch.run(f"{HELPERS}:both_receive_first", ranks=2, timeout=3, mpiexec=str(HYDRA),
                          env={"COURSE_TEST_MARK": mark})
    assert deadlock.timed_out and "ranks 0, 1 had not finished" in deadlock.reason
    # Hydra's ranks start sessions of their own: the token sweep ends them, and its proxy
    assert wait_until(lambda: marked(mark) == [], 10), f"left behind: {marked(mark)}"

"""tests/progress.py: a wait ends when its condition holds, fails when the test's processes stop
working, and goes on as long as they work (up to its limit), whatever else loads the machine."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.progress import CpuMeter, Stalled, wait_until

BUSY = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass\nopen({path!r}, 'w').close()"


def test_a_wait_that_nothing_works_towards_fails_after_its_window():
    started = time.monotonic()
    with pytest.raises(Stalled, match="nothing moved for 1 s"):
        wait_until(lambda: False, "a file nobody writes", window=1.0, min_cpu=0.3, limit=60, poll=0.1)
    assert time.monotonic() - started < 10


def test_a_wait_goes_on_past_its_window_while_a_child_works(tmp_path):
    flag = tmp_path / "done"
    child = subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=4, path=str(flag))])
    try:
        waited = wait_until(flag.exists, "the busy child", window=1.5, min_cpu=0.02, limit=120, poll=0.1)
    finally:
        child.wait(60)
    assert waited > 1.5  # longer than one window: its CPU use kept the wait alive


def test_work_that_never_ends_stops_at_the_limit():
    child = subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=120, path="/dev/null")])
    try:
        with pytest.raises(Stalled, match="the limit"):
            wait_until(lambda: False, "an endless loop", window=5, min_cpu=0.01, limit=2, poll=0.1)
    finally:
        child.kill()
        child.wait()


def test_the_meter_counts_a_child_that_starts_after_it():
    meter = CpuMeter()
    child = subprocess.Popen([sys.executable, "-c", BUSY.format(seconds=1, path="/dev/null")])
    used = 0.0
    while child.poll() is None:
        used = meter.read()
        time.sleep(0.05)
    assert used > 0.05

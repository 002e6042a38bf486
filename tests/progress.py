"""Waiting on progress, not on the clock.

A test that waits for a server, a page or a grading run cannot know how long the wait should
take: on a 2-core machine shared with other jobs (load 6 to 12), JupyterLab's first page can take
minutes to load where it takes seconds alone. A fixed timeout then fails a healthy run, and a
timeout long enough for the busiest machine makes a broken run hang for as long.

So a wait here ends in one of three ways:

- **done**: the condition holds;
- **stalled**: the work it waits for has stopped moving: the processes this test started (its
  servers, kernels, sandboxes, the browser: every descendant of the test process) used less
  than ``min_cpu`` seconds of CPU in the last ``window`` seconds. A hung or crashed server, or a
  page that shows an error and does nothing, fails after ``window`` seconds, however busy the
  rest of the machine is (other people's processes are not counted);
- **over the limit**: a generous overall bound (``limit``) for work that moves but never ends
  (a loop), reported as such.

Every failure says which of these it was, how long it waited and how much CPU the work used.
"""

from __future__ import annotations

import os
import time
from collections import deque
from pathlib import Path
from typing import Callable, Dict, Optional

#: seconds without ``MIN_CPU`` of CPU in the test's processes after which a wait has stalled
WINDOW = 90.0
#: CPU seconds that count as moving within ``WINDOW`` (an idle JupyterLab, hub and browser use less)
MIN_CPU = 2.0
#: the overall bound of one wait, for work that keeps moving without ever finishing
LIMIT = 1800.0

_TICK = os.sysconf("SC_CLK_TCK")


class Stalled(AssertionError):
    """The awaited work stopped moving, or went on past the overall limit."""


def _children() -> Dict[int, list]:
    children: Dict[int, list] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def descendants(root: Optional[int] = None) -> set:
    """Every live process below ``root`` (default: this process), not ``root`` itself."""
    tree, found, todo = _children(), set(), [os.getpid() if root is None else root]
    while todo:
        for child in tree.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _cpu_seconds(pid: int) -> Optional[float]:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime


class CpuMeter:
    """CPU seconds used by the descendants of ``root`` since this meter was made.

    Each process's own time is counted by its increase since last seen, so a process that
    ends takes nothing back and one that starts counts from its first sample.
    """

    def __init__(self, root: Optional[int] = None):
        self.root = root
        self.total = 0.0
        self._seen: Dict[int, float] = {}
        self._primed = False  # the first reading is the baseline of the processes alive then
        self.read()
        self._primed, self.total = True, 0.0

    def read(self) -> float:
        for pid in descendants(self.root):
            now = _cpu_seconds(pid)
            if now is None:
                continue
            self.total += max(now - self._seen.get(pid, 0.0 if self._primed else now), 0.0)
            self._seen[pid] = now
        return self.total


def wait_until(done: Callable[[], bool], what: str, *, window: float = WINDOW, min_cpu: float = MIN_CPU,
               limit: float = LIMIT, poll: float = 1.0, root: Optional[int] = None) -> float:
    """Return (the seconds waited) once ``done()`` is true; raise :class:`Stalled` when the work stops
    moving for ``window`` seconds or the wait passes ``limit`` seconds.

    ``done`` may itself block for a short while (a Playwright wait of a few seconds); it is asked
    again until one of the three outcomes. ``what`` names the awaited thing in the failure.
    """
    meter, start = CpuMeter(root), time.monotonic()
    samples = deque([(start, 0.0)])
    while True:
        if done():
            return time.monotonic() - start
        now, used = time.monotonic(), meter.read()
        samples.append((now, used))
        while len(samples) > 1 and samples[1][0] <= now - window:
            samples.popleft()  # keep one sample at least ``window`` old
        waited = now - start
        if waited > limit:
            raise Stalled(f"{what}: still not done after {waited:.0f} s (the limit), although the test's "
                          f"processes kept working ({used:.1f} s of CPU)")
        oldest_time, oldest_used = samples[0]
        if now - oldest_time >= window and used - oldest_used < min_cpu:
            raise Stalled(f"{what}: nothing moved for {window:.0f} s (the test's processes used "
                          f"{used - oldest_used:.1f} s of CPU, under {min_cpu}); waited {waited:.0f} s in all")
        time.sleep(poll)


def _playwright_timeout():
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    return PlaywrightTimeout


def wait_for_locator(locator, what: str, state: str = "visible", step_ms: int = 3000, **kwargs) -> float:
    """``locator.wait_for(state=...)`` for as long as the page and its servers are making progress."""
    timeout = _playwright_timeout()

    def done() -> bool:
        try:
            locator.wait_for(state=state, timeout=step_ms)
            return True
        except timeout:
            return False

    return wait_until(done, what, poll=0, **kwargs)


def wait_for_url(page, pattern: str, what: str, step_ms: int = 3000, **kwargs) -> float:
    """``page.wait_for_url(pattern)`` for as long as the page and its servers are making progress."""
    timeout = _playwright_timeout()

    def done() -> bool:
        try:
            page.wait_for_url(pattern, timeout=step_ms)
            return True
        except timeout:
            return False

    return wait_until(done, what, poll=0, **kwargs)


def wait_for_function(page, expression: str, what: str, arg=None, step_ms: int = 3000, **kwargs):
    """``page.wait_for_function(expression, arg)`` while progress is made; returns its JSHandle's value."""
    timeout = _playwright_timeout()
    result = []

    def done() -> bool:
        try:
            result.append(page.wait_for_function(expression, arg=arg, timeout=step_ms, polling=250))
            return True
        except timeout:
            return False

    wait_until(done, what, poll=0, **kwargs)
    return result[0]

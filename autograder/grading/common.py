"""What the parts of grading share: words for cell numbers, a fresh file, the phase clock.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Dict, Optional


MAX_NOTEBOOK_BYTES = 50 * 2**20


#: how many cells that hang the kernel a submission may have before its kernel-read parts are lost
MAX_KERNEL_RERUNS = 2


#: Why a cell ended a clean-room run, as a row's reason and its notes say it.
ENDED_RUN = "ended the grading run when your code was run again to grade it (it killed or stopped the processes " \
            "that run your notebook)"


def cells_words(numbers, one: str, many: str) -> str:
    """``"cell 7 " + one`` or ``"cells 22 and 23 " + many``: a reason's cells, the verb agreeing.

    >>> cells_words([7], "has a syntax error", "have a syntax error")
    'cell 7 has a syntax error'
    >>> cells_words([1, 22, 23], "was stopped", "were stopped")
    'cells 1, 22 and 23 were stopped'
    """
    numbers = [str(n) for n in numbers]
    if len(numbers) == 1:
        return f"cell {numbers[0]} {one}"
    return f"cells {', '.join(numbers[:-1])} and {numbers[-1]} {many}"


def _fresh(path: Path) -> Path:
    """``path``, its old file removed: nbgrader leaves ``autograded/`` read-only (0444), which a
    grader that is not root (an instructor on a hub, after the formgrader's Autograde button)
    cannot open for writing; the folder is the instructor's, so the file can be replaced."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    return path


class PhaseClock:
    """Wall seconds of each phase of one submission, for ``grades.json`` (``phases``) and the benchmark.

    ``lap(name)`` charges the time since the previous lap to ``name``; ``add`` records a
    duration measured elsewhere (the kernel's and the clean room's own clocks, which run
    side by side inside the ``sandbox`` phase).
    """

    def __init__(self):
        self.seconds: Dict[str, float] = {}
        self._last = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[name] = round(now - self._last, 3)
        self._last = now

    def add(self, name: str, seconds: Optional[float]) -> None:
        if seconds is not None:
            self.seconds[name] = round(float(seconds), 3)

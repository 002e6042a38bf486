"""What every grading engine shares: the limit options and the throw-away course root.

``class``, ``single`` and the Gradescope bundle take the same seed and limits and build a
gradebook the same way; they live here, below :mod:`autograder.cli` and
:mod:`autograder.gradescope`, so neither imports the other.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

from . import sandbox


def limits(args) -> sandbox.Limits:
    return sandbox.Limits(cell_timeout=args.cell_timeout, submission_timeout=args.timeout,
                          memory_bytes=args.memory_mb * 2**20, processes=args.max_processes,
                          cpu_seconds=max(args.timeout, 1), scratch_bytes=args.scratch_mb * 2**20)


def limit_options(p: argparse.ArgumentParser) -> None:
    """The probe seed and the limits (class and single mode, and the Gradescope bundle)."""
    p.add_argument("--seed", type=int, default=None, help="probe seed (default: random, recorded)")
    p.add_argument("--cell-timeout", type=int, default=60, help="seconds per cell")
    p.add_argument("--timeout", type=int, default=300, help="seconds per submission")
    p.add_argument("--memory-mb", type=int, default=4096, help="address-space limit per process")
    p.add_argument("--max-processes", type=int, default=256, help="process limit per submission")
    p.add_argument("--scratch-mb", type=int, default=512,
                   help="size of the in-memory folder a submission may write to (bubblewrap only)")


@contextlib.contextmanager
def temporary_course(root: Path, assignment: str) -> Iterator[Path]:
    """A throw-away course root with a gradebook for ``assignment`` (single mode without one), removed
    on exit, also when making it fails."""
    source = root / "source" / assignment
    if not source.is_dir() or not (root / "nbgrader_config.py").is_file():
        raise ValueError(f"course_root {str(root)!r} has neither a gradebook with {assignment!r} "
                         f"nor source/{assignment} and nbgrader_config.py to make one")
    with tempfile.TemporaryDirectory(prefix="autograder-course-") as scratch:
        tmp = Path(scratch)
        shutil.copy(root / "nbgrader_config.py", tmp / "nbgrader_config.py")
        shutil.copytree(source, tmp / "source" / assignment)
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        result = subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", assignment,
                                 "--force", "--log-level=ERROR"], cwd=tmp, capture_output=True, text=True,
                                env=dict(os.environ, PATH=path), timeout=600)
        if result.returncode != 0:
            raise ValueError(f"nbgrader generate_assignment failed: {result.stderr[-500:]}")
        yield tmp

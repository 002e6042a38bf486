"""Generate release notebooks with nbgrader and compare them with what is committed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

ROOT = Path(__file__).resolve().parents[2]


def generate_release(names: Iterable[str], course_root: Path = ROOT, *, db: bool = False,
                     options: Optional[Dict[str, Sequence[str]]] = None) -> None:
    """Run ``nbgrader generate_assignment`` for ``names`` in ``course_root`` (which holds nbgrader_config.py).

    ``db=False`` passes ``--no-db`` so no gradebook is created or changed; ``options`` maps an
    assignment to its extra options (an activity's ``release_options``).

    When ``names`` are all of ``source/`` and share their options (a fresh copy, as
    ``check-release`` and the release tests make), one nbgrader process generates them
    all (its assignment id is a glob): each process spends about 2.5 s of CPU in imports.
    """
    names = list(names)
    by_options: Dict[tuple, List[str]] = {}
    for name in names:
        by_options.setdefault(tuple((options or {}).get(name, ())), []).append(name)
    source = Path(course_root) / "source"
    present = sorted(p.name for p in source.iterdir() if p.is_dir()) if source.is_dir() else []
    if len(by_options) == 1 and len(names) > 1 and sorted(names) == present:
        runs = [("*", next(iter(by_options)))]
    else:
        runs = [(name, tuple((options or {}).get(name, ()))) for name in names]
    for pattern, extra in runs:
        cmd = [sys.executable, "-m", "nbgrader", "generate_assignment", pattern, "--force",
               "--log-level=WARN"]
        if not db:
            cmd.append("--no-db")
        cmd += list(extra)
        env = dict(os.environ, PYTHONHASHSEED="0")
        result = subprocess.run(cmd, cwd=str(course_root), capture_output=True, text=True, env=env)
        if result.returncode != 0:
            raise RuntimeError(f"nbgrader generate_assignment {pattern} failed:\n{result.stdout}\n{result.stderr}")


def comparable_cells(path: Path) -> List[dict]:
    """The parts of a release notebook that must match: cell type, source and nbgrader metadata."""
    nb = json.loads(Path(path).read_text())
    return [{"cell_type": c["cell_type"], "source": "".join(c["source"]) if isinstance(c["source"], list) else c["source"],
             "nbgrader": c.get("metadata", {}).get("nbgrader")} for c in nb["cells"]]


def release_differences(names: Iterable[str], fresh_root: Path, committed_root: Path = ROOT) -> List[str]:
    """Names of assignments whose release in ``fresh_root`` differs from ``committed_root``."""
    stale = []
    for name in names:
        fresh = fresh_root / "release" / name / f"{name}.ipynb"
        committed = committed_root / "release" / name / f"{name}.ipynb"
        if not committed.exists() or comparable_cells(fresh) != comparable_cells(committed):
            stale.append(name)
    return stale

"""One release (issue 26): the guide's plain ``nbgrader generate_assignment NAME --force``, with
nothing but the course's ``nbgrader_config.py``, writes exactly the committed ``release/`` for every
assignment, labs and chapters alike (whose answer cells get the activity's stub, not ``raise NotImplementedError()``)."""

from __future__ import annotations

import shutil

import pytest

from course.assess.release import comparable_cells, release_differences

from .course_dir import ROOT, run_nbgrader

pytestmark = pytest.mark.slow
ASSIGNMENTS = sorted(p.name for p in (ROOT / "source").iterdir() if (p / f"{p.name}.ipynb").is_file())


def test_every_assignment_is_listed():
    labs = [name for name in ASSIGNMENTS if name.startswith(("lab", "tutorial"))]
    assert len(ASSIGNMENTS) >= 13 and len(labs) >= 3, ASSIGNMENTS


def test_the_guides_generate_assignment_reproduces_every_committed_release(tmp_path):
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path / "nbgrader_config.py")
    for name in ASSIGNMENTS:
        shutil.copytree(ROOT / "source" / name, tmp_path / "source" / name)
        run_nbgrader(tmp_path, "generate_assignment", name, "--force")  # as the guide writes it
    assert release_differences(ASSIGNMENTS, tmp_path) == []
    for name in ASSIGNMENTS:
        cells = comparable_cells(tmp_path / "release" / name / f"{name}.ipynb")
        # labs and chapters: "Run All" runs every answer cell (the activity's stub raises nothing)
        assert not any("raise NotImplementedError()" in c["source"] for c in cells), name

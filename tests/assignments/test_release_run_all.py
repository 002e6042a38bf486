"""Run All on a blank workbook chapter (issue 24): every exercise runs, none raises.

The release's answer cells hold the chapter's stub (``# YOUR CODE HERE`` and ``pass``), not
nbgrader's ``raise NotImplementedError()``. Executed headless with no answer, each chapter's
release notebook runs to its last cell; each visible check says "not answered yet" (a Build
function whose body is still the stub is no answer) and counts no attempt; the hidden tests
of a blank notebook score nothing, each with a reason.

The twelve notebooks share one kernel, restarted between chapters, to keep this fast.
"""

from __future__ import annotations

import ast
import json
import re

import nbformat
import pytest

from course.activities import SYLLABUS
from course.assess.activity import Chapter
from course.notebook_api import REGISTRY

from .nbgrader_course import ROOT

pytestmark = pytest.mark.slow

CHAPTERS = [a.name for a in SYLLABUS.activities if isinstance(a, Chapter)]


def _release(name: str) -> nbformat.NotebookNode:
    return nbformat.read(ROOT / "release" / name / f"{name}.ipynb", as_version=4)


def test_twelve_chapters():
    assert len(CHAPTERS) == 12, CHAPTERS


@pytest.mark.parametrize("name", CHAPTERS)
def test_every_release_code_cell_parses_and_none_raises_by_itself(name):
    for cell in _release(name).cells:
        if cell.cell_type == "code":
            ast.parse(cell.source)
            assert "NotImplementedError" not in cell.source, cell.source


def test_run_all_on_every_blank_chapter_runs_every_exercise(tmp_path, monkeypatch):
    from nbclient import NotebookClient

    ledger = tmp_path / "ledger.json"
    monkeypatch.setenv("COURSE_LEDGER", str(ledger))
    monkeypatch.delenv("COURSE_AUTOPREDICT", raising=False)
    for name in CHAPTERS:
        nb = _release(name)
        work = tmp_path / name
        work.mkdir()
        NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=False,
                       resources={"metadata": {"path": str(work)}}).execute()
        outputs = {cell.get("metadata", {}).get("nbgrader", {}).get("grade_id"): "".join(
            o.get("text", "") for o in cell.get("outputs", [])) for cell in nb.cells if cell.cell_type == "code"}
        checks = {gid: text for gid, text in outputs.items() if gid and gid.endswith("_check")}
        silent = [c for c in nb.cells if c.cell_type == "code" and c.get("metadata", {}).get("nbgrader", {}).get("solution")]
        assert silent and not any(c.outputs for c in silent), name  # a blank answer cell shows nothing (no 'Ellipsis')
        exercises = [ex for ex in SYLLABUS.by_name[name].exercises if any(c.role == "check" for c in ex.cells(ex.spec))]
        assert len(checks) == len(exercises) > 0, (name, sorted(checks))
        for gid, text in checks.items():
            assert re.search(r"not answered yet", text), (name, gid, text)
            assert "attempt" not in text.replace("counts no attempt", ""), (name, gid, text)
    entries = json.loads(ledger.read_text()) if ledger.exists() else {}
    attempts = {k: v for k, v in entries.items() if isinstance(v, dict) and v.get("attempts")}
    assert not attempts, attempts  # no check of a blank notebook counted an attempt


def test_a_blank_answer_scores_nothing_with_a_reason():
    """The hidden tests' judge on a blank chapter's namespace: each part 0, and says why."""
    namespace = {}
    for name in CHAPTERS:
        for cell in _release(name).cells:
            if cell.cell_type == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
                exec(compile(cell.source, name, "exec"), namespace)  # the stubs define stub functions only
    parts = {gid: part for gid, part in REGISTRY.items() if part.assignment in CHAPTERS}
    assert len(parts) > 50
    for gid, part in parts.items():
        verdict = part.grade(dict(namespace), 0)
        assert verdict.score == 0 and verdict.reason, (gid, verdict)
        if part.function is not None:  # a stub function is a blank answer, and the reason says so
            assert verdict.code == "not_answered" and "is not written yet" in verdict.reason, (gid, verdict)

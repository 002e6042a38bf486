"""Which cells the visible check runs again: the notebook as grading will read it.

With the notebook file (``JPY_SESSION_NAME``): its code cells in order without test cells, each as the
kernel last ran it if that was after the save; new cells run after the save follow the cell run before
them; cells run before the save that the file lacks were deleted. Without the file: the cells the
kernel ran, first-run order, latest source.
"""

from __future__ import annotations

import json
import os

import pytest

from course.assess import cleanroom_protocol as cleanroom


def _nb(path, cells):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"id": cid, "cell_type": "code", "source": src, "metadata": meta, "outputs": [], "execution_count": None}
        for cid, src, meta in cells]}
    path.write_text(json.dumps(nb))


@pytest.fixture
def kernel(monkeypatch):
    monkeypatch.setattr(cleanroom, "record_cells", lambda: True)
    runs = []
    monkeypatch.setattr(cleanroom, "_RUNS", runs)
    return runs


CHECK = {"nbgrader": {"grade_id": "ex_check", "locked": True}}
TEST = {"nbgrader": {"grade_id": "ex", "grade": True, "solution": False, "locked": True}}
ANSWER = {"nbgrader": {"grade_id": "ex_answer", "solution": True}}


def test_file_cells_as_the_kernel_last_ran_them_after_the_save(tmp_path, monkeypatch, kernel):
    path = tmp_path / "nb.ipynb"
    _nb(path, [("a", "x = 1", ANSWER), ("t", "hidden()", TEST), ("b", "y = x + 1", {}), ("c", "check()", CHECK)])
    saved = 1_000_000.0
    os.utime(path, (saved, saved))
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    kernel += [("d", "w = 4", saved - 20),        # ran, then deleted before the save
               ("b", "y = 2", saved - 10),        # ran, then edited and saved: the file's version counts
               ("a", "x = 5", saved + 10),        # edited and run after the save: the kernel's version
               ("n", "z = 3", saved + 20),        # a new cell, not saved yet, run after a
               ("c", "check()", saved + 30)]
    sources, where = cleanroom.student_cells("ex_check")
    assert where == str(path)
    assert sources == ["x = 5", "z = 3", "y = x + 1", "check()"]


def test_a_file_that_is_not_this_notebook_is_not_used(tmp_path, monkeypatch, kernel):
    path = tmp_path / "other.ipynb"
    _nb(path, [("a", "x = 1", {})])
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    kernel += [("a", "x = 2", 0.0), (None, "y = 3", 0.0), ("a", "x = 4", 0.0)]
    assert cleanroom.student_cells("ex_check") == (["x = 4", "y = 3"], "the cells this kernel ran")


def test_without_a_kernel_there_are_no_cells(monkeypatch):
    monkeypatch.setattr(cleanroom, "record_cells", lambda: False)
    assert cleanroom.student_cells("ex_check") is None


def test_the_rerun_has_no_course_package_and_names_the_failing_cell(tmp_path):
    data = cleanroom.rerun(["x = 1", "import course.core\ny = 2", "from course.exercises import check\ncheck('1.1', globals())",
                            "z = y"], {"functions": {}, "values": ["x", "y", "z"]}, cwd=str(tmp_path))
    assert data["values"] == {"x": 1}
    assert [i for i, _ in data["failed"]] == [1, 3]
    assert "No module named 'course.core'" in data["failed"][0][1] and "NameError" in data["failed"][1][1]

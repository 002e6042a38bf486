"""Fast tests of the autograder's pieces (no kernels)."""

from __future__ import annotations

import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from autograder.records import grades as report
from autograder.isolation import sandbox
from autograder.grading.feedback import scrub_test_outputs
from autograder.grading.submissions import discover, in_shard, parse_shard
from course.assess.registry import Verdict


def test_shards_partition_the_class():
    students = [f"s{i:03d}" for i in range(300)]
    shards = [[s for s in students if in_shard(s, k, 4)] for k in (1, 2, 3, 4)]
    assert sorted(sum(shards, [])) == students
    assert all(50 < len(s) < 100 for s in shards)  # a hash spreads them roughly evenly


@pytest.mark.parametrize("text", ["0/3", "4/3", "2", "a/b", ""])
def test_bad_shard_is_rejected(text):
    with pytest.raises(ValueError, match="K/N"):
        parse_shard(text)


def test_in_shard_validates():
    with pytest.raises(ValueError, match="shard must be in 1..2"):
        in_shard("x", 3, 2)


def test_discover_nbgrader_layout(tmp_path):
    (tmp_path / "ann" / "hw").mkdir(parents=True)
    nbformat.write(new_notebook(), str(tmp_path / "ann" / "hw" / "hw.ipynb"))
    (tmp_path / "ann" / "hw" / "timestamp.txt").write_text("2026-11-20 10:00:00")
    (tmp_path / "ben" / "hw").mkdir(parents=True)
    (tmp_path / "cat" / "other").mkdir(parents=True)
    subs = {s.student: s for s in discover(tmp_path, "hw")}
    assert subs["ann"].notebook.name == "hw.ipynb" and subs["ann"].timestamp.startswith("2026")
    assert subs["ben"].status == "missing" and "hw.ipynb" in subs["ben"].problem
    assert subs["cat"].status == "missing" and "you did not submit hw" in subs["cat"].problem


def test_discover_renamed_notebook_is_graded_with_a_note(tmp_path):
    (tmp_path / "ann" / "hw").mkdir(parents=True)
    nbformat.write(new_notebook(), str(tmp_path / "ann" / "hw" / "hw (1).ipynb"))
    (sub,) = discover(tmp_path, "hw")
    assert sub.notebook.name == "hw (1).ipynb" and "expected the name hw.ipynb" in sub.notes[0]


def test_a_zip_is_unpacked_into_the_callers_folder_and_nothing_is_left_in_tmp(tmp_path, monkeypatch):
    """Zipped submissions go into the folder the caller removes (class mode: a temporary one for the
    run); discover() makes no folder of its own in the system's temporary folder."""
    import tempfile
    import zipfile

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    with zipfile.ZipFile(inbox / "ann.zip", "w") as zf:
        zf.writestr("hw.ipynb", nbformat.writes(new_notebook()))
    with pytest.raises(ValueError, match="needs a workdir"):
        discover(inbox, "hw")
    unzip = tmp_path / "unzip"
    unzip.mkdir()
    (sub,) = discover(inbox, "hw", unzip)
    assert sub.notebook.is_file() and unzip in sub.notebook.parents
    assert list(tmp.iterdir()) == []


def test_a_throw_away_course_is_removed_also_when_making_it_fails(tmp_path, monkeypatch):
    import tempfile

    from autograder.engines.options import temporary_course

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    root = tmp_path / "course"
    (root / "source" / "hw").mkdir(parents=True)
    (root / "source" / "hw" / "hw.ipynb").write_text("{not a notebook")  # nbgrader cannot release it
    (root / "nbgrader_config.py").write_text("")
    with pytest.raises(ValueError, match="generate_assignment failed"):
        with temporary_course(root, "hw"):
            pass
    assert list(tmp.iterdir()) == []


def test_discover_requires_a_folder(tmp_path):
    with pytest.raises(ValueError, match="submissions must be an existing folder"):
        discover(tmp_path / "nope", "hw")


def test_sandbox_reads_only_the_allow_list(tmp_path):
    cmd = sandbox.bwrap_command(str(tmp_path), ["python"], uid=61000)
    binds = [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--ro-bind"]
    assert not any(b.endswith("/source") or b.endswith("/submitted") or "gradebook" in b for b in binds)
    assert "--unshare-net" in cmd and "--die-with-parent" in cmd and "--clearenv" in cmd
    assert "--bind" not in cmd  # nothing of the grader's disk is writable
    assert cmd[cmd.index("--tmpfs") - 3: cmd.index("--tmpfs") + 2] == [
        "0777", "--size", str(512 * 2**20), "--tmpfs", sandbox.SCRATCH]  # a capped, in-memory scratch
    assert cmd[cmd.index(str(tmp_path)) - 1: cmd.index(str(tmp_path)) + 2] == [
        "--ro-bind", str(tmp_path), sandbox.SCRATCH_INPUT]  # the prepared copy, read-only
    assert cmd[-1] == "python" and "exec" in cmd[-3]  # filled, then the command runs
    assert "--reuid=61000" in cmd  # root drops to the slot's own uid


def test_limits_validate():
    with pytest.raises(ValueError, match="cell_timeout must be a whole number >= 1"):
        sandbox.Limits(cell_timeout=0)


def test_feedback_replaces_test_outputs():
    test = new_code_cell("### BEGIN HIDDEN TESTS\nassert x == 42\n### END HIDDEN TESTS",
                         metadata={"nbgrader": {"grade": True, "solution": False, "grade_id": "t1"}})
    test.outputs = [new_output("error", ename="AssertionError", evalue="42", traceback=["x == 42"])]
    judged = new_code_cell("", metadata={"nbgrader": {"grade": True, "solution": False, "grade_id": "t2"}})
    nb = new_notebook(cells=[test, judged])
    scrub_test_outputs(nb, {"t2": Verdict(1.0, "correct")})
    assert nb.cells[0].outputs[0]["text"] == "test cell failed (AssertionError)\n"
    assert nb.cells[1].outputs[0]["text"] == "1 of 1 points: correct\n"


def _result(student, points):
    return {"student": student, "assignment": "hw", "status": "graded", "reason": "graded",
            "score": points, "max_score": 1.0,
            "parts": [{"part": "p", "exercise": "1.1", "kind": "derive", "points": points, "max_points": 1.0,
                       "status": "judged", "reason": "r", "kernel_points": points}]}


def test_merge_combines_and_rejects_duplicates(tmp_path):
    report.write([_result("a", 1.0)], tmp_path / "s1", {"assignment": "hw", "shard": "1/2"})
    report.write([_result("b", 0.0)], tmp_path / "s2", {"assignment": "hw", "shard": "2/2"})
    merged = report.merge([tmp_path / "s1", tmp_path / "s2" / "grades.json"], tmp_path / "m")
    assert [r["student"] for r in merged["students"]] == ["a", "b"]
    assert json.loads((tmp_path / "m" / "grades.json").read_text())["shard"] == "merged"
    assert (tmp_path / "m" / "grades.csv").read_text().count("\n") == 3
    with pytest.raises(ValueError, match="more than one shard"):
        report.merge([tmp_path / "s1", tmp_path / "s1"], tmp_path / "m2")


def test_summary_table_lists_every_part():
    text = report.summary_table([_result("a", 1.0)])
    assert "a / hw: graded - 1 of 1 points" in text and "1/1" in text


def test_feedback_says_what_the_visible_check_compared(monkeypatch):
    """A Derive part's feedback must describe the visible check the student really had: against
    their own key (variants) by default, type and units only in exam mode; a lab part has none."""
    import course.assess.variants as variants
    from autograder.grading.feedback import part_summary

    text = part_summary("ch02_ex2_1", 1.0, Verdict(0.0, "`accum_steps` does not match the expected value"))
    assert text.startswith("0 of 1 points: `accum_steps` does not match")
    assert "key for your own numbers" in text and "order of magnitude" not in text
    monkeypatch.setattr(variants, "exam_mode", lambda assignment: True)
    assert "type and units only (exam mode)" in part_summary("ch02_ex2_1", 1.0, Verdict(1.0, "correct"))
    assert "visible check" not in part_summary("lab05_part3_async_saves", 1.0, Verdict(1.0, "correct")).lower()


@pytest.mark.parametrize("numbers, expected", [
    ([7], "cell 7 has a syntax error"),
    ([22, 23], "cells 22 and 23 have a syntax error"),
    ([1, 22, 23], "cells 1, 22 and 23 have a syntax error"),
])
def test_a_reason_names_its_cells_with_a_verb_that_agrees(numbers, expected):
    # a student read "cell 22, 23 has a syntax error" in a grading run with two broken cells
    from autograder.grading.grader import cells_words

    assert cells_words(numbers, "has a syntax error", "have a syntax error") == expected

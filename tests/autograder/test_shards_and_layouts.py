"""Class mode on a folder of notebooks and zips; 3 shards merged equal one unsharded run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

import nbformat
import pytest

from .course_dir import CHAPTER, make_course, release, solution

pytestmark = pytest.mark.slow


def _cli(*args, tmp):
    """Run the CLI with ``tmp`` as its temporary folder: it must leave nothing there (no unzipped
    submissions, no throw-away course)."""
    proc = subprocess.run([sys.executable, "-m", "autograder", *args], capture_output=True, text=True,
                          timeout=900, env=dict(os.environ, TMPDIR=str(tmp)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert list(tmp.iterdir()) == [], f"left in the temporary folder: {list(tmp.iterdir())}"
    return proc


@pytest.fixture(scope="module")
def flat_class(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("shards") / "course")
    inbox = root / "inbox"
    inbox.mkdir()
    nbformat.write(solution(root, student="ada"), str(inbox / "ada.ipynb"))
    nbformat.write(release(root), str(inbox / "bob.ipynb"))
    with zipfile.ZipFile(inbox / "cy.zip", "w") as zf:
        zf.writestr(f"work/{CHAPTER}.ipynb", nbformat.writes(solution(root, student="cy")))
        zf.writestr("../escape.txt", "zip slip")
    (inbox / "dee.zip").write_bytes(b"not a zip")
    common = [CHAPTER, str(inbox), "--course-root", str(root), "--seed", "3", "--workers", "2",
              "--no-progress", "--no-feedback"]
    tmp = root.parent / "tmp"
    tmp.mkdir()
    _cli("class", *common, "--out", str(root / "all"), tmp=tmp)
    for k in (1, 2, 3):
        _cli("class", *common, "--shard", f"{k}/3", "--out", str(root / f"shard{k}"), tmp=tmp)
    _cli("merge", *[str(root / f"shard{k}") for k in (1, 2, 3)], "--out", str(root / "merged"), tmp=tmp)
    return root


def _students(path):
    data = json.loads((path / "grades.json").read_text())
    for row in data["students"]:
        row.pop("seconds"), row.pop("phases")  # wall times differ from run to run
    return data["students"]


def test_three_shards_merged_equal_one_run(flat_class):
    whole = _students(flat_class / "all")
    assert [r["student"] for r in whole] == ["ada", "bob", "cy", "dee"]
    assert _students(flat_class / "merged") == whole
    assert (flat_class / "merged" / "grades.csv").read_text() == (flat_class / "all" / "grades.csv").read_text()
    shard_sizes = [len(_students(flat_class / f"shard{k}")) for k in (1, 2, 3)]
    assert sum(shard_sizes) == 4


def test_flat_and_zip_layouts_are_graded(flat_class):
    rows = {r["student"]: r for r in _students(flat_class / "all")}
    assert rows["ada"]["score"] == rows["cy"]["score"] == 8.0
    assert rows["bob"]["score"] == 0 and rows["bob"]["status"] == "graded"
    assert rows["dee"]["status"] == "unreadable" and "zip" in rows["dee"]["reason"]
    assert not (flat_class / "escape.txt").exists()

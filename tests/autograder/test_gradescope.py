"""The Gradescope bundle, run as Gradescope runs it, grades like ``course-autograde class``.

Each submission gets a fresh root laid out as Gradescope's harness lays out ``/autograder``
(the zip unpacked in ``source/``, ``run_autograder`` copied to the root, the student's files in
``submission/``, ``submission_metadata.json``); ``run_autograder`` runs with ``AUTOGRADER_ROOT``
pointing there. The same notebooks go through class mode with the same seed and limits.
"""

from __future__ import annotations

import copy
import json
import shutil
import sqlite3
import stat
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from autograder.engines import gradescope

from . import attacks
from .conftest import LIMITS
from .course_dir import (CHAPTER, ROOT, grade_id, make_course, release, solution, submit, with_first_answer,
                         with_wrong_first_answer)

SEED = "5"


def _with_answer(nb, answer_id: str, code: str):
    nb = copy.deepcopy(nb)
    next(c for c in nb.cells if grade_id(c) == answer_id).source = code
    return nb


def _class_of(root: Path, results_path: Path) -> dict:
    """student email -> notebook (or raw bytes, or None for no notebook)."""
    rel = release(root)
    ada = solution(root, student="ada@uni.edu")
    return {
        "ada@uni.edu": ada,                                                            # honest
        "bob@uni.edu": with_wrong_first_answer(solution(root, student="bob@uni.edu")),  # wrong
        "cy@uni.edu": copy.deepcopy(ada),                                              # copied from ada
        "eve@uni.edu": with_first_answer(rel, attacks.MONKEYPATCH),                    # hostile
        "fay@uni.edu": with_first_answer(rel, attacks.OS_EXIT),                        # hostile
        "gus@uni.edu": _with_answer(rel, "ch02_ex2_4_required_accum_steps_answer",     # hostile
                                    attacks.FORGED_RESULT_LINES),
        # hostile on Gradescope's own layout: a perfect results.json and new settings, written early
        "hal@uni.edu": with_first_answer(rel, attacks.write_outside(
            [results_path, results_path.parents[1] / "source" / "settings.json"])),
        "ivy@uni.edu": b'{"cells": [ {"cell_type": "code", ',                         # broken file
        "jo@uni.edu": None,                                                            # no notebook
    }


def _gradescope_root(base: Path, bundle: Path, student: str, work) -> Path:
    root = base / student
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")  # as Gradescope's image build
    (root / "run_autograder").chmod(0o755)
    (root / "submission").mkdir()
    if isinstance(work, bytes):
        (root / "submission" / f"{CHAPTER}.ipynb").write_bytes(work)
    elif work is None:
        (root / "submission" / "notes.txt").write_text("I forgot the notebook")
    else:
        nbformat.write(work, str(root / "submission" / f"{CHAPTER}.ipynb"))
    (root / "submission_metadata.json").write_text(json.dumps({
        "id": 123456, "created_at": "2026-11-20T14:22:32.365935-07:00",
        "assignment": {"id": 25828, "title": "Chapter 2", "total_points": "8.0"},
        "users": [{"email": student, "id": 1000 + len(student), "name": student.split("@")[0].title()}],
        "previous_submissions": []}))
    return root


def _run_autograder(root: Path) -> subprocess.CompletedProcess:
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "AUTOGRADER_ROOT": str(root),
           "AUTOGRADER_PYTHON": sys.executable, "HOME": str(root)}
    return subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=900)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("gradescope")
    root = make_course(base / "course")
    bundle = base / "autograder.zip"
    proc = subprocess.run([sys.executable, "-m", "autograder", "gradescope", CHAPTER, "--course-root", str(root),
                           "--out", str(bundle), "--seed", SEED, *LIMITS], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    roots = base / "roots"
    work = _class_of(root, roots / "hal@uni.edu" / "results" / "results.json")
    for student, nb in work.items():
        if isinstance(nb, bytes):
            submit(root, student, raw=nb)
        else:
            submit(root, student, nb)
    cmd = [sys.executable, "-m", "autograder", "class", CHAPTER, "--course-root", str(root), "--out",
           str(root / "out"), "--workers", "2", "--seed", SEED, "--no-progress", "--no-feedback", *LIMITS]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    class_rows = {r["student"]: r for r in json.loads((root / "out" / "grades.json").read_text())["students"]}
    gs_roots = {student: _gradescope_root(roots, bundle, student, nb) for student, nb in work.items()}
    with ThreadPoolExecutor(2) as pool:
        procs = dict(zip(gs_roots, pool.map(_run_autograder, gs_roots.values())))
    return {"root": root, "bundle": bundle, "class": class_rows, "procs": procs, "roots": gs_roots,
            "results": {s: json.loads((r / "results" / "results.json").read_text())
                        for s, r in gs_roots.items() if (r / "results" / "results.json").is_file()}}


def test_every_submission_gets_a_results_json(graded):
    assert sorted(graded["results"]) == sorted(graded["roots"])
    for student, proc in graded["procs"].items():
        assert proc.returncode == 0 and "wrote" in proc.stdout, (student, proc.stderr[-2000:])


def test_same_points_as_class_mode(graded):
    for student, data in graded["results"].items():
        row = graded["class"][student]
        assert data["score"] == pytest.approx(row["score"]), student
        by_part = {t["name"].split()[-1]: t for t in data["tests"]}
        assert sorted(by_part) == sorted(p["part"] for p in row["parts"])
        for part in row["parts"]:
            test = by_part[part["part"]]
            assert test["score"] == pytest.approx(part["points"]) and test["max_score"] == part["max_points"]
            assert test["output"].startswith(part["reason"])  # the judge's reason, never the key
        assert data["extra_data"]["status"] == row["status"]


def test_honest_wrong_copied_hostile_broken(graded):
    scores = {s: d["score"] for s, d in graded["results"].items()}
    assert scores["ada@uni.edu"] == 8.0
    assert 0 < scores["bob@uni.edu"] < 8.0
    assert scores["cy@uni.edu"] < 8.0  # ada's answers are wrong for cy's numbers
    for hostile in ("eve@uni.edu", "fay@uni.edu", "gus@uni.edu", "hal@uni.edu", "ivy@uni.edu", "jo@uni.edu"):
        assert scores[hostile] == 0, (hostile, graded["results"][hostile])
    assert "could not be read" in graded["results"]["ivy@uni.edu"]["output"]
    assert "no notebook" in graded["results"]["jo@uni.edu"]["output"]
    bundled = json.loads(zipfile.ZipFile(graded["bundle"]).read("settings.json"))
    assert json.loads((graded["roots"]["hal@uni.edu"] / "source" / "settings.json").read_text()) == bundled


def test_variant_from_metadata_and_hidden_parts_after_published(graded):
    from course.assess.variants import variant_of

    hidden = gradescope.hidden_parts(ROOT / "source" / CHAPTER / f"{CHAPTER}.ipynb")
    assert hidden
    for student, data in graded["results"].items():
        assert data["extra_data"]["student"] == student
        if data["tests"]:
            assert data["extra_data"]["variant"] == variant_of(CHAPTER, student)
            for test in data["tests"]:
                expected = "after_published" if test["name"].split()[-1] in hidden else "visible"
                assert test["visibility"] == expected


def test_bundle_layout(graded):
    with zipfile.ZipFile(graded["bundle"]) as zf:
        names = set(zf.namelist())
        assert {"setup.sh", "run_autograder", "dev.py", "requirements/grading.txt", "requirements/grading.in",
                "requirements/course.in", "requirements/dev.in", "settings.json",
                "package/pyproject.toml", "package/autograder/engines/gradescope.py",
                "course_root/gradebook.db", f"course_root/source/{CHAPTER}/{CHAPTER}.ipynb"} <= names
        for script in ("setup.sh", "run_autograder"):
            assert stat.S_IMODE(zf.getinfo(script).external_attr >> 16) == 0o755
        # the course's one install recipe and its lock, verbatim
        assert zf.read("dev.py").decode() == (ROOT / "dev.py").read_text()
        for path in (ROOT / "requirements").glob("*.*"):
            assert zf.read(f"requirements/{path.name}").decode() == path.read_text()
        setup = zf.read("setup.sh").decode()
        assert "bubblewrap" in setup and "dev.py\" install grading" in setup and "pip install" not in setup
        assert not any("__pycache__" in n for n in names)
        db = graded["bundle"].parent / "bundled.db"
        db.write_bytes(zf.read("course_root/gradebook.db"))
    with sqlite3.connect(db) as con:
        assert con.execute("select name from assignment").fetchall() == [(CHAPTER,)]
        assert con.execute("select count(*) from student").fetchone() == (0,)
    subprocess.run(["bash", "-n", str(graded["roots"]["ada@uni.edu"] / "source" / "setup.sh")], check=True)


def test_setup_sh_installs_the_grading_set_with_the_one_recipe(tmp_path):
    """setup.sh, run with apt-get and python3 stubbed: dev.py install of the grading set and the package, then the check."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    stub = f'#!/bin/sh\necho "$(basename "$0") $*" >> {log}\n'
    # python3 dev.py install SET VENV ... makes VENV/bin/python, a stub like the others
    python = stub + ('[ "$2" = "install" ] && mkdir -p "$4/bin" && cp "$0" "$4/bin/python"\n'
                     'exit 0\n')
    for name, text in (("apt-get", stub), ("python3", python)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    script = tmp_path / "source" / "setup.sh"
    script.parent.mkdir()
    script.write_text(gradescope.SETUP_SH)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "AUTOGRADER_ROOT": str(tmp_path)}
    subprocess.run(["bash", str(script)], check=True, env=env, capture_output=True)
    calls = log.read_text().splitlines()
    python_calls = [line.split()[1:] for line in calls if line.startswith("python")]
    assert python_calls[0] == [f"{script.parent}/dev.py", "install", "grading", f"{tmp_path}/venv",
                               "--project", f"{script.parent}/package"]
    assert calls[-1].startswith("python -m autograder.engines.gradescope") and calls[-1].endswith("--check")


def test_group_and_bad_metadata():
    assert gradescope.student_from_metadata({"users": [{"email": "a@x.org"}, {"email": "b@x.org"}]},
                                            "email")[1].startswith("a group submission of 2")
    with pytest.raises(ValueError, match="no user"):
        gradescope.student_from_metadata({}, "email")
    with pytest.raises(ValueError, match="usable 'sid'"):
        gradescope.student_from_metadata({"users": [{"email": "a@x.org"}]}, "sid")


def test_broken_metadata_still_writes_results(tmp_path):
    (tmp_path / "source").mkdir()
    (tmp_path / "source" / "settings.json").write_text(json.dumps(gradescope.bundle_settings(
        CHAPTER, gradescope.sandbox.Limits(), 1, "email", True, [])))
    (tmp_path / "submission_metadata.json").write_text("{}")
    data = json.loads(gradescope.run(tmp_path).read_text())
    assert data["score"] == 0 and data["extra_data"]["status"] == "error" and "no user" in data["output"]


def test_setup_check_refuses_an_image_without_the_sandbox(tmp_path, monkeypatch, capsys):
    """setup.sh ends with --check: the image build fails where bubblewrap cannot run, unless allowed."""
    (tmp_path / "source").mkdir()
    settings = gradescope.bundle_settings(CHAPTER, gradescope.sandbox.Limits(), None, "email", True, [])
    (tmp_path / "source" / "settings.json").write_text(json.dumps(settings))
    assert gradescope.main(["--root", str(tmp_path), "--check"]) == 0  # bubblewrap works here
    assert "bwrap+rlimits" in capsys.readouterr().out
    monkeypatch.setattr(gradescope.sandbox, "probe", lambda: "bubblewrap (bwrap) is not installed")
    assert gradescope.main(["--root", str(tmp_path), "--check"]) == 1
    (tmp_path / "source" / "settings.json").write_text(json.dumps(dict(settings, allow_unsandboxed=True)))
    assert gradescope.main(["--root", str(tmp_path), "--check"]) == 0
    assert "rlimits only" in capsys.readouterr().out
    # a bundle an older version wrote says the same with require_sandbox
    older = {k: v for k, v in settings.items() if k != "allow_unsandboxed"}
    (tmp_path / "source" / "settings.json").write_text(json.dumps(dict(older, require_sandbox=True)))
    assert gradescope.main(["--root", str(tmp_path), "--check"]) == 1
    (tmp_path / "source" / "settings.json").write_text(json.dumps(dict(older, require_sandbox=False)))
    assert gradescope.main(["--root", str(tmp_path), "--check"]) == 0

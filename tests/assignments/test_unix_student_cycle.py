"""A real Unix user's cycle on a shared machine, as the instructor guide describes it.

A login user is created (``useradd``; removed again with ``userdel -r``); as that user, with no
course settings at all, ``nbgrader fetch_assignment`` takes Chapter 2 from an exchange, the kernel
shows the numbers of the user's login name (the id nbgrader's exchange records), the student answers
those numbers, every visible check says right, and ``nbgrader submit`` hands it in. The instructor
collects and grades with ``course-autograde`` and finds full marks for that login.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from . import student_notebooks as sn

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0 or shutil.which("useradd") is None,
                                 reason="creating a login user needs root and useradd (CI runs as root)")]

NAME = "ch02_gradient_accumulation"
COURSE = "distributed-training"

STUDENT_SCRIPT = r'''
import json, os, sys
import nbformat
from nbclient import NotebookClient

path, answers = sys.argv[1], json.loads(sys.argv[2])
nb = nbformat.read(path, 4)
if answers:
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if gid in answers:
            cell.source = answers[gid]
NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
               resources={"metadata": {"path": os.path.dirname(path)}}).execute()
nbformat.write(nb, path)
out = {}
for cell in nb.cells:
    gid = cell.metadata.get("nbgrader", {}).get("grade_id", "")
    text = ""
    for o in cell.get("outputs", []):
        text += o.get("text", "") + o.get("data", {}).get("text/markdown", "")
    out[gid] = text
print("OUTPUTS " + json.dumps(out))
'''


@pytest.fixture
def login_user():
    name = "c25" + secrets.token_hex(3)
    subprocess.run(["useradd", "-m", "-s", "/bin/sh", name], check=True, capture_output=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", "-r", "-f", name], capture_output=True)
        assert subprocess.run(["id", name], capture_output=True).returncode != 0  # no user left behind


def _as(user, *cmd, env_extra=None, cwd=None):
    """Run ``cmd`` as ``user`` with a login-like environment and no course settings."""
    env = {"HOME": user.pw_dir, "USER": user.pw_name, "LOGNAME": user.pw_name,
           "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
           **(env_extra or {})}
    return subprocess.run(list(cmd), env=env, cwd=cwd or user.pw_dir, user=user.pw_uid, group=user.pw_gid,
                          extra_groups=[], capture_output=True, text=True, timeout=900)


def _outputs(proc):
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(text for text in proc.stdout.splitlines() if text.startswith("OUTPUTS "))
    return json.loads(line[len("OUTPUTS "):])


def test_a_login_user_gets_their_own_numbers_submits_and_gets_full_marks(login_user):
    from course.activities import SYLLABUS, answer_sources
    from course.assess.spec import spec_for
    from course.assess.variants import variant_of

    user = login_user.pw_name
    base = Path(tempfile.mkdtemp(prefix="c25-cycle-"))
    try:
        os.chmod(base, 0o755)
        exchange, course = base / "exchange", base / "course"
        exchange.mkdir(mode=0o777)
        os.chmod(exchange, 0o777)
        course.mkdir()
        shutil.copy(sn.ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
        shutil.copytree(sn.ROOT / "source" / NAME, course / "source" / NAME)
        instructor = dict(os.environ, NBGRADER_EXCHANGE=str(exchange),
                          PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
        for var in ("COURSE_STUDENT", "JUPYTERHUB_USER", "COURSE_LEDGER"):
            instructor.pop(var, None)

        def nbgrader(*args):
            proc = subprocess.run([sys.executable, "-m", "nbgrader", *args, "--log-level=WARN"], cwd=course,
                                  env=instructor, capture_output=True, text=True, timeout=900)
            assert proc.returncode == 0, proc.stdout + proc.stderr
        nbgrader("generate_assignment", NAME, "--force")
        nbgrader("release_assignment", NAME, "--force")

        exchange_flags = [f"--Exchange.root={exchange}", f"--course={COURSE}"]
        fetched = _as(login_user, sys.executable, "-m", "nbgrader", "fetch_assignment", NAME, *exchange_flags)
        assert fetched.returncode == 0, fetched.stderr
        notebook = Path(login_user.pw_dir) / NAME / f"{NAME}.ipynb"
        assert notebook.exists()
        script = Path(login_user.pw_dir) / "run_all.py"
        script.write_text(STUDENT_SCRIPT)
        os.chown(script, login_user.pw_uid, login_user.pw_gid)

        # the kernel, with no settings, finds the login name and shows that student's numbers
        seen = _outputs(_as(login_user, sys.executable, str(script), str(notebook), "{}"))
        setup = next(text for gid, text in seen.items() if gid.endswith("_setup"))
        assert f"numbers for student {user!r}" in setup and "Unix" in setup, setup
        variant = variant_of(NAME, user)
        for ex in SYLLABUS.by_name[NAME].exercises:
            if ex.varies:
                shown = seen[ex.grade_id("_prompt")]
                assert shown.strip() == ex.prompt(spec_for(ex, variant)).strip()

        # the student answers the numbers shown (their variant's solution code) and runs everything again
        answers = {gid: src for gid, src in answer_sources(NAME, user).items()}
        seen = _outputs(_as(login_user, sys.executable, str(script), str(notebook),
                            json.dumps({g: sn._solution(s) for g, s in answers.items()})))
        checks = {gid: text for gid, text in seen.items() if gid.endswith("_check")}
        assert checks and all(": right." in text for text in checks.values()), checks
        submitted = _as(login_user, sys.executable, "-m", "nbgrader", "submit", NAME, *exchange_flags,
                        cwd=str(Path(login_user.pw_dir)))
        assert submitted.returncode == 0, submitted.stderr

        # the instructor collects and grades: the submission is the login's, graded on its numbers
        nbgrader("collect", NAME)
        assert (course / "submitted" / user / NAME / f"{NAME}.ipynb").exists()
        proc = subprocess.run([sys.executable, "-m", "autograder", "class", NAME, "--course-root", str(course),
                               "--out", str(base / "out"), "--no-progress", "--workers", "1"],
                              cwd=course, env=instructor, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        graded = json.loads((base / "out" / "grades.json").read_text())["students"]
        row = next(s for s in graded if s["student"] == user)
        assert row["score"] == row["max_score"] > 0, [(p["part"], p["points"], p["reason"]) for p in row["parts"]]
        assert row["variant"] == variant
    finally:
        shutil.rmtree(base, ignore_errors=True)

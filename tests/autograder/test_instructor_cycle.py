"""The instructor guide's term, run as written: an instructor and two students on a local exchange.

The ``bash`` block of ``docs/instructors/cycle.md`` (the site's "A term's cycle, command by
command") is cut at its ``# each student`` / ``# instructor`` comments; the instructor's parts
run as root in a copy of the course root, each student's part as a real Unix user in a home
folder of their own. The shell never has ``.venv/bin`` on its PATH (nobody activated the
environment), and nothing is added to the guide's commands.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import nbformat
import pytest

from hub.setup import make_interpreter_reachable
from hub.users import STUDENTS, as_user, ensure_user

from .course_dir import CHAPTER, solution

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
VENV_BIN = str(REPO / ".venv" / "bin")


#: the instructor guide's page whose commands this test runs
GUIDE = REPO / "docs" / "instructors" / "cycle.md"


def guide_cycle() -> list[tuple[str, list[str]]]:
    """The instructor guide's bash block as ``[(who, lines)]``, who is "instructor" or "student"."""
    block = re.search(r"```bash\n(.*?)```", GUIDE.read_text(), re.S).group(1)
    parts, who = [("instructor", [])], "instructor"
    for line in block.splitlines():
        if line.startswith("# each student"):
            who = "student"
            parts.append((who, []))
        elif line.startswith("# instructor"):
            who = "instructor"
            parts.append((who, []))
        elif line.strip() and not line.startswith("#"):
            parts[-1][1].append(line)
    return parts


def plain_path() -> str:
    """PATH of a shell where the course's environment is not activated."""
    return os.pathsep.join(p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
                           if p and Path(p).resolve() != Path(VENV_BIN).resolve())


def run(line: str, cwd: Path, env: dict, prefix=()) -> subprocess.CompletedProcess:
    proc = subprocess.run([*prefix, "bash", "-euo", "pipefail", "-c", line], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"guide line failed: {line}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def exported(line: str, cwd: Path, env: dict) -> dict:
    """The variables an ``export`` line of the guide sets, as the instructor's shell sees them."""
    out = run(f"{line}\nenv -0", cwd, env).stdout
    after = dict(item.split("=", 1) for item in out.split("\0") if "=" in item)
    return {k: v for k, v in after.items() if env.get(k) != v and k not in ("PWD", "SHLVL", "_", "OLDPWD")}


@pytest.fixture(scope="module")
def cycle():
    if os.geteuid() != 0:
        pytest.skip("the students are real Unix users: creating them needs root (CI runs as root)")
    # students must reach the course's .venv and the exchange: a world-readable base, not pytest's 0700 tmp
    base = Path(tempfile.mkdtemp(prefix="guide-cycle-"))
    base.chmod(0o755)
    course = base / "course"
    course.mkdir()
    shutil.copy(REPO / "nbgrader_config.py", course / "nbgrader_config.py")
    for folder in ("source", "release"):
        shutil.copytree(REPO / folder / CHAPTER, course / folder / CHAPTER)
    (course / ".venv").symlink_to(REPO / ".venv")  # the environment `python3 dev.py` made
    base_env = {"PATH": plain_path(), "HOME": str(base / "instructor-home"), "LANG": "C.UTF-8",
                "USER": "root", "LOGNAME": "root"}
    (base / "instructor-home").mkdir()
    env = dict(base_env)
    homes = {}
    for student in STUDENTS:
        account = ensure_user(student)
        homes[student] = base / student
        homes[student].mkdir()
        os.chown(homes[student], account.pw_uid, account.pw_gid)
    make_interpreter_reachable(REPO / ".venv", STUDENTS[0])  # as `dev.py hub` does: students run the course's Python
    answers = {STUDENTS[0]: solution(course, student=STUDENTS[0]), STUDENTS[1]: None}  # the second submits what he fetched
    for who, lines in guide_cycle():
        if who == "instructor":
            for line in lines:
                if line.startswith("export "):
                    env.update(exported(line, course, env))
                else:
                    run(line, course, env)
            continue
        for student in STUDENTS:
            student_env = dict(env, HOME=str(homes[student]), USER=student, LOGNAME=student)
            for line in lines:
                run(line, homes[student], student_env, prefix=as_user(student))
                if "fetch_assignment" in line and answers[student] is not None:
                    target = homes[student] / CHAPTER / f"{CHAPTER}.ipynb"
                    nbformat.write(answers[student], str(target))
    yield base, course
    shutil.rmtree(base, ignore_errors=True)


def test_guide_block_has_every_step():
    steps = " ".join(line for _, lines in guide_cycle() for line in lines)
    for command in ("generate_assignment", "release_assignment", "fetch_assignment", "submit", "collect",
                    "course-autograde class", "course-autograde refresh", "release_feedback", "fetch_feedback",
                    "export"):
        assert command in steps, command


def test_release_survives_generate_force(cycle):
    _, course = cycle
    assert (course / "release" / CHAPTER / f"{CHAPTER}.ipynb").is_file()
    assert (course / "gradebook.db").is_file()


def test_students_are_told_apart_by_their_login(cycle):
    _, course = cycle
    assert sorted(p.name for p in (course / "submitted").iterdir()) == sorted(STUDENTS)


def test_autograder_grades_what_was_collected(cycle):
    _, course = cycle
    with open(course / "grades" / CHAPTER / "grades.csv") as fh:  # each assignment's own folder
        totals = {}
        for row in csv.DictReader(fh):
            totals[row["student"]] = totals.get(row["student"], 0.0) + float(row["points"] or 0)
    # ch02: four 1-point parts and two 2-point parts = 8 points
    assert totals == {STUDENTS[0]: 8.0, STUDENTS[1]: 0.0}


def test_students_fetch_feedback_with_derivations(cycle):
    base, _ = cycle
    for student in STUDENTS:
        pages = list((base / student / CHAPTER / "feedback").rglob(f"{CHAPTER}.html"))
        assert len(pages) == 1, student
        html = pages[0].read_text()
        assert "Worked derivation" in html and "BEGIN HIDDEN TESTS" not in html


def test_nbgrader_export_sees_the_trusted_scores(cycle):
    _, course = cycle
    with open(course / "nbgrader_grades.csv") as fh:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(fh)
                  if row["assignment"] == CHAPTER}
    assert scores == {STUDENTS[0]: 8.0, STUDENTS[1]: 0.0}

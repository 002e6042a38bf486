"""Grading on Gradescope: an ``autograder.zip`` in Gradescope's documented layout, and its runner.

Gradescope's autograder specification (https://gradescope-autograders.readthedocs.io/en/latest/specs/)
asks for a zip whose root holds ``setup.sh`` (run once, as root, when Gradescope builds the
image; the zip is unpacked in ``/autograder/source``) and ``run_autograder`` (run once per
submission in a fresh container, working folder ``/autograder``). The harness puts the student's
files in ``/autograder/submission`` and ``/autograder/submission_metadata.json`` (``users``:
``email``, ``id``, ``name`` ...); the runner must write ``/autograder/results/results.json``
(``score``, ``output``, ``tests``: ``name``, ``score``, ``max_score``, ``output``, ``visibility``).

:func:`build_bundle` writes the zip:

* ``setup.sh``: Debian/Ubuntu packages of the sandbox (``bubblewrap``, ``util-linux``), then a venv
  in ``/autograder/venv`` made by the course's one install recipe, ``python3 dev.py install grading``
  (the bundle carries ``dev.py`` and ``requirements/`` verbatim): exactly the grading set
  (``requirements/grading.txt``, every file hash-checked, ``--no-deps``) and the course package
  (``package/``, not editable), then ``pip check``;
* ``run_autograder``: ``python -m autograder.engines.gradescope --root /autograder``;
* ``course_root/``: ``nbgrader_config.py``, ``source/<assignment>/`` and a fresh ``gradebook.db``
  holding only that assignment (no student of the instructor's own gradebook);
* ``settings.json``: the assignment, limits, probe seed (``null``: random per submission,
  recorded in ``extra_data``), which user field is the student id, the parts graded on hidden
  tests, and whether grading without bubblewrap is refused.

:func:`run` grades one submission with :class:`autograder.grading.grader.Grader`, the class mode's own
pipeline (sanitize, sandboxed kernel, clean room, trusted judge), with one worker, and turns its
result row into ``results.json`` (:func:`results_json`). The root is ``--root`` or the
``AUTOGRADER_ROOT`` environment variable (default ``/autograder``), so a test runs the bundle in a
temporary folder laid out as Gradescope lays it out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Dict, List, Optional

from ..isolation import sandbox
from .options import limits, temporary_course
from ..grading.submissions import STUDENT_ID, Submission, _from_zip, _pick_notebook

#: where Gradescope mounts everything (``--root`` / ``AUTOGRADER_ROOT`` override it)
DEFAULT_ROOT = "/autograder"
ROOT_ENV = "AUTOGRADER_ROOT"
#: which field of submission_metadata.json's user is the course's student id
STUDENT_KEYS = ("email", "email_login", "sid", "id")
#: the repository this module belongs to (its package, pins and nbgrader_config.py go in the bundle)
REPO = Path(__file__).resolve().parents[2]
#: what of the repository the bundle's package/ holds (enough for ``pip install package/``)
PACKAGE_FILES = ("pyproject.toml", "README.md")
PACKAGE_DIRS = ("course", "autograder")

#: the install recipe and the lock it installs (``dev.py install``: every environment of the course is
#: made by it; the bundle installs the grading set, ``requirements/grading.txt``)
INSTALLER = ("dev.py",)
LOCK_DIR = "requirements"
LOCK_SET = "grading"

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (base image: Ubuntu 24.04;
# the pins need Python >= 3.11.5, Ubuntu 22.04 has 3.10). It installs the sandbox, then the course's
# grading set and the course with the course's one install recipe (dev.py install: every file
# hash-checked against requirements/grading.txt, nothing beyond it, then pip check).
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends python3 python3-venv python3-pip bubblewrap util-linux
python3 "$HERE/dev.py" install @SET@ "$ROOT/venv" --project "$HERE/package"
# fail the image build, not every student's run, if the sandbox cannot work in this container
"$ROOT/venv/bin/python" -m autograder.engines.gradescope --root "$ROOT" --check
""".replace("@SET@", LOCK_SET)

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this once per submission, in a fresh container, from /autograder.
# It always writes $ROOT/results/results.json (a broken submission gets one that says why).
set -uo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}"
exec "$PYTHON" -m autograder.engines.gradescope --root "$ROOT"
"""


# ---------------------------------------------------------------------------------------------
# the bundle
# ---------------------------------------------------------------------------------------------

def hidden_parts(source_notebook: Path) -> List[str]:
    """Grade ids whose test cell holds nbgrader hidden tests (``### BEGIN HIDDEN TESTS``)."""
    import nbformat

    nb = nbformat.read(str(source_notebook), as_version=4)
    hidden = []
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and "BEGIN HIDDEN TESTS" in cell.get("source", ""):
            hidden.append(meta.get("grade_id"))
    return sorted(hidden)


def bundle_settings(assignment: str, limits: sandbox.Limits, seed: Optional[int], student_key: str,
                    require_sandbox: bool, hidden: List[str]) -> dict:
    if student_key not in STUDENT_KEYS:
        raise ValueError(f"student_key must be one of {STUDENT_KEYS}, got {student_key!r}")
    return {"assignment": assignment, "limits": vars(limits), "seed": seed, "student_key": student_key,
            "allow_unsandboxed": not require_sandbox, "hidden_parts": hidden}


def unsandboxed_allowed(settings: dict) -> bool:
    """Whether the bundle was written with ``--allow-unsandboxed`` (an older bundle's ``require_sandbox``
    says the opposite)."""
    if "allow_unsandboxed" in settings:
        return bool(settings["allow_unsandboxed"])
    return not settings.get("require_sandbox", True)


def build_bundle(course_root, assignment: str, out, *, limits: sandbox.Limits = sandbox.Limits(),
                 seed: Optional[int] = None, student_key: str = "email", require_sandbox: bool = True) -> Path:
    """Write ``autograder.zip`` for ``assignment`` of ``course_root`` to ``out``; return its path."""

    from ..grading.course_settings import CourseSettings

    course_root = Path(course_root).resolve()
    source = CourseSettings(course_root).folder("source", ".", assignment)
    with temporary_course(course_root, assignment) as fresh:  # a gradebook with this assignment only
        settings = bundle_settings(assignment, limits, seed, student_key, require_sandbox,
                                   hidden_parts(source / f"{assignment}.ipynb"))
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
            _write_text(zf, "setup.sh", SETUP_SH, executable=True)
            _write_text(zf, "run_autograder", RUN_AUTOGRADER, executable=True)
            for name in INSTALLER:
                _write_text(zf, name, (REPO / name).read_text())
            for path in sorted((REPO / LOCK_DIR).glob("*.*")):  # every set's .in and .txt: dev.py checks the layers
                _write_text(zf, f"{LOCK_DIR}/{path.name}", path.read_text())
            _write_text(zf, "settings.json", json.dumps(settings, indent=1) + "\n")
            for name in PACKAGE_FILES:
                zf.write(REPO / name, f"package/{name}")
            for name in PACKAGE_DIRS:
                _write_tree(zf, REPO / name, f"package/{name}")
            zf.write(course_root / "nbgrader_config.py", "course_root/nbgrader_config.py")
            zf.write(CourseSettings(fresh).gradebook_file, "course_root/gradebook.db")
            _write_tree(zf, source, f"course_root/{source.relative_to(course_root).as_posix()}")
    return out


def _write_text(zf: zipfile.ZipFile, name: str, text: str, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o100755 if executable else 0o100644) << 16
    zf.writestr(info, text)


def _write_tree(zf: zipfile.ZipFile, folder: Path, arcname: str) -> None:
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and not {"__pycache__", ".ipynb_checkpoints"} & set(rel.parts):
            zf.write(path, f"{arcname}/{rel.as_posix()}")


# ---------------------------------------------------------------------------------------------
# the runner (run_autograder)
# ---------------------------------------------------------------------------------------------

def student_from_metadata(metadata: dict, key: str) -> tuple:
    """``(student id, note)`` from submission_metadata.json's first user's ``key`` field.

    >>> student_from_metadata({"users": [{"email": "ada@uni.edu", "id": 7}]}, "email_login")
    ('ada', '')
    >>> student_from_metadata({"users": [{"id": 7}, {"id": 8}]}, "id")[0]
    '7'
    """
    users = metadata.get("users") if isinstance(metadata, dict) else None
    if not isinstance(users, list) or not users or not isinstance(users[0], dict):
        raise ValueError("submission_metadata.json names no user")
    field = "email" if key == "email_login" else key
    value = users[0].get(field)
    student = str(value).strip() if value is not None else ""
    if key == "email_login":
        student = student.split("@", 1)[0]
    if not STUDENT_ID.match(student):
        raise ValueError(f"the submission's user has no usable {key!r} (got {student!r})")
    note = ""
    if len(users) > 1:
        note = (f"a group submission of {len(users)} students was graded with the numbers of "
                f"{student} (the first one listed)")
    return student, note


def submission_for(folder: Path, assignment: str, student: str, unzip: Path) -> Submission:
    """The notebook in Gradescope's submission folder (as class mode finds one in a student's folder;
    a single uploaded zip is opened as class mode opens ``<student>.zip``, into ``unzip``, a folder
    the caller removes once graded)."""
    sub = Submission(student=student, folder=folder)
    if not folder.is_dir():
        return Submission(student=student, status="missing", problem="nothing was submitted")
    zips = sorted(folder.glob("*.zip"))
    if not any(folder.rglob("*.ipynb")) and len(zips) == 1:
        sub = Submission(student=student)
        _from_zip(zips[0], assignment, sub, unzip)
        return sub
    _pick_notebook(folder, assignment, sub)
    return sub


def _part_output(part: dict) -> str:
    lines = [part["reason"]]
    for check in part.get("checks") or []:
        lines.append(f"- {check['check']}: {check['points']:g}/{check['max_points']:g} - {check['reason']}")
    return "\n".join(lines)


#: how Gradescope shows every ``output``: as plain text, never HTML or Markdown (a reason can quote what a
#: student wrote: a syntax error's line, a function's name, a cell's text)
OUTPUT_FORMAT = "text"


def results_json(result: dict, hidden: List[str], extra: dict) -> dict:
    """Gradescope's results.json for one of :meth:`Grader.grade_one`'s result rows.

    One test per graded part (the same points as ``grades.json``); the output is the part's
    reason and partial-credit checks, which never hold a key; parts graded on hidden tests are
    ``after_published``. Parts graded by hand are left to Gradescope's manual grading.
    """
    tests, manual = [], []
    for number, part in enumerate(result["parts"], 1):
        if part["points"] is None:
            manual.append(part["part"])
            continue
        tests.append({
            "name": f"{part['exercise']} {part['part']}".strip() if part["exercise"] else part["part"],
            "number": str(number), "score": part["points"], "max_score": part["max_points"],
            "status": "passed" if part["points"] >= part["max_points"] else "failed",
            "output": _part_output(part), "output_format": OUTPUT_FORMAT,
            "visibility": "after_published" if part["part"] in hidden else "visible"})
    notes = [] if result["reason"] == "graded" else [result["reason"]]
    if manual:
        notes.append("graded by hand on Gradescope: " + ", ".join(manual))
    score = round(sum(t["score"] for t in tests), 6)
    return {"score": score, "output": "\n".join(notes) or "graded", "output_format": OUTPUT_FORMAT, "tests": tests,
            "extra_data": {"student": result["student"], "assignment": result["assignment"],
                           "status": result["status"], "variant": result.get("variant"),
                           "kernel_points": {p["part"]: p.get("kernel_points") for p in result["parts"]},
                           **extra}}


def _failure(why: str, extra: dict) -> dict:
    return {"score": 0.0, "output_format": OUTPUT_FORMAT,
            "output": f"The autograder could not grade this submission: {why}. "
                      "Your instructor has been told and will regrade it.",
            "tests": [], "extra_data": {"status": "error", **extra}}


def grade(root: Path) -> dict:
    """Grade ``root/submission`` and return results.json's content (never raises)."""
    started = time.monotonic()
    extra: Dict[str, object] = {}
    try:
        settings = json.loads((root / "source" / "settings.json").read_text())
        metadata_path = root / "submission_metadata.json"
        metadata = json.loads(metadata_path.read_text()) if metadata_path.is_file() else {}
        student, group_note = student_from_metadata(metadata, settings["student_key"])
        extra["student"] = student
        use_bwrap = sandbox.probe() is None
        if not unsandboxed_allowed(settings) and not use_bwrap:
            return _failure("the grading sandbox (bubblewrap) cannot run in this container "
                            f"({sandbox.probe()})", extra)
        seed = settings["seed"]
        if seed is None:
            import random

            seed = random.SystemRandom().randrange(2**31)
        import warnings

        from ..grading.grader import Grader

        warnings.filterwarnings("ignore", message=".*not in session.*")  # as grade_all: nbgrader's SQLAlchemy noise
        grader = Grader(root / "source" / "course_root", settings["assignment"], workers=1,
                        limits=sandbox.Limits(**settings["limits"]), seed=seed, feedback=False,
                        allow_unsandboxed=unsandboxed_allowed(settings))
        with tempfile.TemporaryDirectory(prefix="autograder-unzip-") as unzip:
            sub = submission_for(root / "submission", settings["assignment"], student, Path(unzip))
            if group_note:
                sub.notes.append(group_note)
            result = grader.grade_one(sub)
        extra.update(seed=seed, isolation=grader.isolation)
        payload = results_json(result, settings["hidden_parts"], extra)
    except Exception as exc:  # every submission gets a results.json
        payload = _failure(f"{type(exc).__name__}: {str(exc)[:300]}", extra)
    payload["execution_time"] = round(time.monotonic() - started)
    return payload


def run(root) -> Path:
    """Grade and write ``root/results/results.json``; return its path."""
    root = Path(root)
    payload = grade(root)
    results = root / "results"
    results.mkdir(parents=True, exist_ok=True)
    tmp = results / "results.json.tmp"
    tmp.write_text(json.dumps(payload, indent=1) + "\n")
    os.replace(tmp, results / "results.json")
    return results / "results.json"


# ---------------------------------------------------------------------------------------------
# course-autograde gradescope
# ---------------------------------------------------------------------------------------------

def add_parser(sub, limit_options) -> None:
    """``course-autograde gradescope ASSIGNMENT --out autograder.zip`` (``limit_options``: the class
    mode's seed and limits, so the bundle takes the same limits under the same names)."""
    p = sub.add_parser("gradescope", help="write a Gradescope autograder.zip for an assignment")
    p.add_argument("assignment")
    p.add_argument("--course-root", default=".", help="nbgrader course root (source/, nbgrader_config.py)")
    p.add_argument("--out", default="autograder.zip", help="the bundle to write")
    p.add_argument("--student-key", default="email", choices=STUDENT_KEYS,
                   help="the submission_metadata.json user field that is the course's student id "
                        "(their variant); email_login: the email before the @")
    p.add_argument("--allow-unsandboxed", "--allow-rlimits-only", dest="allow_rlimits_only", action="store_true",
                   help="grade even where bubblewrap cannot run (UNSAFE: student code could read the "
                        "bundle); by default such a container grades nothing and says why")
    limit_options(p)
    p.set_defaults(run=_cli_bundle)


def _cli_bundle(args) -> int:
    path = build_bundle(Path(args.course_root).resolve(), args.assignment, args.out, limits=limits(args),
                        seed=args.seed, student_key=args.student_key,
                        require_sandbox=not args.allow_rlimits_only)
    print(f"wrote {path} ({path.stat().st_size / 2**20:.1f} MB): upload it as the Gradescope assignment's "
          "autograder (base image Ubuntu 24.04)")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.engines.gradescope",
                                     description="Gradescope's run_autograder: grade one submission")
    parser.add_argument("--root", default=os.environ.get(ROOT_ENV, DEFAULT_ROOT),
                        help=f"Gradescope's root (default: ${ROOT_ENV} or {DEFAULT_ROOT})")
    parser.add_argument("--check", action="store_true",
                        help="only check that this image can grade (setup.sh runs it)")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if args.check:
        settings = json.loads((root / "source" / "settings.json").read_text())
        why = sandbox.probe()
        if why is not None and not unsandboxed_allowed(settings):
            print(f"autograder: no grading sandbox in this image: {why}", file=sys.stderr)
            return 1
        print(f"autograder: ready to grade {settings['assignment']} "
              f"({'bwrap+rlimits' if why is None else 'rlimits only: ' + why})")
        return 0
    path = run(root)
    data = json.loads(path.read_text())
    print(f"wrote {path}: {data['score']:g} points; {data['output'][:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

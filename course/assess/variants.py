"""Per-student variants: who the student is, which numbers they get, and the switches.

Identity (first that applies wins)
----------------------------------
1. **The grading context.** A kernel whose working folder is
   ``.../autograded/<student>/<assignment>/`` (or ``submitted/...``), as under
   plain ``nbgrader autograde``, is grading ``<student>``. ``course-autograde``
   does not ask the kernel at all: its trusted process derives the variant from
   the submission's folder (see :func:`grading_seed`).
2. **The JupyterHub user** (``JUPYTERHUB_USER``), which is the nbgrader
   student id on a hub.
3. **A local setting**: ``COURSE_STUDENT`` in the environment (the autograder's
   sandbox sets it to the graded student), else the id saved by
   ``course student <id>`` (``~/.course/student``).
4. **The Unix user name** of the kernel's process (``pwd`` of ``os.getuid()``), the id
   nbgrader's exchange records when a student submits on a shared machine
   (``nbgrader.utils.get_username``). Only a login account counts (uid at least
   ``UID_MIN`` of ``/etc/login.defs``, 1000 by default, and not ``nobody``): root, system
   and sandbox accounts are nobody's.
5. Nobody: the workbook's own numbers (the prompt cell says so).

A variant is an integer derived from ``(COURSE_ID, assignment, student)`` by
SHA-256 (:func:`variant_of`); no seed a student supplies is ever used. The
exercise's ``vary(spec, rng)`` turns it into that student's numbers
(:func:`course.assess.spec.spec_for`).

Grading seed
------------
Judges receive one integer ``seed`` (the autograder threads it from the
sandbox to the trusted judge unchanged). It carries both the per-run probe
seed of Build inputs (low 32 bits) and the variant (the bits above), so
every path - plain nbgrader, ``course-autograde``, visible checks - asks
:func:`split_seed` for the same two things.

Switches (per assignment)
-------------------------
:func:`settings` gives an assignment's ``{"variants": bool, "feedback": "exact" | "exam"}``:
:data:`DEFAULT_SETTINGS` (variants on, exact feedback) updated with the assignment's own entry
in :data:`SETTINGS`, if any. :data:`SETTINGS` is explicit data the instructor edits one entry
at a time, e.g. ``SETTINGS["ch03_lr_scaling"] = {"feedback": "exam"}``; an entry changes only
its own assignment (nothing else is loaded into it, ever). ``feedback: "exam"`` makes visible
checks fall back to type and unit checks. :data:`DERIVATION_AFTER_ATTEMPTS` sets when a
visible check offers the worked derivation to a student still not right.

This module knows no content: an activity uses it with its own assignment name and
parameter spec (``variant_of(assignment, student)`` + :func:`vary_spec`).
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
import re
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

#: part of every variant's hash, so two courses using this package differ
COURSE_ID = "distributed-training-course"

#: how many attempts a visible check waits before it offers the worked derivation anyway
DERIVATION_AFTER_ATTEMPTS = 3

#: every assignment's switches unless its entry in :data:`SETTINGS` says otherwise
DEFAULT_SETTINGS: Dict[str, Any] = {"variants": True, "feedback": "exact"}

FEEDBACK_MODES = ("exact", "exam")

#: assignment -> the switches it changes (e.g. ``{"feedback": "exam"}`` for an exam,
#: ``{"variants": False}`` for everyone on the same numbers); the instructor edits one entry at a time
SETTINGS: Dict[str, Dict[str, Any]] = {}

#: Model sizes (billions of parameters) a variant draws from: published sizes, each more than 4 %
#: from the next, so keys proportional to the size never fall within a 1-2 % tolerance of each other.
MODEL_SIZES_B = (1.3, 1.5, 2.7, 3.0, 6.7, 7.0, 8.0, 9.0, 11.0, 13.0, 14.0, 15.0, 20.0, 22.0, 27.0, 30.0, 32.0,
                 34.0, 40.0, 46.0, 52.0, 65.0, 70.0, 104.0, 110.0, 175.0, 405.0)

_STUDENT_ENV = "COURSE_STUDENT"
_HUB_ENV = "JUPYTERHUB_USER"
_GRADING_PATH = re.compile(r"(?:^|/)(?:autograded|submitted)/([^/]+)/([^/]+)(?:/|$)")
_VALID_ID = re.compile(r"[A-Za-z0-9_.@+-]{1,128}")


def settings(assignment: str) -> Dict[str, Any]:
    """The switches of ``assignment`` (a copy).

    >>> settings("ch00_ring_allreduce")["variants"], settings("ch00_ring_allreduce")["feedback"]
    (True, 'exact')
    """
    merged = dict(DEFAULT_SETTINGS)
    merged.update(SETTINGS.get(assignment, {}))
    if merged["feedback"] not in FEEDBACK_MODES:
        raise ValueError(f"feedback of {assignment!r} must be one of {FEEDBACK_MODES}, got {merged['feedback']!r}")
    return merged


def variants_on(assignment: str) -> bool:
    return bool(settings(assignment)["variants"])


def exam_mode(assignment: str) -> bool:
    return settings(assignment)["feedback"] == "exam"


# ---------------------------------------------------------------------------
# identity
# ---------------------------------------------------------------------------

def _clean(student: Optional[str]) -> Optional[str]:
    if isinstance(student, str) and _VALID_ID.fullmatch(student.strip()):
        return student.strip()
    return None


def student_file() -> Path:
    """Where ``course student <id>`` keeps a laptop's id (``~/.course/student``)."""
    return Path.home() / ".course" / "student"


def save_student(student: str) -> Path:
    """Remember ``student`` as this laptop's id (for ``course student <id>``)."""
    cleaned = _clean(student)
    if cleaned is None:
        raise ValueError(f"student must be 1-128 letters, digits or _.@+-, got {student!r}")
    path = student_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(cleaned + "\n")
    return path


def grading_student(cwd: Optional[str] = None) -> Optional[str]:
    """The student an nbgrader grading folder belongs to, from the working folder.

    >>> grading_student("/course/autograded/ada/ch00_ring_allreduce")
    'ada'
    >>> grading_student("/home/ada/work") is None
    True
    """
    path = (cwd if cwd is not None else os.getcwd()).replace("\\", "/")
    match = None
    for match in _GRADING_PATH.finditer(path):
        pass  # the innermost match: a course folder may itself sit under such a path
    return _clean(match.group(1)) if match else None


#: the sources :func:`current_student` names, and how a student changes each (``whoami`` prints it)
IDENTITY_SOURCES = {
    "nbgrader grading folder": "this is a grading run: the folder names the student",
    "JupyterHub user": "your hub login is your nbgrader id",
    _STUDENT_ENV: f"unset {_STUDENT_ENV} (or set it to your nbgrader id) and restart the kernel",
    "course student setting": "to change it, run in a cell `from course.exercises import student; student('<your nbgrader id>')` (or `course student <your nbgrader id>` in a Terminal) and restart the kernel",
    "Unix user": ("the name nbgrader records when you submit from this machine; if your nbgrader id "
                  "is another, run in a cell `from course.exercises import student; student('<your nbgrader id>')` (or `course student <your nbgrader id>` in a Terminal) and restart the kernel"),
}


def _first_login_uid() -> int:
    """``UID_MIN`` of ``/etc/login.defs`` (the first uid ``useradd`` gives a person), else 1000 (501 on macOS)."""
    try:
        for line in Path("/etc/login.defs").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 2 and fields[0] == "UID_MIN" and fields[1].isdigit():
                return int(fields[1])
    except OSError:
        pass
    return 501 if sys.platform == "darwin" else 1000


def unix_student(uid: Optional[int] = None) -> Optional[str]:
    """The login name of ``uid`` (default: this process's), as nbgrader's exchange records it; None for
    root, system and sandbox accounts (uid below ``_first_login_uid``, ``nobody``, no password entry).
    """
    try:
        import pwd
    except ImportError:  # Windows: nbgrader's exchange does not run there either
        return None
    uid = os.getuid() if uid is None else int(uid)
    try:
        entry = pwd.getpwuid(uid)
    except KeyError:  # a sandbox uid with no account
        return None
    if uid < _first_login_uid() or entry.pw_name == "nobody" or uid == 65534:
        return None
    return _clean(entry.pw_name)


_LOOK_UP = object()


def current_student(cwd: Optional[str] = None, environ: Optional[Dict[str, str]] = None,
                    unix_user: Any = _LOOK_UP) -> Tuple[Optional[str], str]:
    """``(student, where it came from)`` by the precedence of the module docstring.

    With ``environ`` given, only ``cwd``, ``environ`` and ``unix_user`` (if given) are read (no saved
    file, no account lookup); with neither, the saved ``course student`` id and :func:`unix_student`.

    >>> current_student("/srv/autograded/bob/ch01_zero", {"JUPYTERHUB_USER": "grader"})
    ('bob', 'nbgrader grading folder')
    >>> current_student("/home/jovyan", {"JUPYTERHUB_USER": "ada", "COURSE_STUDENT": "eve"})
    ('ada', 'JupyterHub user')
    >>> current_student("/home/ada", {}, unix_user="ada")
    ('ada', 'Unix user')
    """
    env = os.environ if environ is None else environ
    found = grading_student(cwd)
    if found:
        return found, "nbgrader grading folder"
    found = _clean(env.get(_HUB_ENV))
    if found:
        return found, "JupyterHub user"
    found = _clean(env.get(_STUDENT_ENV))
    if found:
        return found, f"{_STUDENT_ENV}"
    if environ is None:
        try:
            found = _clean(student_file().read_text())
        except OSError:
            found = None
        if found:
            return found, "course student setting"
    if unix_user is _LOOK_UP:
        unix_user = unix_student() if environ is None else None
    found = _clean(unix_user)
    if found:
        return found, "Unix user"
    return None, "nobody"


def instructor_root(cwd: Optional[str] = None) -> Optional[Path]:
    """The nbgrader course root ``cwd`` (default: the working folder) is in, or None.

    A course root is a folder holding ``source/`` (the instructor's assignments, which a
    student's install does not have) and beside it the gradebook (``gradebook.db``) or
    ``nbgrader_config.py``; ``cwd`` or any of its parents counts. ``course variant`` prints keys
    and worked answers only there. This keeps keys out of a student's *commands*; it is not a
    secret (see the README: the package computes any key for whoever reads it).

    >>> instructor_root("/") is None
    True
    """
    here = Path(cwd if cwd is not None else os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "source").is_dir() and any((folder / name).is_file()
                                               for name in ("gradebook.db", "nbgrader_config.py")):
            return folder
    return None


# ---------------------------------------------------------------------------
# variants and seeds
# ---------------------------------------------------------------------------

def variant_of(assignment: str, student: Optional[str]) -> Optional[int]:
    """The variant (a 31-bit int) of ``student`` in ``assignment``; None if off or no student.

    >>> variant_of("ch00_ring_allreduce", "ada") == variant_of("ch00_ring_allreduce", "ada")
    True
    >>> variant_of("ch00_ring_allreduce", "ada") != variant_of("ch00_ring_allreduce", "bob")
    True
    >>> variant_of("ch00_ring_allreduce", None) is None
    True
    """
    if not variants_on(assignment) or _clean(student) is None:
        return None
    digest = hashlib.sha256(f"{COURSE_ID}\0{assignment}\0{_clean(student)}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def current_variant(assignment: str) -> Optional[int]:
    """The variant of whoever runs this kernel (see :func:`current_student`)."""
    return variant_of(assignment, current_student()[0])


_PROBE_BITS = 32


def grading_seed(probe_seed: int, variant: Optional[int]) -> int:
    """One int carrying the Build probe seed and the variant (see the module docstring).

    >>> split_seed(grading_seed(7, 12345)), split_seed(grading_seed(7, None)), split_seed(7)
    ((7, 12345), (7, None), (7, None))
    """
    probe = int(probe_seed) & ((1 << _PROBE_BITS) - 1)
    if variant is None:
        return probe
    return ((int(variant) + 1) << _PROBE_BITS) | probe


def split_seed(seed: int) -> Tuple[int, Optional[int]]:
    """``(probe_seed, variant or None)`` from a :func:`grading_seed`."""
    seed = int(seed)
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    high = seed >> _PROBE_BITS
    return seed & ((1 << _PROBE_BITS) - 1), (high - 1 if high else None)


def student_seed(assignment: str, student: Optional[str], probe_seed: int = 0) -> int:
    """The grading seed of ``student`` in ``assignment`` (what the autograder passes to judges)."""
    return grading_seed(probe_seed, variant_of(assignment, student))


def vary_spec(name: str, spec: Dict[str, Any], vary: Optional[Callable[[Dict[str, Any], random.Random], Dict[str, Any]]],
              variant: Optional[int]) -> Dict[str, Any]:
    """``vary(spec, rng)`` for ``variant`` (reproducible per ``name``); the spec itself when None.

    >>> vary_spec("x", {"n": 8}, lambda s, rng: dict(s, n=rng.choice([2, 4])), None)
    {'n': 8}
    """
    if variant is None or vary is None:
        return dict(spec)
    return vary(dict(spec), random.Random(f"{name}:{variant}"))

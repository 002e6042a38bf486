"""Finding submissions: nbgrader's ``submitted/`` layout, a folder of notebooks, or zips.

Every student found becomes a :class:`Submission`, including those whose
notebook is missing or whose zip is broken: they still get a row.
"""

from __future__ import annotations

import hashlib
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

#: student ids become folder names and gradebook keys
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}$")
MAX_ZIP_BYTES = 50 * 2**20
MAX_ZIP_FILES = 500


@dataclass
class Submission:
    """One student's submission of one assignment."""

    student: str
    notebook: Optional[Path] = None      # the notebook to grade, None if not found
    folder: Optional[Path] = None        # other files travel with it into the scratch copy
    timestamp: Optional[str] = None      # nbgrader's timestamp.txt, if any
    problem: Optional[str] = None        # why it cannot be graded (student-readable)
    status: str = "found"                # found | missing | unreadable
    notes: List[str] = field(default_factory=list)


def _pick_notebook(folder: Path, assignment: str, sub: Submission) -> None:
    expected = folder / f"{assignment}.ipynb"
    if expected.is_file():
        sub.notebook = expected
        return
    others = sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    if len(others) == 1:
        sub.notebook = others[0]
        sub.notes.append(f"graded {others[0].name} (expected the name {assignment}.ipynb)")
        return
    sub.status = "missing"
    sub.problem = (f"no notebook named {assignment}.ipynb was found in your submission"
                   + (f" (found {len(others)} other notebooks)" if others else ""))


def _from_zip(path: Path, assignment: str, sub: Submission, workdir: Path) -> None:
    target = workdir / sub.student
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_ZIP_FILES or sum(i.file_size for i in infos) > MAX_ZIP_BYTES:
                raise ValueError("it is too large")
            for info in infos:
                name = Path(info.filename)
                if name.is_absolute() or ".." in name.parts or info.is_dir():
                    continue  # never write outside the extraction folder
                dest = target / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(zf.read(info))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        sub.status = "unreadable"
        sub.problem = f"your zip file could not be opened ({exc})"
        return
    target.mkdir(parents=True, exist_ok=True)
    sub.folder = target
    _pick_notebook(target, assignment, sub)
    if sub.notebook is not None:
        sub.folder = sub.notebook.parent


def display_name(student: str):
    """``(first name, last name)`` for a student nbgrader knows only by login (a hub or Unix user):
    the full name of the Unix account when it has one, else the login as the last name, so the
    formgrader lists "dt-alice, " rather than "None, None".

    >>> display_name("no-such-user-xyz")
    ('', 'no-such-user-xyz')
    """
    import pwd

    try:
        full = pwd.getpwnam(student).pw_gecos.split(",")[0].strip()
    except (KeyError, OSError):
        full = ""
    if full:
        first, _, last = full.rpartition(" ")
        return (first, last) if first else ("", last)
    return "", student


def collected(student: str, folder: Path, assignment: str) -> Submission:
    """The submission nbgrader collected into ``folder`` (``submitted/<student>/<assignment>/``)."""
    sub = Submission(student=student, folder=folder)
    stamp = folder / "timestamp.txt"
    if stamp.is_file():
        sub.timestamp = stamp.read_text().strip()[:64]
    _pick_notebook(folder, assignment, sub)
    return sub


def discover(path: Path, assignment: str, workdir: Optional[Path] = None) -> List[Submission]:
    """All submissions of ``assignment`` under ``path``, sorted by student id.

    ``path`` is either nbgrader's ``submitted/`` folder (``<student>/<assignment>/``)
    or a folder of ``<student>.ipynb`` / ``<student>.zip`` files. Zips are unpacked into
    ``workdir``, a folder the caller removes once graded; a zip found without one is an error.
    """
    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"submissions must be an existing folder, got {str(path)!r}")
    found = {}
    for entry in sorted(path.iterdir()):
        if entry.is_dir() and (entry / assignment).is_dir():
            sub = collected(entry.name, entry / assignment, assignment)
        elif entry.is_dir() and not entry.name.startswith("."):
            sub = Submission(student=entry.name, status="missing",
                             problem=f"you did not submit {assignment}: nothing of yours was received to grade "
                                     "(every part scores 0)")
        elif entry.suffix == ".ipynb":
            sub = Submission(student=entry.stem, notebook=entry, folder=None)
        elif entry.suffix == ".zip":
            if workdir is None:
                raise ValueError(f"{entry.name} is a zip: discover() needs a workdir to unpack it into")
            sub = Submission(student=entry.stem)
            _from_zip(entry, assignment, sub, workdir)
        else:
            continue
        if not STUDENT_ID.match(sub.student):
            continue  # not a student (README.md, hidden files ...)
        if sub.student in found:
            sub = found[sub.student]
            sub.notes.append("more than one submission had this name; the first one was graded")
            continue
        found[sub.student] = sub
    return [found[k] for k in sorted(found)]


def in_shard(student: str, shard: int, shards: int) -> bool:
    """Deterministic shard membership: a stable hash of the id, not the class list order.

    >>> [in_shard("alice", k, 3) for k in (1, 2, 3)].count(True)
    1
    """
    if type(shards) is not int or shards < 1:
        raise ValueError(f"shards must be a whole number >= 1, got {shards!r}")
    if type(shard) is not int or not 1 <= shard <= shards:
        raise ValueError(f"shard must be in 1..{shards}, got {shard!r}")
    digest = hashlib.sha256(student.encode()).digest()
    return int.from_bytes(digest[:8], "big") % shards == shard - 1


def parse_shard(text: str):
    """``"2/5"`` -> ``(2, 5)``; raises ValueError naming the allowed form."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise ValueError(f"shard must look like K/N with 1 <= K <= N, got {text!r}")
    return int(match[1]), int(match[2])

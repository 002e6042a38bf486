"""Real Unix accounts for the hub's people (standard library only: ``dev.py`` imports it).

The hub's spawner starts each person's JupyterLab as their own Unix user, so
nbgrader tells students apart by that name and the exchange's permissions
(``1777``, sticky) keep one student out of another's submission.
"""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

#: who uses the development hub: one instructor and two students
INSTRUCTOR = "dt-instructor"
STUDENTS = ("dt-alice", "dt-bob")


def ensure_user(name: str, home: Path | None = None) -> pwd.struct_passwd:
    """The Unix account ``name``, created (with a home folder, no password) when missing.

    Needs root to create; an existing account is returned as it is.
    """
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    if os.geteuid() != 0:
        raise PermissionError(f"user {name!r} does not exist and only root can create it")
    argv = ["useradd", "--create-home", "--shell", "/bin/bash", "--user-group"]
    if home is not None:
        argv += ["--home-dir", str(home)]
    subprocess.run(argv + [name], check=True)
    return pwd.getpwnam(name)


def as_user(name: str) -> list[str]:
    """Command prefix that runs the rest of a command line as ``name`` (from root)."""
    return ["setpriv", f"--reuid={name}", f"--regid={name}", "--init-groups"]

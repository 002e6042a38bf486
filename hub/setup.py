"""Everything ``python3 dev.py hub`` prepares before JupyterHub starts (standard library only).

* the proxy: ``configurable-http-proxy`` from npm, installed into ``.venv/hub-proxy``
  (``--no-save --no-package-lock``: nothing is written to the repository);
* people: real Unix accounts (:mod:`hub.users`), each with a ``~/.jupyter`` that turns
  nbgrader's extensions on for their role -- students get Assignments (and Validate),
  instructors also Courses, Formgrader and Create Assignment;
* the instructor's course root, ``~/<course_id>``: this repository's ``nbgrader_config.py``,
  ``source/`` and ``release/``, and a ``.venv`` link to the course's environment, so the
  README's instructor commands work there as written;
* the exchange: a folder every user can write, sticky (``1777``), as nbgrader wants it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from .users import as_user, ensure_user

ROOT = Path(__file__).resolve().parents[1]
PROXY_PACKAGE = "configurable-http-proxy@5.3.0"
COURSE_ID = "distributed-training"
#: nbgrader pieces only instructors get (server extensions and JupyterLab plugins)
#: (with the course's Content-Security-Policy on the formgrader's submission pages, autograder/engines/formgrader_csp.py)
INSTRUCTOR_SERVER_EXTENSIONS = ("nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list",
                                "autograder.engines.formgrader_csp")
#: kernel websockets with TCP_NODELAY (course/lab_server.py: Nagle + delayed ACK held a redraw ~40 ms)
KERNEL_CONNECTION = "course.lab_server.NoDelayKernelConnection"
INSTRUCTOR_LAB_PLUGINS = ("@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:course-list",
                          "@jupyter/nbgrader:create-assignment")


#: the instructor's server may be framed by pages of the same origin (the Formgrader's JupyterLab tab)
FRAMEABLE_BY_SELF = "frame-ancestors 'self'"


def ensure_proxy(venv: Path) -> Path:
    """Path of the ``configurable-http-proxy`` executable, installed from npm when missing."""
    prefix = venv / "hub-proxy"
    binary = prefix / "node_modules" / ".bin" / "configurable-http-proxy"
    if not binary.exists():
        if shutil.which("npm") is None:
            raise RuntimeError("npm is missing: apt-get install -y npm (JupyterHub's proxy is a Node.js program)")
        print(f"dev.py: installing {PROXY_PACKAGE} from npm into {prefix}", flush=True)
        subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-save", "--no-package-lock",
                        "--no-audit", "--no-fund", "--loglevel=error", PROXY_PACKAGE], check=True)
    return binary


def _write_owned(home: Path, relative: str, text: str, uid: int, gid: int) -> None:
    """Write ``home/relative``, owned (with the folders made for it) by the person, not root."""
    path = home / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    for part in (Path(relative), *Path(relative).parents[:-1]):
        os.chown(home / part, uid, gid)


def configure_person(name: str, instructor: bool) -> Path:
    """Create ``name`` if missing and write their ``~/.jupyter`` for their role; return their home."""
    account = ensure_user(name)
    home = Path(account.pw_dir)
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, account.pw_uid, account.pw_gid)
    home.chmod(0o700)  # a student's answers are theirs: nobody else on the machine reads them
    server = {"ServerApp": {"jpserver_extensions": {ext: instructor for ext in INSTRUCTOR_SERVER_EXTENSIONS},
                            "kernel_websocket_connection_class": KERNEL_CONNECTION}}
    if instructor:
        # the Formgrader opens in a JupyterLab tab (a frame of the same server); jupyterhub-singleuser
        # forbids every frame ('none'). Only instructors allow 'self': every user's server shares the
        # hub's origin, so a student's server must stay unframeable by anyone's page.
        server["ServerApp"]["tornado_settings"] = {"headers": {"Content-Security-Policy": FRAMEABLE_BY_SELF}}
    page = {"disabledExtensions": {plugin: not instructor for plugin in INSTRUCTOR_LAB_PLUGINS}}
    page["disabledExtensions"]["@jupyterlab/apputils-extension:announcements"] = True  # no news pop-up
    owner = account.pw_uid, account.pw_gid
    _write_owned(home, ".jupyter/jupyter_server_config.json", json.dumps(server, indent=1), *owner)
    _write_owned(home, ".jupyter/labconfig/page_config.json", json.dumps(page, indent=1), *owner)
    if instructor:
        course = prepare_course_root(home, *owner)
        # the formgrader and every nbgrader the instructor runs find the course root from here
        _write_owned(home, ".jupyter/nbgrader_config.py",
                     f"load_subconfig({str(course / 'nbgrader_config.py')!r})  # noqa: F821 -- provided by Jupyter's config loader\n", *owner)
    return home


def prepare_course_root(home: Path, uid: int, gid: int) -> Path:
    """``~/<course_id>``: a course root the instructor owns (made once; their work is never overwritten)."""
    course = home / COURSE_ID
    if not course.exists():
        course.mkdir()
        shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
        for folder in ("source", "release"):
            shutil.copytree(ROOT / folder, course / folder)
        (course / ".venv").symlink_to(ROOT / ".venv")
        subprocess.run(["chown", "-R", "--no-dereference", f"{uid}:{gid}", str(course)], check=True)
    return course


def make_interpreter_reachable(venv: Path, user: str) -> None:
    """Let every user run the environment's own Python, not whatever ``libpython`` they can reach.

    A venv made from an interpreter under a private folder (pyenv in ``/root``: mode 0700)
    still starts for other users, but silently with the system's libpython and standard
    library (Debian's 3.11.2, whose ``re`` mishandles possessive quantifiers and breaks
    nbconvert's HTML export). Each folder above the base interpreter gets the
    search bit (``o+x``: enter, not list), and so does each folder above the venv itself (a
    checkout in a private folder, e.g. one made by ``mktemp -d``, mode 0700); then ``user`` must
    see the same Python.
    """
    home = Path(next(line.split("=", 1)[1].strip() for line in (venv / "pyvenv.cfg").read_text().splitlines()
                     if line.startswith("home")))
    venv = venv.resolve()
    for folder in dict.fromkeys((home, *home.parents, venv, *venv.parents)):
        mode = folder.stat().st_mode
        if not mode & 0o001:
            print(f"dev.py hub: chmod o+x {folder} (users must reach the course's Python)", flush=True)
            folder.chmod(mode | 0o001)
    probe = [str(venv / "bin" / "python"), "-c", "import sys; print(sys.base_prefix)"]
    wanted = subprocess.run(probe, capture_output=True, text=True, check=True).stdout
    seen = subprocess.run(as_user(user) + probe, capture_output=True, text=True, check=True).stdout
    if seen != wanted:
        raise RuntimeError(f"{user} runs the course's Python from {seen.strip()}, not {wanted.strip()}")


def ensure_exchange(path: Path) -> Path:
    """nbgrader's exchange: everyone may create entries there, nobody may remove another's (sticky)."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o1777)
    return path

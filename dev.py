#!/usr/bin/env python3
"""Set up and run the course with nothing but ``python3``.

    python3 dev.py lab     # open the course in JupyterLab
    python3 dev.py test    # run the whole test suite (on one pytest-xdist worker per core)
    python3 dev.py setup   # only create or update .venv (and check it is exactly the locked set)
    python3 dev.py hub     # JupyterHub with an instructor and two students (as root)
    python3 dev.py lock    # rewrite requirements.lock from requirements.txt (--upgrade: newest of all)
    python3 dev.py lint    # ruff, with the rules of pyproject.toml
    python3 dev.py docs    # build the documentation site into build/docs/html (offline)

Every command creates (or reuses) a virtual environment in ``.venv`` holding exactly
the packages of ``requirements.lock`` (every package, pinned, made by ``python3 dev.py
lock`` from the top-level pins in ``requirements.txt``) and this package in editable
mode. The environment is reinstalled only when ``requirements.txt``,
``requirements.lock`` or ``pyproject.toml`` changes (a hash of the three is kept in
``.venv/.course-stamp``); then, and on every ``setup``, the installed set is compared
with the lock and ``pip check`` runs, and a difference stops with what to do.
Extra arguments are passed through: ``python3 dev.py test -k ring`` or
``python3 dev.py lab --no-browser --port 8899``. ``test`` runs on one pytest-xdist
worker per core (at most 4, ``--dist loadgroup``: tests that share state stay on one
worker, see ``tests/conftest.py``); ``python3 dev.py test -n 0`` runs in one process,
``python3 dev.py test -n 3`` on 3 workers with the same groups.

This file uses only the standard library on purpose: it must run before any
dependency exists.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".course-stamp"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
#: the top-level pins (what the course asks for) and the lock (every package installed, pinned)
REQUIREMENTS = ROOT / "requirements.txt"
LOCK = ROOT / "requirements.lock"
#: this checkout's distribution (installed editable, not in the lock) and the installer's own
#: packages (``pip freeze`` leaves them out too; nothing here needs them at run time)
PROJECT = "distributed-training-course"
INSTALLER = ("pip", "setuptools", "wheel")


def _inputs_hash() -> str:
    digest = hashlib.sha256()
    for path in (REQUIREMENTS, LOCK, ROOT / "pyproject.toml"):
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()


def canonical(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503).

    >>> canonical("Jupyter_Client"), canonical("ruamel.yaml")
    ('jupyter-client', 'ruamel-yaml')
    """
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path: Path) -> dict:
    """``name==version`` lines (``name[extra]==version`` too) of a requirements file as {canonical name: version}.

    Comments, blank lines and ``--hash`` continuations are skipped; a line that is not an exact pin
    (a range, a URL, an index option) stops with the line, because the lock must pin everything.
    """
    pins = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip().rstrip("\\").strip()
        if not line or line.startswith("--hash"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[A-Za-z0-9,._ -]+\])?==([A-Za-z0-9.+!_-]+)"
                             r"(\s+--hash=\S+)*", line)
        if match is None:
            sys.exit(f"dev.py: {path.name} line {number} is not a name==version pin: {line!r}")
        pins[canonical(match[1])] = match[2]
    return pins


_LIST_INSTALLED = ("import importlib.metadata as m, json; "
                   "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))")


def installed(python: Path) -> dict:
    """{canonical name: version} of every distribution in the environment of ``python``."""
    out = subprocess.run([str(python), "-I", "-c", _LIST_INSTALLED], check=True, capture_output=True, text=True).stdout
    return {canonical(name): version for name, version in json.loads(out).items()}


def lock_problems(python: Path = PYTHON) -> list:
    """How the environment of ``python`` differs from :data:`LOCK`, and what ``pip check`` says ([]: none).

    The project (editable) and :data:`INSTALLER` are not compared; everything else must be
    exactly the locked set: no package missing, none at another version, none more.
    """
    locked, present = read_pins(LOCK), installed(python)
    for name in (PROJECT, *INSTALLER):
        present.pop(name, None)
    problems = [f"{name}=={version} is locked but not installed"
                for name, version in sorted(locked.items()) if name not in present]
    problems += [f"{name} is {present[name]}, locked at {version}"
                 for name, version in sorted(locked.items()) if name in present and present[name] != version]
    problems += [f"{name}=={version} is installed but not locked"
                 for name, version in sorted(present.items()) if name not in locked]
    check = subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", "check"],
                           capture_output=True, text=True)
    if check.returncode != 0:
        problems += [f"pip check: {line}" for line in check.stdout.splitlines() if line.strip()]
    return problems


def stale_lock() -> list:
    """Top-level pins of ``requirements.txt`` the lock does not hold at the same version ([]: none)."""
    if not LOCK.exists():
        return [f"{LOCK.name} does not exist"]
    locked = read_pins(LOCK)
    return [f"requirements.txt pins {name}=={version}, {LOCK.name} "
            + (f"has {locked[name]}" if name in locked else "lacks it")
            for name, version in sorted(read_pins(REQUIREMENTS).items()) if locked.get(name) != version]


def verify_environment() -> None:
    """Stop with every difference between ``.venv`` and the lock (CI runs this through ``setup``)."""
    problems = lock_problems()
    if problems:
        sys.exit("dev.py: .venv is not the locked set:\n  " + "\n  ".join(problems)
                 + "\nrun `python3 dev.py setup` again; if the lock itself is wrong, `python3 dev.py lock`")


def install_nbgrader_env_config() -> None:
    """Put ``hub/nbgrader_env_config.py`` on the config path of every nbgrader run from ``.venv``.

    Students' nbgrader never loads the course root's ``nbgrader_config.py``; this
    one gives them the shared exchange (``NBGRADER_EXCHANGE``) and ``alembic``.
    """
    target = VENV / "etc" / "jupyter" / "nbgrader_config.py"
    wanted = (ROOT / "hub" / "nbgrader_env_config.py").read_text()
    if not target.exists() or target.read_text() != wanted:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(wanted)


def install_server_config() -> None:
    """Enable the course's Jupyter server extension in every Jupyter server run from ``.venv`` (``dev.py
    lab``, the hub's single-user servers): a Content-Security-Policy header on the formgrader's pages
    that show a student's notebook (``autograder/engines/formgrader_csp.py``). Written where nbgrader puts
    its own (``etc/jupyter/jupyter_server_config.d``), so Jupyter merges both."""
    target = VENV / "etc" / "jupyter" / "jupyter_server_config.d" / "course-autograder.json"
    wanted = json.dumps({"ServerApp": {"jpserver_extensions": {"autograder.engines.formgrader_csp": True}}}, indent=2) + "\n"
    if not target.exists() or target.read_text() != wanted:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(wanted)


#: packages pip would install as dependencies that nothing here uses and that cost every process time,
#: left out of the lock (so no installer ever installs them, since all install with ``--no-deps``):
#: ``rfc3987-syntax`` (pulled in by ``jsonschema[format-nongpl]``, which jupyter-events requires)
#: builds about 30 Earley parsers when imported, and ``jsonschema`` imports it on its own import,
#: which every ``import nbformat`` does: 1.1 s of CPU in each nbgrader, autograder, Jupyter server
#: and test process. It only adds jsonschema's "iri" format check, which no schema installed here
#: uses (jupyter-events validates its event schemas with the draft-7 format checker; none has an
#: "iri" format). ``pip check`` stays clean without it (the requirement is an extra's).
UNUSED = ("rfc3987-syntax",)


def install_locked() -> None:
    """Make ``.venv`` exactly :data:`LOCK` plus this package (editable), then check it.

    ``--no-deps``: pip installs the lines of the lock and nothing it would resolve on its own; a
    package installed before and no longer locked (an upgrade dropped it, someone ran pip by
    hand) is uninstalled; :func:`verify_environment` then compares and runs ``pip check``.
    """
    stale = stale_lock()
    if stale:
        sys.exit("dev.py: the lock does not match requirements.txt:\n  " + "\n  ".join(stale)
                 + "\nrun `python3 dev.py lock` (and commit requirements.lock)")
    pip = [str(PYTHON), "-m", "pip", "--disable-pip-version-check"]
    subprocess.run(pip + ["install", "-q", "--no-deps", "-r", str(LOCK)], check=True)
    subprocess.run(pip + ["install", "-q", "--no-deps", "-e", str(ROOT)], check=True)
    locked, present = read_pins(LOCK), installed(PYTHON)
    extra = sorted(set(present) - set(locked) - {PROJECT, *INSTALLER})
    if extra:
        print(f"dev.py: removing packages that are not locked: {', '.join(extra)}", flush=True)
        subprocess.run(pip + ["uninstall", "-y", "-q", *extra], check=True)
    verify_environment()


#: the packages installed in editable mode, read from this checkout by every process
PACKAGES = ("course", "autograder", "hub")


def compile_packages() -> None:
    """Write the byte code of :data:`PACKAGES` (``__pycache__``, git-ignored) where it is missing or stale.

    pip byte-compiles what it installs into site-packages, but not an editable install, and this
    machine's environment sets ``PYTHONDONTWRITEBYTECODE`` (the autograder's sandbox does too), so
    without this every process compiles the course from source on import: about 0.05 s of CPU for
    ``import course.exercises`` in every notebook kernel, nbgrader run and test subprocess. A
    stale file costs nothing more than today (Python compiles it in memory); reading byte code
    needs no write access, so the read-only sandbox uses it as well.
    """
    subprocess.run([str(PYTHON), "-m", "compileall", "-q", *(str(ROOT / name) for name in PACKAGES)],
                   check=True, stdout=subprocess.DEVNULL)


def ensure_environment() -> None:
    """Create ``.venv`` and install the pinned requirements if they changed."""
    wanted = _inputs_hash()
    if PYTHON.exists() and STAMP.exists() and STAMP.read_text().strip() == wanted:
        install_nbgrader_env_config()
        install_server_config()
        install_lab_settings()
        compile_packages()
        return
    if not PYTHON.exists():
        print("dev.py: creating virtual environment in .venv", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print(f"dev.py: installing {LOCK.name} (first run takes a few minutes)", flush=True)
    install_locked()
    install_nbgrader_env_config()
    install_server_config()
    install_lab_settings()
    compile_packages()
    STAMP.write_text(wanted + "\n")


def _exec(argv: list[str]) -> None:
    """Replace this process (so Ctrl-C and exit codes behave as expected)."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("PYTHONHASHSEED", "0")
    os.chdir(ROOT)
    os.execve(argv[0], argv, env)


def install_lab_settings() -> None:
    """Put the course's JupyterLab settings (``jupyterlab-overrides.json``: no "official Jupyter news?"
    prompt over the instruments, no update check) where every JupyterLab run from ``.venv`` reads them:
    ``dev.py lab`` and the hub's single-user servers alike."""
    settings = VENV / "share" / "jupyter" / "lab" / "settings"
    wanted = (ROOT / "jupyterlab-overrides.json").read_bytes()
    if not (settings / "overrides.json").exists() or (settings / "overrides.json").read_bytes() != wanted:
        settings.mkdir(parents=True, exist_ok=True)
        (settings / "overrides.json").write_bytes(wanted)


def run_lab(extra: list[str]) -> None:
    argv = [str(BIN / "jupyter"), "lab", f"--ServerApp.root_dir={ROOT}",
            # kernel websockets with TCP_NODELAY: course/lab_server.py (a redraw otherwise waits ~40 ms for an ACK)
            "--ServerApp.kernel_websocket_connection_class=course.lab_server.NoDelayKernelConnection",
            # a terminal started without a tty is a login shell, whose /etc/profile drops .venv/bin from PATH
            # (`course student NAME` was not found): a plain interactive shell keeps the PATH _exec sets
            "--ServerApp.terminado_settings=shell_command=" + ("/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh")]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")  # JupyterLab refuses to start as root otherwise
    # Land on the course map; a path given by the user wins.
    if not any(not arg.startswith("-") for arg in extra):
        argv.append("notebooks/index.ipynb")
    _exec(argv + extra)


#: arguments after which pytest must run in one process (or that choose the workers themselves)
_SERIAL_ARGS = ("-n", "--numprocesses", "--dist", "--pdb", "--trace", "--collect-only", "--co", "--sw",
                "--stepwise", "no:xdist", "-pno:xdist")


def parallel_args(extra: list[str]) -> list[str]:
    """pytest-xdist options for the test run: one worker per core (at most 4), grouped by shared state.

    ``--dist loadgroup`` keeps each group of ``tests/conftest.py`` (the sandbox's
    user ids, the browser's JupyterLab, the hub, each module's fixtures) on one
    worker; ``--no-loadscope-reorder`` keeps the longest-first queue that
    conftest builds. Nothing is added when the caller chose (``-n 0`` runs in one
    process) or asked for something one process does (``--pdb``, ``--collect-only``...).
    """
    workers = min(os.cpu_count() or 1, 4)
    given = _workers_given(extra)
    if given is not None and given >= 2 and not any(arg.split("=", 1)[0] == "--dist" for arg in extra):
        return ["--dist", "loadgroup", "--no-loadscope-reorder"]  # ``-n 3``: the caller's count, our groups
    chosen = given is not None or any(arg.split("=", 1)[0] in _SERIAL_ARGS for arg in extra)
    if workers < 2 or chosen:
        return []
    return ["-n", str(workers), "--dist", "loadgroup", "--no-loadscope-reorder"]


def _workers_given(extra: list[str]):
    """The worker count of ``-n N`` / ``-nN`` / ``--numprocesses[=]N`` in ``extra`` (None: none given or not a number).

    >>> _workers_given(["-n", "3"]), _workers_given(["-n0"]), _workers_given(["--numprocesses=2"]), _workers_given(["-k", "x"])
    (3, 0, 2, None)
    """
    for i, arg in enumerate(extra):
        name, _, value = arg.partition("=")
        if name in ("-n", "--numprocesses"):
            value = value or (extra[i + 1] if i + 1 < len(extra) else "")
        elif arg.startswith("-n") and arg[2:].isdigit():
            value = arg[2:]
        else:
            continue
        return int(value) if value.isdigit() else None
    return None


def profile_args(extra: list[str]) -> list[str]:
    """``--durations=30`` unless the caller chose: every run (CI's too) ends with where its time went."""
    return [] if any(arg.startswith("--durations") for arg in extra) else ["--durations=30"]


def run_tests(extra: list[str]) -> None:
    _exec([str(PYTHON), "-m", "pytest"] + parallel_args(extra) + profile_args(extra) + extra)


def run_setup(extra: list[str]) -> None:
    """Only create or update ``.venv`` (``ensure_environment`` has run by now), and check it against the lock."""
    verify_environment()
    print(f"dev.py: environment ready in {VENV}: exactly {LOCK.name}, pip check clean", flush=True)


def run_lint(extra: list[str]) -> None:
    """``ruff check`` over the repository with the rules of ``pyproject.toml`` (extra arguments go to ruff)."""
    _exec([str(BIN / "ruff"), "check", *(extra or ["."])])


LOCK_HEADER = """\
# Every package the course installs, pinned. Generated by `python3 dev.py lock` from the top-level
# pins in requirements.txt (Python {python}); do not edit: change requirements.txt and run it again,
# or `python3 dev.py lock --upgrade` for the newest releases of everything that is not pinned there.
# dev.py, .ci/run, the Gradescope bundle, the Kubernetes image and the CI templates install exactly
# these lines (pip install --no-deps -r requirements.lock) and run pip check.
# Left out: pip, setuptools, wheel (the installer's) and {unused} (unused: dev.py's UNUSED).
"""


def run_lock(extra: list[str]) -> None:
    """Resolve ``requirements.txt`` in a throwaway venv and write every installed package to :data:`LOCK`.

    Without ``--upgrade`` the packages already locked keep their versions (given to pip as
    constraints) unless ``requirements.txt`` pins them itself, so adding or bumping a top-level
    pin changes only what it needs; ``--upgrade`` resolves everything afresh.
    """
    upgrade = "--upgrade" in extra
    top = read_pins(REQUIREMENTS)
    with tempfile.TemporaryDirectory(prefix="course-lock-") as tmp:
        env = Path(tmp) / "venv"
        venv.EnvBuilder(with_pip=True).create(env)
        python = env / ("Scripts" if os.name == "nt" else "bin") / ("python.exe" if os.name == "nt" else "python")
        pip = [str(python), "-m", "pip", "--disable-pip-version-check"]
        command = pip + ["install", "-q", "--no-compile", "-r", str(REQUIREMENTS)]
        if LOCK.exists() and not upgrade:
            kept = Path(tmp) / "kept.txt"
            kept.write_text("".join(f"{name}=={version}\n" for name, version in read_pins(LOCK).items()
                                    if name not in top and name not in UNUSED))
            command += ["-c", str(kept)]
        print(f"dev.py: resolving {REQUIREMENTS.name} in a throwaway venv"
              + (" (everything afresh)" if upgrade else " (locked versions kept)"), flush=True)
        if subprocess.run(command).returncode != 0:
            sys.exit("dev.py lock: pip could not install requirements.txt"
                     + ("" if upgrade else " with the versions locked now; try `python3 dev.py lock --upgrade`"))
        subprocess.run(pip + ["uninstall", "-y", "-q", *UNUSED], check=True)
        found = {name: version for name, version in installed(python).items() if name not in (PROJECT, *INSTALLER)}
        check = subprocess.run(pip + ["check"], capture_output=True, text=True)
        if check.returncode != 0:
            sys.exit(f"dev.py lock: pip check fails on the resolved set:\n{check.stdout}")
    old = read_pins(LOCK) if LOCK.exists() else {}
    LOCK.write_text(LOCK_HEADER.format(python="%d.%d" % sys.version_info[:2], unused=", ".join(UNUSED))
                    + "".join(f"{name}=={found[name]}\n" for name in sorted(found)))
    changes = [f"  {name}: {old.get(name, '-')} -> {found.get(name, '-')}"
               for name in sorted(set(old) | set(found)) if old.get(name) != found.get(name)]
    print(f"dev.py: wrote {LOCK.name}: {len(found)} packages, {len(changes)} changed"
          + "".join("\n" + line for line in changes), flush=True)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_hub(extra: list[str]) -> None:
    """JupyterHub for the course (``hub/``): proxy, people, exchange, then ``jupyterhub``."""
    import argparse
    import json
    import secrets

    from hub import setup
    from hub.users import INSTRUCTOR, STUDENTS

    parser = argparse.ArgumentParser(prog="python3 dev.py hub")
    parser.add_argument("--ip", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--state", default="/srv/course-hub", help="hub database, cookie secret, password")
    parser.add_argument("--exchange", default="/srv/nbgrader/exchange", help="nbgrader's shared exchange")
    parser.add_argument("--instructor", default=INSTRUCTOR)
    parser.add_argument("--students", default=",".join(STUDENTS), help="comma-separated user names")
    parser.add_argument("--course", action="append", default=None, metavar="ID=STUDENT,STUDENT",
                        help=f"a course and who takes it (repeatable; default: {setup.COURSE_ID}=every student)")
    args = parser.parse_args(extra)
    if os.geteuid() != 0:
        sys.exit("dev.py hub: run as root (it creates Unix users and starts their servers as them)")
    proxy = setup.ensure_proxy(VENV)
    state = Path(args.state)
    state.mkdir(parents=True, exist_ok=True)
    state.chmod(0o700)
    password_file = state / "password"
    if not password_file.exists():
        password_file.write_text(secrets.token_urlsafe(12) + "\n")
        password_file.chmod(0o600)
    password = password_file.read_text().strip()
    students = [name for name in args.students.split(",") if name]
    courses = {setup.COURSE_ID: students}
    if args.course:
        courses = {cid: [n for n in members.split(",") if n]
                   for cid, _, members in (spec.partition("=") for spec in args.course)}
    setup.configure_person(args.instructor, instructor=True)
    for student in students:
        setup.configure_person(student, instructor=False)
    setup.make_interpreter_reachable(VENV, students[0] if students else args.instructor)
    exchange = setup.ensure_exchange(Path(args.exchange))
    os.environ.update(
        COURSE_HUB_STATE=str(state), COURSE_HUB_VENV_BIN=str(BIN), COURSE_HUB_PROXY=str(proxy),
        COURSE_HUB_IP=args.ip, COURSE_HUB_PORT=str(args.port), COURSE_HUB_INTERNAL_PORT=str(_free_port()),
        COURSE_HUB_PROXY_API_PORT=str(_free_port()), COURSE_HUB_PASSWORD=password,
        COURSE_HUB_INSTRUCTORS=args.instructor, COURSE_HUB_STUDENTS=",".join(students),
        COURSE_HUB_EXCHANGE=str(exchange), COURSE_HUB_COURSES=json.dumps(courses),
    )
    print(f"dev.py hub: http://{args.ip}:{args.port}/  users {args.instructor} (instructor), "
          f"{', '.join(students)}; courses {courses}; password {password} (in {password_file}); exchange {exchange}", flush=True)
    _exec([str(BIN / "jupyterhub"), "-f", str(ROOT / "hub" / "jupyterhub_config.py")])


#: where ``python3 dev.py docs`` writes the site (git-ignored, like every ``build/``)
DOCS_OUT = ROOT / "build" / "docs"


def docs_command(extra: list[str]) -> list[str]:
    """The ``sphinx-build`` of the documentation site: warnings are errors, every one reported.

    ``-n`` (nitpicky) makes every cross-reference that resolves nowhere a warning; the site's
    own link check (``docs/_ext/internal_links.py``) does the same for the HTML it wrote.
    Extra arguments go to ``sphinx-build`` (``-E`` rebuilds every page).
    """
    return [str(PYTHON), "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-n",
            "-d", str(DOCS_OUT / "doctrees"), *extra, str(ROOT / "docs"), str(DOCS_OUT / "html")]


def run_docs(extra: list[str]) -> None:
    """Build the documentation site (``docs/``) into ``build/docs/html``, offline."""
    _exec(docs_command(extra))


COMMANDS = {"lab": run_lab, "test": run_tests, "hub": run_hub, "setup": run_setup, "lock": run_lock,
            "lint": run_lint, "docs": run_docs}


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__)
        sys.exit(2)
    if argv[0] == "lock":  # needs no .venv: it resolves in a throwaway one
        run_lock(argv[1:])
        return
    ensure_environment()
    COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])

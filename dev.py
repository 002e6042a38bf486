#!/usr/bin/env python3
"""Set up and run the course with nothing but ``python3``.

    python3 dev.py lab     # open the course in JupyterLab
    python3 dev.py test    # run the whole test suite (on one pytest-xdist worker per core)
    python3 dev.py setup   # only create or update .venv (and check it is exactly the locked set)
    python3 dev.py hub     # JupyterHub with an instructor and two students (as root)
    python3 dev.py lock    # recompile the lock, requirements/*.txt, from requirements/*.in (--upgrade: newest of all)
    python3 dev.py install SET VENV   # install the locked SET (grading, course, dev) and the course into VENV
    python3 dev.py lint    # ruff, with the rules of pyproject.toml
    python3 dev.py docs    # build the documentation site into build/docs/html (offline)

Every command creates (or reuses) a virtual environment in ``.venv`` holding exactly
the packages of ``requirements/dev.txt`` (every package the development set needs, pinned and
hashed, compiled by ``python3 dev.py lock`` from the top-level pins in ``requirements/*.in``) and
this package in editable mode. The environment is reinstalled only when a file of
``requirements/`` or ``pyproject.toml`` changes (a hash of them is kept in
``.venv/.course-stamp``); then, and on every ``setup``, the installed set is compared
with the lock and ``pip check`` runs, and a difference stops with what to do. ``install`` is the
one install recipe: the Gradescope bundle, the CI templates and the Kubernetes image run it too.
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
#: the lock: three layers, each compiled (``python3 dev.py lock``, by uv) from its ``.in`` file of top-level
#: pins into a ``.txt`` of every package it needs, pinned and hashed. Each layer is compiled held to the one
#: below (``-c``), so grading.txt is a subset of course.txt, which is a subset of dev.txt, at the same versions.
REQUIREMENTS = ROOT / "requirements"
#: what grading needs (the grading images), what the course needs (the hub's image), what development needs (.venv)
SETS = ("grading", "course", "dev")
DEV_SET = "dev"
LOCK = REQUIREMENTS / f"{DEV_SET}.txt"
#: this checkout's distribution (installed, editable in .venv, not in the lock) and the installer's own
#: package (``pip freeze`` leaves it out too; nothing here needs it at run time). setuptools is locked:
#: nbgrader requires it, and the course is built with the locked one (``--no-build-isolation``), so an
#: install downloads nothing beyond the lock's hashed files.
PROJECT = "distributed-training-course"
INSTALLER = ("pip",)
#: the oldest Python every locked release supports (soupsieve 4.1.3 asks for 3.11.5); pyproject.toml's
#: requires-python says the same, and the lock is compiled for it
PYTHON_FLOOR = (3, 11, 5)
#: the resolver ``dev.py lock`` runs, installed from the package index into a throwaway venv
LOCK_TOOL = "uv==0.13.8"


def lock_file(name: str) -> Path:
    """``requirements/<name>.txt``: every package of the set ``name``, pinned and hashed."""
    return REQUIREMENTS / f"{name}.txt"


def input_file(name: str) -> Path:
    """``requirements/<name>.in``: the set's top-level pins, written by hand."""
    return REQUIREMENTS / f"{name}.in"


def _inputs_hash() -> str:
    digest = hashlib.sha256()
    for path in [*sorted(REQUIREMENTS.glob("*.in")), *sorted(REQUIREMENTS.glob("*.txt")), ROOT / "pyproject.toml"]:
        digest.update(path.name.encode() + b"\0" + (path.read_bytes() if path.exists() else b""))
    return digest.hexdigest()


def canonical(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503).

    >>> canonical("Jupyter_Client"), canonical("ruamel.yaml")
    ('jupyter-client', 'ruamel-yaml')
    """
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path: Path, layers: bool = False) -> dict:
    """``name==version`` lines (``name[extra]==version`` too) of a requirements file as {canonical name: version}.

    Comments, blank lines and ``--hash`` continuations are skipped; a line that is not an exact pin
    (a range, a URL, an index option) stops with the line, because the lock must pin everything.
    ``layers``: an ``.in`` file's ``-r other.in`` adds that file's pins, ``-c other.txt`` is skipped.
    """
    pins = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip().rstrip("\\").strip()
        if not line or line.startswith("--hash"):
            continue
        if layers and line.startswith(("-r ", "-c ")):
            if line.startswith("-r "):
                pins.update(read_pins(path.parent / line[3:].strip(), layers=True))
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


def lock_problems(python: Path = PYTHON, name: str = DEV_SET) -> list:
    """How the environment of ``python`` differs from the locked set ``name``, and what ``pip check`` says ([]: none).

    The project and :data:`INSTALLER` are not compared; everything else must be exactly the
    locked set: no package missing, none at another version, none more.
    """
    lock = lock_file(name)
    locked, present = read_pins(lock), installed(python)
    for other in (PROJECT, *INSTALLER):
        present.pop(other, None)
    problems = [f"{pkg}=={version} is locked but not installed"
                for pkg, version in sorted(locked.items()) if pkg not in present]
    problems += [f"{pkg} is {present[pkg]}, locked at {version}"
                 for pkg, version in sorted(locked.items()) if pkg in present and present[pkg] != version]
    problems += [f"{pkg}=={version} is installed but not locked"
                 for pkg, version in sorted(present.items()) if pkg not in locked]
    check = subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", "check"],
                           capture_output=True, text=True)
    if check.returncode != 0:
        problems += [f"pip check: {line}" for line in check.stdout.splitlines() if line.strip()]
    return problems


def stale_lock() -> list:
    """How the lock falls short of its inputs ([]: it does not).

    Each set's lock must exist, hold every top-level pin of its ``.in`` file (and of the layers
    that file includes) at the same version, and hold the set below it at the same versions.
    """
    problems, below = [], None
    for name in SETS:
        lock = lock_file(name)
        if not lock.exists():
            problems.append(f"{lock.relative_to(ROOT)} does not exist")
            below = None
            continue
        locked = read_pins(lock)
        problems += [f"{input_file(name).relative_to(ROOT)} pins {pkg}=={version}, {lock.relative_to(ROOT)} "
                     + (f"has {locked[pkg]}" if pkg in locked else "lacks it")
                     for pkg, version in sorted(read_pins(input_file(name), layers=True).items())
                     if locked.get(pkg) != version]
        if below is not None:
            problems += [f"{lock.relative_to(ROOT)} " + (f"has {pkg}=={locked[pkg]}" if pkg in locked else f"lacks {pkg}")
                         + f" where {lock_file(below[0]).relative_to(ROOT)} has {version}"
                         for pkg, version in sorted(below[1].items()) if locked.get(pkg) != version]
        below = (name, locked)
    # the front door points at the development set and pins nothing itself (a pin there would be missed)
    front = ROOT / "requirements.txt"
    if front.exists():
        lines = [line.split("#", 1)[0].strip() for line in front.read_text().splitlines()]
        problems += [f"requirements.txt says {line!r}: top-level pins go in requirements/*.in"
                     for line in lines if line and line != f"-r requirements/{DEV_SET}.txt"]
    return problems


def verify_environment(python: Path = PYTHON, name: str = DEV_SET) -> None:
    """Stop with every difference between the environment of ``python`` and the locked set ``name``."""
    problems = lock_problems(python, name)
    if problems:
        sys.exit(f"dev.py: {python.parent.parent} is not the locked set {lock_file(name).relative_to(ROOT)}:\n  "
                 + "\n  ".join(problems)
                 + "\nrun `python3 dev.py setup` (or `install`) again; if the lock itself is wrong, `python3 dev.py lock`")


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
#: left out of the lock (``uv pip compile --no-emit-package``; every installer installs with ``--no-deps``):
#: ``rfc3987-syntax`` (pulled in by ``jsonschema[format-nongpl]``, which jupyter-events requires)
#: builds about 30 Earley parsers when imported, and ``jsonschema`` imports it on its own import,
#: which every ``import nbformat`` does: 1.1 s of CPU in each nbgrader, autograder, Jupyter server
#: and test process. It only adds jsonschema's "iri" format check, which no schema installed here
#: uses (jupyter-events validates its event schemas with the draft-7 format checker; none has an
#: "iri" format). ``pip check`` stays clean without it (the requirement is an extra's).
UNUSED = ("rfc3987-syntax",)


def venv_python(env: Path) -> Path:
    return env / ("Scripts" if os.name == "nt" else "bin") / ("python.exe" if os.name == "nt" else "python")


def install(name: str, env: Path, project=ROOT, editable: bool = False) -> None:
    """The install recipe, the one every environment of the course is made with: make ``env`` exactly
    the locked set ``name`` plus the course from ``project`` (None: the lock only, as an image's
    cached first layer), then check it.

    ``python3 dev.py setup`` runs it for ``.venv`` (``dev``, editable); the Gradescope bundle's
    ``setup.sh``, the CI templates' setup step and the Kubernetes image run it as
    ``python3 dev.py install SET VENV``. ``--require-hashes``: every file pip installs must be one
    the lock names by its sha256; ``--no-deps``: pip installs the lines of the lock and nothing it
    would resolve on its own; the course is built with the locked setuptools
    (``--no-build-isolation``), so nothing is downloaded beyond the lock. A package installed
    before and no longer locked is uninstalled; then the set is compared and ``pip check`` runs.
    """
    stale = stale_lock()
    if stale:
        sys.exit("dev.py: the lock does not match requirements/*.in:\n  " + "\n  ".join(stale)
                 + "\nrun `python3 dev.py lock` (and commit requirements/)")
    python = venv_python(env)
    if not python.exists():
        print(f"dev.py: creating virtual environment in {env}", flush=True)
        venv.EnvBuilder(with_pip=True).create(env)
    pip = [str(python), "-m", "pip", "--disable-pip-version-check"]
    subprocess.run(pip + ["install", "-q", "--no-deps", "--require-hashes", "-r", str(lock_file(name))], check=True)
    if project is not None:
        subprocess.run(pip + ["install", "-q", "--no-deps", "--no-build-isolation",
                              *(["-e"] if editable else []), str(project)], check=True)
    locked, present = read_pins(lock_file(name)), installed(python)
    extra = sorted(set(present) - set(locked) - {PROJECT, *INSTALLER})
    if extra:
        print(f"dev.py: removing packages that are not locked: {', '.join(extra)}", flush=True)
        subprocess.run(pip + ["uninstall", "-y", "-q", *extra], check=True)
    verify_environment(python, name)


def install_locked() -> None:
    """Make ``.venv`` exactly the development set plus this package (editable), then check it."""
    install(DEV_SET, VENV, ROOT, editable=True)


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
        install_server_env_config()
        install_lab_settings()
        compile_packages()
        return
    if not PYTHON.exists():
        print("dev.py: creating virtual environment in .venv", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print(f"dev.py: installing {LOCK.relative_to(ROOT)} (the first run takes a few minutes)", flush=True)
    install_locked()
    install_nbgrader_env_config()
    install_server_config()
    install_server_env_config()
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


def install_server_env_config() -> None:
    """Put ``hub/jupyter_server_env_config.py`` where every Jupyter server run from ``.venv`` reads it
    (``.venv/etc/jupyter/jupyter_server_config.py``): the environment's ``bin`` (the ``course`` command) on
    the PATH of every JupyterLab Terminal, whether the server was started by ``dev.py lab``, as a plain
    ``.venv/bin/jupyter lab`` or by a hub."""
    target = VENV / "etc" / "jupyter" / "jupyter_server_config.py"
    wanted = (ROOT / "hub" / "jupyter_server_env_config.py").read_text()
    if not target.exists() or target.read_text() != wanted:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(wanted)


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
    print(f"dev.py: environment ready in {VENV}: exactly {LOCK.relative_to(ROOT)}, pip check clean", flush=True)


def run_install(extra: list[str]) -> None:
    """``python3 dev.py install SET VENV [--project DIR] [--editable]``: :func:`install`, for an image or CI."""
    import argparse

    parser = argparse.ArgumentParser(prog="python3 dev.py install",
                                     description="Install the locked SET and the course into VENV (created if "
                                                 "missing) and check it is exactly that set (pip check too).")
    parser.add_argument("set", choices=SETS, help="grading: grading images; course: the hub's image; dev: development")
    parser.add_argument("venv", type=Path, help="the virtual environment to create or update")
    parser.add_argument("--project", type=Path, default=ROOT, help="the course's source tree (default: this checkout)")
    parser.add_argument("--editable", action="store_true", help="install the course in editable mode")
    parser.add_argument("--no-project", action="store_true",
                        help="install the locked set only (an image's first layer, cached while the lock is unchanged)")
    args = parser.parse_args(extra)
    install(args.set, args.venv.resolve(), None if args.no_project else args.project.resolve(), args.editable)
    print(f"dev.py: {args.venv} holds exactly {lock_file(args.set).relative_to(ROOT)}"
          + ("" if args.no_project else " and the course") + "; pip check clean", flush=True)


def run_lint(extra: list[str]) -> None:
    """``ruff check`` over the repository with the rules of ``pyproject.toml`` (extra arguments go to ruff)."""
    _exec([str(BIN / "ruff"), "check", *(extra or ["."])])


def run_lock(extra: list[str]) -> None:
    """Compile each set's ``requirements/<set>.in`` into ``requirements/<set>.txt`` with uv, in a throwaway venv.

    Every package pinned and hashed (every file of that release on the index, so any platform's
    wheel checks), for :data:`PYTHON_FLOOR`. Each set is compiled held to the set below it
    (its ``.in`` says ``-c``). Without ``--upgrade`` uv keeps the versions locked now unless an
    ``.in`` file pins another, so adding or bumping a pin changes only what it needs;
    ``--upgrade`` resolves everything afresh. uv reads no pip configuration and writes no index
    or find-links line, and the result is checked for one.
    """
    upgrade = "--upgrade" in extra
    old = {name: read_pins(lock_file(name)) for name in SETS if lock_file(name).exists()}
    with tempfile.TemporaryDirectory(prefix="course-lock-") as tmp:
        tool = Path(tmp) / "venv"
        venv.EnvBuilder(with_pip=True).create(tool)
        subprocess.run([str(venv_python(tool)), "-m", "pip", "--disable-pip-version-check", "install", "-q",
                        LOCK_TOOL], check=True)
        uv = venv_python(tool).parent / ("uv.exe" if os.name == "nt" else "uv")
        print("dev.py: compiling requirements/*.in" + (" (everything afresh)" if upgrade else " (locked versions kept)"),
              flush=True)
        for name in SETS:
            command = [str(uv), "pip", "compile", "--quiet", "--no-config", "--generate-hashes",
                       "--python-version", ".".join(map(str, PYTHON_FLOOR)),
                       "--custom-compile-command", "python3 dev.py lock",
                       *(arg for package in UNUSED for arg in ("--no-emit-package", package)),
                       *(["--upgrade"] if upgrade else []),
                       str(input_file(name).relative_to(ROOT)), "-o", str(lock_file(name).relative_to(ROOT))]
            if subprocess.run(command, cwd=ROOT).returncode != 0:
                sys.exit(f"dev.py lock: uv could not resolve requirements/{name}.in"
                         + ("" if upgrade else " with the versions locked now; try `python3 dev.py lock --upgrade`"))
    for name in SETS:
        text = lock_file(name).read_text()
        if re.search(r"://|^\s*--(index-url|extra-index-url|find-links|trusted-host)", text, re.M):
            sys.exit(f"dev.py lock: {lock_file(name).name} names an index or a host; it must hold pins and hashes only")
        found = read_pins(lock_file(name))
        before = old.get(name, {})
        changes = [f"  {pkg}: {before.get(pkg, '-')} -> {found.get(pkg, '-')}"
                   for pkg in sorted(set(before) | set(found)) if before.get(pkg) != found.get(pkg)]
        print(f"dev.py: wrote requirements/{name}.txt: {len(found)} packages, {len(changes)} changed"
              + "".join("\n" + line for line in changes), flush=True)
    stale = stale_lock()
    if stale:
        sys.exit("dev.py lock: the compiled lock still falls short:\n  " + "\n  ".join(stale))


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
            "install": run_install, "lint": run_lint, "docs": run_docs}
#: commands that need no .venv: ``lock`` resolves in a throwaway venv, ``install`` makes another environment
WITHOUT_VENV = ("lock", "install")


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__)
        sys.exit(2)
    if sys.version_info < PYTHON_FLOOR:
        sys.exit(f"dev.py: the locked packages need Python >= {'.'.join(map(str, PYTHON_FLOOR))}; "
                 f"this is {sys.version.split()[0]} ({sys.executable})")
    if argv[0] in WITHOUT_VENV:
        COMMANDS[argv[0]](argv[1:])
        return
    ensure_environment()
    COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])

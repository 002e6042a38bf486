"""Isolation of one submission: bubblewrap namespaces plus Linux rlimits.

What a sandboxed run gets (see README, "Isolation"):

* its own PID, network, IPC and UTS namespaces (``bwrap --unshare-*``): no
  network but loopback (the kernel's ZeroMQ sockets), no view of other
  processes, killed with its parent (``--die-with-parent``);
* a file system built from an allow-list, read-only: the system directories,
  the Python installation and virtual environment, and the ``course`` and
  ``autograder`` packages. ``source/``, the gradebook, ``submitted/`` and other
  students' scratch copies are simply not there;
* one writable directory, ``/scratch``: a tmpfs capped at ``Limits.scratch_bytes``
  holding a copy of the submission's files (so no submission can fill the disk);
* when the grader runs as root: a user id of its own per worker slot
  (``setpriv``), one that no other grader on the machine holds at the same time
  (:func:`slot_uid`), so the process-count limit counts this submission only, and
  no capabilities;
* rlimits (``prlimit``): address space, processes, CPU seconds, file size,
  open files, no core dumps (:data:`autograder.isolation.policy.RLIMITS`); a wall-clock limit per cell (nbclient) and per
  submission (the parent kills the whole tree).

If bubblewrap is missing or cannot create namespaces, :func:`probe` says so
and the grader falls back to rlimits only, with a loud warning. A root grader's
kernels are forked by :mod:`autograder.isolation.warm` into a sandbox built in the child instead of by
bwrap. Both build the one :class:`~autograder.isolation.policy.Policy` that :func:`policy` returns
(namespaces, mounts, rlimits, environment, uid): neither keeps its own copy.
"""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
import stat
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from . import policy as declared
from .limits import GradingLimits, MiB
from .policy import SCRATCH, SCRATCH_INPUT, Policy
#: first user id handed to worker slots when running as root
FIRST_SLOT_UID = 61000
#: user ids a root grader may claim for its slots: FIRST_SLOT_UID .. FIRST_SLOT_UID + SLOT_UIDS - 1
SLOT_UIDS = 1000
#: one lock file per claimed slot uid (root-only; /run is root's and emptied at boot)
UID_LOCK_DIR = Path("/run/course-autograder")

_claims: Dict[int, int] = {}  # slot -> uid, held by this process until it exits
_claim_fds: List[int] = []
_claim_lock = threading.Lock()


def slot_uid(slot: int) -> int:
    """The user id worker ``slot`` of this process runs student code as (the grader runs as root).

    A uid no other grader on this machine holds: two graders at once (two courses, or the
    test suite's parallel workers) must not share one, because the process limit
    (``RLIMIT_NPROC``) counts every process of a uid machine-wide, so a fork bomb graded by
    one would starve an honest submission graded by the other. Each uid is claimed with an
    exclusive ``flock`` on ``UID_LOCK_DIR/<uid>`` (opened close-on-exec: no sandbox inherits
    it), kept for the life of this process and released by the kernel when it exits, even
    after a crash. Alone on the machine, slot ``k`` gets ``FIRST_SLOT_UID + k``.
    """
    with _claim_lock:
        if slot in _claims:
            return _claims[slot]
        UID_LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(UID_LOCK_DIR)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
            raise RuntimeError(f"{UID_LOCK_DIR} must be a folder of root's that only root can write")
        taken = set(_claims.values())
        for uid in range(FIRST_SLOT_UID + slot, FIRST_SLOT_UID + SLOT_UIDS):
            if uid in taken:
                continue
            fd = os.open(UID_LOCK_DIR / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # another grader's
                os.close(fd)
                continue
            _claim_fds.append(fd)
            _claims[slot] = uid
            return uid
        raise RuntimeError(f"every slot user id from {FIRST_SLOT_UID + slot} to {FIRST_SLOT_UID + SLOT_UIDS - 1} "
                           "is held by another grader")

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")


@dataclass(frozen=True)
class Limits:
    """Resource limits of one submission (seconds, bytes, counts), as the sandbox applies them.

    The limits an instructor sets are declared once, in :class:`autograder.isolation.limits.GradingLimits`
    (:meth:`Limits.of` makes this record from them; its defaults are the declared ones); the others
    are fixed here."""

    cell_timeout: int = GradingLimits.default("cell_timeout")
    submission_timeout: int = GradingLimits.default("timeout")
    memory_bytes: int = GradingLimits.default("memory_mb") * MiB
    processes: int = GradingLimits.default("max_processes")
    cpu_seconds: int = 600
    file_bytes: int = 256 * 2**20
    open_files: int = 1024
    output_bytes: int = 2_000_000
    scratch_bytes: int = GradingLimits.default("scratch_mb") * MiB

    def __post_init__(self):
        for name in ("cell_timeout", "submission_timeout", "memory_bytes", "processes",
                     "cpu_seconds", "file_bytes", "open_files", "output_bytes", "scratch_bytes"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")

    @classmethod
    def of(cls, grading: GradingLimits) -> "Limits":
        """The limits ``grading`` sets, in seconds and bytes (CPU time: the submission's time)."""
        return cls(cell_timeout=grading.cell_timeout, submission_timeout=grading.timeout,
                   memory_bytes=grading.memory_mb * MiB, processes=grading.max_processes,
                   cpu_seconds=max(grading.timeout, 1), scratch_bytes=grading.scratch_mb * MiB)


def python_executable() -> str:
    """This interpreter as an absolute path (a venv's ``bin/python``, symlink kept)."""
    return os.path.abspath(sys.executable)


def _package_dirs() -> List[str]:
    """Directories that must be readable for ``course`` and ``autograder`` to import."""
    import course

    here = Path(__file__).resolve().parents[1]  # autograder/ (may be a namespace package when editable)
    return sorted({str(here), str(Path(list(course.__path__)[0]).resolve())})


def readable_paths(course_visible: bool = True) -> List[str]:
    """The allow-list of read-only paths inside the sandbox.

    With ``course_visible=False`` (the clean room, :mod:`autograder.judging.sandboxed_cleanroom`)
    the ``course`` and ``autograder`` packages are left out.

    Each path is bound at its real path, so student code sees where Python, the virtual
    environment and the packages were installed (``course.__file__``, ``sys.path``, ``PATH``,
    ``/proc/self/mountinfo``): with an editable install, the instructor's clone. Not moved to a
    neutral path: a root grader's kernels are forked from an interpreter that imported the course
    from its real path (:mod:`autograder.isolation.warm`), and an editable install's finder and metadata in
    site-packages name the clone anyway. Nothing else of the host is there (README, "Isolation":
    grade from a non-editable install in a neutral venv to show no home folder).
    """
    paths = [p for p in _SYSTEM_DIRS if os.path.exists(p)]
    for prefix in (sys.base_prefix, sys.prefix, sys.exec_prefix):
        real = str(Path(prefix).resolve())
        if not any(real == p or real.startswith(p + "/") for p in paths):
            paths.append(real)
    for pkg in _package_dirs() if course_visible else ():
        if not any(pkg.startswith(p + "/") for p in paths):
            paths.append(pkg)
    return paths


def hidden_package_dirs() -> List[str]:
    """Package folders inside the read-only allow-list that the clean room must not see.

    An editable install (this repo's) keeps them outside every bound path; a
    regular install puts them in site-packages, which is bound: those get an
    empty tmpfs over them.
    """
    bound = readable_paths(course_visible=False)
    return [pkg for pkg in _package_dirs() if any(pkg.startswith(p + "/") for p in bound)]


def sandbox_env(scratch: str, student: Optional[str] = None) -> dict:
    """A clean environment: nothing of the grader's own environment leaks in.

    ``student`` (the id the grader grades, never one the submission names) becomes
    ``COURSE_STUDENT``, so the kernel's prompts, visible checks and nbgrader test cells use that
    student's variant (see :mod:`course.assess.variants`), as in the student's own kernel.
    """
    venv_bin = str(Path(python_executable()).parent)
    env = {
        "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": scratch,
        "TMPDIR": f"{scratch}/.tmp",
        "IPYTHONDIR": f"{scratch}/.ipython",
        "JUPYTER_RUNTIME_DIR": f"{scratch}/.jupyter/runtime",
        "JUPYTER_CONFIG_DIR": f"{scratch}/.jupyter",
        "MPLCONFIGDIR": f"{scratch}/.tmp",
        "COURSE_LEDGER": f"{scratch}/.course/ledger.json",
        "NBGRADER_EXECUTION": "autograde",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "LANG": "C.UTF-8",
    }
    if student:
        env["COURSE_STUDENT"] = student
    return env


def _parents(path: str) -> List[str]:
    parts = Path(path).parts[1:]
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


def policy(scratch_dir: str, uid: Optional[int], limits: Optional[Limits] = None, extra_binds: Sequence[str] = (),
           course_visible: bool = True, student: Optional[str] = None, shared_memory: bool = False) -> Policy:
    """The sandbox of one run (:mod:`autograder.isolation.policy`): the allow-list read-only, ``extra_binds``
    (the kernel's IPC sockets and connection file) writable, the packages hidden when not
    ``course_visible``, a copy of ``scratch_dir`` as /scratch, ``limits``' rlimits, the clean environment
    and ``uid`` (a root grader's slot)."""
    limits = limits or Limits()
    return Policy(
        mounts=declared.mounts(scratch_dir, readable_paths(course_visible), extra_binds,
                               () if course_visible else hidden_package_dirs(), limits.scratch_bytes,
                               shared_memory),
        namespaces=declared.NAMESPACES, rlimits=declared.rlimits(limits), env=sandbox_env(SCRATCH, student),
        uid=uid)


def _bwrap_mount(mount, made: set) -> List[str]:
    """``mount`` as bwrap's options; a bound path's parent folders are made first (once each)."""
    args: List[str] = []
    if mount.kind in ("ro-bind", "bind") and mount.target == mount.source:
        for parent in _parents(mount.target):
            if parent not in made and parent not in _SYSTEM_DIRS:
                args += ["--perms", "0755", "--dir", parent]
                made.add(parent)
    if mount.kind in ("ro-bind", "bind"):
        return args + [f"--{mount.kind}", mount.source, mount.target]
    if mount.mode is not None:
        args += ["--perms", f"{mount.mode:04o}"]
    if mount.size is not None:
        args += ["--size", str(mount.size)]
    return args + [f"--{mount.kind}", mount.target]


def bwrap_args(rule: Policy) -> List[str]:
    """``rule`` as bwrap's command line up to ``--`` (then ``setpriv`` to its uid, if any)."""
    cmd, made = ["bwrap"], set()
    for mount in rule.mounts:
        cmd += _bwrap_mount(mount, made)
    cmd += [("--unshare-cgroup-try" if ns == "cgroup" else f"--unshare-{ns}") for ns in rule.namespaces]
    cmd += ["--die-with-parent", "--new-session", "--chdir", rule.cwd, "--clearenv"]
    if rule.uid is None:  # unprivileged bwrap: a user namespace of our own
        cmd += ["--unshare-user"]
    for key, value in rule.env.items():
        cmd += ["--setenv", key, value]
    cmd += ["--"]
    if rule.uid is not None:  # privileged bwrap: drop to the slot's own uid before any student code
        cmd += ["setpriv", f"--reuid={rule.uid}", f"--regid={rule.uid}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    return cmd


def _fill_and_run(inner: List[str]) -> List[str]:
    # /scratch is a size-capped tmpfs (no submission can fill the disk, however many files it
    # writes), filled from a read-only view of the scratch copy before the kernel starts
    return ["/bin/sh", "-c", f'cp -R {SCRATCH_INPUT}/. {SCRATCH}/ && exec "$@"', "sandbox-fill", *inner]


def bwrap_command(scratch_dir: str, inner: List[str], uid: Optional[int],
                  extra_binds: Sequence[str] = (), scratch_bytes: int = 512 * 2**20,
                  course_visible: bool = True, student: Optional[str] = None, shared_memory: bool = False) -> List[str]:
    """The ``bwrap`` command line that runs ``inner`` with a copy of ``scratch_dir`` as /scratch.

    ``extra_binds`` are writable folders bound at their own path (the kernel's
    IPC sockets and connection file). ``course_visible=False`` leaves the
    ``course`` and ``autograder`` packages out of the file system. ``shared_memory`` gives the run a
    writable ``/dev/shm`` of its own, capped like the scratch (MPI ranks on one machine talk through it).
    """
    rule = policy(scratch_dir, uid, Limits(scratch_bytes=scratch_bytes), extra_binds, course_visible, student,
                  shared_memory)
    return bwrap_args(rule) + _fill_and_run(inner)


def _prlimit(rlimits: Dict[str, int]) -> List[str]:
    options = {name: option for name, option, _ in declared.RLIMITS}
    return ["prlimit", *(f"--{options[name]}={value}" for name, value in rlimits.items()), "--"]


def prlimit_prefix(limits: Limits) -> List[str]:
    """``prlimit`` with ``limits``' rlimits (:data:`autograder.isolation.policy.RLIMITS`)."""
    return _prlimit(declared.rlimits(limits))


def rlimits(limits: Limits) -> Dict[str, int]:
    """The limits of :func:`prlimit_prefix` as ``resource`` names (soft = hard), for a sandbox
    that sets them itself (:mod:`autograder.isolation.warm`)."""
    return declared.rlimits(limits)


@functools.lru_cache(maxsize=None)
def probe() -> Optional[str]:
    """``None`` if bubblewrap sandboxes work here, else why not (for the warning)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
    if shutil.which("prlimit") is None:
        return "prlimit (util-linux) is not installed"
    uid = slot_uid(0) if os.geteuid() == 0 else None
    if uid is not None and shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed"
    import tempfile

    with tempfile.TemporaryDirectory(prefix="autograder-probe-") as scratch:
        prepare_scratch(Path(scratch), 0, use_bwrap=True)  # readable by the slot's uid, as in grading
        cmd = bwrap_command(scratch, [python_executable(), "-c", "import course, autograder"], uid)
        try:
            result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bwrap could not start: {exc}"
    if result.returncode != 0:
        return f"bwrap cannot create a sandbox here: {result.stderr.strip()[-300:]}"
    return None


def command(scratch_dir: str, inner: List[str], limits: Limits, slot: int, use_bwrap: bool,
            extra_binds: Sequence[str] = (), course_visible: bool = True,
            student: Optional[str] = None, shared_memory: bool = False) -> List[str]:
    """Full command line for one submission in worker ``slot`` (a prefix when ``inner`` is empty)."""
    if not use_bwrap:
        return prlimit_prefix(limits) + inner
    uid = slot_uid(slot) if os.geteuid() == 0 else None
    rule = policy(scratch_dir, uid, limits, extra_binds, course_visible, student, shared_memory)
    return _prlimit(rule.rlimits) + bwrap_args(rule) + _fill_and_run(inner)


def prepare_scratch(scratch_dir: Path, slot: int, use_bwrap: bool) -> None:
    """Create the scratch folders and hand them to the slot's uid."""
    for sub in (".tmp", ".ipython", ".jupyter/runtime", ".course"):
        (scratch_dir / sub).mkdir(parents=True, exist_ok=True)
    if use_bwrap and os.geteuid() == 0:
        uid = slot_uid(slot)
        for root, dirs, files in os.walk(scratch_dir):
            os.chown(root, uid, uid)
            for name in files:
                os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)

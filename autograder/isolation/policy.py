"""What a sandbox is, declared once: its namespaces, its file system, its rlimits, its environment, its user.

Two programs build the sandbox a submission's code runs in: bubblewrap
(:func:`autograder.isolation.sandbox.bwrap_command`, with ``prlimit`` and ``setpriv``) and, for a root
grader's kernels, a fork of a pre-warmed interpreter that builds it with system calls
(:mod:`autograder.isolation.warm`). Neither decides what the sandbox holds: both render the
:class:`Policy` that :func:`policy` returns, so they cannot drift apart (``tests/autograder/
test_isolation_policy.py`` reads both renderings back and compares them).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Sequence, Tuple

#: where the scratch copy appears inside the sandbox (a tmpfs of ``Limits.scratch_bytes``)
SCRATCH = "/scratch"
#: the read-only view of the prepared scratch folder that /scratch is filled from
SCRATCH_INPUT = "/scratch-input"

#: the namespaces a sandbox gets of its own besides the mount namespace: no view of other processes, no
#: network but its own loopback (the kernel's ZeroMQ sockets), no shared IPC, its own host name and cgroups
NAMESPACES = ("pid", "net", "ipc", "uts", "cgroup")

#: each rlimit (soft = hard): ``resource`` name, ``prlimit`` option, the :class:`~autograder.isolation.
#: sandbox.Limits` field it takes (``None``: always 0, no core dumps)
RLIMITS = (("RLIMIT_AS", "as", "memory_bytes"), ("RLIMIT_NPROC", "nproc", "processes"),
           ("RLIMIT_CPU", "cpu", "cpu_seconds"), ("RLIMIT_FSIZE", "fsize", "file_bytes"),
           ("RLIMIT_NOFILE", "nofile", "open_files"), ("RLIMIT_CORE", "core", None))


#: what a mount may be (each renderer handles each)
MOUNT_KINDS = ("ro-bind", "bind", "tmpfs", "dev", "proc")


@dataclass(frozen=True)
class Mount:
    """One entry of the sandbox's file system, applied in order.

    ``kind``: ``"ro-bind"`` (``source`` at ``target``, read-only), ``"bind"`` (read-write), ``"tmpfs"``
    (``size`` bytes at most, ``mode``), ``"dev"`` (a minimal ``/dev``) or ``"proc"`` (the new PID
    namespace's ``/proc``)."""

    kind: str
    target: str
    source: Optional[str] = None
    size: Optional[int] = None
    mode: Optional[int] = None

    def __post_init__(self):
        if self.kind not in MOUNT_KINDS:
            raise ValueError(f"kind must be one of {', '.join(MOUNT_KINDS)}, got {self.kind!r}")
        if (self.source is None) == (self.kind in ("ro-bind", "bind")):
            raise ValueError(f"a {self.kind} mount {'needs' if self.source is None else 'takes no'} source")


@dataclass(frozen=True)
class Policy:
    """One sandbox: what :mod:`~autograder.isolation.sandbox` and :mod:`~autograder.isolation.warm`
    both build."""

    mounts: Tuple[Mount, ...]
    namespaces: Tuple[str, ...]
    rlimits: Dict[str, int]
    env: Dict[str, str]
    #: the user student code runs as (a root grader's slot uid), ``None``: an unprivileged user namespace
    uid: Optional[int]
    #: the working folder the sandbox starts in
    cwd: str = SCRATCH

    def mount_table(self) -> List[dict]:
        """The mounts as plain dicts (what the warm kernel's request carries)."""
        return [asdict(mount) for mount in self.mounts]


def rlimits(limits) -> Dict[str, int]:
    """``limits`` (a :class:`~autograder.isolation.sandbox.Limits`) as ``resource`` names, soft = hard."""
    return {name: (getattr(limits, field) if field else 0) for name, _, field in RLIMITS}


def mounts(scratch_dir: str, readable: Sequence[str], writable: Sequence[str] = (), hidden: Sequence[str] = (),
           scratch_bytes: int = 512 * 2**20, shared_memory: bool = False) -> Tuple[Mount, ...]:
    """The file system: ``readable`` read-only and ``writable`` read-write, each at its own path;
    ``hidden`` (package folders inside a readable one) covered by an empty tmpfs; ``/scratch`` a tmpfs of
    ``scratch_bytes``, filled from ``scratch_dir`` seen read-only at ``/scratch-input``; a minimal
    ``/dev``, the namespace's ``/proc``; with ``shared_memory`` a ``/dev/shm`` capped like the scratch
    (MPI ranks on one machine talk through it)."""
    table = ([Mount("ro-bind", path, path) for path in readable]
             + [Mount("bind", path, path) for path in writable]
             + [Mount("tmpfs", path) for path in hidden]
             + [Mount("tmpfs", SCRATCH, size=scratch_bytes, mode=0o777),
                Mount("ro-bind", SCRATCH_INPUT, scratch_dir), Mount("dev", "/dev"), Mount("proc", "/proc")])
    if shared_memory:
        table.append(Mount("tmpfs", "/dev/shm", size=scratch_bytes, mode=0o1777))
    return tuple(table)

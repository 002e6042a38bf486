"""Pre-warmed kernels: one interpreter imports ipykernel and the course once, then forks a kernel
per submission into a sandbox built in the child.

Starting a kernel costs an interpreter, ipykernel and, in the notebook's first cell, the course
package (numpy, the instruments): about a second of CPU per submission, every time the same. A
*zygote* does that work once: a fresh process of this interpreter, started as root with the
sandbox's environment, that imports those modules and nothing else, runs no student code and
holds nothing of the grader. Per submission it forks, and the fork isolates itself as
:mod:`autograder.isolation.sandbox` isolates a kernel that bwrap starts (same namespaces, file system,
limits, uid), before a line of the student's notebook runs:

* ``A`` (the fork, root, outside the sandbox) starts a new session, unshares the mount namespace and
  the policy's (PID, network, IPC, UTS and cgroup) and forks ``B``; it only waits. Killing ``A`` (the
  grader's deadline) kills ``B`` (parent-death signal, and a pipe ``B`` checks) and with it,
  as PID 1 of the new PID namespace, every process the notebook started.
* ``B`` (PID 1) builds the file system on a fresh tmpfs and pivots into it, from the mount table of
  the sandbox's :class:`~autograder.isolation.policy.Policy` (:func:`autograder.isolation.sandbox.policy`,
  what bwrap builds too): the allow-list bound read-only (every submount re-mounted read-only
  too), the kernel's socket folder bound read-write, ``/scratch`` a tmpfs capped at
  ``Limits.scratch_bytes``, ``/scratch-input`` the prepared scratch copy read-only, a minimal
  ``/dev`` and a ``/proc`` of the new PID namespace; loopback up, no other network. It sets the
  policy's rlimits, drops every capability (bounding set,
  inheritable, ambient) and becomes the worker slot's own uid with no supplementary groups and
  ``no_new_privs``. Then it forks ``C`` and reaps until ``C`` ends.
* ``C`` starts its own session, closes every inherited descriptor, copies ``/scratch-input``
  into ``/scratch`` (as the slot's uid), takes the sandbox's environment, reseeds the random
  generators (a fork would share them) and runs ipykernel as ``python -m ipykernel_launcher -f
  <connection file>`` would.

The zygote itself is never reachable from a sandbox: it is outside the PID namespace, another
uid, and its memory is only copied. Each submission starts from the same pristine fork, so
nothing one submission does is seen by another.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import threading
from typing import Optional

from .policy import SCRATCH, SCRATCH_INPUT

#: what the zygote imports before it forks, besides the course (:func:`preload`): what a kernel imports anyway
KERNEL_PRELOAD = ("numpy", "ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell",
                  "IPython.core.interactiveshell", "IPython.core.history", "ipykernel.debugger", "ipykernel.control",
                  "ipykernel.iostream", "ipykernel.heartbeat", "ipykernel.parentpoller", "tornado.platform.asyncio",
                  "psutil", "sqlite3", "pdb", "faulthandler")


def preload() -> tuple:
    """Every module the zygote imports before it forks: :data:`KERNEL_PRELOAD`, the notebook API (every
    notebook's first cell), and each module that defines an instrument, from the instruments' own list
    (:data:`course.instruments.MODULES`): importing the notebook API no longer imports the instruments
    (ipywidgets, bqplot, pandas), a lab notebook's first cell does, so the zygote does it once rather
    than each lab submission."""
    import course.instruments

    return (*KERNEL_PRELOAD, "course.notebook_api", "course.notebook_api.lab_session", "course.labs.tracks",
            *(f"course.instruments.{name}" for name in course.instruments.MODULES))


CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS = 0x00020000, 0x02000000, 0x04000000
CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET = 0x08000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4
#: environment variables the preloaded modules set when imported (debugpy sets one)
_IMPORT_ENV: dict = {}
_KEEP_FLAGS = 8 | 16 | 1024 | 2048 | 4096  # noexec, synchronous, noatime, nodiratime, relatime
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
#: the kernel's knobs under /proc, read-only in the sandbox (as bwrap's --proc)
_PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus")
#: the clone flag of each namespace a policy names (:data:`autograder.isolation.policy.NAMESPACES`)
CLONE_FLAGS = {"mount": CLONE_NEWNS, "pid": CLONE_NEWPID, "net": CLONE_NEWNET, "ipc": CLONE_NEWIPC,
               "uts": CLONE_NEWUTS, "cgroup": CLONE_NEWCGROUP}


def unshare_flags(namespaces) -> int:
    """The ``unshare`` flags of a new mount namespace and of each of ``namespaces``."""
    flags = CLONE_NEWNS
    for name in namespaces:
        flags |= CLONE_FLAGS[name]
    return flags


def request(rule, root: str, **extra) -> dict:
    """What the zygote's fork needs to build the sandbox ``rule`` (an
    :class:`autograder.isolation.policy.Policy`) with its own root file system mounted at ``root``."""
    return {"root": root, "mounts": rule.mount_table(), "namespaces": list(rule.namespaces),
            "rlimits": dict(rule.rlimits), "env": dict(rule.env), "uid": rule.uid, "cwd": rule.cwd, **extra}


# ---------------------------------------------------------------------------------- the child side
def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _check(result: int, what: str) -> int:
    """``result`` of a libc call, or OSError with errno when it failed (negative)."""
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def _mount(libc, source, target, fstype, flags, data=None) -> None:
    enc = lambda s: None if s is None else s.encode()  # noqa: E731 -- a one-line helper local to this function
    _check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {target}")


def _bind(libc, root: str, src: str, dest: str) -> None:
    target = root + dest
    for parent in _parents(dest):
        path = root + parent
        if not os.path.isdir(path):
            os.mkdir(path, 0o755)
    if os.path.isdir(src):
        os.makedirs(target, mode=0o755, exist_ok=True)
    else:
        open(target, "a").close()
    _mount(libc, src, target, None, MS_BIND | MS_REC)


def _parents(path: str):
    parts = path.strip("/").split("/")
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


def _remount_read_only(libc, root: str, tops) -> None:
    """Every mount at or under ``tops`` (inside ``root``) read-only, nosuid, nodev."""
    with open(root + "/proc/self/mountinfo") as fh:
        points = [line.split()[4].replace("\\040", " ") for line in fh]
    for point in points:
        if any(point == root + top or point.startswith(root + top + "/") for top in tops):
            keep = os.statvfs(point).f_flag & _KEEP_FLAGS
            _mount(libc, None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | keep)


def _loopback_up() -> None:
    import fcntl
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sh", fcntl.ioctl(s, 0x8913, struct.pack("16sh", b"lo", 0)))[1]
        fcntl.ioctl(s, 0x8914, struct.pack("16sh", b"lo", flags | 0x1 | 0x40))  # IFF_UP | IFF_RUNNING


def _tmpfs(libc, path: str, mode: int, size=None) -> None:
    os.makedirs(path, mode=mode, exist_ok=True)
    _mount(libc, "tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV,
           f"mode={mode:04o}" + (f",size={int(size)}" if size is not None else ""))


def _minimal_dev(libc, dev: str) -> None:
    """A ``/dev`` as bwrap's ``--dev``: a few devices, the standard links, ``shm`` and a fresh ``pts``."""
    _tmpfs(libc, dev, 0o755)
    for name in _DEVICES:
        if os.path.exists("/dev/" + name):
            open(f"{dev}/{name}", "a").close()
            _mount(libc, "/dev/" + name, f"{dev}/{name}", None, MS_BIND)
            _mount(libc, None, f"{dev}/{name}", None, MS_REMOUNT | MS_BIND | MS_NOSUID)
    for name, target in (("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2"), ("fd", "/proc/self/fd"), ("ptmx", "pts/ptmx"),
                         ("core", "/proc/kcore")):
        os.symlink(target, f"{dev}/{name}")
    os.mkdir(dev + "/shm", 0o1777)
    os.mkdir(dev + "/pts", 0o755)
    try:
        _mount(libc, "devpts", dev + "/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")
    except OSError:
        pass


def _proc(libc, proc: str) -> None:
    """The new PID namespace's ``/proc``, the kernel's knobs in it bound over themselves (made read-only
    with the rest), as bwrap's ``--proc``."""
    os.makedirs(proc, 0o555, exist_ok=True)
    _mount(libc, "proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for name in _PROC_READ_ONLY:
        try:
            _mount(libc, f"{proc}/{name}", f"{proc}/{name}", None, MS_BIND | MS_REC)
        except OSError:
            continue


def _build_root(libc, req: dict) -> None:
    """B: the sandbox's file system (the policy's mount table, :mod:`autograder.isolation.policy`) on a
    fresh tmpfs at ``req['root']``, then pivot into it."""
    root = req["root"]
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)  # nothing propagates back to the host
    _mount(libc, "tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    read_only = []
    for mount in req["mounts"]:
        kind, target = mount["kind"], mount["target"]
        if kind in ("ro-bind", "bind"):
            _bind(libc, root, mount["source"], target)
            if kind == "ro-bind":
                read_only.append(target)  # with every submount, once all are in place
            else:
                _mount(libc, None, root + target, None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV)
        elif kind == "tmpfs":
            _tmpfs(libc, root + target, mount["mode"] if mount["mode"] is not None else 0o755, mount["size"])
        elif kind == "dev":
            _minimal_dev(libc, root + target)
        elif kind == "proc":
            _proc(libc, root + target)
            read_only += [f"{target}/{name}" for name in _PROC_READ_ONLY]
        else:
            raise ValueError(f"unknown mount kind {kind!r}")
    _remount_read_only(libc, root, read_only)
    os.chmod(root + "/proc", 0o555)
    os.chdir(root)
    _check(libc.syscall(_PIVOT_ROOT[platform.machine()], b".", b"."), "pivot_root")
    _check(libc.umount2(b".", MNT_DETACH), "umount old root")
    os.chdir("/")


def _drop_privileges(libc, uid: int, limits: dict) -> None:
    import resource

    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))
    with open("/proc/sys/kernel/cap_last_cap") as fh:
        last = int(fh.read())
    for cap in range(last + 1):
        _check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "drop capability")
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # permitted and effective capabilities go with uid 0

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable x 2: all empty
    _check(libc.capset(ctypes.byref(Header(0x20080522, 0)), data), "capset")
    _check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient capabilities")
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    # as after an exec: the slot's own processes may read its /proc entries (nothing else can)
    _check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "dumpable")


def _copy_tree(src: str, dest: str) -> None:
    """``cp -R src/. dest/``: files and folders with their modes, symlinks as symlinks; ``dest``
    itself is left as it is."""
    import shutil
    import stat

    for entry in os.scandir(src):
        target = os.path.join(dest, entry.name)
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), target)
        elif entry.is_dir():
            os.mkdir(target, stat.S_IMODE(entry.stat().st_mode) | 0o700)
            _copy_tree(entry.path, target)
        elif entry.is_file():
            shutil.copyfile(entry.path, target)
            os.chmod(target, stat.S_IMODE(entry.stat().st_mode))


def _kernel(req: dict) -> None:
    """C: the kernel, in the sandbox, as the slot's uid (in B's session, as under bwrap); never
    returns."""
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, 1 << 16)
    _copy_tree(SCRATCH_INPUT, SCRATCH)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"], PWD=req["cwd"])
    for key, value in _IMPORT_ENV.items():  # what the preloaded imports set, as they would have here
        os.environ.setdefault(key, value)
    import random

    random.seed()
    if "numpy.random" in sys.modules:
        sys.modules["numpy.random"].seed()
    if req.get("probe"):  # the self-test (:func:`_self_test`): the sandbox was built, say so
        with open(req["probe"], "w") as fh:
            fh.write("ok")
        return
    if sys.path and sys.path[0] in ("", os.getcwd()):  # as ipykernel_launcher: ipykernel puts '' back
        del sys.path[0]
    import ipykernel_launcher

    sys.argv = [ipykernel_launcher.__file__, "-f", req["connection_file"], *req["arguments"]]
    from ipykernel import kernelapp
    kernelapp.launch_new_instance()


def _child(req: dict) -> None:
    """A: unshare, fork B (PID 1 of the new namespace), wait for it; never returns."""
    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        libc = _libc()
        _check(libc.unshare(unshare_flags(req["namespaces"])), "unshare")
        alive_r, alive_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(alive_w)
            _pid_one(libc, req, alive_r)
        os.close(alive_r)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status) & 0xFF
    finally:
        os._exit(code)


def _pid_one(libc, req: dict, alive_r: int) -> None:
    """B: build the sandbox, drop privileges, fork the kernel, reap; never returns."""
    code = 1
    try:
        _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent-death signal")
        os.closerange(3, alive_r)  # nothing of the zygote's stays open in the sandbox
        os.closerange(alive_r + 1, 1 << 16)
        os.setsid()  # a session of its own: no terminal to push input into (TIOCSTI)
        _build_root(libc, req)
        _loopback_up()
        _drop_privileges(libc, int(req["uid"]), req["rlimits"])
        # cleared by the uid change: set again, then make sure A did not die in between
        _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent-death signal")
        import select

        if select.select([alive_r], [], [], 0)[0]:
            os._exit(1)
        kernel = os.fork()
        if kernel == 0:
            try:
                _kernel(req)
            finally:
                os._exit(0)
        while True:  # PID 1 reaps every orphan; when the kernel ends, so does the namespace
            pid, status = os.wait()
            if pid == kernel:
                code = os.waitstatus_to_exitcode(status) & 0xFF
                break
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def serve(fd: int) -> None:
    """The zygote: preload, then fork a sandboxed kernel per request on socket ``fd``."""
    import importlib

    before = dict(os.environ)
    for name in preload():
        importlib.import_module(name)
    _IMPORT_ENV.update({k: v for k, v in os.environ.items() if before.get(k) != v})
    if threading.active_count() != 1:  # a fork copies only the thread that forks
        raise RuntimeError("a preloaded module started a thread")
    sock = socket.socket(fileno=fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # A processes are reaped by the system
    reader = sock.makefile("rb")
    sock.sendall(b"ready\n")
    for line in reader:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            try:
                reader.close()
                sock.close()
                _child(req)
            finally:
                os._exit(1)
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            sock.sendall(b"-1\n")
            continue
        socket.send_fds(sock, [f"{pid}\n".encode()], [pidfd])
        os.close(pidfd)


# --------------------------------------------------------------------------------- the grader side
class WarmProcess:
    """The forked kernel's launcher ``A`` as jupyter_client's provisioner sees a ``Popen``."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int, pidfd: int):
        self.pid, self.pidfd = pid, pidfd
        self.returncode: Optional[int] = None

    def poll(self) -> Optional[int]:
        import select

        if self.returncode is None and self.pidfd >= 0 and select.select([self.pidfd], [], [], 0)[0]:
            self.returncode = -9
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        import select

        if self.returncode is None and self.pidfd >= 0:
            if not select.select([self.pidfd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired("kernel", timeout)
            self.returncode = -9
        return self.returncode if self.returncode is not None else -9

    def send_signal(self, signum: int) -> None:
        """Signal ``A`` through its pidfd; after SIGKILL wait (up to a second) for its end, which
        jupyter_client would otherwise poll for every 0.1 s."""
        import select

        if self.pidfd < 0 or self.poll() is not None:
            return
        try:
            signal.pidfd_send_signal(self.pidfd, signum)
        except ProcessLookupError:
            return
        if signum == signal.SIGKILL and select.select([self.pidfd], [], [], 1.0)[0]:
            self.returncode = -9

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def close(self) -> None:
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1


class Zygote:
    """The grader's handle on one zygote process (started on first use, shared by worker threads)."""

    stamp = 0

    def __init__(self, env: dict):
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        code = f"from autograder.isolation.warm import serve; serve({child.fileno()})"
        self.proc = subprocess.Popen([sys.executable, "-c", code], env=env, cwd="/", pass_fds=[child.fileno()],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        child.close()
        self.sock = parent
        self.lock = threading.Lock()
        self.sock.settimeout(120)
        if self._readline() != b"ready":
            raise RuntimeError("the kernel zygote did not start")

    def _readline(self) -> bytes:
        data = b""
        while not data.endswith(b"\n"):
            chunk = self.sock.recv(1)
            if not chunk:
                raise RuntimeError("the kernel zygote ended")
            data += chunk
        return data.strip()

    def spawn(self, req: dict) -> WarmProcess:
        with self.lock:
            self.sock.sendall((json.dumps(req) + "\n").encode())
            msg, fds, _, _ = socket.recv_fds(self.sock, 64, 1)
            while not msg.endswith(b"\n"):
                more = self.sock.recv(1)
                if not more:
                    raise RuntimeError("the kernel zygote ended")
                msg += more
        pid = int(msg.strip())
        if pid < 0 or not fds:
            raise RuntimeError("the kernel zygote could not fork")
        return WarmProcess(pid, fds[0])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()


def _source_stamp() -> int:
    """The newest modification time of the ``course`` and ``autograder`` sources: a zygote that
    imported older code is replaced (a long-running server, a course updated in place)."""
    from . import sandbox

    newest = 0
    for folder in sandbox._package_dirs():
        for root, _, files in os.walk(folder):
            for name in files:
                if name.endswith(".py"):
                    newest = max(newest, os.stat(os.path.join(root, name)).st_mtime_ns)
    return newest


_zygote: Optional[Zygote] = None
_stamp, _stamped_at = 0, -1e9
_zygote_lock = threading.Lock()
_failed: Optional[str] = None


def zygote() -> Optional[Zygote]:
    """This process's zygote, started on first use; ``None`` where it cannot work (not root, no
    pidfds, an unknown architecture, or it failed once: the grader then launches kernels through
    bwrap as before)."""
    global _zygote, _failed
    if os.geteuid() != 0 or platform.machine() not in _PIVOT_ROOT or not hasattr(os, "pidfd_open"):
        return None
    if os.environ.get("AUTOGRADER_NO_WARM_KERNEL"):
        return None
    global _stamp, _stamped_at
    with _zygote_lock:
        import time

        if time.monotonic() - _stamped_at > 30:  # looked at twice a minute at most
            _stamp, _stamped_at = _source_stamp(), time.monotonic()
        stamp = _stamp
        if _zygote is not None and _zygote.alive() and _zygote.stamp == stamp:
            return _zygote
        if _zygote is not None:  # it ended, or the course's code changed since it imported it
            _zygote.close()
            _zygote = None
        if _failed is not None:
            return None
        from . import sandbox

        try:
            env = sandbox.sandbox_env(sandbox.SCRATCH)
            _zygote = Zygote(env)
            _zygote.stamp = stamp
        except Exception as exc:  # noqa: BLE001 (any failure: the bwrap path still works)
            _failed = f"{type(exc).__name__}: {exc}"
            _zygote = None
        else:
            import atexit

            atexit.register(_zygote.close)
            why = _self_test(_zygote)
            if why is not None:  # this machine cannot build it: bwrap starts the kernels
                _failed = why
                _zygote.close()
                _zygote = None
        return _zygote


def _self_test(z: Zygote) -> Optional[str]:
    """``None`` if the zygote can build a sandbox here (a fork that only says it got there), else why
    not."""
    import tempfile
    from pathlib import Path

    from . import sandbox

    try:
        with tempfile.TemporaryDirectory(prefix="autograder-warm-probe-") as tmp:
            work, sockets, root = (Path(tmp) / name for name in ("work", "sockets", "root"))
            for folder in (work, sockets, root):
                folder.mkdir()
            uid = sandbox.slot_uid(0)
            sandbox.prepare_scratch(work, 0, use_bwrap=True)
            os.chown(sockets, uid, uid)
            rule = sandbox.policy(str(work), uid, sandbox.Limits(scratch_bytes=2**20), [str(sockets)])
            process = z.spawn(request(rule, str(root), probe=str(sockets / "ok"), connection_file="",
                                      arguments=[]))
            try:
                process.wait(timeout=60)
            finally:
                process.kill()
                process.close()
            if not (sockets / "ok").is_file():
                return "the warm kernel's sandbox could not be built here"
    except Exception as exc:  # noqa: BLE001 -- any failure is a reason to report
        return f"{type(exc).__name__}: {exc}"
    return None

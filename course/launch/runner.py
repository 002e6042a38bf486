"""The program every rank runs: ``python -m course.launch.runner <work dir>``.

:func:`course.launch.run` writes ``<work>/spec.json`` (what to call) and ``<work>/args.pkl`` (the
arguments), then starts this module on every rank under ``mpiexec``. Each rank:

1. guards its own life: ``PR_SET_PDEATHSIG`` (Linux) ends it with its parent (the process
   manager), and a watchdog thread ends it once the owner (the notebook's kernel, named by pid and
   start time in the spec) is gone, so a rank never outlives the kernel that started it, even when
   the kernel is killed without a chance to clean up;
2. sends its stdout and stderr to ``<work>/rank-<r>.out`` (file descriptors 1 and 2, so output of
   C code and of child processes lands there too);
3. loads the target (``module:qualname``, or source shipped from a notebook), calls it with the
   communicator and the arguments, and writes the return value to ``<work>/rank-<r>.result``
   (pickled, written to a temporary name and renamed, so a half-written file is never read), or the
   exception to ``<work>/rank-<r>.error`` (JSON: type, message, traceback).

:func:`report` lets the target show progress in the notebook (a tqdm bar): it appends
``done total`` to ``<work>/progress``; the launcher polls that file.

Only the standard library, NumPy and mpi4py (or torch) are imported here: this module is also the
program the grader runs in its sandbox, where the rest of the course is not importable.
"""

from __future__ import annotations

import faulthandler
import json
import os
import pickle
import signal
import sys
import textwrap
import threading
import time
import traceback

#: environment variable holding the work directory (set by the launcher for every rank)
WORK_ENV = "COURSE_LAUNCH_WORK"
#: environment variable with a per-launch random token: every process of one launch carries it,
#: so the launcher can find (and end) any that escaped its process group
TOKEN_ENV = "COURSE_LAUNCH_TOKEN"
#: how often the watchdog looks at the owner (seconds)
WATCH_PERIOD = 0.2

_PR_SET_PDEATHSIG = 1
_SIGKILL = 9


def process_start_time(pid: int):
    """The kernel's start time of ``pid`` (clock ticks since boot, ``/proc/<pid>/stat`` field 22),
    or None where ``/proc`` does not exist or the process is gone. With the pid it names one
    process for good: a pid can be reused, a (pid, start time) pair cannot."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after its last ')'
    fields = stat[stat.rfind(")") + 2:].split()
    return int(fields[19]) if len(fields) > 19 else None


def owner_alive(pid: int, start) -> bool:
    """Whether the process ``pid`` that started at ``start`` (see :func:`process_start_time`) runs."""
    if start is not None and os.path.isdir("/proc"):
        return process_start_time(pid) == start
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent (the process manager) ends."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    # the parent may have died before prctl: then we were re-parented already
    if os.getppid() == 1:
        os._exit(1)


def exec_guarded(owner_pid: int, command) -> None:
    """Become ``command`` (``execvp``) with Linux's parent-death signal set, so it is SIGKILLed the
    moment its parent, the owner (the kernel thread that started it), ends. The signal survives
    ``exec``; the check of the parent after ``prctl`` closes the race with an owner that ended first.
    The launcher starts ``python runner.py --guard <owner pid> mpiexec ...`` this way."""
    _die_with_parent()
    if os.getppid() != owner_pid:
        os._exit(1)
    os.execvp(command[0], command)


def _watch_owner(pid: int, start) -> None:
    def watch() -> None:
        while owner_alive(pid, start):
            time.sleep(WATCH_PERIOD)
        os._exit(1)

    threading.Thread(target=watch, name="course-launch-watchdog", daemon=True).start()


def report(done, total=None) -> None:
    """Tell the notebook how far a long run has come (shown as a progress bar there).

    Call it from one rank (rank 0 is the custom); ``total`` may be given once. Outside a launch
    it does nothing, so a function that reports runs unchanged in a plain process.
    """
    work = os.environ.get(WORK_ENV)
    if not work:
        return
    line = f"{float(done)} {'' if total is None else float(total)}\n"
    with open(os.path.join(work, "progress"), "a") as handle:
        handle.write(line)


def _redirect_output(path: str) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)


def _load_target(target: dict):
    if "source" in target:
        namespace = {"__name__": "__course_launch_target__", "report": report}
        try:  # the names a notebook cell usually has imported at the top
            import numpy as np

            namespace["np"] = namespace["numpy"] = np
        except ImportError:
            pass
        exec(compile(textwrap.dedent(target["source"]), target.get("filename", "<notebook>"), "exec"), namespace)
        return namespace[target["name"]]
    import importlib

    obj = importlib.import_module(target["module"])
    for part in target["qualname"].split("."):
        obj = getattr(obj, part)
    return obj


def _communicator(backend: str, spec: dict):
    """What the target receives first: ``MPI.COMM_WORLD``, or ``torch.distributed`` set up."""
    if backend == "mpi":
        from mpi4py import MPI

        return MPI.COMM_WORLD, MPI.COMM_WORLD.Get_rank()
    import torch.distributed as dist

    rank, size = int(os.environ["PMI_RANK"]), int(os.environ["PMI_SIZE"])
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(spec["torch_port"])
    if backend == "nccl":
        import torch

        torch.cuda.set_device(rank % max(torch.cuda.device_count(), 1))
    dist.init_process_group(backend, rank=rank, world_size=size)
    return dist, rank


def _write_atomic(path: str, data: bytes) -> None:
    partial = path + ".partial"
    with open(partial, "wb") as handle:
        handle.write(data)
    os.replace(partial, path)


def ignore_process_manager_signals() -> None:
    """Ignore SIGINT and SIGQUIT. MPICH's gforker answers one rank's non-zero exit by sending SIGINT,
    then SIGQUIT, to every other rank: they would die with it, and the launcher could not tell the
    rank that ended from the ranks it took along. The launcher ends a launch with SIGTERM and
    SIGKILL, which stay in force (and a kernel's interrupt reaches the kernel, not its ranks)."""
    for number in (signal.SIGINT, getattr(signal, "SIGQUIT", None)):
        if number is not None:
            signal.signal(number, signal.SIG_IGN)


def _write_pid(work: str, rank) -> None:
    """``rank-<r>.pid``: this process's pid and start time, so the launcher sees a rank that ended
    without a result or an error (``os._exit``, a crash, a signal) and names it at once."""
    _write_atomic(os.path.join(work, f"rank-{rank}.pid"),
                  f"{os.getpid()} {process_start_time(os.getpid())}".encode())


def main(work: str) -> int:
    with open(os.path.join(work, "spec.json")) as handle:
        spec = json.load(handle)
    ignore_process_manager_signals()
    _die_with_parent()
    if spec.get("owner_pid"):
        _watch_owner(int(spec["owner_pid"]), spec.get("owner_start"))
    rank_guess = os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or "x"
    _redirect_output(os.path.join(work, f"rank-{rank_guess}.out"))
    # a crash in C code (a segmentation fault in MPI or NumPy) leaves its Python traceback in the output
    faulthandler.enable(file=sys.stderr)
    rank = rank_guess
    try:
        comm, rank = _communicator(spec["backend"], spec)
        if str(rank) != rank_guess:  # a process manager without PMI_RANK: name the file by the real rank
            os.replace(os.path.join(work, f"rank-{rank_guess}.out"), os.path.join(work, f"rank-{rank}.out"))
        _write_pid(work, rank)
        with open(os.path.join(work, "args.pkl"), "rb") as handle:
            args, kwargs = pickle.load(handle)
        if "script" in spec["target"]:
            import runpy

            sys.argv = [spec["target"]["script"], *map(str, args)]
            namespace = runpy.run_path(spec["target"]["script"], run_name="__main__",
                                       init_globals={"comm": comm, "report": report})
            value = namespace.get("result")
        else:
            value = _load_target(spec["target"])(comm, *args, **kwargs)
        _write_atomic(os.path.join(work, f"rank-{rank}.result"), pickle.dumps(value, protocol=4))
    except KeyboardInterrupt:
        # an interrupt that still arrives (SIGINT is ignored above) ends this rank; it is not its error
        os._exit(130)
    except BaseException as exc:  # noqa: BLE001 -- every failure is reported to the launcher
        record = {"type": type(exc).__name__, "message": str(exc)[:2000],
                  "traceback": traceback.format_exc()[-8000:], "time": time.time()}
        _write_atomic(os.path.join(work, f"rank-{rank}.error"), json.dumps(record).encode())
        sys.stdout.flush()
        sys.stderr.flush()
        # end this rank at once: an MPI program whose rank raised would otherwise leave the others
        # blocked in a collective until the timeout; the launcher ends the rest of the launch
        os._exit(1)
    sys.stdout.flush()
    sys.stderr.flush()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--guard"]:
        exec_guarded(int(sys.argv[2]), sys.argv[3:])
    sys.exit(main(os.environ.get(WORK_ENV) or sys.argv[1]))

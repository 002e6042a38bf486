"""Start ranks under ``mpiexec``, wait for them with a timeout and a progress bar, and end them all.

See :mod:`course.launch` for the API and the guarantees. The pieces here:

- :func:`find_mpiexec` picks the process manager: MPICH's ``mpiexec.gforker`` (one node; every rank
  is a direct child in the launcher's own process group, so one ``killpg`` ends the launch), else
  Hydra's ``mpiexec`` (whose ranks start sessions of their own; the token sweep below ends them).
- :func:`run` writes the spec, starts ``mpiexec -n p python -m course.launch.runner <work>`` in a new
  session, polls for results, errors, progress and the timeout, and always ends the launch
  (:func:`_end_launch`): SIGTERM to the process group, SIGKILL after a grace, then a sweep of
  ``/proc`` for any process carrying the launch's random token in its environment.
- Rank results are read back with an allow-list unpickler (:func:`load_result`): NumPy arrays and
  scalars, numbers, strings, bytes and the builtin containers, nothing that runs code.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import io
import json
import os
import pickle
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import runner

#: seconds between SIGTERM and SIGKILL when a launch is ended
GRACE_SECONDS = 0.5
#: seconds the other ranks get to report their own error once one rank failed
FAILURE_GRACE_SECONDS = 0.5
#: the most bytes of each rank's output kept in a :class:`RunResult` (the tail)
MAX_OUTPUT_BYTES = 64 * 1024
#: the most bytes of one rank's result read back
MAX_RESULT_BYTES = 256 * 2**20
POLL_SECONDS = 0.02
#: Linux ends a child when its parent ends (``PR_SET_PDEATHSIG``); elsewhere the ranks' watchdog does
_HAS_PDEATHSIG = sys.platform.startswith("linux")


class LaunchError(RuntimeError):
    """A launch that did not give every rank's result; ``.result`` holds the :class:`RunResult`."""

    def __init__(self, result: "RunResult"):
        super().__init__(result.reason)
        self.result = result


@dataclass
class RunResult:
    """What one launch gave back.

    Attributes
    ----------
    ok : bool
        Every rank returned a value (no error, no timeout, no interrupt).
    values : list
        Each rank's return value by rank (None for a rank that gave none).
    errors : dict
        ``{rank: "Type: message"}`` for ranks that raised, the first to raise first; ``tracebacks`` has the full text.
    reason : str
        Empty when ``ok``; else one sentence for a person: which ranks raised or never finished, and why.
    timed_out, interrupted : bool
        The launch was ended at its timeout, or by KeyboardInterrupt (then re-raised by :func:`run`).
    missing : list of int
        Ranks that wrote neither a result nor an error (still running at the end, or killed).
    ended : dict
        ``{rank: how}`` for ranks whose process ended on its own without a result or an error (it
        called ``os._exit``, crashed or was killed), the first to end first; the launch is ended at
        once then, since the other ranks would wait for it in a collective.
    output : list of str
        The tail of each rank's stdout and stderr (at most ``MAX_OUTPUT_BYTES``).
    launcher_output : str
        What ``mpiexec`` itself printed (its own errors).
    returncode : int or None
        ``mpiexec``'s exit status (negative: ended by that signal).
    seconds : float
        Wall time from start to the end of the last process.
    timeout : float
        The time limit the launch had, seconds.
    ranks, backend, mpiexec : int, str, str
        What ran, and how.
    cores, load : int, float
        Cores this process may use and the 1-minute load average when the launch began.
    started : list of int
        Ranks that finished starting their communicator (``MPI_Init``, or torch's process group) and
        wrote their pid; a rank missing here never got past start-up.
    oversubscribed : bool
        More ranks than cores: ranks share cores, and times measured then are not the machine's.
    """

    ranks: int
    backend: str
    mpiexec: str
    values: List[Any] = field(default_factory=list)
    errors: Dict[int, str] = field(default_factory=dict)
    tracebacks: Dict[int, str] = field(default_factory=dict)
    missing: List[int] = field(default_factory=list)
    output: List[str] = field(default_factory=list)
    launcher_output: str = ""
    returncode: Optional[int] = None
    timed_out: bool = False
    interrupted: bool = False
    seconds: float = 0.0
    timeout: float = 0.0
    cores: int = 1
    load: float = 0.0
    reason: str = ""
    #: ``{rank: how it ended}`` for ranks whose process ended with neither a result nor an error
    #: (``os._exit``, a crash, a signal), the first to end first
    ended: Dict[int, str] = field(default_factory=dict)
    started: List[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.reason

    @property
    def oversubscribed(self) -> bool:
        return self.ranks > self.cores

    def raise_for_status(self) -> "RunResult":
        """Raise ``LaunchError`` unless ``ok``; return ``self`` otherwise."""
        if not self.ok:
            raise LaunchError(self)
        return self


# -- the machine ---------------------------------------------------------------------------------

def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity, else ``os.cpu_count()``)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)


def load_average() -> float:
    """The 1-minute load average (0.0 where the system has none)."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return 0.0


def find_mpiexec() -> str:
    """The ``mpiexec`` the course launches with: the one beside this Python first (the ``mpich``
    wheel installs it in the virtual environment), MPICH's single-node ``mpiexec.gforker`` before
    Hydra's ``mpiexec``. ``FileNotFoundError`` with what to install when there is none."""
    here = Path(sys.executable).parent
    for name in ("mpiexec.gforker", "mpiexec"):
        candidate = here / name
        if candidate.exists() and os.access(candidate, os.X_OK):
            return str(candidate)
    for name in ("mpiexec.gforker", "mpiexec"):
        found = shutil.which(name)
        if found:
            return found
    raise FileNotFoundError("no mpiexec found beside this Python or on PATH: install the course's requirements "
                            "(python3 dev.py setup installs the mpich and mpi4py wheels)")


@functools.lru_cache(maxsize=8)
def is_hydra(launcher: str) -> bool:
    """Whether ``launcher`` is MPICH's Hydra process manager (``mpiexec.hydra``, or an ``mpiexec``
    that says ``HYDRA`` when asked for its version)."""
    name = Path(launcher).name
    if "gforker" in name:
        return False
    if "hydra" in name:
        return True
    try:
        said = subprocess.run([launcher, "--version"], capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return b"HYDRA" in said.stdout + said.stderr


def launcher_options(launcher: str) -> List[str]:
    """What the course adds to ``mpiexec -n p``: for Hydra, ``-disable-auto-cleanup``, since Hydra
    otherwise kills every rank the moment one ends and the launcher could no longer tell which one
    ended first (the launcher ends the others itself, half a second later). gforker needs nothing:
    the ranks ignore the SIGINT and SIGQUIT it sends them (:func:`runner.ignore_process_manager_signals`)."""
    return ["-disable-auto-cleanup"] if is_hydra(launcher) else []


# -- results ---------------------------------------------------------------------------------------

_ALLOWED_GLOBALS = {
    ("builtins", "complex"), ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "slice"),
    ("builtins", "range"), ("builtins", "bytearray"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "scalar"),
    ("numpy.dtypes", None),
    ("collections", "OrderedDict"),
}


class _ResultUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _ALLOWED_GLOBALS or (module, None) in _ALLOWED_GLOBALS and name.endswith("DType"):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"a rank's result may hold only numbers, strings, NumPy arrays and builtin "
                                     f"containers, not {module}.{name}")


def load_result(data: bytes):
    """A rank's pickled return value, read with an allow-list: NumPy arrays, dtypes and scalars,
    Python numbers, strings, bytes, lists, tuples, dicts, sets. Anything else (a class that runs
    code when unpickled) raises ``pickle.UnpicklingError``, so a hostile rank cannot run code in the
    process that reads its result."""
    return _ResultUnpickler(io.BytesIO(data)).load()


# -- the target ------------------------------------------------------------------------------------

def describe_target(target: Union[str, Callable, os.PathLike]) -> dict:
    """The spec's ``target``: ``{"module", "qualname"}`` for an importable function, ``{"source",
    "name"}`` for one defined in a notebook or script (``__main__``; shipped as its source, so it
    must import what it uses inside, or use ``np``, which the runner provides), ``{"script"}`` for a
    path to a ``.py`` file."""
    if isinstance(target, os.PathLike) or (isinstance(target, str) and target.endswith(".py")):
        path = Path(target).resolve()
        if not path.is_file():
            raise ValueError(f"target: no such script {str(path)!r}")
        return {"script": str(path)}
    if isinstance(target, str):
        module, sep, qualname = target.partition(":")
        if not sep or not module or not qualname:
            raise ValueError(f"target must be 'module:function', a function or a .py path, got {target!r}")
        return {"module": module, "qualname": qualname}
    if not callable(target):
        raise ValueError(f"target must be a function, 'module:function' or a .py path, got {target!r}")
    name = getattr(target, "__name__", "")
    module = getattr(target, "__module__", None)
    if name == "<lambda>" or "<locals>" in getattr(target, "__qualname__", ""):
        raise ValueError("target: a lambda or a nested function cannot run on other processes; "
                         "define it with def at the top level of a cell or module")
    if module in (None, "__main__", "__course_launch_target__"):
        try:
            source = inspect.getsource(target)
        except (OSError, TypeError):
            raise ValueError(f"target: the source of {name!r} cannot be found, so it cannot be sent to the ranks") from None
        return {"source": source, "name": name}
    return {"module": module, "qualname": target.__qualname__}


# -- running ---------------------------------------------------------------------------------------

#: every launch runs on this one machine: MPICH's UCX network module is told to use only its
#: shared-memory and self transports, which are what it picks between ranks of one machine anyway
#: (UCX's own log: ``intra-node cfg#1 tag(sysv/memory cma/memory)``). Without it UCX also opens its
#: network transports (TCP on every interface, InfiniBand, RDMA-CM) at each start: 2.5 s against 1.1 s
#: for a 2-rank launch here, and one more thing a closed or odd network can stall.
ONE_MACHINE_ENV = {"UCX_TLS": "self,sm"}

_LIVE: Dict[str, subprocess.Popen] = {}
_LIVE_LOCK = threading.Lock()


def processes_with_token(token: str) -> List[int]:
    """Pids of this user's processes whose environment carries ``token`` (Linux ``/proc``; an empty
    list elsewhere). Used to end processes that left the launch's process group, and by tests to
    show that none is left."""
    needle = f"{runner.TOKEN_ENV}={token}".encode()
    found = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    me = os.getpid()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _end_launch(proc: subprocess.Popen, token: str) -> None:
    """End every process of one launch, and reap the launcher."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in processes_with_token(token):
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            proc.wait(timeout=GRACE_SECONDS)
            if sig == signal.SIGTERM and not processes_with_token(token):
                break
        except subprocess.TimeoutExpired:
            continue
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    with _LIVE_LOCK:
        _LIVE.pop(token, None)


def _end_all_launches() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE.items())
    for token, proc in live:
        _end_launch(proc, token)


atexit.register(_end_all_launches)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _number(text: str):
    value = float(text)
    return int(value) if value.is_integer() else value


class _Progress:
    """Reads ``<work>/progress`` lines and moves a tqdm bar (tqdm.auto: a widget in a notebook), or
    calls ``show(done, total)`` (an instrument's own progress bar)."""

    def __init__(self, path: Path, desc: Optional[str], show: Optional[Callable] = None):
        self.path, self.offset, self.bar, self.desc, self.show = path, 0, None, desc, show

    def poll(self) -> None:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except OSError:
            return
        end = chunk.rfind(b"\n") + 1
        self.offset += end
        for line in chunk[:end].decode("ascii", "replace").splitlines():
            parts = line.split()
            try:
                done = _number(parts[0])
                total = _number(parts[1]) if len(parts) > 1 else None
            except (ValueError, IndexError):
                continue
            if self.show is not None:
                self.show(done, total)
                continue
            if self.bar is None:
                from tqdm.auto import tqdm

                # leave=True: in a notebook a bar that closes leaves an empty widget output behind; a
                # finished bar says what was measured
                self.bar = tqdm(total=total, desc=self.desc, unit="step", leave=True)
            elif total is not None and total != self.bar.total:
                self.bar.total = total
            self.bar.n = done
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


_SIGNAL_NAMES = {int(s): s.name for s in signal.Signals}


def _rank_process(work: Path, rank: int):
    """``(pid, start time)`` a rank wrote when it began (``rank-<r>.pid``), or None."""
    try:
        pid, start = (work / f"rank-{rank}.pid").read_text().split()
        return int(pid), (None if start == "None" else int(start))
    except (OSError, ValueError):
        return None


def _process_ended(pid: int, start) -> Optional[str]:
    """None while ``pid`` (started at ``start``) runs; else how it ended: ``"exited with status 3"``,
    ``"was killed by SIGSEGV"`` (read while the process manager has not yet reaped it), or
    ``"ended"``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
    except FileNotFoundError:
        return "ended"
    except OSError:  # no /proc (not Linux): ask the kernel whether the pid exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return "ended"
        except PermissionError:
            pass
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    if start is not None and len(fields) > 19 and int(fields[19]) != start:
        return "ended"  # the pid now names another process
    if fields[0] not in ("Z", "X"):
        return None
    if len(fields) > 49:  # exit_code (proc(5) field 52), in waitpid's format, while a zombie
        status = int(fields[49])
        if status & 0x7F:
            return f"was killed by {_SIGNAL_NAMES.get(status & 0x7F, f'signal {status & 0x7F}')}"
        return f"exited with status {(status >> 8) & 0xFF}"
    return "ended"


def _ended_ranks(work: Path, ranks: int, seen: Dict[int, str]) -> None:
    """Add to ``seen`` each rank whose process ended without writing a result or an error."""
    for rank in range(ranks):
        if rank in seen:
            continue
        process = _rank_process(work, rank)
        if process is None:
            continue
        how = _process_ended(*process)
        # a rank writes its result or error before it exits: look again after seeing it gone
        if how and not (work / f"rank-{rank}.result").exists() and not (work / f"rank-{rank}.error").exists():
            seen[rank] = how


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(size - MAX_OUTPUT_BYTES, 0))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def run(target, *args, ranks: int = 2, timeout: float = 60.0, backend: str = "mpi",
        progress: Union[bool, str] = False, env: Optional[Dict[str, str]] = None,
        cwd: Optional[str] = None, mpiexec: Optional[str] = None, python: Optional[str] = None,
        kwargs: Optional[dict] = None) -> RunResult:
    """Run ``target(comm, *args, **kwargs)`` on ``ranks`` processes; see :mod:`course.launch`.

    ``progress``: False, True or a description (a tqdm bar), or a function ``show(done, total)``
    called each time a rank reports (an instrument's own progress bar)."""
    ranks = int(ranks)
    if ranks < 1:
        raise ValueError(f"ranks must be >= 1, got {ranks}")
    if not timeout or timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    if backend not in ("mpi", "gloo", "nccl"):
        raise ValueError(f"backend must be 'mpi', 'gloo' or 'nccl', got {backend!r}")
    spec_target = describe_target(target)
    launcher = mpiexec or find_mpiexec()
    result = RunResult(ranks=ranks, backend=backend, mpiexec=launcher, timeout=float(timeout), cores=usable_cores(),
                       load=load_average())
    token = secrets.token_hex(16)
    work = Path(tempfile.mkdtemp(prefix="course-launch-"))
    try:
        spec = {"target": spec_target, "backend": backend, "owner_pid": os.getpid(),
                "owner_start": runner.process_start_time(os.getpid())}
        if backend != "mpi":
            spec["torch_port"] = _free_port()
        (work / "spec.json").write_text(json.dumps(spec))
        (work / "args.pkl").write_bytes(pickle.dumps((tuple(args), dict(kwargs or {})), protocol=4))
        child_env = dict(os.environ)
        # one thread per rank: NumPy's BLAS threads would fight the other ranks for the same cores
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            child_env.setdefault(name, "1")
        for name, value in ONE_MACHINE_ENV.items():  # an admin's own setting wins
            child_env.setdefault(name, value)
        child_env.update(env or {})
        child_env[runner.WORK_ENV] = str(work)
        child_env[runner.TOKEN_ENV] = token
        child_env.pop("PYTHONSTARTUP", None)
        # the guard (runner.py run as a file, without the course package) sets the parent-death
        # signal and execs mpiexec: if this process dies, mpiexec is killed, and the ranks with it
        guard = [sys.executable, "-S", runner.__file__, "--guard", str(os.getpid())] if _HAS_PDEATHSIG else []
        command = guard + [launcher, *launcher_options(launcher), "-n", str(ranks), python or sys.executable,
                           # course.launch imports its runner before -m runs it: a harmless warning per rank
                           "-W", "ignore:'course.launch.runner' found in sys.modules:RuntimeWarning",
                           "-m", "course.launch.runner", str(work)]
        bar = None
        if callable(progress):
            bar = _Progress(work / "progress", None, show=progress)
        elif progress:
            bar = _Progress(work / "progress", progress if isinstance(progress, str) else None)
        started = time.monotonic()
        with open(work / "launcher.out", "wb") as launcher_out:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=launcher_out, stderr=subprocess.STDOUT,
                                    env=child_env, cwd=cwd, start_new_session=True)
        with _LIVE_LOCK:
            _LIVE[token] = proc
        first_failure, polls = None, 0
        try:
            while proc.poll() is None:
                if bar:
                    bar.poll()
                now = time.monotonic()
                if now - started > timeout:
                    result.timed_out = True
                    break
                polls += 1
                if first_failure is None and polls % 5 == 0:
                    _ended_ranks(work, ranks, result.ended)
                if first_failure is None and (result.ended or any(work.glob("rank-*.error"))):
                    first_failure = now
                if first_failure is not None and now - first_failure > FAILURE_GRACE_SECONDS:
                    break
                time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            result.interrupted = True
            raise
        finally:
            if not result.interrupted:  # who ended on its own, before the launch is ended for all
                _ended_ranks(work, ranks, result.ended)
            _end_launch(proc, token)
            result.seconds = time.monotonic() - started
            result.returncode = proc.returncode
            if bar:
                bar.poll()
                bar.close()
            _collect(result, work)
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _collect(result: RunResult, work: Path) -> None:
    result.values = [None] * result.ranks
    result.started = [r for r in range(result.ranks) if (work / f"rank-{r}.pid").exists()]
    result.output = [_tail(work / f"rank-{r}.out") for r in range(result.ranks)]
    result.launcher_output = _tail(work / "launcher.out")
    unreadable, raised_at = {}, {}
    for r in range(result.ranks):
        error = work / f"rank-{r}.error"
        value = work / f"rank-{r}.result"
        if error.exists():
            try:
                record = json.loads(error.read_text())
                result.errors[r] = f"{record['type']}: {record['message']}"
                result.tracebacks[r] = record.get("traceback", "")
                raised_at[r] = float(record.get("time", 0.0))
            except (ValueError, KeyError, OSError):
                result.errors[r] = "an unreadable error report"
        elif value.exists():
            try:
                if value.stat().st_size > MAX_RESULT_BYTES:
                    raise ValueError(f"result larger than {MAX_RESULT_BYTES} bytes")
                result.values[r] = load_result(value.read_bytes())
            except Exception as exc:  # noqa: BLE001 -- any unreadable result is reported, never raised
                unreadable[r] = f"{type(exc).__name__}: {exc}"
        else:
            result.missing.append(r)
    # the first rank to fail is named first: the others often fail because of it
    result.errors = dict(sorted(result.errors.items(), key=lambda item: (raised_at.get(item[0], 0.0), item[0])))
    # several ranks seen ended at once (Hydra kills every rank when one crashes): the one whose crash is
    # in its output, then one that ended on its own rather than by the process manager's kill, comes first
    def suspect(item):
        rank, how = item
        output = result.output[rank] if rank < len(result.output) else ""
        return (not _crash_line(output), how in ("was killed by SIGKILL", "was killed by SIGTERM"))
    result.ended = dict(sorted(result.ended.items(), key=suspect))
    result.reason = _reason(result, unreadable)


def _launcher_said(result: RunResult) -> str:
    """``"; mpiexec said: <its last line>"``, or nothing when it printed nothing."""
    tail = result.launcher_output.strip().splitlines()[-1:] or [""]
    return f"; mpiexec said: {tail[0][:300]}" if tail[0] else ""


def _crash_line(output: str) -> str:
    """The line a crash left in a rank's output (faulthandler's ``Fatal Python error: ...``), if any."""
    for line in reversed(output.splitlines()):
        if line.startswith("Fatal Python error:"):
            return line[:200]
    return ""


def _ranks(numbers: Sequence[int]) -> str:
    numbers = list(numbers)
    return ("rank " if len(numbers) == 1 else "ranks ") + ", ".join(map(str, numbers))


def _reason(result: RunResult, unreadable: Dict[int, str]) -> str:
    if result.interrupted:
        return "interrupted (KeyboardInterrupt): every rank was stopped"
    if result.ended:
        first, how = next(iter(result.ended.items()))
        others = [r for r in result.missing if r not in result.ended]
        crash = _crash_line(result.output[first] if first < len(result.output) else "")
        also = sorted(r for r in result.ended if r != first)
        more = f"; {_ranks(also)} ended too" if also else ""
        stopped = f"; {_ranks(others)}, waiting for it, were stopped" if others else ""
        if crash:
            how = f"crashed ({crash})"
        elif how == "ended":
            how = "ended (os._exit, a crash or a signal)"
        # a rank that died is the cause: the errors of ranks that talked to it (a reset connection) come after
        then = ""
        if result.errors:
            rank, error = next(iter(result.errors.items()))
            then = f"; then {_ranks(sorted(result.errors))} raised (rank {rank}: {error[:160]})"
        return (f"rank {first} ended without returning a value or raising an error: its process {how}{more}{stopped}"
                f"{then}")
    if result.errors:
        first = next(iter(result.errors))
        more = f" ({_ranks(sorted(result.errors))} raised)" if len(result.errors) > 1 else ""
        return f"rank {first} raised {result.errors[first]}{more}"
    if result.timed_out:
        waiting = result.missing or list(range(result.ranks))
        never = [r for r in waiting if r not in result.started]
        if never:  # stuck before the target ran: the machine's MPI, not the code, is the cause
            return (f"timed out after {result.timeout:g} s: {_ranks(never)} never finished starting MPI "
                    f"(MPI_Init), so no code of yours ran there{_launcher_said(result)}")
        return (f"timed out after {result.timeout:g} s: {_ranks(waiting)} had not finished "
                f"(a deadlock, such as two ranks that both wait to receive first, or a loop that never ends)")
    if unreadable:
        first = min(unreadable)
        return f"rank {first} returned a value that cannot be read back: {unreadable[first]}"
    if result.missing:
        how = f"the launch ended with status {result.returncode}"
        if result.returncode is not None and result.returncode < 0:
            how = f"the launch was ended by signal {-result.returncode}"
        return f"{_ranks(result.missing)} ended without a result ({how}{_launcher_said(result)})"
    return ""

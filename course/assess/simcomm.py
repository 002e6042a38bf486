"""Simulated ranks: a communicator whose ranks are threads of one process, for collectives written by hand.

A student's collective (``reduce_scatter(comm, x)``) is called once per rank with a :class:`SimComm`
that speaks the part of mpi4py's API the workbook uses: ``rank``/``size`` (``Get_rank``/``Get_size``),
``sendrecv``/``send``/``recv`` (Python objects) and ``Sendrecv``/``Send``/``Recv`` (NumPy buffers),
``barrier``/``Barrier``. It is deterministic and strict where real MPI is forgiving:

* ``send``/``Send`` are *synchronous* (MPI_Ssend): they return once the message is received, so two
  ranks that both send first deadlock every time, not only above MPI's eager limit;
* a **deadlock** (every rank still running waits for a message no rank will send) is found at once,
  not by a timeout, and says what each rank waits in;
* each rank's communication calls are its *steps* (1, 2, ...); the payload each step sends is kept
  (its first numbers), so feedback can name the rank and step where data first diverge.

The visible check and plain ``nbgrader`` grading run a Build's function here; graded runs use real MPI
processes (:mod:`course.assess.ranks_runner`), whose communicator wrapper keeps the same steps and trace.
Standard library and NumPy only.
"""

from __future__ import annotations

import pickle
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from .ranks_runner import trace_payload as _trace_payload

#: marker of a rank whose call never returned (a deadlock, the time limit)
UNFINISHED = "__unfinished__"
#: mpi4py's wildcards (the same values, so code written for mpi4py runs here unchanged)
ANY_SOURCE, ANY_TAG = -2, -1


class Deadlock(BaseException):
    """Raised in every waiting rank when no rank can make progress (a BaseException: a bare
    ``except Exception`` in student code does not swallow it)."""


class Stopped(BaseException):
    """Raised in a rank's thread when the run is over (time limit, or another rank's deadlock)."""


class _Message:
    __slots__ = ("source", "dest", "tag", "payload", "taken")

    def __init__(self, source, dest, tag, payload):
        self.source, self.dest, self.tag, self.payload, self.taken = source, dest, tag, payload, False


def _array_of(buf):
    """The NumPy array of an mpi4py buffer spec (``x`` or ``[x, MPI.DOUBLE]``)."""
    import numpy as np

    if isinstance(buf, (list, tuple)) and buf:
        buf = buf[0]
    if not isinstance(buf, np.ndarray):
        raise TypeError("a buffer must be a NumPy array (or [array, datatype])")
    return buf


class World:
    """The shared state of one simulated run of ``size`` ranks."""

    def __init__(self, size: int, deadline: float):
        self.size = size
        self.cond = threading.Condition()
        self.queue: List[_Message] = []
        self.alive = set(range(size))
        self.waiting: Dict[int, tuple] = {}
        self.deadline = deadline
        self.failure: Optional[dict] = None
        self.steps = [0] * size
        self.traces: List[list] = [[] for _ in range(size)]

    def block(self, rank: int, ready: Callable[[], bool], what: str) -> None:
        """Wait (holding ``cond``) until ``ready()``; raise :class:`Deadlock` if no rank can move."""
        while not ready():
            if self.failure is not None:
                raise Stopped()
            self.waiting[rank] = (ready, what)
            try:
                if set(self.waiting) >= self.alive and not any(r() for r, _ in self.waiting.values()):
                    self.failure = {"kind": "deadlock",
                                    "waiting": {str(r): w for r, (_, w) in sorted(self.waiting.items())}}
                    self.cond.notify_all()
                    raise Deadlock()
                self.cond.wait(timeout=0.25)
            finally:
                self.waiting.pop(rank, None)
            if time.monotonic() > self.deadline and self.failure is None:
                self.failure = {"kind": "timeout"}
                self.cond.notify_all()

    def match(self, dest: int, source: int, tag: int) -> Optional[_Message]:
        for m in self.queue:
            if (not m.taken and m.dest == dest and (source == ANY_SOURCE or m.source == source)
                    and (tag == ANY_TAG or m.tag == tag)):
                return m
        return None


class SimComm:
    """One rank's view of a :class:`World` (mpi4py's method names; see the module docstring)."""

    def __init__(self, world: World, rank: int):
        self._world, self.rank, self.size = world, rank, world.size

    def Get_rank(self) -> int:
        return self.rank

    def Get_size(self) -> int:
        return self.size

    # -- the steps ---------------------------------------------------------------------------------
    def _peer(self, peer: Any, name: str) -> int:
        if type(peer) is not int and not (hasattr(peer, "__index__") and not isinstance(peer, bool)):
            raise TypeError(f"{name} must be a rank (an int), got {type(peer).__name__}")
        peer = int(peer)
        if not 0 <= peer < self.size and not (name == "source" and peer == ANY_SOURCE):
            raise ValueError(f"{name}={peer} is not a rank of this communicator (0..{self.size - 1})")
        return peer

    def _post(self, payload: Any, dest: int, tag: int, what: str) -> _Message:
        world = self._world
        world.steps[self.rank] += 1
        world.traces[self.rank].append([what, dest, _trace_payload(payload)])
        message = _Message(self.rank, dest, tag, payload)
        world.queue.append(message)
        world.cond.notify_all()
        return message

    def _take(self, source: int, tag: int, what: str) -> Any:
        world = self._world
        found: List[_Message] = []

        def ready() -> bool:
            m = world.match(self.rank, source, tag)
            if m is not None:
                found[:] = [m]
            return m is not None

        world.block(self.rank, ready, what)
        message = found[0]
        message.taken = True
        world.queue.remove(message)
        world.cond.notify_all()
        return message.payload

    def _step_name(self, verb: str, peer: int) -> str:
        return f"step {self._world.steps[self.rank] + (1 if verb != 'receive' else 0)}: {verb} rank {peer}"

    def sendrecv(self, sendobj: Any, dest: int, sendtag: int = 0, recvbuf: Any = None,
                 source: int = ANY_SOURCE, recvtag: int = ANY_TAG, status: Any = None) -> Any:
        dest, source = self._peer(dest, "dest"), self._peer(source, "source")
        with self._world.cond:
            self._post(pickle.loads(pickle.dumps(sendobj)), dest, sendtag, "sendrecv")
            where = f"step {self._world.steps[self.rank]}: sendrecv, waiting to receive from rank {source}"
            return self._take(source, recvtag, where)

    def send(self, obj: Any, dest: int, tag: int = 0) -> None:
        dest = self._peer(dest, "dest")
        with self._world.cond:
            message = self._post(pickle.loads(pickle.dumps(obj)), dest, tag, "send")
            where = f"step {self._world.steps[self.rank]}: send to rank {dest}, waiting for it to receive"
            self._world.block(self.rank, lambda: message.taken, where)

    def recv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Any = None) -> Any:
        source = self._peer(source, "source")
        with self._world.cond:
            self._world.steps[self.rank] += 1
            self._world.traces[self.rank].append(["recv", source, []])
            return self._take(source, tag, f"step {self._world.steps[self.rank]}: receive from rank {source}")

    def Sendrecv(self, sendbuf: Any, dest: int, sendtag: int = 0, recvbuf: Any = None,
                 source: int = ANY_SOURCE, recvtag: int = ANY_TAG, status: Any = None) -> None:
        send, into = _array_of(sendbuf), _array_of(recvbuf)
        got = self.sendrecv(send.copy(), dest, sendtag, None, source, recvtag)
        _fill(into, got)

    def Send(self, buf: Any, dest: int, tag: int = 0) -> None:
        self.send(_array_of(buf).copy(), dest, tag)

    def Recv(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Any = None) -> None:
        _fill(_array_of(buf), self.recv(None, source, tag))

    def barrier(self) -> None:
        with self._world.cond:
            for peer in range(self.size):
                if peer != self.rank:
                    self._world.queue.append(_Message(self.rank, peer, -99, None))
            self._world.cond.notify_all()
        for peer in range(self.size):
            if peer != self.rank:
                with self._world.cond:
                    self._take(peer, -99, f"barrier, waiting for rank {peer}")

    Barrier = barrier


def _fill(into, got) -> None:
    import numpy as np

    got = np.asarray(got)
    if got.size > into.size:
        raise ValueError(f"message truncated: {got.size} elements received into a buffer of {into.size}")
    into.reshape(-1)[:got.size] = got.reshape(-1)


def _raise_in(thread_id: int, exc: type) -> None:
    """Raise ``exc`` in the thread ``thread_id`` at its next bytecode (CPython's async exception)."""
    import ctypes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc))


def run_simulated(fn: Callable, size: int, args_per_rank: Sequence[Sequence[Any]], *,
                  time_limit: float = 10.0, plain: Callable[[Any], Any] = lambda v: v) -> dict:
    """Call ``fn(comm, *args_per_rank[r])`` on ``size`` simulated ranks.

    Returns ``{"ranks": [plain(result) or {"__raised__": name} or {UNFINISHED: True}],
    "traces": [[[call, peer, payload], ...] per rank], "failure": None or {"kind": "deadlock",
    "waiting": {rank: what}} or {"kind": "timeout"}}``. A rank that loops is stopped at the time limit
    (a trace function raises in its thread at the next line it runs).
    """
    world = World(size, time.monotonic() + time_limit)
    results: List[Any] = [{UNFINISHED: True}] * size

    def stopper(frame, event, arg):
        if world.failure is not None or time.monotonic() > world.deadline:
            if world.failure is None:
                with world.cond:
                    world.failure = world.failure or {"kind": "timeout"}
                    world.cond.notify_all()
            raise Stopped()
        return stopper

    def rank_main(rank: int) -> None:
        sys.settrace(stopper)
        try:
            results[rank] = {"value": plain(fn(SimComm(world, rank), *args_per_rank[rank]))}
        except (Deadlock, Stopped):
            pass
        except ValueError:
            results[rank] = {"__raised__": "ValueError"}
        except BaseException as exc:  # noqa: BLE001 -- the student's code may raise anything; it is recorded
            results[rank] = {"__raised__": type(exc).__name__[:60]}
        finally:
            sys.settrace(None)
            with world.cond:
                world.alive.discard(rank)
                world.cond.notify_all()

    threads = [threading.Thread(target=rank_main, args=(r,), daemon=True, name=f"simrank-{r}")
               for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.1, world.deadline - time.monotonic()) + 0.5)
    if any(t.is_alive() for t in threads):  # a loop that makes no line events (``while True: pass``)
        with world.cond:
            world.failure = world.failure or {"kind": "timeout"}
            world.cond.notify_all()
        for t in threads:
            if t.is_alive() and t.ident is not None:
                _raise_in(t.ident, Stopped)
        for t in threads:
            t.join(1.0)  # a thread stuck in C code stays (a daemon): its rank counts as unfinished
    return {"ranks": [r["value"] if type(r) is dict and "value" in r else r for r in results],
            "traces": [list(t) for t in world.traces], "failure": world.failure}

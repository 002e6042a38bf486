"""The program of a graded ranks part: ``mpiexec -n P+1 python -I ranks_runner.py ROOM``.

Not imported by the grader's process: ``autograder`` copies this file into the room (a folder of the
grading sandbox's scratch) and starts it on P+1 MPI processes; standard library, NumPy and mpi4py only
(:func:`plain_result` and :func:`trace_payload` are imported by the course from here, so the kernel's
simulated ranks and the real ones read results the same way).

World rank 0 is the **judge's rank** and runs no student code. It makes itself non-dumpable (no
process of the sandbox's user can read its memory), reads ``ROOM/request.json`` (the probes of every
rank, the nonce) and deletes it, sends each student rank *its own* arguments as JSON over MPI, and
only then lets the ranks run the student's definitions (a barrier). It receives each rank's results as
JSON bytes (never pickle) and attributes them by the MPI source of the message, so a rank can report
only its own results. It answers with one line ``MARK <nonce> <json>`` on stdout, or, at a probe's time
limit or when a rank's process is gone, with the failure (who waits where), then aborts the job.

World ranks 1..P run the student's definitions (``ROOM/definitions.json``: the notebook's imports,
functions, classes and plain assignments, :func:`course.assess.ranks.definitions`) and call the function
with a communicator of ``p`` of them per probe (:class:`Comm`: mpi4py's names, ``send`` synchronous, each
call a numbered step whose payload is traced).
"""

import json
import os
import sys
import time

RESULT_TAG, STEP_TAG, SETUP_TAG = 7001, 7002, 7003
#: the most bytes one rank message may have
MAX_MESSAGE = 2**20
#: seconds the judge waits, after answering a failure, for the grader to read the answer and end the launch
#: before it aborts the job itself
ANSWER_GRACE_SECONDS = 5.0
#: numbers of each step's payload kept in the trace
TRACE_ELEMENTS = 64
#: numbers per rank result read back
MAX_RESULT_ELEMENTS = 4096


def trace_payload(obj):
    """Up to :data:`TRACE_ELEMENTS` numbers of a sent payload (arrays, numbers, nested lists)."""
    import numpy as np

    try:
        flat = np.asarray(obj, dtype=float).ravel()
    except (TypeError, ValueError):
        return []
    return [float(v) for v in flat[:TRACE_ELEMENTS]]


def plain_result(value):
    """A rank's return value as plain data: an array or a sequence of numbers as
    ``{"values": [...], "dtype": str}``, a number as itself, anything else an ``__unplain__`` marker."""
    import numpy as np

    if value is None or type(value) in (int, float, bool):
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return {"values": [value.item()], "dtype": str(value.dtype), "scalar": True}
    if isinstance(value, (np.ndarray, list, tuple)):
        try:
            array = np.asarray(value)
        except Exception:  # noqa: BLE001 -- a ragged or odd sequence is simply not plain
            return {"__unplain__": type(value).__name__[:60]}
        if array.dtype.kind not in "biuf" or array.ndim != 1:
            return {"__unplain__": "%s of %s with %d dimensions" % (type(value).__name__[:40], array.dtype, array.ndim)}
        return {"values": array[:MAX_RESULT_ELEMENTS].tolist(), "dtype": str(array.dtype)}
    return {"__unplain__": type(value).__name__[:60]}


def _send_json(world, obj, dest, tag):
    from mpi4py import MPI

    data = bytearray(json.dumps(obj).encode())
    world.Send([data, MPI.BYTE], dest=dest, tag=tag)


def _recv_json(world, source, tag, status):
    """One message as JSON (``None`` if it is too long or not JSON); ``status`` says who sent it."""
    from mpi4py import MPI

    world.Probe(source=source, tag=tag, status=status)
    count = status.Get_count(MPI.BYTE)
    sender = status.Get_source()
    data = bytearray(max(count, 1))
    world.Recv([data, MPI.BYTE], source=sender, tag=tag, status=status)
    if count > MAX_MESSAGE:
        return None
    try:
        return json.loads(bytes(data[:count]).decode())
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def _not_dumpable():
    """No other process of this user may read this one's memory, fds or environment (PR_SET_DUMPABLE 0)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
    except Exception:  # noqa: BLE001 -- not Linux: nothing more to do
        pass


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError, ValueError):
        return False


def _hand_out(world, request):
    """Each rank its function and its arguments of every probe; ``{rank: pid}`` as the ranks report them.
    Returns once every rank has them and the request file is gone (student code may run then)."""
    from mpi4py import MPI

    probes, ranks = request["probes"], world.Get_size() - 1
    sizes = sorted({probe["p"] for probe in probes})
    for r in range(ranks):
        mine = [{"p": probe["p"], "args": probe["args"][r] if r < probe["p"] else None} for probe in probes]
        _send_json(world, {"function": request["function"], "probes": mine, "sizes": sizes}, r + 1, SETUP_TAG)
    status = MPI.Status()
    pids = {}
    for _ in range(ranks):
        note = _recv_json(world, MPI.ANY_SOURCE, SETUP_TAG, status)
        if type(note) is dict and type(note.get("pid")) is int:
            pids[status.Get_source() - 1] = note["pid"]
    world.Barrier()  # the request is gone and every rank has its arguments: student code may run
    for size in sizes:
        world.Split(MPI.UNDEFINED, 0)  # the judge takes part in each size's split, in no group
    return pids


def judge(world, room):
    from mpi4py import MPI

    _not_dumpable()
    path = os.path.join(room, "request.json")
    with open(path) as fh:
        request = json.load(fh)
    os.remove(path)
    probes, ranks = request["probes"], world.Get_size() - 1
    pids = _hand_out(world, request)
    status = MPI.Status()
    out = sys.stdout
    limit = float(request.get("probe_seconds", 20))

    def answer(data):
        out.write(request["mark"] + " " + request["nonce"] + " " + json.dumps(data) + "\n")
        out.flush()

    runs = [{"ranks": [{"__unfinished__": True}] * probe["p"], "traces": [[] for _ in range(probe["p"])]}
            for probe in probes]
    missing = set()
    results = {}
    for index, probe in enumerate(probes):
        waiting = set(range(probe["p"]))
        where = {}
        deadline = time.monotonic() + limit
        gone = []
        while waiting:
            got = False
            for tag in (RESULT_TAG, STEP_TAG):
                if world.Iprobe(source=MPI.ANY_SOURCE, tag=tag, status=status):
                    got = True
                    message = _recv_json(world, status.Get_source(), tag, status)
                    rank = status.Get_source() - 1  # who sent it, as MPI says: never what it claims
                    if type(message) is not dict:
                        continue
                    if tag == STEP_TAG:
                        if message.get("probe") == index:
                            where[str(rank)] = str(message.get("at", ""))[:120]
                        continue
                    if message.get("missing") is True:
                        missing.add(rank)
                        if len(missing) == ranks:
                            answer({"missing": True})
                            return
                        continue
                    which = message.get("probe")
                    if type(which) is int and index <= which < len(probes) and (rank, which) not in results:
                        results[(rank, which)] = message  # a rank's first result per probe (it may run ahead)
            for rank in sorted(waiting):
                if (rank, index) in results:
                    message = results.pop((rank, index))
                    runs[index]["ranks"][rank] = message.get("value")
                    traces = message.get("trace")
                    runs[index]["traces"][rank] = traces if type(traces) is list else []
                    waiting.discard(rank)
                    got = True
            if got:
                continue
            # a rank we wait for whose process is gone: its last message may still be on its way, so
            # it counts as dead when it is still gone after the messages were read once more
            dead = sorted(r for r in waiting if r in pids and not _alive(pids[r]))
            if dead and not gone:
                gone = dead
                time.sleep(0.05)
                continue
            if dead or time.monotonic() > deadline:
                failure = {"kind": "died", "ranks": dead} if dead else {
                    "kind": "timeout", "unfinished": sorted(waiting), "seconds": limit,
                    "waiting": {r: w for r, w in where.items() if int(r) in waiting}}
                answer({"probes": runs[:index + 1], "failure": dict(failure, probe=index)})
                # the answer reaches the grader through the process manager, which forwards this rank's output
                # on its own time: an Abort at once could kill it with the line half forwarded (the grader then
                # reads no answer at all). The grader ends the launch as soon as it has the line; Abort only
                # if it has not done so by then
                time.sleep(ANSWER_GRACE_SECONDS)
                world.Abort(3)
                return
            time.sleep(0.005)
    answer({"probes": runs, "failure": None})


class Comm:
    """A student rank's communicator: mpi4py's names over ``comm`` (a sub-communicator of ``p`` ranks).

    Each communication call is a numbered step; before it starts the judge's rank hears where this rank
    is (so a timeout says what each rank waits in) and its payload is traced. ``send``/``Send`` are
    synchronous (``Ssend``), so two ranks that both send first deadlock at any message size."""

    def __init__(self, comm, world, probe):
        self._comm, self._world, self._probe = comm, world, probe
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.steps, self.trace, self._notes = 0, [], []

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.size

    def _step(self, what, peer, payload):
        from mpi4py import MPI

        self.steps += 1
        self.trace.append([what, peer, trace_payload(payload) if payload is not None else []])
        note = bytearray(json.dumps({"probe": self._probe,
                                     "at": "step %d: %s rank %s" % (self.steps, what, peer)}).encode())
        self._notes.append((note, self._world.Isend([note, MPI.BYTE], dest=0, tag=STEP_TAG)))

    def sendrecv(self, sendobj, dest, sendtag=0, recvbuf=None, source=-2, recvtag=-1, status=None):
        self._step("sendrecv", dest, sendobj)
        return self._comm.sendrecv(sendobj, dest=dest, sendtag=sendtag, source=source, recvtag=recvtag)

    def send(self, obj, dest, tag=0):
        self._step("send", dest, obj)
        self._comm.ssend(obj, dest=dest, tag=tag)

    def recv(self, buf=None, source=-2, tag=-1, status=None):
        self._step("recv", source, None)
        return self._comm.recv(source=source, tag=tag)

    def Sendrecv(self, sendbuf, dest, sendtag=0, recvbuf=None, source=-2, recvtag=-1, status=None):
        self._step("sendrecv", dest, sendbuf[0] if isinstance(sendbuf, (list, tuple)) else sendbuf)
        self._comm.Sendrecv(sendbuf, dest=dest, sendtag=sendtag, recvbuf=recvbuf, source=source, recvtag=recvtag)

    def Send(self, buf, dest, tag=0):
        self._step("send", dest, buf[0] if isinstance(buf, (list, tuple)) else buf)
        self._comm.Ssend(buf, dest=dest, tag=tag)

    def Recv(self, buf, source=-2, tag=-1, status=None):
        self._step("recv", source, None)
        self._comm.Recv(buf, source=source, tag=tag)

    def barrier(self):
        self._comm.Barrier()

    Barrier = barrier


def student_rank(world, room):
    from mpi4py import MPI

    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    status = MPI.Status()
    setup = _recv_json(world, 0, SETUP_TAG, status)
    _send_json(world, {"pid": os.getpid()}, 0, SETUP_TAG)
    world.Barrier()
    me = world.Get_rank() - 1
    comms = {size: world.Split(0 if me < size else MPI.UNDEFINED, me) for size in setup["sizes"]}
    with open(os.path.join(room, "definitions.json")) as fh:
        statements = json.load(fh)
    sys.path.insert(0, os.path.join(room, "stub"))
    sys.stdin = open(os.devnull)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    for source in statements:
        try:
            exec(compile(source, "<cell>", "exec"), namespace)
        except BaseException:  # noqa: BLE001 -- a failing definition defines nothing, as in the notebook
            pass
    fn = namespace.get(setup["function"])
    if not callable(fn):
        _send_json(world, {"missing": True}, 0, RESULT_TAG)
        return
    import numpy as np

    for index, probe in enumerate(setup["probes"]):
        if probe["args"] is None:
            continue
        args = [np.array(a["array"], dtype=a["dtype"]) if type(a) is dict and set(a) == {"array", "dtype"} else a
                for a in probe["args"]]
        comm = Comm(comms[probe["p"]], world, index)
        try:
            value = plain_result(fn(comm, *args))
        except ValueError:
            value = {"__raised__": "ValueError"}
        except BaseException as exc:  # noqa: BLE001 -- recorded, the next probe runs
            value = {"__raised__": type(exc).__name__[:60]}
        try:
            _send_json(world, {"probe": index, "value": value, "trace": comm.trace[:256]}, 0, RESULT_TAG)
        except (TypeError, ValueError):
            _send_json(world, {"probe": index, "value": {"__unplain__": "result"}, "trace": []}, 0, RESULT_TAG)


def main():
    room = sys.argv[1]
    # MPICH's gforker answers one rank's non-zero exit by sending SIGINT, then SIGQUIT, to every other
    # rank. The judge must outlive a dying rank to say which one ended, and the other ranks must stay
    # alive to be told apart from it; the grader's time limit and world.Abort still end them all.
    import signal

    for number in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(number, signal.SIG_IGN)
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    if world.Get_rank() == 0:
        judge(world, room)
        sys.stdout.flush()
        os._exit(0)
    student_rank(world, room)
    MPI.Finalize()


if __name__ == "__main__":
    main()

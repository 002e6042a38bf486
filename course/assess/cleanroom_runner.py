"""The clean room's program: run a notebook's cells in one namespace and answer with plain values.

Not imported by the course: :func:`course.assess.cleanroom_protocol.write_room` copies this file into the
room as ``runner.py``, and grading runs it there (``python -I runner.py CELLS STUB CELL_TIMEOUT``)
inside the sandbox, which holds no course package (``autograder.judging.sandboxed_cleanroom``); the visible check
runs it the same way, unsandboxed. It reads its settings from argv and the request from stdin, and
uses the standard library only (and IPython's input transformer for a cell with magics).
:mod:`course.assess.cleanroom_protocol` describes what it answers.
"""

import json
import os
import select
import signal
import sys

#: seconds a cell may run past its alarm before its process group is killed
GRACE = 2
#: the most bytes one function part's calls may send back
MAX_PART_BYTES = 2**20
#: seconds a cell's process waits for its checkpoint to say it saw the cell end: no word means the
#: cell killed or stopped its checkpoint, and with it the run, so this process ends too
ACK_WAIT = 10


def chain_broken(pids):
    """True if one of ``pids`` (the processes this one descends from, which carry the run) is gone,
    dying, stopped, or has a SIGKILL or SIGSTOP on its way: a cell killed or stopped it. Read from
    /proc (a signal sent is pending there before its process ends); without /proc (not Linux: the
    visible check on a laptop) nothing is known and the run goes on."""
    if not os.path.exists("/proc/self/status"):
        return False
    for pid in pids:
        try:
            with open("/proc/%d/status" % pid) as fh:
                fields = dict(line.split(":", 1) for line in fh.read().splitlines() if ":" in line)
        except (OSError, ValueError):
            return True
        if fields.get("State", "").strip()[:1] in ("Z", "X", "T", "t"):
            return True
        for key in ("ShdPnd", "SigPnd"):
            try:
                if int(fields.get(key, "0").strip(), 16) & ((1 << (signal.SIGKILL - 1)) | (1 << (signal.SIGSTOP - 1))):
                    return True
            except ValueError:
                return True
    return False


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


class Overran(BaseException):
    """A cell or a call ran past its alarm (a BaseException, so a bare ``except Exception`` in it does not
    swallow it)."""


def _alarm(signum, frame):
    raise Overran()


class Shell:
    """What ``get_ipython()`` returns in the room: every method does nothing (no magics, no display)."""

    def __getattr__(self, name):
        return lambda *a, **k: None


def fresh_namespace():
    """The one namespace the cells run in, as a notebook's: ``__main__``, ``get_ipython`` and ``display``."""
    shell = Shell()
    return {"__name__": "__main__", "__builtins__": __builtins__,
            "get_ipython": lambda: shell, "display": lambda *a, **k: None}


def transformed(source):
    """A cell's code object; a cell with magics (not Python) goes through IPython's input transformer."""
    try:
        return compile(source, "<cell>", "exec")
    except SyntaxError:
        from IPython.core.inputtransformer2 import TransformerManager
        return compile(TransformerManager().transform_cell(source), "<cell>", "exec")


def with_alarm(thunk, seconds):
    """``thunk()``, interrupted by :class:`Overran` after ``seconds``."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return thunk()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def plain(value, depth=0):
    """``value`` as plain JSON data (numbers, strings, lists, string-keyed dicts, small NumPy arrays), or a
    marker ``{"__unplain__": type name}`` that earns nothing."""
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if depth < 4 and kind in (list, tuple):
        return [plain(v, depth + 1) for v in value[:256]]
    if depth < 4 and kind is dict and all(type(k) is str for k in value):
        return {k: plain(v, depth + 1) for k, v in list(value.items())[:256]}
    if kind.__module__ == "numpy" and getattr(value, "ndim", 0) == 1 and value.dtype.kind in "biuf":
        return plain(value.tolist(), depth)
    if kind.__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        item = value.item()
        if type(item) in (bool, int, float):
            return item
    return {"__unplain__": kind.__name__[:60]}


def call(fn, args, seconds):
    """One call of a student's function: its plain result, or ``{"__raised__": exception name}``."""
    try:
        return plain(with_alarm(lambda: fn(*args), seconds))
    except ValueError:
        return {"__raised__": "ValueError"}
    except BaseException as exc:
        return {"__raised__": type(exc).__name__[:60]}


class Run:
    """What one run of the room knows: the request, where the answer goes, the cells' namespace, and what
    happened to the cells so far."""

    def __init__(self, request, out, cell_timeout):
        self.request = request
        self.out = out
        self.cell_timeout = cell_timeout
        self.namespace = fresh_namespace()
        # the visible check asks which cells failed and why (its reason names the cell); grading does not
        self.report = request.get("report") is True
        self.failed = []
        self.stopped, self.exited = [], []
        self.ancestors = []  # the checkpoints this process descends from, which carry the run to its answer


def progress(run, what, which):
    """Say where the run is (grading only): a run that ends without an answer ended here."""
    mark = run.request.get("progress")
    if type(mark) is str:
        run.out.write(mark + " " + run.request["nonce"] + " " + what + " " + str(which) + "\n")
        run.out.flush()


def run_cell(run, source, index):
    """Run one cell in the run's namespace, within the cell timeout; a failure is noted if asked for."""
    try:
        with_alarm(lambda: exec(transformed(source), run.namespace), run.cell_timeout)
    except BaseException as exc:
        if run.report:
            try:
                run.failed.append([index, (type(exc).__name__ + ": " + str(exc))[:300]])
            except BaseException:
                run.failed.append([index, "an exception"])


def fork_with_pipes():
    """``(child, ready_r, ready_w, ack_r, ack_w)`` after a fork with two pipes open, or ``None`` when no
    pipe or process can be had (nothing is left open then)."""
    try:
        ready_r, ready_w = os.pipe()
    except OSError:
        return None
    try:
        ack_r, ack_w = os.pipe()
    except OSError:
        os.close(ready_r)
        os.close(ready_w)
        return None
    try:
        child = os.fork()
    except OSError:
        for fd in (ready_r, ready_w, ack_r, ack_w):
            os.close(fd)
        return None
    return child, ready_r, ready_w, ack_r, ack_w


def run_cells(run, cells):
    """Run every cell in order. Each cell runs in a forked copy of this process, and this copy waits as its
    checkpoint: a cell that swallows the alarm (a bare except in a loop) or leaves children behind is killed
    with its process group after cell_timeout + GRACE, and this copy goes on from the state before it. A
    cell that ends hands over: its copy carries on with the next cells and the answer; this one waits for
    it, then kills what the cells left in its group. Returns in the one process that answers."""
    index = 0
    while index < len(cells):
        progress(run, "cell", index)
        me = os.getpid()
        forked = fork_with_pipes()
        if forked is None:  # no more processes (a notebook of hundreds of cells): the alarm alone
            run_cell(run, cells[index], index)
            progress(run, "done", index)
        elif forked[0] == 0:
            cell_process(run, cells[index], index, me, *forked[1:])
        else:
            checkpoint(run, index, *forked)
        index += 1


def cell_process(run, source, index, parent, ready_r, ready_w, ack_r, ack_w):
    """In the forked copy: run the cell, tell the checkpoint it ended, and go on only once the checkpoint
    has seen that (and said so): a checkpoint that is gone or stopped (the cell killed it) says nothing, and
    the run it belonged to is over."""
    os.close(ready_r)
    os.close(ack_w)
    os.setpgid(0, 0)
    run.ancestors = run.ancestors + [parent]
    run_cell(run, source, index)
    try:
        os.write(ready_w, b"+")
        os.close(ready_w)
    except OSError:  # the cell closed it: the checkpoint takes the cell as never ending
        pass
    try:
        acked = bool(select.select([ack_r], [], [], ACK_WAIT)[0]) and os.read(ack_r, 1) == b"+"
        os.close(ack_r)
    except (OSError, ValueError):
        acked = False
    if not acked:
        os._exit(0)


def checkpoint(run, index, child, ready_r, ready_w, ack_r, ack_w):
    """In this copy: wait for the cell's copy. A cell that ended hands the run over (this copy ends); one
    that overran or died is killed with its group, noted in ``stopped`` (and ``exited`` if its process
    ended before its time), and this copy goes on."""
    os.close(ready_w)
    os.close(ack_r)
    ready, _, _ = select.select([ready_r], [], [], run.cell_timeout + GRACE)
    ended = bool(ready) and os.read(ready_r, 1) == b"+"
    os.close(ready_r)
    if chain_broken(run.ancestors):  # the cell killed or stopped a process before this one: the run is over
        kill_group(child)
        os._exit(0)
    progress(run, "done", index)  # this checkpoint outlived the cell: the cell did not end the run
    if ended:
        try:
            os.write(ack_w, b"+")
        except OSError:
            pass
        os.close(ack_w)
        os.waitpid(child, 0)
        kill_group(child)
        os._exit(0)
    os.close(ack_w)
    kill_group(child)
    os.waitpid(child, 0)
    run.stopped.append(index)
    if ready:  # its process ended (an exit, a signal, a crash) or closed the pipe before its time was up
        run.exited.append(index)


def calls_of_part(fn, job, seconds):
    """The part's calls, made in a forked copy that sends one line per call: a call that never
    returns (and swallows the alarm) is killed and costs this part's remaining calls only."""
    jobs = [("valid", args) for args in job["valid"]] + [("invalid", args) for args in job["invalid"]]
    got = {"valid": [], "invalid": []}
    try:
        lines_r, lines_w = os.pipe()
        child = os.fork()
    except OSError:
        for kind, args in jobs:
            got[kind].append(call(fn, args, seconds))
        return got
    if child == 0:
        os.close(lines_r)
        os.setpgid(0, 0)
        for kind, args in jobs:
            os.write(lines_w, (json.dumps(call(fn, args, seconds)) + "\n").encode())
        os._exit(0)
    os.close(lines_w)
    lines = read_lines(lines_r, len(jobs), seconds + GRACE)
    os.close(lines_r)
    kill_group(child)
    os.waitpid(child, 0)
    for (kind, _), line in zip(jobs, lines + [None] * len(jobs)):
        try:
            value = json.loads(line) if line is not None else {"__raised__": "Overran"}
        except (ValueError, RecursionError):
            value = {"__raised__": "Unreadable"}
        got[kind].append(value)
    return got


def read_lines(fd, count, seconds):
    """Up to ``count`` whole lines from ``fd`` (at most :data:`MAX_PART_BYTES`), waiting at most ``seconds``
    for each read."""
    received, lines = b"", []
    while len(lines) < count and len(received) < MAX_PART_BYTES:
        ready, _, _ = select.select([fd], [], [], seconds)
        chunk = os.read(fd, 65536) if ready else b""
        if not chunk:
            break
        received += chunk
        lines = received.split(b"\n")[:-1]
    return lines


def answer(run):
    """The run's answer: each function part's calls, the values of the names asked for, and which cells
    were stopped (and which of them exited)."""
    functions = {}
    for gid, job in run.request["functions"].items():
        fn = run.namespace.get(job["function"])
        if not callable(fn):
            functions[gid] = {"missing": True}
            continue
        progress(run, "calls", gid)
        functions[gid] = calls_of_part(fn, job, run.cell_timeout)
        if chain_broken(run.ancestors):  # a call killed or stopped a process the run needs
            os._exit(0)
        progress(run, "called", gid)
    values = {name: plain(run.namespace[name]) for name in run.request["values"] if name in run.namespace}
    results = {"functions": functions, "values": values, "stopped": run.stopped, "exited": run.exited}
    if run.report:
        results["failed"] = run.failed
    return results


def shut_out_the_course(stub_dir):
    """Only the stand-in ``course`` in ``stub_dir`` can be imported: without bwrap (rlimits only) the
    editable install's finder could still find the course package."""
    sys.path.insert(0, stub_dir)
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in str(getattr(f, "__module__", ""))]


def main():
    cells_path, stub_dir, cell_timeout = sys.argv[1], sys.argv[2], int(sys.argv[3])
    request = json.loads(sys.stdin.readline())
    out = os.fdopen(os.dup(1), "w")  # the answer's channel: what the cells print goes nowhere
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    sys.stdin = open(os.devnull)
    shut_out_the_course(stub_dir)
    os.environ["MPLBACKEND"] = "Agg"
    with open(cells_path) as fh:
        cells = json.load(fh)
    os.remove(cells_path)
    run = Run(request, out, cell_timeout)
    run_cells(run, cells)
    results = answer(run)
    out.write(request["mark"] + " " + request["nonce"] + " " + json.dumps(results) + "\n")
    out.flush()


if __name__ == "__main__":
    main()

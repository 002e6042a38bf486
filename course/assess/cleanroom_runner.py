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


def main():
    cells_path, stub_dir, cell_timeout = sys.argv[1], sys.argv[2], int(sys.argv[3])
    request = json.loads(sys.stdin.readline())
    out = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    sys.stdin = open(os.devnull)
    sys.path.insert(0, stub_dir)
    # without bwrap (rlimits only) the editable install's finder could still find the course package
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in str(getattr(f, "__module__", ""))]
    os.environ["MPLBACKEND"] = "Agg"
    with open(cells_path) as fh:
        cells = json.load(fh)
    os.remove(cells_path)

    class Overran(BaseException):
        pass

    def alarm(signum, frame):
        raise Overran()

    class Shell:
        def __getattr__(self, name):
            return lambda *a, **k: None

    shell = Shell()
    namespace = {"__name__": "__main__", "__builtins__": __builtins__,
                 "get_ipython": lambda: shell, "display": lambda *a, **k: None}

    def transformed(source):
        try:
            return compile(source, "<cell>", "exec")
        except SyntaxError:
            from IPython.core.inputtransformer2 import TransformerManager
            return compile(TransformerManager().transform_cell(source), "<cell>", "exec")

    def run(thunk, seconds):
        signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return thunk()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    # the visible check asks which cells failed and why (its reason names the cell); grading does not
    report = request.get("report") is True
    failed = []

    progress_mark = request.get("progress")

    def progress(what, which):
        """Say where the run is (grading only): a run that ends without an answer ended here."""
        if type(progress_mark) is str:
            out.write(progress_mark + " " + request["nonce"] + " " + what + " " + str(which) + "\n")
            out.flush()

    def run_cell(source, index):
        try:
            run(lambda: exec(transformed(source), namespace), cell_timeout)
        except BaseException as exc:
            if report:
                try:
                    failed.append([index, (type(exc).__name__ + ": " + str(exc))[:300]])
                except BaseException:
                    failed.append([index, "an exception"])

    # Each cell runs in a forked copy of this process, and this copy waits as its checkpoint: a cell
    # that swallows the alarm (a bare except in a loop) or leaves children behind is killed with its
    # process group after cell_timeout + GRACE, and this copy goes on from the state before it. A cell
    # that ends hands over: its copy carries on with the next cells and the answer; this one waits
    # for it, then kills what the cells left in its group.
    stopped, exited = [], []
    ancestors = []  # the checkpoints this process descends from, which carry the run to its answer
    index = 0
    while index < len(cells):
        progress("cell", index)
        me = os.getpid()
        try:
            ready_r, ready_w = os.pipe()
            try:
                ack_r, ack_w = os.pipe()
            except OSError:
                os.close(ready_r)
                os.close(ready_w)
                raise
            try:
                child = os.fork()
            except OSError:
                for fd in (ready_r, ready_w, ack_r, ack_w):
                    os.close(fd)
                raise
        except OSError:  # no more processes (a notebook of hundreds of cells): the alarm alone
            run_cell(cells[index], index)
            progress("done", index)
            index += 1
            continue
        if child == 0:
            os.close(ready_r)
            os.close(ack_w)
            os.setpgid(0, 0)
            ancestors = ancestors + [me]
            run_cell(cells[index], index)
            try:
                os.write(ready_w, b"+")
                os.close(ready_w)
            except OSError:  # the cell closed it: the checkpoint takes the cell as never ending
                pass
            # go on only once the checkpoint has seen the cell end (and said so): a checkpoint that is
            # gone or stopped (the cell killed it) says nothing, and the run it belonged to is over
            try:
                acked = bool(select.select([ack_r], [], [], ACK_WAIT)[0]) and os.read(ack_r, 1) == b"+"
                os.close(ack_r)
            except (OSError, ValueError):
                acked = False
            if not acked:
                os._exit(0)
            index += 1
            continue
        os.close(ready_w)
        os.close(ack_r)
        ready, _, _ = select.select([ready_r], [], [], cell_timeout + GRACE)
        ended = bool(ready) and os.read(ready_r, 1) == b"+"
        os.close(ready_r)
        if chain_broken(ancestors):  # the cell killed or stopped a process before this one: the run is over
            kill_group(child)
            os._exit(0)
        progress("done", index)  # this checkpoint outlived the cell: the cell did not end the run
        if ended:
            try:
                os.write(ack_w, b"+")
            except OSError:
                pass
            os.close(ack_w)
            _, status = os.waitpid(child, 0)
            kill_group(child)
            os._exit(0)
        os.close(ack_w)
        kill_group(child)
        os.waitpid(child, 0)
        stopped.append(index)
        if ready:  # its process ended (an exit, a signal, a crash) or closed the pipe before its time was up
            exited.append(index)
        index += 1

    def plain(value, depth=0):
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

    def call(fn, args):
        try:
            return plain(run(lambda: fn(*args), cell_timeout))
        except ValueError:
            return {"__raised__": "ValueError"}
        except BaseException as exc:
            return {"__raised__": type(exc).__name__[:60]}

    def calls_of_part(fn, job):
        """The part's calls, made in a forked copy that sends one line per call: a call that never
        returns (and swallows the alarm) is killed and costs this part's remaining calls only."""
        jobs = [("valid", args) for args in job["valid"]] + [("invalid", args) for args in job["invalid"]]
        got = {"valid": [], "invalid": []}
        try:
            lines_r, lines_w = os.pipe()
            child = os.fork()
        except OSError:
            for kind, args in jobs:
                got[kind].append(call(fn, args))
            return got
        if child == 0:
            os.close(lines_r)
            os.setpgid(0, 0)
            for kind, args in jobs:
                os.write(lines_w, (json.dumps(call(fn, args)) + "\n").encode())
            os._exit(0)
        os.close(lines_w)
        received, lines = b"", []
        while len(lines) < len(jobs) and len(received) < MAX_PART_BYTES:
            ready, _, _ = select.select([lines_r], [], [], cell_timeout + GRACE)
            chunk = os.read(lines_r, 65536) if ready else b""
            if not chunk:
                break
            received += chunk
            lines = received.split(b"\n")[:-1]
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

    functions = {}
    for gid, job in request["functions"].items():
        fn = namespace.get(job["function"])
        if not callable(fn):
            functions[gid] = {"missing": True}
            continue
        progress("calls", gid)
        functions[gid] = calls_of_part(fn, job)
        if chain_broken(ancestors):  # a call killed or stopped a process the run needs
            os._exit(0)
        progress("called", gid)
    values = {name: plain(namespace[name]) for name in request["values"] if name in namespace}
    results = {"functions": functions, "values": values, "stopped": stopped, "exited": exited}
    if report:
        results["failed"] = failed
    out.write(request["mark"] + " " + request["nonce"] + " " + json.dumps(results) + "\n")
    out.flush()


if __name__ == "__main__":
    main()

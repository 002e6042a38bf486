"""Clean-room evaluation of function parts (Build, the fixed function of Debug).

The values judged for a function part, and the values of every part graded on
names the student assigns, are computed by the student's code in a fresh
sandboxed process that holds the student's code and nothing of the
course's implementation:

* the code is the code cells of the submitted notebook *file* (sanitized; the
  instructor's test cells are left out), not anything from the kernel that ran
  the notebook, so no code that ran there can reach this process;
* the sandbox (:func:`autograder.sandbox.command` with ``course_visible=False``)
  binds neither the ``course`` nor the ``autograder`` package, nor the repo, and
  masks them if they are installed in site-packages: no ``course.core``, no keys,
  no registry, under any name. A harmless stand-in ``course`` package (visible
  checks do nothing) lets ``from course.exercises import check`` run;
* cells run in order in one namespace (helpers from other cells work); a cell
  that fails, exits or overruns ``cell_timeout`` is skipped. Each cell runs in a
  forked copy of the process, so one that ignores the alarm (a bare ``except``
  in a loop) or forks is killed with its process group, and the cells after it
  run from the state before it; each function part's calls run in a forked copy
  too, so a call that never returns costs that part only;
* the trusted grader sends the probe inputs it made from the per-run seed on
  stdin; the process answers with ONE line ``MARK <nonce> <json>`` of plain
  values. The nonce is fresh per run; no line, a second line, a wrong nonce, a
  non-plain value or a wrong shape all earn nothing. The key is computed only in
  the grader (:func:`course.exercises.judge_json`), never here.

Anything the student's code does in the clean room (print, patch ``json`` or
builtins, exit, loop, write forged lines) can only change which plain values
come back for its own functions and names, which is what honest code can do too.
Nothing the notebook's kernel printed or returned is judged, except for lab
parts (answers read from instruments, locked predictions), whose kernel harvest
must be exactly one line.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from . import sandbox

#: prefix of the single result line
RESULT_MARK = "CLEANROOM-RESULT"
#: the most bytes read back from the clean room (results of a few hundred calls fit easily)
MAX_RESULT_BYTES = 4 * 2**20
#: marker of a call that raised (same as course.exercises.registry.RAISED)
RAISED = "__raised__"

#: the stand-in ``course`` package: visible checks are no-ops, everything else is absent
STUB_EXERCISES = '''"""Stand-in for course.exercises while grading: the visible checks do nothing here."""


def check(*args, **kwargs):
    return None


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return check
'''

#: the program of the clean room; it reads its settings from argv and the request from stdin
RUNNER = r'''
import json, os, select, signal, sys

#: seconds a cell may run past its alarm before its process group is killed
GRACE = 2
#: the most bytes one function part's calls may send back
MAX_PART_BYTES = 2**20


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

    def run_cell(source):
        try:
            run(lambda: exec(transformed(source), namespace), cell_timeout)
        except BaseException:
            pass

    # Each cell runs in a forked copy of this process, and this copy waits as its checkpoint: a cell
    # that swallows the alarm (a bare except in a loop) or leaves children behind is killed with its
    # process group after cell_timeout + GRACE, and this copy goes on from the state before it. A cell
    # that ends hands over: its copy carries on with the next cells and the answer; this one waits
    # for it, then kills what the cells left in its group.
    stopped = []
    index = 0
    while index < len(cells):
        try:
            ready_r, ready_w = os.pipe()
            child = os.fork()
        except OSError:  # no more processes (a notebook of hundreds of cells): the alarm alone
            run_cell(cells[index])
            index += 1
            continue
        if child == 0:
            os.close(ready_r)
            os.setpgid(0, 0)
            run_cell(cells[index])
            try:
                os.write(ready_w, b"+")
                os.close(ready_w)
            except OSError:  # the cell closed it: the checkpoint takes the cell as never ending
                pass
            index += 1
            continue
        os.close(ready_w)
        ready, _, _ = select.select([ready_r], [], [], cell_timeout + GRACE)
        ended = bool(ready) and os.read(ready_r, 1) == b"+"
        os.close(ready_r)
        if ended:
            _, status = os.waitpid(child, 0)
            kill_group(child)
            os._exit(0)
        kill_group(child)
        os.waitpid(child, 0)
        stopped.append(index)
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
        functions[gid] = calls_of_part(fn, job)
    values = {name: plain(namespace[name]) for name in request["values"] if name in namespace}
    results = {"functions": functions, "values": values, "stopped": stopped}
    out.write(request["mark"] + " " + request["nonce"] + " " + json.dumps(results) + "\n")
    out.flush()

main()
'''


#: added to the reason of a part whose names the clean room did not find
MISSING_NOTE = (" (your notebook's code is run again to grade it, without the course package: a cell "
                "that fails there, for example one that uses course.core, defines nothing)")


def names_missing(harvested: Any) -> bool:
    """True if a clean-room harvest lacks the part's function or one of its names."""
    if type(harvested) is not dict:
        return False
    if harvested.get("missing") is True:
        return True
    values = harvested.get("values")
    return type(values) is dict and any(type(v) is dict and "__missing__" in v for v in values.values())


def split_parts(grade_ids) -> Dict[str, List[str]]:
    """Registered parts by where their values come from.

    ``functions``: graded by calling a student's function (Build, Debug's fix);
    ``values``: workbook answers, names the student assigns by computing them;
    both are read in the clean room (their item's ``judged_in`` is ``"clean room"``).
    ``kernel``: lab answers, read from the course's instruments by design, and
    locked predictions (``judged_in == "kernel"``), harvested in the notebook's
    kernel: a forged harvest there can only produce what the course package in
    the same kernel lets an honest answer cell produce.
    """
    from course.exercises import REGISTRY

    split = {"functions": [], "values": [], "kernel": []}
    for gid in sorted(g for g in grade_ids if g in REGISTRY):
        part = REGISTRY[gid]
        where = ("kernel" if part.judged_in == "kernel" else "functions" if part.function is not None else "values")
        split[where].append(gid)
    return split


def code_cells(nb) -> List[str]:
    """Sources of the student's code cells, without the instructor's test cells."""
    return [source for _, source in numbered_code_cells(nb)]


def numbered_code_cells(nb) -> List[tuple]:
    """``(cell number in the notebook, counting from 1, source)`` of the student's code cells."""
    cells = []
    for number, cell in enumerate(nb.cells, start=1):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") != "code" or (meta.get("grade") and not meta.get("solution")):
            continue
        if isinstance(cell.get("source"), str):
            cells.append((number, cell.source))
    return cells


def request_for(split: Dict[str, List[str]], seed: int) -> Dict[str, Any]:
    """What the grader asks: per function part its name and the probe inputs for ``seed``;
    the names of every value part."""
    from course.exercises import REGISTRY

    functions = {}
    for gid in split["functions"]:
        part = REGISTRY[gid]
        probes = part.probes(seed)
        functions[gid] = {"function": part.function.name, "valid": probes["valid"],
                          "invalid": probes["invalid"]}
    names = sorted({n for gid in split["values"] for n in REGISTRY[gid].names})
    return {"functions": functions, "values": names}


def _is_plain_result(value: Any, depth: int = 0) -> bool:
    if value is None or type(value) in (bool, int, str):
        return True
    if type(value) is float:
        return True  # NaN/inf are plain too; the judge rejects them
    if type(value) is list and depth < 5:
        return all(_is_plain_result(v, depth + 1) for v in value)
    if type(value) is dict and depth < 5:
        return all(type(k) is str and _is_plain_result(v, depth + 1) for k, v in value.items())
    return False


def parse(stdout: bytes, nonce: str, request: Dict[str, Any]) -> Optional[Dict[str, dict]]:
    """The harvest per part from the clean room's stdout, or ``None`` unless it is exactly one
    well-formed answer to ``request`` (:func:`harvests` turns it into per-part harvests)."""
    lines = [line for line in stdout.decode("utf-8", "replace").splitlines() if line.startswith(RESULT_MARK)]
    if len(lines) != 1:
        return None
    head = f"{RESULT_MARK} {nonce} "
    if not lines[0].startswith(head):
        return None
    try:
        data = json.loads(lines[0][len(head):])
    except ValueError:
        return None
    if type(data) is not dict or set(data) != {"functions", "values", "stopped"}:
        return None
    functions, values, stopped = data["functions"], data["values"], data["stopped"]
    if type(stopped) is not list or not all(type(i) is int and i >= 0 for i in stopped) or len(stopped) > 10**4:
        return None
    if (type(functions) is not dict or set(functions) != set(request["functions"])
            or type(values) is not dict or not set(values) <= set(request["values"])
            or not all(_is_plain_result(v) for v in values.values())):
        return None
    for gid, job in request["functions"].items():
        got = functions[gid]
        if got == {"missing": True}:
            continue
        if (type(got) is not dict or set(got) != {"valid", "invalid"}
                or type(got["valid"]) is not list or len(got["valid"]) != len(job["valid"])
                or type(got["invalid"]) is not list or len(got["invalid"]) != len(job["invalid"])
                or not all(_is_plain_result(v) for v in got["valid"] + got["invalid"])):
            return None
    return data


def harvests(data: Dict[str, Any], split: Dict[str, List[str]]) -> Dict[str, dict]:
    """Per-part harvests (as the parts' judges expect them) from a parsed clean-room answer.

    Value parts run their own ``harvest`` here, in the trusted grader, on a
    namespace of the plain values that came back.
    """
    from course.exercises import REGISTRY

    out = {}
    for gid in split["functions"]:
        got = data["functions"][gid]
        # the clean room holds no course package, so nothing of it can be used or imported there
        out[gid] = got if got == {"missing": True} else {"uses_course": [], **got}
    for gid in split["values"]:
        try:
            out[gid] = REGISTRY[gid].harvest(dict(data["values"]), None)
        except Exception as exc:  # the part's judge then says the answer could not be read
            out[gid] = {"__harvest_error__": type(exc).__name__}
    return out


def evaluate(nb, work: Path, *, split: Dict[str, List[str]], seed: int, limits: sandbox.Limits, slot: int,
             use_bwrap: bool, timeout: float) -> Dict[str, Any]:
    """Run the student's code cells of ``nb`` in a fresh sandbox over ``work``; call the functions
    and read the values of the parts in ``split`` (:func:`split_parts`).

    Returns ``{"harvested": {grade_id: harvest dict} or None, "state": ok|timeout|no_result,
    "stopped_cells": [notebook cell numbers, from 1, of cells killed for never ending], "seconds": float}``. ``work`` is a prepared scratch folder (:func:`sandbox.prepare_scratch`).
    """
    started = time.monotonic()
    inside = Path(sandbox.SCRATCH) if use_bwrap else work
    room = work / ".cleanroom"
    (room / "stub" / "course" / "exercises").mkdir(parents=True)
    (room / "stub" / "course" / "__init__.py").write_text('"""Stand-in: the course package is not here."""\n')
    (room / "stub" / "course" / "exercises" / "__init__.py").write_text(STUB_EXERCISES)
    (room / "runner.py").write_text(RUNNER)
    numbered = numbered_code_cells(nb)
    (room / "cells.json").write_text(json.dumps([source for _, source in numbered]))
    sandbox.prepare_scratch(work, slot, use_bwrap)  # hands the new files to the slot's uid
    nonce = secrets.token_hex(16)
    parts = request_for(split, seed)
    request = {"mark": RESULT_MARK, "nonce": nonce, **parts}
    inner = [sandbox.python_executable(), "-I", str(inside / ".cleanroom" / "runner.py"),
             str(inside / ".cleanroom" / "cells.json"), str(inside / ".cleanroom" / "stub"),
             str(max(1, int(min(limits.cell_timeout, timeout))))]
    cmd = sandbox.command(str(work), inner, limits, slot, use_bwrap, course_visible=False)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin"} if use_bwrap else sandbox.sandbox_env(str(work))
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            cwd=str(work), env=env, start_new_session=True)
    received = bytearray()

    def read() -> None:
        while True:
            chunk = proc.stdout.read1(65536)
            if not chunk:
                return
            if len(received) + len(chunk) > MAX_RESULT_BYTES:
                _kill(proc)  # more than an honest answer could be: nothing is read
                received.clear()
                received.extend(b"!")
                return
            received.extend(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    state = "ok"
    try:
        proc.stdin.write((json.dumps(request) + "\n").encode())
        proc.stdin.close()
    except OSError:  # it exited before reading: no result
        pass
    try:
        proc.wait(timeout=max(1.0, timeout))
    except subprocess.TimeoutExpired:
        state = "timeout"
    _kill(proc)
    reader.join(timeout=5)
    data = parse(bytes(received), nonce, parts) if state == "ok" else None
    if state == "ok" and data is None:
        state = "no_result"
    harvested = harvests(data, split) if data is not None else None
    stopped = sorted({numbered[i][0] for i in data["stopped"] if i < len(numbered)}) if data else []
    return {"harvested": harvested, "state": state, "stopped_cells": stopped,
            "seconds": round(time.monotonic() - started, 3)}


def _kill(proc: subprocess.Popen) -> None:
    import os
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass

"""The clean room's program, shared by grading and the visible check.

Grading (``autograder/cleanroom.py``) runs :data:`RUNNER` in a sandbox that holds
no course package; the visible check (:mod:`course.assess.checks`) runs the same
program, unsandboxed, from the student's kernel on the student's own cells, so
an answer that only the course package (or a name a failing cell never defined)
makes right is *not yet* in the notebook as it is 0 when graded. The program
runs the cells in order in one namespace, a stand-in ``course`` package shadowing
the real one (visible checks are no-ops there, ``course.core`` does not exist),
then answers with one line ``MARK <nonce> <json>``: the function parts' results on
the probe inputs it was sent and the values of the names it was asked for. With
``"progress": <prefix>`` in its request (grading) it also writes ``<prefix> <nonce> cell <i>``
before each cell, ``<prefix> <nonce> done <i>`` from the cell's checkpoint once the cell ended or was
stopped, and ``calls``/``called <grade id>`` around each part's calls, so the grader knows which cell
(or calls) a run that ended without an answer never got past (one that killed or stopped the
processes that run it: the cells after it may still have run, in its orphaned process) and can run
the notebook again without it. With
``"report": true`` in its request (the visible check only) the answer also lists
the cells that failed and why.

This module knows no content: parts are passed in.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set

#: prefix of the single result line
RESULT_MARK = "CLEANROOM-RESULT"
#: prefix of the lines that say which cell (or which part's calls) the clean room is at
PROGRESS_MARK = "CLEANROOM-PROGRESS"
#: the most bytes read back from the clean room (results of a few hundred calls fit easily)
MAX_RESULT_BYTES = 4 * 2**20
#: marker of a call that raised (same as course.assess.registry.RAISED)
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

main()
'''




def numbered_code_cells(nb) -> List[tuple]:
    """``(cell number in the notebook, counting from 1, source)`` of the student's code cells:
    every code cell but the instructor's test cells (graded, not a solution)."""
    cells = []
    for number, cell in enumerate(nb["cells"], start=1):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") != "code" or (meta.get("grade") and not meta.get("solution")):
            continue
        source = cell.get("source")
        if isinstance(source, list):
            source = "".join(source)
        if isinstance(source, str):
            cells.append((number, source))
    return cells


def syntax_errors(numbered: Sequence[tuple]) -> List[tuple]:
    r"""``(cell number, message)`` of each cell of ``numbered`` (:func:`numbered_code_cells`) that Python
    cannot compile, even after IPython's transforms (``%magic``, ``!shell``): such a cell runs nothing,
    in the kernel or in the clean room. Read from the text by the trusted side (compiling runs nothing),
    so naming the cell and Python's message reveals nothing but the student's own code.

    >>> syntax_errors([(3, "x = 1"), (5, "y = = 2"), (6, "%time z = 3"), (8, "def f(:\n    pass")])
    [(5, 'line 1: invalid syntax'), (8, 'line 1: invalid syntax')]
    """
    found = []
    for number, source in numbered:
        try:
            compile(source, "<cell>", "exec", dont_inherit=True)
            continue
        except SyntaxError as exc:
            error = exc
        except (ValueError, MemoryError, RecursionError, OverflowError) as exc:  # NUL bytes, absurd nesting
            found.append((number, type(exc).__name__))
            continue
        try:
            from IPython.core.inputtransformer2 import TransformerManager

            compile(TransformerManager().transform_cell(source), "<cell>", "exec", dont_inherit=True)
            continue
        except Exception:  # noqa: BLE001 (still not Python: the first error is the one to show)
            pass
        message = str(getattr(error, "msg", "") or "invalid syntax").splitlines()[0][:160]
        line = getattr(error, "lineno", None)
        found.append((number, f"line {line}: {message}" if type(line) is int else message))
    return found


def bound_names(sources: Sequence[str], depth: int = 0) -> Set[str]:
    r"""The names the code ``sources`` (a notebook's student code cells) may assign, read from the text.

    A name none of them assigns is a blank answer (the release's stub assigns nothing); one that some
    cell assigns but that is missing when the cells run was lost to a failing cell. Erring towards
    "assigned": a cell that does not parse (even after IPython's transforms) counts every word in it,
    a string that is a name (``globals()["x"] = ...``) counts it, and a string that is code (``exec``)
    counts what that code assigns; the words of a docstring or a message do not count.

    >>> sorted(bound_names(["x = 1\nfor i in y: pass", "import numpy as np\ndef f(): global z; z = 2",
    ...                     "# w = ...   (GB)\n# YOUR CODE HERE\npass", "exec('v = 3')",
    ...                     "def g(a_b):\n    'Samples: a_b * c.'\n    pass", "globals()['k'] = 1"]))
    ['f', 'g', 'i', 'k', 'np', 'v', 'x', 'z']
    >>> sorted(bound_names(["u = = 1", "%time t = 4"]))
    ['t', 'time', 'u']
    """
    import ast
    import re

    names: Set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            try:
                from IPython.core.inputtransformer2 import TransformerManager
                tree = ast.parse(TransformerManager().transform_cell(source))
            except Exception:  # a cell that cannot run: count every word, comments left out
                names.update(re.findall(r"[^\W\d]\w*", re.sub(r"#.*", "", source)))
                continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                names.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                names.update(node.names)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                names.add(node.name)
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                names.add(node.name)
            elif isinstance(node, ast.MatchMapping) and node.rest:
                names.add(node.rest)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value.strip()
                if text.isidentifier():  # globals()["x"] = ..., setattr(module, "x", ...)
                    names.add(text)
                elif text and depth < 3 and _parses(text):  # exec("x = 1")
                    names.update(bound_names([text], depth + 1))
    return names


def _parses(text: str) -> bool:
    import ast

    try:
        ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def request_for_parts(function_parts: Sequence, value_parts: Sequence, seed: int) -> Dict[str, Any]:
    """What to ask the clean room: per function part its name and probe inputs for ``seed``;
    the names of every value part."""
    functions = {}
    for part in function_parts:
        probes = part.probes(seed)
        functions[part.grade_id] = {"function": part.function.name, "valid": probes["valid"],
                                    "invalid": probes["invalid"]}
    names = sorted({n for part in value_parts for n in part.names})
    return {"functions": functions, "values": names}


def harvests_for_parts(data: Dict[str, Any], function_parts: Sequence, value_parts: Sequence) -> Dict[str, dict]:
    """Per-part harvests, as the parts' judges expect them, from a clean-room answer ``data``."""
    out = {}
    for part in function_parts:
        got = data["functions"][part.grade_id]
        # the clean room holds no course package, so nothing of it can be used or imported there
        out[part.grade_id] = got if got == {"missing": True} else {"uses_course": [], **got}
    for part in value_parts:
        try:
            out[part.grade_id] = part.harvest(dict(data["values"]), None)
        except Exception as exc:  # the part's judge then says the answer could not be read
            out[part.grade_id] = {"__harvest_error__": type(exc).__name__}
    return out


def write_room(room: Path, cells: Sequence[str]) -> None:
    """Write the runner, the stand-in ``course`` package and ``cells`` into ``room``."""
    (room / "stub" / "course" / "exercises").mkdir(parents=True)
    (room / "stub" / "course" / "__init__.py").write_text('"""Stand-in: the course package is not here."""\n')
    (room / "stub" / "course" / "exercises" / "__init__.py").write_text(STUB_EXERCISES)
    (room / "runner.py").write_text(RUNNER)
    (room / "cells.json").write_text(json.dumps(list(cells)))


#: seconds one cell may run when the visible check runs the notebook again (grading allows 60)
CHECK_CELL_TIMEOUT = 60
#: seconds the whole re-run may take in the visible check
CHECK_TIMEOUT = 300


def rerun(cells: Sequence[str], request: Dict[str, Any], cwd: Optional[str] = None, *,
          cell_timeout: int = CHECK_CELL_TIMEOUT, timeout: float = CHECK_TIMEOUT) -> Optional[Dict[str, Any]]:
    """Run :data:`RUNNER` on ``cells`` (unsandboxed: the visible check, in the student's own
    account) with ``request`` (:func:`request_for_parts`); return its answer with the failed
    cells (``{"functions", "values", "stopped", "failed"}``) or ``None`` if it gave none."""
    nonce = secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="course-check-") as tmp:
        room = Path(tmp)
        write_room(room, cells)
        command = [sys.executable, "-I", str(room / "runner.py"), str(room / "cells.json"), str(room / "stub"),
                   str(int(cell_timeout))]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "COURSE_", "JPY_"))}
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                cwd=cwd or os.getcwd(), env=env, start_new_session=True)
        line = json.dumps({"mark": RESULT_MARK, "nonce": nonce, "report": True, **request}) + "\n"
        try:
            out, _ = proc.communicate(line.encode(), timeout=timeout)
        except subprocess.TimeoutExpired:
            out = b""
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
    head = f"{RESULT_MARK} {nonce} "
    for text in out.decode("utf-8", "replace").splitlines():
        if text.startswith(head):
            try:
                data = json.loads(text[len(head):])
            except ValueError:
                return None
            return data if type(data) is dict and {"functions", "values", "failed"} <= set(data) else None
    return None


# ---------------------------------------------------------------------------
# The student's cells, as grading will see them, from inside the kernel
# ---------------------------------------------------------------------------

#: ``(cell id or None, source, time)`` of each cell this kernel ran, in order (see :func:`record_cells`)
_RUNS: List[tuple] = []
_RECORDING: Dict[int, bool] = {}


def record_cells() -> bool:
    """Start remembering each cell this kernel runs: its source, when, and its cell id (JupyterLab
    sends it with each execution; ``nbgrader validate`` and other headless runners do not). The
    cells run before this call come from IPython's history. Idempotent; False outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - the kernel always has IPython
        return False
    shell = get_ipython()
    if shell is None:
        return False
    if _RECORDING.get(id(shell)):
        return True
    _RUNS.clear()
    _RUNS.extend((None, source, 0.0) for source in list(shell.user_ns.get("In", []))[1:] if isinstance(source, str))

    def remember(info) -> None:
        import time

        _RUNS.append((getattr(info, "cell_id", None), getattr(info, "raw_cell", "") or "", time.time()))

    shell.events.register("pre_run_cell", remember)
    _RECORDING[id(shell)] = True
    return True


def notebook_path() -> Optional[Path]:
    """The notebook this kernel belongs to, if the server said (``JPY_SESSION_NAME``, jupyter_server 2+:
    the notebook's path, absolute or relative to the server's root; the kernel starts in its folder)."""
    named = os.environ.get("JPY_SESSION_NAME", "")
    if not named.endswith(".ipynb"):
        return None
    for path in (Path(named), Path.cwd() / Path(named).name):
        if path.is_absolute() and path.is_file():
            return path
    return None


def _file_cells(path: Path, must_hold: str) -> Optional[List[dict]]:
    """The code cells of the notebook at ``path`` (``{"id", "source", "test"}``), if it holds a cell
    with nbgrader grade id ``must_hold`` (so it is the notebook being checked)."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells = nb["cells"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not any(c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == must_hold for c in cells):
        return None
    test_numbers = {n for n, _ in numbered_code_cells(nb)}
    out = []
    for number, cell in enumerate(cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        out.append({"id": cell.get("id"), "source": "".join(source) if isinstance(source, list) else source,
                    "test": number not in test_numbers})
    return out


def student_cells(must_hold: str) -> Optional[tuple]:
    """``(sources, where)``: the code cells grading will run, as this kernel knows them, and how
    they were found; ``None`` outside a kernel (a script, a test), where there are no cells.

    With the notebook file (:func:`notebook_path`) holding the cell ``must_hold``: its code cells
    in order, without the test cells (as grading), each as this kernel last ran it if that was after
    the file was saved (the file will hold that once saved, and a saved edit this kernel has not run
    is what grading runs); a cell run here after the save that the file lacks (new, unsaved) follows
    the cell run before it; one run before the save that the file lacks was deleted. Without the file
    (``nbgrader validate``, a server that does not say): the cells this kernel ran, in the order first
    run, each at its last source (by cell id; without ids, each run: IPython's history)."""
    if not record_cells():
        return None
    runs = list(_RUNS)
    path = notebook_path()
    cells = _file_cells(path, must_hold) if path is not None else None
    if cells is None:
        order, latest = [], {}
        for cell_id, source, _ in runs:
            if cell_id is None:
                order.append((None, source))
                continue
            if cell_id not in latest:
                order.append((cell_id, None))
            latest[cell_id] = source
        return [source if cell_id is None else latest[cell_id] for cell_id, source in order], "the cells this kernel ran"
    saved = path.stat().st_mtime
    in_file = {c["id"] for c in cells if c["id"]}
    newer = {cell_id: source for cell_id, source, when in runs if cell_id and when > saved}
    unsaved: Dict[Optional[str], List[str]] = {}
    before: Optional[str] = None
    for cell_id, source, when in runs:
        if cell_id in in_file:
            before = cell_id
        elif cell_id and when > saved and cell_id not in unsaved.get(before, []):
            unsaved.setdefault(before, []).append(cell_id)
    sources = [newer[c] for c in unsaved.get(None, [])]
    for cell in cells:
        if not cell["test"]:
            sources.append(newer.get(cell["id"], cell["source"]))
        sources.extend(newer[c] for c in unsaved.get(cell["id"], []))
    return sources, str(path)

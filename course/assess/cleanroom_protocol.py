"""The clean room's program, shared by grading and the visible check.

Grading (``autograder/judging/sandboxed_cleanroom.py``) runs :mod:`course.assess.cleanroom_runner` in a sandbox that holds
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
import shutil
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

#: the program of the clean room (a real module, copied into each room as ``runner.py``)
RUNNER_PATH = Path(__file__).with_name("cleanroom_runner.py")




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
    shutil.copyfile(RUNNER_PATH, room / "runner.py")
    (room / "cells.json").write_text(json.dumps(list(cells)))


#: seconds one cell may run when the visible check runs the notebook again (grading allows 60)
CHECK_CELL_TIMEOUT = 60
#: seconds the whole re-run may take in the visible check
CHECK_TIMEOUT = 300


def rerun(cells: Sequence[str], request: Dict[str, Any], cwd: Optional[str] = None, *,
          cell_timeout: int = CHECK_CELL_TIMEOUT, timeout: float = CHECK_TIMEOUT) -> Optional[Dict[str, Any]]:
    """Run the clean room's program (:data:`RUNNER_PATH`) on ``cells`` (unsandboxed: the visible check,
    in the student's own account) with ``request`` (:func:`request_for_parts`); return its answer with the failed
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

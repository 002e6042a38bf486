"""Clean-room evaluation of function parts (Build, the fixed function of Debug).

The values judged for a function part, and the values of every part graded on
names the student assigns, are computed by the student's code in a fresh
sandboxed process that holds the student's code and nothing of the
course's implementation:

* the code is the code cells of the submitted notebook *file* (sanitized; the
  instructor's test cells are left out), not anything from the kernel that ran
  the notebook, so no code that ran there can reach this process;
* the sandbox (:func:`autograder.isolation.sandbox.command` with ``course_visible=False``)
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
* a cell that ends the run itself (it kills or stops the processes that run the
  cells: its parent, every process it may signal) is found from the progress
  lines the run writes (which cell started, which cell's checkpoint saw it end),
  and the notebook runs again in a fresh sandbox without it, so the other answers
  are graded; a function whose calls end the run loses its part only. At most
  :data:`MAX_ROOM_RERUNS` times, within the submission's time;
* the trusted grader sends the probe inputs it made from the per-run seed on
  stdin; the process answers with ONE line ``MARK <nonce> <json>`` of plain
  values. The nonce is fresh per run; no line, a second line (before the run
  ends, or within :data:`AFTER_ANSWER` s of the first: a run whose answer came
  is not waited for longer), a wrong nonce, a non-plain value or a wrong shape
  all earn nothing. The key is computed only in the grader
  (:func:`course.notebook_api.judge_json`), never here.

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
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..isolation import launch, sandbox

# The clean room's program and stand-in package are the engine's, so the visible check runs the very
# same program on the student's cells (course.assess.cleanroom_protocol).
from course.assess.cleanroom_protocol import (  # noqa: E402,F401 -- re-exported (autograder.judging.sandboxed_cleanroom.RUNNER_PATH ...), below the comment that says why
    MAX_RESULT_BYTES, PROGRESS_MARK, RAISED, RESULT_MARK, RUNNER_PATH, STUB_EXERCISES, bound_names, harvests_for_parts,
    numbered_code_cells, request_for_parts, syntax_errors, write_room,
)
from course.assess.registry import UNBOUND  # noqa: E402 -- below the comment that says why the engine's program is used


#: added to the reason of a part whose names the clean room did not find
MISSING_NOTE = (" (your notebook's code is run again to grade it, without the course package: a cell "
                "that fails there, for example one that uses course.core, defines nothing)")


def names_missing(harvested: Any) -> bool:
    """True if a clean-room harvest lacks the part's function or one of its names that some cell of
    the notebook assigns (a name no cell assigns, listed under ``UNBOUND``, is a blank answer:
    :func:`with_unbound`)."""
    if type(harvested) is not dict:
        return False
    if harvested.get("missing") is True:
        return True
    values = harvested.get("values")
    unbound = harvested.get(UNBOUND) if type(harvested.get(UNBOUND)) is list else []
    return type(values) is dict and any(type(v) is dict and "__missing__" in v and name not in unbound
                                        for name, v in values.items())


def missing_names(part: Any, harvested: Any) -> set:
    """The names a clean-room harvest of ``part`` lacks: its function's name, or the value names that
    came back missing (blank answers, under ``UNBOUND``, left out)."""
    if type(harvested) is not dict:
        return set()
    if harvested.get("missing") is True:
        return {part.function.name} if part.function is not None else set()
    values = harvested.get("values")
    unbound = harvested.get(UNBOUND) if type(harvested.get(UNBOUND)) is list else []
    if type(values) is not dict:
        return set()
    return {name for name, v in values.items() if type(v) is dict and "__missing__" in v and name not in unbound}


def with_unbound(part: Any, harvested: Any, bound: Any) -> Any:
    """``harvested`` with the names of value ``part`` that no code cell assigns under ``UNBOUND``.

    ``bound`` is :func:`bound_names` of the notebook's code cells (``None``: not known, nothing
    added). The grader sets this key itself: one the student's process wrote is replaced.
    """
    if part.value is None or type(harvested) is not dict or bound is None:
        return harvested
    return {**harvested, UNBOUND: [name for name in part.names if name not in bound]}


def split_parts(grade_ids) -> Dict[str, List[str]]:
    """Registered parts by where their values come from.

    ``functions``: graded by calling a student's function (Build, Debug's fix);
    ``values``: workbook answers, names the student assigns by computing them;
    both are read in the clean room (their item's ``judged_in`` is ``"clean room"``).
    ``kernel``: lab answers, read from the course's instruments by design, and
    locked predictions (``judged_in == "kernel"``), harvested in the notebook's
    kernel: a forged harvest there can only produce what the course package in
    the same kernel lets an honest answer cell produce.
    ``ranks``: collectives (``judged_in == "ranks"``), each run on real MPI ranks in a sandbox of its
    own (:mod:`autograder.judging.ranks`).
    """
    from course.notebook_api import REGISTRY

    split = {"functions": [], "values": [], "kernel": [], "ranks": []}
    for gid in sorted(g for g in grade_ids if g in REGISTRY):
        part = REGISTRY[gid]
        where = ("kernel" if part.judged_in == "kernel" else "ranks" if part.judged_in == "ranks"
                 else "functions" if part.function is not None else "values")
        split[where].append(gid)
    return split


def code_cells(nb) -> List[str]:
    """Sources of the student's code cells, without the instructor's test cells."""
    return [source for _, source in numbered_code_cells(nb)]


def request_for(split: Dict[str, List[str]], seed: int) -> Dict[str, Any]:
    """What the grader asks: per function part its name and the probe inputs for ``seed``;
    the names of every value part."""
    from course.notebook_api import REGISTRY

    return request_for_parts([REGISTRY[g] for g in split["functions"]], [REGISTRY[g] for g in split["values"]], seed)


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
    if type(data) is not dict or set(data) not in ({"functions", "values", "stopped"},
                                                   {"functions", "values", "stopped", "exited"}):
        return None
    functions, values, stopped = data["functions"], data["values"], data["stopped"]
    if type(stopped) is not list or not all(type(i) is int and i >= 0 for i in stopped) or len(stopped) > 10**4:
        return None
    exited = data.get("exited", [])
    if type(exited) is not list or not all(type(i) is int and i in stopped for i in exited):
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
    from course.notebook_api import REGISTRY

    return harvests_for_parts(data, [REGISTRY[g] for g in split["functions"]], [REGISTRY[g] for g in split["values"]])


#: how many times a notebook is run again without a cell (or a part's calls) that ended the run
MAX_ROOM_RERUNS = 2
#: seconds past a cell's limit (and the runner's own grace) without a word from the clean room before
#: the grader takes the run as stopped (a cell that stopped the processes that run it: SIGSTOP)
STALL_MARGIN = 10
#: seconds a run may go on after its answer came (a process of the chain the cell stopped keeps it open)
AFTER_ANSWER = 2


def evaluate(nb, work: Path, *, split: Dict[str, List[str]], seed: int, limits: sandbox.Limits, slot: int,
             use_bwrap: bool, timeout: float) -> Dict[str, Any]:
    """Run the student's code cells of ``nb`` in a fresh sandbox over ``work``; call the functions
    and read the values of the parts in ``split`` (:func:`split_parts`).

    A run that ends without an answer, or stops saying where it is, while a cell runs (the cell killed
    or stopped the processes that run the notebook: ``os.kill(os.getppid(), 9)``, ``os.kill(-1, 9)``,
    SIGSTOP) is run again in a fresh sandbox without that cell; one that ends while a function part's
    functions are called is run again without those calls (that part is lost). At most
    :data:`MAX_ROOM_RERUNS` times.

    Returns ``{"harvested": {grade_id: harvest dict} or None, "state": ok|timeout|no_result,
    "stopped_cells": [notebook cell numbers, from 1, of cells killed for never ending],
    "exited_cells": [those of them whose process ended before its time was up (an exit, a signal, a
    crash)], "ended_by": [notebook cell numbers of cells that ended the whole run, left out of the run
    that was judged], "ended_by_calls": [grade ids of function parts whose calls ended the run],
    "seconds": float}``. ``work`` is a prepared scratch folder (:func:`sandbox.prepare_scratch`).
    """
    started = time.monotonic()
    numbered = numbered_code_cells(nb)
    sources = [source for _, source in numbered]
    split = {key: list(value) for key, value in split.items()}
    ended_by: List[int] = []
    ended_by_calls: List[str] = []
    attempt = 0
    while True:
        left = timeout - (time.monotonic() - started)
        result = _run_room(sources, work, attempt, split=split, seed=seed, limits=limits, slot=slot,
                           use_bwrap=use_bwrap, timeout=max(1.0, left))
        where = result["where"]
        if result["data"] is not None or where is None or attempt >= MAX_ROOM_RERUNS or left < 5:
            break
        if where[0] == "cell" and where[1] < len(sources) and sources[where[1]]:
            ended_by.append(numbered[where[1]][0])
            sources[where[1]] = ""  # the cells after it run without it
        elif where[0] == "calls" and where[1] in split["functions"]:
            ended_by_calls.append(where[1])
            split["functions"].remove(where[1])
        else:
            break
        attempt += 1
    data, state = result["data"], result["state"]
    harvested = harvests(data, split) if data is not None else None
    stopped = sorted({numbered[i][0] for i in data["stopped"] if i < len(numbered)}) if data else []
    exited = sorted({numbered[i][0] for i in data.get("exited", []) if i < len(numbered)}) if data else []
    # what each cell left out of the judged run may have defined (read from its text), so a part's reason
    # blames only cells that could have defined what the part misses
    source_of = dict(numbered)
    defines = {n: sorted(bound_names([source_of[n]])) for n in {*stopped, *exited, *ended_by} if n in source_of}
    out = {"harvested": harvested, "state": state, "stopped_cells": stopped, "exited_cells": exited,
           "ended_by": ended_by, "ended_by_calls": ended_by_calls, "defines": defines,
           "seconds": round(time.monotonic() - started, 3)}
    if data is None and result["where"] is not None and result["where"][0] == "cell":
        index = result["where"][1]  # the run still ended in a cell: named, though not left out (no more reruns)
        out["ended_in"] = numbered[index][0] if index < len(numbered) else None
    return out


def _progress(received: bytes, nonce: str) -> Optional[tuple]:
    """What a run that gave no answer never got past: ``("cell", index)`` of the first cell that
    started and whose checkpoint never said it ended (the cell killed or stopped it, and with it the
    run; the cells after it may have run on in the orphaned process), else ``("calls", grade id)`` of
    the first part whose calls never came back, else ``None``. The lines come from the student's
    process, so a forged one can only make the grader leave out another cell of that student's
    notebook (or the calls of one of their functions), or none."""
    head = f"{PROGRESS_MARK} {nonce} "
    started, done, calls, called = [], set(), [], set()
    for line in received.decode("utf-8", "replace").split("\n")[:-1]:  # complete lines only
        if not line.startswith(head):
            continue
        words = line[len(head):].split(" ")
        if len(words) != 2:
            continue
        what, which = words
        if what in ("cell", "done") and which.isdigit() and len(which) < 7:
            (started.append if what == "cell" else done.add)(int(which))
        elif what == "calls":
            calls.append(which)
        elif what == "called":
            called.add(which)
    for index in started:
        if index not in done:
            return ("cell", index)
    for gid in calls:
        if gid not in called:
            return ("calls", gid)
    return None


def _run_room(sources: List[str], work: Path, attempt: int, *, split: Dict[str, List[str]], seed: int,
              limits: sandbox.Limits, slot: int, use_bwrap: bool, timeout: float) -> Dict[str, Any]:
    """One run of the clean room over ``sources``; ``{"data": parsed answer or None, "state",
    "where": last progress (:func:`_progress`) of a run that gave no answer, else None}``."""
    name = ".cleanroom" if attempt == 0 else f".cleanroom-{attempt}"
    inside = Path(sandbox.SCRATCH) if use_bwrap else work
    room = work / name
    for earlier in work.glob(".cleanroom*"):  # an earlier run's room (its cells) is not this run's
        shutil.rmtree(earlier, ignore_errors=True)
    write_room(room, sources)
    sandbox.prepare_scratch(work, slot, use_bwrap)  # hands the new files to the slot's uid
    nonce = secrets.token_hex(16)
    parts = request_for(split, seed)
    request = {"mark": RESULT_MARK, "progress": PROGRESS_MARK, "nonce": nonce, **parts}
    cell_timeout = max(1, int(min(limits.cell_timeout, timeout)))
    inner = [sandbox.python_executable(), "-I", str(inside / name / "runner.py"),
             str(inside / name / "cells.json"), str(inside / name / "stub"), str(cell_timeout)]
    cmd = sandbox.command(str(work), inner, limits, slot, use_bwrap, course_visible=False)
    proc = launch.start(cmd, work, use_bwrap, stdin=subprocess.PIPE)
    output = launch.Output(proc, MAX_RESULT_BYTES, on_overflow=_overflowed)
    received = output.received
    state = "ok"
    try:
        proc.stdin.write((json.dumps(request) + "\n").encode())
        proc.stdin.close()
    except OSError:  # it exited before reading: no result
        pass
    deadline = time.monotonic() + max(1.0, timeout)
    answer_head = f"{RESULT_MARK} {nonce} ".encode()
    answered_at = None
    while proc.poll() is None:
        now = time.monotonic()
        if now > deadline:
            state = "timeout"
            break
        snapshot = bytes(received)
        if answered_at is None and answer_head in snapshot and snapshot.endswith(b"\n"):
            answered_at = now  # the answer is in; the chain that carried it may not end (a stopped parent)
        if answered_at is not None and now - answered_at > AFTER_ANSWER:
            break
        where = _progress(snapshot, nonce)
        if where is not None and where[0] == "cell" and now - output.heard > cell_timeout + 2 + STALL_MARGIN:
            state = "stalled"  # the checkpoint would have killed the cell by now: it was stopped
            break
        time.sleep(0.05)
    launch.kill(proc)
    output.join(timeout=5)
    data = parse(bytes(received), nonce, parts) if state != "timeout" or answered_at else None
    if data is None and state != "timeout":
        state = "no_result"
    if data is not None:
        state = "ok"
    where = _progress(bytes(received), nonce) if data is None else None
    return {"data": data, "state": state, "where": where}


def _overflowed(output: "launch.Output") -> None:
    """More than an honest answer could be: the run is killed and nothing is read (``!``, no answer)."""
    launch.kill(output.proc)
    output.received.extend(b"!")


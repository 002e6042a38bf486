"""Grading a function on real MPI ranks, in the grading sandbox (parts whose item is a
:class:`~course.assess.ranks.RankFunction`: the collectives of chapter 11).

Each such part gets its own launch, in the same sandbox as every other grading run
(:func:`autograder.sandbox.command` with ``course_visible=False``: no network, the submission's limits,
a fresh scratch copy, no course package): MPICH's single-node process manager (``mpiexec.gforker``:
no network, every rank a child in one process group) starts ``ranks + 1`` processes of
:mod:`course.assess.ranks_runner`. Rank 0 is the judge's rank (no student code; it holds the probes and
the nonce), ranks 1..P run the notebook's definitions (:func:`course.assess.ranks.definitions`) and the
student's function. The probes are made here, from the per-run seed (the student's variant included),
and judged here (:func:`course.assess.ranks.judge_ranks`), never in the sandbox.

A deadlock, a rank that dies, or a function that never returns ends the launch at the judge's time
limit per probe (:data:`PROBE_SECONDS`) with the failure in its answer, or at this process's limit
(:data:`LAUNCH_SECONDS` plus the probes' time) if even the judge's rank says nothing: the part earns 0
with a reason, the process group is killed, and the notebook's other parts are graded as usual.
"""

from __future__ import annotations

import json
import secrets
import shutil
import time
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from ..isolation import launch, sandbox

#: prefix of the judge rank's answer line
RESULT_MARK = "RANKS-RESULT"
#: simulated ranks per launch (the judge's rank comes on top)
RANKS = 4
#: seconds the judge's rank waits for one probe's results (generous: a loaded 2-core machine)
PROBE_SECONDS = 20.0
#: seconds a launch may take beyond its probes (start-up of P+1 Python processes with NumPy and MPI)
LAUNCH_SECONDS = 60.0
#: seconds a launch gets at least, even when the submission's time is nearly used up
MIN_LAUNCH_SECONDS = 30.0
#: the most bytes read back from a launch
MAX_ANSWER_BYTES = 8 * 2**20


def mpiexec() -> str:
    """MPICH's single-node launcher next to this interpreter (the ``mpich`` wheel's)."""
    here = Path(sandbox.python_executable()).parent
    for name in ("mpiexec.gforker", "mpiexec"):
        if (here / name).exists():
            return str(here / name)
    found = shutil.which("mpiexec.gforker") or shutil.which("mpiexec")
    if found is None:
        raise FileNotFoundError("mpiexec.gforker (the mpich wheel) is not installed next to the grader's Python")
    return found


def ranks_needed(probes: Dict[str, Sequence[dict]]) -> int:
    return max([RANKS] + [int(p["p"]) for p in list(probes["valid"]) + list(probes["invalid"])])


def evaluate_part(part: Any, sources: Sequence[str], work: Path, *, seed: int, limits: sandbox.Limits,
                  slot: int, use_bwrap: bool, timeout: float) -> Dict[str, Any]:
    """Run ``part``'s function on real ranks in a fresh sandbox over ``work`` (a prepared scratch folder);
    return its harvest (what :func:`course.assess.ranks.judge_ranks` reads) and ``"seconds"``."""
    from course.assess.ranks import definitions
    from course.assess.cleanroom_protocol import write_room

    started = time.monotonic()
    probes = part.probes(seed)
    every = list(probes["valid"]) + list(probes["invalid"])
    statements = definitions(sources)
    if only_a_stub(statements, part.function.name):  # the release's `pass`: nothing to launch
        return {"probes": [{"ranks": [None] * p["p"], "traces": [[] for _ in range(p["p"])]} for p in every],
                "failure": None, "seconds": 0.0}
    name = f".ranks-{part.grade_id}"
    room = work / name
    shutil.rmtree(room, ignore_errors=True)
    room.mkdir(parents=True)
    write_room(room, [])  # the stand-in course package (visible checks are no-ops on the ranks too)
    (room / "cells.json").unlink()
    (room / "runner.py").unlink()
    from course.assess import ranks_runner

    shutil.copyfile(ranks_runner.__file__, room / "ranks_runner.py")
    (room / "definitions.json").write_text(json.dumps(statements))
    nonce = secrets.token_hex(16)
    per_probe = PROBE_SECONDS
    request = {"mark": RESULT_MARK, "nonce": nonce, "function": part.function.name, "probes": every,
               "probe_seconds": per_probe}
    (room / "request.json").write_text(json.dumps(request))
    sandbox.prepare_scratch(work, slot, use_bwrap)
    inside = Path(sandbox.SCRATCH) if use_bwrap else work
    inner = [mpiexec(), "-n", str(ranks_needed(probes) + 1), sandbox.python_executable(), "-I",
             str(inside / name / "ranks_runner.py"), str(inside / name)]
    cmd = sandbox.command(str(work), inner, limits, slot, use_bwrap, course_visible=False, shared_memory=True)
    limit = min(float(timeout), LAUNCH_SECONDS + per_probe * len(every))
    proc = launch.start(cmd, work, use_bwrap)
    output = launch.Output(proc, MAX_ANSWER_BYTES)  # more than an honest answer could be: nothing is read
    received = output.received
    head = f"{RESULT_MARK} {nonce} ".encode()
    deadline = time.monotonic() + limit
    state = "ended"
    while True:
        if head in received and bytes(received).split(head, 1)[1].find(b"\n") >= 0:
            state = "answered"
            break
        if proc.poll() is not None:
            output.join(timeout=2)
            state = "answered" if head in received else "ended"
            break
        if time.monotonic() > deadline:
            state = "timeout"
            break
        time.sleep(0.05)
    launch.kill(proc)
    output.join(timeout=5)
    shutil.rmtree(room, ignore_errors=True)
    harvest = parse(bytes(received), nonce, every)
    if harvest is None:
        harvest = {"probes": [], "failure": (
            {"kind": "timeout", "seconds": round(limit), "probe": None} if state == "timeout" else
            {"kind": "died", "probe": None})}
    harvest["seconds"] = round(time.monotonic() - started, 3)
    return harvest


def only_a_stub(statements: Sequence[str], name: str) -> bool:
    """Whether the last definition of ``name`` in ``statements`` does nothing (a docstring, ``pass``,
    ``...``, ``raise NotImplementedError``): the release's stub, whose every call returns None or raises."""
    import ast

    last = None
    for source in statements:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                last = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom)):
                targets = getattr(node, "targets", [getattr(node, "target", None)])
                named = [a.asname or a.name for a in getattr(node, "names", [])]
                if name in named or any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    last = node
    if not isinstance(last, ast.FunctionDef) or last.decorator_list:
        return False
    for statement in last.body:
        if isinstance(statement, ast.Pass) or (isinstance(statement, ast.Expr)
                                               and isinstance(statement.value, ast.Constant)):
            continue
        if (isinstance(statement, ast.Raise) and statement.exc is not None
                and "NotImplementedError" in ast.unparse(statement.exc)):
            continue
        return False
    return True


def parse(stdout: bytes, nonce: str, probes: Sequence[dict]) -> Optional[Dict[str, Any]]:
    """The judge rank's answer (exactly one line with ``nonce``), checked for shape; ``None`` if absent."""
    head = f"{RESULT_MARK} {nonce} "
    lines = [line for line in stdout.decode("utf-8", "replace").splitlines() if line.startswith(head)]
    if len(lines) != 1:
        return None
    try:
        data = json.loads(lines[0][len(head):])
    except (ValueError, RecursionError):
        return None
    if type(data) is not dict:
        return None
    if data.get("missing") is True:
        return {"missing": True}
    runs, failure = data.get("probes"), data.get("failure")
    if type(runs) is not list or len(runs) > len(probes) or (failure is None and len(runs) != len(probes)):
        return None
    if failure is not None and type(failure) is not dict:
        return None
    for run, probe in zip(runs, probes):
        if (type(run) is not dict or type(run.get("ranks")) is not list or len(run["ranks"]) != probe["p"]
                or type(run.get("traces")) is not list):
            return None
    return {"probes": runs, "failure": failure}



"""Build and Debug parts whose function runs on several ranks: collectives written by hand.

The student writes ``fn(comm, *args)``, called once per rank with that rank's arguments. A *probe* is
one such call on ``p`` ranks::

    {"p": 4, "group": "random inputs", "args": [[arg, ...] for each rank]}

with NumPy arrays written ``{"array": [...], "dtype": "float64"}`` (:func:`encode`). ``reference(p,
args)`` (the decoded arguments of every rank) gives each rank's expected result, or raises
``ValueError`` for an input every rank must refuse.

Where the function runs (the part's item is a :class:`RankFunction`, ``judged_in == "ranks"``):

* graded: on real MPI processes in the grading sandbox, one launch per part
  (:mod:`course.assess.ranks_runner`, started by ``autograder``), so a deadlock or a rank that dies
  ends that part only, at a time limit, with a reason;
* the visible check and plain nbgrader: on simulated ranks (:mod:`course.assess.simcomm`), which find
  a deadlock at once and say what each rank waits in.

Both give the same harvest: ``{"probes": [{"ranks": [result per rank], "traces": [...]}, ...],
"failure": None | {"kind": "deadlock" | "timeout" | "died", "probe": index, ...}}``; ``judge``
reads it in the trusted process. With a ``trace_reference`` (a correct algorithm of the same shape),
a wrong answer's reason names the rank and step where the data it sends first differ from the
reference's.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import codes
from .items import RANKS, Function
from .registry import RAISED, Part, Verdict
from .ranks_runner import plain_result
from .simcomm import UNFINISHED, run_simulated

#: the checks of a ranks part, each an equal share (those its probes use)
RANK_CHECKS = ("worked example", "edge cases", "random inputs", "invalid inputs")
#: seconds the simulated ranks of one probe may take (visible check, plain nbgrader)
SIM_TIME_LIMIT = 10.0


@dataclass(frozen=True)
class RankFunction(Function):
    """A function ``name(comm, *args)`` run on ``p`` ranks per probe (see the module docstring).

    ``trace_reference`` is a correct implementation with the same steps (for the divergence
    message); ``describe_step(p, step)`` names a step (``"reduce-scatter step 2"``); ``example_of(variant)``
    is a student's own worked example (a probe), if the exercise varies it.
    """

    trace_reference: Optional[Callable[..., Any]] = None
    describe_step: Optional[Callable[[int, int], str]] = None
    example_of: Optional[Callable[[Optional[int]], dict]] = None
    judged_in: str = RANKS


# -- plain probes and results ---------------------------------------------------------------------

def encode(value: Any) -> Any:
    """A probe argument as JSON: NumPy arrays as ``{"array", "dtype"}``."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return {"array": value.tolist(), "dtype": str(value.dtype)}
    return value


def decode(value: Any) -> Any:
    import numpy as np

    if type(value) is dict and set(value) == {"array", "dtype"}:
        return np.array(value["array"], dtype=value["dtype"])
    return value


def simulate(fn: Callable, probes: Sequence[dict], time_limit: float = SIM_TIME_LIMIT) -> dict:
    """The harvest of ``fn`` on ``probes``, each on simulated ranks (stops at the first failure)."""
    out: List[dict] = []
    for index, probe in enumerate(probes):
        args = [[decode(a) for a in rank_args] for rank_args in probe["args"]]
        run = run_simulated(fn, probe["p"], args, time_limit=time_limit, plain=plain_result)
        out.append({"ranks": run["ranks"], "traces": run["traces"]})
        if run["failure"] is not None:
            return {"probes": out, "failure": dict(run["failure"], probe=index)}
    return {"probes": out, "failure": None}


# -- judging -------------------------------------------------------------------------------------

def _expected_results(reference: Callable, probe: dict) -> Optional[list]:
    """Each rank's expected result, or None if every rank must raise ValueError."""
    args = [[decode(a) for a in rank_args] for rank_args in probe["args"]]
    try:
        return [plain_result(v) for v in reference(probe["p"], args)]
    except ValueError:
        return None


def result_error(got: Any, expected: Any) -> Optional[tuple]:
    """``None`` if a rank's result ``got`` is ``expected`` (values within tolerance, the same dtype),
    else ``(code, what is wrong)``; the reason names no hidden value."""
    if type(got) is dict and RAISED in got:
        return codes.RAISES, f"raises {str(got[RAISED])[:60]}"
    if type(got) is dict and UNFINISHED in got:
        return codes.RANKS_FAILED, "never returns"
    if type(expected) is not dict:
        if type(got) not in (int, float) or not math.isclose(float(got), float(expected), rel_tol=1e-9):
            return codes.RETURNS_WRONG_VALUE, "returns a wrong value"
        return None
    if type(got) is not dict or type(got.get("values")) is not list or type(got.get("dtype")) is not str:
        return codes.RETURNS_NOT_PLAIN, "does not return a 1-D NumPy array of numbers"
    values, want = got["values"], expected["values"]
    if len(values) != len(want):
        return codes.RETURNS_WRONG_VALUE, "returns an array of the wrong length"
    # float32 sums in another order than the reference's differ in the last bits; near zero that is
    # a large relative error, so an absolute tolerance of float32's epsilon at the data's scale too
    scale = max([1.0] + [abs(float(e)) for e in want])
    rtol, atol = (1e-5, 1e-5 * scale) if "float32" in (expected["dtype"], got["dtype"]) else (1e-9, 1e-9 * scale)
    if not all(type(g) in (int, float, bool) and math.isclose(float(g), float(e), rel_tol=rtol, abs_tol=atol)
               for g, e in zip(values, want)):
        return codes.RETURNS_WRONG_VALUE, "returns wrong values"
    if got["dtype"] != expected["dtype"]:
        return codes.RETURNS_WRONG_VALUE, f"returns {got['dtype']} where the input is {expected['dtype']}"
    return None


def _first_divergence(item: RankFunction, probe: dict, traces: Any) -> Optional[str]:
    """Where the student's run first sends other data than the reference algorithm: ``"rank r, step s
    (...)"``, the earliest step, then the lowest rank; None if the traces agree or cannot be read."""
    if item.trace_reference is None or type(traces) is not list or len(traces) != probe["p"]:
        return None
    args = [[decode(a) for a in rank_args] for rank_args in probe["args"]]
    reference = run_simulated(item.trace_reference, probe["p"], args, time_limit=SIM_TIME_LIMIT)
    if reference["failure"] is not None:
        return None
    longest = max(len(t) for t in reference["traces"])
    for step in range(longest):
        for rank in range(probe["p"]):
            want = reference["traces"][rank][step] if step < len(reference["traces"][rank]) else None
            got_trace = traces[rank] if type(traces[rank]) is list else []
            got = got_trace[step] if step < len(got_trace) else None
            if want is None:
                continue
            same = (type(got) is list and len(got) == 3 and got[1] == want[1] and type(got[2]) is list
                    and len(got[2]) == len(want[2])
                    and all(type(g) in (int, float) and math.isclose(g, w, rel_tol=1e-6, abs_tol=1e-9)
                            for g, w in zip(got[2], want[2])))
            if not same:
                what = item.describe_step(probe["p"], step + 1) if item.describe_step else ""
                sent = ("sends nothing" if got is None else
                        f"sends to rank {got[1]} where the ring sends to rank {want[1]}" if type(got) is list
                        and len(got) == 3 and got[1] != want[1] else "sends other data than a correct ring")
                return f"rank {rank}, step {step + 1}{f' ({what})' if what else ''}: it {sent}"
    return None


def _failure_verdict(name: str, failure: dict, probes: Sequence[dict], harvested: dict) -> Verdict:
    kind = failure.get("kind")
    index = failure.get("probe")
    p = probes[index]["p"] if type(index) is int and 0 <= index < len(probes) else None
    on = f" on {p} ranks" if p else ""
    runs = harvested.get("probes") if type(harvested.get("probes")) is list else []
    raised = []
    if type(index) is int and index < len(runs) and type(runs[index]) is dict:
        raised = [f"rank {r} raised {str(v[RAISED])[:40]}" for r, v in enumerate(runs[index].get("ranks") or [])
                  if type(v) is dict and RAISED in v]
    if kind == "deadlock":
        waiting = failure.get("waiting") if type(failure.get("waiting")) is dict else {}
        shown = "; ".join(f"rank {r} waits in {str(w)[:80]}" for r, w in list(waiting.items())[:8])
        why = (f"`{name}` deadlocks{on}: every rank waits for a message no rank sends"
               + (f" ({shown})" if shown else "")
               + (f", after {', '.join(raised)}" if raised else "")
               + ". Two ranks that both send first with a blocking send wait for each other forever: "
                 "exchange with sendrecv")
        return Verdict(0.0, why, code=codes.DEADLOCK)
    if kind == "died":
        dead = failure.get("ranks") if type(failure.get("ranks")) is list else []
        who = (f"the process of rank {dead[0]}" if len(dead) == 1 else
               f"the processes of ranks {', '.join(str(r) for r in dead[:8])}" if dead else "a rank's process")
        return Verdict(0.0, f"`{name}`: {who} ended (an exit or a crash) while it ran{on}, so the other ranks "
                            "could not finish and the part could not be checked", code=codes.RANKS_FAILED)
    unfinished = failure.get("unfinished") if type(failure.get("unfinished")) is list else []
    who = (f"rank {unfinished[0]} had not returned" if len(unfinished) == 1 else
           f"ranks {', '.join(str(r) for r in unfinished[:8])} had not returned" if unfinished
           else "the ranks had not returned")
    waiting = failure.get("waiting") if type(failure.get("waiting")) is dict else {}
    where = "; ".join(f"rank {r} was in {str(w)[:60]}" for r, w in sorted(waiting.items())[:8])
    limit = failure.get("seconds")
    within = f" within {limit:g} s" if type(limit) in (int, float) else " within the time limit"
    return Verdict(0.0, f"`{name}` did not finish{on}{within}: {who}" + (f" ({where})" if where else "")
                        + (f"; {', '.join(raised)}, and the others waited for it" if raised else
                           ": a deadlock (two ranks that both send first wait for each other forever), or a "
                           "loop that never ends"),
                   code=codes.DEADLOCK if not raised else codes.RANKS_FAILED)


def _went_on(failure: dict, run: Any) -> str:
    """What a function did on a probe it had to refuse, instead of raising ValueError on every rank."""
    kind = failure.get("kind")
    raised = []
    if type(run) is dict and type(run.get("ranks")) is list:
        raised = [r for r, v in enumerate(run["ranks"]) if type(v) is dict and RAISED in v]
    waiting = failure.get("waiting") if type(failure.get("waiting")) is dict else {}
    where = "; ".join(f"rank {r} waited in {str(w)[:60]}" for r, w in sorted(waiting.items())[:4])
    if kind == "died":
        dead = failure.get("ranks") if type(failure.get("ranks")) is list else []
        happened = (f"the process of rank {dead[0]} ended" if len(dead) == 1 else "a rank's process ended")
    elif kind == "deadlock":
        happened = "deadlocked" + (f", {where}" if where else "")
    else:
        happened = "never finished" + (f", {where}" if where else "")
    some = (f"; only {'rank' if len(raised) == 1 else 'ranks'} {', '.join(map(str, raised[:8]))} raised"
            if raised else "")
    return (f"it went on communicating and {happened}{some}; check the input on every rank before any rank sends, "
            "so that all of them raise")


def judge_ranks(item: RankFunction, harvested: dict, probes: Dict[str, List[dict]]) -> Verdict:
    """The verdict of a ranks part from its harvest (trusted side)."""
    from .kinds import partial_verdict

    name = item.name
    if harvested.get("missing"):
        return Verdict(0.0, f"define a function named `{name}`", code=codes.NOT_ANSWERED)
    every = list(probes["valid"]) + list(probes["invalid"])
    failure = harvested.get("failure")
    runs = harvested.get("probes")
    went_on = None  # (probe index, what happened) when the failure came on an input every rank had to refuse
    if failure is not None:
        if type(failure) is not dict:
            return Verdict(0.0, f"`{name}` could not be run on the ranks", code=codes.UNREADABLE)
        index = failure.get("probe")
        refused = (type(index) is int and 0 <= index < len(every) and type(runs) is list and len(runs) == index + 1
                   and all(_expected_results(item.reference, probe) is None for probe in every[index:]))
        if not refused:
            return _failure_verdict(name, failure, every, harvested)
        # a deadlock or a dead rank on an input that must be refused is that check failing (it did not raise
        # ValueError), not the whole part: the probes before it are judged as usual
        went_on = (index, _went_on(failure, runs[index]))
        runs = runs[:index] + [{"ranks": [None] * probe["p"], "traces": []} for probe in every[index:]]
    if (type(runs) is not list or len(runs) != len(every)
            or not all(type(r) is dict and type(r.get("ranks")) is list and len(r["ranks"]) == probe["p"]
                       for r, probe in zip(runs, every))):
        return Verdict(0.0, f"`{name}` could not be evaluated on the ranks", code=codes.UNREADABLE)
    if went_on is None and all(v is None for r in runs for v in r["ranks"]):
        return Verdict(0.0, f"`{name}` is not written yet: it returns None on every rank", code=codes.NOT_ANSWERED)
    groups: Dict[str, List[int]] = {}
    for index, probe in enumerate(every):
        groups.setdefault(probe.get("group", "random inputs"), []).append(index)
    findings, divergence = [], None
    for label in RANK_CHECKS:
        if label not in groups:
            continue
        wrong = []
        for index in groups[label]:
            probe, got = every[index], runs[index]["ranks"]
            expected = _expected_results(item.reference, probe)
            if expected is None:
                bad = [r for r, v in enumerate(got) if not (type(v) is dict and v.get(RAISED) == "ValueError")]
                if bad:
                    then = f" ({went_on[1]})" if went_on and went_on[0] == index else ""
                    wrong.append((codes.NO_VALUE_ERROR, f"does not raise ValueError on every rank for "
                                                        f"{probe['p']} ranks{then}"))
                continue
            errors = [(r, result_error(g, e)) for r, (g, e) in enumerate(zip(got, expected))]
            errors = [(r, e) for r, e in errors if e is not None]
            if errors:
                wrong.append(errors[0][1])
                if divergence is None and label != "invalid inputs":
                    divergence = _first_divergence(item, probe, runs[index].get("traces"))
        findings.append((label, len(groups[label]), wrong))
    verdict = partial_verdict(name, findings)
    if not verdict.passed and any(type(v) is dict and v.get(RAISED) == "NameError"
                                  for run in runs for v in run["ranks"]):
        verdict = Verdict(verdict.score, f"{verdict.reason} (a NameError on the ranks: only the imports, functions, "
                                         "classes and assignments that call nothing of your notebook run there, so "
                                         "a name your function needs must be defined so, or inside the function)",
                          verdict.checks, code=verdict.code, findings=verdict.findings)
    if divergence and not verdict.passed:
        verdict = Verdict(verdict.score, f"{verdict.reason}. The data first diverge at {divergence}",
                          verdict.checks, code=verdict.code, findings=verdict.findings)
    return verdict


def ranks_part(ex: Any, *, name: str, reference: Callable, probes: Callable[[int], Dict[str, List[dict]]],
               examples: Sequence[dict], points: float = 3.0, kind: str = "build", suffix: str = "",
               trace_reference: Optional[Callable] = None,
               describe_step: Optional[Callable[[int, int], str]] = None, title: str = "",
               example_of: Optional[Callable[[dict], dict]] = None) -> Part:
    """A part graded by running ``name(comm, *args)`` on ranks (see the module docstring).

    ``probes(seed)`` gives ``{"valid": [probe, ...], "invalid": [probe, ...]}``; ``examples`` are the
    probes the visible check runs (on simulated ranks). With ``example_of(spec)`` (the worked example's
    probe for a student's spec), each student's own worked example leads the probes and is what the
    visible check runs, then ``examples``; an example on which ``reference`` raises ValueError (a rank
    count the function must refuse) expects ValueError on every rank."""
    from .spec import spec_for
    from .variants import split_seed

    own_example = None
    if example_of is not None:
        fixed_probes = probes

        def probes(seed: int = 0) -> Dict[str, List[dict]]:  # noqa: F811 -- the student's example first
            out = fixed_probes(seed)
            own = dict(example_of(spec_for(ex, split_seed(seed)[1])), group="worked example")
            return {"valid": [own] + list(out["valid"]), "invalid": list(out["invalid"])}

        def own_example(variant: Optional[int]) -> dict:
            return example_of(spec_for(ex, variant))

    item = RankFunction(name=name, reference=reference, examples=tuple(examples), returns="ranks",
                        trace_reference=trace_reference, describe_step=describe_step, example_of=own_example)

    def harvest(namespace: dict, probe_inputs: Any) -> dict:
        fn = namespace.get(name)
        if not callable(fn):
            return {"missing": True}
        from .kinds import course_references, poisoned_core

        if course_references(fn):
            return {"uses_course": True}
        with poisoned_core():
            return simulate(fn, list(probe_inputs["valid"]) + list(probe_inputs["invalid"]))

    def judge(harvested: dict, seed: int = 0) -> Verdict:
        if harvested.get("uses_course"):
            return Verdict(0.0, f"`{name}` uses the course package; write the algorithm yourself",
                           code=codes.USES_COURSE)
        return judge_ranks(item, harvested, probes(seed))

    part = Part(grade_id=ex.grade_id(suffix), exercise=ex.number, kind=kind, points=points, names=(name,),
                harvest=harvest, judge=judge, probes=probes, assignment=ex.assignment,
                ledger_key=ex.ledger_key, title=title or f"{ex.number} {ex.title}", item=item)
    ex.parts.append(part)
    return part


def rank_probes(fixed: Sequence[dict], random_probe: Callable[[random.Random], dict], invalid: Sequence[dict] = (),
                count: int = 6) -> Callable[[int], Dict[str, List[dict]]]:
    """``probes(seed)``: the fixed probes (with their ``group``) plus ``count`` seeded random ones."""
    def probes(seed: int = 0) -> Dict[str, List[dict]]:
        rng = random.Random(f"rank-probes:{seed}")
        return {"valid": [dict(p) for p in fixed] + [dict(random_probe(rng), group="random inputs")
                                                    for _ in range(count)],
                "invalid": [dict(p, group="invalid inputs") for p in invalid]}
    return probes


def check_lines(part: Part, namespace: dict, ok: str, bad: str, variant: Optional[int] = None) -> tuple:
    """The visible check of a ranks part: its worked example (the student's own, for ``variant``) and
    examples on simulated ranks; ``(right, lines)``."""
    item = part.item
    fn = namespace.get(item.name)
    if not callable(fn):
        return False, [f"{bad} define a function named `{item.name}` and run its cell."]
    lines, right = [], True
    for probe in ([item.example_of(variant)] if item.example_of is not None else []) + list(item.examples):
        harvest = simulate(fn, [probe])
        verdict = judge_ranks(item, harvest, {"valid": [dict(probe, group="worked example")], "invalid": []})
        shown = f"`{item.name}` on {probe['p']} simulated ranks ({probe.get('label', 'the worked example')})"
        if verdict.passed:
            done = ("raises ValueError on every rank, as it must" if _expected_results(item.reference, probe) is None
                    else "every rank returns the right result")
            lines.append(f"{ok} {shown}: {done}.")
        else:
            right = False
            # one probe: its check's reason (and where the data diverge), not the grading's count of checks
            reason = re.sub(r"^`[^`]*` passes \d+ of \d+ checks?, each an equal share of the cell's points: ", "",
                            verdict.reason).replace(f"`{item.name}` ", "", 1)
            lines.append(f"{bad} {shown}: {reason}.")
    return right, lines


def _calls_anything(node: Any) -> bool:
    import ast

    return any(isinstance(n, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr))
               for n in ast.walk(node))


def definitions(sources: Sequence[str]) -> List[str]:
    """The statements of a notebook's code cells ``sources`` that every rank runs before the function:
    imports, function and class definitions and assignments that call nothing (``CHUNKS = 4``), in order.

    Other statements (calls, loops, a test of the function, a visible check, anything that would start
    communicating before the function is called) stay in the notebook. A cell that does not parse, even
    after IPython's transforms, gives nothing.

    >>> definitions(["import numpy as np\\nx = np.zeros(3)\\nK = 4", "def f(comm, x):\\n    return x\\nf(None, 1)"])
    ['import numpy as np', 'K = 4', 'def f(comm, x):\\n    return x']
    """
    import ast

    out: List[str] = []
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            try:
                from IPython.core.inputtransformer2 import TransformerManager

                source = TransformerManager().transform_cell(source)
                tree = ast.parse(source)
            except Exception:  # noqa: BLE001 -- a cell that cannot run defines nothing
                continue
        for node in tree.body:
            keep = isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and not _calls_anything(node):
                keep = True
            if keep:  # whole lines, decorators included
                first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
                out.append("\n".join(source.splitlines()[first - 1:node.end_lineno]))
    return out

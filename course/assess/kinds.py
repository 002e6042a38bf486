"""Part factories for the exercise kinds: values (Derive, Trace, Design) and functions (Build, Debug).

Every factory returns a :class:`~course.assess.registry.Part` (added to its exercise's parts)
whose ``harvest`` runs in the student's kernel and only produces plain values,
and whose ``judge`` recomputes the key from the exercise's spec with
``course.core`` in the trusted process.
"""

from __future__ import annotations

import ast
import contextlib
import math
import sys
import types
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import codes
from .items import Function, Value
from .registry import RAISED, Check, Part, Verdict, judge_plain, to_plain, unanswered_reason
from .spec import Exercise, spec_for
from .variants import split_seed

MISSING = "__missing__"


# ---------------------------------------------------------------------------
# value parts: the student assigns named variables
# ---------------------------------------------------------------------------

def value_part(ex: Exercise, *, names: Dict[str, str], key: Callable[[dict], Dict[str, Any]],
               points: float = 1.0, kind: str = "derive", suffix: str = "",
               rtol: float = 0.01, tolerances: Optional[Dict[str, float]] = None,
               options: Optional[Dict[str, Sequence[Any]]] = None, title: str = "") -> Part:
    """A part graded on named values the student assigns.

    Parameters
    ----------
    names : dict
        variable name -> unit or description shown in messages (``"GB"``, ``"%"``...).
    key : callable
        ``key(spec) -> {name: value}``, computed with ``course.core``. Number
        keys are compared with relative tolerance; str keys case-insensitively;
        lists element by element (exactly for Design orderings, ``rtol=0``).
    options : dict, optional
        name -> allowed values, for choices (the visible check lists them).
    """
    tolerances = dict(tolerances or {})
    names = dict(names)

    def harvest(namespace: dict, probes: Any) -> dict:
        return {"values": {n: to_plain(namespace[n]) if n in namespace else {MISSING: n}
                           for n in names}}

    def judge(harvested: dict, seed: int = 0) -> Verdict:
        values = harvested.get("values")
        if type(values) is not dict:
            return Verdict(0.0, "no answers could be read", code=codes.UNREADABLE)
        keys = key(spec_for(ex, split_seed(seed)[1]))  # this student's numbers
        wrong = []  # (reason, code) of each wrong name
        for n in names:
            got = values.get(n, {MISSING: n})
            blank = unanswered_reason(n, got, harvested)
            if blank:  # the release's stub (nothing assigned) or `n = None`: a blank answer, not a wrong one
                wrong.append((blank, codes.NOT_ANSWERED))
                continue
            if type(got) is dict and MISSING in got:
                wrong.append((f"`{n}` is not defined", codes.ERROR_IN_CELL))
                continue
            verdict = judge_plain(got, keys[n], rtol=tolerances.get(n, rtol), name=f"`{n}`", unit=names[n])
            if not verdict.passed:
                wrong.append((verdict.reason, verdict.code))
        if wrong:
            return Verdict(0.0, "; ".join(reason for reason, _ in wrong), findings=tuple(c for _, c in wrong))
        return Verdict(1.0, "correct", code=codes.CORRECT)

    part = Part(grade_id=ex.grade_id(suffix), exercise=ex.number, kind=kind, points=points,
                names=tuple(names), harvest=harvest, judge=judge,
                assignment=ex.assignment, ledger_key=ex.ledger_key,
                title=title or f"{ex.number} {ex.title}",
                item=Value(units=names, key=key, rtol=rtol, tolerances=tolerances, options=dict(options or {})))
    ex.parts.append(part)
    return part


# ---------------------------------------------------------------------------
# function parts: Build and the fix of a Debug exercise
# ---------------------------------------------------------------------------

def function_part(ex: Exercise, *, name: str, reference: Callable[..., Any],
                  probes: Callable[[int], Dict[str, List[list]]], examples: List[list],
                  points: float = 3.0, kind: str = "build", suffix: str = "",
                  rtol: float = 1e-6, atol: float = 1e-9, returns: str = "number",
                  title: str = "") -> Part:
    """A part graded by calling the student's function on probe inputs.

    Parameters
    ----------
    reference : callable
        ``reference(*args)`` -> expected value, computed with ``course.core``
        (unit conversion included); raises ``ValueError`` for invalid input.
    probes : callable
        ``probes(seed) -> {"valid": [args, ...], "invalid": [args, ...]}``:
        worked example, edge cases and seeded random inputs; invalid inputs
        must make the function raise ``ValueError``.
    examples : list of args
        Worked examples the *visible* check runs (shown to the student).
    returns : ``"number"``, ``"int"`` or ``"numbers"``
        ``"int"`` requires a plain int result (e.g. a step count); ``"numbers"`` a
        tuple/list of plain numbers compared element-wise with ``reference``'s list.
    """

    def harvest(namespace: dict, probe_inputs: Any) -> dict:
        fn = namespace.get(name)
        if not callable(fn):
            return {"missing": True}
        out: Dict[str, Any] = {"uses_course": course_references(fn), "source": source_of(fn)}
        with poisoned_core():
            out["valid"] = [call_plain(fn, args) for args in probe_inputs["valid"]]
            out["invalid"] = [call_plain(fn, args) for args in probe_inputs["invalid"]]
        return out

    def outcome(got: Any, expected: Any) -> Optional[tuple]:
        """``None`` if ``got`` is right for a valid input, else ``(code, what is wrong)`` (no values named)."""
        if type(got) is dict and RAISED in got:
            return codes.RAISES, f"raises {str(got[RAISED])[:60]}"
        wrong = (codes.RETURNS_WRONG_VALUE, "returns a wrong value")
        if returns == "numbers":  # a tuple of numbers, e.g. (interval_minutes, waste_pct)
            if type(got) is not list or len(got) != len(expected) or not all(
                    type(g) in (int, float) and math.isfinite(g) for g in got):
                return codes.RETURNS_NOT_PLAIN, "does not return a tuple of plain numbers"
            ok = all(math.isclose(float(g), float(e), rel_tol=rtol, abs_tol=atol) for g, e in zip(got, expected))
            return None if ok else wrong
        if returns == "int" and type(got) is not int:
            return codes.RETURNS_NOT_PLAIN, "does not return a plain int"
        if type(got) not in (int, float) or not math.isfinite(got):
            return codes.RETURNS_NOT_PLAIN, "does not return a plain number (int or float)"
        return None if math.isclose(float(got), float(expected), rel_tol=rtol, abs_tol=atol) else wrong

    def judge(harvested: dict, seed: int = 0) -> Verdict:
        if harvested.get("missing"):
            return Verdict(0.0, f"define a function named `{name}`", code=codes.NOT_ANSWERED)
        problems = []
        uses = harvested.get("uses_course")
        if type(uses) is not list or uses:
            problems.append("it uses course.core; write the formula yourself")
        source = harvested.get("source")
        if type(source) is str and imports_course(source):
            problems.append("it imports the course package; write the formula yourself")
        if problems:
            return Verdict(0.0, "; ".join(problems), code=codes.USES_COURSE)
        inputs = probes(seed)
        got_valid, got_invalid = harvested.get("valid"), harvested.get("invalid")
        if (type(got_valid) is not list or len(got_valid) != len(inputs["valid"])
                or type(got_invalid) is not list or len(got_invalid) != len(inputs["invalid"])):
            return Verdict(0.0, "the function could not be evaluated", code=codes.UNREADABLE)
        if got_valid and all(got is None for got in got_valid + got_invalid):
            # the release's stub (``pass``): a blank answer, not a wrong one
            return Verdict(0.0, f"`{name}` is not written yet: it returns None for every input",
                           code=codes.NOT_ANSWERED)
        groups = _as_the_prompt_shows(probe_groups(inputs["valid"], probes(seed + 1)["valid"], examples),
                                      inputs["valid"], ex, seed)
        findings = []  # (check name, number of inputs, what failed per input)
        for label, indices in groups:
            wrong = [outcome(got_valid[i], reference(*inputs["valid"][i])) for i in indices]
            findings.append((label, len(indices), [w for w in wrong if w]))
        if inputs["invalid"]:
            findings.append(("invalid inputs", len(got_invalid), [
                (codes.NO_VALUE_ERROR, "does not raise ValueError") for got in got_invalid
                if not (type(got) is dict and got.get(RAISED) == "ValueError")]))
        return partial_verdict(name, findings)

    part = Part(grade_id=ex.grade_id(suffix), exercise=ex.number, kind=kind, points=points,
                names=(name,), harvest=harvest, judge=judge, probes=probes,
                assignment=ex.assignment, ledger_key=ex.ledger_key,
                title=title or f"{ex.number} {ex.title}",
                item=Function(name=name, reference=reference, examples=examples,
                              invalid_examples=[list(a) for a in probes(0)["invalid"]],
                              returns=returns, rtol=rtol, atol=atol))
    ex.parts.append(part)
    return part



def _as_the_prompt_shows(groups: List[tuple], valid: List[list], ex: Exercise, seed: int) -> List[tuple]:
    """Feedback calls "worked example" only what the student's prompt shows: where the exercise gives each
    student a worked example of their own (``spec["example"]``), the fixed inputs that are not it are
    "fixed examples" (the same share of the points, another name)."""
    variant = split_seed(seed)[1]
    if variant is None or not ex.varies or "example" not in ex.spec:
        return groups
    own = list(spec_for(ex, variant)["example"])
    return [("fixed examples" if label == "worked example" and all(list(valid[i]) != own for i in indices)
             else label, indices) for label, indices in groups]


#: the checks of a function part, in the order they are reported; each is an equal share
def _inputs_of(label: str, count: int) -> str:
    """``label`` (a check of :data:`FUNCTION_CHECKS`) in the number ``count`` asks for:
    "worked example" / "worked examples", "edge case" / "edge cases"."""
    one = label[:-1] if label.endswith("s") else label
    return one if count == 1 else one + "s"


FUNCTION_CHECKS = ("worked example", "edge cases", "random inputs", "invalid inputs")


def probe_groups(valid: List[list], other_seed_valid: List[list],
                 examples: List[list]) -> List[tuple]:
    """Split the indices of ``valid`` probe inputs into worked example, edge cases and random inputs.

    Fixed inputs (worked examples and edge cases) are the same for every seed;
    random ones differ, so comparing with another seed's probes tells them apart.
    """
    groups: Dict[str, List[int]] = {label: [] for label in FUNCTION_CHECKS[:3]}
    for index, args in enumerate(valid):
        fixed = index < len(other_seed_valid) and other_seed_valid[index] == args
        label = ("worked example" if args in examples else "edge cases") if fixed else "random inputs"
        groups[label].append(index)
    return [(label, indices) for label, indices in groups.items() if indices]


def partial_verdict(name: str, findings: List[tuple]) -> Verdict:
    """Partial credit over ``findings`` = ``[(check, inputs, [(code, failure), ...]), ...]``.

    Each check present is an equal share and earns it when every one of its
    inputs is right. Shares count only if the formula is there: at least half of
    the random inputs right (without random inputs: every valid input right). So a
    function that hard-codes the visible worked example or only raises
    ``ValueError`` earns nothing.
    """
    share = 1.0 / len(findings)
    by_name = {label: (count, failures) for label, count, failures in findings}
    if "random inputs" in by_name:
        count, failures = by_name["random inputs"]
        formula_there = len(failures) * 2 <= count
    else:
        formula_there = not any(failures for label, _, failures in findings if label != "invalid inputs")
    checks = []
    for label, count, failures in findings:
        if not failures:
            why = (f"raises ValueError for all {count} invalid inputs" if label == "invalid inputs"
                   else f"right on {'the' if count == 1 else f'all {count}'} {_inputs_of(label, count)}")
        else:
            kinds = sorted({text for _, text in failures})
            why = f"{', '.join(kinds)} for {len(failures)} of {count} {_inputs_of(label, count)}"
        earned = share if (not failures and formula_there) else 0.0
        if not failures and not formula_there:
            why += " (not counted while most random inputs are wrong: the formula is what is graded)"
        checks.append(Check(label, earned, share, why, tuple(sorted({code for code, _ in failures}))))
    score = sum(c.earned for c in checks)
    if all(c.earned == c.share for c in checks):
        return Verdict(1.0, f"`{name}` is right on the worked example, edge cases, random and invalid "
                       "inputs", tuple(checks), code=codes.CORRECT)
    wrong = "; ".join(c.reason for c in checks if c.earned < c.share)
    # in checks, not points: the judge does not know the cell's points (safe_judge adds them)
    return Verdict(min(1.0, score), f"`{name}` passes {sum(c.earned == c.share for c in checks)} of "
                   f"{len(checks)} checks, each an equal share of the cell's points: {wrong}", tuple(checks),
                   code=codes.PARTIAL)


def call_plain(fn: Callable, args: Sequence[Any]) -> Any:
    """Call ``fn(*args)`` and return a plain result or a ``{RAISED: name}`` marker."""
    try:
        result = fn(*args)
    except ValueError:
        return {RAISED: "ValueError"}
    except Exception as exc:  # any other failure is recorded, not propagated
        return {RAISED: type(exc).__name__}
    return to_plain(result)


def source_of(fn: Callable) -> Optional[str]:
    import inspect
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return None


def imports_course(source: str) -> bool:
    """True if ``source`` imports or names the ``course`` package (checked in the trusted process).

    >>> imports_course("def f(x):\\n    from course.core import allreduce_time\\n    return 1")
    True
    >>> imports_course("def f(x):\\n    return 2 * x")
    False
    """
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "course" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "course":
            return True
        if isinstance(node, ast.Name) and node.id in ("course", "__import__", "importlib"):
            return True
    return False


def course_references(fn: Callable) -> List[str]:
    """Global names used by ``fn`` (and its nested code) that point into the course package."""
    found = []
    code = getattr(fn, "__code__", None)
    glb = getattr(fn, "__globals__", {})
    if code is None:
        return ["<not a plain function>"]
    stack = [code]
    names = set()
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    for n in sorted(names):
        if n in glb and _points_into_course(glb[n]):
            found.append(n)
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            if _points_into_course(cell.cell_contents):
                found.append("<closure>")
        except ValueError:  # an empty cell
            continue
    defaults = list(getattr(fn, "__defaults__", None) or ()) + list((getattr(fn, "__kwdefaults__", None) or {}).values())
    if any(_points_into_course(value) for value in defaults):  # def f(x, core=course.core)
        found.append("<default argument>")
    return found


def _points_into_course(obj: Any) -> bool:
    if isinstance(obj, types.ModuleType):
        module = obj.__name__
    else:
        module = getattr(obj, "__module__", "") or ""
    return type(module) is str and (module == "course" or module.startswith("course."))


def _poison(name: str):
    def poisoned(*args, **kwargs):
        raise RuntimeError(f"course.core.{name} is not available while a Build exercise is graded")
    return poisoned


@contextlib.contextmanager
def poisoned_core():
    """Temporarily replace every public function of ``course.core`` with one that raises."""
    saved = []
    modules = [m for n, m in list(sys.modules.items())
               if m is not None and (n == "course.core" or n.startswith("course.core."))]
    try:
        for module in modules:
            for attr, value in list(vars(module).items()):
                if attr.startswith("_") or not callable(value) or isinstance(value, type):
                    continue
                saved.append((module, attr, value))
                setattr(module, attr, _poison(attr))
        yield
    finally:
        for module, attr, value in saved:
            setattr(module, attr, value)

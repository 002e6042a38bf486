"""Short helpers a chapter module uses to declare its exercises.

Each helper creates an :class:`~course.assess.spec.Exercise` with the
standard cell layout (heading + prompt, answer cell, visible check, graded
cell with hidden tests), gives it its parts and adds it to the chapter ``ch``
(an :class:`~course.assess.activity.Chapter`)::

    values_exercise(CH, "0.1", "All-reduce volume per GPU", spec={...},
           prompt=lambda s: "...", answers={"volume_gb": "GB"},
           key=lambda s: {"volume_gb": ...}, solution=lambda s: "volume_gb = ...",
           derivation=lambda s: "...")

``prompt``, ``solution`` and ``derivation`` receive the spec, so the numbers a
student sees, the reference solution and the key all come from one place.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from .activity import Chapter
from .items import Written
from .kinds import function_part, value_part
from .ranks import ranks_part
from .spec import Cell, Exercise, spec_for
from .variants import split_seed

Spec = Dict[str, Any]

_SUPERSCRIPT = str.maketrans("0123456789-", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b")


def _mantissa_exponent(x: float):
    """``(mantissa text, exponent)`` of ``x`` with every digit its shortest round-trip repr keeps,
    or None when ``x`` reads best in full (an integer below 10^6, a plain decimal)."""
    if isinstance(x, int) or float(x).is_integer():
        n = int(x)
        digits = str(abs(n))
        significant = digits.rstrip("0")
        if abs(n) < 10**6 or len(significant) > 4:
            return None
        sign = "-" if n < 0 else ""
        mantissa = significant[0] + ("." + significant[1:] if len(significant) > 1 else "")
        return sign + mantissa, len(digits) - 1
    text = repr(float(x))
    if "e" not in text:
        return None
    mantissa, exponent = text.split("e")
    return mantissa, int(exponent)


def exact(x: Any) -> str:
    """``x`` in a prompt exactly as the key uses it: never rounded, never ``8e+09``.

    Integers (and integral floats) in full, with thousands separators from 10^6 up unless they are
    a short mantissa times a power of ten (``8 × 10⁹``); other floats by their shortest round-trip
    ``repr``, the exponent written ``× 10⁻⁵``. For plain text; inside ``$...$`` use :func:`exact_tex`.

    >>> exact(2.0 ** 20), exact(8e9), exact(1.75e11), exact(65536.0), exact(0.35), exact(2 ** -14)
    ('1,048,576', '8 \u00d7 10\u2079', '1.75 \u00d7 10\u00b9\u00b9', '65536', '0.35', '6.103515625 \u00d7 10\u207b\u2075')
    """
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    split = _mantissa_exponent(x)
    if split is None:
        if isinstance(x, int) or float(x).is_integer():
            return f"{int(x):,}" if abs(x) >= 10**6 else str(int(x))
        return repr(float(x))
    mantissa, exponent = split
    return f"{mantissa} \u00d7 10{str(exponent).translate(_SUPERSCRIPT)}"


def rounded(x: float, digits: int = 4) -> str:
    """A derived value for a derivation, to ``digits`` significant digits, never ``2.78e+03``.

    >>> rounded(2780.4, 3), rounded(10850.0), rounded(6.103515625e-05, 5), rounded(0.012345, 3)
    ('2,780', '10,850', '6.1035 \u00d7 10\u207b\u2075', '0.0123')
    """
    value = float(f"{float(x):.{digits}g}")
    if value != 0 and abs(value) < 1e-3:
        return exact(value)
    if value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return exact(value)  # a short non-integer: its repr has at most ``digits`` significant digits


def exact_tex(x: Any) -> str:
    """:func:`exact` for inside ``$...$``: ``8\\times10^{9}``, ``1{,}048{,}576``.

    >>> print(exact_tex(8e9), exact_tex(2.0 ** 20), exact_tex(0.0003))
    8\\times10^{9} 1{,}048{,}576 0.0003
    """
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    split = _mantissa_exponent(x)
    if split is None:
        return exact(x).replace(",", "{,}")
    mantissa, exponent = split
    return f"{mantissa}\\times10^{{{exponent}}}"


def heading(ex: Exercise) -> str:
    return f"### Exercise {ex.number} \u00b7 {ex.kind} \u00b7 {ex.title}"


#: the visible part of an exercise's first test cell: nbgrader's Validate runs the visible check there
VALIDATE_LINES = ("# Validate (nbgrader's button or command) fails here, naming what is unanswered or not yet right;\n"
                  "# anywhere else this line does nothing (no attempt counted). Hidden tests are added when grading.\n"
                  "from course.exercises import validate as _validate\n"
                  "_validate({number!r}, globals())\n")


#: the visible part of a lab's test cell: Validate says whether it is answered (labs are graded on submission)
VALIDATE_ANSWERED_LINES = ("# Validate (nbgrader's button or command) fails here if this is not answered or locked yet;\n"
                           "# anywhere else this line does nothing. Hidden tests are added when grading.\n"
                           "from course.exercises import validate_answered as _validate\n"
                           "_validate({grade_id!r}, globals())\n")


def hidden_test(grade_id: str, what: str, validate: Optional[str] = None, answered: bool = False) -> str:
    """A test cell: hidden tests (removed from the release) and, with ``validate`` (an exercise
    number), the visible line that makes ``nbgrader validate`` run that exercise's visible check;
    with ``answered`` (a lab's part), the line that makes it say whether the part is answered."""
    visible = (VALIDATE_LINES.format(number=validate) if validate else
               VALIDATE_ANSWERED_LINES.format(grade_id=grade_id) if answered else "")
    return (f"# Graded: {what}\n" + visible
            + "### BEGIN HIDDEN TESTS\n"
            "from course.exercises import grade_in_kernel as _grade\n"
            f"_grade({grade_id!r}, globals())\n"
            "### END HIDDEN TESTS")


ERRATA_CELL = "workbook-corrections"


def corrections_markdown(chapters: Sequence[Chapter]) -> str:
    """The errata page's section of every exercise's declared correction (``note=``), in order.

    An exercise's ``note`` is where it departs from the source workbook: the instructor's
    business, so it lives on the errata page and never in the student's notebook.
    """
    lines = ["## Workbook exercises: where each departs from the source workbook", "",
             "Written once, as each exercise's `note=` in `course/chapters/chNN.py`; `course build-sources` "
             "copies them here. Students do not see these notes: their notebooks state only what the exercise "
             "asks.", ""]
    for chapter in chapters:
        for ex in chapter.exercises:
            if ex.correction:
                lines.append(f"- **{ex.number} {ex.title}** (`{chapter.name}`). {ex.correction}")
    return "\n".join(lines)


def write_errata(path: Path, chapters: Sequence[Chapter]) -> bool:
    """Put :func:`corrections_markdown` in the errata notebook's generated cell (appended if missing).

    Returns whether the file changed; the page's other cells are left as they are.
    """
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    text = corrections_markdown(chapters)
    cell = next((c for c in nb.cells if c.get("metadata", {}).get("course", {}).get("generated") == ERRATA_CELL), None)
    if cell is None:
        cell = nbformat.v4.new_markdown_cell(text, metadata={"course": {"generated": ERRATA_CELL}},
                                             id=ERRATA_CELL)
        nb.cells.append(cell)
    elif cell.source == text:
        return False
    cell.source = text
    nbformat.write(nb, str(path))
    return True


def _tolerance(value: Any, rtol: float) -> str:
    if type(value) in (int, float):
        return f" within \u00b1{rtol * 100:g} %" if rtol else " exactly"
    return ""


def _answer_line(answers: Dict[str, str], options: Dict[str, Sequence[Any]], keys: Dict[str, Any],
                 rtol: float, tolerances: Dict[str, float]) -> str:
    parts = []
    for name, unit in answers.items():
        if name in options:
            parts.append(f"`{name}` (one of {', '.join(repr(o) for o in options[name])})")
        else:
            parts.append(f"`{name}` ({unit}; graded{_tolerance(keys.get(name), tolerances.get(name, rtol))})"
                         if type(keys.get(name)) in (int, float) else f"`{name}` ({unit})")
    return "Assign " + ", ".join(parts) + "."


def prompt_cell(ex: Exercise) -> Cell:
    """The read-only cell that renders a varied exercise's prompt with the student's numbers.

    The markdown of a varied exercise holds no number that varies: only the
    heading, the answer line (names, units, tolerances) and notes.
    """
    return Cell("prompt", "# Your numbers: this cell shows the exercise for you (run it)\n"
                          f"show({ex.number!r})", ex.grade_id("_prompt"))


def values_exercise(chapter: Chapter, number: str, title: str, *, kind: str, spec: Spec,
                    prompt: Callable[[Spec], str], answers: Dict[str, str],
                    key: Callable[[Spec], Dict[str, Any]], solution: Callable[[Spec], str],
                    derivation: Callable[[Spec], str], points: float = 1.0, rtol: float = 0.01,
                    tolerances: Optional[Dict[str, float]] = None,
                    options: Optional[Dict[str, Sequence[Any]]] = None,
                    note: Optional[str] = None, manual: Optional[Dict[str, Any]] = None,
                    vary: Optional[Callable[[Spec, Any], Spec]] = None) -> Exercise:
    """An exercise answered by assigning named values (Derive, single-answer Trace, Design).

    ``manual`` optionally adds a manually graded "why" answer:
    ``{"prompt": str, "answer": str (model answer + mark scheme, removed from
    the release), "points": float}``.
    """
    options = dict(options or {})
    part_kind = {"Derive": "derive", "Trace": "choice" if options else "trace", "Design": "design"}[kind]

    def cells(s: Spec) -> List[Cell]:
        gid = ex.grade_id()
        line = _answer_line(answers, options, key(s), rtol, dict(tolerances or {}))
        if ex.varies:
            out = [Cell("markdown", f"{heading(ex)}\n\n{line}"), prompt_cell(ex)]
        else:
            out = [Cell("markdown", f"{heading(ex)}\n\n{prompt(s)}\n\n{line}")]
        out += [Cell("answer", "".join(f"# {n} = ...   ({u})\n" for n, u in answers.items())
                    + f"### BEGIN SOLUTION\n{solution(s)}\n### END SOLUTION", gid + "_answer"),
               Cell("check", "# Visible check: right or not yet, against your own numbers\n"
                             f"check({number!r}, globals())", gid + "_check"),
               Cell("test", hidden_test(gid, "compares your answer with the key", number), gid, points)]
        for why in ex.written:
            out.append(Cell("markdown", f"**{number} (written, graded by hand)** {why.prompt}"))
            out.append(Cell("manual", why.model_answer, why.id, why.points))
        return out

    ex = chapter.add(Exercise(chapter=chapter.prefix, assignment=chapter.name, number=number, kind=kind, title=title, spec=spec,
                               cells=lambda s: cells(s), derivation=derivation, vary=vary, prompt=prompt,
                               correction=note))
    if manual:  # the model answer holds its mark scheme: the grader reads both in the source cell
        ex.written.append(Written(ex.grade_id("_why"), manual["prompt"], model_answer=manual["answer"],
                                  mark_scheme="", points=manual["points"]))
    value_part(ex, names=answers, key=key, points=points, kind=part_kind, rtol=rtol,
               tolerances=tolerances, options=options)
    return ex


def build_exercise(chapter: Chapter, number: str, title: str, *, spec: Spec, prompt: Callable[[Spec], str],
                   function: str, signature: str, docstring: str, body: str,
                   reference: Callable[..., Any], probes: Callable[[int], Dict[str, List[list]]],
                   examples: List[list], derivation: Callable[[Spec], str], points: float = 3.0,
                   returns: str = "number", note: Optional[str] = None,
                   extra_functions: Sequence[Dict[str, Any]] = (),
                   vary: Optional[Callable[[Spec, Any], Spec]] = None,
                   ranks: Optional[Dict[str, Any]] = None) -> Exercise:
    """A Build exercise: the student writes ``function`` (more with ``extra_functions``).

    ``extra_functions`` items are dicts with the same keys (function,
    signature, docstring, body, reference, probes, examples, points, returns)
    for exercises that ask for two functions (2.4); each becomes its own part
    with the suffix ``_<function>``.

    With ``vary``, ``spec["example"]`` (the worked example's arguments) is the
    student's own: the prompt cell shows it, the visible check runs it and the
    hidden probes include it.

    With ``ranks`` (``{"trace_reference": ..., "describe_step": ...}``, either may be None) the function
    is a collective, ``function(comm, *args)``, run on several ranks (:mod:`course.assess.ranks`):
    ``probes`` and ``examples`` are rank probes, ``reference(p, args)`` gives every rank's result.
    """
    specs = [dict(function=function, signature=signature, docstring=docstring, body=body,
                  reference=reference, probes=probes, examples=examples, points=points,
                  returns=returns)] + list(extra_functions)

    def cells(s: Spec) -> List[Cell]:
        if ex.varies:
            out = [Cell("markdown", f"{heading(ex)}"), prompt_cell(ex)]
        else:
            out = [Cell("markdown", f"{heading(ex)}\n\n{prompt(s)}")]
        for i, f in enumerate(specs):
            gid = ex.grade_id("" if i == 0 else f"_{f['function']}")
            indented_body = "\n".join("    " + line if line else line for line in f["body"].splitlines())
            code = (f"def {f['function']}{f['signature']}:\n    \"\"\"{f['docstring']}\"\"\"\n"
                    f"    ### BEGIN SOLUTION\n{indented_body}\n    ### END SOLUTION")
            out.append(Cell("answer", code, gid + "_answer"))
        out.append(Cell("check", f"# Visible test: the worked example\ncheck({number!r}, globals())",
                        ex.grade_id("_check")))
        for i, f in enumerate(specs):
            gid = ex.grade_id("" if i == 0 else f"_{f['function']}")
            out.append(Cell("test", hidden_test(gid, f"`{f['function']}` on edge cases, invalid input "
                                                     "and random inputs", number if i == 0 else None),
                            gid, f["points"]))
        return out

    ex = chapter.add(Exercise(chapter=chapter.prefix, assignment=chapter.name, number=number, kind="Build", title=title, spec=spec,
                               cells=lambda s: cells(s), derivation=derivation, prompt=prompt, vary=vary,
                               correction=note))
    if ranks is not None:
        ranks_part(ex, name=function, reference=reference, probes=probes, examples=examples, points=points,
                   **ranks)  # (a varied worked example: ranks["example_of"])
        return ex
    for i, f in enumerate(specs):
        function_part(ex, name=f["function"], reference=f["reference"],
                      probes=with_student_example(ex, f["probes"]) if i == 0 else f["probes"],
                      examples=f["examples"], points=f["points"], returns=f["returns"],
                      suffix="" if i == 0 else f"_{f['function']}")
    return ex


def _listing_items(source: str):
    """``(lines, tags)`` of a Debug listing: ``tags[i]`` is None for a line of the workbook's listing,
    or the tag of the optional item (a comment, a docstring, a small helper) the line belongs to.

    A line written ``?x|text`` is optional, of item ``x``; lines sharing a tag come and go together.
    """
    lines, tags = [], []
    for raw in source.strip("\n").splitlines():
        if raw.startswith("?"):
            tag, sep, text = raw[1:].partition("|")
            if not sep or not tag:
                raise ValueError(f"buggy_source: an optional line is written '?tag|text', got {raw!r}")
            lines.append(text)
            tags.append(tag)
        else:
            lines.append(raw)
            tags.append(None)
    return lines, tags


def workbook_listing(source: str) -> str:
    """The workbook's listing of a Debug ``buggy_source``: its optional ``?x|`` lines left out.

    >>> workbook_listing("?a|# a comment\\ndef f(x):\\n?b|    # why\\n    return x")
    'def f(x):\\n    return x\\n'
    """
    lines, tags = _listing_items(source)
    return "\n".join(line for line, tag in zip(lines, tags) if tag is None) + "\n"


def arranged_listing(source: str, arrangement: str) -> List[str]:
    """The lines of ``source`` shown with the optional items whose tags are in ``arrangement``.

    >>> arranged_listing("?a|# a comment\\ndef f(x):\\n?b|    # why\\n    return x", "b")
    ['def f(x):', '    # why', '    return x']
    """
    lines, tags = _listing_items(source)
    return [line for line, tag in zip(lines, tags) if tag is None or tag in arrangement]


def _arrangements_by_shift(source: str, bug: str) -> Dict[int, List[str]]:
    """Every arrangement (the tags it shows, in order) of ``source``, grouped by how many lines
    it puts before the line ``bug``."""
    lines, tags = _listing_items(source)
    order = list(dict.fromkeys(t for t in tags if t is not None))
    before = {t: 0 for t in order}
    for line, tag in zip(lines[:lines.index(bug)], tags):
        if tag is not None:
            before[tag] += 1
    by_shift: Dict[int, List[str]] = {}
    for chosen in itertools.product((False, True), repeat=len(order)):
        arrangement = "".join(t for t, keep in zip(order, chosen) if keep)
        by_shift.setdefault(sum(before[t] for t in arrangement), []).append(arrangement)
    return by_shift


def debug_exercise(chapter: Chapter, number: str, title: str, *, spec: Spec, prompt: Callable[[Spec], str],
                   buggy_source: str, buggy_line: int, function: str, signature: str, docstring: str,
                   body: str, reference: Callable[..., Any], probes: Callable[[int], Dict[str, List[list]]],
                   examples: List[list], derivation: Callable[[Spec], str], line_points: float = 1.0,
                   fix_points: float = 2.0, note: Optional[str] = None,
                   vary: Optional[Callable[[Spec, Any], Spec]] = None,
                   ranks: Optional[Dict[str, Any]] = None) -> Exercise:
    """A Debug exercise: name the buggy line (part ``_line``), write the fixed function (part ``_fix``).

    ``buggy_source`` is the listing; ``buggy_line`` the number of the buggy line in the workbook's
    listing (:func:`workbook_listing`). Lines written ``?x|text`` are optional items (comments,
    a docstring, a small helper that changes nothing the function does): each student's listing
    shows some of them, so the buggy line has another number for another student. ``spec["arrangement"]``
    (the tags shown; ``""`` is the workbook's listing) is drawn so that every possible number of the
    buggy line is equally likely; the prompt cell shows the student's numbered listing, the key is
    the buggy line's number in it, and ``derivation`` receives the spec with ``buggy_line`` added.
    """
    lines, tags = _listing_items(buggy_source)
    workbook = [line for line, tag in zip(lines, tags) if tag is None]
    bug = workbook[buggy_line - 1]
    if lines.count(bug) != 1:
        raise ValueError(f"buggy_line: line {buggy_line} ({bug.strip()!r}) must occur once in buggy_source")
    arranges = any(tag is not None for tag in tags)
    known: Dict[str, Dict[int, List[str]]] = {} if arranges else {"by_shift": {0: [""]}}

    def by_shift() -> Dict[int, List[str]]:
        # 2^k arrangements of k optional items (8192 for ch00's): made when a variant is first drawn, not
        # when the chapter is declared (every kernel that imports course.exercises declares every chapter);
        # stored whole in one assignment, so a grader thread never sees half of it
        if "by_shift" not in known:
            known["by_shift"] = _arrangements_by_shift(buggy_source, bug)
        return known["by_shift"]

    spec = dict(spec, arrangement="")

    def listing(s: Spec) -> List[str]:
        return arranged_listing(buggy_source, s["arrangement"])

    def line_of(s: Spec) -> int:
        return listing(s).index(bug) + 1

    def numbered(s: Spec) -> str:
        shown = listing(s)
        width = len(str(len(shown)))
        return "\n".join(f"{i + 1:>{width}}  {line}".rstrip() for i, line in enumerate(shown))

    def answer_line(s: Spec) -> str:
        return (f"Assign `buggy_line` (the number of the buggy line, an int from 1 to {len(listing(s))}) "
                f"and write the fixed `{function}` below.")

    def full_prompt(s: Spec) -> str:
        return f"{prompt(s)}\n\n```python\n{numbered(s)}\n```\n\n{answer_line(s)}"

    def arranged(s: Spec, rng: Any) -> Spec:
        s = vary(s, rng) if vary is not None else dict(s)
        shift = rng.choice(sorted(by_shift()))  # every number of the buggy line equally likely
        return dict(s, arrangement=rng.choice(by_shift()[shift]))

    def cells(s: Spec) -> List[Cell]:
        if ex.varies:
            text = (f"{heading(ex)}\n\nThe cell below shows the function, its lines numbered as in "
                    f"your listing (another student's listing numbers them differently). Assign `buggy_line` "
                    f"(the number of the buggy line in your listing) and write the fixed `{function}` below.")
        else:
            text = f"{heading(ex)}\n\n{full_prompt(s)}"
        indented_body = "\n".join("    " + line if line else line for line in body.splitlines())
        fix = (f"def {function}{signature}:\n    \"\"\"{docstring}\"\"\"\n"
               f"    ### BEGIN SOLUTION\n{indented_body}\n    ### END SOLUTION")
        return [Cell("markdown", text)] + ([prompt_cell(ex)] if ex.varies else []) + [
                Cell("answer", f"# buggy_line = ...   (an int: the buggy line's number in {'your' if ex.varies else 'the'} listing)\n"
                               f"### BEGIN SOLUTION\nbuggy_line = {line_of(s)}   # {bug.strip()}"
                               + ("   (each student's listing numbers this line differently: see their prompt cell)"
                                  if ex.varies else "") + "\n### END SOLUTION",
                     ex.grade_id("_line_answer")),
                Cell("answer", fix, ex.grade_id("_fix_answer")),
                Cell("check", "# Visible check: the line number's range and the worked example\n"
                              f"check({number!r}, globals())", ex.grade_id("_check")),
                Cell("test", hidden_test(ex.grade_id("_line"), "the line you named", number),
                     ex.grade_id("_line"), line_points),
                Cell("test", hidden_test(ex.grade_id("_fix"), f"your fixed `{function}`"),
                     ex.grade_id("_fix"), fix_points)]

    ex = chapter.add(Exercise(chapter=chapter.prefix, assignment=chapter.name, number=number, kind="Debug", title=title, spec=spec,
                               cells=lambda s: cells(s), derivation=lambda s: derivation(dict(s, buggy_line=line_of(s))),
                               prompt=full_prompt, vary=arranged if arranges else vary,
                               correction=note))
    value_part(ex, names={"buggy_line": "line number"}, key=lambda s: {"buggy_line": line_of(s)},
               points=line_points, kind="debug", suffix="_line", rtol=0.0,
               options={"buggy_line": list(range(1, len(lines) + 1))})
    if ranks is not None:  # the fixed function is a collective (see build_exercise)
        ranks_part(ex, name=function, reference=reference, probes=probes, examples=examples,
                   points=fix_points, kind="debug", suffix="_fix", **ranks)
        return ex
    function_part(ex, name=function, reference=reference, probes=with_student_example(ex, probes),
                  examples=examples, points=fix_points, kind="debug", suffix="_fix")
    return ex


def with_student_example(ex: Exercise, probes: Callable[[int], Dict[str, List[list]]]):
    """``probes(seed)`` plus, first, the worked example of the student whose variant ``seed`` carries."""
    def student_probes(seed: int = 0) -> Dict[str, List[list]]:
        out = probes(seed)
        example = student_example(ex, split_seed(seed)[1])
        if example is not None:
            out = dict(out, valid=[example] + list(out["valid"]))
        return out
    return student_probes


def student_example(ex: Exercise, variant: Optional[int]) -> Optional[list]:
    """The worked example's arguments for ``variant`` (None unless the exercise varies its example)."""
    if not ex.varies or variant is None or "example" not in ex.spec:
        return None
    return list(spec_for(ex, variant)["example"])


def written_exercise(chapter: Chapter, number: str, title: str, *, spec: Spec, prompt: Callable[[Spec], str],
                     model_answer: str, mark_scheme: str, points: float = 2.0,
                     note: Optional[str] = None) -> Exercise:
    """An open "why" Trace exercise, graded by hand.

    The answer cell of the source notebook holds the model answer and the mark
    scheme for the grader; nbgrader replaces it with "YOUR ANSWER HERE" in the
    release, and the model answer comes back in feedback as the derivation.
    """
    def cells(s: Spec) -> List[Cell]:
        why = ex.written[0]
        answer = f"**Model answer.** {why.model_answer}\n\n**Mark scheme ({why.points:g} points).** {why.mark_scheme}"
        return [Cell("markdown", f"{heading(ex)}\n\n{prompt(s)}\n\n"
                                 "Write your answer in the cell below (graded by hand)."),
                Cell("manual", answer, why.id, why.points)]

    ex = chapter.add(Exercise(chapter=chapter.prefix, assignment=chapter.name, number=number, kind="Trace", title=title, spec=spec,
                               cells=lambda s: cells(s), derivation=lambda s: model_answer, prompt=prompt,
                               correction=note))
    ex.written.append(Written(ex.grade_id("_why"), prompt(spec), model_answer, mark_scheme, points))
    return ex
